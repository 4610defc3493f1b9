"""DilutedDoors-v1: what its observation reveals (nothing of the layout before the end), its
equivalence with v0 for rewards and annotations, and its state space. The contract suite
(tests/test_contract.py) covers the rest."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routine_envs  # noqa: F401
from routine_envs.dynamics import Dynamics
from routine_envs.envs.diluted_doors_v1 import OBSERVATIONS, PathDoorsDynamics

configs = st.fixed_dictionaries(
    {
        "num_floors": st.integers(1, 4),
        "num_doors": st.integers(2, 4),
        "routine_length": st.one_of(
            st.integers(0, 4), st.tuples(st.integers(0, 2), st.integers(2, 4))
        ),
        "reward": st.sampled_from(["success", "fraction"]),
    }
)


def observed(kwargs, layout_seed, actions, seed, observation):
    """Every observation and description of an episode played with ``actions`` (cycled)."""
    env = gym.make("DilutedDoors-v1", layout_seed=layout_seed, observation=observation, **kwargs)
    obs, _ = env.reset(seed=seed)
    dynamics = env.unwrapped.dynamics
    out = [(obs.tobytes(), dynamics.describe(env.unwrapped.state))]
    for t in range(1000):
        obs, _, terminated, truncated, _ = env.step(actions[t % len(actions)])
        out.append((obs.tobytes(), dynamics.describe(env.unwrapped.state)))
        if terminated or truncated:
            return out
    raise AssertionError("episode did not end")


@settings(max_examples=60, deadline=None)
@given(
    configs,
    st.lists(st.integers(0, 3), min_size=1, max_size=12),
    st.integers(0, 2**16),
    st.sampled_from(["actions", "position"]),
)
def test_property_observations_do_not_depend_on_the_layout(kwargs, actions, seed, observation):
    """For every action sequence, the observations (and the descriptions an agent is told) are
    identical across layout seeds: only the final reward reveals which doors were right."""
    actions = [a % kwargs["num_doors"] for a in actions]
    reference = observed(kwargs, 0, actions, seed, observation)
    for layout_seed in (1, 7, 12345):
        assert observed(kwargs, layout_seed, actions, seed, observation) == reference


def test_progress_mode_reveals_the_outcome_as_v0_does():
    actions = [0]
    seen = {tuple(observed({"num_floors": 3}, seed, actions, 0, "progress")) for seed in range(8)}
    assert len(seen) > 1  # different layouts, different observations: the leak v1 removes


@settings(max_examples=30, deadline=None)
@given(configs, st.integers(0, 50), st.integers(0, 2**16))
def test_property_v1_has_v0s_rewards_annotations_and_progress_observation(kwargs, layout, seed):
    v0 = gym.make("DilutedDoors-v0", layout_seed=layout, **kwargs)
    v1 = gym.make("DilutedDoors-v1", layout_seed=layout, observation="progress", **kwargs)
    rng = np.random.default_rng(seed)
    o0, i0 = v0.reset(seed=seed)
    o1, i1 = v1.reset(seed=seed)
    done = False
    while not done:
        np.testing.assert_array_equal(o0, o1)
        assert i0["critical"] == i1["critical"]
        a = int(rng.integers(kwargs["num_doors"]))
        o0, r0, t0, u0, i0 = v0.step(a)
        o1, r1, t1, u1, i1 = v1.step(a)
        assert (r0, t0, u0) == (r1, t1, u1)
        done = t0 or u0
    for key in ("success", "num_critical", "episode_length", "decision_density"):
        assert i0[key] == i1[key]


@pytest.mark.parametrize("observation", OBSERVATIONS)
def test_every_mode_is_the_same_mdp(observation):
    """The modes differ only in what is observed: same model, same values, same annotations."""
    actions_mode = PathDoorsDynamics(routine_length=(0, 2), reward="fraction")
    other = PathDoorsDynamics(routine_length=(0, 2), reward="fraction", observation=observation)
    a, b = actions_mode.model(), other.model()
    for name in ("state", "action", "prob", "next_state", "reward", "terminated", "reachable"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_array_equal(actions_mode.critical_table(), other.critical_table())
    for sid in np.flatnonzero(b.reachable):
        state = b.states[int(sid)]
        assert other.is_critical(state) == Dynamics.is_critical(other, state)


def test_state_counts_and_success_probability_equal_v0s():
    from routine_envs.envs.diluted_doors import DoorsDynamics

    # sum_{f<F} D^f + D^F + cells * sum_{f<F} D^(f+1)
    assert PathDoorsDynamics().num_states == (1 + 3 + 9) + 27 + 10 * (3 + 9 + 27) == 430
    assert PathDoorsDynamics(num_floors=10, routine_length=50).num_states == 4_517_173
    for kwargs in ({}, {"routine_length": (0, 3), "reward": "fraction", "num_doors": 2}):
        v1, v0 = PathDoorsDynamics(**kwargs), DoorsDynamics(**kwargs)
        p1 = v1.success_probability(np.full((v1.num_states, v1.num_actions), 1 / v1.num_actions))
        p0 = v0.success_probability(np.full((v0.num_states, v0.num_actions), 1 / v0.num_actions))
        assert p1 == pytest.approx(p0, rel=1e-12) == pytest.approx(v0.num_doors**-3)


def test_rho_is_exact_with_fraction_rewards():
    env = gym.make("DilutedDoors-v1", routine_length=7, reward="fraction")
    env.reset(seed=0)
    done, info = False, {}
    while not done:
        _, _, terminated, truncated, info = env.step(0)
        done = terminated or truncated
    assert info["decision_density"] == pytest.approx(1 / 8, rel=1e-15)
    assert env.unwrapped.decision_density == pytest.approx(1 / 8, rel=1e-15)


def test_a_model_too_large_says_its_size():
    dynamics = PathDoorsDynamics(num_floors=14, num_doors=4, routine_length=50)
    gym.make("DilutedDoors-v1", num_floors=14, num_doors=4, routine_length=50).reset(seed=0)
    with pytest.raises(ValueError, match=r"has [\d,]+ states"):
        dynamics.model()


def test_bad_observation_mode_is_named():
    with pytest.raises(ValueError, match="observation"):
        gym.make("DilutedDoors-v1", observation="everything")
