"""The one command-line grammar of the project: commands generated from settings dataclasses.

Every entry point (``python -m routine_envs ...``, ``python -m baselines ...``, the
``routine-envs`` console script) is a tree of :class:`Group` and :class:`Command` rows; a
command names its settings dataclass and the function that runs it, and its flags are made from
the dataclass's fields (standard library only: :mod:`argparse`). Each field becomes one
kebab-case flag (``env_id`` -> ``--env-id``) whose help is the field's ``metadata["help"]``
(required: a field without help text is an error), followed by its default. The field's type
sets the parsing:

- ``bool``: ``--flag`` / ``--no-flag``;
- ``int``, ``float``, ``str``, ``Path`` (and ``X | None``): one value;
- ``list[X]``, ``tuple[X, ...]``: one or more values (``--seeds 0 1 2``);
- ``dict``: one JSON object (``--env-kwargs '{"routine_length": 5}'``).

Metadata: ``choices`` restricts the values, ``min`` and ``max`` bound a number (each value of a
list), ``positional`` makes the field a positional argument (``remainder``: every word left,
for a command line to run), ``aliases`` adds other spellings that print a deprecation notice
(``--kwargs`` for ``--env-kwargs``), ``allow_duplicates`` lets a list hold a value twice (a
network shape ``64 64``; otherwise ``--seeds 0 0 1`` is refused: seed 0 would count twice).

Errors are one line naming the flag, exit status 2, before any work. Flags that are not given
keep the value of a *base* settings object (the dataclass defaults, or what a command's
``base`` hook makes of the flags given, e.g. a named sweep), so a command can tell what was
given. Commands load their settings and function lazily (``"package.module:name"``), so the
top-level ``--help`` imports nothing heavy and a command that needs an extra says which.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import importlib
import inspect
import json
import math
import shlex
import sys
import tempfile
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

S = TypeVar("S")

SCALARS = (bool, int, float, str, Path)
EXTRAS = {
    "torch": "baselines",
    "stable_baselines3": "baselines",
    "sb3_contrib": "baselines",
    "matplotlib": "baselines",
    "yaml": "baselines",
    "tqdm": "baselines",
    "scipy": "diagnose",
    "sklearn": "detectors",
    "pettingzoo": "multiagent",
    "ray": "cluster",
}
"""Top-level modules a command may need, and the extra of ``routine-envs`` that installs each."""


# ----------------------------------------------------------------------------- fields to flags
def strip_optional(kind: Any) -> Any:
    """``X`` of ``X | None`` (``Optional[X]``); ``kind`` otherwise."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return kind


def field_default(f: dataclasses.Field) -> Any:
    """The default of a dataclass field (``dataclasses.MISSING`` when it has none)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def show(value: Any) -> str:
    """A default as the command line writes it: JSON for a mapping, words for a list."""
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


def flag_of(name: str) -> str:
    """The flag of the setting ``name`` (``routine_lengths`` -> ``--routine-lengths``); a name
    that is a flag already is kept."""
    return name if name.startswith("-") else "--" + name.replace("_", "-")


def check_unique(name: str, values: Sequence[Any]) -> None:
    """``ValueError`` naming the flag of the setting ``name`` when ``values`` holds a value
    twice."""
    twice = duplicates(values)
    if twice:
        raise ValueError(f"{flag_of(name)}: duplicate values {twice}; give each value once")


def as_typed(value: Any) -> str:
    """``value`` as it would be typed after its flag (quoted for a shell where needed):
    ``nope``, ``0 -1``, ``'{"a": 1}'``, ``''``."""
    if isinstance(value, (list, tuple)):
        return " ".join(shlex.quote(str(v)) for v in value)
    return shlex.quote(show(value))


def name_the_flag(message: str, settings: Any) -> str:
    """``message`` with a leading setting name of ``settings`` (a dataclass instance, or a
    mapping of field values) replaced by its flag and the value given: ``statistic must be one
    of [...]`` -> ``--statistic nope: must be one of [...]``; ``target_success: ...`` alike.
    Other messages (one naming a flag already, or not starting with a setting's name followed by
    ``must`` or a colon) are returned unchanged."""
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
    elif isinstance(settings, Mapping):
        values = dict(settings)
    else:
        return message
    for name, value in values.items():
        for joint in (" must ", ": "):
            if message.startswith(name + joint):
                rest = message[len(name) :].removeprefix(":").strip()
                return f"{flag_of(name)} {as_typed(value)}: {rest}"
    return message


def _bounded(kind: type, low: float | None, high: float | None) -> Any:
    """An argparse type: a ``kind`` value within ``[low, high]`` (either bound optional); a
    float is never NaN."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {kind.__name__}, got {text!r}") from None
        if isinstance(value, float) and math.isnan(value):
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}")
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def path_text(text: str) -> Path:
    """An argparse type: a path, never empty (``Path("")`` is the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must be a path, got {text!r}")
    return Path(text)


path_text.__name__ = "path"


def json_object(text: str) -> dict[str, Any]:
    """An argparse type: a JSON object (``'{"routine_length": 5}'``)."""
    example = "must be a JSON object such as '{\"routine_length\": 5}'"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"{example}, got {text!r} ({err})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{example}, got {text!r}")
    return value


class _Store(argparse.Action):
    """Store the value(s) given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any):
        setattr(namespace, self.dest, values)


