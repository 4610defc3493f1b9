"""A training run as a value, and training as a function of runs.

A :class:`Run` is everything a run's result depends on: the environment and its arguments, the
parsed method (:class:`~baselines.lib.specs.MethodSpec`, parsed once, carried to the trainer),
the seed, the budget and evaluation schedule, the target, the resolved hyperparameters, the
trainer and the package versions; its :attr:`Run.context` holds what it is part of (a sweep's
density value and rho, a benchmark's protocol and tier), recorded but never read by a trainer.

- :meth:`Run.of` builds one run from a command's settings; :func:`plan` builds a sweep's (one
  environment at several density values x methods x seeds), checked before any training.
- :func:`train` trains runs on their trainers (:data:`~baselines.lib.trainers.TRAINERS`): one
  interface, ``train(runs) -> results``; an SB3 run is the batch of one.
- :func:`key` is a run's identity (its results-file key) and :func:`record` its
  :class:`TrainingRecord`; :data:`BATCHING`, :func:`train_record` and :func:`train_batch` are how
  the resumable runner (:mod:`baselines.lib.runner`) trains them in worker processes.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from baselines.lib import provenance
from baselines.lib.records import Record, upgrade
from baselines.lib.runner import Batching
from baselines.lib.scoring import DEFAULT_EVALUATION, check_evaluation
from baselines.lib.specs import MethodSpec, parse_method
from baselines.lib.trainers import (
    DEFAULT_DEVICE,
    DEFAULT_TRAINER,
    TRAINER_MODULES,
    RunResult,
    check_device,
    check_trainer,
    trainer_of,
)

DEFAULT_EVAL_EPISODES = 200
"""Sampled episodes per evaluation on an environment without an exact model."""
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
"""The row fields every run's key covers (:func:`key`); of its context, a benchmark run's
protocol version and tier are keyed too (the report tells whose runs it reads by them), the
rest is what the settings already determine (density value, rho) or provenance (the config
file, the estimator's source hash)."""


@dataclass(frozen=True)
class Run:
    """One training run.

    Attributes:
        env_id, env_kwargs: the environment (``gym.make`` arguments, the density keyword's
            value included).
        method: the parsed method (``ppo``, an estimator, outside code; its JSON arguments).
        seed: seed of the algorithm and the environments (>= 0).
        budget: environment steps to train.
        eval_every: environment steps between evaluations (0, ``eval_every``, ... up to the
            budget: :func:`~baselines.lib.trainers.schedule`); with ``evaluation`` ``updates``,
            the steps of one rollout (its nominal spacing).
        target: the success rate whose first crossing is the run's steps to target, in (0, 1].
        hyperparameters: resolved (``n_envs`` and the estimator's ``estimator_kwargs``
            included); the trainer reads nothing else.
        trainer: :data:`~baselines.lib.trainers.TRAINERS`.
        versions: the package versions that compute it (:func:`~.provenance.versions`).
        eval_episodes: sampled episodes per evaluation where the env has no exact model.
        evaluation: when the policy is evaluated and how its curve is scored
            (:data:`~baselines.lib.scoring.EVALUATIONS`: ``schedule``, the grid of
            ``eval_every``; ``updates``, after every update, steps to target without
            interpolation).
        device: where its tensors live (``cpu``, ``cuda``...: a torch device,
            :func:`~baselines.lib.trainers.check_device`); another device computes other
            bits, so it is keyed unless it is :data:`~baselines.lib.trainers.DEFAULT_DEVICE`.
        context: what the run is part of, in row order (``density_kwarg``, ``density_value``,
            ``rho``, a team's fields, ``config``, ``protocol``, ``tier``, ``setting``):
            recorded in its row; of it only the protocol version and tier are keyed
            (:func:`key`).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    method: MethodSpec
    seed: int
    budget: int
    eval_every: int
    target: float
    hyperparameters: dict[str, Any]
    trainer: str = DEFAULT_TRAINER
    versions: dict[str, Any] = field(default_factory=provenance.versions)
    eval_episodes: int = DEFAULT_EVAL_EPISODES
    context: dict[str, Any] = field(default_factory=dict)
    evaluation: str = DEFAULT_EVALUATION
    device: str = DEFAULT_DEVICE

    @classmethod
    def of(
        cls,
        env_id: str,
        method: str | MethodSpec = "ppo",
        env_kwargs: Mapping[str, Any] | None = None,
        seed: int = 0,
        budget: int = 50_000,
        eval_every: int = 2_000,
        target: float = 0.9,
        trainer: str = DEFAULT_TRAINER,
        config: Path | None = None,
        hyperparameters: Mapping[str, Any] | None = None,
        eval_episodes: int = DEFAULT_EVAL_EPISODES,
        context: Mapping[str, Any] | None = None,
        evaluation: str = DEFAULT_EVALUATION,
        device: str = DEFAULT_DEVICE,
    ) -> Run:
        """One run, checked (``ValueError`` naming the first bad setting as its flag): the
        method parsed once, the hyperparameters read from ``config`` (else the env's
        config, ``baselines/configs/<env id>.yml``) unless given."""
        from baselines.lib.config import load_hyperparameters
        from baselines.lib.envs import check_env_kwargs
        from routine_envs.cli import flag_of

        check_env_kwargs(env_id, dict(env_kwargs or {}))
        check_trainer(trainer)
        check_evaluation(evaluation)
        check_device(device)
        spec = method if isinstance(method, MethodSpec) else parse_method(method)
        if seed < 0:
            raise ValueError(f"--seed {seed}: must be >= 0")
        for name, value in (
            ("total_timesteps", budget),
            ("eval_every", eval_every),
            ("eval_episodes", eval_episodes),
        ):
            if value < 1:
                raise ValueError(f"{flag_of(name)} {value}: must be >= 1")
        if not 0 < target <= 1:
            raise ValueError(f"--target-success {target}: must be in (0, 1]")
        hyper = (
            dict(hyperparameters)
            if hyperparameters is not None
            else load_hyperparameters(env_id, spec, config)
        )
        return cls(
            env_id,
            dict(env_kwargs or {}),
            spec,
            seed,
            budget,
            eval_every,
            target,
            hyper,
            trainer,
            eval_episodes=eval_episodes,
            context={"config": None if config is None else str(config), **dict(context or {})},
            evaluation=evaluation,
            device=device,
        )

    @property
    def trained_with(self) -> dict[str, Any]:
        """The hyperparameters it trains with: its own, with ``n_envs`` the default config's (8)
        where they name none."""
        from baselines.lib.config import DEFAULT_CONFIG

        return {"n_envs": DEFAULT_CONFIG["common"]["n_envs"], **self.hyperparameters}

    @property
    def eval_points(self) -> int:
        """Evaluations after the first (at step 0)."""
        return self.budget // self.eval_every

    @property
    def estimator(self) -> dict[str, Any]:
        """``{"name", "kwargs", "code"}`` of its estimator (:meth:`MethodSpec.identity`, with
        the hyperparameters' ``estimator_kwargs``)."""
        return self.method.identity(self.hyperparameters.get("estimator_kwargs") or {})

    @property
    def label(self) -> str:
        """How tables and plots name its method (:meth:`MethodSpec.label`)."""
        return self.method.label(self.hyperparameters.get("estimator_kwargs") or {})

    def row(self) -> dict[str, Any]:
        """Its settings as a results-file row's fields (what :func:`record` writes before the
        result): the density context first, the protocol's last, as rows always had them."""
        late = ("config", "protocol", "tier", "setting")
        early = {k: v for k, v in self.context.items() if k not in late}
        row = {
            "env_id": self.env_id,
            "env_kwargs": self.env_kwargs,
            "method": self.method.text,
            "seed": self.seed,
            **early,
            "budget": self.budget,
            "eval_every": self.eval_every,
            "eval_points": self.eval_points,
            "target": self.target,
            "label": self.label,
            "hyperparameters": self.hyperparameters,
            "estimator": self.estimator,
            "source": self.method.source_hash(),
            "config": self.context.get("config"),
            "versions": self.versions,
            "trainer": self.trainer,
        }
        if self.eval_episodes != DEFAULT_EVAL_EPISODES:
            row["eval_episodes"] = self.eval_episodes
        if self.evaluation != DEFAULT_EVALUATION:
            row["evaluation"] = self.evaluation
        if self.device != DEFAULT_DEVICE:
            row["device"] = self.device
        return {**row, **{k: self.context[k] for k in late[1:] if k in self.context}}

    def describe(self) -> str:
        """``DilutedDoors-v1 {'routine_length': 4}, method ppo, seed 1``."""
        return f"{self.env_id} {self.env_kwargs}, method {self.method.text}, seed {self.seed}"


def key(run: Run | Mapping[str, Any]) -> str:
    """The identity of a run (or of a results-file row: its key recomputed from its own
    fields), as canonical JSON: every setting its result depends on (env id and kwargs, method
    text, seed, budget, schedule, target, hyperparameters, estimator identity, versions), the
    protocol version and tier of a benchmark run, the trainer unless it is
    :data:`~baselines.lib.trainers.DEFAULT_TRAINER`, the sampled evaluation's episodes and the
    evaluation mode and the device unless they are the defaults (so runs keep the keys they had
    before any of them was recorded). The estimator's code enters by its fingerprint
    (:func:`routine_envs.plugins.code_fingerprint`: a docstring, comment or layout edit keeps
    every key); the protocol by its version only (its
    file hash is recorded: a released file never changes)."""
    row = run.row() if isinstance(run, Run) else run
    fields_ = {name: row[name] for name in KEY_FIELDS}
    if "protocol" in row:
        fields_["protocol"] = row["protocol"]["version"]
    if "tier" in row:
        fields_["tier"] = row["tier"]
    if trainer_of(row) != DEFAULT_TRAINER:
        fields_["trainer"] = trainer_of(row)
    if row.get("eval_episodes", DEFAULT_EVAL_EPISODES) != DEFAULT_EVAL_EPISODES:
        fields_["eval_episodes"] = row["eval_episodes"]
    if (row.get("evaluation") or DEFAULT_EVALUATION) != DEFAULT_EVALUATION:
        fields_["evaluation"] = row["evaluation"]
    if (row.get("device") or DEFAULT_DEVICE) != DEFAULT_DEVICE:
        fields_["device"] = row["device"]
    return json.dumps(fields_, sort_keys=True)


# ------------------------------------------------------------------------ records
@dataclass
class TrainingRecord(Record):
    """One training run: its settings (:meth:`Run.row`) and its success curve.

    Attributes:
        env_id, env_kwargs, method, seed: what was trained (``env_kwargs`` includes the density
            keyword's value).
        budget, target: environment steps of the budget, target success rate.
        timesteps, success: the evaluation grid and the (exact, where the env has a model)
            success rate at each point, in [0, 1].
        steps_to_target: steps to the target by its evaluation's rule
            (:func:`baselines.lib.scoring.steps_to_target`; ``None``: not reached).
        privileged_fields: the privileged batch fields its method was given
            (:data:`routine_envs.episodes.PRIVILEGED_FIELDS`; ``[]``: label-free), as the run
            recorded them (its estimator's ``requires``, read once); for a row written before
            runs recorded them, its built-in method's (:func:`~.records.upgrade`); ``None``: not
            known (an old row of outside code: :func:`baselines.lib.privileged.row_privileged`
            builds its estimator again).
        extra: every other field of the row (the schedule, the label, the hyperparameters and
            estimator identity, versions, the ``trainer``, a benchmark's protocol and tier, a
            team's rho), kept as they are; a row without ``trainer`` (one written before the
            field existed) is an SB3 run (:func:`~baselines.lib.trainers.trainer_of`).
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


def record(run: Run, result: RunResult) -> TrainingRecord:
    """The record of ``run`` trained: its row, its key, and what the training measured (the
    success curve, steps to target, the privileged fields its estimator was given, steps
    trained, wall and CPU seconds)."""
    return TrainingRecord.from_row(
        {
            **run.row(),
            "key": key(run),
            "timesteps": result.timesteps,
            "success": result.success,
            "steps_to_target": result.steps_to_target,
            "privileged_fields": list(result.privileged_fields),
            "steps_trained": result.steps_trained,
            "wall_time": result.wall_time,
            "cpu_time": result.cpu_time,
        }
    )


# ----------------------------------------------------------------------- training
def trainer_module(trainer: str) -> Any:
    """The module of ``trainer`` (:data:`~baselines.lib.trainers.TRAINER_MODULES`): its
    ``check(run)`` and ``train(runs, progress) -> results``."""
    check_trainer(trainer)
    return importlib.import_module(TRAINER_MODULES[trainer])


def check(run: Run) -> None:
    """``ValueError`` (one line naming ``--trainer``) when ``run``'s trainer cannot train it,
    before anything is built."""
    try:
        trainer_module(run.trainer).check(run)
    except ValueError as err:
        text = str(err)
        if f"--trainer {run.trainer}" not in text:
            text = f"--trainer {run.trainer} cannot train {run.method.text} on {run.env_id}: {text}"
        raise ValueError(text) from None


def train(runs: Sequence[Run], progress: bool = False) -> list[RunResult]:
    """Train ``runs``, each on its trainer, and return one result per run, in order; every run
    is checked (:func:`check`) before any training."""
    runs = list(runs)
    for run in runs:
        check(run)
    results: list[RunResult | None] = [None] * len(runs)
    for trainer in dict.fromkeys(r.trainer for r in runs):
        where = [i for i, r in enumerate(runs) if r.trainer == trainer]
        trained = trainer_module(trainer).train([runs[i] for i in where], progress=progress)
        for i, result in zip(where, trained, strict=True):
            results[i] = result
    return [r for r in results if r is not None]


def train_record(run: Run) -> TrainingRecord:
    """Train one run (a worker's job) and return its record."""
    (result,) = train([run])
    return record(run, result)


def train_batch(runs: list[Run]) -> list[TrainingRecord]:
    """Train ``runs`` together (a worker's batch of one trainer) and return their records, in
    order (``wall_time``/``cpu_time``: each run's share of the batch's)."""
    return [record(r, result) for r, result in zip(runs, train(runs), strict=True)]


def batch_group(run: Run) -> str | None:
    """The runner's batch group of a run: ``None`` for SB3 (one run per process), else what a
    batch of the batched trainer shares: env id, method, resolved hyperparameters (seeds,
    densities and other ``env_kwargs`` may differ)."""
    if run.trainer == DEFAULT_TRAINER:
        return None
    return json.dumps(
        [run.env_id, run.method.text, run.hyperparameters, run.context.get("config")],
        sort_keys=True,
        default=str,
    )


BATCHING = Batching(batch_group, train_batch)
"""How the runner batches runs: the batched trainer's runs of one env id, method and
hyperparameters in one call of :func:`train_batch` (64 at most, fewer when there are fewer
groups than workers: :func:`~baselines.lib.runner.batch_sizes`); SB3 runs one by one."""


# --------------------------------------------------------------------------- plans
def plan(
    env_id: str,
    env_kwargs: Mapping[str, Any],
    density_kwarg: str,
    values: Sequence[int],
    methods: Sequence[MethodSpec],
    seeds: Sequence[int],
    budget_episodes: int,
    min_budget_steps: int,
    eval_points: int,
    target: float,
    config: Path | None = None,
    extra: Callable[[Any], dict[str, Any]] | None = None,
    trainer: str = DEFAULT_TRAINER,
    hyperparameters: Mapping[str, dict[str, Any]] | None = None,
    context: Mapping[str, Any] | None = None,
    evaluation: str = DEFAULT_EVALUATION,
    device: str = DEFAULT_DEVICE,
) -> list[Run]:
    """One run per density value x method x seed, checked before any training; the env is built
    once per value (bad kwargs fail here). The budget in steps is ``max(budget_episodes *
    longest episode, min_budget_steps)``, cut to a multiple of the ``eval_points`` evaluations
    (with ``evaluation`` ``updates``: to whole rollouts of ``n_envs * n_steps`` steps, at least
    one, ``eval_points`` unused); ``extra(env)`` adds context fields to every run of a value.
    Each method's hyperparameters are read once (from ``config``, else the env's config), or
    given per method text in ``hyperparameters``; what ``trainer`` cannot train is refused here,
    one line naming ``--trainer`` (a method whose code is not imported,
    :attr:`MethodSpec.estimator` ``None``, is planned as data and not checked). ``context`` is
    added to every run's (a benchmark's protocol, tier and setting); ``device``: where every
    run's tensors live (:attr:`Run.device`)."""
    import gymnasium as gym

    from baselines.lib.config import load_hyperparameters

    check_trainer(trainer)
    check_evaluation(evaluation)
    check_device(device)
    given = dict(hyperparameters or {})
    hypers = {
        m.text: given[m.text] if m.text in given else load_hyperparameters(env_id, m, config)
        for m in methods
    }
    versions = provenance.versions()
    runs = []
    for value in values:
        kwargs = {**env_kwargs, density_kwarg: value}
        env = gym.make(env_id, **kwargs).unwrapped
        episode_length = getattr(env, "max_episode_length", None) or env.spec.max_episode_steps
        steps = max(budget_episodes * int(episode_length), min_budget_steps)
        shared = {
            "density_kwarg": density_kwarg,
            "density_value": value,
            "rho": float(env.decision_density),
            **(extra(env) if extra is not None else {}),
            "config": None if config is None else str(config),
            **dict(context or {}),
        }
        for method in methods:
            if evaluation == "updates":  # the nominal spacing: one rollout
                rollout = rollout_steps(hypers[method.text])
                budget, eval_every = max(1, steps // rollout) * rollout, rollout
            else:
                eval_every = max(1, steps // eval_points)
                budget = eval_every * eval_points
            for seed in seeds:
                run = Run(
                    env_id,
                    kwargs,
                    method,
                    seed,
                    budget,
                    eval_every,
                    target,
                    hypers[method.text],
                    trainer,
                    versions,
                    context=shared,
                    evaluation=evaluation,
                    device=device,
                )
                if seed == seeds[0] and method.resolved:
                    check(run)
                runs.append(run)
    return runs


def rollout_steps(hyperparameters: Mapping[str, Any]) -> int:
    """Environment steps of one rollout of PPO with ``hyperparameters``: ``n_envs * n_steps``
    (the default config's where they name neither)."""
    from baselines.lib.config import DEFAULT_CONFIG

    common = DEFAULT_CONFIG["common"]
    return int(hyperparameters.get("n_envs", common["n_envs"])) * int(
        hyperparameters.get("n_steps", common["n_steps"])
    )


def replace(run: Run, **changes: Any) -> Run:
    """``run`` with ``changes`` (:func:`dataclasses.replace`; ``context`` merged)."""
    if "context" in changes:
        changes["context"] = {**run.context, **changes["context"]}
    return dataclasses.replace(run, **changes)
