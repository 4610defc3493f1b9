"""Code from outside the package, named on a command line or in a config: ``package.module:Name``.

A *spec* is the text a user writes where the suite accepts a method, estimator, detector or
policy: a built-in name (``"gigpo"``) or an import path ``"package.module:Name"`` (``Name`` may
be dotted: ``"pkg.mod:Outer.Inner"``), either optionally followed by keyword arguments as a JSON
object: ``'my_lab.estimators:ScaledMC{"scale": 0.72}'``. :func:`parse_spec` splits the text,
:func:`load_object` imports the named object (in whatever process calls it: a spawned worker
imports it again from the same text, so outside code runs in the workers too).

Errors are ``ValueError`` naming the spec and what went wrong (module not found, no such
attribute, bad JSON), so a sweep refuses before any work.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Spec", "is_import_path", "load_object", "parse_spec"]


@dataclass(frozen=True)
class Spec:
    """A parsed spec.

    Attributes:
        target: the built-in name or the import path ``"package.module:Name"``.
        kwargs: keyword arguments given with it (from the JSON object after the target).
        text: the spec as written (what tables and run keys name).
    """

    target: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    @property
    def is_import_path(self) -> bool:
        """Whether ``target`` names outside code (``module:Name``) rather than a built-in."""
        return is_import_path(self.target)


def is_import_path(text: str) -> bool:
    """``"package.module:Name"`` (a colon with something on both sides), not a built-in name."""
    module, sep, name = text.partition(":")
    return bool(sep and module.strip() and name.strip())


def parse_spec(text: str, what: str = "spec") -> Spec:
    """Split ``'target{"key": value}'`` into the target and its keyword arguments.

    ``what`` names the parameter in error messages (``"--method"``, ``"estimator"``).

    Raises:
        ValueError: an empty target, arguments that are not a JSON object, or a malformed
            import path.
    """
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string, got {type(text).__name__}")
    stripped = text.strip()
    brace = stripped.find("{")
    target, arguments = (stripped, "") if brace < 0 else (stripped[:brace], stripped[brace:])
    target = target.strip()
    if not target:
        raise ValueError(f"{what} {text!r}: no name before the arguments")
    kwargs: dict[str, Any] = {}
    if arguments:
        try:
            kwargs = json.loads(arguments)
        except json.JSONDecodeError as err:
            raise ValueError(f"{what} {text!r}: the arguments are not valid JSON ({err})") from None
        if not isinstance(kwargs, dict):
            raise ValueError(f"{what} {text!r}: the arguments must be a JSON object")
    if ":" in target and not is_import_path(target):
        raise ValueError(f"{what} {text!r}: an import path is 'package.module:Name'")
    return Spec(target, kwargs, stripped)


def load_object(path: str, what: str = "object") -> Any:
    """Import ``"package.module:Name"`` (``Name`` may be dotted) and return the object.

    Raises:
        ValueError: not an import path, the module cannot be imported (the import error is
            quoted), or it has no such attribute.
    """
    if not is_import_path(path):
        raise ValueError(f"{what} {path!r} is not an import path 'package.module:Name'")
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as err:  # any error while importing user code: name the spec
        raise ValueError(
            f"{what} {path!r}: cannot import module {module_name!r} "
            f"({type(err).__name__}: {err}); is it on the Python path (PYTHONPATH)?"
        ) from None
    obj: Any = module
    for part in attribute.strip().split("."):
        if not hasattr(obj, part):
            raise ValueError(
                f"{what} {path!r}: module {module_name!r} has no attribute {attribute!r}"
            )
        obj = getattr(obj, part)
    return obj
