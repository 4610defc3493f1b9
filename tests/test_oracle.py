"""The tabular dynamic programming behind the oracle, on a model built by hand."""

from __future__ import annotations

import numpy as np
import pytest

from routine_envs.oracle import (
    build_model,
    evaluate_policy,
    expected_return,
    optimal_values,
    policy_table,
)


def chain_model():
    """s0 --a0--> s1 (r=1); s0 --a1--> 50% s1 (r=0) / 50% end (r=3); s1 --any--> end (r=2)."""

    def outcomes(state, action):
        if state == "s0":
            if action == 0:
                return [(1.0, "s1", 1.0, False)]
            return [(0.5, "s1", 0.0, False), (0.5, "end", 3.0, True)]
        return [(1.0, "end", 2.0, True)]

    ids = {"s0": 0, "s1": 1, "end": 2}
    return build_model([(1.0, "s0")], outcomes, ids.__getitem__, num_states=3, num_actions=2)


def test_build_model_enumerates_reachable_and_terminal():
    model = chain_model()
    assert model.reachable.tolist() == [True, True, True]
    assert model.terminal.tolist() == [False, False, True]
    assert model.decision_states.tolist() == [True, True, False]
    assert len(model.state) == 5 and model.initial.tolist() == [1.0, 0.0, 0.0]


