"""Criticality detectors scored against the annotations (``python -m baselines detectors
score``; :mod:`baselines.experiments.detectors.score`) and a short training run's policy table
to score them under (``detectors policy``; :mod:`baselines.experiments.detectors.trained_policy`).
Their rows of the command tree are here."""

from routine_envs.cli import Command, Group

ORDER = 80
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Group(
        "detectors",
        "criticality detectors scored against the annotations; a policy to score under",
        (
            Command(
                "score",
                "detectors scored against the annotations (AUC, AP, implied rho, cost)",
                "baselines.experiments.detectors.score:ScoreArgs",
                "baselines.experiments.detectors.score:main",
            ),
            Command(
                "policy",
                "a short training run's policy table as .npy, to score detectors under",
                "baselines.experiments.detectors.trained_policy:PolicyArgs",
                "baselines.experiments.detectors.trained_policy:main",
            ),
        ),
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
