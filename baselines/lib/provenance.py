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


def estimator_code(target: str, kwargs: dict[str, Any] | None = None) -> str:
    """The fingerprint of the code behind an estimator name or import path: the class of a
    built-in estimator; for outside code (``package.module:Name``) the whole source of its
    module, so an edit of a helper function beside the class makes a new run key too. An
    estimator class with ``code_dependencies(kwargs)`` (``detector_masked``: the detector its
    arguments name) adds the fingerprints of what that returns."""
    from routine_envs import credit, plugins

    obj = credit.resolve_estimator(target)
    if plugins.is_import_path(target):
        code = code_fingerprint(inspect.getmodule(obj) or obj)
    else:
        code = code_fingerprint(obj)
    dependencies = getattr(obj, "code_dependencies", None)
    if dependencies is not None:
        code += "".join(f"+{code_fingerprint(d)}" for d in dependencies(dict(kwargs or {})))
    return code


def estimator_identity(method: str, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"name", "kwargs", "code"}`` of the estimator behind ``method`` (a name or import
    path, optionally with JSON arguments that override ``kwargs``): ``code`` is
    :func:`estimator_code` (``ppo``, SB3's own, is covered by the SB3 version)."""
    from routine_envs import plugins

    spec = plugins.parse_spec(method, "method")
    if spec.target in TURN_LEVEL_METHODS:
        return {"name": method, "kwargs": {}, "code": "stable_baselines3"}
    merged = {**dict(kwargs or {}), **spec.kwargs}
    return {"name": spec.target, "kwargs": merged, "code": estimator_code(spec.target, merged)}


def method_label(method: str, kwargs: dict[str, Any] | None = None) -> str:
    """How tables and plots name ``method`` with these estimator arguments: the spec as written
    where it has JSON arguments or names outside code; else the estimator's ``label`` where it
    has one (GiGPO grouping by the privileged ``state_id`` says so), else the method name."""
    from routine_envs import credit, plugins

    spec = plugins.parse_spec(method, "method")
    if spec.target in TURN_LEVEL_METHODS:
        return method
    if spec.kwargs or spec.is_import_path:
        return spec.text
    cls = credit.estimator_class(method)
    if not isinstance(inspect.getattr_static(cls, "label", None), property):
        return method
    try:
        return str(cls(**dict(kwargs or {})).label)
    except (TypeError, ValueError):
        return method
