"""The turn-level methods of LLM trainers (``routine_envs.turn_level``): hand-computed batches,
their sources' identities (``discounted_turn`` at gamma 1 is ``trajectory_mc``; prime-rl's
``deltas``/``smear`` examples), and the exact expected gradient of ``turn_index_norm`` against a
brute-force enumeration of every group of episodes."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import credit, snr
from routine_envs.episodes import EpisodeBatch
from routine_envs.turn_bias import (
    binomial_pmf,
    finite_group_weights,
    turn_index_norm_bias,
    turn_index_norm_gradient,
)
from routine_envs.turn_level import (
    DiscountedTurn,
    TurnCredit,
    TurnIndexNorm,
    progress_deltas,
    smear,
)


def batch_of(rewards, groups=None, turn_scores=None, truncated=None, bootstrap=None):
    lengths = [len(r) for r in rewards]
    return EpisodeBatch(
        rewards=np.concatenate([np.asarray(r, float) for r in rewards]),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
        groups=np.asarray(groups if groups is not None else [0] * len(lengths)),
        actions=np.zeros(sum(lengths), dtype=int),
        turn_scores=None if turn_scores is None else np.concatenate(turn_scores).astype(float),
        truncated=None if truncated is None else np.asarray(truncated, bool),
        bootstrap_values=None if bootstrap is None else np.asarray(bootstrap, float),
    )


# ------------------------------------------------------------------------ discounted_turn
def test_discounted_turn_hand_computed():
    batch = batch_of([[0, 0, 1], [0, 0.5]])
    # G = [0.25, 0.5, 1 | 0.25, 0.5], pooled over the group's five turns: mean 0.5,
    # population std sqrt(0.375 / 5)
    out = DiscountedTurn(gamma=0.5, normalize_std=False)(batch).advantages
    np.testing.assert_allclose(out, [-0.25, 0.0, 0.5, -0.25, 0.0], atol=1e-15)
    scaled = DiscountedTurn(gamma=0.5)(batch).advantages
    np.testing.assert_allclose(scaled, out / (np.sqrt(0.075) + 1e-8), rtol=1e-12)


def test_discounted_turn_groups_are_separate_and_lengths_weigh():
    # gamma 1, sparse reward: G_t = R_i; the pooled mean weighs the 3-turn episode 3 times
    batch = batch_of([[0, 0, 1], [0], [5], [7]], groups=[0, 0, 1, 1])
    out = DiscountedTurn(gamma=1.0, normalize_std=False)(batch).advantages
    np.testing.assert_allclose(out, [0.25, 0.25, 0.25, -0.75, -1.0, 1.0])
    # trajectory_mc's group mean is the episodes' (0.5): they differ where lengths differ
    assert not np.allclose(out, credit.TrajectoryMC()(batch).advantages)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(1, 6),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_discounted_turn_at_gamma_one_is_trajectory_mc_on_equal_lengths(
    groups, size, length, normalize, seed
):
    """Rewards at the end (the outcome; any value), equal lengths within each group (lengths
    may differ between groups): every turn's ``G_t`` is its episode's return, and the pooled turn
    mean and std are the episodes' (verifiers' stepwise = GRPO at gamma 1)."""
    rng = np.random.default_rng(seed)
    rewards = []
    for g in range(groups):
        for _ in range(size):
            r = np.zeros(length + g)
            r[-1] = round(rng.normal(), 2)
            rewards.append(r)
    batch = batch_of(rewards, groups=np.repeat(np.arange(groups), size))
    mine = DiscountedTurn(gamma=1.0, normalize_std=normalize, eps=1e-6)(batch).advantages
    grpo = credit.TrajectoryMC(normalize_std=normalize, eps=1e-6)(batch).advantages
    # (a group of equal returns: rounding of the pooled mean, 1e-16, over eps = 1e-6)
    np.testing.assert_allclose(mine, grpo, rtol=1e-9, atol=1e-8)


def test_discounted_turn_refuses_bad_arguments():
    with pytest.raises(ValueError, match="gamma"):
        DiscountedTurn(gamma=1.5)
    with pytest.raises(ValueError, match="eps"):
        DiscountedTurn(eps=-1.0)


# ------------------------------------------------------------------------ turn_index_norm
THREE = [[-0.2, -0.1, 1.0], [-0.1, 0.0], [1.0]]  # 3, 2 and 1 turns; outcomes 1, 0, 1


def test_turn_index_norm_hand_computed():
    # b_0 = mean(-0.2, -0.1) = -0.15 over the episodes with an intermediate turn 0, b_1 = -0.1;
    # the outcomes' mean is 2/3
    out = TurnIndexNorm()(batch_of(THREE)).advantages
    third = 1 / 3
    np.testing.assert_allclose(
        out, [-0.05 + third, third, third, 0.05 - 2 * third, -2 * third, third], atol=1e-12
    )


def test_turn_index_norm_fix_hand_computed():
    # every episode counts at every index (0 where its turn is not intermediate): means -0.1,
    # -0.1/3, 0; A_{i,t} = G_{i,t} - mean_j G^int_{j,t} - mean(O)
    out = TurnIndexNorm(fix=True)(batch_of(THREE)).advantages
    g_int_mean = [(-0.3 - 0.1 + 0) / 3, -0.1 / 3, 0.0]
    expected = [
        0.7 - g_int_mean[0] - 2 / 3,
        0.9 - g_int_mean[1] - 2 / 3,
        1.0 - g_int_mean[2] - 2 / 3,
        -0.1 - g_int_mean[0] - 2 / 3,
        0.0 - g_int_mean[1] - 2 / 3,
        1.0 - g_int_mean[0] - 2 / 3,
    ]
    np.testing.assert_allclose(out, expected, atol=1e-12)


def test_turn_index_norm_normalises_by_the_std_of_each_group_of_terms():
    # turn 0 intermediate in episodes 0 and 1 (std 0.05); outcomes std sqrt(2/9)
    out = TurnIndexNorm(normalize_std=True, eps=1e-12)(batch_of(THREE)).advantages
    o = np.sqrt(2 / 9)
    expected = [-1 + (1 / 3) / o, (1 / 3) / o, (1 / 3) / o, 1 - (2 / 3) / o, -(2 / 3) / o]
    np.testing.assert_allclose(out[:5], expected, rtol=1e-9)  # (turn 1: one term, 0 / eps)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**31 - 1), st.booleans())
def test_turn_index_norm_without_intermediate_rewards_is_trajectory_mc(groups, size, seed, fix):
    """Rewards only at the end (Diluted Doors): both variants are GRPO's outcome advantage,
    whatever the lengths."""
    rng = np.random.default_rng(seed)
    rewards = []
    for _ in range(groups * size):
        r = np.zeros(int(rng.integers(1, 6)))
        r[-1] = round(rng.normal(), 2)
        rewards.append(r)
    batch = batch_of(rewards, groups=np.repeat(np.arange(groups), size))
    np.testing.assert_allclose(
        TurnIndexNorm(fix=fix)(batch).advantages,
        credit.TrajectoryMC()(batch).advantages,
        atol=1e-12,
    )


def test_turn_index_norm_groups_do_not_mix():
    one = TurnIndexNorm()(batch_of(THREE)).advantages
    two = TurnIndexNorm()(batch_of([*THREE, [-1.0, 3.0]], groups=[0, 0, 0, 1])).advantages
    np.testing.assert_allclose(two[:6], one)
    np.testing.assert_allclose(two[6:], [0.0, 0.0])  # a group of one: every term is 0


# ---------------------------------------------------------------------------- turn_credit
def test_prime_rl_deltas_and_smear_examples():
    """The examples of prime-rl's tests (``tests/unit/orchestrator/test_turn_credit.py``)."""
    np.testing.assert_allclose(
        progress_deltas(np.array([[1.0, 3.0, 2.0]]), np.array([3])), [[0, 2, -1]]
    )
    for gamma in (0.0, 0.5, 0.9, 1.0):
        c = smear(np.array([[0.0, 2.0, -1.0, 0.5]]), gamma)
        assert c.sum() == pytest.approx(1.5)
    np.testing.assert_allclose(smear(np.array([[0.0, 2.0, -1.0]]), 0.0), [[0, 2, -1]])
    np.testing.assert_allclose(smear(np.array([[0.0, 0.0, 3.0]]), 1.0), [[1, 1, 1]])
    c = smear(np.array([[0.0, 0.0, 1.0]]), 0.5)[0]
    assert c[2] > c[1] > c[0] > 0 and c.sum() == pytest.approx(1.0)


