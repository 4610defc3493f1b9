"""The benchmark's public face: ``routine-envs site --out DIR`` writes a static website of the
shipped references and the verified submissions (:mod:`baselines.experiments.site.build`). Its
row of the command tree is here."""

from routine_envs.cli import Command

ORDER = 95
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Command(
        "site",
        "a static website of the shipped references and the verified submissions: leaderboards, "
        "a page per reference and submission, envs",
        "baselines.experiments.site.build:SiteArgs",
        "baselines.experiments.site.build:main",
        description="A static website (no server, no JavaScript needed) generated from the "
        "shipped, verified references and the submissions registry: a leaderboard page per "
        "protocol tier with its pictures (steps against rho, probability of improvement, "
        "performance profiles) and its verified submissions apart, a report card per reference, "
        "a page per submission, a page per environment; written to --out. An entry of the "
        "registry that does not verify stops the build.",
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
