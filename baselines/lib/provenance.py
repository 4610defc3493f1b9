"""What a result depends on, for the run keys of the sweeps: the estimator (its name, its
arguments and a fingerprint of its code), its label in tables, and the versions of the packages
that compute it. Two runs share a key only if everything that changes their result is equal."""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

from baselines.lib.specs import parse_method
from routine_envs.plugins import code_fingerprint

__all__ = [
    "code_fingerprint",
    "estimator_code",
    "estimator_identity",
    "method_label",
    "versions",
]


@functools.cache
def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """Versions of the packages that compute a result (``routine_envs`` is this project)."""
    import routine_envs

    return {
        "routine_envs": routine_envs.__version__,
        "stable_baselines3": _version("stable_baselines3"),
        "sb3_contrib": _version("sb3_contrib"),
        "torch": _version("torch"),
    }


def estimator_code(target: str, kwargs: dict[str, Any] | None = None) -> str:
    """The fingerprint of the code behind an estimator name or import path
    (:meth:`~baselines.lib.specs.MethodSpec.code`)."""
    return parse_method(target).code(kwargs)


def estimator_identity(method: str, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"name", "kwargs", "code"}`` of the estimator behind ``method`` (a name or import
    path, optionally with JSON arguments that override ``kwargs``):
    :meth:`~baselines.lib.specs.MethodSpec.identity` of the spec, parsed once."""
    return parse_method(method).identity(kwargs)


def method_label(method: str, kwargs: dict[str, Any] | None = None) -> str:
    """How tables and plots name ``method`` with these estimator arguments
    (:meth:`~baselines.lib.specs.MethodSpec.label`)."""
    return parse_method(method).label(kwargs)
