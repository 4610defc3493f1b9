"""Baselines, experiments and the demo of routine-envs.

Shipped in the wheel with their data (configs, protocols, references: :mod:`baselines.lib.data`);
run as ``routine-envs COMMAND`` (the console script), ``python -m baselines COMMAND`` or
``python -m baselines.<script>`` from any folder (:mod:`baselines.commands`). Their
dependencies are the ``[baselines]`` extra.
"""
