"""Estimators by name or import path: the registry, and specs resolved, checked and built.

:data:`ESTIMATORS` maps a registry name to its class (or to the import path of a class defined
in a module built on this package). A spec (:data:`EstimatorLike`: a name or an import path
``"package.module:Name"``, optionally with JSON arguments; a class; an instance) is resolved by
:func:`resolve_estimator`, checked by :func:`check_estimator_spec` before any run and built by
:func:`build_estimator` from an :class:`~routine_envs.credit.base.EstimatorContext`. The
kind-agnostic part (parsing, importing, argument and type checks) is
:mod:`routine_envs.plugins`; what is particular to estimators (their registry, their attributes,
the built-ins' extra arguments) is here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from routine_envs import plugins
from routine_envs.credit.base import (
    BATCH_FIELDS,
    AdvantageEstimator,
    EstimatorContext,
)
from routine_envs.credit.critics import GAE, MCRollout, Oracle
from routine_envs.credit.group_baselines import RLOO, GiGPO, RoutineMasked, TrajectoryMC
from routine_envs.rollouts import RolloutPolicy, RolloutSource

ESTIMATORS: dict[str, type | str] = {
    **{cls.name: cls for cls in (GAE, TrajectoryMC, RLOO, GiGPO, MCRollout, Oracle, RoutineMasked)},
    # built on this package (a detector; the turn-level methods): named by import path,
    # imported when first used, so this package never imports them
    "detector_masked": "routine_envs.detectors.masked:DetectorMasked",
    "discounted_turn": "routine_envs.turn_level:DiscountedTurn",
    "turn_index_norm": "routine_envs.turn_level:TurnIndexNorm",
    "turn_credit": "routine_envs.turn_level:TurnCredit",
    # the 2025-26 methods (docs/estimators.md), each in its own module as an outside author's
    "empg": "routine_envs.entropy_modulated:EMPG",
    "spa": "routine_envs.progress_redistribution:SPA",
    "asymmetric_critic": "routine_envs.asymmetric_critic:AsymmetricCritic",
    "tree_grpo": "routine_envs.tree_grpo:TreeGRPO",
}
"""Every estimator by registry name: its class, or the import path of one defined in a module
built on this package (:mod:`routine_envs.detectors`, :mod:`routine_envs.turn_level`)."""


BUILD_ARGUMENTS: dict[type, Mapping[str, Any]] = {
    MCRollout: {
        "source": Literal["model", "branch"] | RolloutSource | RolloutPolicy,
        "seed": int | None,
    }
}
"""Keyword arguments a built-in class's ``from_context`` reads beyond its constructor's: name ->
type (a class outside declares its own as a class attribute ``extra_arguments``). Kept out of
the class bodies: a built-in class's source is part of the run keys of the shipped references."""
ARGUMENT_CHECKS = {
    "routine_envs.detectors.masked:DetectorMasked": "routine_envs.detectors.base:check_masked"
}
"""Checks of a built-in class's data arguments beyond their types, by the import paths of the
class and of the check (``detector_masked``: its detector spec; a layer above). A class outside
defines a classmethod ``check_arguments(kwargs)`` (``ValueError`` for bad ones) instead."""


def check_arguments(found: Any, kwargs: Mapping[str, Any], where: str, from_data: bool) -> None:
    """:func:`routine_envs.plugins.check_builder_arguments` with :data:`BUILD_ARGUMENTS`, then
    (``from_data``) the class's check of :data:`ARGUMENT_CHECKS` or ``check_arguments``."""
    extra = BUILD_ARGUMENTS.get(found) if isinstance(found, type) else None
    plugins.check_builder_arguments(found, kwargs, where, from_data, extra)
    if not (from_data and kwargs and isinstance(found, type)):
        return
    path = ARGUMENT_CHECKS.get(f"{found.__module__}:{found.__qualname__}")
    check = plugins.load_object(path) if path else getattr(found, "check_arguments", None)
    if callable(check):
        try:
            check(dict(kwargs))
        except Exception as err:  # the class's own code: a one-line error whatever it raised
            problem = plugins.one_line(str(err), 300) if isinstance(err, ValueError) else None
            raise ValueError(f"{where}: {problem or plugins.raised(err)}") from None


def make_estimator(name: str | AdvantageEstimator, **kwargs: Any) -> AdvantageEstimator:
    """An estimator by registry name or import path built with its constructor ``kwargs`` only
    (no context; see :func:`build_estimator`), or ``name`` itself if it is already an
    estimator. ``ValueError`` for an unknown name or a wrong keyword."""
    return build_estimator(name, None, **kwargs)


EstimatorLike = str | type | AdvantageEstimator
"""What :func:`build_estimator` accepts: a registry name or an import path
``"package.module:Name"`` (either optionally followed by JSON keyword arguments,
``'gigpo{"omega": 0.5}'``), an estimator class or an instance."""

ESTIMATOR_ATTRIBUTES = ("name", "requires", "trains_critic")
"""What every estimator has besides ``__call__(batch) -> Advantages``."""


def estimator_class(name: str) -> type:
    """The estimator class registered as ``name`` in :data:`ESTIMATORS` (the one place a name is
    resolved); ``ValueError`` for an unknown name."""
    if name not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {name!r}; known: {sorted(ESTIMATORS)}, or an import path "
            "'package.module:Name' of your own"
        )
    found = ESTIMATORS[name]
    return plugins.load_object(found, "estimator") if isinstance(found, str) else found


