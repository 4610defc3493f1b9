"""Baselines, experiments and the demo of routine-envs.

Shipped in the wheel with their data (configs, protocols, references: :mod:`baselines.lib.data`);
run as ``routine-envs COMMAND`` (the console script) or ``python -m baselines COMMAND`` from any
folder (:mod:`baselines.commands` gathers the commands each experiment package declares). Their
dependencies are the ``[baselines]`` extra.
"""
