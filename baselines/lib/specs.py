"""Specs parsed once: a method (``ppo``, an estimator name or ``package.module:Name``, either
with JSON arguments) or a detector becomes one object that knows what it resolves to, its
label in tables and the fingerprint of its code, for every run key and table of a process.

:func:`parse_method` parses, resolves (outside code is imported here) and checks a method's
arguments once per text and process (cached); :class:`MethodSpec` then answers everything a
sweep asks of it: its hyperparameter section (``target``), the estimator identity a run key
records (:meth:`MethodSpec.identity`: name, arguments, code fingerprint), its label. Policy
specs are the core package's (:mod:`routine_envs.policy_specs`).
"""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from routine_envs import plugins
from routine_envs.plugins import brief, code_fingerprint

TURN_LEVEL_METHODS = ("ppo",)
"""Methods trained by SB3's own PPO (MaskablePPO where the env has action masks)."""


@dataclass(frozen=True)
class MethodSpec(plugins.Spec):
    """A method spec (:class:`routine_envs.plugins.Spec`: its ``text`` as written, what tables
    and run keys name; its ``target``, the name or import path before the JSON arguments and
    its hyperparameter section; its JSON ``kwargs``), resolved and checked.

    Attributes:
        estimator: the estimator class (or object) it resolves to; ``None`` for ``ppo`` and
            for outside code planned as data (:meth:`unresolved`).
        fingerprint: the code fingerprint of outside code planned as data (given, not
            computed: its code is never imported); ``None`` otherwise.
    """

    estimator: Any = None
    fingerprint: str | None = None
    _derived: dict[tuple[str, str], str] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """What :meth:`code`, :meth:`source_hash` and :meth:`label` derived, by what and the
    arguments: each computed once per spec (a run key asks for them for every run of a plan,
    and a fingerprint reads and parses the source). The spec holds the class it resolved to
    (:func:`parse_method` is cached per process), so its code's fingerprint cannot change
    under it."""

    def __hash__(self) -> int:
        """By its text (and given fingerprint): the arguments and the class follow from them."""
        return hash((self.text, self.fingerprint))

    @classmethod
    def unresolved(cls, text: str, fingerprint: str) -> MethodSpec:
        """Outside code (``package.module:Name``) known by its code fingerprint only, never
        imported: what a verifier of someone else's submission plans its runs with."""
        spec = plugins.parse_spec(text, "method")
        if not spec.is_import_path:
            raise ValueError(
                f"method {brief(text)}: only outside code is planned from its fingerprint"
            )
        return cls(spec.target, dict(spec.kwargs), spec.text, fingerprint=fingerprint)

    @property
    def resolved(self) -> bool:
        """Whether its code is here (imported, or ``ppo``): runs of it can be checked and
        trained."""
        return self.fingerprint is None

    @property
    def turn_level(self) -> bool:
        """Whether it is SB3's own PPO (a learned critic, no estimator)."""
        return self.target in TURN_LEVEL_METHODS

    def _once(self, what: str, kwargs: dict[str, Any] | None, compute: Any) -> Any:
        """``compute()``, once per ``what`` and ``kwargs`` (:attr:`_derived`)."""
        key = (what, json.dumps(kwargs or {}, sort_keys=True, default=repr))
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    @property
    def code_object(self) -> Any:
        """What its code fingerprint reads: the class of a built-in; for outside code the
        module that defines it (an edit of a helper beside the class makes a new run key too)."""
        obj = self.estimator
        return (inspect.getmodule(obj) or obj) if self.is_import_path else obj

    def code(self, kwargs: dict[str, Any] | None = None) -> str:
        """The fingerprint of the code behind the estimator (:attr:`code_object`), plus the
        fingerprints of what ``code_dependencies(kwargs)`` returns where the class has it
        (``detector_masked``: the detector its arguments name)."""
        if self.turn_level:
            return "stable_baselines3"
        if self.fingerprint is not None:
            return self.fingerprint

        def compute() -> str:
            code = code_fingerprint(self.code_object)
            dependencies = getattr(self.estimator, "code_dependencies", None)
            if dependencies is not None:
                found = dependencies(dict(kwargs or {}))
                code += "".join(f"+{code_fingerprint(d)}" for d in found)
            return code

        return self._once("code", kwargs, compute)

    def source_hash(self) -> str | None:
        """The hash of the estimator's source text as it is (:func:`routine_envs.plugins.
        source_hash`; docstrings included): provenance recorded in a run's row, never keyed.
        ``None`` for ``ppo`` and for code not imported here."""
        if self.turn_level or self.estimator is None:
            return None
        return self._once("source", None, lambda: plugins.source_hash(self.code_object))

    def identity(self, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
        """``{"name", "kwargs", "code"}`` of the estimator, ``kwargs`` (a config's
        ``estimator_kwargs``) overridden by the spec's own arguments: what a run key records
        (``ppo``, SB3's own, is covered by the SB3 version)."""
        if self.turn_level:
            return {"name": self.text, "kwargs": {}, "code": "stable_baselines3"}
        merged = {**dict(kwargs or {}), **self.kwargs}
        return {"name": self.target, "kwargs": merged, "code": self.code(merged)}

    def label(self, kwargs: dict[str, Any] | None = None) -> str:
        """How tables and plots name the method with these estimator arguments: the spec as
        written where it has JSON arguments or names outside code (with the estimator's
        ``(privileged: ...)`` mark where its label has one); else the estimator's ``label``
        where it has one (GiGPO grouping by the privileged ``state_id`` says so, as
        ``turn_credit`` reading ``turn_score``), else the method name."""
        if self.turn_level:
            return self.text
        return self._once("label", kwargs, lambda: self._label(kwargs))

    def _label(self, kwargs: dict[str, Any] | None) -> str:
        """:meth:`label`, computed (it builds the estimator to read its ``label``)."""
        cls = self.estimator
        if self.is_import_path or not isinstance(
            inspect.getattr_static(cls, "label", None), property
        ):
            return self.text
        try:
            label = str(cls(**{**dict(kwargs or {}), **self.kwargs}).label)
        except (TypeError, ValueError):
            return self.text
        if not self.kwargs:
            return label
        # the spec as written, and what reads privileged fields says so (turn_credit, gigpo by
        # state_id): "turn_credit{...} (privileged: turn_score)"
        mark = label.rfind(" (privileged")
        return self.text + label[mark:] if mark >= 0 else self.text


def known_methods() -> list[str]:
    """``ppo`` plus every built-in estimator name (trained by ``TrajectoryAdvantagePPO``); any
    import path ``package.module:Name`` of an estimator is a method too."""
    from routine_envs.credit import ESTIMATORS

    return [*TURN_LEVEL_METHODS, *sorted(ESTIMATORS)]


def parse_method(text: str | MethodSpec) -> MethodSpec:
    """The :class:`MethodSpec` of ``text`` (given parsed: returned as it is) if it names
    ``ppo``, a built-in estimator or an importable estimator class or object (the import is
    done here, so a bad one fails before any training) whose JSON arguments match its
    constructor's signature and types; else ``ValueError`` naming the method (and the
    argument), one line. Parsed once per text and process (and per entry of the estimator
    registry it names: a name registered anew is parsed anew): every later call returns the
    same object."""
    from routine_envs import credit

    if isinstance(text, MethodSpec):
        return text
    target = plugins.parse_spec(text, "method").target if isinstance(text, str) else text
    registered = credit.ESTIMATORS.get(target) if isinstance(target, str) else None
    return _parse_method(text, registered)


@functools.lru_cache(maxsize=256)
def _parse_method(text: str, registered: Any) -> MethodSpec:
    """:func:`parse_method` of ``text``, cached with the registry entry it names."""
    from routine_envs import credit

    spec = plugins.parse_spec(text, "method")
    if spec.target in TURN_LEVEL_METHODS:
        if spec.kwargs:
            raise ValueError(f"method {brief(spec.text)}: ppo takes no estimator arguments")
        return MethodSpec(spec.target, {}, spec.text)
    if not spec.is_import_path and spec.target not in credit.ESTIMATORS:
        raise ValueError(
            f"unknown method {brief(text)}; known: {known_methods()}, or an import path "
            "'package.module:Name' of your own"
        )
    found = credit.check_estimator_spec(spec, "method")  # resolved (imported) and checked once
    return MethodSpec(spec.target, dict(spec.kwargs), spec.text, estimator=found)


@dataclass(frozen=True)
class DetectorSpec(plugins.Spec):
    """A detector spec (:class:`routine_envs.plugins.Spec`) with its code fingerprint (its
    module's whole source, helpers included, with the scoring module's and the sampler's:
    branching rollouts live there)."""

    code: str = ""


@functools.lru_cache(maxsize=256)
def parse_detector(text: str) -> DetectorSpec:
    """The :class:`DetectorSpec` of ``text`` (resolved once per text and process);
    ``ValueError`` naming it when it does not resolve."""
    from routine_envs import detectors
    from routine_envs.detectors import scoring
    from routine_envs.sampler import ModelSampler

    spec = plugins.parse_spec(text, "--detectors")
    obj = detectors.resolve_detector(spec.target)
    parts = (inspect.getmodule(obj) or obj, scoring, ModelSampler)
    code = "+".join(code_fingerprint(p) for p in parts)
    return DetectorSpec(spec.target, dict(spec.kwargs), spec.text, code=code)
