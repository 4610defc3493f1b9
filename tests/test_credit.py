"""Advantage estimators: hand-computed values on tiny episodes, structural properties, and
agreement in expectation with the exact policy gradient on Diluted Doors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from routine_envs import credit
from routine_envs.envs import DilutedDoorsV0Env
from routine_envs.episodes import Episode, EpisodeBatch, collect_episodes
from routine_envs.oracle import occupancy


def batch_of(
    rewards_per_episode,
    groups=None,
    values=None,
    critical=None,
    state_ids=None,
    truncated=None,
    bootstrap=None,
    anchors=None,
):
    lengths = [len(r) for r in rewards_per_episode]
    n = sum(lengths)
    return EpisodeBatch(
        rewards=np.concatenate([np.asarray(r, float) for r in rewards_per_episode]),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
        groups=np.asarray(groups if groups is not None else range(len(lengths))),
        actions=np.zeros(n, dtype=int),
        values=None if values is None else np.asarray(values, float),
        critical=None if critical is None else np.asarray(critical, bool),
        state_ids=None if state_ids is None else np.asarray(state_ids),
        anchors=None if anchors is None else np.asarray(anchors),
        truncated=None if truncated is None else np.asarray(truncated, bool),
        bootstrap_values=None if bootstrap is None else np.asarray(bootstrap, float),
    )


# ------------------------------------------------------------------ hand-computed values
def test_gae_hand_computed():
    batch = batch_of([[0, 0, 1]], values=[0.5, 0.5, 0.5])
    out = credit.GAE(gamma=0.9, gae_lambda=0.8)(batch)
    # delta = [-0.05, -0.05, 0.5]; A2 = 0.5, A1 = -0.05 + 0.72 * 0.5, A0 = -0.05 + 0.72 * A1
    a1 = -0.05 + 0.72 * 0.5
    np.testing.assert_allclose(out.advantages, [-0.05 + 0.72 * a1, a1, 0.5], rtol=1e-12)
    np.testing.assert_allclose(out.returns, out.advantages + 0.5)


def test_gae_truncated_episode_bootstraps_and_terminated_does_not():
    batch = batch_of(
        [[1.0], [1.0]], values=[0.5, 0.5], truncated=[True, False], bootstrap=[2.0, 2.0]
    )
    out = credit.GAE(gamma=0.9, gae_lambda=1.0)(batch)
    np.testing.assert_allclose(out.advantages, [1 + 0.9 * 2 - 0.5, 1 - 0.5])


def test_gae_matches_stable_baselines3_rollout_buffer():
    sb3_buffers = pytest.importorskip("stable_baselines3.common.buffers")
    import gymnasium as gym

    rng = np.random.default_rng(0)
    rewards = [rng.normal(size=4), rng.normal(size=3)]
    values = rng.normal(size=7)
    ours = credit.GAE(gamma=0.95, gae_lambda=0.9)(batch_of(rewards, values=values))
    buf = sb3_buffers.RolloutBuffer(
        7, gym.spaces.Box(-1, 1, (1,)), gym.spaces.Discrete(2), gamma=0.95, gae_lambda=0.9, n_envs=1
    )
    flat_r = np.concatenate(rewards)
    starts = [1, 0, 0, 0, 1, 0, 0]
    import torch

    for t in range(7):
        buf.add(
            np.zeros((1, 1)),
            np.zeros((1, 1)),
            flat_r[t : t + 1],
            np.array([starts[t]]),
            torch.tensor([values[t]]),
            torch.zeros(1),
        )
    buf.compute_returns_and_advantage(last_values=torch.tensor([0.0]), dones=np.array([1]))
    np.testing.assert_allclose(ours.advantages, buf.advantages[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.returns, buf.returns[:, 0], rtol=1e-5, atol=1e-6)


def test_trajectory_mc_hand_computed_and_constant_within_episode():
    batch = batch_of([[0, 1], [0, 0, 0], [3], [0, 1]], groups=[0, 0, 1, 1])
    out = credit.TrajectoryMC()(batch)
    np.testing.assert_allclose(out.advantages, [0.5, 0.5, -0.5, -0.5, -0.5, 1, -1, -1])
    assert out.returns is None
    norm = credit.TrajectoryMC(normalize_std=True, eps=0.0)(batch)
    np.testing.assert_allclose(norm.advantages, [1, 1, -1, -1, -1, 1, -1, -1])
    for i in range(batch.num_episodes):
        seg = out.advantages[batch.episode_starts[i] : batch.episode_starts[i + 1]]
        assert np.all(seg == seg[0])


def test_rloo_hand_computed():
    batch = batch_of([[1], [0], [0], [3], [1]], groups=[7, 7, 7, 2, 2])
    out = credit.RLOO()(batch)
    np.testing.assert_allclose(out.advantages, [1, -0.5, -0.5, 2, -2])
    with pytest.raises(ValueError, match="at least 2"):
        credit.RLOO()(batch_of([[1], [0]], groups=[0, 1]))


def test_gigpo_hand_computed():
    # one group, two episodes; observation 5 is seen by both (anchor), others once
    batch = batch_of([[0, 0, 1], [0, 0]], groups=[0, 0], anchors=[5, 1, 2, 5, 3])
    out = credit.GiGPO(omega=0.5)(batch)
    # episode returns 1, 0 -> episode adv 0.5, -0.5; returns-to-go [1,1,1], [0,0]
    # anchor 5: G = 1 and 0, mean 0.5 -> step adv +0.5 / -0.5; singletons -> 0
    np.testing.assert_allclose(out.advantages, [0.5 + 0.25, 0.5, 0.5, -0.5 - 0.25, -0.5])
    with pytest.raises(ValueError, match="anchors"):
        credit.GiGPO()(batch_of([[0, 1]], state_ids=[0, 1]))


def test_gigpo_groups_by_the_observation_anchor_unless_asked():
    """Two states that look the same (equal anchors) but differ in hidden state (ids 7, 8):
    the default groups them, as an agent could; grouping by the privileged id is explicit and
    named so."""
    batch = batch_of([[0, 1], [0, 0]], groups=[0, 0], state_ids=[7, 1, 8, 3], anchors=[5, 1, 5, 3])
    fair = credit.GiGPO()(batch).advantages
    privileged_estimator = credit.GiGPO(group_by="state_id")
    privileged = privileged_estimator(batch).advantages
    assert fair[0] != privileged[0]  # the step advantage appears only with the shared anchor
    np.testing.assert_allclose(privileged, credit.TrajectoryMC()(batch).advantages)
    assert credit.GiGPO().label == "gigpo"
    assert "privileged" in privileged_estimator.label
    assert credit.GiGPO().requires == {"anchors"} and privileged_estimator.requires == {"state_ids"}
    with pytest.raises(ValueError, match="group_by"):
        credit.GiGPO(group_by="obs")


def test_gigpo_anchors_do_not_cross_groups():
    batch = batch_of([[1], [0]], groups=[0, 1], anchors=[4, 4])
    np.testing.assert_allclose(credit.GiGPO()(batch).advantages, [0.0, 0.0])


def test_routine_masked_zeroes_routine_steps():
    batch = batch_of([[0, 1], [0, 0]], groups=[0, 0], critical=[True, False, True, False])
    np.testing.assert_allclose(credit.RoutineMasked()(batch).advantages, [0.5, 0, -0.5, 0])


def test_oracle_is_exactly_zero_on_routine_steps_and_noise_has_given_sigma():
    env = DilutedDoorsV0Env(num_floors=3, num_doors=3, routine_length=(1, 5), reward="fraction")
    table = np.random.default_rng(0).dirichlet(np.ones(3), size=env.num_states)
    batch = collect_episodes(env, sampler(table), num_groups=50, seed=1)
    out = credit.Oracle(env, table)(batch)
    assert np.all(out.advantages[~batch.critical] == 0.0)
    assert np.all(out.advantages[batch.critical] != 0.0)
    values = env.oracle(table)
    np.testing.assert_array_equal(out.advantages, values.advantage[batch.state_ids, batch.actions])
    noisy = credit.Oracle(env, lambda: table, sigma=0.3, seed=0)(batch)
    resid = noisy.advantages - out.advantages
    assert resid.std() == pytest.approx(0.3, rel=0.1)
    with pytest.raises(ValueError, match="sigma"):
        credit.Oracle(env, table, sigma=-1)
    with pytest.raises(ValueError, match="exact model"):
        credit.Oracle(object(), table)


# ------------------------------------------------------------------------ the interface
def test_registry_and_make_estimator():
    assert set(credit.ESTIMATORS) == {
        "gae",
        "trajectory_mc",
        "rloo",
        "gigpo",
        "mc_rollout",
        "oracle",
        "routine_masked",
        "detector_masked",  # by import path: it lives in routine_envs.detectors
        "discounted_turn",  # the turn-level methods, by import path (routine_envs.turn_level)
        "turn_index_norm",
        "turn_credit",
        "empg",  # the 2025-26 methods, each in a module of its own (docs/estimators.md)
        "spa",
        "asymmetric_critic",
        "tree_grpo",
    }
    est = credit.make_estimator("trajectory_mc", normalize_std=True)
    assert isinstance(est, credit.AdvantageEstimator) and est.normalize_std
    assert credit.make_estimator(est) is est
    with pytest.raises(ValueError, match="unknown estimator 'ppo'"):
        credit.make_estimator("ppo")
    with pytest.raises(ValueError, match="bad arguments"):
        credit.make_estimator("gae", lam=0.9)
    with pytest.raises(ValueError, match="not an advantage estimator"):
        credit.make_estimator(42)


def test_missing_annotations_and_batch_fields_are_named():
    est = credit.make_estimator("routine_masked")
    assert credit.missing_annotations(est, {"state_id": 0}) == ["critical"]
    assert credit.missing_annotations(est, {"critical": True}) == []
    with pytest.raises(ValueError, match=r"\['critical'\]"):
        est(batch_of([[1.0]]))
    with pytest.raises(ValueError, match="values"):
        credit.GAE()(batch_of([[1.0]]))


def test_episode_batch_validation():
    with pytest.raises(ValueError, match="episode_starts"):
        EpisodeBatch(rewards=np.zeros(3), episode_starts=np.array([0, 2]), groups=np.zeros(1))
    with pytest.raises(ValueError, match="groups"):
        EpisodeBatch(rewards=np.zeros(3), episode_starts=np.array([0, 3]), groups=np.zeros(2))
    with pytest.raises(ValueError, match="critical"):
        EpisodeBatch(
            rewards=np.zeros(3),
            episode_starts=np.array([0, 3]),
            groups=np.zeros(1),
            critical=np.zeros(2, bool),
        )
    with pytest.raises(ValueError, match="episode 0"):
        EpisodeBatch.from_episodes([Episode(rewards=[1.0], actions=[], infos=[])])


def test_returns_to_go_and_padding():
    batch = batch_of([[1, 2, 3], [4]], truncated=[False, True], bootstrap=[9, 10])
    np.testing.assert_allclose(batch.returns_to_go(0.5), [1 + 0.5 * (2 + 1.5), 2 + 1.5, 3, 4 + 5])
    np.testing.assert_array_equal(batch.unpad(batch.padded(batch.rewards)), batch.rewards)
    np.testing.assert_array_equal(batch.episode_returns(), [6, 4])


def test_collect_episodes_groups_share_initial_state_and_env_randomness():
    env = DilutedDoorsV0Env(num_floors=3, routine_length=(0, 9))
    batch = collect_episodes(
        env, lambda o, i, rng: int(rng.integers(3)), num_groups=4, group_size=3, seed=0
    )
    assert batch.groups.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    lengths = batch.lengths.reshape(4, 3)
    assert np.all(lengths == lengths[:, :1])  # same seeds: same corridor draws in a group
    assert len(set(lengths[:, 0])) > 1  # different groups differ


# ------------------------------------------------------------ agreement in expectation
def sampler(table):
    cumulative = np.cumsum(table, axis=1)

    def act(obs, info, rng):
        return int(
            np.searchsorted(cumulative[info["state_id"]], rng.random(), side="right").clip(
                max=table.shape[1] - 1
            )
        )

    return act


def batched_sampler(table, seed):
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(table, axis=1)

    def act(observations, infos):
        ids = np.array([info["state_id"] for info in infos])
        draws = rng.random(len(ids))[:, None]
        return np.minimum((draws > cumulative[ids]).sum(axis=1), table.shape[1] - 1)

    return act


def gradient_per_group(batch, advantages, table):
    """Tabular softmax score times advantage, summed per group: shape (G, S * A)."""
    groups = batch.group_index()
    step_group = np.repeat(groups, batch.lengths)
    num_groups, (num_states, num_actions) = groups.max() + 1, table.shape
    score = -table[batch.state_ids] * advantages[:, None]
    score[np.arange(batch.num_steps), batch.actions] += advantages
    out = np.zeros((num_groups, num_states, num_actions))
    np.add.at(out, (step_group, batch.state_ids), score)
    return out.reshape(num_groups, -1)


@pytest.mark.parametrize(
    "name", ["rloo", "oracle", "routine_masked", "mc_rollout", "trajectory_mc"]
)
def test_unbiased_estimators_agree_with_exact_policy_gradient(name):
    env = DilutedDoorsV0Env(num_floors=2, num_doors=2, routine_length=2, reward="fraction")
    table = np.random.default_rng(3).dirichlet(np.ones(2) * 2, size=env.num_states)
    model = env.model()
    exact = (occupancy(model, table)[:, None] * table * env.oracle(table).advantage).ravel()
    group_size = 4
    num_groups = 250 if name == "mc_rollout" else 1500
    batch = collect_episodes(
        env,
        sampler(table),
        num_groups=num_groups,
        group_size=group_size,
        seed=7,
        keep_snapshots=name == "mc_rollout",
    )
    estimator = {
        "rloo": credit.RLOO(),
        "oracle": credit.Oracle(env, table),
        "routine_masked": credit.RoutineMasked(),
        "mc_rollout": credit.MCRollout(batched_sampler(table, 0), num_rollouts=2),
        "trajectory_mc": credit.TrajectoryMC(),
    }[name]
    grads = gradient_per_group(batch, estimator(batch).advantages, table) / group_size
    if name in ("trajectory_mc", "routine_masked"):  # the group mean includes the episode
        # itself, which scales the expected gradient by (G - 1) / G
        grads *= group_size / (group_size - 1)
    mean, se = grads.mean(axis=0), grads.std(axis=0) / np.sqrt(len(grads))
    active = exact != 0
    assert active.sum() >= 4
    z = (mean - exact)[active] / (se[active] + 1e-12)
    assert np.all(np.abs(z) < 4.5), (name, z)
    np.testing.assert_array_equal(mean[~active & (se == 0)], 0.0)


# ------------------------------------------------------------------ context and factory
def test_build_estimator_from_context():
    env = DilutedDoorsV0Env(num_floors=2, num_doors=2, routine_length=1)
    table = np.full((env.num_states, 2), 0.5)
    context = credit.EstimatorContext(env=env, policy_table=table, gamma=0.9, seed=3)
    gae = credit.build_estimator("gae", context)
    assert (gae.gamma, gae.gae_lambda) == (0.9, 0.95)  # None fields keep the defaults
    oracle = credit.build_estimator("oracle", context, sigma=0.1)
    assert oracle.env is env and oracle.policy is table and oracle.gamma == 0.9
    assert oracle.seed == 3 and oracle.sigma == 0.1
    assert credit.build_estimator(credit.GiGPO, context, omega=0.5).omega == 0.5
    est = credit.RLOO()
    assert credit.build_estimator(est, context) is est
    with pytest.raises(ValueError, match="keyword arguments"):
        credit.build_estimator(est, context, omega=1.0)
    with pytest.raises(ValueError, match="unknown estimator 'nope'"):
        credit.build_estimator("nope", context)
    with pytest.raises(ValueError, match="bad arguments for estimator 'gigpo'"):
        credit.build_estimator("gigpo", context, lam=1.0)
    with pytest.raises(ValueError, match="exact model"):
        credit.build_estimator("oracle", credit.EstimatorContext(env=object(), policy_table=table))
    with pytest.raises(ValueError, match="not an advantage estimator"):
        credit.build_estimator(dict, context)


def test_outside_estimator_class_is_built_from_a_context():
    """An estimator defined outside the package, never registered: the mixin maps its
    constructor parameters to context fields; a class with its own classmethod takes the
    whole context; a plain class gets its keyword arguments only."""

    @dataclass
    class ScaledOracle(credit.FromContext):
        env: object
        policy: object
        scale: float = 1.0
        name: ClassVar[str] = "scaled_oracle"
        requires: ClassVar[frozenset[str]] = frozenset({"state_ids", "actions"})
        trains_critic: ClassVar[bool] = False
        context_fields: ClassVar[dict[str, str]] = {"env": "env", "policy": "policy_table"}

        def __call__(self, batch):
            adv = self.env.oracle(self.policy).advantage[batch.state_ids, batch.actions]
            return credit.Advantages(self.scale * adv)

    class Custom:
        name, requires, trains_critic = "custom", frozenset(), False

        def __init__(self, gamma):
            self.gamma = gamma

        @classmethod
        def from_context(cls, context, **kwargs):
            return cls(gamma=context.gamma, **kwargs)

        def __call__(self, batch):
            return credit.Advantages(np.zeros(batch.num_steps))

    class Plain:
        name, requires, trains_critic = "plain", frozenset(), False

        def __init__(self, value=0.0):
            self.value = value

        def __call__(self, batch):
            return credit.Advantages(np.full(batch.num_steps, self.value))

    env = DilutedDoorsV0Env(num_floors=2, num_doors=2, routine_length=1)
    table = np.full((env.num_states, 2), 0.5)
    context = credit.EstimatorContext(env=env, policy_table=table, gamma=0.5)
    batch = collect_episodes(env, lambda o, i, rng: int(rng.integers(2)), 4, 2, seed=0)
    scaled = credit.build_estimator(ScaledOracle, context, scale=2.0)
    np.testing.assert_allclose(
        scaled(batch).advantages, 2.0 * credit.Oracle(env, table)(batch).advantages
    )
    assert credit.build_estimator(Custom, context).gamma == 0.5
    assert credit.build_estimator(Plain, context, value=3.0)(batch).advantages[0] == 3.0
    assert "scaled_oracle" not in credit.ESTIMATORS
