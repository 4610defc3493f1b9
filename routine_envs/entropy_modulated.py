"""Entropy-modulated policy gradients (EMPG; Wang et al., "Harnessing Uncertainty:
Entropy-Modulated Policy Gradients for Long-Horizon LLM Agents", arXiv 2509.09265, ICLR 2026) as
an estimator of :mod:`routine_envs.credit` (registered there by name: ``empg``).

Label-free: it reads the behaviour policy's per-step entropies only. Every step of episode ``i``
gets the group's outcome advantage ``A_i = R_i - mean_group(R)`` rescaled by how certain the
policy was at that step, plus a bonus for steps whose *next* state the policy is certain at:

    H~_t  = (H_t - min H) / (max H - min H)          (min and max over the batch; 0 if equal)
    g_t   = exp(-k H~_t) / mean_batch(exp(-k H~))     (self-calibrating scale, mean 1)
    f_t   = exp(-k_f H~_{t+1}), 0 after an episode's last step   (future-clarity bonus)
    A'_t  = g_t A_i + zeta f_t

Confident steps get a larger share of the outcome signal, uncertain ones a smaller one; the
batch mean of ``g`` is 1, so the overall scale of ``A_i`` is kept. The entropy of a step is the
entropy of the policy's action distribution there (the batched trainer records it exactly; a
language model's step entropy would be its tokens' mean).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routine_envs.credit import Advantages, FromContext, TrajectoryMC, check_batch
from routine_envs.episodes import EpisodeBatch

__all__ = ["EMPG"]


def _number(name: str, value: float, low: float = 0.0) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= low:
        raise ValueError(f"{name} must be a number >= {low}, got {value!r}")
    return float(value)


@dataclass
class EMPG(FromContext):
    """Entropy-modulated trajectory advantage (module docstring for the equations).

    Attributes:
        k: sharpness of the scale ``g`` (``k = 0``: ``g = 1``, the trajectory advantage).
        k_f: sharpness of the future-clarity bonus ``f``.
        zeta: weight of the bonus (``zeta = 0``: no bonus).
        normalize_std: divide ``A_i`` by its group's return std (GRPO's normalisation).
        eps: added to that std.
    """

    k: float = 1.0
    k_f: float = 1.0
    zeta: float = 0.1
    normalize_std: bool = False
    eps: float = 1e-6
    name: ClassVar[str] = "empg"
    requires: ClassVar[frozenset[str]] = frozenset({"entropies"})
    trains_critic: ClassVar[bool] = False
    # the min-max normalisation and g's mean pool over the whole batch
    group_independent: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.k = _number("k", self.k)
        self.k_f = _number("k_f", self.k_f)
        self.zeta = _number("zeta", self.zeta)
        self.eps = _number("eps", self.eps)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        outcome = TrajectoryMC(normalize_std=self.normalize_std, eps=self.eps)(batch).advantages
        entropy = np.asarray(batch.entropies, dtype=np.float64)
        spread = float(entropy.max() - entropy.min())
        scaled = (entropy - entropy.min()) / spread if spread > 0 else np.zeros_like(entropy)
        weight = np.exp(-self.k * scaled)
        g = weight / weight.mean()
        f = np.zeros_like(entropy)
        last = batch.episode_starts[1:] - 1
        has_next = np.ones(batch.num_steps, dtype=bool)
        has_next[last] = False
        f[has_next] = np.exp(-self.k_f * scaled[1:][has_next[:-1]])
        return Advantages(g * outcome + self.zeta * f)
