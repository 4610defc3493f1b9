"""Diluted Doors: dynamics, annotations against independent oracles, rho, determinism, bad input."""

from __future__ import annotations

import copy
import math
import pickle

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.envs import DilutedDoorsEnv, DoorsState, InvalidActionError
from routine_envs.rendering.doors import chosen_doors
from tests.utils import (
    assert_oracle_matches_rollouts,
    counterfactual_returns,
    run_episode,
    sample_states,
    uniform_policy,
)


def correct_policy(env: DilutedDoorsEnv):
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
    env = DilutedDoorsEnv(num_floors=3, num_doors=3, routine_length=2)
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
    env = DilutedDoorsEnv(num_floors=4, num_doors=2, routine_length=1, reward="fraction")
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


def test_observation_is_a_function_of_the_state_and_in_space():
    env = DilutedDoorsEnv(num_floors=2, routine_length=(0, 3))
    seen: dict[int, np.ndarray] = {}
    rng = np.random.default_rng(1)
    for ep in range(30):
        rec = run_episode(env, uniform_policy(3), rng, seed=ep)
        for sid, obs in zip(rec["state_ids"], rec["obs"], strict=False):
            assert env.observation_space.contains(obs)
            if sid in seen:
                np.testing.assert_array_equal(seen[sid], obs)
            seen[sid] = obs


def test_state_ids_are_canonical_and_invertible():
    env = DilutedDoorsEnv(num_floors=3, num_doors=2, routine_length=(0, 4), reward="fraction")
    model = env.model()
    ids = np.flatnonzero(model.reachable)
    assert ids.max() < env.num_states
    for sid in range(env.num_states):
        state = env.describe_state(sid)
        assert env.dynamics.state_id(state) == sid
    with pytest.raises(ValueError, match="state_id"):
        env.describe_state(env.num_states)


def test_annotation_matches_optimal_action_gap_of_the_model():
    for reward in ("success", "fraction"):
        env = DilutedDoorsEnv(num_floors=3, num_doors=3, routine_length=(0, 2), reward=reward)
        model, gap = env.model(), env.optimal().action_gap
        for sid in np.flatnonzero(model.decision_states):
            assert (gap[sid] > 0) == env.dynamics.is_critical(env.describe_state(int(sid))), sid
        assert not any(
            env.dynamics.is_critical(env.describe_state(int(s)))
            for s in np.flatnonzero(model.terminal)
        )


@pytest.mark.parametrize("reward", ["success", "fraction"])
def test_annotation_truth_by_counterfactual_branching(reward):
    """Independent of the model: branch every sampled state into each action with the same random
    continuation. Routine states give identical returns path by path; critical ones differ."""
    env = gym.make(
        "DilutedDoors-v0", num_floors=3, num_doors=2, routine_length=(1, 3), reward=reward
    )
    policy = uniform_policy(2)
    states = sample_states(env, policy, num_states=40, seed=3)
    assert sum(info["critical"] for _, info in states) >= 3
    assert sum(not info["critical"] for _, info in states) >= 20
    for branch, info in states:
        returns = counterfactual_returns(branch, info, policy, num_rollouts=200, seed=11)
        if info["critical"]:
            means = returns.mean(axis=1)
            se = returns.std(axis=1).max() / math.sqrt(returns.shape[1]) + 1e-12
            assert means.max() - means.min() > 4 * se, (info, means)
        else:
            np.testing.assert_array_equal(returns[0], returns[1])


def test_exact_oracle_agrees_with_monte_carlo_rollouts():
    env = gym.make(
        "DilutedDoors-v0", num_floors=3, num_doors=3, routine_length=(0, 2), reward="fraction"
    )
    table = np.random.default_rng(0).dirichlet(np.ones(3), size=env.unwrapped.num_states)
    rollouts = 400
    assert assert_oracle_matches_rollouts(env, table, num_states=12, num_rollouts=rollouts) == 12


def test_oracle_closed_forms_for_uniform_policy():
    """Uniform policy, success reward: V at floor f (on track) = (1/D)^(F-f); routine A = 0."""
    F, D = 4, 3
    env = DilutedDoorsEnv(num_floors=F, num_doors=D, routine_length=5)
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
    env = DilutedDoorsEnv(num_floors=2, routine_length=(0, 2))
    # T = 2 + L1 + L2 with L uniform on {0,1,2}: E[2/T] by enumeration.
    expected = np.mean([2 / (2 + a + b) for a in range(3) for b in range(3)])
    assert env.decision_density == pytest.approx(expected, rel=1e-14)


def test_rho_with_routine_range_matches_within_sampling_error():
    env = DilutedDoorsEnv(num_floors=3, num_doors=2, routine_length=(2, 12), reward="fraction")
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


def test_deepcopy_branches_share_future_and_are_independent():
    env = gym.make("DilutedDoors-v0", routine_length=(0, 6))
    env.reset(seed=7)
    for _ in range(3):
        env.step(1)
    twin = copy.deepcopy(env)
    actions = np.random.default_rng(0).integers(3, size=200)
    outs_a, outs_b = [], []
    for target, outs in ((env, outs_a), (twin, outs_b)):
        for a in actions:
            obs, r, term, _trunc, info = target.step(int(a))
            outs.append((obs.tolist(), r, term, info))
            if term:
                target.reset()
    assert outs_a == outs_b
    # independence: stepping one does not move the other
    b1 = copy.deepcopy(env)
    b2 = copy.deepcopy(env)
    b1.step(0)
    assert b2.unwrapped.state == env.unwrapped.state
    assert b1.unwrapped.state != env.unwrapped.state


