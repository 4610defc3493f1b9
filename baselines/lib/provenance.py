"""What a result depends on, for the run keys of the sweeps: the estimator (its name, its
arguments and a fingerprint of its code), its label in tables, and the versions of the packages
that compute it. Two runs share a key only if everything that changes their result is equal."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
from typing import Any

from baselines.lib.config import TURN_LEVEL_METHODS


def code_fingerprint(obj: Any) -> str:
    """A short hash of the source of ``obj`` (a class or function), or of its qualified name
    where the source is not available (a class defined in an interactive session)."""
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        text = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


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


def estimator_identity(method: str, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"name", "kwargs", "code"}`` of the estimator behind ``method``: ``code`` is the
    fingerprint of the estimator class (``ppo``, SB3's own, is covered by the SB3 version)."""
    if method in TURN_LEVEL_METHODS:
        return {"name": method, "kwargs": {}, "code": "stable_baselines3"}
    from routine_envs import credit

    cls = credit.estimator_class(method)
    return {"name": method, "kwargs": dict(kwargs or {}), "code": code_fingerprint(cls)}


def method_label(method: str, kwargs: dict[str, Any] | None = None) -> str:
    """How tables and plots name ``method`` with these estimator arguments: the estimator's
    ``label`` where it has one (GiGPO grouping by the privileged ``state_id`` says so), else
    the method name."""
    if method in TURN_LEVEL_METHODS:
        return method
    from routine_envs import credit

    cls = credit.estimator_class(method)
    if not isinstance(inspect.getattr_static(cls, "label", None), property):
        return method
    try:
        return str(cls(**dict(kwargs or {})).label)
    except (TypeError, ValueError):
        return method
