"""The public entry points: :class:`RunSpec`, :func:`batch_key`, :func:`group_runs` and
:func:`train_runs` (see the package docstring)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.config import check_method, load_hyperparameters
from baselines.lib.envs import check_env_kwargs
from baselines.lib.stats import first_crossing

DEFAULT_MAX_BATCH = 64
"""Runs trained in one batch at most (more are split into batches of this size)."""


@dataclass(frozen=True)
class RunSpec:
    """One run: what :class:`baselines.lib.training.TrainArgs` says of it.

    Attributes:
        env_id, env_kwargs: the environment (``gym.make`` arguments).
        method: ``ppo``, an estimator name or an import path, with optional JSON arguments.
        seed: the run's seed (>= 0); its random streams depend on it alone.
        total_timesteps: the budget in environment steps.
        eval_every: steps between evaluation points (``0, eval_every, ...`` up to the budget).
        target_success: the success probability whose first crossing is ``steps_to_target``.
        hyperparameters: resolved hyperparameters (``None``: from ``config`` or
            ``baselines/configs/<env_id>.yml`` via ``load_hyperparameters``).
        config: a hyperparameter YAML (used only when ``hyperparameters`` is ``None``).
    """

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    method: str = "ppo"
    seed: int = 0
    total_timesteps: int = 50_000
    eval_every: int = 2_000
    target_success: float = 0.9
    hyperparameters: dict[str, Any] | None = None
    config: Path | None = None

    def resolved_hyperparameters(self) -> dict[str, Any]:
        """The hyperparameters this run trains with (``n_envs`` included)."""
        if self.hyperparameters is not None:
            hyper = dict(self.hyperparameters)
        else:
            hyper = load_hyperparameters(self.env_id, self.method, self.config)
        hyper.setdefault("n_envs", 8)
        return hyper

    def check(self) -> None:
        """``ValueError`` naming the first bad setting."""
        check_env_kwargs(self.env_id, self.env_kwargs)
        check_method(self.method)
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        for name in ("total_timesteps", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.target_success <= 1:
            raise ValueError(f"target_success must be in (0, 1], got {self.target_success}")


@functools.cache
def _spaces(env_id: str, kwargs_json: str) -> tuple[str, str]:
    import gymnasium as gym

    import routine_envs

    gym.register_envs(routine_envs)
    env = gym.make(env_id, **json.loads(kwargs_json))
    return str(env.observation_space), str(env.action_space)


def batch_key(spec: RunSpec) -> str:
    """What runs of one batch must share: the env id, the method spec, the resolved
    hyperparameters and the observation and action spaces (canonical JSON). ``env_kwargs``
    (densities, observation modes of the same shape), seeds, budgets and evaluation schedules
    may differ within a batch."""
    spaces = _spaces(spec.env_id, json.dumps(spec.env_kwargs, sort_keys=True))
    return json.dumps(
        {
            "env_id": spec.env_id,
            "method": spec.method,
            "hyper": spec.resolved_hyperparameters(),
            "spaces": spaces,
        },
        sort_keys=True,
        default=str,
    )


def group_runs(runs: Sequence[RunSpec], max_batch: int = DEFAULT_MAX_BATCH) -> list[list[int]]:
    """Indices of ``runs`` that can train in one batch (equal :func:`batch_key`), in order of
    first appearance, each list at most ``max_batch`` long."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    groups: dict[str, list[int]] = {}
    for i, spec in enumerate(runs):
        groups.setdefault(batch_key(spec), []).append(i)
    out = []
    for members in groups.values():
        out.extend(members[k : k + max_batch] for k in range(0, len(members), max_batch))
    return out


def check_supported(spec: RunSpec) -> None:
    """A one-line ``ValueError`` naming ``--trainer batched`` (or the key) when the batched
    trainer cannot train ``spec``, before anything is built: a bad setting
    (:meth:`RunSpec.check`), a hyperparameter it does not implement, an environment without an
    exact model, with non-Discrete actions or a non-flat observation, an estimator needing env
    snapshots (``source: branch``) or info keys the env lacks. The Transformer policy's own
    limits (environments whose states repeat) are checked when its batch is built."""
    spec.check()
    hyper = spec.resolved_hyperparameters()
    _check_supported(
        spec.env_id,
        json.dumps(spec.env_kwargs, sort_keys=True),
        spec.method,
        json.dumps(hyper, sort_keys=True, default=str),
    )


