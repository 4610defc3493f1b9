"""Detectors that read only the batch: the annotations (the perfect detector), random scores
(the chance level), the policy's entropy, GiGPO's anchor-group return variance and a learned
critic's advantage. None simulates environment steps (cost 0)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from routine_envs import credit
from routine_envs.detectors.base import Detection, check_detector_batch
from routine_envs.episodes import EpisodeBatch

__all__ = ["Annotations", "CriticAdvantage", "GroupVariance", "PolicyEntropy", "RandomScores"]


def group_anchor_index(batch: EpisodeBatch) -> np.ndarray:
    """Dense index of each step's (group, anchor) pair: GiGPO's step groups, shape ``(N,)``."""
    group_of_step = np.repeat(batch.group_index(), batch.lengths)
    pairs = np.stack([group_of_step, np.asarray(batch.anchors)])
    return np.unique(pairs, axis=1, return_inverse=True)[1].reshape(-1)


@dataclass
class Annotations(credit.FromContext):
    """The perfect detector: the annotations themselves (``score = critical_t``). A reference
    that needs the ground truth, so it exists only in this suite."""

    name: ClassVar[str] = "annotations"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})
    group_independent: ClassVar[bool] = True

    def __call__(self, batch: EpisodeBatch) -> Detection:
        check_detector_batch(self, batch)
        critical = np.asarray(batch.critical, dtype=bool)
        return Detection(critical.astype(np.float64), critical)


@dataclass
class RandomScores(credit.FromContext):
    """Chance: ``score ~ U(0, 1)`` independent of everything; critical when ``score >=
    1 - rate`` (so it implies rho = ``rate``)."""

    rate: float = 0.5
    seed: int | None = None
    name: ClassVar[str] = "random"
    requires: ClassVar[frozenset[str]] = frozenset()
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {"seed": "seed"}
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {self.rate}")
        self._rng = np.random.default_rng(self.seed)

    def __call__(self, batch: EpisodeBatch) -> Detection:
        scores = self._rng.random(batch.num_steps)
        return Detection(scores, scores >= 1.0 - self.rate)


@dataclass
class PolicyEntropy(credit.FromContext):
    """The high-entropy minority: ``score = H(pi(. | s_t))`` (nats); the steps at or above the
    batch's ``1 - top_fraction`` quantile of entropy are labelled critical (the idea of
    training only on the highest-entropy ~20% of tokens). Ties at the quantile are all
    labelled: under a policy of equal entropy everywhere (the uniform one) every step is."""

    top_fraction: float = 0.2
    name: ClassVar[str] = "entropy"
    requires: ClassVar[frozenset[str]] = frozenset({"entropies"})
    group_independent: ClassVar[bool] = False  # the quantile is the batch's

    def __post_init__(self) -> None:
        if not 0.0 < self.top_fraction <= 1.0:
            raise ValueError(f"top_fraction must be in (0, 1], got {self.top_fraction}")

    def __call__(self, batch: EpisodeBatch) -> Detection:
        check_detector_batch(self, batch)
        entropy = np.asarray(batch.entropies, dtype=np.float64)
        cut = np.quantile(entropy, 1.0 - self.top_fraction)
        return Detection(entropy, entropy >= cut - 1e-12)


@dataclass
class GroupVariance(credit.FromContext):
    """GiGPO's step groups as a detector: the steps of one group of episodes (same initial
    state) with the same observation-only ``anchor`` form a step group; ``score`` is the
    population variance of the return-to-go ``G_t`` over it (squared return units); critical
    when it exceeds ``tolerance``. A step group of one step has variance 0 (routine)."""

    tolerance: float = 1e-9
    gamma: float = 1.0
    name: ClassVar[str] = "group_variance"
    requires: ClassVar[frozenset[str]] = frozenset({"anchors"})
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.tolerance < 0:
            raise ValueError(f"tolerance must be >= 0, got {self.tolerance}")

    def __call__(self, batch: EpisodeBatch) -> Detection:
        check_detector_batch(self, batch)
        index = group_anchor_index(batch)
        to_go = batch.returns_to_go(self.gamma)
        counts = np.bincount(index)
        means = np.bincount(index, weights=to_go) / counts
        var = np.bincount(index, weights=(to_go - means[index]) ** 2) / counts
        per_step = var[index]
        return Detection(per_step, per_step > self.tolerance)


@dataclass
class CriticAdvantage(credit.FromContext):
    """The magnitude of a learned critic's advantage: a tabular Monte-Carlo critic over the
    observation-only ``anchors``, fitted on earlier batches (``fit``): ``Q^(o, a)`` the mean
    return-to-go after action ``a`` at anchor ``o``, ``V^(o)`` the mean at ``o``; ``score_t =
    |Q^(o_t, a_t) - V^(o_t)|``, critical when it exceeds ``z`` standard errors of ``Q^(o_t,
    a_t)``. An anchor or action never seen before scores 0 (routine)."""

    z: float = 2.0
    gamma: float = 1.0
    name: ClassVar[str] = "critic"
    requires: ClassVar[frozenset[str]] = frozenset({"anchors", "actions"})
    group_independent: ClassVar[bool] = True
    _n: dict[tuple[int, int], float] = field(default_factory=dict, init=False, repr=False)
    _sum: dict[tuple[int, int], float] = field(default_factory=dict, init=False, repr=False)
    _sq: dict[tuple[int, int], float] = field(default_factory=dict, init=False, repr=False)
    _anchor_n: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _anchor_sum: dict[int, float] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.z < 0:
            raise ValueError(f"z must be >= 0, got {self.z}")

    @property
    def num_fitted(self) -> int:
        """Steps the critic has been fitted on."""
        return int(sum(self._anchor_n.values()))

    def fit(self, batch: EpisodeBatch) -> None:
        """Add ``batch``'s returns-to-go to the critic's running means."""
        check_detector_batch(self, batch)
        to_go = batch.returns_to_go(self.gamma)
        anchors = np.asarray(batch.anchors).tolist()
        actions = np.asarray(batch.actions).tolist()
        for o, a, g in zip(anchors, actions, to_go.tolist(), strict=True):
            key = (o, a)
            self._n[key] = self._n.get(key, 0.0) + 1.0
            self._sum[key] = self._sum.get(key, 0.0) + g
            self._sq[key] = self._sq.get(key, 0.0) + g * g
            self._anchor_n[o] = self._anchor_n.get(o, 0.0) + 1.0
            self._anchor_sum[o] = self._anchor_sum.get(o, 0.0) + g

    def __call__(self, batch: EpisodeBatch) -> Detection:
        check_detector_batch(self, batch)
        anchors = np.asarray(batch.anchors).tolist()
        actions = np.asarray(batch.actions).tolist()
        score = np.zeros(batch.num_steps)
        label = np.zeros(batch.num_steps, dtype=bool)
        cache: dict[tuple[int, int], tuple[float, bool]] = {}
        for t, key in enumerate(zip(anchors, actions, strict=True)):
            if key not in cache:
                n = self._n.get(key, 0.0)
                if n == 0:
                    cache[key] = (0.0, False)
                else:
                    q = self._sum[key] / n
                    v = self._anchor_sum[key[0]] / self._anchor_n[key[0]]
                    var = max(self._sq[key] / n - q * q, 0.0)
                    se = np.sqrt(var / n)
                    gap = abs(q - v)
                    cache[key] = (gap, gap > self.z * se and gap > 1e-12)
            score[t], label[t] = cache[key]
        return Detection(score, label)
