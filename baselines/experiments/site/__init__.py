"""The benchmark's public face: ``routine-envs site --out DIR`` writes a static website of the
shipped references (:mod:`baselines.experiments.site.build`). Its row of the command tree is
here."""

from routine_envs.cli import Command

ORDER = 95
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "site",
        "a static website of the shipped references: leaderboards, a page per reference, envs",
        "baselines.experiments.site.build:SiteArgs",
        "baselines.experiments.site.build:main",
        description="A static website (no server, no JavaScript needed) generated from the "
        "shipped, verified references: a leaderboard page per protocol tier with its pictures "
        "(steps against rho, probability of improvement, performance profiles), a report card "
        "per reference, a page per environment; written to --out.",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
