"""Gradient SNR of a neural policy, SB3's MlpPolicy at initialization
(``python -m baselines snr_network``; :mod:`baselines.experiments.snr_network.sweep`). Its row
of the command tree is here."""

from routine_envs.cli import Command

ORDER = 70
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "snr_network",
        "gradient SNR of a neural policy (SB3's MlpPolicy at initialization)",
        "baselines.experiments.snr_network.sweep:NetworkArgs",
        "baselines.experiments.snr_network.sweep:main",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