def test_turn_credit_hand_computed():
    # episode 1: scores after each turn 0, 0.5, 1 -> progress 0, 0.5, 0.5, net 1, shaped 2;
    # episode 2: scores 0.5, 0 -> progress 0, -0.5, net -0.5, shaped -0.5; levels +-1.25.
    # gamma 0.5: z = 1, 1.5, 1.75; credits 1: [1/6 * 10/7, 1/3 + 1/7, 2/7], 2: [-1/6, -1/3]
    batch = batch_of([[0, 0, 1], [0, 0]], turn_scores=[[0.0, 0.5, 1.0], [0.5, 0.0]])
    out = TurnCredit(gamma=0.5, beta=1.0)(batch).advantages
    c1 = np.array([0.5 * (1 / 3 + 1 / 7), 1 / 3 + 1 / 7, 2 / 7])
    c2 = np.array([-1 / 6, -1 / 3])
    expected = [*(1.25 + c1 - c1.mean()), *(-1.25 + c2 - c2.mean())]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    assert c1.sum() == pytest.approx(1.0)  # the net progress, given out once


def test_turn_credit_sums_to_the_level_and_beta_zero_is_the_shifted_grpo():
    batch = batch_of([[0, 0, 1], [0, 0]], turn_scores=[[0.0, 0.5, 1.0], [0.5, 0.0]])
    out = TurnCredit(gamma=0.9, beta=3.0)(batch).advantages
    assert out[:3].sum() == pytest.approx(3 * 1.25) and out[3:].sum() == pytest.approx(-2.5)
    flat = TurnCredit(beta=0.0)(batch).advantages
    np.testing.assert_allclose(flat, [1.25, 1.25, 1.25, -1.25, -1.25])


