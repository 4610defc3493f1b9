"""One training run (``python -m baselines train``, :mod:`.command`: its settings and entry
point; the run itself is :mod:`baselines.lib.runs`)."""

from routine_envs.cli import Command

ORDER = 20
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "train",
        "one training run: PPO, or TrajectoryAdvantagePPO with an estimator",
        "baselines.experiments.train.command:TrainArgs",
        "baselines.experiments.train.command:main",
        description="One training run: SB3's PPO ('ppo', MaskablePPO where the env has action "
        "masks) or TrajectoryAdvantagePPO with any estimator (a name or 'package.module:Name', "
        "with JSON arguments), on the env's hyperparameters (baselines/configs/<env id>.yml); "
        "the success rate at every evaluation (exact where the env has a model) goes to "
        "<out>/success.csv (docs/baselines.md).",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