@functools.lru_cache(maxsize=256)
def _check_supported(env_id: str, kwargs_json: str, method: str, hyper_json: str) -> None:
    import gymnasium as gym

    import routine_envs
    from baselines.lib.batched.envs import LazySampler, check_env
    from baselines.lib.batched.trainer import check_estimator
    from baselines.lib.config import TURN_LEVEL_METHODS
    from routine_envs import credit

    hyper = json.loads(hyper_json)
    settings = _trainer_class(hyper).check_settings(hyper)
    gym.register_envs(routine_envs)
    env = gym.make(env_id, **json.loads(kwargs_json))
    try:
        check_env(env, env_id)
        target = check_method(method).target
        if target in TURN_LEVEL_METHODS:
            return
        context = credit.EstimatorContext(
            env=env.unwrapped,
            policy_table=lambda: env.unwrapped.masked_uniform_policy(),
            gamma=settings.gamma,
            gae_lambda=settings.gae_lambda,
            sampler=LazySampler(env),
            seed=0,
        )
        estimator = credit.declare(
            credit.build_estimator(target, context, **settings.estimator_kwargs)
        )
        check_estimator(estimator, env, env_id)
    finally:
        env.close()


def train_runs(
    runs: Sequence[RunSpec],
    max_batch: int = DEFAULT_MAX_BATCH,
    progress: bool = False,
) -> list[Any]:
    """Train every run of ``runs`` (batched by :func:`group_runs`) and return one
    :class:`baselines.lib.trainers.RunResult` per run, in order.

    Each result has the success curve at the run's evaluation grid (exact success probability
    of the current stochastic policy), ``steps_to_target`` (first crossing, interpolated;
    ``None`` when not reached), ``steps_trained`` (whole rollouts: may exceed the budget), the
    resolved hyperparameters, and ``wall_time``/``cpu_time`` in seconds: the batch's time
    divided equally among the runs active in each iteration.

    Raises:
        ValueError: a bad setting of any run, before any training.
    """
    from baselines.lib.trainers import RunResult, schedule

    runs = list(runs)
    for spec in runs:  # every run checked before any training
        check_supported(spec)
    groups = group_runs(runs, max_batch)
    hypers = [runs[g[0]].resolved_hyperparameters() for g in groups]
    for hyper in hypers:  # every batch's settings validated before any training
        _trainer_class(hyper).check_settings(hyper)
    results: list[Any] = [None] * len(runs)
    bar = None
    if progress:
        from tqdm import tqdm

        total = sum(s.total_timesteps for s in runs)
        bar = tqdm(total=total, unit="step", dynamic_ncols=True, mininterval=0.5)
    for group, hyper in zip(groups, hypers, strict=True):
        specs = [runs[i] for i in group]
        trainer = _trainer_class(hyper)(
            [
                {
                    "env_id": s.env_id,
                    "env_kwargs": dict(s.env_kwargs),
                    "method": s.method,
                    "seed": s.seed,
                    "budget": s.total_timesteps,
                    "points": schedule(s.total_timesteps, s.eval_every),
                }
                for s in specs
            ],
            hyper,
        )
        update_bar: Callable[[int], Any] | None = None if bar is None else bar.update
        states = trainer.train(update_bar)
        for i, spec, st in zip(group, specs, states, strict=True):
            reached = first_crossing(st.timesteps, st.success, spec.target_success)
            results[i] = RunResult(
                timesteps=st.timesteps,
                success=st.success,
                steps_to_target=reached if np.isfinite(reached) else None,
                wall_time=st.wall_time,
                hyperparameters=hyper,
                steps_trained=st.steps,
                cpu_time=st.cpu_time,
                privileged_fields=st.privileged,
            )
    if bar is not None:
        bar.close()
    return results


def _trainer_class(hyper: dict[str, Any]) -> Any:
    """The trainer of a batch: the MLP one, or the Transformer one for ``policy:
    transformer``."""
    if hyper.get("policy", "mlp") == "transformer":
        from baselines.lib.batched.transformer import TransformerTrainer

        return TransformerTrainer
    from baselines.lib.batched.trainer import BatchedTrainer

    return BatchedTrainer