def test_turn_credit_group_of_one_trains_on_the_shaping_alone():
    (a0, a1) = TurnCredit()(batch_of([[0, 1]], turn_scores=[[0.0, 1.0]])).advantages
    assert a1 > 0 > a0 and a0 + a1 == pytest.approx(0.0)


def test_turn_credit_needs_the_turn_scores():
    with pytest.raises(ValueError, match="turn_scores"):
        TurnCredit()(batch_of([[0, 1]]))
    with pytest.raises(ValueError, match="gamma"):
        TurnCredit(gamma=-0.1)
    with pytest.raises(ValueError, match="beta"):
        TurnCredit(beta=float("nan"))


# ------------------------------------------------------------------------ by name, anywhere
@pytest.mark.parametrize(
    "spec",
    [
        'discounted_turn{"gamma": 0.9}',
        "turn_index_norm",
        'turn_index_norm{"fix": true}',
        'turn_credit{"gamma": 0.5, "beta": 2.0}',
    ],
)
def test_the_methods_are_registered_and_checked_as_specs(spec):
    found = credit.check_estimator_spec(spec)
    estimator = credit.build_estimator(spec)
    assert isinstance(estimator, found) and credit.is_group_independent(estimator)
    assert not estimator.trains_critic


def test_bad_spec_arguments_are_refused_before_anything_runs():
    with pytest.raises(ValueError, match="nope"):
        credit.check_estimator_spec('turn_index_norm{"nope": 1}')
    with pytest.raises(ValueError, match="fix"):
        credit.check_estimator_spec('turn_index_norm{"fix": "yes"}')


def test_only_turn_credit_reads_a_privileged_field():
    from routine_envs.episodes import PRIVILEGED_FIELDS

    for name in ("discounted_turn", "turn_index_norm", "turn_credit"):
        estimator = credit.build_estimator(name)
        assert bool(estimator.requires & set(PRIVILEGED_FIELDS)) == (name == "turn_credit")
    assert credit.build_estimator("turn_credit").label == "turn_credit (privileged: turn_score)"


# ----------------------------------------------------------- the exact bias: brute force
def trajectories(dynamics, probs, s0):
    """Every episode from ``s0``: (probability, state ids, actions, rewards)."""
    out = []

    def walk(sid, p, ids, actions, rewards):
        state = dynamics.state_from_id(sid)
        for a in np.flatnonzero(probs[sid] > 0).tolist():
            for q, nxt, r, ends in dynamics.outcomes(state, a):
                step = (p * probs[sid, a] * q, [*ids, sid], [*actions, a], [*rewards, r])
                if ends:
                    out.append(step)
                else:
                    walk(dynamics.state_id(nxt), *step)

    walk(int(s0), 1.0, [], [], [])
    return out


