"""Detectors that branch: rollouts from each step's state on the exact model, every action tried.

Both need an exact-model sampler (:class:`routine_envs.sampler.ModelSampler`) and the behaviour
policy's table in their context (the SNR lab and the detector scorer offer them; a trainer does
not: they are refused there before training). Each distinct state of a batch is branched once
(a task whose states never repeat pays for every step); ``cost_steps`` counts every simulated
environment step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from routine_envs import credit
from routine_envs.detectors.base import Detection, check_detector_batch, need_context
from routine_envs.episodes import EpisodeBatch

__all__ = ["Branching", "MCSpread"]

NEEDS = {
    "sampler": "an exact-model sampler: the rollouts are simulated on the model",
    "policy_table": "the behaviour policy's table: the rollouts follow it",
}


@dataclass
class _ModelBranching(credit.FromContext):
    """Shared parts: the sampler, the policy, the seed, the cost counter."""

    sampler: Any
    policy: credit.PolicyTable
    num_rollouts: int = 16
    seed: int | None = None
    requires: ClassVar[frozenset[str]] = frozenset({"state_ids"})
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {
        "sampler": "sampler",
        "policy": "policy_table",
        "seed": "seed",
    }
    cost_steps: int = field(default=0, init=False)
    _rng: np.random.Generator = field(init=False, repr=False)

    @classmethod
    def from_context(cls, context: credit.EstimatorContext, **kwargs: Any) -> _ModelBranching:
        """Built from the context's sampler, policy table and seed (refused without them)."""
        if "sampler" not in kwargs or "policy" not in kwargs:
            need_context(context, cls.name, NEEDS)
        return super().from_context(context, **kwargs)

    def __post_init__(self) -> None:
        if self.num_rollouts < 2:
            raise ValueError(f"num_rollouts must be >= 2, got {self.num_rollouts}")
        self._rng = np.random.default_rng(self.seed)

    def branch(self, batch: EpisodeBatch, common: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(G, inverse)``: returns ``(num_distinct_states, A, k)`` of the batch's distinct
        states and each step's row in it, shape ``(N,)``; the cost added to ``cost_steps``."""
        check_detector_batch(self, batch)
        policy = np.asarray(self.policy() if callable(self.policy) else self.policy)
        distinct, inverse = np.unique(batch.state_ids, return_inverse=True)
        before = self.sampler.rollout_steps
        returns = self.sampler.branch_returns(
            distinct, policy, self.num_rollouts, self._rng, common=common
        )
        self.cost_steps += self.sampler.rollout_steps - before
        return returns, inverse.reshape(-1)


@dataclass
class Branching(_ModelBranching):
    """The branching test of ``python -m routine_envs diagnose`` as a detector: from each
    state, ``num_rollouts`` rollouts per action with common random numbers, then
    :func:`routine_envs.diagnose.action_dependence_test` (paired t-tests of every action against
    the first, Bonferroni); ``score = 1 - p``, critical when ``p <= alpha``. Cost: ``A k``
    rollouts per distinct state."""

    alpha: float = 0.01
    name: ClassVar[str] = "branching"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")

    def __call__(self, batch: EpisodeBatch) -> Detection:
        from routine_envs.diagnose.statistics import action_dependence_test

        returns, inverse = self.branch(batch, common=True)
        p = np.array([action_dependence_test(g).p_value for g in returns])
        return Detection(1.0 - p[inverse], p[inverse] <= self.alpha)


@dataclass
class MCSpread(_ModelBranching):
    """The spread of Monte-Carlo Q estimates: ``Q^(s, a)`` the mean of ``num_rollouts``
    independent rollouts after action ``a`` (VinePPO-style, no common random numbers);
    ``score = max_a Q^ - min_a Q^``, critical when it exceeds ``z`` standard errors of a
    difference of two estimates (``z sqrt(2 s^2 / k)``, ``s^2`` the pooled variance of the
    rollouts' returns). Cost: ``A k`` rollouts per distinct state."""

    num_rollouts: int = 4
    z: float = 2.0
    name: ClassVar[str] = "mc_spread"

    def __call__(self, batch: EpisodeBatch) -> Detection:
        returns, inverse = self.branch(batch, common=False)
        q = returns.mean(axis=2)
        spread = q.max(axis=1) - q.min(axis=1)
        pooled = returns.var(axis=2, ddof=1).mean(axis=1)
        threshold = self.z * np.sqrt(2.0 * pooled / self.num_rollouts)
        critical = (spread > threshold) & (spread > 1e-12)
        return Detection(spread[inverse], critical[inverse])
