"""Diluted Doors: episodes, rewards, closed forms, rho, configuration errors, renders. The
contract suite (tests/test_contract.py) covers the generic checks over its configurations."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.envs import DilutedDoorsV0Env, DoorsState
from routine_envs.rendering.doors import chosen_doors
from tests.strategies import doors_configs
from tests.utils import (
    run_episode,
    uniform_policy,
)


def correct_policy(env: DilutedDoorsV0Env):
    """Always the correct door (any action in corridors)."""
    return lambda sid, _rng: (
        env.correct_doors[env.describe_state(sid).floor]
        if env.describe_state(sid).position == 0
        else 0
    )


def test_defaults_and_episode_shape():
    env = gym.make("DilutedDoors-v0")
    u = env.unwrapped
    assert (u.num_floors, u.num_doors, u.routine_length, u.reward_mode) == (3, 3, 10, "success")
    assert u.decision_density == pytest.approx(1 / 11, abs=1e-15)
    rec = run_episode(env, correct_policy(u), np.random.default_rng(0), seed=0)
    assert len(rec["actions"]) == 33
    assert rec["critical"] == ([True] + [False] * 10) * 3
    assert rec["rewards"] == [0.0] * 32 + [1.0]
    end = rec["final_info"]
    assert end == {**end, "success": True, "num_critical": 3, "episode_length": 33}
    assert end["decision_density"] == pytest.approx(3 / 33)
    keys.check_episode_end_info(end)


def test_wrong_door_does_not_end_episode_and_later_doors_are_not_critical():
    env = DilutedDoorsV0Env(num_floors=3, num_doors=3, routine_length=2)
    _obs, info = env.reset(seed=0)
    wrong = (env.correct_doors[0] + 1) % 3
    flags = [info["critical"]]
    _, _, terminated, _, info = env.step(wrong)
    while not terminated:
        flags.append(info["critical"])
        _, reward, terminated, _, info = env.step(
            env.correct_doors[env.state.floor] if env.state.position == 0 else 0
        )
    assert len(flags) == 9 and not any(flags[1:])  # doors on floors 2 and 3 are not critical
    assert reward == 0.0 and info["success"] is False and info["num_critical"] == 1
    assert info["decision_density"] == pytest.approx(1 / 9)


def test_fraction_reward_pays_share_of_correct_doors_and_all_doors_are_critical():
    env = DilutedDoorsV0Env(num_floors=4, num_doors=2, routine_length=1, reward="fraction")
    env.reset(seed=0)
    doors = [
        env.correct_doors[0],
        1 - env.correct_doors[1],
        env.correct_doors[2],
        1 - env.correct_doors[3],
    ]
    flags, total = [], 0.0
    for door in doors:
        flags.append(env.critical)
        _, r1, _, _, _ = env.step(door)
        flags.append(env.critical)
        _, r2, terminated, _, info = env.step(0)
        total += r1 + r2
    assert terminated and total == 0.5 and flags == [True, False] * 4
    assert info["num_critical"] == 4 and info["decision_density"] == 0.5


def test_oracle_closed_forms_for_uniform_policy():
    """Uniform policy, success reward: V at floor f (on track) = (1/D)^(F-f); routine A = 0."""
    F, D = 4, 3
    env = DilutedDoorsV0Env(num_floors=F, num_doors=D, routine_length=5)
    values = env.oracle(np.full((env.num_states, D), 1 / D))
    for f in range(F):
        door = env.dynamics.state_id(DoorsState(f, 0, 0, f))
        assert values.v[door] == pytest.approx(D ** -(F - f), rel=1e-12)
        q = values.q[door]
        assert q[env.correct_doors[f]] == pytest.approx(D ** -(F - f - 1), rel=1e-12)
        assert np.delete(q, env.correct_doors[f]) == pytest.approx(0.0)
    model = env.model()
    routine = model.decision_states & ~np.array(
        [env.dynamics.is_critical(env.describe_state(s)) for s in range(env.num_states)]
    )
    assert np.abs(values.advantage[routine]).max() == 0.0
    assert model.initial @ values.v == pytest.approx(D**-F)


def test_decision_density_of_range_is_exact_expectation():
    env = DilutedDoorsV0Env(num_floors=2, routine_length=(0, 2))
    # T = 2 + L1 + L2 with L uniform on {0,1,2}: E[2/T] by enumeration.
    expected = np.mean([2 / (2 + a + b) for a in range(3) for b in range(3)])
    assert env.decision_density == pytest.approx(expected, rel=1e-14)


def test_rho_with_routine_range_matches_within_sampling_error():
    env = DilutedDoorsV0Env(num_floors=3, num_doors=2, routine_length=(2, 12), reward="fraction")
    rng = np.random.default_rng(0)
    densities = []
    for ep in range(1500):
        densities.append(
            run_episode(env, uniform_policy(2), rng, seed=ep)["final_info"]["decision_density"]
        )
    densities = np.array(densities)
    se = densities.std() / math.sqrt(len(densities))
    assert abs(densities.mean() - env.decision_density) < 4 * se
    assert densities.std() > 0  # the lengths really vary


def test_fixed_routine_length_is_deterministic_whatever_the_seed():
    a = run_episode(DilutedDoorsV0Env(), uniform_policy(3), np.random.default_rng(0), seed=1)
    b = run_episode(DilutedDoorsV0Env(), uniform_policy(3), np.random.default_rng(0), seed=2)
    assert a["state_ids"] == b["state_ids"] and a["rewards"] == b["rewards"]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"routine_length": -1}, "routine_length"),
        ({"routine_length": (3, 2)}, "routine_length"),
        ({"routine_length": (-1, 2)}, "routine_length"),
        ({"routine_length": (1, 2, 3)}, "routine_length"),
        ({"routine_length": 2.5}, "routine_length"),
        ({"routine_length": "10"}, "routine_length"),
        ({"routine_length": (1.0, 2)}, "routine_length"),
        ({"num_doors": 1}, "num_doors"),
        ({"num_doors": 2.0}, "num_doors"),
        ({"num_doors": True}, "num_doors"),
        ({"num_floors": 0}, "num_floors"),
        ({"num_floors": None}, "num_floors"),
        ({"reward": "dense"}, "reward"),
        ({"reward": 1}, "reward"),
        ({"layout_seed": -1}, "layout_seed"),
        ({"layout_seed": "a"}, "layout_seed"),
        ({"render_mode": "video"}, "render_mode"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*render_mode")  # gym.make warns before the env raises
def test_invalid_configuration_raises_value_error_naming_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gym.make("DilutedDoors-v0", **kwargs)


def test_numpy_integers_are_accepted_as_configuration():
    env = DilutedDoorsV0Env(num_floors=np.int64(2), routine_length=(np.int32(1), 3))
    assert env.num_floors == 2 and env.routine_range == (1, 3)


def test_stepping_finished_episode_or_before_reset_fails_clearly():
    env = DilutedDoorsV0Env(num_floors=1, routine_length=0)
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(0)
    env.reset(seed=0)
    _, _, terminated, _, _ = env.step(0)
    assert terminated
    with pytest.raises(gym.error.ResetNeeded, match="finished episode"):
        env.step(0)
    env.reset()
    env.step(0)  # usable again after reset


def test_render_modes():
    env = gym.make("DilutedDoors-v0", routine_length=4, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "floor  1 @!" in text and text.count("\n") == 4
    env.step(env.unwrapped.correct_doors[0])
    assert "[" in env.render() and "+" in env.render()
    env = gym.make("DilutedDoors-v0", routine_length=4, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    yellow = np.all(frame == (250, 200, 0), axis=-1).sum()
    assert yellow > 0  # the critical state is marked
    env.step(0)
    assert np.all(env.render() == (250, 200, 0), axis=-1).sum() == 0  # corridor: routine
    assert gym.make("DilutedDoors-v0").unwrapped.render_mode is None


# ------------------------------------------------------------------------ property tests
@settings(max_examples=40, deadline=None)
@given(doors_configs, st.integers(0, 2**16))
def test_property_fraction_rho_formula_and_annotation_truth(kwargs, seed):
    env = DilutedDoorsV0Env(**kwargs)
    rng = np.random.default_rng(seed)
    rec = run_episode(env, uniform_policy(env.num_doors), rng, seed=seed)
    end = rec["final_info"]
    chosen, lengths = chosen_doors(env.history)
    assert end["episode_length"] == env.num_floors + sum(lengths) == len(rec["actions"])
    low, high = env.routine_range
    assert all(low <= n <= high for n in lengths)
    keys.check_episode_end_info(end)
    if env.reward_mode == "fraction":
        assert end["num_critical"] == env.num_floors
        if low == high:
            assert end["decision_density"] == pytest.approx(1 / (1 + low), rel=1e-15)
    else:  # success: critical exactly until the first wrong door
        doors_ok = [d == c for d, c in zip(chosen, env.correct_doors, strict=False)]
        first_wrong = doors_ok.index(False) + 1 if False in doors_ok else env.num_floors
        assert end["num_critical"] == first_wrong
        assert end["success"] == all(doors_ok) == (rec["return"] == 1.0)
    gap = env.optimal().action_gap
    for sid, flag in zip(rec["state_ids"], rec["critical"], strict=False):
        assert (gap[sid] > 0) == flag
    for info in rec["infos"]:
        keys.check_step_info(info, env.num_states)


def test_base_step_budget_truncates_with_episode_end_info():
    env = DilutedDoorsV0Env(num_floors=2, routine_length=5)
    env.max_steps = 4
    env.reset(seed=0)
    for _ in range(3):
        assert env.step(0)[3] is False
    _, _, terminated, truncated, info = env.step(0)
    assert (terminated, truncated) == (False, True)
    assert info["episode_length"] == 4 and info["success"] is False and info["num_critical"] == 1
    with pytest.raises(gym.error.ResetNeeded, match="truncated"):
        env.step(0)
