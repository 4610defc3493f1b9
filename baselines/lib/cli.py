"""One way to turn a settings dataclass into a command line, used by every script.

Each field of the dataclass becomes one kebab-case flag (``env_id`` -> ``--env-id``) whose help
is the field's ``metadata["help"]`` (required: a field without help text is an error) followed
by its default. The field's type sets the parsing:

- ``bool``: ``--flag`` / ``--no-flag``;
- ``int``, ``float``, ``str``, ``Path`` (and ``X | None``): one value;
- ``list[X]``, ``tuple[X, ...]``: one or more values (``--routine-lengths 0 3 10``);
- ``dict``: one JSON object (``--env-kwargs '{"routine_length": 5}'``).

``metadata["choices"]`` restricts the values, ``metadata["min"]`` bounds a number (each value
of a list) from below, ``metadata["positional"]`` makes the field a positional argument. A
list flag refuses a value given twice (``--seeds 0 0 1`` would run seed 0 twice and count it
twice), unless ``metadata["allow_duplicates"]`` (a network shape ``64 64``).
Errors are one line naming the flag, exit status 2, before any work. Flags that are not given
keep the value of a *base* settings object (the dataclass defaults, or a named sweep's
settings), so a script can tell what was given.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import shlex
import sys
import tempfile
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

S = TypeVar("S")

SCALARS = (bool, int, float, str, Path)


def _strip_optional(kind: Any) -> Any:
    """``X`` of ``X | None`` (``Optional[X]``); ``kind`` otherwise."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return kind


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def duplicates(values: Sequence[Any]) -> list[Any]:
    """The values that occur more than once in ``values``, in order of first occurrence."""
    seen, twice = [], []
    for v in values:
        if v in seen and v not in twice:
            twice.append(v)
        seen.append(v)
    return twice


def check_unique(name: str, values: Sequence[Any]) -> None:
    """``ValueError`` naming the setting ``name`` when ``values`` holds a value twice."""
    twice = duplicates(values)
    if twice:
        raise ValueError(f"{name}: duplicate values {twice}; give each value once")


def _at_least(kind: type, low: float) -> Any:
    """An argparse type: a ``kind`` value of at least ``low``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {kind.__name__}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def json_object(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object (``'{"routine_length": 5}'``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"routine_length\": 5}}', got {text!r} ({err})"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f"must be a JSON object such as '{{\"routine_length\": 5}}', got {text!r}"
        )
    return value


class _Unique(argparse.Action):
    """Store a list, refusing a value given twice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any):
        twice = duplicates(values)
        if twice:
            parser.error(f"argument {option}: duplicate values {twice}; give each value once")
        setattr(namespace, self.dest, values)


class SettingsParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> typing.NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def add_settings_arguments(parser: argparse.ArgumentParser, settings_cls: type) -> None:
    """Add one argument per field of the dataclass ``settings_cls`` to ``parser``.

    Raises:
        ValueError: a field without ``metadata["help"]`` or of a type this module cannot parse.
    """
    hints = typing.get_type_hints(settings_cls)
    for f in dataclasses.fields(settings_cls):
        if not f.init:
            continue
        help_text = f.metadata.get("help")
        if not help_text:
            raise ValueError(f"{settings_cls.__name__}.{f.name} has no help text")
        kind = _strip_optional(hints[f.name])
        origin = typing.get_origin(kind) or kind
        default = _field_default(f)
        if default is not dataclasses.MISSING and default is not None and _show(default):
            help_text = f"{help_text} (default: {_show(default)})"
        options: dict[str, Any] = {"help": help_text, "default": argparse.SUPPRESS}
        if "choices" in f.metadata:
            options["choices"] = list(f.metadata["choices"])
        low = f.metadata.get("min")
        if origin is bool:
            options["action"] = argparse.BooleanOptionalAction
        elif origin in (list, tuple):
            args = typing.get_args(kind)
            item = args[0] if args else str
            options.update(nargs="+", type=item if low is None else _at_least(item, low))
            if not f.metadata.get("allow_duplicates"):
                options["action"] = _Unique
        elif origin is dict:
            options.update(type=json_object, metavar="JSON")
        elif origin in SCALARS:
            options["type"] = origin if low is None else _at_least(origin, low)
        else:
            raise ValueError(f"{settings_cls.__name__}.{f.name}: cannot parse type {kind!r}")
        if f.metadata.get("positional"):
            options.pop("default")
            parser.add_argument(f.name, **options)
        else:
            parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, **options)


