"""Result types of :func:`routine_envs.diagnose.diagnose`: per-state records, agreement counts
with the annotations, the minimum detectable effect and the whole diagnosis."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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
        return_variance_se: its distribution-free standard error
            (:func:`~routine_envs.diagnose.statistics.variance_standard_error`; nan with one
            episode); the reading gives advice in ``sigma^2 / Var(R)`` only where ``Var(R)`` is
            well above it (:func:`~routine_envs.diagnose.statistics.return_variance_warning`).
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
    return_variance_se: float = math.nan

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
