"""An environment contributed by outside code, in one file with one registration call
(``tests/contributed/key_corridor.py``), gets what the suite's own do: the contract suite (its
id is a case of ``tests/test_contract.py`` through the registry, see
``test_contract_registry.py``), a native vector env, a text view in words that a scripted reader
of the text alone can play, ``routine_envs.diagnose`` (function and command line) and the SNR
lab."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from baselines.commands import settings_of
from routine_envs import registration
from routine_envs.diagnose import diagnose
from routine_envs.envs.model_vector import ModelVectorEnv
from routine_envs.text import make_text_env
from tests import children
from tests.contributed.key_corridor import KeyCorridorDynamics
from tests.test_contract import CASES

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "contributed" / "key_corridor.py"
ENV_ID = "KeyCorridor-v0"


def test_one_file_one_call_and_nothing_else():
    """The module is outside the package, defines no env class and registers with one
    ``register_dynamics`` call; the registry then holds the whole row."""
    tree = ast.parse(MODULE.read_text())
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_dynamics"
    ]
    assert len(calls) == 1
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    assert classes == ["KeyState", "KeyCorridorDynamics"]  # no env class: the generic one
    row = registration.entry(ENV_ID)
    assert row.dynamics is KeyCorridorDynamics
    assert row.kwargs == {"length": 6, "fumble": 0.25}  # the fields' defaults
    assert (row.density_kwarg, row.small_kwargs) == ("length", {"length": 3})
    assert (ENV_ID, {}) in CASES  # a case of the contract suite


def test_the_env_class_is_generic_and_says_its_parameters():
    import inspect

    env = gym.make(ENV_ID, length=4, max_steps=3)
    cls = type(env.unwrapped)
    assert cls.__name__ == "KeyCorridorEnv" and cls.dynamics_class is KeyCorridorDynamics
    assert list(inspect.signature(cls).parameters) == [
        "length",
        "fumble",
        "max_steps",
        "render_mode",
    ]
    assert "## Information" in (cls.__doc__ or "")
    assert env.unwrapped.dynamics.length == 4 and env.unwrapped.max_steps == 3
    with pytest.raises(ValueError, match="length"):
        gym.make(ENV_ID, length=0)


def test_native_vector_env_is_attached():
    envs = gym.make_vec(ENV_ID, num_envs=8, length=3)
    assert isinstance(envs, ModelVectorEnv)
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (8, 4) and infos["state_id"].shape == (8,)
    ends = 0
    for _ in range(14):  # episodes of length + 1 = 4 steps, each reset by the next step
        *_, terminated, _truncated, infos = envs.step(np.ones(8, dtype=np.int64))
        ends += int(terminated.sum())
    assert ends == 8 * 3
    assert infos["_decision_density"].all()


def play_from_text(text: str) -> str:
    """A scripted reader of the text alone: take the key where it lies, open at the door."""
    if "a key lies here" in text:
        return "pick_up"
    if "at the door" in text and "key in hand" in text:
        return "open_door"
    return "forward"


def test_text_view_is_in_words_and_a_reader_of_the_text_can_play():
    """The view is built from the dynamics' own words: the docstring's task, its action names as
    tools, ``describe()`` as the text. Reading that text alone, the scripted reader succeeds
    exactly when the key does not slip: with probability ``1 - fumble`` (0.75 here)."""
    env = make_text_env(ENV_ID)
    prompt = env.system_prompt
    assert prompt.startswith("You walk a corridor")
    assert [tool["function"]["name"] for tool in env.tool_schema()] == [
        "forward",
        "pick_up",
        "open_door",
    ]
    assert "Observation: [" not in prompt
    wins, episodes = 0, 400
    for seed in range(episodes):
        text, info = env.reset(seed=seed)
        assert text == env.unwrapped.dynamics.describe(env.unwrapped.state)
        done = False
        while not done:
            text, _reward, terminated, truncated, info = env.step(play_from_text(text))
            assert not info["invalid_turn"]
            done = terminated or truncated
        wins += bool(info["success"])
    rate, se = wins / episodes, np.sqrt(0.75 * 0.25 / episodes)
    assert abs(rate - 0.75) <= 4.5 * se, rate


def test_diagnose_finds_the_annotated_critical_steps():
    """Counterfactual branching, without annotations, agrees with ``info["critical"]``."""
    env = gym.make(ENV_ID, length=3)
    result = diagnose(env, num_states=120, num_rollouts=48, seed=0)
    agreement = result.agreement
    assert agreement is not None and agreement.false_positives == 0
    assert agreement.accuracy >= 0.95
    assert result.ci[0] <= agreement.annotated_rho <= result.ci[1]


def test_diagnose_command_line_imports_the_module_of_the_id(tmp_path):
    path = tmp_path / "result.json"
    command = [
        sys.executable, "-m", "routine_envs", "diagnose",
        "tests.contributed.key_corridor:KeyCorridor-v0", "--env-kwargs", '{"length": 2}',
        "--states", "30", "--rollouts", "24", "--json", str(path), "--no-progress",
    ]  # fmt: skip
    done = children.run(command, cwd=ROOT, timeout=300, check=True)
    assert 'Agreement with info["critical"]' in done.stdout, done.describe()
    assert 0 < json.loads(path.read_text())["rho"] < 1


def test_snr_lab_measures_it_at_two_densities(tmp_path):
    """The lab takes the id like any of the suite's: its density keyword from the registry,
    exact rho per setting, every estimator measured."""
    pytest.importorskip("matplotlib")
    from baselines.experiments.snr_lab import measure

    args = settings_of(
        "snr_lab measure", [
            "--env-id", ENV_ID, "--routine-lengths", "1", "5",
            "--estimators", "trajectory_mc", "oracle", "--episodes", "4000",
            "--group-size", "4", "--workers", "1", "--out", str(tmp_path),
        ]
    )  # fmt: skip
    rows = measure.main(args)["rows"]
    assert {(r["length"], r["estimator"]) for r in rows} == {
        (1, "trajectory_mc"),
        (1, "oracle"),
        (5, "trajectory_mc"),
        (5, "oracle"),
    }
    for r in rows:
        assert r["rho"] == pytest.approx(2 / (1 + r["length"]))
        assert np.isfinite(r["snr"])
    assert (tmp_path / "measure.csv").exists() and (tmp_path / "summary.json").exists()


def test_snr_lab_command_line_imports_the_module_of_the_id(tmp_path):
    """``--env-id module:Id`` in a fresh process: the registry imports the module (which
    registers the id), as ``gym.make`` does."""
    pytest.importorskip("matplotlib")
    command = [
        sys.executable, "-m", "baselines", "snr_lab", "measure",
        "--env-id", "tests.contributed.key_corridor:KeyCorridor-v0", "--routine-lengths", "2",
        "--estimators", "trajectory_mc", "--episodes", "400", "--group-size", "4",
        "--workers", "1", "--out", str(tmp_path),
    ]  # fmt: skip
    children.run(command, cwd=ROOT, timeout=600, check=True)
    rows = (tmp_path / "measure.csv").read_text().splitlines()
    assert len(rows) == 2 and "trajectory_mc" in rows[1]
    bad = children.run([*command[:6], "nowhere.module:X-v0", *command[7:]], cwd=ROOT, timeout=600)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.describe()
