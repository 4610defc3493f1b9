"""Estimators built on a critic: a value of each state, learned, simulated or exact.

``gae`` (the learner's value head, GAE(lambda)), ``mc_rollout`` (VinePPO's Monte-Carlo critic:
the mean return of rollouts from each state, branched from the live env or simulated on the
exact model, :mod:`routine_envs.rollouts`) and ``oracle`` (the perfect critic from the
environment's exact model, optionally noisy). :func:`td_advantages` is the GAE(lambda) of any
per-step values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from routine_envs.credit.base import Advantages, EstimatorContext, FromContext, check_batch
from routine_envs.episodes import EpisodeBatch
from routine_envs.oracle import PolicyLike
from routine_envs.rollouts import (
    BranchedRollouts,
    ModelRollouts,
    PolicyTable,
    RolloutPolicy,
    RolloutSource,
)

__all__ = ["GAE", "MCRollout", "Oracle", "OracleSource", "td_advantages"]


def _bootstrap(batch: EpisodeBatch) -> np.ndarray:
    """``V(s_T)`` after each episode: the bootstrap value when truncated, else 0; ``(M,)``."""
    if batch.truncated is None or batch.bootstrap_values is None:
        return np.zeros(batch.num_episodes)
    return np.where(batch.truncated, batch.bootstrap_values, 0.0)


def td_advantages(batch: EpisodeBatch, values: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """GAE(lambda) of per-step ``values`` (shape ``(N,)``) on ``batch``'s rewards, vectorized over
    episodes: ``sum_k (gamma lam)^k delta_{t+k}``, ``delta_t = r_t + gamma V(s_{t+1}) - V(s_t)``
    (``V`` after the last step: the bootstrap value when truncated, else 0). Shape ``(N,)``;
    ``lam = 0`` gives the one-step TD errors."""
    v = batch.padded(values.astype(np.float64))
    r = batch.padded(np.asarray(batch.rewards, dtype=np.float64))
    lengths = batch.lengths
    rows = np.arange(batch.num_episodes)
    v_next = np.zeros_like(v)
    v_next[:, :-1] = v[:, 1:]
    v_next[rows, lengths - 1] = _bootstrap(batch)
    delta = r + gamma * v_next - v
    adv = np.zeros_like(v)
    running = np.zeros(batch.num_episodes)
    for t in range(v.shape[1] - 1, -1, -1):
        live = t < lengths
        running = np.where(live, delta[:, t] + gamma * lam * running, 0.0)
        adv[:, t] = running
    return batch.unpad(adv)


@dataclass
class GAE(FromContext):
    """Generalized advantage estimation from the learner's values (what SB3 PPO does):
    ``A_t = sum_k (gamma lam)^k delta_{t+k}``, returns ``A_t + V(s_t)``."""

    gamma: float = 0.99
    gae_lambda: float = 0.95
    name: ClassVar[str] = "gae"
    requires: ClassVar[frozenset[str]] = frozenset({"values"})
    trains_critic: ClassVar[bool] = True
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {"gamma": "gamma", "gae_lambda": "gae_lambda"}

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = td_advantages(batch, batch.values, self.gamma, self.gae_lambda)
        return Advantages(adv, adv + batch.values)


class OracleSource(Protocol):
    """What :class:`Oracle` needs of an environment: ``env.unwrapped`` of any suite env."""

    def oracle(self, policy: PolicyLike, gamma: float = 1.0) -> Any: ...


@dataclass
class Oracle(FromContext):
    """The perfect critic: ``A_t = A^pi(s_t, a_t)`` exact from the environment's model, plus
    ``sigma * N(0, 1)`` noise per step (an imperfect critic of known error variance sigma^2).

    ``policy`` is the tabular policy the episodes were collected with: an array
    ``(num_states, num_actions)``, or a zero-argument callable returning one (for a policy that
    changes during training). ``sigma`` is in units of return."""

    env: OracleSource
    policy: PolicyTable
    sigma: float = 0.0
    gamma: float = 1.0
    seed: int | None = None
    name: ClassVar[str] = "oracle"
    requires: ClassVar[frozenset[str]] = frozenset({"state_ids", "actions"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {
        "env": "env",
        "policy": "policy_table",
        "gamma": "gamma",
        "seed": "seed",
    }
    _rng: np.random.Generator = field(init=False, repr=False)
    _fixed: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.sigma < 0:
            raise ValueError(f"sigma must be >= 0, got {self.sigma}")
        if not hasattr(self.env, "oracle"):
            raise ValueError(
                "estimator 'oracle' needs an environment with an exact model "
                "(env.unwrapped.oracle), got "
                f"{type(self.env).__name__}"
            )
        self._rng = np.random.default_rng(self.seed)

    def table(self) -> np.ndarray:
        """The current policy table, shape ``(num_states, num_actions)``."""
        policy = self.policy
        return np.asarray(policy() if callable(policy) else policy)

    def advantage_table(self) -> np.ndarray:
        """``A^pi`` of every (state, action); computed once for a fixed policy array."""
        if callable(self.policy):
            return self.env.oracle(self.table(), gamma=self.gamma).advantage
        if self._fixed is None:
            self._fixed = self.env.oracle(self.table(), gamma=self.gamma).advantage
        return self._fixed

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = self.advantage_table()[batch.state_ids, batch.actions]
        if self.sigma > 0:
            adv = adv + self.sigma * self._rng.standard_normal(adv.shape)
        return Advantages(adv)


@dataclass
class MCRollout:
    """VinePPO-style Monte-Carlo critic: ``V^(s_t)`` is the mean return of ``num_rollouts``
    rollouts of the current policy from ``s_t``; ``A_t = r_t + gamma V^(s_{t+1}) - V^(s_t)``.
    ``num_rollouts`` (k) sets the critic's error (its variance falls like 1/k).

    ``source`` is where the rollouts come from (a :class:`RolloutSource`):
    :class:`BranchedRollouts` (``copy.deepcopy`` of the live env at each step; needs per-step
    snapshots, ``keep_snapshots=True``) or :class:`ModelRollouts` (simulated on the exact
    model). A bare batched policy ``(observations, infos) -> actions`` means branched rollouts
    of it. ``requires`` is the source's."""

    source: RolloutSource | RolloutPolicy
    num_rollouts: int = 4
    gamma: float = 1.0
    name: ClassVar[str] = "mc_rollout"
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.num_rollouts < 1:
            raise ValueError(f"num_rollouts must be >= 1, got {self.num_rollouts}")
        if not hasattr(self.source, "values"):
            self.source = BranchedRollouts(self.source)

    @property
    def requires(self) -> frozenset[str]:
        """The batch fields the rollout source reads."""
        return self.source.requires

    @classmethod
    def from_context(cls, context: EstimatorContext, **kwargs: Any) -> MCRollout:
        """Rollouts on the model when the context has a ``sampler`` and a ``policy_table``
        (``seed`` in ``kwargs`` or the context seeds them), else branched from live envs with
        its ``rollout_policy``; ``gamma`` from the context unless given.

        ``source="model"`` (e.g. ``estimator_kwargs: {source: model}`` in a config) asks for
        rollouts simulated on the exact model of the context's env, with the policy table of the
        learner: the same distribution as branching live envs (the env *is* its model), at a
        fraction of the cost; ``source="branch"`` asks for branching."""
        if context.gamma is not None:
            kwargs.setdefault("gamma", context.gamma)
        choice = kwargs.pop("source", None) if isinstance(kwargs.get("source"), str) else None
        if choice not in (None, "model", "branch"):
            raise ValueError(f"mc_rollout source must be 'model' or 'branch', got {choice!r}")
        if choice == "model":
            if context.policy_table is None or (context.sampler is None and context.env is None):
                raise ValueError("mc_rollout source='model' needs the env and a policy table")
            from routine_envs.sampler import ModelSampler

            sampler = context.sampler if context.sampler is not None else ModelSampler(context.env)
            seed = kwargs.pop("seed", context.seed)
            kwargs["source"] = ModelRollouts(sampler, context.policy_table, seed)
        elif choice == "branch":
            if context.rollout_policy is None:
                raise ValueError("mc_rollout source='branch' needs a rollout policy")
            kwargs["source"] = BranchedRollouts(context.rollout_policy)
        if "source" not in kwargs:
            seed = kwargs.pop("seed", context.seed)
            if context.sampler is not None and context.policy_table is not None:
                kwargs["source"] = ModelRollouts(context.sampler, context.policy_table, seed)
            elif context.rollout_policy is not None:
                kwargs["source"] = BranchedRollouts(context.rollout_policy)
            else:
                raise ValueError(
                    "estimator 'mc_rollout' needs a rollout policy (branched rollouts) or a "
                    "model sampler and a policy table (simulated rollouts) in its context"
                )
        return cls(**kwargs)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        values = self.source.values(batch, self.num_rollouts, self.gamma)
        adv = td_advantages(batch, values, self.gamma, lam=0.0)
        return Advantages(adv, adv + values)
