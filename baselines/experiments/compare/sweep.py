"""The comparison sweep: ``python -m baselines.compare --sweep demo``.

A sweep is environments x routine lengths x methods x seeds (settings only, in
:data:`SWEEPS`; flags override them). Each run is one :func:`baselines.lib.training.main` in its
own process (one torch thread each, ``--workers`` at a time), through the resumable runner
(:func:`baselines.lib.runner.run_resumable`): every finished run is appended as one JSON line to
``<out>/results.jsonl`` (flushed and fsynced, :class:`baselines.lib.results.ResultsFile`), so a
sweep killed halfway and started again runs only what is missing, and never duplicates a run. A
corrupt or partial line (a crash mid-write) is reported, moved to ``results.rejected.jsonl`` and
its run done again.

Then the analysis (:mod:`baselines.experiments.compare.analysis`) writes, as CSV and PNG beside
the results: learning curves with bootstrap bands, steps to the target success per method and
rho, the ratio trajectory-level / turn-level per rho, and a bsuite-style summary score per method.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.compare import analysis
from baselines.lib import cli
from baselines.lib.backend import BackendArgs
from baselines.lib.runner import run_resumable

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


@dataclass
class SweepArgs(BackendArgs):
    """Settings of a sweep (where its runs run: :class:`~baselines.lib.backend.BackendArgs`)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make kwargs (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [2, 20], metadata={"help": "routine lengths L to sweep", "min": 0}
    )
    methods: list[str] = field(
        default_factory=lambda: ["ppo", "trajectory_mc"],
        metadata={
            "help": "'ppo', estimator names and/or import paths 'package.module:Name' of your "
            "own estimators (each may end with JSON arguments); see docs/estimators.md"
        },
    )
    config: Path | None = field(
        default=None,
        metadata={
            "help": "hyperparameter YAML for this sweep instead of baselines/configs/<env id>.yml"
        },
    )
    seeds: list[int] = field(
        default_factory=lambda: [0, 1, 2], metadata={"help": "seeds", "min": 0}
    )
    budget_episodes: int = field(
        default=1200,
        metadata={
            "help": "training budget per run, in episodes of the longest episode length",
            "min": 1,
        },
    )
    min_budget_steps: int = field(
        default=0,
        metadata={
            "help": "lower bound of the budget in steps (short episodes need enough updates)",
            "min": 0,
        },
    )
    eval_points: int = field(default=12, metadata={"help": "evaluations per run", "min": 1})
    target_success: float = field(default=0.9, metadata={"help": "target success rate"})
    out: Path = field(default=Path("results/compare/demo"), metadata={"help": "output folder"})
    workers: int = field(
        default=2,
        metadata={"help": "runs in parallel (processes, or a local Ray instance's CPUs)", "min": 1},
    )
    baseline: str = field(default="ppo", metadata={"help": "turn-level method for ratios"})
    statistic: str = field(default="iqm", metadata={"help": "'iqm' or 'mean' for curves"})


# ------------------------------------------------------------------------------ the jobs
KEY_FIELDS = (
    "env_id",
    "env_kwargs",
    "method",
    "seed",
    "budget",
    "eval_every",
    "eval_points",
    "target",
    "hyperparameters",
    "estimator",
    "versions",
)
"""What a run's result depends on: the environment, the method and seed, the budget and the
evaluation schedule, the target, the resolved hyperparameters, the estimator (name, arguments,
code fingerprint) and the package versions. A rerun with any of them changed is a new run."""


def run_key(job: dict[str, Any]) -> str:
    """The identity of a run: every field of :data:`KEY_FIELDS`, as canonical JSON."""
    return json.dumps({k: job[k] for k in KEY_FIELDS}, sort_keys=True)


def check_lists(args: SweepArgs) -> None:
    """Refuse empty lists and a value given twice (a seed run twice would count twice)."""
    for name in ("routine_lengths", "methods", "seeds"):
        values = getattr(args, name)
        if not values:
            raise ValueError(f"{name} must not be empty")
        cli.check_unique(name, values)


def plan(args: SweepArgs) -> list[dict[str, Any]]:
    """Every run of the sweep, validated before any training starts."""
    import gymnasium as gym

    import routine_envs
    from baselines.lib.config import load_hyperparameters
    from baselines.lib.envs import check_env_kwargs

    gym.register_envs(routine_envs)
    check_lists(args)
    check_env_kwargs(args.env_id, args.env_kwargs)
    if args.statistic not in analysis.STATISTICS:
        raise ValueError(f"statistic must be one of {sorted(analysis.STATISTICS)}")
    if any(seed < 0 for seed in args.seeds):
        raise ValueError(f"seeds must be >= 0, got {args.seeds}")
    for method in args.methods:
        load_hyperparameters(args.env_id, method, args.config)  # a bad key fails here
    if args.budget_episodes < 1 or args.eval_points < 1 or args.workers < 1:
        raise ValueError("budget_episodes, eval_points and workers must be >= 1")
    from routine_envs.registration import entry

    density_kwarg = entry(args.env_id).density_kwarg
    if density_kwarg is None:
        raise ValueError(f"{args.env_id} has no keyword argument that sets its decision density")
    check_overrides(args, density_kwarg)
    return make_jobs(args, density_kwarg)


