"""An asymmetric privileged critic (SWEET-RL, Zhou et al., arXiv 2503.15478; the gold-answer
critics of IGPO, arXiv 2510.14967) as an estimator of :mod:`routine_envs.credit` (registered
there by name: ``asymmetric_critic``).

The critic reads what only training has: the privileged ``state_id`` of each step (the layout,
which doors were right so far, the gold answer: what the observation hides), while the policy
still acts on observations only. It is *learned*, from the returns of earlier batches: a table
``V(s)`` over state ids, each entry an exponential moving average of the Monte-Carlo return-to-go
observed from that state (step ``max(1/n, alpha)`` after ``n`` visits: a running mean at first,
then forgetting at rate ``alpha`` as the policy moves). The advantages are GAE(lambda) of that
critic on the batch's rewards (:func:`routine_envs.credit.td_advantages`); a state never seen
has the value ``0``. The critic is used on a batch *before* it is fitted on it, so a step's
return never enters its own baseline.

Privileged by construction (``requires = {"state_ids"}``): it sits between ``routine_masked``
(which reads which steps are critical) and ``oracle`` (which reads the exact value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from routine_envs.credit import Advantages, FromContext, check_batch, td_advantages
from routine_envs.episodes import EpisodeBatch

__all__ = ["AsymmetricCritic"]


def _unit(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


@dataclass
class AsymmetricCritic(FromContext):
    """GAE(lambda) of a tabular critic learned over the privileged state ids.

    Attributes:
        gamma: discount of the returns the critic learns and of the TD errors.
        lam: GAE's lambda (1: ``G_t - V(s_t)``; 0: one-step TD errors).
        alpha: the critic's smallest step (its forgetting rate once a state has 1/alpha visits).
    """

    gamma: float = 1.0
    lam: float = 0.95
    alpha: float = 0.1
    name: ClassVar[str] = "asymmetric_critic"
    requires: ClassVar[frozenset[str]] = frozenset({"state_ids"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True
    _value: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _visits: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.gamma = _unit("gamma", self.gamma)
        self.lam = _unit("lam", self.lam)
        self.alpha = _unit("alpha", self.alpha)

    def values(self, state_ids: np.ndarray) -> np.ndarray:
        """The critic's ``V(s)`` of each id (0 for one never fitted), shape like ``state_ids``."""
        ids = np.asarray(state_ids).ravel().tolist()
        return np.array([self._value.get(s, 0.0) for s in ids], dtype=np.float64)

    def fit(self, batch: EpisodeBatch) -> None:
        """Move each visited state's value toward the returns-to-go observed from it."""
        check_batch(self, batch)
        to_go = batch.returns_to_go(self.gamma).tolist()
        for s, g in zip(np.asarray(batch.state_ids).tolist(), to_go, strict=True):
            n = self._visits.get(s, 0) + 1
            self._visits[s] = n
            v = self._value.get(s, 0.0)
            self._value[s] = v + max(1.0 / n, self.alpha) * (g - v)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        adv = td_advantages(batch, self.values(batch.state_ids), self.gamma, self.lam)
        self.fit(batch)
        return Advantages(adv)
