"""Statistics across seeds: the interquartile mean and percentile bootstrap intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def iqm(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50% (25% trimmed each side; the plain mean
    for fewer than 4 values)."""
    x = np.sort(np.asarray(values, dtype=np.float64), axis=axis)
    n = x.shape[axis]
    k = n // 4
    return np.take(x, np.arange(k, n - k), axis=axis).mean(axis=axis)


def mean(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    return np.asarray(values, dtype=np.float64).mean(axis=axis)


STATISTICS: dict[str, Callable[..., Any]] = {"iqm": iqm, "mean": mean}


def bootstrap_ci(
    samples: np.ndarray,
    statistic: Callable[..., Any] = mean,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and percentile bootstrap interval of ``statistic`` over axis 0 (seeds).

    Args:
        samples: shape ``(num_seeds, ...)``.
    Returns:
        ``(estimate, low, high)``, each of shape ``samples.shape[1:]``.
    """
    samples = np.asarray(samples, dtype=np.float64)
    estimate = np.asarray(statistic(samples, axis=0))
    n = samples.shape[0]
    if n < 2:
        return estimate, estimate.copy(), estimate.copy()
    rng = np.random.default_rng(seed)
    picks = rng.integers(n, size=(num_resamples, n))
    stats = np.stack([statistic(samples[p], axis=0) for p in picks])
    tail = (1 - confidence) / 2 * 100
    return estimate, np.percentile(stats, tail, axis=0), np.percentile(stats, 100 - tail, axis=0)


def first_crossing(timesteps: Sequence[float], values: Sequence[float], target: float) -> float:
    """The first time the curve reaches ``target``, interpolated linearly between the two
    evaluations around the crossing (so it is not quantized by the evaluation grid); the first
    time itself when the first evaluation already reaches it; ``inf`` when it never does."""
    previous = None
    for t, v in zip(timesteps, values, strict=True):
        if v >= target:
            if previous is None or v == previous[1]:
                return float(t)
            t0, v0 = previous
            return float(t0 + (target - v0) / (v - v0) * (t - t0))
        previous = (t, v)
    return float("inf")
