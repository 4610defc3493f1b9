"""Experiments, bsuite style: each a package with ``sweep.py`` (its settings dataclass, the
sweep's data and the jobs) and ``analysis.py`` (tables, scores and plots of the records), whose
``__init__.py`` declares its commands (``COMMANDS``: rows of ``"module:name"`` strings, and
``ORDER``: where ``--help`` lists them), importing nothing but :mod:`routine_envs.cli`;
:mod:`baselines.commands` gathers every package's rows into the one tree."""