def check_estimator_object(obj: Any, where: str) -> None:
    """Raise ``ValueError`` unless the object ``obj`` follows the estimator protocol:
    :data:`ESTIMATOR_ATTRIBUTES`, callable, ``requires`` within :data:`BATCH_FIELDS`."""
    missing = [a for a in ESTIMATOR_ATTRIBUTES if not hasattr(obj, a)]
    if isinstance(obj, type) or not callable(obj):
        missing.append("__call__(batch)")
    if missing:
        raise ValueError(
            f"{where} is not an advantage estimator: it lacks {missing} (an estimator has "
            "name, requires, trains_critic and __call__(batch) -> Advantages; see "
            "docs/estimators.md)"
        )
    plugins.check_requires(obj.requires, BATCH_FIELDS, where)


def check_estimator_class(cls: type, where: str) -> None:
    """``ValueError`` unless class ``cls`` builds advantage estimators (``builtins:int`` is
    refused): :func:`routine_envs.plugins.check_plugin_class` of :data:`ESTIMATOR_ATTRIBUTES`."""
    kinds = {"name": str, "trains_critic": bool}
    what = "an advantage estimator"
    plugins.check_plugin_class(cls, where, ESTIMATOR_ATTRIBUTES, what, kinds, BATCH_FIELDS)


def check_estimator_spec(spec: str | plugins.Spec, what: str = "estimator") -> Any:
    """What ``spec`` names (:func:`resolve_estimator`), validated before any run: its JSON
    arguments match the class's signature and types (:func:`check_arguments`); a one-line
    ``ValueError`` naming the spec (``what``: the parameter) and the argument."""
    parsed = spec if isinstance(spec, plugins.Spec) else plugins.parse_spec(spec, what)
    found = resolve_estimator(parsed.target)
    check_arguments(
        found, parsed.kwargs, plugins.arguments_label(what, parsed.target, parsed.text), True
    )
    return found


def resolve_estimator(target: str) -> type | AdvantageEstimator:
    """The estimator class (or ready object) that ``target`` names: a registry name, or an
    import path ``"package.module:Name"`` to outside code (imported here, so a worker process
    that resolves the same text imports it too). ``ValueError`` naming ``target`` when it is
    unknown, cannot be imported or is not an estimator (a class is checked too:
    :func:`check_estimator_class`)."""
    if plugins.is_import_path(target):
        obj = plugins.load_object(target, "estimator")
    else:
        obj = estimator_class(target)
    where = f"estimator {plugins.brief(target)}"
    if isinstance(obj, type):
        check_estimator_class(obj, where)
    else:
        check_estimator_object(obj, where)
    return obj


def build_estimator(
    spec: EstimatorLike, context: EstimatorContext | None = None, **kwargs: Any
) -> AdvantageEstimator:
    """An estimator from ``spec`` and what ``context`` offers, with constructor ``kwargs``.

    ``spec`` is a registry name or an import path ``"package.module:Name"`` (text, optionally
    followed by JSON keyword arguments, which ``kwargs`` override; resolved by
    :func:`resolve_estimator`), a class, or an instance (returned as is; no keyword arguments
    then). A class is built with its ``from_context(context, **kwargs)`` classmethod when it has
    one (every estimator of this package, and any class using the
    :class:`~routine_envs.credit.base.FromContext` mixin), else with ``cls(**kwargs)``. The JSON
    arguments are checked as data, ``kwargs`` as Python values, against the class's signature
    and type hints (:func:`check_arguments`), so ``build_estimator("gigpo", omega="x")`` is
    refused before anything is built.

    Raises:
        ValueError: an unknown name, an import that fails, a wrong keyword or type, something
            that is not an estimator, or an estimator that cannot be built from ``context``.
    """
    text, data = None, {}
    if isinstance(spec, str):
        parsed = plugins.parse_spec(spec, "estimator")
        text, data, label = parsed.text, parsed.kwargs, parsed.target
        spec = resolve_estimator(parsed.target)
    else:
        label = getattr(spec, "name", None) if isinstance(spec, type) else None
        label = label if isinstance(label, str) else getattr(spec, "__name__", repr(spec))
    where = f"estimator {plugins.brief(text)}" if text is not None else plugins.brief(spec)
    if not isinstance(spec, type):
        if not isinstance(spec, AdvantageEstimator):
            check_estimator_object(spec, where)
            raise ValueError(f"{where} is not an AdvantageEstimator")
        if kwargs or data:
            names = plugins.brief(sorted({**data, **kwargs}), 200)
            raise ValueError(f"keyword arguments {names} given with an estimator object")
        check_estimator_object(spec, where)
        return spec
    check_estimator_class(spec, where)
    bad = plugins.arguments_label("estimator", label, text)
    check_arguments(spec, data, bad, from_data=True)
    check_arguments(spec, kwargs, bad, from_data=False)
    estimator = build_from_context(spec, context, {**data, **kwargs})
    check_estimator_object(estimator, f"{where}: {spec.__name__}(...), what it builds,")
    return estimator


def build_from_context(
    cls: type, context: EstimatorContext | None, kwargs: Mapping[str, Any], kind: str = "estimator"
) -> Any:
    """``cls.from_context(context, **kwargs)`` where the class has one, else ``cls(**kwargs)``;
    a wrong keyword is a ``ValueError`` naming the ``kind`` (estimator, detector) and its name."""
    context = context or EstimatorContext()
    label = getattr(cls, "name", cls.__name__)
    build = getattr(cls, "from_context", None)
    try:
        return build(context, **kwargs) if build is not None else cls(**kwargs)
    except TypeError as err:
        message = plugins.brief(str(err), 300)
        raise ValueError(f"bad arguments for {kind} {label!r}: {message}") from None