def test_policy_evaluation_hand_computed():
    model = chain_model()
    pi = np.array([[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]])
    values = evaluate_policy(model, pi)
    # Q(s1,.) = 2; Q(s0,a0) = 1 + 2 = 3; Q(s0,a1) = 0.5*(0+2) + 0.5*3 = 2.5
    np.testing.assert_allclose(values.q, [[3.0, 2.5], [2.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(values.v, [0.25 * 3 + 0.75 * 2.5, 2.0, 0.0])
    np.testing.assert_allclose(values.advantage[0], [3 - 2.625, 2.5 - 2.625])
    assert expected_return(model, values) == pytest.approx(2.625)
    discounted = evaluate_policy(model, pi, gamma=0.5)
    # Q(s0,a0) = 1 + 0.5*2; Q(s0,a1) = 0.5*(0 + 0.5*2) + 0.5*3
    np.testing.assert_allclose(discounted.q[0], [2.0, 2.0])


def test_optimal_values_and_action_gap():
    values = optimal_values(chain_model())
    np.testing.assert_allclose(values.q[0], [3.0, 2.5])
    np.testing.assert_allclose(values.action_gap, [0.5, 0.0, 0.0])


def test_policy_given_as_function():
    model = chain_model()
    values = evaluate_policy(model, lambda sid: [1.0, 0.0])
    assert values.v[0] == pytest.approx(3.0)


@pytest.mark.parametrize(
    "bad", [np.ones((3, 2)), np.full((2, 2), 0.5), np.array([[1.5, -0.5]] * 3)]
)
def test_bad_policies_rejected(bad):
    with pytest.raises(ValueError, match="policy"):
        policy_table(bad, chain_model())


def test_bad_gamma_rejected():
    with pytest.raises(ValueError, match="gamma"):
        evaluate_policy(chain_model(), np.full((3, 2), 0.5), gamma=0.0)


def test_cyclic_model_needs_discount():
    def outcomes(state, action):
        return [(1.0, 1 - state, 1.0, False)]  # two states that alternate forever

    model = build_model([(1.0, 0)], outcomes, int, num_states=2, num_actions=1)
    with pytest.raises(RuntimeError, match="gamma < 1"):
        evaluate_policy(model, np.ones((2, 1)))
    values = evaluate_policy(model, np.ones((2, 1)), gamma=0.9, tol=1e-12)
    assert values.v[0] == pytest.approx(10.0, rel=1e-9)
    # a self-loop is solved in closed form: exact with a discount, refused without one
    loop = build_model([(1.0, 0)], lambda s, a: [(1.0, 0, 1.0, False)], int, 1, 1)
    assert evaluate_policy(loop, np.ones((1, 1)), gamma=0.9).v[0] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="never leaves"):
        evaluate_policy(loop, np.ones((1, 1)))


def noop_model(cost: float):
    """s0: action 0 is a no-op that costs `cost` and stays; action 1 ends with reward 1."""

    def outcomes(state, action):
        if action == 0:
            return [(1.0, "s0", -cost, False)]
        return [(1.0, "end", 1.0, True)]

    ids = {"s0": 0, "end": 1}
    return build_model([(1.0, "s0")], outcomes, ids.__getitem__, num_states=2, num_actions=2)


@pytest.mark.parametrize("cost", [0.0, 0.1])
def test_self_loops_are_solved_exactly(cost):
    """A no-op (invalid action) loops back: values follow in closed form, no iteration needed."""
    model = noop_model(cost)
    opt = optimal_values(model)
    np.testing.assert_allclose(opt.q[0], [1.0 - cost, 1.0])
    assert opt.v[0] == 1.0 and opt.action_gap[0] == pytest.approx(cost)
    masked = evaluate_policy(model, np.array([[0.0, 1.0], [0.5, 0.5]]))
    np.testing.assert_allclose(masked.q[0], [1.0 - cost, 1.0])
    assert masked.advantage[0, 1] == 0.0
    # a policy that sometimes dithers: V = (0.5 * 1 - 0.5 * cost) / (1 - 0.5) = 1 - cost
    mixed = evaluate_policy(model, np.array([[0.5, 0.5], [0.5, 0.5]]))
    assert mixed.v[0] == pytest.approx(1.0 - cost)
    with pytest.raises(ValueError, match="never leaves"):
        evaluate_policy(model, np.array([[1.0, 0.0], [0.5, 0.5]]))


# ------------------------------------------------------------------- the one backward pass
def _sweeps(model):
    return 10 * model.num_states + 100  # passing max_iterations forces the fixed-point sweeps


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("DilutedDoors-v0", {}),
        ("DilutedDoors-v0", {"routine_length": (0, 4), "reward": "fraction"}),
        ("RoutineGrid-v0", {}),
        ("RoutineGridSoft-v0", {}),
        ("CodeFix-v0", {"max_attempts": 2, "step_cost": 0.01}),
    ],
)
def test_backward_pass_equals_the_fixed_point_to_the_bit(env_id, kwargs):
    import gymnasium as gym

    import routine_envs  # noqa: F401

    model = gym.make(env_id, **kwargs).unwrapped.model()
    assert model.layers() is not None  # acyclic once self-loops are solved
    rng = np.random.default_rng(0)
    pi = rng.dirichlet(np.ones(model.num_actions), size=model.num_states)
    one, swept = (
        evaluate_policy(model, pi),
        evaluate_policy(model, pi, max_iterations=_sweeps(model)),
    )
    np.testing.assert_array_equal(one.q, swept.q)
    np.testing.assert_array_equal(one.v, swept.v)
    best, best_swept = optimal_values(model), optimal_values(model, max_iterations=_sweeps(model))
    np.testing.assert_array_equal(best.q, best_swept.q)
    discounted = evaluate_policy(model, pi, gamma=0.9)
    np.testing.assert_allclose(
        discounted.q,
        evaluate_policy(model, pi, gamma=0.9, max_iterations=_sweeps(model)).q,
        rtol=0,
        atol=1e-12,
    )


def test_corridors_are_folded_so_the_pass_has_one_step_per_decision():
    from routine_envs.envs.diluted_doors import DoorsDynamics

    model = DoorsDynamics(num_floors=7, routine_length=30).model()
    layers = model.layers()
    assert layers.depth == 7  # one height per floor, not 7 * 31 steps
    # every reachable corridor cell: 30 per (floor f, 0 <= correct <= f + 1)
    assert layers.passing.size == 30 * sum(f + 2 for f in range(7))
    values = evaluate_policy(model, np.full((model.num_states, 3), 1 / 3))
    assert np.all(values.advantage[layers.passing] == 0.0)  # exactly zero, not to rounding


