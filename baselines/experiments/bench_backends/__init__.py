"""Sweep backends: one sweep on the process pool and on Ray, timed
(``python -m baselines bench_backends``; :mod:`baselines.experiments.bench_backends.sweep`).
Its row of the command tree is here."""

from routine_envs.cli import Command

ORDER = 110
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "bench_backends",
        "one sweep on the process pool and on Ray, timed",
        "baselines.experiments.bench_backends.sweep:BenchArgs",
        "baselines.experiments.bench_backends.sweep:main",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
