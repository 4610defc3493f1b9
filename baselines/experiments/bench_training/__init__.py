"""Training cost: CPU per environment step of SB3 PPO, TrajectoryAdvantagePPO and the batched
trainer (``python -m baselines bench_training``; :mod:`baselines.experiments.bench_training.sweep`).
Its row of the command tree is here."""

from routine_envs.cli import Command

ORDER = 90
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "bench_training",
        "CPU per env step of SB3 PPO, TrajectoryAdvantagePPO and the batched trainer",
        "baselines.experiments.bench_training.sweep:BenchArgs",
        "baselines.experiments.bench_training.sweep:main",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
