"""Every shipped run as one table for your own analysis: ``routine-envs runs export``
(:mod:`baselines.experiments.runs.export`). Its rows of the command tree are here."""

from routine_envs.cli import Command, Group

ORDER = 96
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

COMMANDS = (
    Group(
        "runs",
        "the shipped reference runs as data",
        (
            Command(
                "export",
                "every shipped run of a protocol as one table (CSV, or Parquet with pyarrow)",
                "baselines.experiments.runs.export:ExportArgs",
                "baselines.experiments.runs.export:main",
                description="Every run of the shipped references of the protocols named (all "
                "with references by default), verified against their pinned manifests first, "
                "as one table: one row per run, with its protocol, tier, method, column "
                "(default or tuned), setting, rho, seed, steps to target (empty where censored: "
                "`censored` says so), final success, its whole success curve, the privileged "
                "fields its method read and its run key. Written to --out: .csv (the standard "
                "library) or .parquet (needs pyarrow).",
            ),
        ),
    ),
)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
