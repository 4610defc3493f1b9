"""Decision-density diagnosis: estimate rho for any branchable Gymnasium environment.

``rho`` is the share of steps whose action can change the expected return (critical steps over
episode length). :func:`diagnose` estimates it *without annotations*, from the environment's
behaviour alone:

1. **Sampling.** Episodes are played from ``reset(seed=...)`` under the sampling policy (uniform
   random by default, or ``continuation_policy``) until at least ``num_states`` states have been
   visited; every state in which an action is taken is tested, so the estimate is the share of
   *steps* that are critical. Whole episodes are kept (the last one is finished), so an
   environment whose episodes all have the same density is estimated without a partial-episode
   bias.
2. **Branching.** At each sampled state, ``num_rollouts`` times: ``copy.deepcopy`` the
   environment, give the copy's ``env.unwrapped.np_random`` a fresh seed for this rollout (so
   rollouts see independent environment randomness), then branch that copy into every action and
   continue each branch to the end of the episode under the continuation policy. Within a rollout
   every action sees the same environment generator and the same policy generator: *common random
   numbers*, so an action that does not matter gives exactly the same path and the same return.
3. **Test.** ``G[a, i]`` is the undiscounted return from the state after action ``a`` in rollout
   ``i``. For each action ``a`` other than the reference (the first action) the paired differences
   ``D_a = G[a] - G[ref]`` (``num_rollouts`` of them) are tested for zero mean with a two-sided
   paired Student t-test, its p-value floored at ``2^(1 - n)`` (the smallest an exact sign-flip
   test gives with ``n`` pairs; this also covers a constant non-zero difference, where t is
   infinite); the state's p-value is the smallest, times ``A - 1`` (Bonferroni), and the state
   is *critical* when it is ``<= alpha``. Differences that are all exactly zero (the paths
   coincide) give p = 1. So ``num_rollouts >= 1 + log2((A - 1) / alpha)`` is needed (9 for three
   actions at alpha = 0.01); fewer is refused.

Assumptions of the test (see ``docs/diagnose.md``):

- ``copy.deepcopy(env)`` branches the episode (same state, same future for the same actions),
  and the environment draws its randomness from ``env.unwrapped.np_random`` (Gymnasium's
  convention). Randomness from anywhere else is repeated identically across rollouts, which
  makes the rollouts dependent and the test anti-conservative.
- The return is measured under the continuation policy: "critical" means ``Q^pi(s, .)`` is not
  constant for that policy, which for a policy giving every action positive probability is the
  suite's definition (the optimal action gap is positive) in every environment of the suite.
- The t-test is exact for normally distributed differences and approximate otherwise; with few
  rollouts and skewed returns its level is approximate. Its power is limited: a state where the
  action changes the expected return by less than the test can detect with ``num_rollouts``
  rollouts is classified *routine*. :attr:`DiagnosisResult.mde` reports the minimum detectable
  effect (80 % power), so rho is an estimate of the share of steps with an effect above it.
  A routine state is flagged critical with probability at most ``alpha`` (where the test's
  level holds), so false positives add at most ``alpha * (1 - rho)`` to rho in expectation; a
  routine state whose branches coincide exactly is never flagged.

The confidence interval is a **cluster-robust Wilson score interval**: the Wilson interval for a
proportion, computed on the effective number of states ``n / deff``, where the design effect
``deff >= 1`` is the ratio of the cluster-robust (episodes as clusters, linearized ratio
estimator) variance of rho to the binomial one. States from one episode are correlated; the
interval accounts for it, and unlike an episode bootstrap it does not collapse to a point when
rho is 0 or 1 or when every episode has the same density. It covers the sampling of states only,
not the test's errors.

Only numpy, gymnasium and the standard library are used (no scipy): Student t p-values come from
the regularized incomplete beta function, normal quantiles from :class:`statistics.NormalDist`.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import gymnasium as gym
import numpy as np

from routine_envs import annotations as keys

ContinuationPolicy = Callable[[Any, dict[str, Any], np.random.Generator], int]
"""A policy for sampling states and continuing rollouts: ``(observation, info, rng) -> action``.
It must draw all its randomness from ``rng`` (that is how common random numbers are kept)."""

#: power at which the minimum detectable effect is reported.
MDE_POWER = 0.8
#: differences of returns smaller than this, relative to ``max(1, |return|)``, count as zero.
_ZERO_TOLERANCE = 1e-9


# ------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class StateRecord:
    """The test at one sampled state.

    Attributes:
        episode: index of the sampled episode, from 0.
        step: step of the episode at which the state was observed, from 0.
        critical: the test's decision (p_value <= alpha).
        p_value: Bonferroni-adjusted p-value of "the return does not depend on the action".
        mean_returns: mean return from the state after each action, over the rollouts, shape
            ``(num_actions,)`` (in return units).
        max_abs_difference: largest ``|mean(G[a] - G[ref])|`` over the actions (return units).
        max_sd_difference: largest standard deviation of the paired differences (return units).
        identical: every action gave the same return in every rollout (all paired differences
            exactly 0): the state is routine beyond doubt, not merely not significant.
        annotated: the environment's ``info["critical"]`` at the state, or ``None`` without it.
    """

    episode: int
    step: int
    critical: bool
    p_value: float
    mean_returns: tuple[float, ...]
    max_abs_difference: float
    max_sd_difference: float
    identical: bool
    annotated: bool | None


@dataclass(frozen=True)
class Agreement:
    """The test's decisions against the environment's annotations ``info["critical"]``.

    Positive = critical. Counts are over the sampled states that carry the annotation.
    """

    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int

    @property
    def num_states(self) -> int:
        return (
            self.true_positives + self.false_positives + self.false_negatives + self.true_negatives
        )

    @property
    def accuracy(self) -> float:
        """Share of annotated states on which the test agrees with the annotation."""
        return (self.true_positives + self.true_negatives) / max(1, self.num_states)

    @property
    def annotated_rho(self) -> float:
        """Share of the annotated states that the environment marks critical."""
        return (self.true_positives + self.false_negatives) / max(1, self.num_states)

    @property
    def false_positive_rate(self) -> float:
        """Share of annotated-routine states that the test flags critical (nan without any)."""
        negatives = self.false_positives + self.true_negatives
        return self.false_positives / negatives if negatives else math.nan

    @property
    def true_positive_rate(self) -> float:
        """Share of annotated-critical states that the test detects (nan without any)."""
        positives = self.true_positives + self.false_negatives
        return self.true_positives / positives if positives else math.nan


@dataclass(frozen=True)
class MinimumDetectableEffect:
    """The smallest effect of the action on the expected return that the test detects with
    probability :data:`MDE_POWER` (normal approximation with ``num_rollouts - 1`` degrees of
    freedom).

    Attributes:
        standardized: in units of the standard deviation of the paired differences
            ``G[a] - G[ref]`` at a state: ``(t_{1 - alpha / (2 (A - 1))} + t_{power}) / sqrt(n)``.
        return_units: ``standardized`` times the root-mean-square standard deviation of the paired
            differences over every tested comparison: a typical detectable difference in expected
            return. 0 when every paired difference was constant (common random numbers made the
            action's effect deterministic): then any non-zero effect is detected.
    """

    standardized: float
    return_units: float


@dataclass
class DiagnosisResult:
    """What :func:`diagnose` measured.

    Attributes:
        rho: share of the tested states (steps) that the test found critical, ``sum over episodes
            of critical steps / sum of episode lengths``.
        ci: ``(low, high)`` confidence interval of ``rho`` at level ``confidence``.
        ci_method: how ``ci`` was computed.
        design_effect: variance inflation from clustering states in episodes (``>= 1``).
        confidence: level of ``ci``.
        num_states: states tested (steps of the sampled episodes).
        num_episodes: sampled episodes.
        num_critical: states found critical.
        num_inconclusive: states found routine although the action changed the return in some
            rollout (not significant at ``alpha``): where these are many, effects below the
            minimum detectable effect may be hiding and rho may be underestimated.
        episode_mean_rho: mean over episodes of each episode's critical share (equal to ``rho``
            when every episode has the same length; the suite's ``info["decision_density"]`` and
            ``env.unwrapped.decision_density`` are this per-episode form).
        return_variance: variance of the sampled episodes' undiscounted returns, ``Var(R)`` (nan
            with one episode).
        mde: minimum detectable effect of the test.
        agreement: confusion counts against ``info["critical"]``, or ``None`` without annotations.
        records: one :class:`StateRecord` per tested state, in sampling order.
        num_truncated_episodes: sampled episodes cut at ``max_steps``.
        num_truncated_rollouts: continuations cut at ``max_steps`` (the episode's step budget).
        elapsed_seconds: wall-clock time of the diagnosis.
        settings: the arguments used (``num_states``, ``num_rollouts``, ``alpha``, ``seed``,
            ``max_steps``, ``confidence``, ``policy``, ``num_actions``, ``test``, ``env``).
    """

    rho: float
    ci: tuple[float, float]
    ci_method: str
    design_effect: float
    confidence: float
    num_states: int
    num_episodes: int
    num_critical: int
    num_inconclusive: int
    episode_mean_rho: float
    return_variance: float
    mde: MinimumDetectableEffect
    agreement: Agreement | None
    records: list[StateRecord] = field(repr=False)
    num_truncated_episodes: int
    num_truncated_rollouts: int
    elapsed_seconds: float
    settings: dict[str, Any]

    @property
    def share_routine(self) -> float:
        """``1 - rho``: the share of steps whose action did not measurably change the return."""
        return 1.0 - self.rho

    @property
    def rho_upper(self) -> float:
        """``(num_critical + num_inconclusive) / num_states``: the share of steps where the action
        changed the return in at least one rollout, i.e. rho if every non-significant difference
        were a real effect. An upper bracket of rho where common random numbers make the branches
        of routine states identical (as in every environment of the suite); an environment whose
        routine actions change the path without changing the expected return inflates it."""
        return (self.num_critical + self.num_inconclusive) / self.num_states

    def to_dict(self, include_records: bool = True) -> dict[str, Any]:
        """A JSON-serializable dictionary (derived properties included)."""
        data = dataclasses.asdict(self)
        data["share_routine"] = self.share_routine
        data["rho_upper"] = self.rho_upper
        if self.agreement is not None:
            data["agreement"].update(
                num_states=self.agreement.num_states,
                accuracy=self.agreement.accuracy,
                annotated_rho=self.agreement.annotated_rho,
                false_positive_rate=self.agreement.false_positive_rate,
                true_positive_rate=self.agreement.true_positive_rate,
            )
        if not include_records:
            data.pop("records")
        return _json_safe(data)


def _json_safe(value: Any) -> Any:
    """Replace tuples by lists and non-finite floats by ``None`` (strict JSON)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


# ---------------------------------------------------------------------------- statistics
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


# ------------------------------------------------------------------------------ progress
class _Progress:
    """A progress bar over tested states: tqdm when importable, else a line on stderr."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.total = total
        self.count = 0
        self._bar: Any = None
        self._last = 0.0
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return
        self._bar = tqdm(total=total, desc="diagnose", unit="state", file=sys.stderr)

    def update(self) -> None:
        if not self.enabled:
            return
        self.count += 1
        if self.count > self.total:  # the last episode runs past num_states
            self.total = self.count
            if self._bar is not None:
                self._bar.total = self.total
        if self._bar is not None:
            self._bar.update(1)
            return
        now = time.monotonic()
        if now - self._last >= 0.5:
            self._last = now
            print(f"\rdiagnose: {self.count}/{self.total} states", end="", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            print(f"\rdiagnose: {self.count}/{self.total} states", file=sys.stderr)


# ------------------------------------------------------------------------------ diagnosis
def _uniform_policy(space: gym.spaces.Discrete) -> ContinuationPolicy:
    n, start = int(space.n), int(space.start)
    return lambda _obs, _info, rng: start + int(rng.integers(n))


def _check_env(env: gym.Env) -> gym.spaces.Discrete:
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            "diagnose needs a discrete action space (gymnasium.spaces.Discrete) to branch into "
            f"every action; got {space}"
        )
    if int(space.n) < 2:
        raise ValueError(f"diagnose needs at least 2 actions, got {space}")
    return space


def check_arguments(
    env: gym.Env,
    num_states: int = 200,
    num_rollouts: int = 16,
    alpha: float = 0.01,
    max_steps: int = 1000,
    confidence: float = 0.95,
) -> gym.spaces.Discrete:
    """Check :func:`diagnose`'s arguments before any work; ``ValueError`` naming the first bad
    one. Returns the action space."""
    space = _check_env(env)
    if num_states < 1:
        raise ValueError(f"num_states must be >= 1, got {num_states}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    needed = min_rollouts(int(space.n), alpha)
    if num_rollouts < needed:
        raise ValueError(
            f"num_rollouts={num_rollouts} cannot find any state critical with {int(space.n)} "
            f"actions at alpha={alpha}: the smallest p-value with n rollouts is 2^(1-n), times "
            f"{int(space.n) - 1} comparisons; use num_rollouts >= {needed}"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    return space


def _branch(env: gym.Env) -> gym.Env:
    try:
        return copy.deepcopy(env)
    except Exception as error:
        raise TypeError(
            f"diagnose branches the environment with copy.deepcopy, which failed for {env}: "
            f"{type(error).__name__}: {error}. Make the environment deep-copyable (e.g. define "
            "__deepcopy__, or keep unpicklable resources out of its attributes)."
        ) from error


def _continue(
    env: gym.Env,
    action: int,
    policy: ContinuationPolicy,
    rng: np.random.Generator,
    steps_left: int,
) -> tuple[float, bool]:
    """Take ``action`` in ``env``, then follow ``policy`` to the episode's end or until
    ``steps_left`` steps were taken. Returns ``(undiscounted return, cut at the step budget)``."""
    obs, reward, terminated, truncated, info = env.step(action)
    total = float(reward)
    taken = 1
    while not (terminated or truncated):
        if taken >= steps_left:
            return total, True
        obs, reward, terminated, truncated, info = env.step(policy(obs, info, rng))
        total += float(reward)
        taken += 1
    return total, False


def _rollout_returns(
    env: gym.Env,
    actions: Sequence[int],
    policy: ContinuationPolicy,
    num_rollouts: int,
    steps_left: int,
    seed_key: tuple[int, ...],
) -> tuple[np.ndarray, int]:
    """``G[a, i]`` at the current state of ``env`` (left untouched), shape
    ``(len(actions), num_rollouts)``, and the number of continuations cut at the budget."""
    returns = np.empty((len(actions), num_rollouts))
    cut = 0
    last = len(actions) - 1
    for i in range(num_rollouts):
        base = _branch(env)
        base.unwrapped.np_random = np.random.default_rng((*seed_key, i, 0))
        for k, action in enumerate(actions):
            branch = base if k == last else _branch(base)
            rng = np.random.default_rng((*seed_key, i, 1))
            returns[k, i], was_cut = _continue(branch, action, policy, rng, steps_left)
            cut += was_cut
    return returns, cut


def diagnose(
    env: gym.Env,
    num_states: int = 200,
    num_rollouts: int = 16,
    alpha: float = 0.01,
    seed: int = 0,
    continuation_policy: ContinuationPolicy | None = None,
    progress: bool = False,
    max_steps: int = 1000,
    confidence: float = 0.95,
) -> DiagnosisResult:
    """Estimate the decision density rho of ``env`` by counterfactual branching.

    See the module docstring for the method and its assumptions. ``env`` is reset (with seeds
    derived from ``seed``) and stepped; nothing else about it is changed.

    Args:
        env: a Gymnasium environment with a ``Discrete`` action space that ``copy.deepcopy``
            branches (wrappers such as ``TimeLimit`` are kept and copied with it).
        num_states: minimum number of states to test; episodes are sampled whole, so up to one
            episode more are tested.
        num_rollouts: continuations per action at each state, at least
            :func:`min_rollouts` (``1 + log2((A - 1) / alpha)``); the test's power grows with it
            (see :attr:`DiagnosisResult.mde`).
        alpha: significance level of the per-state test (family-wise over the ``A - 1``
            comparisons), in (0, 1).
        seed: seeds everything: episode resets, the sampling policy and the rollouts.
        continuation_policy: ``(obs, info, rng) -> action``, used both to sample states and to
            continue rollouts; ``None`` is the uniform random policy.
        progress: show a progress bar on stderr (tqdm if installed).
        max_steps: step budget of an episode (a time limit): a sampled episode is cut after
            ``max_steps`` steps and a continuation from step ``t`` after ``max_steps - t`` steps;
            cuts are counted and warned about.
        confidence: level of the confidence interval of rho.

    Returns:
        A :class:`DiagnosisResult`.

    Raises:
        ValueError: for a non-discrete action space or a bad argument.
        TypeError: when ``copy.deepcopy(env)`` fails.
    """
    space = check_arguments(env, num_states, num_rollouts, alpha, max_steps, confidence)
    start_time = time.perf_counter()
    policy = continuation_policy if continuation_policy is not None else _uniform_policy(space)
    actions = [int(space.start) + k for k in range(int(space.n))]

    records: list[StateRecord] = []
    episode_critical: list[int] = []
    episode_lengths: list[int] = []
    episode_returns: list[float] = []
    truncated_episodes = 0
    truncated_rollouts = 0
    variances: list[np.ndarray] = []
    bar = _Progress(num_states, progress)
    try:
        episode = 0
        while len(records) < num_states:
            reset_seed = int(np.random.SeedSequence((seed, episode, 0)).generate_state(1)[0])
            obs, info = env.reset(seed=reset_seed)
            sample_rng = np.random.default_rng((seed, episode, 1))
            step, critical_count, total = 0, 0, 0.0
            done = False
            while not done:
                if step >= max_steps:
                    truncated_episodes += 1
                    break
                returns, cut = _rollout_returns(
                    env, actions, policy, num_rollouts, max_steps - step, (seed, episode, 2, step)
                )
                truncated_rollouts += cut
                outcome = action_dependence_test(returns)
                variances.append(outcome.sd_differences**2)
                annotated = info.get(keys.CRITICAL)
                record = StateRecord(
                    episode=episode,
                    step=step,
                    critical=outcome.p_value <= alpha,
                    p_value=outcome.p_value,
                    mean_returns=tuple(float(x) for x in returns.mean(axis=1)),
                    max_abs_difference=float(np.max(np.abs(outcome.mean_differences))),
                    max_sd_difference=float(np.max(outcome.sd_differences)),
                    identical=not outcome.mean_differences.any()
                    and not outcome.sd_differences.any(),
                    annotated=None if annotated is None else bool(annotated),
                )
                records.append(record)
                critical_count += record.critical
                bar.update()
                obs, reward, terminated, truncated, info = env.step(policy(obs, info, sample_rng))
                total += float(reward)
                step += 1
                done = terminated or truncated
            episode_critical.append(critical_count)
            episode_lengths.append(step)
            episode_returns.append(total)
            episode += 1
    finally:
        bar.close()

    if truncated_episodes or truncated_rollouts:
        warnings.warn(
            f"{truncated_episodes} sampled episodes and {truncated_rollouts} continuations reached "
            f"max_steps={max_steps} and were cut there: rho is that of the environment under a "
            f"time limit of {max_steps} steps",
            RuntimeWarning,
            stacklevel=2,
        )
    crit = np.asarray(episode_critical)
    lengths = np.asarray(episode_lengths)
    keep = lengths > 0  # an episode that ended at reset has no step to test
    (low, high), deff = cluster_wilson_interval(crit[keep], lengths[keep], confidence)
    num_critical = int(crit.sum())
    num_tested = int(lengths.sum())
    all_variances = np.concatenate(variances)
    standardized = minimum_detectable_effect(num_rollouts, len(actions), alpha)
    annotated = [r for r in records if r.annotated is not None]
    agreement = None
    if annotated:
        agreement = Agreement(
            true_positives=sum(r.critical and r.annotated for r in annotated),
            false_positives=sum(r.critical and not r.annotated for r in annotated),
            false_negatives=sum(not r.critical and r.annotated for r in annotated),
            true_negatives=sum(not r.critical and not r.annotated for r in annotated),
        )
    spec = getattr(env, "spec", None)
    return DiagnosisResult(
        rho=num_critical / num_tested,
        ci=(low, high),
        ci_method="Wilson score interval on the effective sample size n/deff "
        "(design effect from the episode-clustered variance of the ratio estimator)",
        design_effect=deff,
        confidence=confidence,
        num_states=num_tested,
        num_episodes=int(keep.sum()),
        num_critical=num_critical,
        num_inconclusive=sum(not r.critical and not r.identical for r in records),
        episode_mean_rho=float(np.mean(crit[keep] / lengths[keep])),
        return_variance=float(np.var(episode_returns, ddof=1)) if episode > 1 else math.nan,
        mde=MinimumDetectableEffect(
            standardized=standardized,
            return_units=standardized * math.sqrt(float(all_variances.mean())),
        ),
        agreement=agreement,
        records=records,
        num_truncated_episodes=truncated_episodes,
        num_truncated_rollouts=truncated_rollouts,
        elapsed_seconds=time.perf_counter() - start_time,
        settings={
            "env": spec.id if spec is not None else type(env.unwrapped).__name__,
            "env_kwargs": dict(spec.kwargs) if spec is not None else {},
            "num_states": num_states,
            "num_rollouts": num_rollouts,
            "alpha": alpha,
            "seed": seed,
            "max_steps": max_steps,
            "confidence": confidence,
            "num_actions": len(actions),
            "policy": "uniform random"
            if continuation_policy is None
            else getattr(continuation_policy, "__name__", repr(continuation_policy)),
            "test": f"two-sided paired t-test of each action against action {actions[0]}, "
            f"Bonferroni over {len(actions) - 1} comparisons, common random numbers",
        },
    )


# -------------------------------------------------------------------------------- reading
def reading(
    result: DiagnosisResult, high_rho: float = 0.5, inconclusive_warning: float = 0.1
) -> str:
    """The practitioner's reading of a diagnosis, as a paragraph of text.

    It rests on the dilution model: a trajectory-level estimator puts the return's noise
    ``Var(R)`` on every step; a turn-level critic puts the advantage's noise only on the critical
    steps (``rho`` of them, about ``Var(R)`` each) plus its own error ``sigma^2`` on every step,
    so ``SNR^2(turn) / SNR^2(trajectory) ~ 1 / (rho + sigma^2 / Var(R))``. A perfect critic gains
    ``rho^(-1/2)`` in SNR; a critic with ``sigma^2 / Var(R) < rho`` keeps at least half of that
    gain in ``SNR^2`` (a gain of at least ``(2 rho)^(-1/2)``); at ``sigma^2 / Var(R) = 1 - rho``
    the two break even. This is a rule of thumb, not a guarantee for a particular estimator.

    Args:
        result: a :class:`DiagnosisResult`.
        high_rho: rho at or above which trajectory-level estimators are said to suffice (a perfect
            critic would gain at most ``high_rho^(-1/2)`` in SNR).
        inconclusive_warning: the reading warns that rho may be underestimated when more states
            were found routine only for lack of significance
            (:attr:`DiagnosisResult.num_inconclusive`) than this fraction of the critical ones
            (of one, when none is critical).
    """
    rho, (low, high) = result.rho, result.ci
    level = f"{result.confidence:.0%}"
    detect = (
        f"States where the action changes the expected return by less than about "
        f"{result.mde.standardized:.3g} standard deviations of the paired return differences"
        f"{_mde_units(result)} count as routine here; more rollouts detect smaller effects."
    )
    if result.num_inconclusive > inconclusive_warning * max(result.num_critical, 1):
        share = result.num_inconclusive / result.num_states
        detect += (
            f" Caution: at {result.num_inconclusive} states ({share:.1%} of those tested) the "
            f"action changed the return in some rollouts without a significant mean effect; if "
            f"those effects are real, rho is up to {result.rho_upper:.3g} (the share of steps "
            f"where the action changed the return at all). Rerun with more rollouts, or with a "
            f"continuation policy closer to the one being trained, to tell."
        )
    if rho == 0.0:
        return (
            f"No tested step's action measurably changed the return (rho = 0, {level} CI "
            f"[{low:.3g}, {high:.3g}]). Either the environment is routine under this policy, or "
            f"its effects are below what {result.settings['num_rollouts']} rollouts detect. "
            + detect
        )
    gain = rho**-0.5
    if rho >= high_rho:
        sure = "" if low >= high_rho else f" (the CI reaches down to {low:.3g})"
        return (
            f"High decision density: rho = {rho:.3g}{sure}, about 1 step in {1 / rho:.3g} "
            f"decides the return. Trajectory-level estimators (Monte-Carlo returns, GRPO-style "
            f"group advantages) suffice: a perfect turn-level critic would raise the gradient SNR "
            f"by only about rho^(-1/2) = {gain:.2g}x, which a learned critic's error eats into. "
            + detect
        )
    var_r = result.return_variance
    budget = (
        f" (with Var(R) = {var_r:.3g} over the sampled episodes, sigma^2 < {rho * var_r:.3g} "
        f"in squared return units)"
        if math.isfinite(var_r) and var_r > 0
        else ""
    )
    return (
        f"Low decision density: rho = {rho:.3g} ({level} CI [{low:.3g}, {high:.3g}]), about 1 "
        f"step in {1 / rho:.3g} decides the return, so trajectory-level advantages dilute the "
        f"signal: a perfect turn-level critic would raise the gradient SNR by about "
        f"rho^(-1/2) = {gain:.2g}x (between {high**-0.5:.2g}x and "
        f"{(low**-0.5 if low > 0 else math.inf):.2g}x over the CI). A learned turn-level critic "
        f"pays if its per-step error variance is small against the return's: a critic with "
        f"sigma^2/Var(R) < rho = {rho:.3g}{budget} keeps at least half of that gain in SNR^2 "
        f"(SNR at least {(2 * rho) ** -0.5:.2g}x the trajectory-level one); it breaks even "
        f"near sigma^2/Var(R) = 1 - rho = {1 - rho:.3g}, above which trajectory-level "
        f"estimators are better. " + detect
    )


def _mde_units(result: DiagnosisResult) -> str:
    if result.mde.return_units == 0.0:
        return " (every paired difference was constant here, so any effect was detectable)"
    return f" (about {result.mde.return_units:.2g} in return units)"


def format_result(result: DiagnosisResult) -> str:
    """A text report: the estimate, the settings, the agreement table and the reading."""
    s = result.settings
    kwargs = json.dumps(s["env_kwargs"]) if s["env_kwargs"] else ""
    low, high = result.ci
    identical = result.num_states - result.num_critical - result.num_inconclusive
    ci_note = f"cluster-robust Wilson, design effect {result.design_effect:.2f}"
    if result.num_episodes < 10:
        ci_note += f" (only {result.num_episodes} episodes: the clustering is poorly estimated)"
    rows = [
        ("rho (critical share of steps)", f"{result.rho:.4f}   {result.confidence:.0%} CI "
         f"[{low:.4f}, {high:.4f}]"),
        ("share routine", f"{result.share_routine:.4f}"),
        ("rho, any difference seen", f"{result.rho_upper:.4f} (upper bracket: not-significant "
         "states counted critical)"),
        ("per-episode mean rho", f"{result.episode_mean_rho:.4f}"),
        ("states tested", f"{result.num_states} (steps of {result.num_episodes} episodes under "
         f"the {s['policy']} policy), {result.num_critical} critical"),
        ("routine states", f"{identical} with identical branches, {result.num_inconclusive} "
         "not significant"),
        ("rollouts", f"{s['num_rollouts']} per action, {s['num_actions']} actions, common "
         "random numbers"),
        ("test", f"paired t-test vs the first action, Bonferroni over {s['num_actions'] - 1}, "
         f"alpha = {s['alpha']}"),
        (f"min. detectable effect ({MDE_POWER:.0%})", f"{result.mde.standardized:.3g} sd of "
         f"paired differences, ~{result.mde.return_units:.3g} in return units"),
        ("confidence interval", ci_note),
        ("Var(R) of sampled episodes", f"{result.return_variance:.4g}"),
        (f"cut at max_steps={s['max_steps']}", f"{result.num_truncated_episodes} episodes, "
         f"{result.num_truncated_rollouts} continuations"),
        ("seed, time", f"{s['seed']}, {result.elapsed_seconds:.1f} s"),
    ]  # fmt: skip
    lines = [f"Decision-density diagnosis: {s['env']} {kwargs}".rstrip()]
    lines += [f"  {label:<31}{value}" for label, value in rows]
    a = result.agreement
    if a is not None:
        lines += [
            "",
            f'Agreement with info["critical"] ({a.num_states} annotated states)',
            "                      annotated critical   annotated routine",
            f"  detected critical   {a.true_positives:>18}   {a.false_positives:>17}",
            f"  detected routine    {a.false_negatives:>18}   {a.true_negatives:>17}",
            f"  accuracy {a.accuracy:.4f}, annotated rho {a.annotated_rho:.4f}, "
            f"detection rate {a.true_positive_rate:.3f}, false-positive rate "
            f"{a.false_positive_rate:.3f}",
        ]
    lines += ["", "Reading", *_wrap(reading(result), 98, "  ")]
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)


# ------------------------------------------------------------------------------------ CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m routine_envs diagnose``."""
    parser.add_argument("env_id", help="a registered Gymnasium id, e.g. DilutedDoors-v0")
    parser.add_argument(
        "--kwargs", default="{}", help="keyword arguments of gym.make, as a JSON object"
    )
    parser.add_argument("--states", type=int, default=200, help="minimum number of states tested")
    parser.add_argument("--rollouts", type=int, default=16, help="continuations per action")
    parser.add_argument("--alpha", type=float, default=0.01, help="significance level per state")
    parser.add_argument("--seed", type=int, default=0, help="seeds resets, policy and rollouts")
    parser.add_argument(
        "--max-steps", type=int, default=1000, help="step budget of an episode (a time limit)"
    )
    parser.add_argument("--confidence", type=float, default=0.95, help="level of the CI of rho")
    parser.add_argument("--json", metavar="PATH", help="also write the result (with records)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run ``python -m routine_envs diagnose`` with parsed ``args``; the exit status."""
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as error:
        raise SystemExit(f"--kwargs must be a JSON object: {error}") from None
    if not isinstance(kwargs, dict):
        raise SystemExit(f"--kwargs must be a JSON object, got {args.kwargs!r}")
    try:
        env = gym.make(args.env_id, **kwargs)
    except (gym.error.Error, TypeError, ValueError) as error:
        raise SystemExit(f"cannot make {args.env_id} with {kwargs}: {error}") from None
    try:  # refuse bad settings and unbranchable envs with a message, not a traceback
        check_arguments(
            env, args.states, args.rollouts, args.alpha, args.max_steps, args.confidence
        )
        env.reset(seed=args.seed)
        _branch(env)
    except (TypeError, ValueError) as error:
        env.close()
        raise SystemExit(f"error: {error}") from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = diagnose(
                env,
                num_states=args.states,
                num_rollouts=args.rollouts,
                alpha=args.alpha,
                seed=args.seed,
                progress=not args.no_progress,
                max_steps=args.max_steps,
                confidence=args.confidence,
            )
        finally:
            env.close()
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    print(format_result(result))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result.to_dict(), handle, indent=1, default=repr)
    return 0