def brute_force_gradient(env, policy, group_size, fix):
    """``E g`` by enumerating every group of ``group_size`` episodes from every start."""
    base, probs = env.unwrapped, policy.probs()
    model, estimator = base.model(), TurnIndexNorm(fix=fix)
    total = np.zeros(probs.shape)
    for s0 in np.flatnonzero(model.initial > 0):
        episodes = trajectories(base.dynamics, probs, s0)
        for combo in itertools.product(episodes, repeat=group_size):
            lengths = [len(e[1]) for e in combo]
            batch = EpisodeBatch(
                rewards=np.concatenate([e[3] for e in combo]).astype(float),
                episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
                groups=np.zeros(group_size, int),
                actions=np.concatenate([e[2] for e in combo]),
                state_ids=np.concatenate([e[1] for e in combo]),
            )
            score = -probs[batch.state_ids]
            score[np.arange(batch.num_steps), batch.actions] += 1.0
            g = np.zeros(probs.shape)
            np.add.at(g, batch.state_ids, estimator(batch).advantages[:, None] * score)
            total += model.initial[s0] * np.prod([e[0] for e in combo]) * g / group_size
    return total.ravel()


@pytest.fixture(scope="module")
def tiny_search():
    env = gym.make(
        "SearchOrAnswer-v0",
        num_candidates=2,
        max_searches=1,
        reading_length=1,
        search_cost=0.1,
        find_probability=0.5,
    )
    u = env.unwrapped
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(u.num_states, u.num_actions))
    return env, snr.TabularSoftmax.per_state(u.num_states, u.num_actions, logits)


@pytest.mark.parametrize("fix", [False, True])
def test_exact_gradient_equals_the_brute_force_expectation(tiny_search, fix):
    env, policy = tiny_search
    for group_size in (1, 2):
        brute = brute_force_gradient(env, policy, group_size, fix)
        exact = turn_index_norm_gradient(env, policy, group_size, fix)
        np.testing.assert_allclose(exact, brute, atol=1e-14)
    assert np.abs(exact).max() > 0.01


def test_exact_gradient_of_a_group_of_three_equals_the_brute_force(tiny_search):
    """Groups of three: the binomial weights of the other episodes (``Y ~ Bin(1, p)``)."""
    env, _ = tiny_search
    u = env.unwrapped
    policy = snr.TabularSoftmax.per_state(u.num_states, u.num_actions)  # uniform: fewer paths
    brute = brute_force_gradient(env, policy, 3, False)
    np.testing.assert_allclose(turn_index_norm_gradient(env, policy, 3), brute, atol=1e-14)


def test_the_fix_scales_the_gradient_and_the_natural_one_is_biased(tiny_search):
    env, policy = tiny_search
    grad = snr.exact_policy_gradient(env, policy)
    for g in (2, 5, 8):
        np.testing.assert_allclose(
            turn_index_norm_gradient(env, policy, g, fix=True), (g - 1) / g * grad, atol=1e-15
        )
        fixed = turn_index_norm_bias(env, policy, g, fix=True)
        assert fixed["relative_bias"] == pytest.approx(1 / g) and fixed["cosine"] == (
            pytest.approx(1.0)
        )
    natural = [turn_index_norm_bias(env, policy, g)["relative_bias"] for g in (2, 8, 64, 4096)]
    limit = turn_index_norm_bias(env, policy, None)["relative_bias"]
    assert limit > 0.05 and natural[-1] == pytest.approx(limit, rel=1e-3)


def test_infinite_groups_add_the_accumulated_intermediate_means(tiny_search):
    """For infinite groups ``E g - grad J`` is minus the gradient of the accumulated group means
    ``mu_k`` of the intermediate rewards: with a cost ``c`` on every search and no other
    intermediate reward, the search turns' ``mu_k`` is ``-c``, so the estimator sees searches as
    free, and ``E g`` is the gradient of the outcome alone."""
    env, policy = tiny_search
    u = env.unwrapped
    free = gym.make(
        "SearchOrAnswer-v0",
        num_candidates=2,
        max_searches=1,
        reading_length=1,
        search_cost=0.0,
        find_probability=0.5,
    )
    np.testing.assert_allclose(
        turn_index_norm_gradient(env, policy, None),
        snr.exact_policy_gradient(free, policy),
        atol=1e-15,
    )
    assert u.search_cost == 0.1


def test_binomial_helpers():
    np.testing.assert_allclose(binomial_pmf(3, 0.5), [1 / 8, 3 / 8, 3 / 8, 1 / 8])
    assert binomial_pmf(1000, 0.3).sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(binomial_pmf(2, 1.0), [0, 0, 1])
    # G = 2: w = p/2 (the other episode present), c = p mu / 2
    assert finite_group_weights(2, 0.4, -0.1) == pytest.approx((0.2, -0.02))
    assert finite_group_weights(1, 0.4, -0.1) == (0.0, 0.0)
    with pytest.raises(ValueError, match="group_size"):
        turn_index_norm_gradient(None, None, 0)
