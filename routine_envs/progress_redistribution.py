"""Stepwise progress attribution (SPA-RL; Wang et al., "SPA-RL: Reinforcing LLM Agents via
Stepwise Progress Attribution", arXiv 2505.20732) as an estimator of :mod:`routine_envs.credit`
(registered there by name: ``spa``).

A learned *progress model* redistributes each episode's return over its steps: a contribution
``c(o, a)`` per (observation, action) pair, trained so that an episode's contributions sum to its
return (MSE), then used as the step reward of PPO with the learner's critic (GAE). Label-free:
the model reads the observation-only ``anchors`` and the ``actions``.

The model (this suite's, for tabular and text environments alike): ``c`` is linear in the counts
of each ``(anchor, action)`` pair an episode visits, i.e. one number per pair. Its training
schedule: after each batch of ``n`` episodes (count matrix ``X``, ``n x p``, returns ``R``), one
proximal least-squares step from the previous model,

    c_k = argmin_c  (1/n) ||X c - R||^2 + ridge ||c - c_{k-1}||^2,     c_0 = 0,

solved by LSQR (scipy) on the sparse ``X``; the refitted model is used on that batch. A small
``ridge`` fits each batch closely (the change of least norm where the batch does not determine
``c``), a large one learns slowly from many batches. Then ``r'_t = c(o_t, a_t)`` and ``A_t`` is
GAE(lambda) on ``r'`` with the learner's values; the value head learns ``A_t + V(s_t)``. A pair
never seen has ``c = 0``. Its cost per batch: at most ``max_iterations`` products with the
sparse ``X`` and its transpose, linear in the batch's steps; the model holds at most
``max_pairs`` pairs (more is refused, not slowed down silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import lsqr

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
        ridge: weight of the step's distance from the previous model (per episode: the batch's
            mean squared error is weighed against it).
        max_pairs: the most (anchor, action) pairs the model holds.
        max_iterations: LSQR iterations per batch (it stops earlier once converged).
    """

    gamma: float = 0.99
    gae_lambda: float = 0.95
    ridge: float = 1e-3
    max_pairs: int = 1_000_000
    max_iterations: int = 200
    name: ClassVar[str] = "spa"
    requires: ClassVar[frozenset[str]] = frozenset({"anchors", "actions", "values"})
    trains_critic: ClassVar[bool] = True
    group_independent: ClassVar[bool] = True
    context_fields: ClassVar[Mapping[str, str]] = {"gamma": "gamma", "gae_lambda": "gae_lambda"}
    _index: dict[tuple[int, int], int] = field(default_factory=dict, init=False, repr=False)
    _contribution: np.ndarray = field(default_factory=lambda: np.zeros(0), init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("gamma", "gae_lambda"):
            value = getattr(self, name)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not 0 <= value <= 1:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if isinstance(self.ridge, bool) or not isinstance(self.ridge, (int, float)):
            raise ValueError(f"ridge must be a number > 0, got {self.ridge!r}")
        if not self.ridge > 0:
            raise ValueError(f"ridge must be a number > 0, got {self.ridge!r}")
        for name in ("max_pairs", "max_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")

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
        self._contribution = np.pad(
            self._contribution, (0, len(self._index) - len(self._contribution))
        )
        return np.asarray(columns, dtype=np.int64)

    def contributions(self, batch: EpisodeBatch) -> np.ndarray:
        """The progress model's ``c(o_t, a_t)`` of each step as it stands, shape ``(N,)``."""
        check_batch(self, batch)
        pairs = _pairs(batch)
        found = [self._index.get(pair, -1) for pair in pairs]
        model = np.append(self._contribution, 0.0)  # index -1: a pair never seen
        return model[np.asarray(found, dtype=np.int64)]

    def fit(self, batch: EpisodeBatch) -> None:
        """One step of the model's training schedule on ``batch`` (module docstring)."""
        check_batch(self, batch)
        columns = self._columns(batch)
        n = batch.num_episodes
        counts = sparse.csr_matrix(
            (np.ones(batch.num_steps), (batch.episode_index, columns)),
            shape=(n, len(self._index)),
        )  # duplicates (a pair visited twice) are summed
        residual = batch.episode_returns() - counts @ self._contribution
        step = lsqr(
            counts,
            residual,
            damp=float(np.sqrt(self.ridge * n)),
            atol=1e-12,
            btol=1e-12,
            iter_lim=self.max_iterations,
        )[0]
        self._contribution = self._contribution + step

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
