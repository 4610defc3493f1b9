"""Bounded configurations: huge values are refused at construction, within a second of this
process's CPU time (``time.process_time``: other processes' load does not count), by a
``ValueError`` naming the parameter, the value and the limit; an exact model too large to build
says so (with its size) when it is asked for. The configurations below used to build eagerly
until memory ran out, or for minutes."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest

import routine_envs

CASES = [
    ("RoutineGrid-v0", {"corridor_length": 10**5}, r"corridor_length must be <= 200, got 100000"),
    ("RoutineGrid-v0", {"num_junctions": 10**4}, r"num_junctions must be <= 100, got 10000"),
    ("RoutineGrid-v0", {"obs_mode": "image", "view_size": 20001}, r"view_size must be <= 63"),
    ("DilutedDoors-v0", {"num_floors": 10**9}, r"num_floors must be <= 1000, got 1000000000"),
    ("DilutedDoors-v0", {"num_doors": 10**6}, r"num_doors must be <= 100"),
    ("DilutedDoors-v0", {"routine_length": (0, 10**9)}, r"routine_length\[1\] \(high\) must be <="),
    ("DilutedDoors-v1", {"routine_length": 10**9}, r"routine_length must be <= 100000"),
    # a wide range makes every door step draw among high - low + 1 outcomes
    ("DilutedDoors-v1", {"routine_length": (0, 10**5)}, r"routine_length must span at most 1000"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "match"), CASES)
def test_huge_configurations_are_refused_quickly_and_named(env_id, kwargs, match):
    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        gym.make(env_id, **kwargs)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize(
    ("module", "kwargs", "match"),
    [
        ("diluted_doors_v0", {"num_agents": 10**4}, r"num_agents must be <= 16, got 10000"),
        ("routine_grid_v0", {"num_agents": 10**4}, r"num_agents must be <= 16"),
        # 55-state mazes: 55**11 joint states overflow int64 ids (np.prod wrapped to negatives)
        ("routine_grid_v0", {"num_agents": 11}, r"num_agents=11 gives .* joint states"),
    ],
)
def test_huge_teams_are_refused_and_named(module, kwargs, match):
    pytest.importorskip("pettingzoo")
    from routine_envs.multiagent import MODULES

    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        MODULES[module].parallel_env(**kwargs)
    assert time.process_time() - start < 1.0


def test_team_state_ids_are_exact_integers_up_to_the_bound():
    pytest.importorskip("pettingzoo")
    from routine_envs.multiagent import routine_grid_v0

    env = routine_grid_v0.parallel_env(num_agents=10)  # 55**10 < 2**63 joint states
    assert env.num_states == 55**10 > 0
    _, infos = env.reset(seed=0)
    assert all(0 <= info["state_id"] < env.num_states for info in infos.values())
    cells = env.dynamics.state_from_id(env.num_states - 1)
    assert env.dynamics.state_id(cells) == env.num_states - 1


def test_an_exact_model_too_large_says_its_size_when_asked_for():
    env = gym.make("DilutedDoors-v1", num_floors=14, num_doors=4, routine_length=50)
    env.reset(seed=0)  # stepping needs no model
    env.step(0)
    with pytest.raises(ValueError, match=r"has [\d,]+ states x 4 actions"):
        env.unwrapped.model()
    big = gym.make("DilutedDoors-v0", num_floors=1000, routine_length=(0, 1000)).unwrapped
    start = time.process_time()
    assert 0 < big.decision_density < 0.002  # cheap even at the bounds (FFT convolution)
    assert time.process_time() - start < 5.0


def test_decision_density_by_fft_equals_the_exact_convolution():
    from routine_envs.envs.diluted_doors import DoorsDynamics

    small = DoorsDynamics(num_floors=40, routine_length=(0, 2000 // 40))  # 40 * 51 < 1e5: exact
    exact = small.decision_density
    # the same configuration through the FFT branch (forced by a large floor count and width)
    large = DoorsDynamics(num_floors=200, routine_length=(0, 600))
    assert 0 < large.decision_density < 1 / 300
    # rho of a sum of uniform corridors is close to 1 / (1 + mean length) for many floors
    assert exact == pytest.approx(1 / (1 + 25), rel=0.01)
    assert large.decision_density == pytest.approx(1 / (1 + 300), rel=0.01)


def test_vector_env_reset_accepts_numpy_integer_seeds():
    envs = gym.make_vec("DilutedDoors-v1", num_envs=2)
    obs_np, _ = envs.reset(seed=np.int64(0))
    obs_int, _ = envs.reset(seed=0)
    np.testing.assert_array_equal(obs_np, obs_int)
    envs.reset(seed=[np.int32(1), np.uint8(2)])


def test_parse_action_bounds_what_it_reads_and_echoes():
    """A 5000-digit patch index is a malformed call (not Python's integer-conversion
    ValueError), and a 1 MB input is not echoed back whole."""
    from routine_envs.envs.base import InvalidActionError

    env = gym.make("CodeFix-v1").unwrapped
    module = env.dynamics.module_names[0]
    with pytest.raises(InvalidActionError, match="patch index"):
        env.parse_action(f"apply_patch {module} " + "9" * 5000)
    huge = "x" * 1_000_000
    with pytest.raises(InvalidActionError) as caught:
        env.parse_action(huge)
    assert len(str(caught.value)) < 500 and "1,000,000 chars" in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_attempts": 10**6, "step_cost": 1e-9}, r"max_attempts must be <= 20"),
        ({"routine_length": 10**6}, r"routine_length must be <= 1000"),
    ],
)
def test_code_fix_bounds(kwargs, match):
    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        gym.make("CodeFix-v1", **kwargs)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize("env_id", [e.id for e in routine_envs.ENVIRONMENTS])
def test_a_bad_render_mode_is_named_by_the_env(env_id):
    """Our constructors name ``render_mode``; through ``gym.make`` a non-string fails inside
    Gymnasium first (``AttributeError`` on ``.endswith``), as README's Quickstart documents."""
    from gymnasium.envs.registration import load_env_creator

    creator = load_env_creator(gym.spec(env_id).entry_point)
    for bad in (1, "sometimes"):
        with pytest.raises(ValueError, match="render_mode"):
            creator(render_mode=bad)
