"""Scoring a detector against the truth: ROC AUC, average precision and the implied rho.

For steps with scores ``s_t``, labels ``l_t`` (the detector's operating threshold) and the
annotations ``c_t = info["critical"]``:

- ``auc``: the ROC AUC of ``s`` against ``c``, ``P(s_critical > s_routine)`` with ties
  counting one half (0.5 is chance, 1 perfect): the Mann-Whitney ``U`` of the critical steps'
  scores over ``n_critical n_routine`` (``scipy.stats.mannwhitneyu``; equal to
  ``sklearn.metrics.roc_auc_score``, tested, and faster inside the bootstrap);
- ``ap``: the average precision ``sum_k (R_k - R_{k-1}) P_k`` over the thresholds
  (``sklearn.metrics.average_precision_score``; chance is the base rate, the true rho);
- ``rho_implied = mean(l)`` (pooled over steps) against ``rho = mean(c)``, and
  ``rho_error = rho_implied - rho``;
- 95% percentile bootstrap intervals over *episodes* (steps of an episode are resampled
  together: they are correlated), ``scipy.stats.bootstrap``.

Needs the ``detectors`` extra (scikit-learn, scipy), imported when called.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from routine_envs import credit
from routine_envs.detectors.base import (
    Detector,
    check_detector_batch,
    detector_cost,
)
from routine_envs.episodes import EpisodeBatch, batch_for

__all__ = ["Detections", "DetectorScore", "detect_batches", "score_detection", "score_detector"]


@dataclass(frozen=True)
class DetectorScore:
    """A detector's agreement with the annotations (see the module docstring).

    Attributes:
        auc, ap, rho_error (each with ``_low``/``_high``): the scores and their bootstrap
            interval over episodes.
        rho: the annotated share of critical steps; ``rho_implied``: the share labelled.
        num_steps, num_episodes: the sample scored.
        cost_steps: environment steps the detector simulated (beyond the batches) while
            detecting the steps scored; ``cost_per_step``: that per step scored;
            ``setup_steps``: steps simulated outside them (a classifier's training episodes,
            warm-up batches).
    """

    auc: float
    auc_low: float
    auc_high: float
    ap: float
    ap_low: float
    ap_high: float
    rho: float
    rho_implied: float
    rho_error: float
    rho_error_low: float
    rho_error_high: float
    num_steps: int
    num_episodes: int
    cost_steps: int = 0
    cost_per_step: float = 0.0
    setup_steps: int = 0

    def as_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _steps_of(starts: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """The step indices of ``episodes`` (in order, repeats allowed), shape ``(sum lengths,)``."""
    lengths = starts[episodes + 1] - starts[episodes]
    offsets = np.repeat(starts[episodes] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(int(lengths.sum())) + offsets


def score_detection(
    scores: np.ndarray,
    labels: np.ndarray,
    critical: np.ndarray,
    episode_starts: np.ndarray,
    confidence: float = 0.95,
    num_resamples: int = 1000,
    seed: int = 0,
) -> DetectorScore:
    """Score per-step ``scores`` and ``labels`` (shape ``(N,)``) against ``critical``, with
    bootstrap intervals over the episodes ``episode_starts`` (shape ``(M + 1,)``).

    Raises:
        ValueError: shapes that disagree, fewer than 2 episodes, annotations of one class only
            (AUC and AP are then undefined), a bad ``confidence`` or ``num_resamples``.
    """
    from scipy import stats
    from sklearn.metrics import average_precision_score

    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    critical = np.asarray(critical, dtype=bool)
    starts = np.asarray(episode_starts, dtype=np.int64)
    n = len(critical)
    if scores.shape != (n,) or labels.shape != (n,) or starts[-1] != n or starts[0] != 0:
        raise ValueError(
            f"scores {scores.shape}, labels {labels.shape} and critical ({n},) must be one shape "
            f"(N,) and episode_starts must run from 0 to N, got {starts[0]}..{starts[-1]}"
        )
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite")
    if len(starts) < 3:
        raise ValueError("scoring needs at least 2 episodes (the bootstrap resamples them)")
    if critical.all() or not critical.any():
        raise ValueError(
            "the annotations have one class only (every step critical, or none): AUC and AP "
            "are undefined; score on more episodes or another policy"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if num_resamples < 10:
        raise ValueError(f"num_resamples must be >= 10, got {num_resamples}")

    def statistic(steps: np.ndarray) -> np.ndarray:
        c = critical[steps]
        if c.all() or not c.any():
            return np.full(3, math.nan)
        s = scores[steps]
        u = stats.mannwhitneyu(s[c], s[~c], method="asymptotic").statistic
        return np.array(
            [
                u / (c.sum() * (~c).sum()),
                average_precision_score(c, s),
                labels[steps].mean() - c.mean(),
            ]
        )

    full = statistic(np.arange(n))
    num_episodes = len(starts) - 1
    result = stats.bootstrap(
        (np.arange(num_episodes),),
        lambda episodes: statistic(_steps_of(starts, np.asarray(episodes, dtype=np.int64))),
        vectorized=False,
        n_resamples=num_resamples,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    low = np.asarray(result.confidence_interval.low, dtype=np.float64)
    high = np.asarray(result.confidence_interval.high, dtype=np.float64)
    # a constant statistic (a perfect detector) has a degenerate, point interval
    low = np.where(np.isfinite(low), low, full)
    high = np.where(np.isfinite(high), high, full)
    return DetectorScore(
        auc=float(full[0]),
        auc_low=float(min(low[0], full[0])),
        auc_high=float(max(high[0], full[0])),
        ap=float(full[1]),
        ap_low=float(min(low[1], full[1])),
        ap_high=float(max(high[1], full[1])),
        rho=float(critical.mean()),
        rho_implied=float(labels.mean()),
        rho_error=float(full[2]),
        rho_error_low=float(min(low[2], full[2])),
        rho_error_high=float(max(high[2], full[2])),
        num_steps=n,
        num_episodes=num_episodes,
    )


@dataclass(frozen=True)
class Detections:
    """A detector's output on batches, stacked: ``scores``, ``labels``, ``critical`` ``(N,)``,
    ``episode_starts`` ``(M + 1,)``, and ``cost_steps`` simulated while detecting them."""

    scores: np.ndarray
    labels: np.ndarray
    critical: np.ndarray
    episode_starts: np.ndarray
    cost_steps: int


def detect_batches(
    detector: Detector, batches: Iterable[EpisodeBatch], warmup: int = 1
) -> Detections:
    """Run ``detector`` on ``batches`` in order, fitting it (``fit``, where it has one) on each
    batch *after* detecting it, so each batch is detected by a detector fitted on earlier
    batches only (``prepare()``, where it has one, is called first: a one-off setup). The
    first ``warmup`` batches are detected and fitted but not kept (a learned detector knows
    nothing before its first fit); their cost is not counted either.

    Raises:
        ValueError: a batch without the annotations or a field the detector requires, or no
            batch left after the warm-up.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    declared = credit.declare(detector, "detector")  # requires read once: every batch alike
    detector = declared.reader
    prepare = getattr(detector, "prepare", None)
    if prepare is not None:  # a one-off setup (a classifier's training), before any batch
        prepare()
    fit = getattr(detector, "fit", None)
    kept_scores, kept_labels, kept_critical, kept_lengths = [], [], [], []
    cost = 0
    for i, batch in enumerate(batches):
        check_detector_batch(declared, batch)
        if batch.critical is None:
            raise ValueError("scoring a detector needs batches with the annotations (critical)")
        before = detector_cost(detector)
        seen = batch_for(declared, batch)  # the privileged fields it declares only
        detection = declared(seen)
        if detection.scores.shape != (batch.num_steps,):
            raise ValueError(
                f"detector {detector.name!r} returned {detection.scores.shape} scores for "
                f"{batch.num_steps} steps"
            )
        if i >= warmup:
            cost += detector_cost(detector) - before
            kept_scores.append(detection.scores)
            kept_labels.append(detection.labels)
            kept_critical.append(np.asarray(batch.critical, dtype=bool))
            kept_lengths.append(batch.lengths)
        if fit is not None:
            fit(seen)
    if not kept_scores:
        raise ValueError(f"no batch left to score after warmup={warmup}")
    lengths = np.concatenate(kept_lengths)
    return Detections(
        np.concatenate(kept_scores),
        np.concatenate(kept_labels),
        np.concatenate(kept_critical),
        np.concatenate([[0], np.cumsum(lengths)]),
        cost,
    )


def score_detector(
    detector: Detector,
    batches: Iterable[EpisodeBatch],
    warmup: int = 1,
    confidence: float = 0.95,
    num_resamples: int = 1000,
    seed: int = 0,
) -> DetectorScore:
    """:func:`detect_batches` then :func:`score_detection`, with the detector's cost: the steps
    it simulated on the batches scored, per step scored, and the rest of what it simulated
    meanwhile (``setup_steps``: a one-off training, the warm-up batches)."""
    start_cost = detector_cost(detector)
    found = detect_batches(detector, batches, warmup)
    result = score_detection(
        found.scores,
        found.labels,
        found.critical,
        found.episode_starts,
        confidence,
        num_resamples,
        seed,
    )
    total = detector_cost(detector) - start_cost
    return dataclasses.replace(
        result,
        cost_steps=found.cost_steps,
        cost_per_step=found.cost_steps / result.num_steps,
        setup_steps=total - found.cost_steps,
    )
