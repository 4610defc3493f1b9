"""The one command-line grammar (issue 24): every command generated from its settings
dataclass through :mod:`routine_envs.cli`, listed by ``python -m baselines --help``; one policy
grammar for diagnose, the lab and the detectors; the loopback watcher safe to start by hand."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routine_envs
from routine_envs import cli
from routine_envs.policy_specs import parse_policy
from tests import children

gym.register_envs(routine_envs)
ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def test_loopback_watcher_refuses_to_start_outside_its_namespace(tmp_path):
    """Started by hand, the watcher (which ends every process of its network namespace when its
    command is done) refuses before it runs anything: with or without the mark that
    loopback.run sets. A process of ours beside it survives."""
    sibling = subprocess.Popen(["sleep", "60"])
    try:
        argv = [PY, "-m", "baselines.lib.loopback", "--report", str(tmp_path / "r.json")]
        argv += ["--timeout", "5", "--poll", "0.1", "--", "true"]
        env = {k: v for k, v in os.environ.items() if k != "ROUTINE_ENVS_LOOPBACK_WATCHER"}
        for mark in ({}, {"ROUTINE_ENVS_LOOPBACK_WATCHER": "1"}):
            done = children.run(argv, cwd=ROOT, env={**env, **mark}, timeout=60)
            said = done.describe()
            assert done.returncode != 0 and "only inside its own namespace" in done.stderr, said
            assert sibling.poll() is None  # still running
            assert not (tmp_path / "r.json").exists()
    finally:
        sibling.send_signal(signal.SIGTERM)
        sibling.wait()


def commands() -> list[tuple[str, cli.Command]]:
    from baselines.commands import tree

    return tree().walk()


@pytest.mark.parametrize(("name", "command"), commands(), ids=lambda v: str(v)[:30])
def test_every_command_has_whole_help(name, command, capsys):
    """``--help`` of every command: exit 0, a description that ends a sentence (it used to be
    cut mid-sentence), every default said once."""
    from baselines.commands import tree

    with pytest.raises(SystemExit) as end:
        cli.parse(tree(), [*name.split(), "--help"])
    text = capsys.readouterr().out
    assert end.value.code == 0
    description = text.split("\n\n")[1]
    assert description.rstrip()[-1] in ".)", description
    assert not re.search(r"\(default: [^)]*\) \(default:", " ".join(text.split()))
    assert "(default: )" not in text


def test_top_level_help_lists_every_command_one_line_each_and_imports_nothing_heavy():
    code = (
        "import sys; from baselines import commands\n"
        "try:\n    commands.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))"
    )
    done = children.run([PY, "-c", code], cwd=ROOT, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "HEAVY []", done.describe()
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    tops = list(dict.fromkeys(name.split()[0] for name, _ in commands()))
    assert listed == tops
    groups = [line for line in lines if line.startswith("  ") and line.endswith("...")]
    assert {g.split()[0] for g in groups} == {"benchmark", "snr_lab", "detectors", "lm", "runs"}


def test_no_argument_parsing_outside_the_generator():
    """Every entry point parses through routine_envs.cli: no ArgumentParser, add_argument or
    sys.argv indexing anywhere else in the packages (the count of parsing code paths is 1)."""
    pattern = re.compile(r"ArgumentParser\(|\.add_argument\(|add_subparsers|sys\.argv\[[1-9]")
    found = []
    for package in ("routine_envs", "baselines"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.relative_to(ROOT).as_posix() == "routine_envs/cli.py":
                continue
            hits = [n for n, line in enumerate(path.read_text().splitlines(), 1)
                    if pattern.search(line)]  # fmt: skip
            found += [f"{path.relative_to(ROOT)}:{n}" for n in hits]
    assert not found, found


@dataclasses.dataclass
class Example:
    """Settings of a round trip."""

    name: str = dataclasses.field(default="a", metadata={"help": "a word"})
    count: int = dataclasses.field(default=1, metadata={"help": "a count", "min": 0})
    ratio: float = dataclasses.field(default=0.5, metadata={"help": "a ratio"})
    seeds: list[int] = dataclasses.field(default_factory=lambda: [0], metadata={"help": "seeds"})
    kwargs: dict = dataclasses.field(default_factory=dict, metadata={"help": "JSON"})
    flag: bool = dataclasses.field(default=True, metadata={"help": "a switch"})
    out: Path | None = dataclasses.field(default=None, metadata={"help": "a folder"})


@settings(max_examples=60, deadline=None)
@given(
    name=st.text("abc-_.", min_size=1, max_size=8).filter(lambda t: t != "--"),  # argparse's end
    count=st.integers(0, 10**6),
    ratio=st.floats(-1e6, 1e6, allow_nan=False),
    seeds=st.lists(st.integers(0, 100), min_size=1, max_size=5, unique=True),
    kwargs=st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.integers(), max_size=3),
    flag=st.booleans(),
    out=st.none() | st.just(Path("some/folder")),
)
def test_to_argv_parses_back_to_the_same_settings(name, count, ratio, seeds, kwargs, flag, out):
    """``to_argv`` (what bench_backends reruns itself with) is the inverse of the parser."""
    value = Example(name, count, ratio, seeds, kwargs, flag, out)
    assert cli.parse_settings(Example, cli.to_argv(value)) == value


# ---------------------------------------------------------------------- one policy grammar
def test_policy_specs_one_grammar_for_diagnose_lab_and_detectors(tmp_path, monkeypatch):
    """The same spec means the same policy in diagnose (which used to refuse mixture, random and
    .npy), the lab and the detectors; a callable import path gives the lab a table too."""
    from baselines.lib.lab import lab_policy, policy_table
    from routine_envs.diagnose.cli import DiagnoseSettings, run

    env = gym.make("DilutedDoors-v1", routine_length=2).unwrapped
    mixture = 'mixture{"eps": 0.3}'
    table = parse_policy(mixture).table(env)
    assert np.allclose(table, lab_policy(env, mixture)[0].probs())
    assert np.allclose(table, policy_table(env, mixture))
    path = tmp_path / "mixture.npy"
    np.save(path, table)
    assert np.allclose(parse_policy(str(path)).table(env), table)
    module = tmp_path / "my_policies_h24.py"
    module.write_text(
        "import numpy as np\ndef uniform3(observation):\n    return np.full(3, 1 / 3)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = parse_policy("my_policies_h24:uniform3")
    assert spec.identity["code"] and np.allclose(spec.table(env), 1 / 3)
    for text in (mixture, str(path), 'random{"seed": 1}', "my_policies_h24:uniform3"):
        settings_ = DiagnoseSettings(
            "DilutedDoors-v1", {"routine_length": 2}, states=9, rollouts=9, policy=text
        )
        settings_.progress = False
        assert run(settings_) == 0
    with pytest.raises(ValueError, match=r"--policy .*unknown arguments \['eps'\]"):
        parse_policy('random{"eps": 1}')
    with pytest.raises(ValueError, match="no such file"):
        parse_policy(str(tmp_path / "missing.npy"))
