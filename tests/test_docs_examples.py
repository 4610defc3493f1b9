"""Every command quoted in a ```bash block of README.md and docs/*.md is checked (issue 30).

Each command is one of:

- an entry point of this repository (``python -m baselines COMMAND ...`` / ``python -m
  routine_envs ...``): its argv goes through the parse function the entry point itself uses,
  so a renamed or removed flag fails here; the cheap ones (:data:`SMALL_RUNS`) also run for
  real at small scale, their arguments kept and a few budget flags appended (argparse takes
  the last value);
- ``pip install -e ".[extra]"`` and ``make target``: the extra is in pyproject.toml, the target in
  the Makefile (installing or running the whole suite is ``make test``'s job);
- another tool's command, listed in :data:`OTHER_TOOLS` with the reason it is not run here.

A command naming an outside module (``my_estimators:...``, ``frozen_lake_policy:...``) must say
how it is found: ``PYTHONPATH=.`` in front, and the page names the file.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Command:
    """One command of a bash block: where it is, its environment prefix and its words."""

    page: str
    line: int
    env: dict[str, str] = field(hash=False)
    argv: tuple[str, ...]
    elided: bool  # ended in "...": the page shows only part of it

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def text(self) -> str:
        return " ".join(self.argv)


def bash_commands(path: Path) -> list[Command]:
    """The commands of every ```bash block of ``path``: continuation lines joined, comments
    dropped, ``NAME="..."`` assignments expanded where ``$NAME`` is used, ``[optional]``
    brackets opened, a command run through ``ray exec`` taken out of its quotes."""
    text = path.read_text()
    found = []
    for block in re.finditer(r"^```bash\n(.*?)^```", text, re.S | re.M):
        first_line = text.count("\n", 0, block.start()) + 2
        variables: dict[str, str] = {}
        lines = block[1].split("\n")
        number = 0
        while number < len(lines):
            start, line = number, lines[number]
            while line.endswith("\\") and number + 1 < len(lines):
                number += 1
                line = line[:-1] + " " + lines[number]
            number += 1
            assignment = re.fullmatch(r'\s*([A-Z_]+)="([^"]*)"\s*', line)
            if assignment:
                variables[assignment[1]] = assignment[2]
                continue
            for name, value in variables.items():
                line = line.replace(f"${name}", value)
            words = shlex.split(line, comments=True)
            if not words:
                continue
            env = {}
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                key, value = words.pop(0).split("=", 1)
                env[key] = value
            elided = bool(words) and words[-1] == "..."
            words = _open_brackets([w for w in words if w != "..."])
            command = Command(path.name, first_line + start, env, tuple(words), elided)
            found.append(command)
            inner = re.search(r"&& (python -m .*)$", words[-1]) if words[0] == "ray" else None
            if inner:
                found.append(Command(path.name, command.line, {}, tuple(inner[1].split()), False))
    return found


def _open_brackets(words: list[str]) -> list[str]:
    """``[--json result.json]`` (an optional part, as usage lines write it) -> its words."""
    out, inside = [], False
    for word in words:
        if word.startswith("[-"):
            word, inside = word[1:], True
        if inside and word.endswith("]"):
            word, inside = word[:-1], False
        out.append(word)
    return out


COMMANDS = [c for page in PAGES for c in bash_commands(page)]


def _parsers() -> dict[str, Any]:
    """Entry point module -> the parse function it runs (argv -> settings): the one command
    tree (:mod:`baselines.commands`), or the core package's, entered at the top or at a
    command. ``python -m baselines.<command>`` is not one (every command is a word after
    ``python -m baselines``): a page that still writes it fails here."""
    from baselines import commands
    from routine_envs import cli
    from routine_envs import commands as core

    def at(path: str) -> Any:
        return lambda argv: commands.settings_of(path, argv)

    return {
        "baselines": lambda argv: cli.parse(commands.tree(), argv)[1],
        "routine_envs": lambda argv: cli.parse(core.tree(), argv)[1],
        "routine_envs.bench": at("bench"),
        "examples.trl_grpo": _trl_recipe_parser,
        "examples.trl_openenv": _trl_openenv_recipe_parser,
    }


def _trl_recipe_parser(argv: list[str]) -> Any:
    """The TRL recipe's settings (an example script: its flags come from the same generator)."""
    from examples import trl_grpo

    return trl_grpo.parse_args(argv)


def _trl_openenv_recipe_parser(argv: list[str]) -> Any:
    """The TRL-through-OpenEnv recipe's settings (the same generator)."""
    from examples import trl_openenv

    return trl_openenv.parse_args(argv)


OTHER_TOOLS = {
    ("ray", "up"): "starts cloud machines (docs/cluster.md); the command it runs is parsed",
    ("ray", "exec"): "runs on a cloud cluster; the python command inside is parsed on its own",
    ("ray", "rsync-down"): "copies results from a cloud cluster",
    ("ray", "down"): "stops cloud machines",
    ("python", "-m", "rl_zoo3.train"): "rl-zoo3's CLI: tests/test_integrations.py runs the recipe",
    ("python", "-m", "rl_zoo3.enjoy"): "rl-zoo3's CLI: tests/test_integrations.py runs the recipe",
    ("python", "-m", "tests.leak_probes"): "writes the leak probes' table (minutes of CPU); "
    "tests/test_contract_leaks.py runs the same probes",
    ("python", "-m", "routine_envs.adapters.openenv"): "needs the openenv extra: "
    "tests/test_openenv.py parses the docs' serving commands with the server's own flags",
    ("python", "computing/lm-clue/table.py"): "reads a folder of computed lm dilution "
    "records (computing/lm-clue/README.md); its statistics are analysis.py's, tested in "
    "tests/test_lm_analysis.py",
    ("python", "cleanrl/ppo.py"): "cleanrl's script, not in this repository: "
    "tests/test_integrations.py runs it where a checkout is given",
}


#: repository scripts run by path (``python <path> ...``); each has ``parse_args(argv)``
SCRIPTS = {"docs/calibration/short_runs.py"}


def _script_parser(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("doc_script", ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_args


def kind(command: Command) -> str:
    words = command.argv
    if words[:2] == ("pip", "install"):
        return "pip"
    if words[0] == "make":
        return "make"
    for prefix in OTHER_TOOLS:
        if words[: len(prefix)] == prefix:
            return "other"
    if words[:2] == ("python", "-m"):
        return "entry"
    if len(words) > 1 and words[0] == "python" and words[1] in SCRIPTS:
        return "script"
    return "unknown"


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if kind(c) == "script"], ids=lambda c: c.id
)
def test_script_commands_parse(command: Command):
    """A repository script's command, as the page writes it, is accepted by its parser."""
    parse = _script_parser(command.argv[1])
    try:
        parse(list(command.argv[2:]))
    except SystemExit as stop:
        pytest.fail(f"{command.id}: `{command.text}` is refused (exit {stop.code})")


def test_every_command_in_the_docs_is_checked_here():
    """A command this file does not know (a new tool, a typo in ``python -m``) fails: add it
    to the parsers, or to OTHER_TOOLS with the reason it is not run."""
    assert len(COMMANDS) > 50  # the pages' blocks were found
    unknown = [(c.id, c.text) for c in COMMANDS if kind(c) == "unknown"]
    assert not unknown, unknown
    modules = set(_parsers())
    for c in COMMANDS:
        if kind(c) == "entry":
            assert c.argv[2] in modules, (c.id, c.argv[2])


@pytest.mark.parametrize("command", [c for c in COMMANDS if kind(c) == "entry"], ids=lambda c: c.id)
def test_entry_point_commands_parse(command: Command):
    """The flags and values as the page writes them are accepted by the script's parser."""
    parse = _parsers()[command.argv[2]]
    try:
        parse(list(command.argv[3:]))
    except SystemExit as stop:  # argparse: a bad flag or value
        pytest.fail(f"{command.id}: `{command.text}` is refused (exit {stop.code})")


def _extras() -> set[str]:
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return set(re.findall(r"^([a-z][\w-]*) = \[", section, re.M))


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if kind(c) in ("pip", "make")], ids=lambda c: c.id
)
def test_install_and_make_commands_name_what_exists(command: Command):
    if command.argv[0] == "make":
        targets = re.findall(r"^([a-z]+):", (ROOT / "Makefile").read_text(), re.M)
        assert command.argv[1] in targets, command.id
        return
    spec = command.argv[-1]
    assert command.argv[2] == "-e" and spec.startswith("."), command.id
    extras = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", spec)
    assert extras is not None, (command.id, spec)
    assert set(filter(None, (extras[1] or "").split(","))) <= _extras(), command.id


OUTSIDE_SPEC = re.compile(r"^'?([a-z_][\w.]*):[A-Za-z_]\w*")


def _outside_modules(command: Command) -> set[str]:
    """Modules named by ``module:Name`` specs that neither this repository nor the installed
    packages provide: the user's own."""
    names = set()
    for word in command.argv:
        match = OUTSIDE_SPEC.match(word)
        if match and "://" not in word:
            top = match[1].split(".")[0]
            if importlib.util.find_spec(top) is None and not (ROOT / f"{top}.py").exists():
                names.add(top)
    return names


def test_outside_modules_say_how_they_are_found():
    """``my_estimators`` and ``frozen_lake_policy`` are files the reader writes from a page:
    every command naming one puts the current folder on the path, and its page names the
    file (``my_estimators.py``)."""
    seen = set()
    for command in COMMANDS:
        for module in _outside_modules(command):
            seen.add(module)
            assert command.env.get("PYTHONPATH") == ".", (
                f"{command.id}: `{command.text}` needs PYTHONPATH=. for {module}"
            )
            page = (
                ROOT / command.page if command.page == "README.md" else ROOT / "docs" / command.page
            )
            text = page.read_text()
            assert f"{module}.py" in text, (command.id, module)
    assert {"my_estimators", "frozen_lake_policy"} <= seen


def test_pages_speak_to_the_reader_not_of_the_project_issues():
    for path in PAGES:
        text = path.read_text()
        assert "the issue's" not in text and "2-hour limit" not in text, path.name


# ------------------------------------------------------------------ small-scale runs
def _find(page: str, *needles: str) -> Command:
    matches = [c for c in COMMANDS if c.page == page and all(n in c.argv for n in needles)]
    assert matches, (page, needles)
    return matches[0]


#: (page, words that pick the command, flags appended to make it small).
SMALL_RUNS = [
    ("README.md", ("diagnose", "FrozenLake-v1"), ["--states", "12", "--rollouts", "10"]),
    ("README.md", ("diagnose", "DilutedDoors-v1"), ["--states", "30", "--rollouts", "9"]),
    ("diagnose.md", ("diagnose", "DilutedDoors-v0"), ["--states", "20", "--rollouts", "9"]),
    ("benchmark.md", ("plan",), []),
    (
        "reproducing.md",
        ("measure", "DilutedDoors-v1"),
        ["--episodes", "320", "--routine-lengths", "0"],
    ),
]
"""The rest only parse: training runs and sweeps take minutes to hours, and the lab on CodeFix
spends most of a minute building its exact model; the lab's code path runs above."""


@pytest.fixture
def reader_folder(tmp_path, monkeypatch):
    """A folder holding the modules the pages ask the reader to write, as the current folder
    and on the path (what PYTHONPATH=. gives)."""
    text = (ROOT / "docs" / "estimators.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    module = next(b for b in blocks if b.startswith("# my_estimators.py"))
    (tmp_path / "my_estimators.py").write_text(module)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("my_estimators", None)


@pytest.mark.parametrize(("page", "needles", "small"), SMALL_RUNS, ids=lambda v: str(v)[:40])
def test_cheap_commands_run_at_small_scale(page, needles, small, reader_folder, capsys):
    """The command as written (plus the budget flags) runs and writes what the page says."""
    command = _find(page, *needles)
    argv = [w for w in command.argv[3:] if w != "result.json" and w != "--json"]
    if command.argv[2] == "routine_envs":
        from routine_envs.__main__ import main

        assert main([*argv, *small, "--no-progress"]) == 0
        assert "Decision-density diagnosis" in capsys.readouterr().out
        return
    from baselines.commands import settings_of

    if argv[0] == "benchmark":
        from baselines.experiments.benchmark import command as benchmark

        benchmark.main(settings_of("benchmark", argv[1:]))  # imports my_estimators from the folder
        out = capsys.readouterr().out
        assert "protocol rb2 tier full" in out and "| 128 |" in out
        return
    from baselines.experiments.snr_lab import measure

    out = reader_folder / "out"
    assert argv[:2] == ["snr_lab", "measure"]
    args = settings_of("snr_lab measure", [*argv[2:], *small, "--workers", "1", "--out", str(out)])
    result = measure.main(args)
    assert {r["estimator"] for r in result["rows"]} == set(args.estimators)
    for name in ("results.jsonl", "measure.csv", "measure.md", "measure.png", "summary.json"):
        assert (out / name).stat().st_size > 0, name
