"""The main job (``make demo``, ``python -m baselines demo``): an episode, rho against
``1 / (1 + L)``, the oracle's advantages, the rho law and a short comparison
(:mod:`baselines.experiments.demo.sweep`). Its row of the command tree is here."""

from routine_envs.cli import Command

ORDER = 10
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "demo",
        "the main job (make demo): an episode, rho vs 1/(1+L), the rho law, a comparison",
        "baselines.experiments.demo.sweep:DemoArgs",
        "baselines.experiments.demo.sweep:main",
        description="The main job (make demo): a rendered Diluted Doors episode, the measured "
        "rho against 1/(1+L), the oracle's advantages under the uniform policy (zero on routine "
        "states), the rho law of gradient SNR with its fit, and a short PPO vs "
        "TrajectoryAdvantagePPO comparison; tables (CSV) and plots (PNG) under --out.",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
