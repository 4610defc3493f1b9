"""Every command of the project in one tree: ``python -m baselines COMMAND`` and the
``routine-envs`` console script (``routine-envs benchmark run ...``, ``routine-envs train ...``,
``routine-envs diagnose ...``). ``--help`` lists them, one line each.

Each command is a row: its settings dataclass and the function that runs it, as
``"module:name"`` strings, loaded only when the command runs (so the listing, and ``diagnose``,
import neither torch nor SB3). Each experiment package declares its own rows
(``baselines/experiments/<package>/__init__.py``: ``COMMANDS`` and ``ORDER``), the core package
its own (:mod:`routine_envs.commands`); this module only gathers them (:func:`packages`) and
runs them. Flags come from the settings' fields through the one generator,
:mod:`routine_envs.cli`.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from routine_envs import commands as core
from routine_envs.cli import Command, Group, arguments, parse
from routine_envs.cli import main as run_tree


def packages() -> list[ModuleType]:
    """Every package of :mod:`baselines.experiments` that declares commands (a ``COMMANDS``
    tuple of rows), in the order ``--help`` lists them: by the package's ``ORDER``, then by
    name (so a package added without thinking of it still lands in one fixed place). Importing
    a package runs only its ``__init__``: the rows, no experiment code."""
    import baselines.experiments as experiments

    found = []
    for info in pkgutil.iter_modules(experiments.__path__):
        if info.ispkg:
            package = importlib.import_module(f"{experiments.__name__}.{info.name}")
            if hasattr(package, "COMMANDS"):
                found.append(package)
    return sorted(found, key=lambda package: (package.ORDER, package.__name__))


def baselines_commands() -> tuple[Command | Group, ...]:
    """The baselines' commands, each declared by its experiment package, in the order ``--help``
    lists them (:func:`packages`)."""
    return tuple(row for package in packages() for row in package.COMMANDS)


def tree(prog: str = "python -m baselines") -> Group:
    """The whole tree: the baselines' commands, then the core package's (``diagnose``,
    ``bench``)."""
    return Group(
        prog,
        "routine-envs: environments, baselines, experiments and the benchmark",
        (*baselines_commands(), *core.COMMANDS),
        description="Every command of routine-envs (docs/cli.md lists every flag).",
    )


def find(path: str) -> Command:
    """The command ``path`` (``"snr_lab rho-law"``) of the tree; ``KeyError`` when none is."""
    found = {name: command for name, command in tree().walk()}
    if path not in found:
        raise KeyError(f"no command {path!r}; commands: {sorted(found)}")
    return found[path]


def run_command(path: str, settings: Any) -> Any:
    """Run the command ``path`` with ``settings`` (an instance of its settings class; the
    row's ``fixed`` fields are set here), without a command line. Experiments call each other's
    entry functions directly; this is for code that holds a command's name."""
    from routine_envs.cli import load

    command = find(path)
    settings = dataclasses.replace(settings, **command.fixed) if command.fixed else settings
    return load(command.run)(settings)


def settings_of(path: str, argv: Sequence[str] | None = None) -> Any:
    """The settings the command ``path`` (``"benchmark run"``) parses from ``argv``."""
    return parse(tree(), [*path.split(), *arguments(argv)])[1]


def main(argv: Sequence[str] | None = None) -> Any:
    """The ``routine-envs`` console script and ``python -m baselines``: parse ``argv`` and run
    the command it names; its result."""
    prog = "routine-envs" if Path(sys.argv[0]).name == "routine-envs" else "python -m baselines"
    return run_tree(tree(prog), argv)


def console() -> None:
    """The ``routine-envs`` console script: exit status of the command (0 unless it returns an
    ``int``)."""
    result = main()
    sys.exit(result if isinstance(result, int) else 0)
