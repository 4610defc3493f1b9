"""The benchmark (``python -m baselines benchmark {run,report,references,...}``: a
credit-assignment method scored on a versioned protocol against the shipped references;
:mod:`baselines.experiments.benchmark.command`) and the trainers' equivalence study
(``python -m baselines equivalence``; :mod:`baselines.experiments.benchmark.equivalence`).
Their rows of the command tree are here."""

from routine_envs.cli import Command, Group

ORDER = 50
"""Where ``python -m baselines --help`` lists this package's commands (lowest first)."""

BACKEND_FIELDS = ("backend", "address", "max_in_flight", "retries")
REFERENCES_FIELDS = ("protocol", "tier", "out", "references_dir", "unverified_references")
_BENCH = "baselines.experiments.benchmark.command"


def _benchmark(name: str, summary: str, *fields: str) -> Command:
    """A subcommand of ``benchmark``: the fields of ``BenchmarkArgs`` it reads."""
    return Command(
        name,
        summary,
        f"{_BENCH}:BenchmarkArgs",
        f"{_BENCH}:main",
        include=(*fields, *REFERENCES_FIELDS),
        fixed={"command": name},
        description=f"{summary[0].upper()}{summary[1:]} (docs/benchmark.md).",
    )


BENCHMARK = Group(
    "benchmark",
    "score a credit-assignment method on a versioned protocol against the references",
    (
        _benchmark(
            "run",
            "every run of a tier for a method (resumable), then its report card",
            "method",
            "env_id",
            "workers",
            "lab",
            "progress",
            "trainer",
            *BACKEND_FIELDS,
        ),
        _benchmark(
            "report",
            "the report card from the runs done so far",
            "method",
            "env_id",
            "lab",
            "trainer",
        ),
        _benchmark(
            "references",
            "what ships (verified) and its leaderboard; --compute runs the reference methods",
            "compute",
            "methods",
            "write_manifest",
            "env_id",
            "workers",
            "progress",
            "trainer",
            *BACKEND_FIELDS,
        ),
        _benchmark("leaderboard", "write the references' leaderboard to <out>/<version>/<tier>/"),
        _benchmark(
            "plan",
            "what a tier costs (runs, steps, CPU time) and its wall time on N cores",
            "method",
            "env_id",
            "cores",
            "trainer",
        ),
        _benchmark(
            "submit",
            "the report card, then one file with it, the scored rows, the drops manifest and "
            "the method's source",
            "method",
            "env_id",
            "lab",
            "trainer",
            "partial",
        ),
        _benchmark(
            "verify-submission",
            "check a submission file as data: its plan, its card and manifest rebuilt from its "
            "rows; --rerun K trains K of its runs again (running its code)",
            "bundle",
            "rerun",
            "rerun_seed",
        ),
        Command(  # reads no references of its own choosing: none of their flags
            "verify-submissions",
            "verify every entry of the submissions registry (submissions/<protocol>/<tier>/"
            "<name>/), one line each; --rerun K trains K runs of each again (running its code)",
            f"{_BENCH}:BenchmarkArgs",
            f"{_BENCH}:main",
            include=("submissions", "rerun", "rerun_seed", "rerun_budget"),
            fixed={"command": "verify-submissions"},
            description="Verify every entry of the submissions registry (submissions/<protocol>/"
            "<tier>/<name>/: a bundle and its ENTRY.json) as verify-submission verifies one "
            "bundle, one line each; exit status 1 when one is not verified (docs/benchmark.md, "
            "'The submissions registry').",
        ),
        _benchmark(
            "tune",
            "the method's tuned column (a protocol with tuning, rb3): the search on the tuning "
            "seeds, the chosen values per setting family, the tuned runs on the scoring seeds",
            "method",
            "env_id",
            "references_dir",
            "workers",
            "progress",
            "trainer",
            *BACKEND_FIELDS,
        ),
    ),
    description="Score a credit-assignment method on a versioned protocol against the shipped "
    "references (docs/benchmark.md).",
)
EQUIVALENCE = Command(
    "equivalence",
    "the batched trainer against SB3 on a protocol's reference runs, cell by cell",
    "baselines.experiments.benchmark.equivalence:EquivalenceArgs",
    "baselines.experiments.benchmark.equivalence:main",
    description="The batched trainer against SB3 on the lite references' settings (ppo, "
    "trajectory_mc, oracle): the trainer that did not make a protocol's references trains "
    "their runs (rb1: batched against SB3's references; rb2: SB3 against the batched ones), "
    "steps to target per cell with a two-sample bootstrap ratio, learning curves side by "
    "side (docs/batched.md).",
)
COMMANDS = (BENCHMARK, EQUIVALENCE)
"""The commands of this package (:mod:`baselines.commands` gathers every package's)."""
