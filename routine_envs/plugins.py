"""Code from outside the package, named on a command line or in a config: ``package.module:Name``.

A *spec* is the text a user writes where the suite accepts a method, estimator, detector or
policy: a built-in name (``"gigpo"``) or an import path ``"package.module:Name"`` (``Name`` may
be dotted: ``"pkg.mod:Outer.Inner"``), either optionally followed by keyword arguments as a JSON
object: ``'my_lab.estimators:ScaledMC{"scale": 0.72}'``. :func:`parse_spec` splits the text,
:func:`load_object` imports the named object (in whatever process calls it: a spawned worker
imports it again from the same text, so outside code runs in the workers too).

A spec is untrusted text: it is at most :data:`MAX_SPEC_CHARS` characters, its JSON nests at most
:data:`MAX_JSON_DEPTH` levels, every number has at most :data:`MAX_NUMBER_CHARS` characters and is
finite (no ``NaN``, ``Infinity``, nor ``1e999``), no key is given twice. :func:`declared_arguments`
reads what a constructor accepts (its signature and type hints) and :func:`check_arguments`
checks keyword arguments against it (no unknown key, each value of its declared type).

Errors are one-line ``ValueError`` naming the spec and what went wrong (module not found, no such
attribute, bad JSON, the argument and its type), so a sweep refuses before any work.
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import math
import numbers
import textwrap
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_ARGUMENT_ITEMS",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_CHARS",
    "MAX_SPEC_CHARS",
    "Arguments",
    "Spec",
    "arguments_label",
    "brief",
    "builder_arguments",
    "callable_arguments",
    "check_arguments",
    "check_builder_arguments",
    "check_plugin_class",
    "check_requires",
    "declared_arguments",
    "describe_type",
    "is_import_path",
    "json_depth",
    "load_object",
    "one_line",
    "parse_spec",
    "raised",
    "source_hash",
    "strings_in",
    "syntax_of",
    "text_fingerprint",
]

MAX_SPEC_CHARS = 10_000
"""Longest spec text accepted (characters)."""
MAX_JSON_DEPTH = 16
"""Deepest nesting of the JSON arguments accepted (the outer object is level 1)."""
MAX_NUMBER_CHARS = 64
"""Longest number literal accepted in the JSON arguments (characters)."""
MAX_ARGUMENT_ITEMS = 1_000
"""Most items of a list or mapping argument, and most characters of a text argument, accepted
from data (a spec's JSON, a config file)."""


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


def brief(value: Any, limit: int = 80) -> str:
    """A one-line ``repr`` of ``value`` of at most about ``limit`` characters, for error messages
    (never raises: an object whose ``repr`` fails is named by its type)."""
    try:
        if isinstance(value, str) and len(value) > limit:
            return f"{value[:limit]!r}... ({len(value)} characters)"
        text = repr(value)
    except Exception:  # a repr that raises, an int too long to convert: name the type
        return f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def one_line(text: str, limit: int = 200) -> str:
    """``text`` with its whitespace runs (newlines included) made single spaces, cut to
    ``limit`` characters (``...`` marks a cut): an error message's part from outside code."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def raised(err: BaseException) -> str:
    """``"SystemExit: 3"``: an exception's type and message on one bounded line."""
    try:
        message = one_line(str(err))
    except Exception:  # a __str__ that raises
        message = ""
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def is_import_path(text: str) -> bool:
    """``"package.module:Name"`` (a colon with something on both sides), not a built-in name."""
    module, sep, name = text.partition(":")
    return bool(sep and module.strip() and name.strip())


def code_fingerprint(obj: Any) -> str:
    """A short hash (16 hex digits) of what the source of ``obj`` (a module, class or function)
    does (:func:`text_fingerprint`), or of its qualified name where the source is not available
    (defined in an interactive session): what a spec's run key records of its code."""
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        text = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"
    return text_fingerprint(text)


def source_hash(obj: Any) -> str:
    """16 hex digits of the source *text* of ``obj`` as it is (docstrings, comments and layout
    included): provenance recorded beside a result, never part of its key."""
    try:
        text = inspect.getsource(obj)
    except (OSError, TypeError):
        text = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', repr(obj))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def strings_in(value: Any) -> list[str]:
    """Every string inside a JSON value (keys and values, depth first): where a spec's arguments
    may name outside code (``detector_masked{"detector": "pkg.mod:Det"}``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_in(k), *strings_in(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings_in(v)]
    return []


def text_fingerprint(text: str) -> str:
    """The 16 hex digits :func:`code_fingerprint` gives the source ``text`` (what a verifier
    computes from a file it must not import): a hash of its syntax tree without docstrings or
    other bare strings (:func:`syntax_of`), so an edit of a docstring, a comment or the layout
    keeps it and any edit of what the code does changes it. A tree compares everything the
    code says, where a behavioural probe (advantages on a few batches) would miss an edit that
    changes numbers only off its probes and reuse a result it no longer gives. Text that does
    not parse (not Python, or nested past the parser's limits) is hashed as it is."""
    try:
        tree = ast.parse(textwrap.dedent(text))
        canonical = syntax_of(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        canonical = "text:" + text
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def syntax_of(node: Any) -> str:
    """A canonical text of a syntax tree: each node's type and its fields in order, without
    positions, without bare string statements (docstrings, attribute docstrings) and without
    fields that are ``None`` or empty, so the text is the same on every Python version that
    parses the code alike (3.12 added empty ``type_params``, 3.13 prints no empty field)."""
    if isinstance(node, ast.AST):
        parts = []
        for name, value in ast.iter_fields(node):
            if name == "kind" or value is None or value == []:
                continue  # Constant.kind ('u' prefix) does nothing; None/[]: absent fields
            if isinstance(value, list):
                value = [v for v in value if not _is_bare_string(v)] or [ast.Pass()]
            parts.append(f"{name}={syntax_of(value)}")
        return f"{type(node).__name__}({','.join(parts)})"
    if isinstance(node, list):
        return "[" + ",".join(syntax_of(v) for v in node) + "]"
    return f"{type(node).__name__}:{node!r}"


def _is_bare_string(node: Any) -> bool:
    """Whether ``node`` is a statement that is only a string (a docstring): it does nothing."""
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


# ------------------------------------------------------------------------------ parsing
class _Refused:
    """What the JSON hooks put in place of a value that is refused (with the reason), so the
    error can name the argument it belongs to."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _DuplicateKey(ValueError):
    pass


def _parse_int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"is a number of {digits} digits; at most {MAX_NUMBER_CHARS} are accepted")
    return int(text)


def _parse_float(text: str) -> float | _Refused:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(
            f"is a number of {len(text)} characters; at most {MAX_NUMBER_CHARS} are accepted"
        )
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"is {text}, which is not a finite float")
    return value


def _parse_constant(text: str) -> _Refused:
    return _Refused(f"is {text}; only finite numbers are accepted")


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def json_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest in JSON ``text`` (outside strings); linear time: what to
    check before ``json.loads`` of untrusted text (deep nesting is a ``RecursionError``)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _first_refused(kwargs: dict[str, Any]) -> tuple[str, str, _Refused] | None:
    """``(argument, path inside it, refusal)`` of the first refused value, depth first."""
    stack: list[tuple[str, str, Any]] = [(k, "", v) for k, v in reversed(kwargs.items())]
    while stack:
        name, path, value = stack.pop()
        if isinstance(value, _Refused):
            return name, path, value
        if isinstance(value, dict):
            stack.extend((name, f"{path}[{k!r}]", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((name, f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


def parse_spec(text: str, what: str = "spec") -> Spec:
    """Split ``'target{"key": value}'`` into the target and its keyword arguments.

    ``what`` names the parameter in error messages (``"--method"``, ``"estimator"``).

    Raises:
        ValueError: a spec longer than :data:`MAX_SPEC_CHARS`, an empty target, arguments that
            are not a JSON object (or nest deeper than :data:`MAX_JSON_DEPTH`, give a key twice,
            hold a number that is not finite or longer than :data:`MAX_NUMBER_CHARS`: the
            argument named), or a malformed import path.
    """
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string, got {type(text).__name__}")
    if len(text) > MAX_SPEC_CHARS:
        raise ValueError(
            f"{what} {brief(text)}: a spec is at most {MAX_SPEC_CHARS} characters, "
            f"this one has {len(text)}"
        )
    stripped = text.strip()
    brace = stripped.find("{")
    target, arguments = (stripped, "") if brace < 0 else (stripped[:brace], stripped[brace:])
    target = target.strip()
    named = f"{what} {brief(text)}"
    if not target:
        raise ValueError(f"{named}: no name before the arguments")
    kwargs: dict[str, Any] = {}
    if arguments:
        depth = json_depth(arguments)
        if depth > MAX_JSON_DEPTH:
            raise ValueError(
                f"{named}: the arguments nest {depth} levels deep; at most {MAX_JSON_DEPTH}"
            )
        try:
            kwargs = json.loads(
                arguments,
                parse_int=_parse_int,
                parse_float=_parse_float,
                parse_constant=_parse_constant,
                object_pairs_hook=_object_pairs,
            )
        except json.JSONDecodeError as err:
            raise ValueError(f"{named}: the arguments are not valid JSON ({err})") from None
        except _DuplicateKey as err:
            raise ValueError(f"{named}: the arguments give {brief(err.args[0])} twice") from None
        except (ValueError, RecursionError) as err:  # any other refusal of the decoder
            raise ValueError(f"{named}: the arguments are not valid JSON ({brief(err)})") from None
        if not isinstance(kwargs, dict):
            raise ValueError(f"{named}: the arguments must be a JSON object")
        refused = _first_refused(kwargs)
        if refused is not None:
            name, path, value = refused
            inside = f" (at {brief(path, 40)})" if path else ""
            raise ValueError(f"{named}: argument {brief(name, 40)}{inside} {value.reason}")
    if ":" in target and not is_import_path(target):
        raise ValueError(f"{named}: an import path is 'package.module:Name'")
    return Spec(target, kwargs, stripped)


def load_object(path: str, what: str = "object") -> Any:
    """Import ``"package.module:Name"`` (``Name`` may be dotted) and return the object.

    Anything raised while importing the module or reading the attribute, ``SystemExit`` and
    ``KeyboardInterrupt`` included (a plugin must not end or interrupt the command that loads
    it: the command reports it as a bad spec), becomes the ``ValueError``.

    Raises:
        ValueError: not an import path, the module cannot be imported (what it raised is
            quoted), or it has no such attribute.
    """
    if not is_import_path(path):
        raise ValueError(f"{what} {brief(path)} is not an import path 'package.module:Name'")
    module_name, _, attribute = path.partition(":")
    module_name = module_name.strip()
    try:
        module = importlib.import_module(module_name)
    except BaseException as err:  # user code: report whatever it raised
        hint = ""
        if isinstance(err, ModuleNotFoundError):
            hint = "; is it on the Python path (PYTHONPATH)?"
        raise ValueError(
            f"{what} {brief(path)}: cannot import module {brief(module_name)} "
            f"({raised(err)}, raised while importing it){hint}"
        ) from None
    obj: Any = module
    for part in attribute.strip().split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(
                f"{what} {brief(path)}: module {brief(module_name)} has no attribute "
                f"{brief(attribute.strip())}"
            ) from None
        except BaseException as err:  # a module __getattr__, a descriptor
            raise ValueError(
                f"{what} {brief(path)}: reading attribute {brief(part)} raised {raised(err)}"
            ) from None
    return obj


# ---------------------------------------------------------------------------- arguments
@dataclass(frozen=True)
class Arguments:
    """The keyword arguments a constructor (or builder) accepts.

    Attributes:
        hints: argument name -> its declared type (``typing.Any`` where undeclared).
        open: whether it also takes ``**kwargs`` (any other name is accepted, unchecked).
    """

    hints: Mapping[str, Any]
    open: bool = False


def _hints(obj: Any, annotations: Mapping[str, Any]) -> dict[str, Any]:
    """The type hints of ``obj`` (a class or a function); an annotation that cannot be
    evaluated (a name defined under ``TYPE_CHECKING``, a local class) is ``Any``."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # fall back to one annotation at a time
        pass
    scope = getattr(inspect.getmodule(obj), "__dict__", {})
    out: dict[str, Any] = {}
    for name, annotation in annotations.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(scope))  # as get_type_hints does
            except Exception:
                annotation = Any
        out[name] = annotation
    return out


def callable_arguments(func: Callable[..., Any], skip: int = 0) -> Arguments:
    """The keyword arguments of ``func`` after its first ``skip`` parameters (``Arguments(open=
    True)`` when its signature cannot be read)."""
    try:
        parameters = list(inspect.signature(func).parameters.values())[skip:]
    except (TypeError, ValueError):
        return Arguments({}, open=True)
    hints = _hints(func, getattr(func, "__annotations__", {}))
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return Arguments(
        {p.name: hints.get(p.name, Any) for p in parameters if p.kind in kinds},
        open=any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters),
    )


def declared_arguments(cls: type) -> Arguments:
    """What ``cls(...)`` accepts: a dataclass's init fields with their type hints, else the
    parameters of its ``__init__`` (or ``__new__``) with theirs."""
    if dataclasses.is_dataclass(cls):
        annotations: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            annotations.update(vars(klass).get("__annotations__", {}))
        hints = _hints(cls, annotations)
        init = [f.name for f in dataclasses.fields(cls) if f.init]
        signature = callable_arguments(cls)
        return Arguments({n: hints.get(n, Any) for n in init}, open=signature.open)
    signature = callable_arguments(cls)
    init = cls.__init__ if "__init__" in _defined(cls) else cls.__new__
    hints = _hints(init, getattr(init, "__annotations__", {}))
    return Arguments({n: hints.get(n, h) for n, h in signature.hints.items()}, signature.open)


def builder_arguments(cls: type, extra: Mapping[str, Any] | None = None) -> Arguments:
    """What building ``cls`` the suite's way accepts as keyword arguments: the parameters its
    ``from_context(context, ...)`` classmethod names (estimators, detectors), then, where that
    forwards ``**kwargs`` (or is absent), the constructor's (:func:`declared_arguments`); last
    ``extra`` and the class's ``extra_arguments`` (a mapping name -> type of the arguments its
    ``from_context`` reads beyond those, e.g. ``mc_rollout``'s ``source="model"``)."""
    accepted = _signature_arguments(cls)
    declared = getattr(cls, "extra_arguments", None)
    for more in (extra, declared):
        if isinstance(more, Mapping):
            accepted = Arguments({**accepted.hints, **more}, accepted.open)
    return accepted


@functools.lru_cache(maxsize=512)
def _signature_arguments(cls: type) -> Arguments:
    """:func:`builder_arguments` from the signatures only (read once per class)."""
    build = getattr(cls, "from_context", None)
    accepted = Arguments({}, open=True) if build is None else callable_arguments(build, skip=1)
    if accepted.open:
        constructor = declared_arguments(cls)
        accepted = Arguments({**constructor.hints, **accepted.hints}, constructor.open)
    return Arguments(types.MappingProxyType(dict(accepted.hints)), accepted.open)  # shared


def check_plugin_class(
    cls: type,
    where: str,
    attributes: Collection[str],
    what: str,
    kinds: Mapping[str, type] | None = None,
    fields: Collection[str] | None = None,
) -> None:
    """``ValueError`` unless instances of ``cls`` can follow a protocol of ``attributes`` and
    ``__call__(batch)``: the class declares each attribute (a class attribute, a property, an
    annotation or a constructor argument), a ``__call__`` that takes one argument, the
    attributes it sets on the class itself have the types ``kinds`` gives (``name -> str``)
    and a ``requires`` set there names only ``fields`` (:func:`check_requires`).

    ``what`` names the protocol in the message (``"an advantage estimator"``)."""
    declared = _defined(cls) | set(builder_arguments(cls).hints)
    for klass in cls.__mro__:
        declared |= set(vars(klass).get("__annotations__", {}))
    missing = [a for a in attributes if a not in declared]
    if "__call__" not in _defined(cls):
        missing.append("__call__(batch)")
    if missing:
        raise ValueError(f"{where} is not {what}: it lacks {missing}")
    try:
        inspect.signature(inspect.getattr_static(cls, "__call__")).bind(None, None)
    except TypeError:
        raise ValueError(
            f"{where} is not {what}: its __call__ does not take one argument (the batch)"
        ) from None
    except ValueError:  # no signature to read (a builtin): the built object is checked later
        pass
    for attribute, kind in (kinds or {}).items():
        static = inspect.getattr_static(cls, attribute, None)
        if isinstance(static, _PLAIN_VALUES) and not isinstance(static, kind):
            raise ValueError(
                f"{where} is not {what}: {attribute} must be {describe_type(kind)}, got "
                f"{brief(static)}"
            )
    requires = inspect.getattr_static(cls, "requires", None)
    if fields is not None and isinstance(requires, Collection):
        check_requires(requires, fields, where)


def check_requires(requires: Any, fields: Collection[str], where: str) -> None:
    """``ValueError`` unless ``requires`` (of the estimator or detector ``where``) is a
    collection of names among ``fields`` (the batch fields)."""
    if isinstance(requires, str) or not isinstance(requires, Collection):
        raise ValueError(
            f"{where}: requires must be a set of batch field names, got {brief(requires)}"
        )
    unknown = sorted(map(str, set(requires) - set(fields)))
    if unknown:
        raise ValueError(f"{where} requires unknown batch fields {unknown}; known: {list(fields)}")


_PLAIN_VALUES = (str, bytes, int, float, Collection, type(None))
"""Class attributes that are values (not properties, methods or other descriptors)."""


def arguments_label(kind: str, label: str, text: str | None = None) -> str:
    """``"bad arguments for estimator 'gigpo' in 'gigpo{...}'"``: how argument errors start
    (``kind``: estimator, detector; ``label``: the target; ``text``: the spec as written)."""
    spec = f" in {brief(text)}" if text and text != label else ""
    return f"bad arguments for {kind} {brief(label)}{spec}"


def check_builder_arguments(
    found: Any,
    kwargs: Mapping[str, Any],
    where: str,
    from_data: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Check the keyword arguments to build ``found`` (a class, or a ready object that takes
    none) with, before anything is built.

    Args:
        found: what a spec resolves to: a class, or an object.
        kwargs: the arguments.
        where: what the message starts with (:func:`arguments_label`).
        from_data: the arguments are data (a spec's JSON, a config file): none that the class's
            ``context_fields`` fill from the caller's context, none of an object type, bounded
            sizes (:func:`check_arguments`); else Python values.
        extra: arguments its builder reads beyond its signatures (:func:`builder_arguments`).

    Raises:
        ValueError: an unknown argument (the accepted ones listed), a value not of its declared
            type (named, with its type), arguments for a ready object; one line.
    """
    if not isinstance(found, type):
        if kwargs:
            raise ValueError(
                f"{where}: keyword arguments {brief(sorted(kwargs), 200)} given with an object"
            )
        return
    filled = getattr(found, "context_fields", None)
    check_arguments(
        kwargs,
        builder_arguments(found, extra),
        where,
        from_data=from_data,
        context_filled=tuple(filled) if isinstance(filled, Mapping) else (),
    )


def _defined(cls: type) -> set[str]:
    """Names defined in the class bodies of ``cls``'s hierarchy, ``object`` excluded."""
    return {name for klass in cls.__mro__ if klass is not object for name in vars(klass)}


# ------------------------------------------------------------------------ type checking
_UNIONS = (typing.Union, types.UnionType)
_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.Set)
_MAPPINGS = (dict, collections.abc.Mapping)
_JSON_SCALARS = (type(None), bool, int, float, str)


def _is_json_type(hint: Any) -> bool:
    """Whether JSON data can give a value of type ``hint`` at all."""
    origin = typing.get_origin(hint) or hint
    if hint is Any or hint is object or hint in _JSON_SCALARS or origin is typing.Literal:
        return True
    if origin in _UNIONS:
        return any(_is_json_type(h) for h in typing.get_args(hint))
    return origin in _SEQUENCES or origin in _MAPPINGS


def describe_type(hint: Any, from_data: bool = False) -> str:
    """``hint`` in words for error messages: ``"a finite number"``, ``"'model' or 'branch'"``
    (``from_data``: only the members of a union that data can give)."""
    origin = typing.get_origin(hint) or hint
    args = typing.get_args(hint)
    names = {type(None): "null", bool: "true or false", int: "an integer", str: "a text"}
    if hint is float:
        return "a finite number"
    if hint in names:
        return names[hint]
    if origin is typing.Literal:
        return " or ".join(brief(a, 40) for a in args)
    if origin in _UNIONS:
        members = [h for h in args if not from_data or _is_json_type(h)] or list(args)
        return " or ".join(dict.fromkeys(describe_type(h, from_data) for h in members))
    if origin in _SEQUENCES:
        inner = [a for a in args if a is not Ellipsis]
        return f"a list of {describe_type(inner[0])}" if len(set(inner)) == 1 else "a list"
    if origin in _MAPPINGS:
        return f"a mapping of {describe_type(args[1])}" if len(args) == 2 else "a mapping"
    return getattr(hint, "__name__", None) or brief(hint, 40)


def _matches(value: Any, hint: Any, from_data: bool) -> bool:
    """Whether ``value`` is of type ``hint`` (``from_data``: JSON or YAML data, which never
    holds objects of other types; else a Python value, checked where the hint is checkable)."""
    origin = typing.get_origin(hint) or hint
    args = typing.get_args(hint)
    if hint is Any or hint is object:
        return True
    if origin in _UNIONS:
        return any(_matches(value, h, from_data) for h in args)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return (
            isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
        )
    if hint is str:
        return isinstance(value, str)
    if origin in _SEQUENCES:
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Collection):
            return False
        items = list(value)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(items) == len(args) and all(
                _matches(v, h, from_data) for v, h in zip(items, args, strict=True)
            )
        return not args or all(_matches(v, args[0], from_data) for v in items)
    if origin in _MAPPINGS:
        if not isinstance(value, Mapping):
            return False
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        return all(
            _matches(k, key_hint, from_data) and _matches(v, value_hint, from_data)
            for k, v in value.items()
        )
    if from_data:
        return False  # an object type: data never holds one
    if origin is collections.abc.Callable:
        return callable(value)
    if isinstance(origin, type):
        try:
            return isinstance(value, origin)
        except TypeError:  # a protocol that is not runtime-checkable: cannot tell
            return True
    return True  # a typing construct this check does not know: accept


def check_arguments(
    kwargs: Mapping[str, Any],
    accepted: Arguments,
    where: str,
    from_data: bool = True,
    context_filled: Collection[str] = (),
) -> None:
    """Check keyword arguments against what a constructor accepts.

    Args:
        kwargs: the arguments to check.
        accepted: what the constructor accepts (:func:`declared_arguments`).
        where: what the error messages start with (``"bad arguments for estimator 'gigpo'"``).
        from_data: the arguments come from data (a spec's JSON, a config file): they may not
            give an argument of an object type, nor one in ``context_filled``, and texts, lists
            and mappings hold at most :data:`MAX_ARGUMENT_ITEMS` items; else Python values,
            checked against the hints that can be checked.
        context_filled: arguments the caller's context fills (an environment, a policy table).

    Raises:
        ValueError: an unknown argument (the accepted ones listed), or a value not of its type
            (the argument, its type and the value named), one line.
    """
    accepted_names = one_line(", ".join(sorted(accepted.hints)), 300) or "no arguments"
    for name, value in kwargs.items():
        if name not in accepted.hints:
            if accepted.open and isinstance(name, str):
                continue
            raise ValueError(
                f"{where}: unknown argument {brief(name, 40)}; it accepts {accepted_names}"
            )
        hint = accepted.hints[name]
        if from_data and name in context_filled and (hint is Any or hint is object):
            raise ValueError(
                f"{where}: argument {name!r} is filled by the caller's context; it cannot be "
                "given as data (do not pass it)"
            )
        if from_data and not _is_json_type(hint):
            filled = "the caller's context fills it; " if name in context_filled else ""
            raise ValueError(
                f"{where}: argument {name!r} takes an object ({describe_type(hint)}), which "
                f"data cannot give ({filled}do not pass it)"
            )
        large = _too_large(value) if from_data else None
        if large is not None:
            raise ValueError(f"{where}: argument {name!r} {large}")
        if not _matches(value, hint, from_data):
            raise ValueError(
                f"{where}: argument {name!r} must be {describe_type(hint, from_data)}, got "
                f"{type(value).__name__} {brief(value, 60)}"
            )


def _too_large(value: Any) -> str | None:
    """Why data ``value`` is too large (a text, list or mapping of more than
    :data:`MAX_ARGUMENT_ITEMS`, nesting deeper than :data:`MAX_JSON_DEPTH`), else ``None``."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str | bytes | Mapping | list | tuple | set | frozenset):
            if len(item) > MAX_ARGUMENT_ITEMS:
                what = "characters" if isinstance(item, str | bytes) else "items"
                return f"has {len(item)} {what}; at most {MAX_ARGUMENT_ITEMS} are accepted"
            if isinstance(item, str | bytes):
                continue
            if depth > MAX_JSON_DEPTH:
                return f"nests deeper than {MAX_JSON_DEPTH} levels"
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return None
