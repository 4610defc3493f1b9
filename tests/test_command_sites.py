"""One place per command (issue 37): each experiment package declares its own rows of the
command tree in its ``__init__.py``, and :mod:`baselines.commands` only gathers them. No row is
registered anywhere else: no entry module ``baselines/<name>.py``, no ``cli_main`` /
``parse_args`` wrapper, no experiment or library module reaching back into the tree."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from baselines import commands
from routine_envs import cli
from routine_envs import commands as core
from tests import children

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "baselines" / "experiments"

ELSEWHERE: dict[str, str] = {}
"""A package whose rows run code outside it, and where (none: ``train``'s settings and entry
point are its package's own, the run itself the library's)."""

PENDING: set[str] = set()
"""Modules that still hold ``cli_main`` / ``parse_args`` wrappers over the tree, to be removed
(nothing may be added here: the tests below allow only these)."""


def targets(command: cli.Command) -> list[str]:
    """The ``"module:name"`` strings a row names."""
    return [t for t in (command.settings, command.run, command.check, command.base) if t]


def rows(row: cli.Command | cli.Group) -> list[tuple[str, cli.Command]]:
    """``(path, command)`` of a row, a group's every subcommand."""
    if isinstance(row, cli.Group):
        return row.walk(row.name)
    return [(row.name, row)]


def test_every_experiment_package_declares_its_rows_and_where_help_lists_them():
    names = sorted(p.name for p in EXPERIMENTS.iterdir() if (p / "__init__.py").exists())
    packages = commands.packages()
    assert sorted(p.__name__.rsplit(".", 1)[1] for p in packages) == names
    for package in packages:
        assert isinstance(package.ORDER, int) and package.COMMANDS, package.__name__
    orders = [p.ORDER for p in packages]
    assert orders == sorted(set(orders)), "two packages share an ORDER"
    tops = [row.name for row in commands.tree().commands]
    assert len(tops) == len(set(tops)), tops


def test_every_row_runs_code_of_its_own_package():
    """A row names settings, run, check and base in its own package's modules (``train``:
    the library's training run), the core package's rows in ``routine_envs``; and the tree is
    exactly these rows."""
    wrong = []
    for package in commands.packages():
        home = ELSEWHERE.get(package.__name__, package.__name__)
        for row in package.COMMANDS:
            for path, command in rows(row):
                for target in targets(command):
                    module = target.split(":")[0]
                    if module != home and not module.startswith(f"{home}."):
                        wrong.append(f"{package.__name__}: {path} names {target}")
    for command in core.COMMANDS:
        wrong += [f"core {command.name}: {t}" for t in targets(command)
                  if not t.startswith("routine_envs.")]  # fmt: skip
    assert not wrong, wrong
    declared = [row for package in commands.packages() for row in package.COMMANDS]
    assert list(commands.tree().commands) == [*declared, *core.COMMANDS]


def test_rows_are_declared_cheaply():
    """A package's ``__init__.py`` imports only the grammar (listing the commands loads no
    experiment code, no torch, no SB3)."""
    for init in sorted(EXPERIMENTS.glob("*/__init__.py")):
        tree = ast.parse(init.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert imported <= {"routine_envs.cli", "__future__"}, (init, imported)


def test_no_entry_module_beside_the_tree():
    """``python -m baselines COMMAND`` is the one way in: no ``baselines/<name>.py`` shims."""
    found = sorted(p.name for p in (ROOT / "baselines").glob("*.py"))
    assert found == ["__init__.py", "__main__.py", "commands.py"], found


def _reaches_the_tree(path: Path) -> bool:
    """Whether ``path`` imports :mod:`baselines.commands` (at module level or in a function)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            names = {a.name for a in node.names}
        else:
            continue
        if "baselines.commands" in names:
            return True
    return False


def _wrappers(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [n.name for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name in ("cli_main", "parse_args")]  # fmt: skip


def test_no_experiment_or_library_module_wraps_or_imports_the_tree():
    """The tree imports the experiments, never the other way round; a command line is parsed
    by the tree alone (``commands.settings_of`` / ``commands.main``), not by per-module
    ``cli_main`` / ``parse_args`` wrappers."""
    found = []
    for folder in ("experiments", "lib"):
        for path in sorted((ROOT / "baselines" / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in PENDING:
                continue
            if _reaches_the_tree(path):
                found.append(f"{name} imports baselines.commands")
            found += [f"{name} defines {w}" for w in _wrappers(path)]
    assert not found, found


def test_python_m_baselines_help_lists_every_packages_rows():
    done = children.run([sys.executable, "-m", "baselines", "--help"], cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.describe()
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    expected = [row.name for package in commands.packages() for row in package.COMMANDS]
    assert listed == [*expected, *(c.name for c in core.COMMANDS)], done.describe()
