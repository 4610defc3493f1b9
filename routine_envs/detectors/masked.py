"""``detector_masked``: the routine-masked estimator with a detector's labels instead of the
annotations, the first label-free one.

``A_t = m_t (R_i - mean_group(R))`` with the mask ``m_t``: the detector's labels at its
operating threshold (default), ``score_t >= threshold`` (a threshold of your own), or with
``soft`` the weight ``score_t / max(score)`` over the batch (scores must be ``>= 0``). With
the perfect detector (``annotations``) it is ``routine_masked``, bit for bit. A detector with a
``fit`` is fitted on each batch after masking it, so a batch's mask comes from earlier batches.
Masking a critical step by mistake drops its share of the gradient: a bias, which the SNR
lab's exact-bias column measures.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from routine_envs import credit, plugins
from routine_envs.detectors.base import (
    Detector,
    build_detector,
    check_detector_batch,
    resolve_detector,
)
from routine_envs.episodes import EpisodeBatch

__all__ = ["DetectorMasked"]


@dataclass
class DetectorMasked:
    """The trajectory advantage masked by a detector (see the module docstring).

    Attributes:
        detector: the built detector (from a spec with :meth:`from_context`).
        threshold: label steps with ``score >= threshold`` instead of the detector's labels.
        soft: weigh each step by ``score / max(score)`` instead of a 0/1 mask.
        normalize_std: divide the trajectory advantage by the group's return std (GRPO).
        fit: fit the detector on each batch after masking it (where it has ``fit``).
    """

    detector: Detector
    threshold: float | None = None
    soft: bool = False
    normalize_std: bool = False
    eps: float = 1e-6
    fit: bool = True
    name: ClassVar[str] = "detector_masked"
    trains_critic: ClassVar[bool] = False
    _base: credit.TrajectoryMC = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.soft and self.threshold is not None:
            raise ValueError("detector_masked: give threshold or soft, not both")
        self._base = credit.TrajectoryMC(normalize_std=self.normalize_std, eps=self.eps)

    @classmethod
    def from_context(
        cls,
        context: credit.EstimatorContext,
        detector: str | Detector = "annotations",
        detector_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> DetectorMasked:
        """Build the detector from its spec (a name or ``package.module:Name``, optionally with
        JSON arguments, which ``detector_kwargs`` override) and ``context``; ``ValueError``
        there when the context cannot give what the detector needs (before any training)."""
        built = build_detector(detector, context, **dict(detector_kwargs or {}))
        return cls(built, **kwargs)

    @classmethod
    def code_dependencies(cls, kwargs: dict[str, Any]) -> list[Any]:
        """What else the advantages depend on, for run keys: the module of the detector named
        in ``kwargs`` (its whole source, helpers included)."""
        spec = kwargs.get("detector", "annotations")
        if not isinstance(spec, str):
            return [type(spec)]
        obj = resolve_detector(plugins.parse_spec(spec, "detector").target)
        return [inspect.getmodule(obj) or obj]

    @property
    def requires(self) -> frozenset[str]:
        """The detector's batch fields."""
        return frozenset(self.detector.requires)

    @property
    def group_independent(self) -> bool:
        """A group's advantages depend only on it when the detector's scores do (and no
        batch-wide soft scaling, no fitting between groups)."""
        return (
            bool(getattr(self.detector, "group_independent", False))
            and not self.soft
            and not (self.fit and hasattr(self.detector, "fit"))
        )

    def mask(self, batch: EpisodeBatch) -> np.ndarray:
        """The mask (bool) or the soft weights (float) of every step, shape ``(N,)``."""
        check_detector_batch(self.detector, batch)
        detection = self.detector(batch)
        if detection.scores.shape != (batch.num_steps,):
            raise ValueError(
                f"detector {self.detector.name!r} returned {detection.scores.shape} scores "
                f"for {batch.num_steps} steps"
            )
        if self.soft:
            if np.any(detection.scores < 0):
                raise ValueError(
                    f"soft masking needs scores >= 0; detector {self.detector.name!r} gave "
                    f"{float(detection.scores.min())}"
                )
            top = float(detection.scores.max())
            return detection.scores / top if top > 0 else np.zeros(batch.num_steps)
        if self.threshold is not None:
            return detection.scores >= self.threshold
        return detection.labels

    def __call__(self, batch: EpisodeBatch) -> credit.Advantages:
        mask = self.mask(batch)
        adv = self._base(batch).advantages
        out = adv * mask if self.soft else np.where(mask, adv, 0.0)
        fit = getattr(self.detector, "fit", None)
        if self.fit and fit is not None:
            fit(batch)
        return credit.Advantages(out)