def test_a_model_with_a_cycle_falls_back_to_sweeps():
    # s0 -a0-> s1 -a0-> s0 (a cycle through two states); a1 ends the episode from either
    ids = {"s0": 0, "s1": 1, "end": 2}

    def outcomes(s, a):
        if a == 1:
            return [(1.0, "end", 1.0, True)]
        return [(1.0, "s1" if s == "s0" else "s0", 0.0, False)]

    model = build_model([(1.0, "s0")], outcomes, ids.__getitem__, num_states=3, num_actions=2)
    assert model.layers() is None
    values = evaluate_policy(model, np.full((3, 2), 0.5), gamma=0.5)
    # V = 0.5 * 1 + 0.5 * 0.5 * V  =>  V = 0.5 / 0.75
    assert values.v[0] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"routine_length": 0},
        {"routine_length": (0, 3), "reward": "fraction"},
        {"num_floors": 1, "num_doors": 2, "routine_length": 5},
        {"num_floors": 4, "routine_length": (2, 4), "layout_seed": 7},
    ],
)
def test_diluted_doors_bulk_model_equals_the_generic_search(kwargs):
    from routine_envs.dynamics import Dynamics
    from routine_envs.envs.diluted_doors import DoorsDynamics

    dynamics = DoorsDynamics(**kwargs)
    bulk, search = dynamics.build_model(), Dynamics.build_model(dynamics)

    def by_state_action(m):  # the order that matters: within every (state, action)
        order = np.argsort(m.state * m.num_actions + m.action, kind="stable")
        return [x[order] for x in (m.state, m.action, m.prob, m.next_state, m.reward, m.terminated)]

    for a, b in zip(by_state_action(bulk), by_state_action(search), strict=True):
        np.testing.assert_array_equal(a, b)
    for name in ("initial", "reachable", "terminal"):
        np.testing.assert_array_equal(getattr(bulk, name), getattr(search, name))
    assert dict(bulk.states) == search.states


def test_reward_override_reaches_folded_corridors():
    """``evaluate_policy(reward=...)`` (the success probability uses it) must pay the given
    rewards on the corridors folded into the pass, not the model's own."""
    import dataclasses

    from routine_envs.envs.diluted_doors import DoorsDynamics

    dynamics = DoorsDynamics(num_floors=2, routine_length=(0, 2), reward="fraction")
    model = dynamics.model()
    pi = np.full((model.num_states, 3), 1 / 3)
    hits = (model.terminated & dynamics.success_table()[model.next_state]).astype(float)
    override = evaluate_policy(model, pi, reward=hits)
    swept = evaluate_policy(
        dataclasses.replace(model, reward=hits), pi, max_iterations=_sweeps(model)
    )
    np.testing.assert_array_equal(override.v, swept.v)
    assert dynamics.success_probability(pi) == pytest.approx(1 / 9, rel=1e-12)


def test_return_moments_are_exact_for_rewards_that_are_not_zero_or_one():
    from routine_envs.oracle import model_from_arrays, return_moments

    # state 0: reward 1 (action 0) or 3 (action 1), to state 1; state 1: either action ends
    # the episode with reward 0 or 2 (probability 1/2 each). Uniform: R in {1, 3, 3, 5}.
    cols = [
        np.array(c)
        for c in (
            [0, 0, 1, 1, 1, 1],  # state
            [0, 1, 0, 0, 1, 1],  # action
            [1.0, 1.0, 0.5, 0.5, 0.5, 0.5],  # prob
            [1, 1, 2, 2, 2, 2],  # next state
            [1.0, 3.0, 0.0, 2.0, 0.0, 2.0],  # reward
            [False, False, True, True, True, True],  # terminated
        )
    ]
    model = model_from_arrays(3, 2, 0, cols, lambda i: i)
    mean, std = return_moments(model, np.full((3, 2), 0.5))
    assert mean == pytest.approx(3.0) and std == pytest.approx(np.sqrt(2.0))
    greedy = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])  # R in {1, 3}
    assert return_moments(model, greedy) == pytest.approx((2.0, 1.0))


def test_return_moments_match_sampling_on_a_suite_env():
    import gymnasium as gym

    from routine_envs.oracle import return_moments, uniform_policy
    from routine_envs.sampler import ModelSampler

    env = gym.make("CodeFix-v1").unwrapped
    pi = uniform_policy(env.model())
    mean, std = return_moments(env.model(), pi)
    sampled = ModelSampler(env).sample(pi, 50_000, 1, np.random.default_rng(0)).episode_returns()
    assert mean == pytest.approx(sampled.mean(), abs=4 * sampled.std() / np.sqrt(50_000))
    assert std == pytest.approx(np.sqrt(mean * (1 - mean)))  # a 0/1 return
    assert std == pytest.approx(sampled.std(), rel=0.02)
