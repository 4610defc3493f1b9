"""Monte-Carlo value estimates for the ``mc_rollout`` estimator of :mod:`routine_envs.credit`:
rollouts of a policy from each step's state, branched from deep copies of the live environment
(:class:`BranchedRollouts`) or simulated on the exact model (:class:`ModelRollouts`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from routine_envs.episodes import EpisodeBatch

__all__ = [
    "BranchedRollouts",
    "ModelRollouts",
    "PolicyTable",
    "RolloutPolicy",
    "RolloutSampler",
    "RolloutSource",
    "rollout_values",
]

PolicyTable = np.ndarray | Callable[[], np.ndarray]
"""A tabular policy: an array ``(num_states, num_actions)`` of action probabilities, or a
zero-argument callable returning the current one (for a policy that changes during training)."""


RolloutPolicy = Callable[[Sequence[Any], Sequence[Mapping[str, Any]]], np.ndarray]
"""A batched policy for Monte-Carlo rollouts: ``(observations, infos) -> actions`` (shape
``(B,)``); it samples with its own random generator."""


def rollout_values(
    snapshots: Sequence[tuple[Any, Any, Mapping[str, Any]]],
    policy: RolloutPolicy,
    num_rollouts: int,
    gamma: float = 1.0,
    max_steps: int = 100_000,
) -> np.ndarray:
    """``V^(s)`` for each ``(env, obs, info)`` snapshot: the mean return of ``num_rollouts``
    rollouts of ``policy`` from a deep copy of ``env``; all rollouts step in lockstep so the
    policy is called once per step on a batch. Shape ``(len(snapshots),)``."""
    envs, obs, infos, owner = [], [], [], []
    for i, (env, o, info) in enumerate(snapshots):
        for _ in range(num_rollouts):
            envs.append(copy.deepcopy(env))
            obs.append(o)
            infos.append(info)
            owner.append(i)
    totals = np.zeros(len(envs))
    discount = np.ones(len(envs))
    active = list(range(len(envs)))
    for _ in range(max_steps):
        if not active:
            break
        actions = policy([obs[j] for j in active], [infos[j] for j in active])
        still = []
        for j, action in zip(active, actions, strict=True):
            o, reward, terminated, truncated, info = envs[j].step(int(action))
            totals[j] += discount[j] * reward
            discount[j] *= gamma
            obs[j], infos[j] = o, info
            if not (terminated or truncated):
                still.append(j)
        active = still
    else:
        raise RuntimeError(f"rollouts did not end within {max_steps} steps")
    return np.bincount(owner, weights=totals, minlength=len(snapshots)) / num_rollouts


class RolloutSource(Protocol):
    """Where :class:`MCRollout` gets its value estimates ``V^(s_t)``: a strategy.

    Attributes:
        requires: the :data:`BATCH_FIELDS` it reads.
    """

    requires: frozenset[str]

    def values(self, batch: EpisodeBatch, num_rollouts: int, gamma: float) -> np.ndarray:
        """Mean return of ``num_rollouts`` rollouts from every step's state, shape ``(N,)``."""
        ...


@dataclass
class BranchedRollouts:
    """Rollouts of a batched ``policy`` from deep copies of the live environment at each step
    (the batch's ``snapshots``: collect with ``keep_snapshots=True``)."""

    policy: RolloutPolicy
    max_steps: int = 100_000
    requires: ClassVar[frozenset[str]] = frozenset({"snapshots"})

    def values(self, batch: EpisodeBatch, num_rollouts: int, gamma: float) -> np.ndarray:
        return rollout_values(batch.snapshots, self.policy, num_rollouts, gamma, self.max_steps)


class RolloutSampler(Protocol):
    """What :class:`ModelRollouts` needs: :class:`routine_envs.sampler.ModelSampler`."""

    def rollout_values(
        self,
        start: np.ndarray,
        policy: np.ndarray,
        num_rollouts: int,
        rng: np.random.Generator,
        gamma: float = 1.0,
    ) -> np.ndarray: ...


@dataclass
class ModelRollouts:
    """Rollouts of the tabular ``policy`` simulated on the exact model by ``sampler``, from each
    step's ``state_id`` (no snapshots, a fraction of the cost of branching live envs)."""

    sampler: RolloutSampler
    policy: PolicyTable
    seed: int | None = None
    requires: ClassVar[frozenset[str]] = frozenset({"state_ids"})
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def values(self, batch: EpisodeBatch, num_rollouts: int, gamma: float) -> np.ndarray:
        policy = self.policy() if callable(self.policy) else self.policy
        return self.sampler.rollout_values(
            batch.state_ids, np.asarray(policy), num_rollouts, self._rng, gamma
        )
