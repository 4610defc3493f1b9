"""The statistics of the diagnosis: the paired action-dependence test, its minimum detectable
effect, and the cluster-robust Wilson interval of rho. Distributions from ``scipy.stats``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: power at which the minimum detectable effect is reported.
MDE_POWER = 0.8
#: fewest sampled episodes from which the reading weighs a critic's error against ``Var(R)``.
MIN_VARIANCE_EPISODES = 10
#: the normal quantile of :func:`return_variance_warning`'s check: ``Var(R)`` must exceed this
#: many standard errors (its approximate 95% interval must not reach 0).
VARIANCE_Z = 1.96
#: differences of returns smaller than this, relative to ``max(1, |return|)``, count as zero.
_ZERO_TOLERANCE = 1e-9


def t_two_sided_p(t: float | np.ndarray, df: float) -> float | np.ndarray:
    """Two-sided p-value ``P(|T| >= |t|)`` of Student's t distribution with ``df > 0`` degrees of
    freedom (``scipy.stats.t``); 0 for infinite ``t``. Elementwise for an array."""
    p = 2.0 * stats.t.sf(np.abs(t), df)
    return float(p) if np.ndim(p) == 0 else p


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
    moved = diffs.any(axis=1)  # all-zero differences: p = 1
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sds > 0.0, means / (sds / math.sqrt(n)), math.inf)
    p_values = np.where(moved, np.maximum(smallest_p_value(n), t_two_sided_p(t, n - 1)), 1.0)
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
    quantiles = stats.t.ppf([1.0 - level / 2.0, power], df)
    return float(quantiles.sum()) / math.sqrt(num_rollouts)


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

    The Wilson bounds are written out because ``n_eff`` is not an integer in general, which
    ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` requires; with ``deff = 1``
    they are that interval (tested). The normal quantile is ``scipy.stats.norm.ppf``.
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
    z = float(stats.norm.ppf(0.5 + confidence / 2.0))
    denominator = 1.0 + z * z / n_eff
    center = (p + z * z / (2.0 * n_eff)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n_eff + z * z / (4.0 * n_eff * n_eff))
    low = 0.0 if p == 0.0 else max(0.0, center - half)  # exact ends, not rounding
    high = 1.0 if p == 1.0 else min(1.0, center + half)
    return (low, high), deff


def variance_standard_error(values: np.ndarray) -> float:
    """Distribution-free standard error of the unbiased sample variance ``s^2`` of ``values``.

    ``sqrt((m4 - (n - 3) / (n - 1) * s^4) / n)`` for ``n = len(values) >= 2`` (the large-sample
    variance of ``s^2``, with the sample fourth central moment ``m4`` plugged in for the
    population one): no normality assumed, so a rare success (a heavy-tailed Bernoulli return)
    gets the large error it has. Same units as the variance; nan for ``n < 2``.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n < 2:
        return math.nan
    s2 = float(np.var(x, ddof=1))
    m4 = float(np.mean((x - x.mean()) ** 4))
    return math.sqrt(max(0.0, m4 - (n - 3) / (n - 1) * s2 * s2) / n)


def return_variance_warning(
    num_episodes: int, variance: float, standard_error: float
) -> str | None:
    """Why ``Var(R)`` cannot carry advice on a critic's error ``sigma^2 / Var(R)``, in one line;
    ``None`` when it can.

    The sample is *too small* when it has fewer than :data:`MIN_VARIANCE_EPISODES` episodes, or
    when ``Var(R) < VARIANCE_Z * standard_error`` (:func:`variance_standard_error`): its
    approximate 95% interval reaches 0, so the ratio's scale is unknown. ``Var(R) = 0`` (every
    episode had the same return) or undefined (one episode) makes the ratio undefined.

    Args:
        num_episodes: sampled episodes behind ``variance``.
        variance: ``Var(R)``, the unbiased sample variance of their returns (nan with one).
        standard_error: its standard error (:func:`variance_standard_error`).
    """
    stop = "so the reading gives no sigma^2/Var(R) advice for a learned critic"
    more = "more states (--states) sample more episodes"
    if not math.isfinite(variance):
        return f"Var(R) is undefined with {num_episodes} sampled episode(s): {stop}; {more}"
    if variance <= 0.0:
        return (
            f"Var(R) = 0 over the {num_episodes} sampled episodes (every one had the same "
            f"return): the ratio sigma^2/Var(R) is undefined, so the reading gives no advice "
            f"for a learned critic"
        )
    if num_episodes < MIN_VARIANCE_EPISODES:
        return (
            f"Var(R) = {variance:.3g} from only {num_episodes} sampled episodes (fewer than "
            f"{MIN_VARIANCE_EPISODES}): too few to weigh a critic's error against, {stop}; {more}"
        )
    if not variance > VARIANCE_Z * standard_error:
        return (
            f"Var(R) = {variance:.3g} with a standard error of {standard_error:.2g} over "
            f"{num_episodes} sampled episodes: its 95% interval reaches 0, too uncertain to "
            f"weigh a critic's error against, {stop}; {more}"
        )
    return None
