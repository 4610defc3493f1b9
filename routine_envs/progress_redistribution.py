"""Stepwise progress attribution (SPA-RL; Wang et al., "SPA-RL: Reinforcing LLM Agents via
Stepwise Progress Attribution", arXiv 2505.20732) as an estimator of :mod:`routine_envs.credit`
(registered there by name: ``spa``).

A learned *progress model* redistributes each episode's return over its steps: a contribution
``c(o, a)`` per (observation, action) pair, trained so that an episode's contributions sum to its
return (MSE), then used as the step reward of PPO with the learner's critic (GAE). Label-free:
the model reads the observation-only ``anchors`` and the ``actions``.

The model (this suite's, for tabular and text environments alike): ``c`` is linear in the counts
of each ``(anchor, action)`` pair an episode visits, i.e. one number per pair, fitted by ridge
regression of the episode returns on those counts,

    c = argmin_c  sum_i w_i (sum_t c(o_t, a_t) - R_i)^2 + ridge ||c||^2,

over every batch so far, an episode of ``j`` batches ago weighted ``w = decay^j`` (its
sufficient statistics decay each batch), refitted after each batch is added and used on that
batch. Then ``r'_t = c(o_t, a_t)`` and ``A_t`` is GAE(lambda) on ``r'`` with the learner's values;
the value head learns ``A_t + V(s_t)``. A pair never seen has ``c = 0``. Its cost: one solve of
a ``p x p`` system per batch, ``p`` the pairs seen so far (a few hundred on the suite's tiers);
more than ``max_pairs`` is refused rather than slowed down silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from routine_envs.credit import Advantages, FromContext, check_batch, td_advantages
from routine_envs.episodes import EpisodeBatch

__all__ = ["SPA"]


def _pairs(batch: EpisodeBatch) -> list[tuple[int, int]]:
    """Each step's ``(anchor, action)``, length ``N``."""
    anchors = np.asarray(batch.anchors).tolist()
    return list(zip(anchors, np.asarray(batch.actions).tolist(), strict=True))


@dataclass
class SPA(FromContext):
    """GAE on rewards redistributed by a learned progress model (module docstring).

    Attributes:
        gamma, gae_lambda: of GAE on the redistributed rewards (the learner's, from the context).
        ridge: the progress model's L2 penalty.
        decay: weight of the previous batches' statistics after each batch (0: this batch only).
        max_pairs: the most (anchor, action) pairs the model holds.
    """

    gamma: float = 0.99
    gae_lambda: float = 0.95
    ridge: float = 1e-3
    decay: float = 0.9
    max_pairs: int = 4096
    name: ClassVar[str] = "spa"
    requires: ClassVar[frozenset[str]] = frozenset({"anchors", "actions", "values"})
    trains_critic: ClassVar[bool] = True
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {"gamma": "gamma", "gae_lambda": "gae_lambda"}
    _index: dict[tuple[int, int], int] = field(default_factory=dict, init=False, repr=False)
    _gram: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), init=False, repr=False)
    _target: np.ndarray = field(default_factory=lambda: np.zeros(0), init=False, repr=False)
    _contribution: np.ndarray = field(default_factory=lambda: np.zeros(0), init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("gamma", "gae_lambda", "decay"):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if isinstance(self.ridge, bool) or not isinstance(self.ridge, (int, float)):
            raise ValueError(f"ridge must be a number > 0, got {self.ridge!r}")
        if not self.ridge > 0:
            raise ValueError(f"ridge must be a number > 0, got {self.ridge!r}")
        if isinstance(self.max_pairs, bool) or not isinstance(self.max_pairs, int):
            raise ValueError(f"max_pairs must be an int >= 1, got {self.max_pairs!r}")
        if self.max_pairs < 1:
            raise ValueError(f"max_pairs must be an int >= 1, got {self.max_pairs!r}")

    def _columns(self, batch: EpisodeBatch) -> np.ndarray:
        """Each step's pair index, adding the pairs not seen before; shape ``(N,)``."""
        pairs = _pairs(batch)
        columns = []
        for pair in pairs:
            column = self._index.get(pair)
            if column is None:
                if len(self._index) >= self.max_pairs:
                    raise ValueError(
                        f"spa's progress model holds at most max_pairs={self.max_pairs} "
                        "(anchor, action) pairs; raise it for this environment"
                    )
                column = self._index[pair] = len(self._index)
            columns.append(column)
        grown = len(self._index) - len(self._target)
        if grown:
            self._gram = np.pad(self._gram, ((0, grown), (0, grown)))
            self._target = np.pad(self._target, (0, grown))
        return np.asarray(columns, dtype=np.int64)

    def contributions(self, batch: EpisodeBatch) -> np.ndarray:
        """The progress model's ``c(o_t, a_t)`` of each step as it stands, shape ``(N,)``."""
        check_batch(self, batch)
        pairs = _pairs(batch)
        found = [self._index.get(pair, -1) for pair in pairs]
        model = np.append(self._contribution, 0.0)  # index -1: a pair never seen
        return model[np.asarray(found, dtype=np.int64)]

    def fit(self, batch: EpisodeBatch) -> None:
        """Decay the statistics, add ``batch``'s episodes and refit the contributions."""
        check_batch(self, batch)
        columns = self._columns(batch)
        counts = np.zeros((batch.num_episodes, len(self._index)))
        np.add.at(counts, (batch.episode_index, columns), 1.0)
        self._gram = self.decay * self._gram + counts.T @ counts
        self._target = self.decay * self._target + counts.T @ batch.episode_returns()
        system = self._gram + self.ridge * np.eye(len(self._target))
        self._contribution = np.linalg.solve(system, self._target)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        self.fit(batch)
        rewards = self.contributions(batch)
        redistributed = EpisodeBatch(
            rewards=rewards,
            episode_starts=batch.episode_starts,
            groups=batch.groups,
            truncated=batch.truncated,
            bootstrap_values=batch.bootstrap_values,
        )
        adv = td_advantages(redistributed, batch.values, self.gamma, self.gae_lambda)
        return Advantages(adv, adv + batch.values)