class _Unique(_Store):
    """Store a list, refusing a value given twice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any):
        twice = duplicates(values)
        if twice:
            parser.error(f"argument {option}: duplicate values {twice}; give each value once")
        super().__call__(parser, namespace, values, option)


def _deprecated(action: type[argparse.Action], new: str) -> type[argparse.Action]:
    """``action``, printing ``--old is deprecated: use --new`` when an alias is used."""

    class Deprecated(action):  # type: ignore[misc, valid-type]
        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None):
            if option is not None and option != new:
                print(f"warning: {option} is deprecated: use {new}", file=sys.stderr)
            super().__call__(parser, namespace, values, option)

    return Deprecated


class SettingsParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr (exit status 2) and whose
    description keeps its paragraphs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:
        print(f"{self.prog}: error: {' '.join(message.split())} (see --help)", file=sys.stderr)
        sys.exit(2)


def help_text(f: dataclasses.Field, owner: str) -> str:
    """A field's help with its default, said once (``(default: X)`` unless the help already
    says it, nothing for an empty or ``None`` default)."""
    text = f.metadata.get("help")
    if not text:
        raise ValueError(f"{owner}.{f.name} has no help text")
    default = field_default(f)
    if "(default" in text or default in (dataclasses.MISSING, None, "", [], (), {}):
        return text
    shown = show(default)
    return f"{text} (default: {shown})" if shown else text


def flags_of(f: dataclasses.Field) -> list[str]:
    """The option strings of a field: ``--env-kwargs`` and its ``aliases``."""
    return [flag_of(f.name), *f.metadata.get("aliases", ())]


def add_settings_arguments(
    parser: argparse.ArgumentParser,
    settings_cls: type,
    include: Sequence[str] | None = None,
) -> list[argparse.Action]:
    """Add one argument per field of the dataclass ``settings_cls`` (only those named in
    ``include``, in the dataclass's order, when given) to ``parser``; the actions added.

    Raises:
        ValueError: a field without ``metadata["help"]``, of a type this module cannot parse,
            or an ``include`` name that is not a field.
    """
    hints = typing.get_type_hints(settings_cls)
    fields = [f for f in dataclasses.fields(settings_cls) if f.init]
    if include is not None:
        unknown = sorted(set(include) - {f.name for f in fields})
        if unknown:
            raise ValueError(f"{settings_cls.__name__} has no fields {unknown}")
        fields = [f for f in fields if f.name in include]
    actions = []
    for f in fields:
        kind = strip_optional(hints[f.name])
        origin = typing.get_origin(kind) or kind
        options: dict[str, Any] = {
            "help": help_text(f, settings_cls.__name__),
            "default": argparse.SUPPRESS,
        }
        if "choices" in f.metadata:
            options["choices"] = list(f.metadata["choices"])
        low, high = f.metadata.get("min"), f.metadata.get("max")
        bounded = low is not None or high is not None
        if origin is bool:
            options["action"] = argparse.BooleanOptionalAction
        elif origin in (list, tuple):
            args = [a for a in typing.get_args(kind) if a is not Ellipsis]
            item = args[0] if args else str
            nargs = argparse.REMAINDER if f.metadata.get("remainder") else "+"
            checked = bounded or item is float
            item_type = path_text if item is Path else item
            options.update(nargs=nargs, type=_bounded(item, low, high) if checked else item_type)
            if not f.metadata.get("allow_duplicates") and nargs == "+":
                options["action"] = _Unique
        elif origin is dict:
            options.update(type=json_object, metavar="JSON")
        elif origin in SCALARS:
            checked = bounded or origin is float  # a float flag never takes NaN
            plain = path_text if origin is Path else origin  # a path flag never takes ""
            options["type"] = _bounded(origin, low, high) if checked else plain
        else:
            raise ValueError(f"{settings_cls.__name__}.{f.name}: cannot parse type {kind!r}")
        if f.metadata.get("metavar"):
            options["metavar"] = f.metadata["metavar"]
        if f.metadata.get("positional"):
            options.pop("default")
            if field_default(f) is not dataclasses.MISSING and options.get("nargs") is None:
                options["nargs"] = "?"
                options["default"] = argparse.SUPPRESS
            actions.append(parser.add_argument(f.name, **options))
            continue
        names = flags_of(f)
        if len(names) > 1:
            base = options.pop("action", None)
            options["action"] = _deprecated(base or _Store, names[0])
        actions.append(parser.add_argument(*names, dest=f.name, **options))
    return actions


def description_of(settings_cls: type) -> str:
    """A command's description: the whole docstring of its settings class (paragraphs kept,
    each filled to the terminal's usual width)."""
    return inspect.cleandoc(settings_cls.__doc__ or settings_cls.__name__)


def settings_parser(
    settings_cls: type,
    description: str | None = None,
    prog: str | None = None,
    include: Sequence[str] | None = None,
) -> SettingsParser:
    """A :class:`SettingsParser` with one argument per field of ``settings_cls``."""
    text = description or description_of(settings_cls)
    paragraphs = [textwrap.fill(" ".join(p.split()), 88) for p in text.split("\n\n")]
    parser = SettingsParser(prog=prog, description="\n\n".join(paragraphs))
    add_settings_arguments(parser, settings_cls, include)
    return parser


def settings_from(settings_cls: type[S], given: Mapping[str, Any], base: S | None = None) -> S:
    """``base`` (default: ``settings_cls()``) with the ``given`` fields replaced; sequences are
    converted to the field's container (``tuple`` fields get tuples)."""
    hints = typing.get_type_hints(settings_cls)
    values = {}
    for name, value in given.items():
        container = typing.get_origin(strip_optional(hints[name]))
        values[name] = tuple(value) if container is tuple else value
    if base is not None:
        return dataclasses.replace(base, **values)
    missing = [
        flag_of(f.name)
        for f in dataclasses.fields(settings_cls)
        if f.init and f.name not in values and field_default(f) is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"{settings_cls.__name__}: {', '.join(missing)} must be given")
    try:
        return settings_cls(**values)
    except TypeError as err:
        raise ValueError(f"{settings_cls.__name__}: {err}") from None


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


def to_argv(settings: Any) -> list[str]:
    """The flags that parse back into ``settings``: one per field whose value differs from its
    default (positional fields always), the inverse of :func:`parse_settings` (but for a text
    value ``--``, which argparse reads as the end of the options)."""
    words: list[str] = []
    for f in dataclasses.fields(settings):
        if not f.init:
            continue
        value = getattr(settings, f.name)
        default = field_default(f)
        if f.metadata.get("positional"):
            words += [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]
            continue
        if default is not dataclasses.MISSING and value == default:
            continue
        flag = flags_of(f)[0]
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, (list, tuple)):
            words += [flag, *(str(v) for v in value)]
        elif isinstance(value, dict):
            words.append(f"{flag}={json.dumps(value)}")
        elif value is not None:  # FLAG=VALUE: a value may start with a minus sign
            words.append(f"{flag}={value}")
    return words


