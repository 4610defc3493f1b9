"""Training runs as jobs and records, shared by every experiment that trains (the comparison
sweep, the team sweep, the benchmark): one run is one :func:`baselines.lib.training.main` in a
worker process (``trainer: sb3``), or one of the runs that :func:`baselines.lib.batched.
train_runs` trains together in one worker process (``trainer: batched``, :data:`BATCHING`),
keyed by everything its result depends on (:data:`KEY_FIELDS`, and the trainer).

:func:`training_jobs` plans the runs of one environment at several density values, methods and
seeds (the hyperparameters, label and estimator identity of each method read once from its
parsed spec); :func:`run_training` and :func:`run_training_batch` are the workers;
:class:`TrainingRecord` is what they write.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from baselines.lib import cli
from baselines.lib.backend import BackendArgs
from baselines.lib.records import Record, upgrade
from baselines.lib.runner import Batching
from baselines.lib.stats import STATISTICS
from baselines.lib.trainers import DEFAULT_TRAINER, TRAINERS, check_trainer, trainer_of

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
    """The identity of a run: every field of :data:`KEY_FIELDS`, and the trainer unless it is
    :data:`DEFAULT_TRAINER` (so SB3 runs keep the keys they had before the trainer was
    recorded, the shipped references' among them), as canonical JSON."""
    fields_ = {k: job[k] for k in KEY_FIELDS}
    if trainer_of(job) != DEFAULT_TRAINER:
        fields_["trainer"] = trainer_of(job)
    return json.dumps(fields_, sort_keys=True)


@dataclass
class TrainingRecord(Record):
    """One training run: its settings (the job) and its success curve.

    Attributes:
        env_id, env_kwargs, method, seed: what was trained (``env_kwargs`` includes the density
            keyword's value).
        budget, target: environment steps of the budget, target success rate.
        timesteps, success: the evaluation grid and the (exact, where the env has a model)
            success rate at each point, in [0, 1].
        steps_to_target: steps to the target, interpolated between evaluations (``None``:
            not reached).
        privileged_fields: the privileged batch fields its method was given
            (:data:`routine_envs.episodes.PRIVILEGED_FIELDS`; ``[]``: label-free), as the run
            recorded them (its estimator's ``requires``, read once); for a row written before
            runs recorded them, its built-in method's (:func:`~.records.upgrade`); ``None``: not
            known (an old row of outside code: :func:`baselines.lib.privileged.row_privileged`
            builds its estimator again).
        extra: every other field of the job and of the result (the schedule, the label, the
            hyperparameters and estimator identity, versions, the ``trainer``, a benchmark's
            protocol and tier, a team's rho), kept as they are; a row without ``trainer`` (one
            written before the field existed) is an SB3 run (:func:`trainer_of`).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    method: str
    seed: int
    budget: float
    target: float
    timesteps: list[float]
    success: list[float]
    steps_to_target: float | None = None
    privileged_fields: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    unit: ClassVar[str] = "run"

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TrainingRecord:
        """The record of a results-file row (old rows upgraded: :func:`~.records.upgrade`)."""
        row = upgrade(row)
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in row.items() if k in names}
        return cls(**known, extra={k: v for k, v in row.items() if k not in names})

    def row(self) -> dict[str, Any]:
        """The flat row: the declared fields (``privileged_fields`` where known), then
        :attr:`extra`'s."""
        declared = asdict(self)
        if declared["privileged_fields"] is None:
            del declared["privileged_fields"]
        return {**{k: v for k, v in declared.items() if k != "extra"}, **self.extra}

    @staticmethod
    def check(row: dict[str, Any]) -> None:
        """A run record's curve: one success rate in [0, 1] per evaluation, at increasing
        times; its ``privileged_fields``, where it has them, a list of privileged field names."""
        from routine_envs.episodes import PRIVILEGED_FIELDS

        read = row.get("privileged_fields")
        if read is not None and (
            not isinstance(read, list) or not all(f in PRIVILEGED_FIELDS for f in read)
        ):
            raise ValueError(
                f"privileged_fields must be a list of {list(PRIVILEGED_FIELDS)}, got "
                f"{str(read)[:80]}"
            )
        t, s = row["timesteps"], row["success"]
        if not t or len(t) != len(s):
            raise ValueError(f"{len(t)} timesteps but {len(s)} success values")
        if any(b < a for a, b in itertools.pairwise(t)):
            raise ValueError("timesteps are not increasing")
        if not all(-1e-9 <= x <= 1.0 + 1e-9 for x in s):  # exact probabilities: rounding only
            raise ValueError("a success rate is outside [0, 1]")


SCHEMA = {"key": "str", **TrainingRecord.schema()}
"""The fields every training record has, and their kinds (the results file checks them)."""


# ------------------------------------------------------------------------- a sweep
@dataclass
class SweepArgs(BackendArgs):
    """Settings of a sweep (where its runs run: :class:`~baselines.lib.backend.BackendArgs`)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make kwargs (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [2, 20],
        metadata={
            "help": "values of the env's density keyword to sweep (routine_length L for Diluted "
            "Doors and CodeFix, corridor_length for RoutineGrid)",
            "min": 0,
        },
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
    trainer: str = field(
        default=DEFAULT_TRAINER,
        metadata={
            "help": "'sb3' (SB3 PPO / TrajectoryAdvantagePPO, one process per run) or 'batched' "
            "(baselines.lib.batched: the same algorithm, the seeds and densities of a method "
            "trained together in one process; environments with an exact model only, "
            "docs/batched.md); recorded in every row and part of its key",
            "choices": list(TRAINERS),
        },
    )


def check_lists(args: SweepArgs) -> None:
    """Refuse empty lists and a value given twice (a seed run twice would count twice)."""
    for name in ("routine_lengths", "methods", "seeds"):
        values = getattr(args, name)
        if not values:
            raise ValueError(f"{name} must not be empty")
        cli.check_unique(name, values)


def check_sweep(args: SweepArgs, density_kwarg: str) -> None:
    """What every training sweep refuses before any work: empty or repeated lists, a negative
    seed, an unknown statistic or trainer, a bad method or config key, counts below 1,
    ``--env-kwargs`` setting the kwarg ``--routine-lengths`` sweeps, a ``--baseline`` not among
    ``--methods``. (What the trainer cannot train is refused when the jobs are planned:
    :func:`training_jobs`.)"""
    from baselines.lib.config import load_hyperparameters

    check_lists(args)
    check_trainer(args.trainer)
    if args.statistic not in STATISTICS:
        raise ValueError(f"--statistic {args.statistic}: must be one of {sorted(STATISTICS)}")
    if any(seed < 0 for seed in args.seeds):
        raise ValueError(f"--seeds {args.seeds}: must be >= 0")
    for method in args.methods:
        load_hyperparameters(args.env_id, method, args.config)  # a bad key fails here
    for flag, value in (
        ("--budget-episodes", args.budget_episodes),
        ("--eval-points", args.eval_points),
        ("--workers", args.workers),
    ):
        if value < 1:
            raise ValueError(f"{flag} {value}: must be >= 1")
    if not 0 < args.target_success <= 1:
        raise ValueError(f"--target-success {args.target_success}: must be in (0, 1]")
    check_overrides(args, density_kwarg)


def jobs_of(args: SweepArgs, density_kwarg: str, extra: Any = None) -> list[dict[str, Any]]:
    """The training jobs of a sweep's settings (:func:`~baselines.lib.training_runs.
    training_jobs`)."""
    return training_jobs(
        args.env_id,
        args.env_kwargs,
        density_kwarg,
        args.routine_lengths,
        args.methods,
        args.seeds,
        args.budget_episodes,
        args.min_budget_steps,
        args.eval_points,
        args.target_success,
        args.config,
        extra,
        args.trainer,
    )


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


def training_jobs(
    env_id: str,
    env_kwargs: dict[str, Any],
    density_kwarg: str,
    values: Sequence[int],
    methods: Sequence[str],
    seeds: Sequence[int],
    budget_episodes: int,
    min_budget_steps: int,
    eval_points: int,
    target: float,
    config: Path | None = None,
    extra: Callable[[Any], dict[str, Any]] | None = None,
    trainer: str = DEFAULT_TRAINER,
    described: Mapping[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One job per density value x method x seed; the env is built once per value (bad kwargs
    fail here). The budget in steps is ``max(budget_episodes * longest episode,
    min_budget_steps)``, cut to a multiple of the ``eval_points`` evaluations; ``extra(env)``
    adds fields to every job of a value. Each method's spec is parsed once
    (:func:`~baselines.lib.specs.parse_method`), its hyperparameters read once. ``trainer``
    (:data:`TRAINERS`) is recorded in every job; what it cannot train (:func:`check_supported`)
    is refused here, one line naming ``--trainer``. ``described``: per method, its ``label``,
    ``hyperparameters`` and ``estimator`` identity given by the caller instead of parsed (outside
    code that must not be imported: a submission's verifier plans its runs as data)."""
    import gymnasium as gym

    from baselines.lib import provenance
    from baselines.lib.config import load_hyperparameters
    from baselines.lib.specs import parse_method

    per_method = {m: dict(d) for m, d in (described or {}).items()}
    for method in methods:
        if method in per_method:
            continue
        spec = parse_method(method)
        hyper = load_hyperparameters(env_id, spec, config)
        kwargs = hyper.get("estimator_kwargs") or {}
        per_method[method] = {
            "label": spec.label(kwargs),
            "hyperparameters": hyper,
            "estimator": spec.identity(kwargs),
        }
    check_trainer(trainer)
    versions = provenance.versions()
    jobs = []
    for value in values:
        kwargs = {**env_kwargs, density_kwarg: value}
        for method in methods:
            if method not in (described or {}):
                hyper = per_method[method]["hyperparameters"]
                check_supported(trainer, env_id, kwargs, method, hyper)
        env = gym.make(env_id, **kwargs).unwrapped
        episode_length = getattr(env, "max_episode_length", None) or env.spec.max_episode_steps
        budget = max(budget_episodes * int(episode_length), min_budget_steps)
        eval_every = max(1, budget // eval_points)
        fields_ = extra(env) if extra is not None else {}
        for method in methods:
            for seed in seeds:
                jobs.append(
                    {
                        "env_id": env_id,
                        "env_kwargs": kwargs,
                        "method": method,
                        "seed": seed,
                        "density_kwarg": density_kwarg,
                        "density_value": value,
                        "rho": float(env.decision_density),
                        **fields_,
                        "budget": eval_every * eval_points,
                        "eval_every": eval_every,
                        "eval_points": eval_points,
                        "target": target,
                        **per_method[method],
                        "config": None if config is None else str(config),
                        "versions": versions,
                        "trainer": trainer,
                    }
                )
    return jobs


def check_supported(
    trainer: str, env_id: str, env_kwargs: dict[str, Any], method: str, hyper: dict[str, Any]
) -> None:
    """One line naming ``--trainer`` when ``trainer`` cannot train ``method`` on ``env_id`` with
    ``env_kwargs`` and ``hyper`` (the resolved hyperparameters): for ``batched``,
    :func:`baselines.lib.batched.check_supported`; for ``sb3``, ``policy: transformer``."""
    if trainer == "sb3":
        if hyper.get("policy", "mlp") != "mlp":
            raise ValueError(
                f"--trainer sb3 trains the MLP policy only; the hyperparameters of {method} on "
                f"{env_id} say policy: {hyper['policy']} (use --trainer batched)"
            )
        return
    from baselines.lib.batched import RunSpec
    from baselines.lib.batched import check_supported as batched_supported

    try:
        batched_supported(RunSpec(env_id, dict(env_kwargs), method, hyperparameters=hyper))
    except ValueError as err:
        text = str(err)
        if "--trainer batched" not in text:
            text = f"--trainer batched cannot train {method} on {env_id}: {text}"
        raise ValueError(text) from None


def run_training(job: dict[str, Any]) -> TrainingRecord:
    """Train one run (in a worker process) with its trainer (a batched job alone: R = 1) and
    return its record."""
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
            trainer=trainer_of(job),
        )
    )
    used = {k: v for k, v in result.hyperparameters.items() if k in job["hyperparameters"]}
    if used != job["hyperparameters"]:  # the YAML changed between planning and this run
        raise ValueError(
            f"hyperparameters changed since the sweep was planned: {used} != "
            f"{job['hyperparameters']}"
        )
    return TrainingRecord.from_row(
        {
            **job,
            "key": run_key(job),
            **result_fields(result),
        }
    )


def run_spec(job: dict[str, Any]) -> Any:
    """The batched trainer's :class:`~baselines.lib.batched.RunSpec` of a training job."""
    from baselines.lib.batched import RunSpec

    return RunSpec(
        env_id=job["env_id"],
        env_kwargs=job["env_kwargs"],
        method=job["method"],
        seed=job["seed"],
        total_timesteps=job["budget"],
        eval_every=job["eval_every"],
        target_success=job["target"],
        hyperparameters=job["hyperparameters"],
    )


def result_fields(result: Any) -> dict[str, Any]:
    """What a trained run adds to its job's row (either trainer's result: the success curve,
    steps to target, the privileged fields its estimator was given, steps trained, wall and CPU
    seconds)."""
    return {
        "timesteps": result.timesteps,
        "success": result.success,
        "steps_to_target": result.steps_to_target,
        "privileged_fields": list(result.privileged_fields),
        "steps_trained": result.steps_trained,
        "wall_time": result.wall_time,
        "cpu_time": result.cpu_time,
    }


def batch_group(job: dict[str, Any]) -> str | None:
    """The runner's batch group of a job (:class:`~baselines.lib.runner.Batching`): ``None``
    for SB3 (one run per process), else what a batch of the batched trainer shares: the env
    id, the method, the resolved hyperparameters and the config they came from (seeds,
    densities and other ``env_kwargs`` may differ)."""
    if trainer_of(job) == DEFAULT_TRAINER:
        return None
    return json.dumps(
        [job["env_id"], job["method"], job["hyperparameters"], job.get("config")],
        sort_keys=True,
        default=str,
    )


def run_training_batch(jobs: list[dict[str, Any]]) -> list[TrainingRecord]:
    """Train ``jobs`` (``trainer: batched``) together on the batched trainer (in a worker
    process) and return their records, in order: the same fields as :func:`run_training`'s,
    plus ``cpu_time`` (each run's share of the batch's CPU seconds; ``wall_time`` likewise)."""
    import torch

    torch.set_num_threads(1)
    from baselines.lib.batched import train_runs

    specs = [run_spec(job) for job in jobs]
    results = train_runs(specs, max_batch=max(1, len(specs)))
    return [
        TrainingRecord.from_row(
            {
                **job,
                "key": run_key(job),
                **result_fields(result),
            }
        )
        for job, result in zip(jobs, results, strict=True)
    ]


BATCHING = Batching(batch_group, run_training_batch)
"""How the runner batches training jobs: ``trainer: batched`` jobs of one env id, method and
hyperparameters run in one call of :func:`run_training_batch` (64 runs at most, fewer when
there are fewer groups than workers: :func:`~baselines.lib.runner.batch_sizes`); SB3 jobs one
by one."""
