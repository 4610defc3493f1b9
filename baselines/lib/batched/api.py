"""The public entry points: :func:`check`, :func:`train` (the trainer interface of
:data:`baselines.lib.trainers.TRAINER_MODULES`), :func:`batch_key` and :func:`group_runs` (see
the package docstring). A run is a :class:`baselines.lib.runs.Run`."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from baselines.lib.envs import check_env_kwargs, make_env
from baselines.lib.scoring import EVALUATIONS
from baselines.lib.trainers import DEFAULT_DEVICE, check_device

DEFAULT_MAX_BATCH = 64
"""Runs trained in one batch at most (more are split into batches of this size)."""


@functools.cache
def _spaces(env_id: str, kwargs_json: str) -> tuple[str, str]:
    import gymnasium as gym

    import routine_envs

    gym.register_envs(routine_envs)
    env = gym.make(env_id, **json.loads(kwargs_json))
    return str(env.observation_space), str(env.action_space)


def batch_key(run: Any) -> str:
    """What runs of one batch must share: the env id, the method spec, the resolved
    hyperparameters, the observation and action spaces and the device (canonical JSON).
    ``env_kwargs`` (densities, observation modes of the same shape), seeds, budgets and
    evaluation schedules may differ within a batch."""
    spaces = _spaces(run.env_id, json.dumps(run.env_kwargs, sort_keys=True))
    return json.dumps(
        {
            "env_id": run.env_id,
            "method": run.method.text,
            "hyper": run.trained_with,
            "spaces": spaces,
            "device": run.device,
        },
        sort_keys=True,
        default=str,
    )


def group_runs(runs: Sequence[Any], max_batch: int = DEFAULT_MAX_BATCH) -> list[list[int]]:
    """Indices of ``runs`` that can train in one batch (equal :func:`batch_key`), in order of
    first appearance, each list at most ``max_batch`` long."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(batch_key(run), []).append(i)
    out = []
    for members in groups.values():
        out.extend(members[k : k + max_batch] for k in range(0, len(members), max_batch))
    return out


def check(run: Any) -> None:
    """A one-line ``ValueError`` naming ``--trainer batched`` (or the key) when the batched
    trainer cannot train ``run`` (a :class:`~baselines.lib.runs.Run`), before anything is
    built: a hyperparameter it does not implement, an environment without an exact model, with
    non-Discrete actions or a non-flat observation, an estimator needing env snapshots
    (``source: branch``) or info keys the env lacks, a device this machine lacks or a
    Transformer policy off the CPU. The Transformer policy's own limits
    (environments whose states repeat) are checked when its batch is built."""
    check_env_kwargs(run.env_id, run.env_kwargs)
    check_device(run.device)
    if run.device != DEFAULT_DEVICE and run.trained_with.get("policy", "mlp") != "mlp":
        raise ValueError(
            f"--device {run.device}: the batched trainer's Transformer policy runs on the CPU "
            "only (its MLP policy runs on any torch device)"
        )
    _check_supported(
        run.env_id,
        json.dumps(run.env_kwargs, sort_keys=True),
        run.method,
        json.dumps(run.trained_with, sort_keys=True, default=str),
    )


@functools.lru_cache(maxsize=256)
def _check_supported(env_id: str, kwargs_json: str, method: Any, hyper_json: str) -> None:

    from baselines.lib.batched.envs import LazySampler, check_env
    from baselines.lib.batched.trainer import check_estimator
    from routine_envs import credit

    hyper = json.loads(hyper_json)
    settings = _trainer_class(hyper).check_settings(hyper)
    env = make_env(env_id, json.loads(kwargs_json))
    try:
        check_env(env, env_id)
        if method.turn_level:
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
            credit.build_estimator(method.estimator, context, **settings.estimator_kwargs)
        )
        check_estimator(estimator, env, env_id)
    finally:
        env.close()


def train(
    runs: Sequence[Any],
    progress: bool = False,
    max_batch: int = DEFAULT_MAX_BATCH,
    observe: Callable[[Any, Any], None] | None = None,
) -> list[Any]:
    """Train every run of ``runs`` (:class:`~baselines.lib.runs.Run`, batched by
    :func:`group_runs`) and return one :class:`baselines.lib.trainers.RunResult` per run, in
    order.

    Each result has the success curve at the run's evaluation grid (exact success probability of
    the current stochastic policy; with ``evaluation`` ``updates``, of the initial policy and of
    the policy after every update, at the steps consumed), ``steps_to_target`` (by the
    evaluation's rule, :mod:`baselines.lib.scoring`; ``None`` when not reached),
    ``steps_trained`` (whole rollouts: may exceed the budget), the resolved hyperparameters, and
    ``wall_time``/``cpu_time`` in seconds: the batch's time divided equally among the runs
    active in each iteration.

    ``observe(trainer, runs)``: called with each batch's initial policies and after every
    update (:attr:`~baselines.lib.batched.trainer.BatchedTrainer.observe`; ``runs`` index
    ``trainer.runs``), for a lab that reads the policies of real training runs.

    Raises:
        ValueError: a run this trainer cannot train (:func:`check`), before any training.
    """
    from baselines.lib.trainers import RunResult

    runs = list(runs)
    for run in runs:  # every run checked before any training
        check(run)
    groups = group_runs(runs, max_batch)
    hypers = [runs[g[0]].trained_with for g in groups]
    results: list[Any] = [None] * len(runs)
    bar = None
    if progress:
        from tqdm import tqdm

        total = sum(r.budget for r in runs)
        bar = tqdm(total=total, unit="step", dynamic_ncols=True, mininterval=0.5)
    for group, hyper in zip(groups, hypers, strict=True):
        members = [runs[i] for i in group]
        trainer = _trainer_class(hyper)(members, hyper)
        trainer.observe = observe
        update_bar: Callable[[int], Any] | None = None if bar is None else bar.update
        states = trainer.train(update_bar)
        for i, run, st in zip(group, members, states, strict=True):
            rule = EVALUATIONS[run.evaluation].steps_to_target
            reached = rule(st.timesteps, st.success, run.target)
            results[i] = RunResult(
                timesteps=st.timesteps,
                success=st.success,
                steps_to_target=reached if np.isfinite(reached) else None,
                wall_time=st.wall_time,
                hyperparameters=hyper,
                steps_trained=st.steps,
                cpu_time=st.cpu_time,
                privileged_fields=st.privileged,
                cpu_split=dict(st.cpu_split),
                update_flops=st.update_flops,
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
