"""The contract of the PettingZoo team environments (:mod:`routine_envs.multiagent`), checked
over every team module with its defaults and the extra configurations of
:data:`TEAM_EXTRA_CONFIGS`: PettingZoo's API, seed and max-cycles tests, human rendering, public
shared dynamics, state ids, per-agent criticality against the exact per-agent action gap,
seeding, branching and bad actions. Their turn-based single-agent views (``TeamDilutedDoors-v0``,
``TeamRoutineGrid-v0`` and their v1s) are registered ids: ``tests/test_contract.py`` covers them.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    seed_test,
)

from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs.base import InvalidActionError
from routine_envs.multiagent import MODULES
from tests.test_contract import case_id, same

#: every team env with its defaults, and its extra configurations (the first: small)
TEAM_EXTRA_CONFIGS: dict[str, list[dict]] = {
    "diluted_doors_v0": [
        {"num_agents": 2, "num_floors": 2, "routine_length": (0, 2)},
        {"num_agents": 3, "num_floors": 3, "routine_length": (0, 3), "reward": "fraction"},
        {"chooser": [1, 1, 0, 1], "routine_length": 2},
    ],
    "diluted_doors_v1": [
        {"num_agents": 2, "num_floors": 2, "routine_length": (0, 2)},
        {"num_agents": 3, "num_floors": 3, "routine_length": (0, 3), "reward": "fraction"},
        {"observation": "position", "num_floors": 2, "routine_length": 1},
    ],
    "routine_grid_v0": [
        {"num_agents": 2, "num_junctions": 2, "corridor_length": 2},
        {"num_agents": 3, "branching": 2, "corridor_length": (0, 2), "reward": "fraction"},
    ],
    "routine_grid_v1": [
        {"num_agents": 2, "num_junctions": 2, "corridor_length": 2},
        # 2 junctions, not the default 3 (still one after a wrong way, where the agent's own
        # choice no longer matters): the exact model of 3 agents has 7k reachable states, not
        # 122k (over 30 s to build)
        {
            "num_agents": 3,
            "num_junctions": 2,
            "branching": 2,
            "corridor_length": (0, 2),
            "reward": "fraction",
        },
        {"num_agents": 2, "num_junctions": 2, "branching": 2, "corridor_length": (1, 3)},
    ],
}
TEAM_CASES = [
    *[(name, {}) for name in sorted(MODULES)],
    *[(name, kw) for name, configs in TEAM_EXTRA_CONFIGS.items() for kw in configs],
]
TEAM_SMALL = [(name, configs[0]) for name, configs in TEAM_EXTRA_CONFIGS.items()]


@pytest.fixture(params=TEAM_CASES, ids=case_id)
def team_case(request: pytest.FixtureRequest) -> tuple[str, dict]:
    return request.param


def make_team(case: tuple[str, dict]):
    name, kwargs = case
    return MODULES[name].parallel_env(**kwargs)


def team_play(env, seed: int, steps: int) -> list:
    rng = np.random.default_rng(seed)
    out = [env.reset(seed=seed)]
    for _ in range(steps):
        if not env.agents:
            out.append(env.reset())
        actions = {a: int(rng.integers(env.num_actions)) for a in env.agents}
        out.append(env.step(actions))
    return out


@pytest.mark.filterwarnings("error")
def test_team_pettingzoo_api_and_seed_tests(team_case):
    name, kwargs = team_case
    mod = MODULES[name]
    api_test(mod.env(**kwargs), num_cycles=1000)
    parallel_api_test(mod.parallel_env(**kwargs), num_cycles=1000)
    seed_test(lambda: mod.env(**kwargs), num_cycles=500)
    parallel_seed_test(lambda: mod.parallel_env(**kwargs), num_cycles=500)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_team_human_render_prints_the_ansi_picture(name, capsys):
    """The team envs' ``"human"`` mode prints the ``"ansi"`` picture at every reset and step,
    through the AEC version too; ``render()`` returns None."""
    module = MODULES[name]
    human, ansi = module.parallel_env(render_mode="human"), module.parallel_env(render_mode="ansi")
    assert "human" in human.metadata["render_modes"]
    human.reset(seed=1)
    ansi.reset(seed=1)
    expected = [ansi.render()]
    while ansi.agents:
        actions = {agent: 0 for agent in ansi.agents}
        ansi.step(actions)
        human.step(actions)
        expected.append(ansi.render())
    assert capsys.readouterr().out == "".join(f"{text}\n" for text in expected)
    assert human.render() is None
    assert capsys.readouterr().out == f"{expected[-1]}\n"
    aec = module.env(render_mode="human")
    aec.reset(seed=1)
    assert capsys.readouterr().out == f"{expected[0]}\n"


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("name", sorted(MODULES))
def test_team_pettingzoo_max_cycles_test(name):
    max_cycles_test(MODULES[name])


def test_team_dynamics_are_public_and_shared(team_case):
    env = make_team(team_case)
    dynamics = env.dynamics
    assert isinstance(dynamics, Dynamics)
    assert copy.deepcopy(env).dynamics is dynamics
    assert dynamics.num_actions == env.num_actions**env.team_size


@pytest.mark.parametrize("case", TEAM_SMALL, ids=case_id)
def test_team_state_ids_round_trip(case):
    dynamics = make_team(case).dynamics
    model = dynamics.model()
    for sid in np.flatnonzero(model.reachable):
        state = model.states[int(sid)]
        assert dynamics.state_id(state) == sid and dynamics.state_from_id(int(sid)) == state


def test_team_critical_is_the_exact_per_agent_gap(team_case):
    """Per agent: critical exactly where its exact optimal action gap is positive (rewards are
    coarse: a gap is 0 or above 0.1), in the model and in the flags reported at run time."""
    env = make_team(team_case)
    dynamics = env.dynamics
    model = dynamics.model()
    gaps = dynamics.action_gaps_per_agent()
    np.testing.assert_array_equal(env.action_gaps(), gaps)
    for sid in np.flatnonzero(model.decision_states):
        state = model.states[int(sid)]
        for i in range(dynamics.team_size):
            assert dynamics.is_agent_critical(state, i) == (gaps[sid, i] > 0), (sid, i)
            assert gaps[sid, i] == 0.0 or gaps[sid, i] > 0.1, (sid, i)
    rng = np.random.default_rng(0)
    for episode in range(5):
        _, infos = env.reset(seed=episode)
        while env.agents:
            for i, agent in enumerate(env.possible_agents):
                info = infos[agent]
                assert info[keys.CRITICAL] == (gaps[info[keys.STATE_ID], i] > 0)
            _, _, _, _, infos = env.step(
                {a: int(rng.integers(env.num_actions)) for a in env.agents}
            )


def test_team_seeding_is_reproducible_bit_for_bit(team_case):
    a = team_play(make_team(team_case), 5, 60)
    assert data_equivalence(a, team_play(make_team(team_case), 5, 60))
    assert same(a, team_play(make_team(team_case), 5, 60))
    env = make_team(team_case)  # the same env, reset with the same seed
    assert data_equivalence(team_play(env, 5, 60), team_play(env, 5, 60))


def test_team_deepcopy_and_pickle_branch(team_case):
    env = make_team(team_case)
    env.reset(seed=3)
    env.step(dict.fromkeys(env.agents, 1))
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert clone.joint_state == env.joint_state and clone.history == env.history
    clones = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    rngs = [np.random.default_rng(9) for _ in range(3)]
    while env.agents:
        out = env.step({x: int(rngs[0].integers(env.num_actions)) for x in env.agents})
        for clone, rng in zip(clones, rngs[1:], strict=True):
            out_c = clone.step({x: int(rng.integers(clone.num_actions)) for x in clone.agents})
            assert data_equivalence(out, out_c) and same(list(out), list(out_c))
    assert not any(clone.agents for clone in clones)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_team_bad_actions_and_call_order(name):
    env = MODULES[name].parallel_env()
    with pytest.raises(gym.error.ResetNeeded):
        env.step({"agent_0": 0, "agent_1": 0})
    env.reset(seed=0)
    n = env.num_actions
    bad = [
        ({"agent_0": 0}, ValueError, "every live agent"),
        ({"agent_0": 0}, ValueError, "agent_1"),
        ({"agent_0": 0, "agent_1": 0, "agent_7": 0}, ValueError, "agent_7"),
        ([0, 0], ValueError, "dict"),
        ({"agent_0": n, "agent_1": n}, InvalidActionError, "outside"),
        ({"agent_0": n, "agent_1": 0}, InvalidActionError, "outside"),
        ({"agent_0": -1, "agent_1": 0}, InvalidActionError, "outside"),
        ({"agent_0": 1.0, "agent_1": 0}, InvalidActionError, "integer"),
    ]
    for actions, error, match in bad:
        with pytest.raises(error, match=match):
            env.step(actions)
    assert env.state_id == env.reset(seed=0)[1]["agent_0"][keys.STATE_ID]  # nothing moved
    env.step({"agent_0": np.int64(0), "agent_1": np.array(1)})
    while env.agents:
        env.step(dict.fromkeys(env.agents, 0))
    with pytest.raises(gym.error.ResetNeeded):
        env.step({"agent_0": 0, "agent_1": 0})
