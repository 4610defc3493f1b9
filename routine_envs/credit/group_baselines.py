"""Critic-free estimators whose baseline is a group statistic of returns (GRPO's family).

The episode return ``R_i`` against its group's returns: ``trajectory_mc`` (``R_i -
mean_group(R)``, GRPO's outcome advantage), ``rloo`` (leave-one-out mean), ``routine_masked``
(the trajectory advantage on the steps annotated critical only) and ``gigpo`` (plus a step
advantage against the steps of the group that share an anchor state). The group statistics
they share are this module's own helpers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routine_envs.credit.base import Advantages, FromContext, check_batch
from routine_envs.episodes import EpisodeBatch

__all__ = ["GROUP_KEYS", "RLOO", "GiGPO", "RoutineMasked", "TrajectoryMC"]


def _group_stats(
    values: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-element group mean, population std and group size of ``values`` (all shape like it)."""
    index = np.unique(groups, return_inverse=True)[1].reshape(-1)
    counts = np.bincount(index)
    sums = np.bincount(index, weights=values)
    means = sums / counts
    var = np.bincount(index, weights=(values - means[index]) ** 2) / counts
    return means[index], np.sqrt(var[index]), counts[index]


def _episode_advantage(batch: EpisodeBatch, normalize_std: bool, eps: float) -> np.ndarray:
    """``R_i - mean_group(R)`` (optionally over the group std), shape ``(M,)``."""
    returns = batch.episode_returns()
    mean, std, _ = _group_stats(returns, batch.groups)
    adv = returns - mean
    return adv / (std + eps) if normalize_std else adv


@dataclass
class TrajectoryMC(FromContext):
    """Monte-Carlo trajectory advantage (GRPO's outcome advantage): every step of episode ``i``
    gets ``R_i - mean_group(R)``, divided by ``std_group(R) + eps`` when ``normalize_std``.
    With a fixed ``baseline`` (e.g. the exact ``J = V^pi(s_0)``) it is ``R_i - baseline``."""

    normalize_std: bool = False
    eps: float = 1e-6
    baseline: float | None = None
    name: ClassVar[str] = "trajectory_mc"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        if self.baseline is not None:
            adv = batch.episode_returns() - self.baseline
        else:
            adv = _episode_advantage(batch, self.normalize_std, self.eps)
        return Advantages(np.repeat(adv, batch.lengths))


@dataclass
class RLOO(FromContext):
    """REINFORCE leave-one-out: ``A_t = R_i - mean_{j != i}(R_j)`` over the episode's group
    (``= G/(G-1) (R_i - mean_group(R))``); groups need at least two episodes."""

    name: ClassVar[str] = "rloo"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        returns = batch.episode_returns()
        mean, _, size = _group_stats(returns, batch.groups)
        if np.any(size < 2):
            raise ValueError("rloo needs groups of at least 2 episodes (group_size >= 2)")
        adv = size / (size - 1) * (returns - mean)
        return Advantages(np.repeat(adv, batch.lengths))


GROUP_KEYS = ("anchor", "state_id")
"""What grouping estimators group steps by: the observation-only ``anchor`` (the default, fair:
what any agent could compute) or the privileged ``state_id`` (may encode hidden state)."""


@dataclass
class GiGPO(FromContext):
    """Group-in-group policy optimization (critic-free, turn-level): the episode advantage plus
    ``omega`` times a step advantage ``G_t - mean(G)`` over the steps of the same episode group
    that share an anchor state; each part over its std when ``normalize_std``.

    ``group_by="anchor"`` (default) groups steps with equal observations (``info["anchor"]``),
    as GiGPO does with the agent's own observation; ``"state_id"`` groups by the privileged
    state id, an explicit choice that results name (see :attr:`label`)."""

    omega: float = 1.0
    gamma: float = 1.0
    normalize_std: bool = False
    eps: float = 1e-6
    group_by: str = "anchor"
    name: ClassVar[str] = "gigpo"
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.group_by not in GROUP_KEYS:
            raise ValueError(f"group_by must be one of {GROUP_KEYS}, got {self.group_by!r}")

    @property
    def requires(self) -> frozenset[str]:
        """``{"anchors"}``, or ``{"state_ids"}`` when grouping by the privileged id."""
        return frozenset({"anchors" if self.group_by == "anchor" else "state_ids"})

    @property
    def label(self) -> str:
        """How results name this estimator: privileged grouping says so."""
        return self.name if self.group_by == "anchor" else f"{self.name} (privileged: state_id)"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        episode_adv = np.repeat(
            _episode_advantage(batch, self.normalize_std, self.eps), batch.lengths
        )
        to_go = batch.returns_to_go(self.gamma)
        group_of_step = np.repeat(batch.group_index(), batch.lengths)
        keys_of_step = batch.anchors if self.group_by == "anchor" else batch.state_ids
        anchors = np.unique(np.stack([group_of_step, keys_of_step]), axis=1, return_inverse=True)[
            1
        ].reshape(-1)
        mean, std, _ = _group_stats(to_go, anchors)
        step_adv = to_go - mean
        if self.normalize_std:
            step_adv = step_adv / (std + self.eps)
        return Advantages(episode_adv + self.omega * step_adv)


@dataclass
class RoutineMasked(FromContext):
    """The trajectory advantage with steps annotated routine set to zero (the "prune routine
    steps" remedy, using ground truth): ``A_t = critical_t (R_i - mean_group(R))``."""

    normalize_std: bool = False
    eps: float = 1e-6
    name: ClassVar[str] = "routine_masked"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = np.repeat(_episode_advantage(batch, self.normalize_std, self.eps), batch.lengths)
        return Advantages(np.where(batch.critical, adv, 0.0))
