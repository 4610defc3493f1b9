"""The signal-dilution lab: gradient signal-to-noise ratio of any advantage estimator.

For a tabular softmax policy and an estimator of :mod:`routine_envs.credit`, draw many
independent groups of episodes, form each group's policy-gradient estimate

    g = (1 / group_size) * sum over episodes, steps of  A_t * grad log pi(a_t | s_t),

and report ``SNR = ||E g|| / sqrt(E ||g - E g||^2)`` (the amplitude form; ``snr_power`` is its
square) for a batch of one group; a batch of ``n`` groups has ``sqrt(n)`` times that SNR, so
ratios between estimators do not depend on the batch size. ``||E g||^2`` is estimated without
the plug-in bias (``||mean||^2 - tr(Cov) / n``), and the confidence interval is a delete-one-block
jackknife over blocks of groups. The variance is split into the part from critical steps, the
part from routine steps (using the annotations) and their cross term.

Episodes are sampled straight from the environment's exact tabular model
(:class:`routine_envs.sampler.ModelSampler`), vectorized over thousands of episodes at once, so a
sweep of 10^5 episodes per setting takes seconds.

For Diluted Doors under the uniform policy the SNRs have a closed form
(:func:`uniform_doors_snr`), derived in ``docs/reproducing.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routine_envs import credit
from routine_envs.episodes import Declared, EpisodeBatch
from routine_envs.sampler import ModelSampler

__all__ = [
    "ModelSampler",  # re-exported: it lives in routine_envs.sampler
    "SNRComparison",
    "SNRResult",
    "TabularSoftmax",
    "exact_policy_gradient",
    "fit_loglog",
    "floor_rows",
    "measure_snr",
    "moment_statistics",
    "uniform_doors_snr",
]


# ----------------------------------------------------------------------------- the policy
@dataclass
class TabularSoftmax:
    """A softmax policy with one logit vector per *row*; each state uses the row
    ``row_of_state[state_id]`` (one row per state, or rows shared, e.g. by all states of a floor).

    Attributes:
        logits: shape ``(num_rows, num_actions)``.
        row_of_state: shape ``(num_states,)``, int.
    """

    logits: np.ndarray
    row_of_state: np.ndarray

    def __post_init__(self) -> None:
        self.logits = np.asarray(self.logits, dtype=np.float64)
        self.row_of_state = np.asarray(self.row_of_state, dtype=np.int64)
        if self.logits.ndim != 2:
            raise ValueError(f"logits must be (num_rows, num_actions), got {self.logits.shape}")
        if self.row_of_state.size and (
            self.row_of_state.min() < 0 or self.row_of_state.max() >= len(self.logits)
        ):
            raise ValueError("row_of_state must index rows of logits")

    @classmethod
    def per_state(
        cls, num_states: int, num_actions: int, logits: np.ndarray | None = None
    ) -> TabularSoftmax:
        """One logit vector per ``state_id`` (zeros: the uniform policy)."""
        table = np.zeros((num_states, num_actions)) if logits is None else logits
        return cls(table, np.arange(num_states))

    @classmethod
    def shared(
        cls, row_of_state: np.ndarray, num_actions: int, logits: np.ndarray | None = None
    ) -> TabularSoftmax:
        """Rows shared by groups of states (``row_of_state``); zeros: the uniform policy."""
        rows = int(np.max(row_of_state)) + 1
        return cls(np.zeros((rows, num_actions)) if logits is None else logits, row_of_state)

    @property
    def num_params(self) -> int:
        return self.logits.size

    def probs(self) -> np.ndarray:
        """Action probabilities of every state, shape ``(num_states, num_actions)``."""
        z = self.logits - self.logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        return p[self.row_of_state]


def floor_rows(env: Any) -> np.ndarray:
    """For Diluted Doors: the floor of every ``state_id`` (terminal states: the last floor), so
    :meth:`TabularSoftmax.shared` gives the policy shared by all states of a floor."""
    base = env.unwrapped
    floors = np.array([base.describe_state(s).floor for s in range(base.num_states)])
    return np.minimum(floors, base.num_floors - 1)


# ------------------------------------------------------------------------ gradient moments
@dataclass
class _Moments:
    """Block sums of per-group gradients: totals, critical part, routine part."""

    num_blocks: int
    dim: int
    n: np.ndarray = field(init=False)
    s_all: np.ndarray = field(init=False)
    s_crit: np.ndarray = field(init=False)
    q_all: np.ndarray = field(init=False)
    q_crit: np.ndarray = field(init=False)
    q_rout: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.n = np.zeros(self.num_blocks)
        self.s_all = np.zeros((self.num_blocks, self.dim))
        self.s_crit = np.zeros((self.num_blocks, self.dim))
        self.q_all = np.zeros(self.num_blocks)
        self.q_crit = np.zeros(self.num_blocks)
        self.q_rout = np.zeros(self.num_blocks)

    def add(
        self,
        block: int,
        s_all: np.ndarray,
        s_crit: np.ndarray,
        q_all: float,
        q_crit: float,
        q_rout: float,
        count: int,
    ) -> None:
        self.n[block] += count
        self.s_all[block] += s_all
        self.s_crit[block] += s_crit
        self.q_all[block] += q_all
        self.q_crit[block] += q_crit
        self.q_rout[block] += q_rout


def moment_statistics(
    n: float,
    s_all: np.ndarray,
    s_crit: np.ndarray,
    q_all: float,
    q_crit: float,
    q_rout: float,
    metric: np.ndarray | None = None,
    target: np.ndarray | None = None,
) -> dict[str, float]:
    """Moments from sums over ``n`` groups: unbiased ``||E g||^2``, variance traces, SNR^2.

    ``metric`` (``M = J J^T``) measures norms in another parameter space ``theta = J^T x``
    (a network's), the sums of squares ``q_*`` being given in that metric too. With the exact
    gradient ``target`` (``grad J``) also the error of ``E g`` against it: ``relative_bias``
    ``||E g - grad J|| / ||grad J||`` (its square without the plug-in bias ``tr Cov / n``;
    0 where that is negative; ``relative_bias_sq`` is the signed square), ``cosine`` of
    ``E g`` and ``grad J`` (``E g . grad J`` over ``sqrt(signal) ||grad J||``; not clipped, so it
    can exceed 1: see :attr:`SNRResult.cosine_raw`), ``mse`` ``E ||g - grad J||^2``, and the
    ``gradient_snr``: ``||grad J|| / sqrt(tr Cov g)``, the SNR of an unbiased estimator with
    this noise (only the variance is estimated: precise from few episodes where
    ``||E g||^2`` would drown in its own noise)."""

    def dot(x: np.ndarray, y: np.ndarray) -> float:
        return float(x @ y) if metric is None else float(x @ metric @ y)

    def sq(x: np.ndarray) -> float:
        return dot(x, x)

    mean, mean_c = s_all / n, s_crit / n
    mean_r = mean - mean_c
    var = (q_all - n * sq(mean)) / (n - 1)
    var_c = (q_crit - n * sq(mean_c)) / (n - 1)
    var_r = (q_rout - n * sq(mean_r)) / (n - 1)
    signal = sq(mean) - var / n
    errors = {}
    if target is not None:
        norm2 = sq(target)
        bias2 = sq(mean - target) - var / n
        errors = {
            "relative_bias_sq": bias2 / norm2 if norm2 > 0 else math.inf,
            "relative_bias": math.sqrt(max(bias2, 0.0) / norm2) if norm2 > 0 else math.inf,
            "cosine": dot(mean, target) / math.sqrt(signal * norm2)
            if signal > 0 and norm2 > 0
            else 0.0,
            "mse": q_all / n - 2 * dot(mean, target) + norm2,
            "gradient_norm": math.sqrt(norm2),
            "gradient_snr": math.sqrt(norm2 / var) if var > 0 else math.inf,
        }
    return {
        **errors,
        "signal": signal,
        "variance": var,
        "critical_variance": var_c,
        "routine_variance": var_r,
        "cross_variance": var - var_c - var_r,
        "snr_power": signal / var if var > 0 else math.inf,
    }


@dataclass(frozen=True)
class SNRResult:
    """Gradient SNR of one estimator, for a batch of one group of ``group_size`` episodes.

    Attributes:
        snr: amplitude ``||E g|| / sqrt(tr Cov g)`` (0 where the bias-corrected signal is <= 0).
        snr_low, snr_high: 95% jackknife interval of ``snr``.
        snr_power: ``snr ** 2`` (the bias-corrected ``||E g||^2 / tr Cov g``).
        signal: bias-corrected ``||E g||^2``.
        variance: ``tr Cov g``; ``critical_variance``, ``routine_variance``: the traces of the
            covariances of the parts of ``g`` from critical and from routine steps;
            ``cross_variance``: the rest (twice their cross-covariance trace).
        num_groups, group_size: the sample.
        relative_bias, cosine, mse (each with ``_low``/``_high``, 95% jackknife intervals):
            estimates of the error of ``E g`` against the exact policy gradient ``grad J`` (see
            :func:`moment_statistics`; ``mse`` for a batch of one group); ``gradient_norm`` is
            ``||grad J||``. ``None`` where the exact gradient was not computed. ``cosine`` and
            its interval are clipped to ``[-1, 1]``, the range of a cosine.
        gradient_snr, gradient_snr_low, gradient_snr_high: ``||grad J|| / sqrt(tr Cov g)`` and
            its 95% jackknife interval: the SNR of an unbiased estimator with this noise (equal
            to ``snr`` where ``E g = grad J``; an estimator biased by a positive scale ``c`` has
            ``c`` times it), measured far more precisely from few episodes than ``snr``, whose
            signal ``||E g||^2`` is estimated from the same episodes. ``None`` where the exact
            gradient was not computed.
        cosine_raw, cosine_raw_low, cosine_raw_high: the cosine estimate and its interval before
            clipping. Its denominator holds ``sqrt`` of the bias-corrected estimate of
            ``||E g||^2`` (``||mean g||^2 - tr Cov g / n``), smaller than the plug-in
            ``||mean g||^2``, so Cauchy-Schwarz does not bound the ratio: where ``||E g||^2`` is
            small against ``tr Cov g / n`` (a low SNR, few groups), it can exceed 1.
    """

    estimator: str
    snr: float
    snr_low: float
    snr_high: float
    snr_power: float
    signal: float
    variance: float
    critical_variance: float
    routine_variance: float
    cross_variance: float
    num_groups: int
    group_size: int
    relative_bias: float | None = None
    relative_bias_low: float | None = None
    relative_bias_high: float | None = None
    cosine: float | None = None
    cosine_low: float | None = None
    cosine_high: float | None = None
    cosine_raw: float | None = None
    cosine_raw_low: float | None = None
    cosine_raw_high: float | None = None
    mse: float | None = None
    mse_low: float | None = None
    mse_high: float | None = None
    gradient_norm: float | None = None
    gradient_snr: float | None = None
    gradient_snr_low: float | None = None
    gradient_snr_high: float | None = None

    def as_row(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _jackknife(values: np.ndarray, full: float) -> tuple[float, float]:
    """95% interval from delete-one-block values (normal approximation); undefined (NaN) where
    a block's value is not finite (an infinite SNR: a gradient without variance), as the
    arithmetic would give, without its warning."""
    if not np.all(np.isfinite(values)):
        return math.nan, math.nan
    j = len(values)
    se = math.sqrt((j - 1) / j * np.sum((values - values.mean()) ** 2))
    return full - 1.96 * se, full + 1.96 * se


def _amplitude(power: float) -> float:
    return math.sqrt(power) if power > 0 else 0.0


@dataclass(frozen=True)
class SNRComparison:
    """SNRs of several estimators measured on the same episodes, and their ratios."""

    results: dict[str, SNRResult]
    ratios: dict[tuple[str, str], tuple[float, float, float]]
    """``(a, b) -> (snr_a / snr_b, low, high)``, 95% jackknife interval."""
    gradient_ratios: dict[tuple[str, str], tuple[float, float, float]] = field(default_factory=dict)
    """``(a, b) -> (gradient_snr_a / gradient_snr_b, low, high)``: ``sqrt(tr Cov g_b / tr Cov
    g_a)``, the SNR ratio of two estimators with a common signal, with its jackknife interval,
    where the exact gradient was computed (:attr:`SNRResult.gradient_snr`)."""


class _BatchScores:
    """The score vectors ``e_{a_t} - pi(s_t)`` of a batch, laid out by (group, row) block, shared
    by every estimator measured on the batch.

    Steps of one group that share a row are added up (one sort of the steps), so the cost is
    linear in the steps and no ``(groups, params)`` array is formed."""

    def __init__(
        self, batch: EpisodeBatch, probs: np.ndarray, policy: TabularSoftmax, group_size: int
    ) -> None:
        self.a_count = probs.shape[1]
        self.num_rows = len(policy.logits)
        self.dim = policy.num_params
        self.group_size = group_size
        rows = policy.row_of_state[batch.state_ids]
        group = np.repeat(batch.group_index(), batch.lengths)
        self.keys, inverse = np.unique(group * self.num_rows + rows, return_inverse=True)
        self.inverse = inverse.reshape(-1)
        score = -probs[batch.state_ids]
        score[np.arange(len(score)), batch.actions] += 1.0
        self.score = score  # (N, A)
        self.critical = np.flatnonzero(batch.critical)
        self.param = (
            (self.keys % self.num_rows)[:, None] * self.a_count + np.arange(self.a_count)
        ).ravel()

    def _per_key(self, steps: np.ndarray | slice, weights: np.ndarray) -> np.ndarray:
        flat = (self.inverse[steps][:, None] * self.a_count + np.arange(self.a_count)).ravel()
        out = np.bincount(
            flat,
            weights=(self.score[steps] * weights[:, None]).ravel(),
            minlength=len(self.keys) * self.a_count,
        )
        return out.reshape(len(self.keys), self.a_count)

    def moments(
        self, advantages: np.ndarray, metric: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, float, float, float]:
        """Sums over the groups of ``g_k = sum_t A_t (e_{a_t} - pi(s_t)) / group_size`` (at row
        ``row(s_t)``) and of its critical part, and the sums of ``||g_k||^2``,
        ``||g_k^crit||^2`` and ``||g_k^routine||^2`` (in ``metric`` when given)."""
        weights = advantages / self.group_size
        entries = self._per_key(slice(None), weights)
        crit = self._per_key(self.critical, weights[self.critical])
        rout = entries - crit
        s_all = np.bincount(self.param, weights=entries.ravel(), minlength=self.dim)
        s_crit = np.bincount(self.param, weights=crit.ravel(), minlength=self.dim)
        if metric is not None:  # ||g_k||_M^2 needs each group's dense vector
            q_all, q_crit, q_rout = (self._metric_norms(e, metric) for e in (entries, crit, rout))
            return s_all, s_crit, q_all, q_crit, q_rout
        # squared norms add over disjoint (group, row) blocks: sum_k ||g_k||^2 = sum of squares
        return (
            s_all,
            s_crit,
            float(np.sum(entries**2)),
            float(np.sum(crit**2)),
            float(np.sum(rout**2)),
        )

    def _metric_norms(self, entries: np.ndarray, metric: np.ndarray) -> float:
        """``sum_k g_k^T M g_k`` over the groups, from the (group, row) block entries."""
        groups = self.keys // self.num_rows
        dense = np.zeros((int(groups.max()) + 1, self.dim))
        np.add.at(dense, (np.repeat(groups, self.a_count), self.param), entries.ravel())
        return float(np.einsum("ij,ij->", dense @ metric, dense))


SAMPLER_SOURCE = "the SNR lab (episodes sampled from the exact model, no live env snapshots)"


def exact_policy_gradient(env: Any, policy: TabularSoftmax) -> np.ndarray:
    """The exact gradient of ``J = E[R]`` (undiscounted) with respect to ``policy``'s logits,
    shape ``(policy.num_params,)`` (row-major ``(row, action)``): for each state
    ``d(s) pi(a|s) A^pi(s, a)`` (``d`` the expected visits per episode, ``A^pi`` the exact
    advantage from the oracle), added up over the states that share a row."""
    from routine_envs.oracle import occupancy

    base = env.unwrapped
    probs = policy.probs()
    visits = occupancy(base.model(), probs)
    per_state = visits[:, None] * probs * base.oracle(probs).advantage
    out = np.zeros_like(policy.logits)
    np.add.at(out, policy.row_of_state, per_state)
    return out.ravel()


def _advantages(estimator: Declared, batch: EpisodeBatch) -> np.ndarray:
    """The estimator's advantages on ``batch``, calling it on one group at a time unless it
    declares ``group_independent`` (so pooling over its input cannot inflate its SNR), on the
    batch as it may see it (its :class:`~routine_envs.episodes.Declared` record calls it through
    :func:`routine_envs.credit.batch_for`: the privileged fields it declares only)."""
    if estimator.group_independent:
        return estimator(batch).advantages
    seen = credit.batch_for(estimator, batch)  # once: each group of it has nothing more to hide
    return np.concatenate([estimator(group).advantages for group in seen.split_groups()])


def measure_snr(
    env: Any,
    policy: TabularSoftmax,
    estimators: Mapping[str, credit.AdvantageEstimator | Callable[..., Any]],
    num_groups: int,
    group_size: int = 1,
    seed: int = 0,
    chunk_groups: int = 4096,
    num_blocks: int = 20,
    sampler: ModelSampler | None = None,
    progress: Callable[[int], None] | None = None,
    metric: np.ndarray | None = None,
    exact_gradient: bool | np.ndarray = True,
    values: np.ndarray | None = None,
) -> SNRComparison:
    """Gradient SNR (and, against the exact gradient, bias, cosine and MSE) of each estimator
    on the same ``num_groups`` groups of episodes.

    A batch is one group: an estimator that does not declare ``group_independent`` is called
    on one group at a time (see :class:`~routine_envs.credit.AdvantageEstimator`); chunking
    is then invisible to it.

    Args:
        env: an environment of the suite (its exact model is sampled).
        policy: the tabular softmax policy whose gradient is estimated.
        estimators: name -> estimator (an :class:`~routine_envs.credit.AdvantageEstimator`, or a
            function ``(sampler, probs) -> estimator`` for estimators that need the policy,
            like the oracle or the Monte-Carlo critic).
        num_groups: independent groups (one group = one batch).
        group_size: episodes per group (estimators with group baselines need >= 2).
        seed: seeds the sampling (and estimators built here).
        chunk_groups: groups sampled at once (memory ~ their steps).
        num_blocks: jackknife blocks.
        sampler: a :class:`ModelSampler` to reuse (built from ``env`` otherwise).
        progress: called with the number of groups done after each chunk.
        metric: ``M = J J^T`` with ``J`` the Jacobian, shape ``(policy.num_params, P)``, of a
            network's logits (flattened ``(state, action)``) with respect to its ``P``
            parameters: SNRs are then those of the network's gradient ``J^T g`` (``policy``
            must then be per state, with the network's log-probabilities as logits).
        exact_gradient: ``True`` computes ``grad J`` (:func:`exact_policy_gradient`) for the
            bias columns, ``False`` skips them, an array ``(policy.num_params,)`` is used as is.
        values: a value per ``state_id`` (e.g. the exact ``V^pi``), shape ``(num_states,)``,
            given to the estimators as the batch's ``values`` (for ``gae``).

    Raises:
        ValueError: too few groups for the blocks, or an estimator that requires a batch field
            the lab cannot provide (named).
    """
    if num_groups < 2 * num_blocks:
        raise ValueError(
            f"num_groups must be >= 2 * num_blocks ({2 * num_blocks}), got {num_groups}"
        )
    sampler = sampler or ModelSampler(env)
    rng = np.random.default_rng(seed)
    probs = policy.probs()
    built = {  # requires (and the rest) read once, here: every later use is of the record
        name: credit.declare(est if hasattr(est, "requires") else est(sampler, probs))
        for name, est in estimators.items()
    }
    provided = sampler.PROVIDES | ({"values"} if values is not None else set())
    for estimator in built.values():
        credit.check_provides(estimator, frozenset(provided), SAMPLER_SOURCE)
    with_observations = any("observations" in est.requires for est in built.values())
    if isinstance(exact_gradient, bool):
        target = exact_policy_gradient(env, policy) if exact_gradient else None
    else:
        target = np.asarray(exact_gradient, dtype=np.float64)
        if target.shape != (policy.num_params,):
            raise ValueError(
                f"exact_gradient must have shape ({policy.num_params},), got {target.shape}"
            )
    moments = {name: _Moments(num_blocks, policy.num_params) for name in built}
    block_edges = np.linspace(0, num_groups, num_blocks + 1).astype(int)
    done = 0
    while done < num_groups:
        block = int(np.searchsorted(block_edges, done, side="right") - 1)
        count = min(chunk_groups, num_groups - done, block_edges[block + 1] - done)
        batch = sampler.sample(probs, count, group_size, rng, observations=with_observations)
        if values is not None:
            batch = dataclasses.replace(batch, values=np.asarray(values)[batch.state_ids])
        scores = _BatchScores(batch, probs, policy, group_size)
        for name, estimator in built.items():
            adv = _advantages(estimator, batch)
            moments[name].add(block, *scores.moments(adv, metric), count)
        done += count
        if progress is not None:
            progress(done)

    results, leave_out, leave_out_noise = {}, {}, {}
    for name, m in moments.items():

        def stats(keep: np.ndarray, m: _Moments = m) -> dict[str, float]:
            return moment_statistics(
                m.n[keep].sum(),
                m.s_all[keep].sum(0),
                m.s_crit[keep].sum(0),
                m.q_all[keep].sum(),
                m.q_crit[keep].sum(),
                m.q_rout[keep].sum(),
                metric,
                target,
            )

        full = stats(np.ones(num_blocks, dtype=bool))
        drops = [stats(np.arange(num_blocks) != b) for b in range(num_blocks)]
        powers = np.array([d["snr_power"] for d in drops])
        leave_out[name] = (full["snr_power"], powers)
        amp = _amplitude(full["snr_power"])
        low, high = _jackknife(np.sqrt(np.clip(powers, 0, None)), amp)
        errors: dict[str, float | None] = {}
        if target is not None:
            for key in ("cosine", "mse"):
                k_low, k_high = _jackknife(np.array([d[key] for d in drops]), full[key])
                errors.update({key: full[key], f"{key}_low": k_low, f"{key}_high": k_high})
            # a cosine lies in [-1, 1]; the bias-corrected estimate need not (see SNRResult)
            for suffix in ("", "_low", "_high"):
                raw = errors[f"cosine{suffix}"]
                errors[f"cosine_raw{suffix}"] = raw
                errors[f"cosine{suffix}"] = min(1.0, max(-1.0, raw))
            # the interval of the signed, unbiased squared bias, mapped to its square root
            sq_low, sq_high = _jackknife(
                np.array([d["relative_bias_sq"] for d in drops]), full["relative_bias_sq"]
            )
            noise = np.array([d["gradient_snr"] for d in drops])
            g_low, g_high = _jackknife(noise, full["gradient_snr"])
            leave_out_noise[name] = (full["gradient_snr"], noise)
            errors.update(
                relative_bias=full["relative_bias"],
                relative_bias_low=math.sqrt(max(sq_low, 0.0)),
                relative_bias_high=math.sqrt(max(sq_high, 0.0)),
                gradient_norm=full["gradient_norm"],
                gradient_snr=full["gradient_snr"],
                gradient_snr_low=max(g_low, 0.0),
                gradient_snr_high=g_high,
            )
        results[name] = SNRResult(
            estimator=name,
            snr=amp,
            snr_low=max(low, 0.0),
            snr_high=high,
            snr_power=full["snr_power"],
            signal=full["signal"],
            variance=full["variance"],
            critical_variance=full["critical_variance"],
            routine_variance=full["routine_variance"],
            cross_variance=full["cross_variance"],
            num_groups=num_groups,
            group_size=group_size,
            **errors,
        )
    ratios = {}
    names = list(results)
    for a in names:
        for b in names:
            if a == b or results[b].snr == 0:
                continue
            full_ratio = results[a].snr / results[b].snr
            drops = np.sqrt(np.clip(leave_out[a][1], 0, None)) / np.sqrt(
                np.clip(leave_out[b][1], 1e-300, None)
            )
            ratios[(a, b)] = (full_ratio, *_jackknife(drops, full_ratio))
    gradient_ratios = {}
    for a, (full_a, drops_a) in leave_out_noise.items():
        for b, (full_b, drops_b) in leave_out_noise.items():
            if a != b and np.isfinite(full_b) and np.all(np.isfinite(drops_b)):
                full_ratio = full_a / full_b
                gradient_ratios[(a, b)] = (full_ratio, *_jackknife(drops_a / drops_b, full_ratio))
    return SNRComparison(results, ratios, gradient_ratios)


# ------------------------------------------------------------------------- closed forms
def uniform_doors_snr(
    num_floors: int, num_doors: int, routine_length: int, sigma: float = 0.0
) -> dict[str, float]:
    """Exact per-episode power SNRs on Diluted Doors (``reward="success"``, fixed routine length
    ``L``) under the uniform policy, for either parametrization (per state or per floor).

    With ``q = 1 / num_doors``, ``F = num_floors``, ``T = F (1 + L)``:

    - ``||grad J||^2 = F q^(2F) (1 - q)``;
    - perfect critic (``A^pi``), plus ``sigma * N(0, 1)`` noise per step:
      ``tr Cov = (1 - q) q^F (1 - (F + 1) q^F) + sigma^2 T (1 - q)``;
    - trajectory advantage with the exact baseline ``R - J``:
      ``tr Cov = (1 - q) (T q^F (1 - q^F) - F q^(2F))``.

    Returns ``snr_oracle``, ``snr_trajectory`` (amplitudes), their ``ratio``, and the pieces.
    The derivation is in ``docs/reproducing.md``.
    """
    q, f = 1.0 / num_doors, num_floors
    t = f * (1 + routine_length)
    qf = q**f
    signal = f * qf * qf * (1 - q)
    var_oracle = (1 - q) * qf * (1 - (f + 1) * qf) + sigma**2 * t * (1 - q)
    var_traj = (1 - q) * (t * qf * (1 - qf) - f * qf * qf)
    snr_o, snr_t = math.sqrt(signal / var_oracle), math.sqrt(signal / var_traj)
    return {
        "snr_oracle": snr_o,
        "snr_trajectory": snr_t,
        "ratio": snr_o / snr_t,
        "signal": signal,
        "variance_oracle": var_oracle,
        "variance_trajectory": var_traj,
        "return_variance": qf * (1 - qf),
        "rho": 1 / (1 + routine_length),
    }


def fit_loglog(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least-squares line through ``(log x, log y)``: ``(slope, intercept, R^2)``."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    slope, intercept = np.polyfit(lx, ly, 1)
    resid = ly - (slope * lx + intercept)
    r2 = 1 - resid @ resid / np.sum((ly - ly.mean()) ** 2)
    return float(slope), float(intercept), float(r2)
