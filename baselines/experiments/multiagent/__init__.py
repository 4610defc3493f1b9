"""Parameter-shared training on the team environments, PPO beside trajectory methods
(``python -m baselines multiagent``; :mod:`baselines.experiments.multiagent.sweep`). Its row of
the command tree is here."""

from routine_envs.cli import Command

ORDER = 40
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "multiagent",
        "parameter-shared training on the team environments, PPO beside trajectory methods",
        "baselines.experiments.multiagent.sweep:TeamSweepArgs",
        "baselines.experiments.multiagent.sweep:main",
        description="Parameter-shared training on a team environment through the turn-based "
        "adapter: PPO beside TrajectoryAdvantagePPO at several routine lengths and seeds, "
        "resumable, with the comparison's tables and plots (docs/multiagent.md).",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
