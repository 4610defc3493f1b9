"""The recipes of docs/integrations.md, run for real and short: rl-zoo3's train and enjoy, the
Gymnasium pieces of cleanrl's ``ppo.py`` (and the script itself where a checkout is given),
TorchRL's ``GymEnv`` with an info reader, SuperSuit + SB3 on the team envs, and the time limit
that ``TimeAwareObservation`` needs. The page's Python blocks are executed as written (training
budgets shortened), its commands run with a tiny budget. Each library's tests skip where it is
not installed (``pip install -e ".[integrations]"``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import routine_envs
from tests import children

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "integrations.md"
gym.register_envs(routine_envs)
MISSING = 'not installed: pip install -e ".[integrations]"'


def section(title: str) -> str:
    """The text of the page's ``## title`` section."""
    text = PAGE.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``text`` in ``language``."""
    return [block.split("```", 1)[0] for block in text.split(f"```{language}\n")[1:]]


def run_block(code: str, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a docs block as a user would (without this module's ``__future__`` flags)."""
    namespace = {} if namespace is None else namespace
    exec(compile(code, str(PAGE), "exec", dont_inherit=True), namespace)
    return namespace


def commands(text: str) -> list[list[str]]:
    """The commands of the bash blocks of ``text``, continuation lines joined, split as a shell
    would."""
    lines = "\n".join(blocks(text, "bash")).replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.strip()]


def run_python(args: list[str], cwd: Path, timeout: float = 300) -> children.Child:
    """``python ARGS`` with this interpreter, importing this checkout's ``routine_envs``
    (:func:`tests.children.run`: its output, exit status and time kept for a failure)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return children.run([sys.executable, *args], cwd=cwd, env=env, timeout=timeout)


def with_option(args: list[str], flag: str, value: str) -> list[str]:
    """``args`` with the value after ``flag`` replaced."""
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


def test_import_routine_envs_imports_none_of_these_libraries() -> None:
    code = (
        "import sys, routine_envs; print([m for m in ('torch', 'torchrl', 'tensordict', "
        "'supersuit', 'rl_zoo3', 'pettingzoo', 'stable_baselines3') if m in sys.modules])"
    )
    done = run_python(["-c", code], ROOT)
    assert done.stdout.strip() == "[]", done.describe()


# --------------------------------------------------------------------- time limit, render
def test_time_aware_observation_needs_max_episode_steps() -> None:
    from gymnasium.wrappers import TimeAwareObservation

    with pytest.raises(ValueError, match="max_episode_steps"):
        TimeAwareObservation(gym.make("DilutedDoors-v1"))  # the registrations have no limit
    namespace = run_block(blocks(PAGE.read_text().split("\n## ")[0], "python")[0])
    env, limit = namespace["env"], namespace["limit"]
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        assert obs[-1] == steps
        done = terminated or truncated
    assert terminated and not truncated and steps < limit  # the limit never truncates


# ------------------------------------------------------------------------------- rl-zoo3
#: runs rl-zoo3's commands (``python -m rl_zoo3.train ARGS`` is ``train()`` with ARGS) one
#: after the other in one interpreter: rl-zoo3 patches Gymnasium's TimeLimit on import, so it
#: never runs in the tests' process, and one start saves two imports of torch.
RL_ZOO3_DRIVER = """
import json, sys
from rl_zoo3.enjoy import enjoy
from rl_zoo3.train import train
train_args, enjoy_args, refused_args = json.loads(sys.argv[1])
sys.argv = ["train", *train_args]
train()
sys.argv = ["enjoy", *enjoy_args]
enjoy()
sys.argv = ["train", *refused_args]
try:
    train()
except ValueError as error:
    print("REFUSED:", error)
