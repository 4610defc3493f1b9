"""Statistics across seeds: the interquartile mean and percentile bootstrap intervals (both from
scipy), and the first crossing of a target."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.stats


def iqm(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50%, cutting ``floor(n / 4)`` values each side
    (the plain mean for fewer than 4 values). Equals ``scipy.stats.trim_mean(values, 0.25,
    axis)`` (a test checks it) at a few microseconds instead of about a millisecond per call,
    which matters inside bootstrap resampling loops."""
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
    """Point estimate and percentile bootstrap interval of ``statistic`` over axis 0 (seeds),
    by ``scipy.stats.bootstrap`` (``statistic`` takes an ``axis`` argument, vectorized).

    Args:
        samples: shape ``(num_seeds, ...)``.
    Returns:
        ``(estimate, low, high)``, each of shape ``samples.shape[1:]``; the interval is the
        estimate itself for one seed, or where every resample gives the same value.
    """
    samples = np.asarray(samples, dtype=np.float64)
    estimate = np.asarray(statistic(samples, axis=0))
    if samples.shape[0] < 2:
        return estimate, estimate.copy(), estimate.copy()
    with warnings.catch_warnings():  # identical seeds: a degenerate interval, handled below
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)
        result = scipy.stats.bootstrap(
            (samples,),
            statistic,
            n_resamples=num_resamples,
            confidence_level=confidence,
            method="percentile",
            axis=0,
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    low, high = (np.asarray(bound, dtype=np.float64) for bound in result.confidence_interval)
    finite = np.isfinite(low) & np.isfinite(high)
    return estimate, np.where(finite, low, estimate), np.where(finite, high, estimate)


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
