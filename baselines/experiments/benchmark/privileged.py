"""Which privileged batch fields each method of a leaderboard reads
(:data:`routine_envs.episodes.PRIVILEGED_FIELDS`: ``critical``, ``state_ids``, ``turn_scores``,
``values`` where exact), for its ``privileged`` column and for ranking label-free methods apart.

A method's fields are those its estimator declares (:func:`routine_envs.episodes.privileged_reads`),
and it was given no others: every trainer calls an estimator on
:func:`routine_envs.credit.batch_for` of its batch. The estimator is rebuilt from a run record as
its trainer built it (the record's estimator name and arguments; the trainer's context: the SB3
trainer offers a rollout policy, the batched one the exact-model sampler, which decides where
``mc_rollout`` takes its rollouts from), on the record's environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

Record = dict[str, Any]


def _no_rollouts(observations: Any, infos: Any) -> np.ndarray:
    """A rollout policy for building only: reading ``requires`` never calls it."""
    raise RuntimeError("the leaderboard builds estimators to read requires, never to run them")


def record_privileged(record: Record) -> tuple[str, ...]:
    """The privileged fields the method of run ``record`` read (``()``: label-free; ``ppo``, SB3's
    own learned critic, reads none). ``ValueError`` naming the method where it cannot be built."""
    import gymnasium as gym

    from baselines.lib.specs import parse_method
    from baselines.lib.training_runs import trainer_of
    from routine_envs import credit
    from routine_envs.sampler import ModelSampler

    estimator = record.get("estimator") or {}
    name = estimator.get("name", record.get("method"))
    if not isinstance(name, str):
        raise ValueError(f"record of method {record.get('method')!r} names no estimator")
    if parse_method(name).turn_level:
        return ()
    env = gym.make(record["env_id"], **dict(record.get("env_kwargs") or {})).unwrapped
    table = np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)
    hyper = record.get("hyperparameters") or {}
    batched = trainer_of(record) == "batched"
    context = credit.EstimatorContext(
        env=env,
        policy_table=table,
        gamma=hyper.get("gamma"),
        gae_lambda=hyper.get("gae_lambda"),
        rollout_policy=None if batched else _no_rollouts,
        sampler=ModelSampler(env) if batched else None,
        seed=int(record.get("seed", 0)),
    )
    try:
        built = credit.build_estimator(name, context, **dict(estimator.get("kwargs") or {}))
    except ValueError as err:
        raise ValueError(f"method {record.get('method')!r}: {err}") from None
    return credit.declare(built).privileged  # requires read once, as the trainers read it


def privileged_of(references: Mapping[str, Sequence[Record]]) -> dict[str, tuple[str, ...]]:
    """Per method (the keys of ``references``, records by method), the privileged fields its runs
    read: the union over its records' settings, in :data:`PRIVILEGED_FIELDS` order."""
    from routine_envs.episodes import PRIVILEGED_FIELDS

    out: dict[str, tuple[str, ...]] = {}
    for method, records in references.items():
        firsts = {r.get("setting", r.get("env_id")): r for r in records}  # one per setting
        read = {f for r in firsts.values() for f in record_privileged(r)}
        out[method] = tuple(f for f in PRIVILEGED_FIELDS if f in read)
    return out


def privileged_text(fields: Sequence[str]) -> str:
    """``critical, state_ids``, or ``none`` (a label-free method)."""
    return ", ".join(fields) if fields else "none"