"""


def test_rl_zoo3_train_and_enjoy(tmp_path: Path) -> None:
    # not importorskip: importing rl_zoo3 patches Gymnasium's TimeLimit for the whole process
    if importlib.util.find_spec("rl_zoo3") is None:
        pytest.skip(f"rl-zoo3 {MISSING}")
    train, enjoy = commands(section("rl-zoo3"))
    assert train[:3] == ["python", "-m", "rl_zoo3.train"]
    assert enjoy[:3] == ["python", "-m", "rl_zoo3.enjoy"]
    logs = str(tmp_path / "logs")
    train = with_option(with_option(train, "-n", "256"), "-f", logs)[3:]
    enjoy = with_option(enjoy, "-f", logs)[3:]
    refused = with_option(train, "--env", "routine_envs:DilutedDoors-v1")
    done = run_python(["-c", RL_ZOO3_DRIVER, json.dumps([train, enjoy, refused])], ROOT)
    assert done.returncode == 0, done.describe()
    assert list((tmp_path / "logs" / "ppo").glob("DilutedDoors-v1_*/DilutedDoors-v1.zip"))
    assert "Diluted Doors  step 0" in done.stdout  # enjoy: the human render mode's picture
    assert "Episode Reward" in done.stdout
    assert "REFUSED: routine_envs:DilutedDoors-v1 not found in gym registry" in done.stdout


# ------------------------------------------------------------------------------- cleanrl
def cleanrl_make_env(env_id: str) -> Any:
    """What cleanrl's ``ppo.py`` builds for each sub-env (without video capture)."""

    def thunk() -> gym.Env:
        return gym.wrappers.RecordEpisodeStatistics(gym.make(env_id))

    return thunk


def test_cleanrl_pieces_and_the_silent_return_logging() -> None:
    (command,) = commands(section("cleanrl"))
    env_id = command[command.index("--env-id") + 1]
    code = f"import gymnasium as gym; print(gym.make({env_id!r}).unwrapped.spec.id)"
    fresh = run_python(["-c", code], ROOT)  # gym.make imports the module named before the id
    assert fresh.stdout.strip() == "DilutedDoors-v1", fresh.describe()
    logged: list[tuple[str, float, int]] = []

    class Writer:
        def add_scalar(self, tag: str, value: float, step: int) -> None:
            logged.append((tag, float(value), step))

    fix = blocks(section("cleanrl"), "python")[0]
    envs = gym.vector.SyncVectorEnv([cleanrl_make_env(env_id) for _ in range(2)])
    envs.reset(seed=1)
    ends = 0
    for global_step in range(1, 201):
        *_, terminated, truncated, infos = envs.step(envs.action_space.sample())
        ends += int(np.sum(terminated | truncated))
        assert "final_info" not in infos  # what cleanrl's loop reads: never there in 1.x
        run_block(fix, {"infos": infos, "global_step": global_step, "writer": Writer()})
    returns = [value for tag, value, _ in logged if tag == "charts/episodic_return"]
    lengths = [value for tag, value, _ in logged if tag == "charts/episodic_length"]
    assert ends > 0 and len(returns) == len(lengths) == ends
    assert set(returns) <= {0.0, 1.0} and all(length > 0 for length in lengths)


def test_cleanrl_ppo_script(tmp_path: Path) -> None:
    script = os.environ.get("CLEANRL_PPO")
    if not script:
        pytest.skip(
            "cleanrl's Gymnasium ppo.py is not on PyPI (cleanrl 1.2.0 ships a gym 0.23 one): "
            "set CLEANRL_PPO=path/to/cleanrl/ppo.py to run it"
        )
    pytest.importorskip("tensorboard", reason="cleanrl's ppo.py logs to tensorboard")
    (command,) = commands(section("cleanrl"))
    args = [str(Path(script).resolve()), *command[2:]]
    args = [*with_option(args, "--total-timesteps", "512"), "--num-envs", "2", "--num-steps", "64"]
    done = run_python([*args, "--no-cuda"], tmp_path, timeout=600)
    assert done.returncode == 0, done.describe()
    assert "SPS:" in done.stdout


