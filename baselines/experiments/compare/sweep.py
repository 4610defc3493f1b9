"""The comparison sweep: ``python -m baselines compare --sweep demo``.

A sweep is environments x routine lengths x methods x seeds (settings only, in
:data:`SWEEPS`; flags override them). Each run is a :class:`baselines.lib.runs.Run`, trained in its
own process (one torch thread each, ``--workers`` at a time; with ``--trainer batched`` the runs
of one method are trained together, a few batches per worker: :data:`~baselines.lib.runs.
BATCHING`), through the resumable runner
(:func:`baselines.lib.runner.run_resumable`): every finished run is appended as one JSON line to
``<out>/results.jsonl`` (flushed and fsynced, :class:`baselines.lib.results.ResultsFile`), so a
sweep killed halfway and started again runs only what is missing, and never duplicates a run. A
corrupt or partial line (a crash mid-write) is reported, moved to ``results.rejected.jsonl`` and
its run done again.

Then the analysis (:mod:`baselines.experiments.compare.analysis`: the tables of
:mod:`baselines.lib.curves`, a pure function of the records) writes, as CSV and PNG beside
the results: learning curves with bootstrap bands, steps to the target success per method and
rho, the ratio trajectory-level / turn-level per rho, and a bsuite-style summary score per method.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.compare import analysis
from baselines.lib import cli, runs
from baselines.lib.experiment import Experiment, run_experiment
from baselines.lib.experiment import main as experiment_main
from baselines.lib.runs import Run, TrainingRecord
from baselines.lib.sweeps import SweepArgs, check_lists, check_sweep, runs_of

SWEEPS: dict[str, dict[str, Any]] = {
    # A few minutes on 2 cores: the demo's comparison.
    "demo": {
        "routine_lengths": [2, 20],
        "methods": ["ppo", "trajectory_mc"],
        "seeds": [0, 1, 2],
        "budget_episodes": 1200,
        "min_budget_steps": 30_000,
        "eval_points": 15,
    },
    # The rho sweep of the paper's second figure (hours on 2 cores).
    "rho": {
        "routine_lengths": [0, 1, 3, 7, 15, 30, 50],
        "methods": ["ppo", "trajectory_mc", "rloo", "gigpo", "routine_masked", "oracle"],
        "seeds": list(range(8)),
        "budget_episodes": 4000,
        "eval_points": 40,
    },
}


# ------------------------------------------------------------------------------ the runs
run_job = runs.train_record
"""A run's worker (module-level: tests replace it)."""


def plan(args: SweepArgs) -> list[Run]:
    """Every run of the sweep, validated before any training starts."""
    import gymnasium as gym

    import routine_envs
    from baselines.lib.envs import check_env_kwargs
    from baselines.lib.records import density_kwarg_of

    gym.register_envs(routine_envs)
    check_lists(args)
    check_env_kwargs(args.env_id, args.env_kwargs)
    density_kwarg = density_kwarg_of(args.env_id)
    if density_kwarg is None:
        raise ValueError(f"{args.env_id} has no keyword argument that sets its decision density")
    check_sweep(args, density_kwarg)
    return runs_of(args, density_kwarg)


def experiment() -> Experiment:
    """The comparison sweep as an experiment (its functions looked up now: tests replace
    :func:`run_job`)."""
    return Experiment(
        "compare", plan, runs.key, run_job, TrainingRecord, analysis.analyse, batching=runs.BATCHING
    )


def run_sweep(args: SweepArgs, progress: bool = True) -> list[dict[str, Any]]:
    """Run what is missing of the sweep; return every record of it."""
    return run_experiment(experiment(), args, progress=progress)


def main(args: SweepArgs) -> dict[str, list[dict[str, Any]]]:
    """Run what is missing of the sweep, then its analysis; the tables."""
    return experiment_main(experiment(), args)


@dataclass
class CompareCommand(SweepArgs):
    """A comparison sweep: density values x methods x seeds of one environment, each run one
    training of an SB3 method, resumable; then learning curves, steps to the target, the ratio
    of each method to the turn-level baseline and summary scores (docs/baselines.md)."""

    sweep: str | None = field(
        default=None,
        metadata={
            "help": "a named sweep (results in results/compare/NAME); other flags override its "
            "settings",
            "choices": sorted(SWEEPS),
        },
    )


def named_sweep(given: dict[str, Any]) -> CompareCommand:
    """The base of the flags ``given``: the named sweep of :data:`SWEEPS` they choose (output in
    ``results/compare/NAME``), or the defaults."""
    name = given.get("sweep")
    if not name:
        return CompareCommand()
    return cli.settings_from(
        CompareCommand, {"out": Path("results/compare") / name, **SWEEPS[name]}
    )