# ----------------------------------------------------------------------------- commands
def load(target: str | Any) -> Any:
    """``target`` itself, or the object a ``"package.module:name"`` string names. A module
    missing because an extra is not installed is a ``ValueError`` naming the extra."""
    if not isinstance(target, str):
        return target
    module, _, name = target.partition(":")
    try:
        found = importlib.import_module(module)
    except ImportError as err:
        top = (err.name or "").split(".")[0]
        if isinstance(err, ModuleNotFoundError) and top in EXTRAS:
            raise ValueError(
                f"this command needs {top}, which is not installed: "
                f'pip install "routine-envs[{EXTRAS[top]}]"'
            ) from None
        if "pip install" in str(err):  # a package that names its extra itself
            raise ValueError(str(err)) from None
        raise
    for part in name.split("."):
        found = getattr(found, part)
    return found


@dataclass(frozen=True)
class Command:
    """One command: its settings dataclass and the function that runs them.

    Attributes:
        name: the word that selects it (``run``, ``train``).
        summary: one line for the listing of its group.
        settings: the settings dataclass, or ``"package.module:Class"``.
        run: ``run(settings)``, or ``"package.module:function"``; what it returns is the
            command's result (an ``int`` is an exit status where the command is a script's).
        include: only these fields are flags (the others keep their defaults).
        fixed: fields set by the command itself (``{"command": "run"}``).
        base: ``base(given) -> settings``: the settings the flags given replace (a named
            sweep); default: the dataclass defaults.
        description: the ``--help`` text; default: the settings class's docstring.
        check: ``check(settings, parser)``: refuse settings the flags alone cannot
            (``parser.error``), before any work.
    """

    name: str
    summary: str
    settings: type | str
    run: Callable[[Any], Any] | str
    include: tuple[str, ...] | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    base: Callable[[dict[str, Any]], Any] | str | None = None
    description: str | None = None
    check: Callable[[Any, argparse.ArgumentParser], None] | str | None = None


