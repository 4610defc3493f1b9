"""The detector interface: what a criticality detector is, how one is named and built.

A detector maps a batch of finished episodes (:class:`~routine_envs.episodes.EpisodeBatch`) to a
:class:`Detection`: a score per step ("how likely this step is critical", higher is more
likely) and its labels at the detector's operating threshold. ``requires`` names the batch
fields it reads (as an estimator's does), so a caller refuses before any work when its source
does not provide them. A detector may be *fitted on earlier batches*: a ``fit(batch)`` method
is called by the scorer and by ``detector_masked`` after a batch has been detected, never before,
so a batch's scores never use that batch's own outcomes through the fit.

Detectors are built like estimators: from a registry name or an import path
``package.module:Name`` (optionally with JSON keyword arguments), with what the caller has
offered in a :class:`routine_envs.credit.EstimatorContext` (``from_context``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from routine_envs import credit, plugins
from routine_envs.episodes import EpisodeBatch

__all__ = [
    "DETECTORS",
    "DETECTOR_ATTRIBUTES",
    "Detection",
    "Detector",
    "build_detector",
    "check_detector_batch",
    "check_detector_class",
    "check_detector_object",
    "check_detector_provides",
    "check_detector_spec",
    "detector_cost",
    "detector_fingerprint_target",
    "resolve_detector",
]


@dataclass(frozen=True)
class Detection:
    """What a detector returns for a batch of ``N`` steps.

    Attributes:
        scores: how likely each step is critical, shape ``(N,)`` (higher: more likely; only the
            order matters for AUC and AP; soft masking needs them in ``[0, 1]``).
        labels: the detector's decision at its operating threshold, shape ``(N,)`` bool
            (``True``: critical); their mean is the rho the detector implies.
    """

    scores: np.ndarray
    labels: np.ndarray

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=np.float64)
        labels = np.asarray(self.labels, dtype=bool)
        if scores.ndim != 1 or labels.shape != scores.shape:
            raise ValueError(
                f"a Detection needs scores and labels of one shape (N,), got {scores.shape} "
                f"and {labels.shape}"
            )
        if not np.all(np.isfinite(scores)):
            raise ValueError("a Detection's scores must be finite")
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "labels", labels)


@runtime_checkable
class Detector(Protocol):
    """The detector interface.

    Attributes:
        name: registry name.
        requires: batch fields it reads (:data:`routine_envs.credit.BATCH_FIELDS`).

    Optional: ``fit(batch) -> None`` (learn from a batch already detected: fitted on earlier
    batches), ``cost_steps: int`` (environment steps it has simulated so far beyond the batch,
    e.g. branched rollouts or a classifier's training episodes; 0 when absent) and
    ``group_independent: bool`` (a group's scores depend only on that group's episodes).
    """

    name: str
    requires: frozenset[str]

    def __call__(self, batch: EpisodeBatch) -> Detection: ...


DETECTOR_ATTRIBUTES = ("name", "requires")
"""What every detector has besides ``__call__(batch) -> Detection``."""

DETECTORS: dict[str, str] = {
    "annotations": "routine_envs.detectors.builtin:Annotations",
    "random": "routine_envs.detectors.builtin:RandomScores",
    "entropy": "routine_envs.detectors.builtin:PolicyEntropy",
    "group_variance": "routine_envs.detectors.builtin:GroupVariance",
    "critic": "routine_envs.detectors.builtin:CriticAdvantage",
    "branching": "routine_envs.detectors.rollouts:Branching",
    "mc_spread": "routine_envs.detectors.rollouts:MCSpread",
    "classifier": "routine_envs.detectors.classifier:TransferClassifier",
}
"""Every shipped detector by registry name: its import path (imported when first built)."""


def resolve_detector(target: str) -> Any:
    """The detector class (or ready object) ``target`` names: a registry name of
    :data:`DETECTORS` or an import path ``package.module:Name``; ``ValueError`` naming it when
    it is unknown, cannot be imported or is not a detector (a class is checked too:
    :func:`check_detector_class`)."""
    if plugins.is_import_path(target):
        obj = plugins.load_object(target, "detector")
    elif target in DETECTORS:
        obj = plugins.load_object(DETECTORS[target], "detector")
    else:
        raise ValueError(
            f"unknown detector {plugins.brief(target)}; known: {sorted(DETECTORS)}, or an import "
            "path 'package.module:Name' of your own"
        )
    where = f"detector {plugins.brief(target)}"
    if isinstance(obj, type):
        check_detector_class(obj, where)
    else:
        check_detector_object(obj, where)
    return obj


def detector_fingerprint_target(spec: str) -> Any:
    """The object whose code identifies the detector ``spec`` names (for run keys)."""
    return resolve_detector(plugins.parse_spec(spec, "detector").target)


def check_detector_object(obj: Any, where: str) -> None:
    """``ValueError`` unless ``obj`` follows the detector protocol (:data:`DETECTOR_ATTRIBUTES`,
    callable, ``requires`` within the batch fields)."""
    missing = [a for a in DETECTOR_ATTRIBUTES if not hasattr(obj, a)]
    if isinstance(obj, type) or not callable(obj):
        missing.append("__call__(batch)")
    if missing:
        raise ValueError(
            f"{where} is not a detector: it lacks {missing} (a detector has name, requires "
            "and __call__(batch) -> Detection; see docs/detectors.md)"
        )
    plugins.check_requires(obj.requires, credit.BATCH_FIELDS, where)


def check_detector_class(cls: type, where: str) -> None:
    """``ValueError`` unless class ``cls`` builds detectors: it declares
    :data:`DETECTOR_ATTRIBUTES` and ``__call__(batch)``, ``name`` set on the class is a text and
    ``requires`` batch fields (:func:`routine_envs.plugins.check_plugin_class`)."""
    kinds = {"name": str}
    plugins.check_plugin_class(
        cls, where, DETECTOR_ATTRIBUTES, "a detector", kinds, credit.BATCH_FIELDS
    )


def check_detector_spec(spec: str | plugins.Spec, what: str = "detector") -> Any:
    """Validate a detector spec before any work and return what it names: it parses, names a
    detector class or object (:func:`resolve_detector`), and its JSON arguments match the
    class's signature and type hints (:func:`routine_envs.credit.check_arguments`).
    ``ValueError`` naming the spec (``what``: the parameter) and the argument, one line."""
    parsed = spec if isinstance(spec, plugins.Spec) else plugins.parse_spec(spec, what)
    found = resolve_detector(parsed.target)
    where = plugins.arguments_label(what, parsed.target, parsed.text)
    credit.check_arguments(found, parsed.kwargs, where, from_data=True)
    return found


def check_masked(kwargs: Mapping[str, Any]) -> None:
    """The check of ``detector_masked``'s data arguments beyond their types
    (:data:`routine_envs.credit.ARGUMENT_CHECKS`): a ``detector`` spec given names a detector
    (:func:`check_detector_spec`) and ``detector_kwargs`` match its signature and types."""
    spec = kwargs.get("detector")
    if not isinstance(spec, str):
        return
    parsed = plugins.parse_spec(spec, "detector")
    found = check_detector_spec(parsed)
    more = kwargs.get("detector_kwargs")
    if isinstance(more, Mapping):
        where = f"bad arguments for detector {plugins.brief(parsed.target)} in detector_kwargs"
        credit.check_arguments(found, more, where, from_data=True)


def build_detector(
    spec: str | type | Detector,
    context: credit.EstimatorContext | None = None,
    **kwargs: Any,
) -> Detector:
    """A detector from ``spec`` (a registry name or import path as text, optionally with JSON
    keyword arguments that ``kwargs`` override; a class; or an instance, returned as is) and
    what ``context`` offers (a class's ``from_context(context, **kwargs)`` when it has one).
    The JSON arguments are checked as data and ``kwargs`` as Python values against the class's
    signature and type hints before anything is built.

    Raises:
        ValueError: an unknown name, a failed import, a wrong keyword or type, something that
            is not a detector, or a detector that cannot be built from ``context`` (named).
    """
    text, data = None, {}
    if isinstance(spec, str):
        parsed = plugins.parse_spec(spec, "detector")
        text, data, label = parsed.text, parsed.kwargs, parsed.target
        spec = resolve_detector(parsed.target)
    else:
        label = getattr(spec, "name", None) if isinstance(spec, type) else None
        label = label if isinstance(label, str) else getattr(spec, "__name__", repr(spec))
    where = f"detector {plugins.brief(text)}" if text is not None else plugins.brief(spec)
    if not isinstance(spec, type):
        if kwargs or data:
            names = plugins.brief(sorted({**data, **kwargs}), 200)
            raise ValueError(f"keyword arguments {names} given with a detector object")
        check_detector_object(spec, where)
        return spec
    check_detector_class(spec, where)
    bad = plugins.arguments_label("detector", label, text)
    credit.check_arguments(spec, data, bad, from_data=True)
    credit.check_arguments(spec, kwargs, bad, from_data=False)
    detector = credit.build_from_context(spec, context, {**data, **kwargs}, "detector")
    check_detector_object(detector, f"{where}: {spec.__name__}(...), what it builds,")
    return detector


def check_detector_batch(detector: Detector, batch: EpisodeBatch) -> None:
    """``ValueError`` naming every field ``detector`` needs that ``batch`` lacks."""
    credit.check_batch(detector, batch, "detector")


def check_detector_provides(detector: Detector, provided: frozenset[str], source: str) -> None:
    """``ValueError`` when ``detector`` requires batch fields ``source`` cannot provide."""
    credit.check_provides(detector, provided, source, "detector")


def detector_cost(detector: Detector) -> int:
    """Environment steps ``detector`` has simulated so far beyond the batches (0 if it says
    nothing)."""
    return int(getattr(detector, "cost_steps", 0))


def need_context(context: credit.EstimatorContext, name: str, fields: Mapping[str, str]) -> None:
    """``ValueError`` naming the context fields (``field -> why``) detector ``name`` needs that
    ``context`` lacks (``None``), so a trainer refuses before training."""
    missing = {f: why for f, why in fields.items() if getattr(context, f) is None}
    if missing:
        reasons = "; ".join(f"{f} ({why})" for f, why in missing.items())
        raise ValueError(
            f"detector {name!r} needs {reasons}, which this caller does not offer (the SNR lab "
            "and `python -m baselines detectors score` offer an exact-model sampler and the "
            "policy table; TrajectoryAdvantagePPO offers no sampler)"
        )