def check_overrides(args: SweepArgs, density_kwarg: str) -> None:
    """Refuse settings that another would silently override or that would give an empty
    table: ``--env-kwargs`` setting the kwarg ``--routine-lengths`` sweeps, a ``--baseline``
    that is not among ``--methods``."""
    if density_kwarg in args.env_kwargs:
        raise ValueError(
            f"--env-kwargs sets {density_kwarg}={args.env_kwargs[density_kwarg]!r}, which "
            f"--routine-lengths sweeps (and would override): give the lengths with "
            f"--routine-lengths only"
        )
    if args.baseline not in args.methods:
        raise ValueError(
            f"--baseline {args.baseline} is not among --methods {args.methods}: the ratio "
            "table would be empty; add it to --methods or choose one of them"
        )


def make_jobs(
    args: Any,
    density_kwarg: str,
    extra: Callable[[Any], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One job per routine length x method x seed of a sweep's settings ``args``; the env is
    built once per length (bad kwargs fail here). ``extra(env)`` adds fields to every job."""
    import gymnasium as gym

    from baselines.lib import provenance
    from baselines.lib.config import load_hyperparameters

    per_method = {}
    config = getattr(args, "config", None)
    for method in args.methods:
        hyper = load_hyperparameters(args.env_id, method, config)
        kwargs = hyper.get("estimator_kwargs") or {}
        per_method[method] = {
            "label": provenance.method_label(method, kwargs),
            "hyperparameters": hyper,
            "estimator": provenance.estimator_identity(method, kwargs),
        }
    versions = provenance.versions()
    jobs = []
    for length in args.routine_lengths:
        kwargs = {**args.env_kwargs, density_kwarg: length}
        env = gym.make(args.env_id, **kwargs).unwrapped
        episode_length = getattr(env, "max_episode_length", None) or env.spec.max_episode_steps
        budget = max(args.budget_episodes * int(episode_length), args.min_budget_steps)
        eval_every = max(1, budget // args.eval_points)
        fields = extra(env) if extra is not None else {}
        for method in args.methods:
            for seed in args.seeds:
                jobs.append(
                    {
                        "env_id": args.env_id,
                        "env_kwargs": kwargs,
                        "method": method,
                        "seed": seed,
                        "routine_length": length,
                        "rho": float(env.decision_density),
                        **fields,
                        "budget": eval_every * args.eval_points,
                        "eval_every": eval_every,
                        "eval_points": args.eval_points,
                        "target": args.target_success,
                        **per_method[method],
                        "config": None if config is None else str(config),
                        "versions": versions,
                    }
                )
    return jobs


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one run (in a worker process) and return its record."""
    import torch

    torch.set_num_threads(1)
    from baselines.lib.training import TrainArgs, main

    result = main(
        TrainArgs(
            env_id=job["env_id"],
            env_kwargs=job["env_kwargs"],
            method=job["method"],
            seed=job["seed"],
            total_timesteps=job["budget"],
            eval_every=job["eval_every"],
            target_success=job["target"],
            config=None if job.get("config") is None else Path(job["config"]),
            progress=False,
        )
    )
    used = {k: v for k, v in result.hyperparameters.items() if k in job["hyperparameters"]}
    if used != job["hyperparameters"]:  # the YAML changed between planning and this run
        raise ValueError(
            f"hyperparameters changed since the sweep was planned: {used} != "
            f"{job['hyperparameters']}"
        )
    return {
        **job,
        "key": run_key(job),
        "timesteps": result.timesteps,
        "success": result.success,
        "steps_to_target": result.steps_to_target,
        "steps_trained": result.steps_trained,
        "wall_time": result.wall_time,
    }


REQUIRED = {
    "key": "str",
    "method": "str",
    "seed": "int",
    "routine_length": "int",
    "rho": "number",
    "timesteps": "numbers",
    "success": "numbers",
    "budget": "number",
    "target": "number",
}
"""The fields every run record has, and their kinds (:class:`baselines.lib.results.ResultsFile`)."""


def check_record(record: dict[str, Any]) -> None:
    """A run record's curve: one success rate in [0, 1] per evaluation, at increasing times."""
    t, s = record["timesteps"], record["success"]
    if not t or len(t) != len(s):
        raise ValueError(f"{len(t)} timesteps but {len(s)} success values")
    if any(b < a for a, b in itertools.pairwise(t)):
        raise ValueError("timesteps are not increasing")
    if not all(-1e-9 <= x <= 1.0 + 1e-9 for x in s):  # exact probabilities: rounding only
        raise ValueError("a success rate is outside [0, 1]")


def run_sweep(args: SweepArgs, progress: bool = True) -> list[dict[str, Any]]:
    """Run what is missing of the sweep; return every record of it."""
    return run_resumable(
        plan(args),
        run_key,
        run_job,
        args.out / "results.jsonl",
        args.workers,
        required=REQUIRED,
        check=check_record,
        progress=progress,
        backend=args,
    )


def main(args: SweepArgs) -> dict[str, list[dict[str, Any]]]:
    records = run_sweep(args)
    tables = analysis.analyse(records, args.out, args.baseline, args.statistic)
    analysis.report(tables, records)
    print(
        f"\nwrote {args.out}/: results.jsonl, learning_curves.csv/.png, steps_to_target.csv/"
        ".png, ratio_to_turn_level.csv, summary_scores.csv/.png"
    )
    return tables


def cli_main(argv: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """``python -m baselines.compare``: bad settings are one line on stderr and exit status 2,
    before any training; a failed run names itself (exit status 1, the runs done kept)."""
    from baselines.commands import script

    return script("compare")(argv)


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


def parse_args(argv: list[str] | None = None) -> SweepArgs:
    """The settings of a sweep from the command line: ``--sweep NAME`` starts from a named
    sweep of :data:`SWEEPS` (output in ``results/compare/NAME``), other flags override it."""
    from baselines.commands import settings_of

    return settings_of("compare", argv)