@dataclass(frozen=True)
class Group:
    """Commands under one word (``benchmark run``, ``benchmark report``, ...).

    Attributes:
        name: the word that selects the group (the program name at the top).
        summary: one line for the listing of its parent.
        commands: its commands and subgroups, in the order ``--help`` lists them.
        default: the command run when none is named (``snr_lab`` runs ``all``).
        description: the text above the listing in ``--help``.
    """

    name: str
    summary: str
    commands: tuple[Command | Group, ...]
    default: str | None = None
    description: str | None = None

    def find(self, name: str) -> Command | Group | None:
        """The command or subgroup called ``name``."""
        return next((c for c in self.commands if c.name == name), None)

    def walk(self, prefix: str = "") -> list[tuple[str, Command]]:
        """Every command of the tree with its full name (``benchmark run``), in order."""
        found = []
        for item in self.commands:
            full = f"{prefix} {item.name}".strip()
            found += item.walk(full) if isinstance(item, Group) else [(full, item)]
        return found


def command_parser(command: Command, prog: str) -> SettingsParser:
    """The parser of ``command`` (``prog``: its full name, ``routine-envs benchmark run``)."""
    cls = load(command.settings)
    include = command.include
    if include is None and command.fixed:
        include = tuple(f.name for f in dataclasses.fields(cls) if f.name not in command.fixed)
    return settings_parser(cls, command.description, prog, include)


def group_help(group: Group, prog: str) -> str:
    """The listing of a group: usage, its description and one line per command."""
    width = max(len(c.name) for c in group.commands)
    lines = [f"usage: {prog} COMMAND [--help] ...", ""]
    if group.description or group.summary:
        lines += [group.description or group.summary, ""]
    lines.append("commands:")
    for item in group.commands:
        more = " ..." if isinstance(item, Group) else ""
        default = " (the default)" if item.name == group.default else ""
        lines.append(f"  {item.name:<{width}}  {item.summary}{more}{default}")
    lines += ["", f"{prog} COMMAND --help: the flags of a command."]
    return "\n".join(lines)


