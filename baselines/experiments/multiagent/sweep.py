"""The team comparison: ``python -m baselines multiagent --routine-lengths 2 10 --seeds 0 1 2``.

Parameter-shared training on the team environments through the turn-based adapter
(:class:`TurnBasedTeamEnv`), PPO beside ``TrajectoryAdvantagePPO``: each run is
a :class:`baselines.lib.runs.Run`, results go to a resumable ``results.jsonl``
(:class:`baselines.lib.results.ResultsFile`) and the tables and plots are those of the comparison
(:mod:`baselines.lib.curves`) with the team's decision densities
(:mod:`baselines.experiments.multiagent.analysis`). Importing this module registers the team ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.multiagent import analysis
from baselines.lib import runs
from baselines.lib.experiment import Experiment, run_experiment
from baselines.lib.experiment import main as experiment_main
from baselines.lib.runs import Run, TrainingRecord
from baselines.lib.sweeps import SweepArgs, check_sweep, runs_of
from routine_envs.multiagent.turn_based import TEAM_ENVS, TurnBasedTeamEnv

__all__ = ["TEAM_ENVS", "TeamSweepArgs", "TurnBasedTeamEnv", "main", "plan"]


# ------------------------------------------------------------------------------- the sweep
@dataclass
class TeamSweepArgs(SweepArgs):
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


def plan(args: TeamSweepArgs) -> list[Run]:
    """Every run of the sweep, validated before any training starts (the library's runs;
    ``rho`` is the mean per-agent decision density)."""
    if args.env_id not in TEAM_ENVS:
        raise ValueError(f"unknown team environment {args.env_id!r}; known: {sorted(TEAM_ENVS)}")
    density_kwarg = TEAM_ENVS[args.env_id]["density_kwarg"]
    check_sweep(args, density_kwarg)
    return runs_of(
        args,
        density_kwarg,
        extra=lambda env: {
            "team_rho": float(env.team.team_decision_density),
            "num_agents": env.num_agents,
        },
    )


def run_job(run: Run) -> TrainingRecord:
    """Train one run (in a worker process, where importing this module registers the ids)."""
    return runs.train_record(run)


def experiment() -> Experiment:
    """The team sweep as an experiment (``run_job`` is importable by name: spawned workers
    import this module, which registers the ids)."""
    return Experiment("multiagent", plan, runs.key, run_job, TrainingRecord, analysis.analyse)


def run_sweep(args: TeamSweepArgs, progress: bool = True) -> list[dict[str, Any]]:
    """Run what is missing of the sweep (resumable, see :class:`baselines.lib.results.ResultsFile`);
    return every record of it."""
    return run_experiment(experiment(), args, progress=progress)


def main(args: TeamSweepArgs) -> dict[str, list[dict[str, Any]]]:
    """Run the sweep, write its tables (CSV) and plots (PNG) into ``args.out``, print them."""
    return experiment_main(experiment(), args)