# ------------------------------------------------------------------------------- TorchRL
def test_torchrl_default_reader_fails_on_python_scalars() -> None:
    pytest.importorskip("torchrl", reason=f"torchrl {MISSING}")
    from torchrl.envs import GymEnv
    from torchrl.envs.libs.gym import default_info_dict_reader

    env = GymEnv("DilutedDoors-v1", routine_length=2)
    try:
        env.set_info_dict_reader(default_info_dict_reader(["critical"]))
        env.rollout(5)
    except AttributeError as error:
        assert "has no attribute 'dtype'" in str(error)
    else:
        pytest.skip(
            "this TorchRL reads Python scalars: docs/integrations.md's ScalarInfoReader is no "
            "longer needed"
        )


def test_torchrl_recipe_reads_the_annotations() -> None:
    pytest.importorskip("torchrl", reason=f"torchrl {MISSING}")
    from torchrl.envs.utils import check_env_specs

    (code,) = blocks(section("TorchRL"), "python")
    namespace = run_block(code.replace("rollout(1000", "rollout(300"))
    env, rollout = namespace["env"], namespace["rollout"]
    check_env_specs(env)
    critical = rollout["critical"].squeeze(-1).numpy()
    nxt = rollout["next"]
    done = nxt["done"].squeeze(-1).numpy()
    state_id = nxt["state_id"].squeeze(-1).numpy()
    assert len(critical) == 300 and done.any() and critical.any() and not critical.all()
    num_states = gym.make("DilutedDoors-v1", routine_length=5).unwrapped.num_states
    assert ((state_id >= 0) & (state_id < num_states)).all()
    density = nxt["decision_density"].squeeze(-1).numpy()
    success = nxt["success"].squeeze(-1).numpy()
    start = 0
    for end in np.flatnonzero(done):  # each episode: the realized rho of its critical steps
        assert density[end] == pytest.approx(critical[start : end + 1].mean())
        assert not success[start:end].any() and not density[start:end].any()
        start = end + 1


# ------------------------------------------------------------------------ SuperSuit + SB3
#: each team env with the arguments its recipe run uses
TEAM_SETUPS = {
    "diluted_doors_v0": "num_agents=2, routine_length=3",
    "routine_grid_v0": "num_agents=2, corridor_length=2",
}


@pytest.mark.filterwarnings("ignore:The `render_mode` attribute is not defined")  # SuperSuit's
@pytest.mark.parametrize("module", sorted(TEAM_SETUPS))
def test_supersuit_sb3_on_the_team_envs(module: str) -> None:
    pytest.importorskip("supersuit", reason=f"supersuit {MISSING}")
    pytest.importorskip("stable_baselines3", reason='SB3 not installed: the "baselines" extra')
    (code,) = blocks(section("SuperSuit + SB3 on the team envs"), "python")
    call = "diluted_doors_v0.parallel_env(num_agents=2, routine_length=3)"
    assert "total_timesteps=50_000" in code and call in code
    code = code.replace("total_timesteps=50_000", "total_timesteps=256")
    code = code.replace(call, f"{module}.parallel_env({TEAM_SETUPS[module]})")
    namespace = run_block(code.replace("import diluted_doors_v0", f"import {module}"))
    model, env = namespace["model"], namespace["env"]
    assert model.num_timesteps >= 256 and env.num_envs == 4  # 2 copies x 2 agents
    obs = env.reset()
    for _ in range(300):
        action, _ = model.predict(obs)
        obs, _, dones, infos = env.step(action)
        if dones.any():
            break
    k = int(np.flatnonzero(dones)[0])
    copy, agent = divmod(k, 2)
    assert dones[2 * copy : 2 * copy + 2].all()  # the team ends together
    info = infos[k]
    assert {"success", "decision_density", "episode", "terminal_observation"} <= set(info)
    # SuperSuit reset the team and merged the reset's info over the last step's: state_id is
    # the next episode's first state's
    team = env.venv.venv.vec_envs[copy].par_env
    assert not team.history.actions
    assert info["state_id"] == team.state_id
    assert info["critical"] == team.critical[f"agent_{agent}"]
