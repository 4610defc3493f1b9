"""The team comparison: ``python -m baselines.multiagent --routine-lengths 2 10 --seeds 0 1 2``.

Parameter-shared training on the team environments through the turn-based adapter
(:class:`TurnBasedTeamEnv`), PPO beside ``TrajectoryAdvantagePPO``: each run is
:func:`baselines.lib.training.main`, results go to a resumable ``results.jsonl``
(:class:`baselines.lib.results.ResultsFile`) and the tables and plots are those of the comparison
(:mod:`baselines.experiments.compare.analysis`). Importing this module registers the team ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.compare import analysis
from baselines.experiments.compare import sweep as compare
from baselines.lib.runner import run_resumable
from routine_envs.multiagent.turn_based import TEAM_ENVS, TurnBasedTeamEnv

__all__ = ["TEAM_ENVS", "TeamSweepArgs", "TurnBasedTeamEnv", "main", "parse_args", "plan"]


# ------------------------------------------------------------------------------- the sweep
@dataclass
class TeamSweepArgs(compare.SweepArgs):
    """Settings of a team comparison (those of the single-agent sweep, other defaults)."""

    env_id: str = field(
        default="TeamDilutedDoors-v0", metadata={"help": f"one of {sorted(TEAM_ENVS)}"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [2, 10], metadata={"help": "routine lengths L to sweep", "min": 0}
    )
    budget_episodes: int = field(
        default=1500,
        metadata={
            "help": "training budget per run, in episodes of the longest episode length",
            "min": 1,
        },
    )
    min_budget_steps: int = field(
        default=20_000, metadata={"help": "lower bound of the budget in agent turns", "min": 0}
    )
    eval_points: int = field(default=12, metadata={"help": "evaluations per run", "min": 1})
    out: Path = field(
        default=Path("results/multiagent/team_doors"), metadata={"help": "output folder"}
    )


def plan(args: TeamSweepArgs) -> list[dict[str, Any]]:
    """Every run of the sweep, validated before any training starts (the records of the
    single-agent sweep's ``plan``; ``rho`` is the mean per-agent decision density)."""
    from baselines.lib.config import load_hyperparameters

    compare.check_lists(args)
    if args.env_id not in TEAM_ENVS:
        raise ValueError(f"unknown team environment {args.env_id!r}; known: {sorted(TEAM_ENVS)}")
    if args.statistic not in analysis.STATISTICS:
        raise ValueError(f"statistic must be one of {sorted(analysis.STATISTICS)}")
    if any(seed < 0 for seed in args.seeds):
        raise ValueError(f"seeds must be >= 0, got {args.seeds}")
    for method in args.methods:
        load_hyperparameters(args.env_id, method)
    if args.budget_episodes < 1 or args.eval_points < 1 or args.workers < 1:
        raise ValueError("budget_episodes, eval_points and workers must be >= 1")
    density_kwarg = TEAM_ENVS[args.env_id]["density_kwarg"]
    compare.check_overrides(args, density_kwarg)
    return compare.make_jobs(
        args,
        density_kwarg,
        extra=lambda env: {
            "team_rho": float(env.team.team_decision_density),
            "num_agents": env.num_agents,
        },
    )


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one run (in a worker process, where importing this module registers the ids)."""
    return compare.run_job(job)


def run_sweep(args: TeamSweepArgs, progress: bool = True) -> list[dict[str, Any]]:
    """Run what is missing of the sweep (resumable, see :class:`baselines.lib.results.ResultsFile`);
    return every record of it."""
    return run_resumable(
        plan(args),
        compare.run_key,
        run_job,  # importable by name: spawned workers import this module (the ids)
        args.out / "results.jsonl",
        args.workers,
        required=compare.REQUIRED,
        check=compare.check_record,
        progress=progress,
        backend=args,
    )


def main(args: TeamSweepArgs) -> dict[str, list[dict[str, Any]]]:
    """Run the sweep, write its tables (CSV) and plots (PNG) into ``args.out``, print them."""
    records = run_sweep(args)
    tables = analysis.analyse(records, args.out, args.baseline, args.statistic)
    if records:
        first = records[0]
        print(
            f"\nteam: {first['num_agents']} agents, parameter-shared policy (turn-based adapter); "
            "rho below = mean per-agent decision density, team rho = "
            + ", ".join(sorted({f"L={r['routine_length']}: {r['team_rho']:.4g}" for r in records}))
        )
    analysis.report(tables, records)
    print(
        f"\nwrote {args.out}/: results.jsonl, learning_curves.csv/.png, steps_to_target.csv/"
        ".png, ratio_to_turn_level.csv, summary_scores.csv/.png"
    )
    return tables


def cli_main(argv: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """``python -m baselines.multiagent``: bad settings are one line on stderr and exit status 2,
    before any training; a failed run names itself (exit status 1, the runs done kept)."""
    from baselines.commands import script

    return script("multiagent")(argv)


def parse_args(argv: list[str] | None = None) -> TeamSweepArgs:
    """The settings of a team sweep from the command line (one flag per field)."""
    from baselines.commands import settings_of

    return settings_of("multiagent", argv)
