"""The statistics of the diagnosis: the paired action-dependence test, its minimum detectable
effect, and the cluster-robust Wilson interval of rho."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

#: power at which the minimum detectable effect is reported.
MDE_POWER = 0.8
#: differences of returns smaller than this, relative to ``max(1, |return|)``, count as zero.
_ZERO_TOLERANCE = 1e-9


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``x`` in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """Two-sided p-value ``P(|T| >= |t|)`` of Student's t distribution with ``df`` degrees of
    freedom (``df > 0``)."""
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(probability: float, df: float) -> float:
    """The ``probability`` quantile (``0 < probability < 1``) of Student's t distribution."""
    if not 0.0 < probability < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {probability}")
    if probability == 0.5:
        return 0.0
    tail = 2.0 * min(probability, 1.0 - probability)  # two-sided p of the quantile
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > tail:
        high *= 2.0
    for _ in range(200):  # bisection: p is decreasing in |t|
        mid = 0.5 * (low + high)
        if t_two_sided_p(mid, df) > tail:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    value = 0.5 * (low + high)
    return value if probability > 0.5 else -value


@dataclass(frozen=True)
class ActionTest:
    """Outcome of :func:`action_dependence_test` at one state.

    Attributes:
        p_value: Bonferroni-adjusted p-value, ``min(1, (A - 1) * min(p_values))``.
        p_values: per comparison with the reference action, shape ``(A - 1,)``.
        mean_differences: ``mean(G[a] - G[ref])``, shape ``(A - 1,)`` (return units).
        sd_differences: sample standard deviations of the differences, shape ``(A - 1,)``.
    """

    p_value: float
    p_values: np.ndarray
    mean_differences: np.ndarray
    sd_differences: np.ndarray


def action_dependence_test(returns: np.ndarray, reference: int = 0) -> ActionTest:
    """Test whether the expected return depends on the action, from paired rollouts.

    Args:
        returns: ``G[a, i]``, shape ``(num_actions, num_rollouts)``, the return after action
            ``a`` in rollout ``i``; rollouts are independent, and within a rollout the actions
            share their random numbers (pairing).
        reference: the action every other is compared with.

    Returns:
        An :class:`ActionTest`: two-sided paired t-tests of ``mean(G[a] - G[ref]) = 0`` with
        ``num_rollouts - 1`` degrees of freedom, Bonferroni-combined over the ``A - 1``
        comparisons. All-zero differences give p = 1. Each comparison's p-value is floored at
        :func:`smallest_p_value` ``= 2^(1 - n)``, the smallest an exact sign-flip test can give
        with ``n`` pairs: the t-test's normal tails are not trusted beyond that, and a constant
        non-zero difference (infinite t) gets exactly that p-value, not 0.
    """
    g = np.asarray(returns, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] < 2 or g.shape[1] < 2:
        raise ValueError(
            f"returns must have shape (num_actions >= 2, num_rollouts >= 2), got {g.shape}"
        )
    n = g.shape[1]
    diffs = np.delete(g, reference, axis=0) - g[reference]
    scale = max(1.0, float(np.max(np.abs(g))))
    diffs[np.abs(diffs) <= _ZERO_TOLERANCE * scale] = 0.0
    means = diffs.mean(axis=1)
    sds = diffs.std(axis=1, ddof=1)
    sds[sds <= _ZERO_TOLERANCE * scale] = 0.0  # constant differences, up to rounding
    floor = smallest_p_value(n)
    p_values = np.ones(len(diffs))
    for k in range(len(diffs)):
        if not diffs[k].any():
            continue
        t = math.inf if sds[k] == 0.0 else means[k] / (sds[k] / math.sqrt(n))
        p_values[k] = max(floor, t_two_sided_p(t, n - 1))
    adjusted = min(1.0, len(diffs) * float(p_values.min()))
    return ActionTest(adjusted, p_values, means, sds)


def smallest_p_value(num_rollouts: int) -> float:
    """``2^(1 - n)``: the p-value of the exact two-sided sign-flip test when all ``n`` paired
    differences have the same sign, the floor of every per-comparison p-value."""
    return 2.0 ** (1 - num_rollouts)


def min_rollouts(num_actions: int, alpha: float) -> int:
    """The fewest rollouts with which a state can be found critical at all:
    ``(A - 1) * 2^(1 - n) <= alpha``, i.e. ``n >= 1 + log2((A - 1) / alpha)``."""
    return max(2, math.ceil(1 + math.log2((num_actions - 1) / alpha) - 1e-12))


def minimum_detectable_effect(
    num_rollouts: int, num_actions: int, alpha: float, power: float = MDE_POWER
) -> float:
    """Standardized minimum detectable effect of :func:`action_dependence_test`:
    ``(t_{1 - alpha / (2 (A - 1))} + t_{power}) / sqrt(n)`` in standard deviations of the paired
    differences (the usual approximation, ``n - 1`` degrees of freedom)."""
    df = num_rollouts - 1
    level = alpha / (num_actions - 1)
    return (t_quantile(1.0 - level / 2.0, df) + t_quantile(power, df)) / math.sqrt(num_rollouts)


def cluster_wilson_interval(
    critical: np.ndarray, lengths: np.ndarray, confidence: float = 0.95
) -> tuple[tuple[float, float], float]:
    """Cluster-robust Wilson score interval for a share of steps pooled over episodes.

    Args:
        critical: critical steps per episode, shape ``(m,)``.
        lengths: tested steps per episode, shape ``(m,)``, all positive.
        confidence: the interval's level.

    Returns:
        ``((low, high), deff)``: the Wilson interval of ``p = sum(critical) / sum(lengths)`` on
        ``n_eff = n / deff`` states, with the design effect ``deff = max(1, V_cluster / V_binom)``:
        ``V_cluster = m / (m - 1) * sum_e (c_e - p n_e)^2 / n^2`` is the episode-clustered
        (linearized ratio-estimator) variance and ``V_binom = p (1 - p) / n``. With one episode,
        or ``p`` in {0, 1}, ``deff = 1``.
    """
    c = np.asarray(critical, dtype=np.float64)
    n_e = np.asarray(lengths, dtype=np.float64)
    n = float(n_e.sum())
    p = float(c.sum()) / n
    m = len(n_e)
    deff = 1.0
    binomial = p * (1.0 - p) / n
    if m >= 2 and binomial > 0:
        clustered = m / (m - 1) * float(np.sum((c - p * n_e) ** 2)) / n**2
        deff = max(1.0, clustered / binomial)
    n_eff = n / deff
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    denominator = 1.0 + z * z / n_eff
    center = (p + z * z / (2.0 * n_eff)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n_eff + z * z / (4.0 * n_eff * n_eff))
    low = 0.0 if p == 0.0 else max(0.0, center - half)  # exact ends, not rounding
    high = 1.0 if p == 1.0 else min(1.0, center + half)
    return (low, high), deff
