"""Comparison sweeps (``python -m baselines compare``: density values x methods x seeds, with
curves and ratios; :mod:`baselines.experiments.compare.sweep`) and short batched runs of the
turn-level methods (``python -m baselines turn_methods``;
:mod:`baselines.experiments.compare.turn_methods`). Their rows of the command tree are here."""

from routine_envs.cli import Command

ORDER = 30
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "compare",
        "a comparison sweep: density values x methods x seeds, with curves and ratios",
        "baselines.experiments.compare.sweep:CompareCommand",
        "baselines.experiments.compare.sweep:main",
        base="baselines.experiments.compare.sweep:named_sweep",
    ),
    Command(
        "turn_methods",
        "short batched runs of the turn-level methods beside ppo and trajectory_mc",
        "baselines.experiments.compare.turn_methods:TurnMethodsSettings",
        "baselines.experiments.compare.turn_methods:run",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