def resolve(tree: Group, argv: Sequence[str], prog: str) -> tuple[Command, str, list[str]]:
    """The command ``argv`` names in ``tree``, its full program name and its own arguments;
    ``--help`` of a group prints its listing (exit status 0), an unknown word is one line
    naming the choices (exit status 2)."""
    node: Command | Group = tree
    words = list(argv)
    while isinstance(node, Group):
        if words and words[0] in ("-h", "--help"):
            print(group_help(node, prog))
            raise SystemExit(0)
        item = node.find(words[0]) if words else None
        if item is None and node.default is not None and (not words or words[0][:1] == "-"):
            item = node.find(node.default)
        elif item is not None:
            words = words[1:]
        if item is None:
            names = ", ".join(c.name for c in node.commands)
            what = f"unknown command {words[0]!r}" if words else "a command is needed"
            print(f"{prog}: error: {what}; one of: {names} (see --help)", file=sys.stderr)
            raise SystemExit(2)
        prog = f"{prog} {item.name}"
        node = item
    return node, prog, words


def parse(tree: Group, argv: Sequence[str], prog: str | None = None) -> tuple[Command, Any]:
    """The command ``argv`` names in ``tree`` and its settings, parsed and checked."""
    prog = prog or tree.name
    command, prog, words = resolve(tree, argv, prog)
    parser = command_parser(command, prog)
    given = {**vars(parser.parse_args(words)), **command.fixed}
    cls = load(command.settings)
    base = load(command.base)(given) if command.base is not None else None
    given = {k: v for k, v in given.items() if k in {f.name for f in dataclasses.fields(cls)}}
    try:
        settings = settings_from(cls, given, base)
    except ValueError as err:  # a settings check: its field named by its flag and value
        parser.error(name_the_flag(str(err), given))
    if command.check is not None:
        load(command.check)(settings, parser)
    return command, settings


def arguments(argv: Sequence[str] | None = None) -> list[str]:
    """``argv``, or this process's command-line arguments (``sys.argv[1:]``) when ``None``."""
    return list(sys.argv[1:] if argv is None else argv)


def main(tree: Group, argv: Sequence[str] | None = None, prog: str | None = None) -> Any:
    """Parse ``argv`` (default: ``sys.argv[1:]``) against ``tree`` and run the command it
    names (every way it can end is one line: :func:`run_main`); the command's result."""
    argv = arguments(argv)
    try:
        command, settings = parse(tree, argv, prog)
        run = load(command.run)
    except ValueError as err:
        fail(err)
    return run_main(run, settings)


# ----------------------------------------------------------------------------- ending a command
class CommandFailed(RuntimeError):
    """A command that ran and failed (runs of a sweep that raised): one line, exit status 1;
    what was done before is kept."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a command; the message says what is saved and where."""


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


def run_main(main: Callable[[Any], Any], args: Any) -> Any:
    """``main(args)`` for a command, with every way it can end as one line on stderr:

    - bad settings (``ValueError``): ``error: <message>``, exit status 2 (:func:`fail`); a
      message that starts with a setting's name names its flag and value instead
      (:func:`name_the_flag`);
    - a failed command (:class:`CommandFailed`: a failed run of a sweep names itself), exit
      status 1 (what was done is kept);
    - a full disk or a permission error (``OSError``): ``error: <path>: <reason>``, exit status
      1;
    - Ctrl-C: what is saved and the command that resumes, exit status 130.
    """
    try:
        return main(args)
    except ValueError as err:
        fail(name_the_flag(str(err), args))
    except CommandFailed as err:
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


def check_output_folder(
    folder: Path | str, flag: str = "--out", allow_current: bool = False
) -> None:
    """Make sure ``folder`` exists (created if need be), is a folder and can be written, before
    any work or any file is written; ``ValueError`` naming ``flag`` and the path otherwise.

    Refused before anything is made: an empty path, the root folder, and (unless
    ``allow_current``, for the folder of an output file) the current folder itself, which would
    mix a command's files with whatever is there."""
    if not str(folder).strip():
        raise ValueError(f"{flag} {as_typed(str(folder))}: give a folder (an empty path is none)")
    folder = Path(folder)
    where = folder.resolve()
    if where == Path(where.anchor):
        raise ValueError(f"{flag} {folder}: the root folder; give a folder of its own")
    if not allow_current and where == Path.cwd().resolve():
        raise ValueError(
            f"{flag} {folder}: the current folder itself; give a folder of its own "
            "(e.g. results/NAME)"
        )
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