def fail(error: Any) -> typing.NoReturn:
    """Print ``error: <message>`` as one line on stderr and exit with status 2 (bad settings)."""
    print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
    sys.exit(2)


def resume_command() -> str:
    """The command line this process was started with, quoted for a shell (what reruns it)."""
    return shlex.join(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])


def os_error_line(err: OSError) -> str:
    """One line for a failed file operation, naming its path: ``cannot write PATH: No space
    left on device (ENOSPC)``."""
    code = errno.errorcode.get(err.errno or 0, "")
    what = err.strerror or str(err)
    where = f"{err.filename}: " if err.filename else ""
    return " ".join(f"{where}{what}{f' ({code})' if code else ''}".split())


def run_main(main: typing.Callable[[Any], Any], args: Any) -> Any:
    """``main(args)`` for a script, with every way it can end as one line on stderr:

    - bad settings (``ValueError``): ``error: <message>``, exit status 2 (:func:`fail`);
    - a failed run of a sweep names itself, exit status 1 (the runs done are kept);
    - a full disk or a permission error (``OSError``): ``error: <path>: <reason>``, exit status
      1 (records that could not be written are kept aside, see
      :class:`~baselines.lib.results.ResultsFile`);
    - Ctrl-C: what is saved and the command that resumes, exit status 130.
    """
    from baselines.lib.runner import Interrupted, RunFailed

    try:
        return main(args)
    except ValueError as err:
        fail(err)
    except RunFailed as err:
        raise SystemExit(f"error: {err}") from None
    except OSError as err:
        print(f"error: {os_error_line(err)}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt as err:
        saved = (
            str(err)
            if isinstance(err, Interrupted)
            else "interrupted (Ctrl-C): what was written before is kept"
        )
        print(f"{saved}; resume with: {resume_command()}", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


def check_output_folder(folder: Path, flag: str = "--out") -> None:
    """Make sure ``folder`` exists (created if need be), is a folder and can be written, before
    any work or any file is written; ``ValueError`` naming ``flag`` and the path otherwise."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"{flag} {folder}: a file is in the way (give a folder)") from None
    except OSError as err:
        raise ValueError(
            f"{flag} {folder}: cannot create the folder: {os_error_line(err)}"
        ) from None
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ValueError(f"{flag} {folder}: cannot write there: {os_error_line(err)}") from None


def settings_parser(settings_cls: type, description: str | None = None) -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with one argument per field of ``settings_cls``."""
    parser = SettingsParser(
        description=description or (settings_cls.__doc__ or "").strip().splitlines()[0]
    )
    add_settings_arguments(parser, settings_cls)
    return parser


def settings_from(settings_cls: type[S], given: Mapping[str, Any], base: S | None = None) -> S:
    """``base`` (default: ``settings_cls()``) with the ``given`` fields replaced; sequences are
    converted to the field's container (``tuple`` fields get tuples)."""
    hints = typing.get_type_hints(settings_cls)
    values = {}
    for name, value in given.items():
        container = typing.get_origin(_strip_optional(hints[name]))
        values[name] = tuple(value) if container is tuple else value
    return dataclasses.replace(base if base is not None else settings_cls(), **values)


def parse_settings(
    settings_cls: type[S],
    argv: Sequence[str] | None = None,
    base: S | None = None,
    description: str | None = None,
) -> S:
    """Parse ``argv`` (default: ``sys.argv[1:]``) into a ``settings_cls`` instance: flags given
    replace the fields of ``base`` (default: the dataclass defaults)."""
    ns = settings_parser(settings_cls, description).parse_args(argv)
    return settings_from(settings_cls, vars(ns), base)