def test_pickle_round_trip_preserves_future():
    env = gym.make("DilutedDoors-v0", routine_length=(1, 4))
    env.reset(seed=3)
    env.step(0)
    env.unwrapped.model()  # cached model is not pickled but rebuilt
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(20):
        o1 = env.step(2)
        o2 = clone.step(2)
        np.testing.assert_array_equal(o1[0], o2[0])
        assert o1[1:] == o2[1:]
        if o1[2]:
            break
    assert clone.unwrapped.model().num_states == env.unwrapped.num_states


def test_same_seed_same_trajectory_different_seeds_differ():
    def trajectory(seed):
        env = gym.make("DilutedDoors-v0", routine_length=(0, 20))
        env.action_space.seed(seed)
        out = []
        for ep in range(5):
            obs, info = env.reset(seed=seed if ep == 0 else None)
            done = False
            while not done:
                obs, r, term, trunc, info = env.step(env.action_space.sample())
                out.append((obs.tobytes(), r, info["state_id"], info["critical"]))
                done = term or trunc
        return out

    assert trajectory(1) == trajectory(1)
    assert trajectory(1) != trajectory(2)


def test_fixed_routine_length_is_deterministic_whatever_the_seed():
    a = run_episode(DilutedDoorsEnv(), uniform_policy(3), np.random.default_rng(0), seed=1)
    b = run_episode(DilutedDoorsEnv(), uniform_policy(3), np.random.default_rng(0), seed=2)
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
    env = DilutedDoorsEnv(num_floors=np.int64(2), routine_length=(np.int32(1), 3))
    assert env.num_floors == 2 and env.routine_range == (1, 3)


@pytest.mark.parametrize("action", [3, -1, 1.0, "1", None, np.array([1]), np.float32(0), True])
def test_invalid_action_raises_clear_error_and_loses_nothing(action):
    env = gym.make("DilutedDoors-v0").unwrapped
    env.reset(seed=0)
    before = env.state
    with pytest.raises(InvalidActionError, match="action"):
        env.step(action)
    assert env.state == before  # the failed step changed nothing
    env.step(np.int64(env.correct_doors[0]))  # numpy and 0-d integer arrays are fine
    env.step(np.array(0))
    assert isinstance(InvalidActionError("x"), ValueError)


def test_stepping_finished_episode_or_before_reset_fails_clearly():
    env = DilutedDoorsEnv(num_floors=1, routine_length=0)
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
configs = st.fixed_dictionaries(
    {
        "num_floors": st.integers(1, 4),
        "num_doors": st.integers(2, 4),
        "routine_length": st.one_of(
            st.integers(0, 6),
            st.tuples(st.integers(0, 3), st.integers(0, 3)).map(lambda t: (min(t), max(t))),
        ),
        "reward": st.sampled_from(["success", "fraction"]),
        "layout_seed": st.integers(0, 1000),
    }
)


@settings(max_examples=40, deadline=None)
@given(configs, st.integers(0, 2**16))
def test_property_fraction_rho_formula_and_annotation_truth(kwargs, seed):
    env = DilutedDoorsEnv(**kwargs)
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


@settings(max_examples=25, deadline=None)
@given(configs, st.integers(0, 2**16))
def test_property_determinism_and_branching(kwargs, seed):
    def play(env, actions):
        out = []
        for a in actions:
            obs, r, term, _, info = env.step(int(a))
            out.append((obs.tobytes(), r, info[keys.STATE_ID], info[keys.CRITICAL]))
            if term:
                env.reset()
        return out

    actions = np.random.default_rng(seed).integers(kwargs["num_doors"], size=60)
    a, b = DilutedDoorsEnv(**kwargs), DilutedDoorsEnv(**kwargs)
    a.reset(seed=seed)
    b.reset(seed=seed)
    assert play(a, actions[:30]) == play(b, actions[:30])
    twin = copy.deepcopy(a)
    assert play(a, actions[30:]) == play(twin, actions[30:])


def test_base_step_budget_truncates_with_episode_end_info():
    env = DilutedDoorsEnv(num_floors=2, routine_length=5)
    env.max_steps = 4
    env.reset(seed=0)
    for _ in range(3):
        assert env.step(0)[3] is False
    _, _, terminated, truncated, info = env.step(0)
    assert (terminated, truncated) == (False, True)
    assert info["episode_length"] == 4 and info["success"] is False and info["num_critical"] == 1
    with pytest.raises(gym.error.ResetNeeded, match="truncated"):
        env.step(0)


def test_deepcopy_branches_the_action_space_generator_too():
    env = gym.make("DilutedDoors-v0", routine_length=(0, 5))
    env.reset(seed=1)
    env.action_space.seed(4)
    env.action_space.sample()
    twin = copy.deepcopy(env)
    a = [env.action_space.sample() for _ in range(20)]
    b = [twin.action_space.sample() for _ in range(20)]
    assert a == b  # same future...
    assert twin.action_space is not env.action_space  # ...from independent generators
    assert twin.unwrapped.np_random is not env.unwrapped.np_random
    assert twin.unwrapped.np_random.random() == env.unwrapped.np_random.random()
