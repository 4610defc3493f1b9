"""Tree rollouts and the tree_grpo advantage (routine_envs.tree_grpo, issue 39): the advantage
computed by hand, the block leaders, and the batched trainer's tree-sampled groups: leaves share
their prefixes, each shared step counted once, and no branching at depth 0."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.lib.batched.envs import build_configs
from baselines.lib.batched.rollouts import Stepper, collect_groups
from baselines.lib.batched.streams import Uniforms
from routine_envs import credit
from routine_envs.episodes import EpisodeBatch
from routine_envs.tree_grpo import TreeGRPO, TreeRollout


def test_tree_grpo_by_hand():
    # one group, 2 trees x 2 leaves; returns (1, 0 | 1, 1): tree means 0.5 and 1, group mean
    # 0.75; A = (R - tree mean) + (R - group mean)
    batch = EpisodeBatch(
        rewards=np.array([0, 1, 0, 0, 1, 1], dtype=float),
        episode_starts=np.array([0, 2, 4, 5, 6]),
        groups=np.zeros(4, dtype=np.int64),
    )
    result = TreeGRPO(trees=2, branches=2, depth=1)(batch)
    np.testing.assert_allclose(result.advantages, [0.75, 0.75, -1.25, -1.25, 0.25, 0.25])
    with pytest.raises(ValueError, match="groups of 8 episodes"):
        TreeGRPO(trees=2, branches=2, depth=2)(batch)
    assert credit.build_estimator("tree_grpo").rollout == TreeRollout()


def test_one_tree_per_leaf_is_the_trajectory_advantage():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 5, size=16)
    batch = EpisodeBatch(
        rewards=rng.random(int(lengths.sum())),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
        groups=np.repeat([3, 1], 8),
    )
    tree = TreeGRPO(trees=8, depth=0)(batch).advantages
    np.testing.assert_allclose(tree, credit.TrajectoryMC()(batch).advantages)


def test_block_leaders():
    scheme = TreeRollout(trees=2, branches=2, depth=2)
    np.testing.assert_array_equal(scheme.leaders(np.array([0, 1])), [0, 0, 0, 0, 4, 4, 6, 6])
    np.testing.assert_array_equal(scheme.leaders(np.array([2, 2])), np.arange(8))
    with pytest.raises(ValueError, match="need groups of 8 episodes"):
        scheme.check_group_size(4)
    with pytest.raises(ValueError, match="branch_prob"):
        TreeRollout(branch_prob=2)


def rollout(scheme, seed=0, target=200):
    configs, config_of, _ = build_configs(
        [("DilutedDoors-v1", {"num_floors": 2, "routine_length": 3})], 8
    )
    stepper = Stepper(configs, config_of, 8)
    rng = np.random.default_rng(seed)

    def act(runs, obs, masks, uniforms, state_ids):  # the uniform policy over 3 actions
        shape = uniforms.shape
        return (
            np.minimum((uniforms * 3).astype(np.int64), 2),
            np.full(shape, -np.log(3), dtype=np.float32),
            None,
            np.full(shape, np.log(3), dtype=np.float32),
        )

    (ro,) = collect_groups(
        stepper,
        np.array([0]),
        act,
        None,
        Uniforms([np.random.default_rng(rng.integers(1 << 30))]),
        [np.random.default_rng(rng.integers(1 << 30))],
        target,
        True,
        scheme,
    )
    return ro


def paths(batch, scheme):
    """Per episode, its steps as (state_id, action), and its tree."""
    out = []
    starts = batch.episode_starts
    for e in range(batch.num_episodes):
        s = slice(starts[e], starts[e + 1])
        member = e % scheme.group_size
        out.append(
            (member // scheme.leaves, list(zip(batch.state_ids[s], batch.actions[s], strict=True)))
        )
    return out


@pytest.mark.parametrize("branch_prob", [0.0, 0.3, 1.0])
def test_tree_rollouts_share_prefixes_and_count_each_step_once(branch_prob):
    scheme = TreeRollout(trees=2, branches=2, depth=2, branch_prob=branch_prob)
    ro = rollout(scheme)
    batch = ro.batch
    groups = batch.num_episodes // 8
    assert batch.num_episodes == 8 * groups and ro.steps_taken >= 200
    walked = paths(batch, scheme)
    nodes = {
        (g, tree, tuple(p[: t + 1]))
        for (tree, p), g in zip(walked, np.asarray(batch.groups), strict=True)
        for t in range(len(p))
    }
    assert len(nodes) <= ro.steps_taken <= batch.num_steps  # a repeated node: a chance path
    leaves = [walked[k : k + 4] for k in range(0, len(walked), 4)]  # per tree
    if branch_prob == 0.0:  # never branched: a tree's leaves are one episode, taken once
        assert ro.steps_taken * scheme.leaves == batch.num_steps
        assert all(len({tuple(p) for _, p in tree}) == 1 for tree in leaves)
    if branch_prob == 1.0:
        # level 1 at the first step (pairs: leaves 0-1 and 2-3 share it), level 2 at the next:
        # each tree's two pairs copy one first step each
        assert ro.steps_taken == batch.num_steps - 2 * 2 * groups
        for tree in leaves:
            assert tree[0][1][0] == tree[1][1][0] and tree[2][1][0] == tree[3][1][0]


def test_depth_zero_takes_every_step():
    ro = rollout(TreeRollout(trees=8, depth=0))
    assert ro.steps_taken == ro.batch.num_steps


def test_the_lab_and_the_sb3_trainer_refuse_tree_sampling():
    """Callers that sample independent episodes only (the SB3 trainer, the lab's sweep and its
    checkpoints of training runs; `snr_lab measure` samples a tree method its own way) refuse
    it: tree_grpo's numbers there would be another algorithm's."""
    with pytest.raises(ValueError, match="rollout scheme"):
        credit.check_independent_groups(credit.declare(TreeGRPO()), "the SNR lab")
    credit.check_independent_groups(credit.declare(credit.TrajectoryMC()), "the SNR lab")
    assert credit.rollout_scheme(credit.declare(TreeGRPO(depth=1))) == TreeRollout(depth=1)


def test_the_card_says_how_a_tree_method_counts_its_steps():
    from baselines.experiments.benchmark.card import steps_counted

    assert "counted once" in steps_counted('tree_grpo{"depth": 1}')
    assert steps_counted("trajectory_mc") is None and steps_counted("ppo") is None
    assert steps_counted("my_module:Mine") is None  # outside code is not imported for a card


def test_the_lab_leaves_out_tree_methods_and_only_them():
    """The lab samples independent episodes: a tree method (its own budget count) is left out
    of it, whatever its arguments; every other method, outside code included, stays."""
    from baselines.experiments.benchmark import card

    methods = ["trajectory_mc", "tree_grpo", 'tree_grpo{"trees": 1}', "empg", "my_pkg.mod:Est"]
    assert card.in_lab(methods) == ["trajectory_mc", "empg", "my_pkg.mod:Est"]


# ------------------------------------------------------------------ the lab's tree sampler
def _doors(**kwargs):
    import gymnasium as gym

    import routine_envs

    gym.register_envs(routine_envs)
    return gym.make("DilutedDoors-v1", **{"num_floors": 2, "routine_length": 3, **kwargs}).unwrapped


def _uniform(env):
    table = env.masked_uniform_policy()
    return table / table.sum(axis=1, keepdims=True)


@pytest.mark.parametrize(
    ("scheme", "shared_per_tree"),
    [
        # never branches: the leaves of a tree are one episode, taken once
        (TreeRollout(trees=2, branches=2, depth=2, branch_prob=0.0), None),
        # branches at the first two steps: 4 leaves take step 0 as 2 blocks, then each its own
        (TreeRollout(trees=2, branches=2, depth=2, branch_prob=1.0), 2),
        # no levels: independent episodes, every step its own
        (TreeRollout(trees=4, branches=2, depth=0), 0),
    ],
)
def test_the_tree_sampler_takes_a_shared_step_once(scheme, shared_per_tree):
    from routine_envs.tree_sampler import TreeSampler

    env = _doors()
    sampler = TreeSampler(env, scheme)
    batch = sampler.sample(_uniform(env), 50, scheme.group_size, np.random.default_rng(0))
    lengths = np.diff(batch.episode_starts)
    assert sampler.leaf_steps == lengths.sum()
    assert sampler.episodes_sampled == 50 * scheme.group_size
    per_tree = lengths.reshape(-1, scheme.leaves)
    if shared_per_tree is None:  # one episode per tree, repeated in every leaf
        assert (per_tree == per_tree[:, :1]).all()
        assert sampler.steps_taken == per_tree[:, 0].sum()
        starts = batch.episode_starts[:-1].reshape(-1, scheme.leaves)
        for tree in range(len(starts)):
            first = slice(starts[tree, 0], starts[tree, 0] + per_tree[tree, 0])
            for leaf in range(1, scheme.leaves):
                other = slice(starts[tree, leaf], starts[tree, leaf] + per_tree[tree, leaf])
                assert (batch.actions[first] == batch.actions[other]).all()
    else:
        assert (lengths >= 2).all()
        assert sampler.steps_taken == lengths.sum() - shared_per_tree * len(per_tree)


def test_every_leaf_is_an_episode_of_the_policy():
    """Sharing steps correlates the leaves of a tree but leaves each one an ordinary episode:
    the mean return of the leaves is the policy's exact value (within 4 standard errors)."""
    from routine_envs.tree_sampler import TreeSampler

    env = _doors()
    probs = _uniform(env)
    exact = float(env.model().initial @ env.oracle(probs).v)
    sampler = TreeSampler(env, TreeRollout(trees=2, branches=2, depth=2, branch_prob=0.3))
    batch = sampler.sample(probs, 4000, 8, np.random.default_rng(1))
    per_tree = batch.episode_returns().reshape(-1, 4).mean(axis=1)  # trees are independent
    assert abs(per_tree.mean() - exact) < 4 * per_tree.std() / np.sqrt(len(per_tree))
    with pytest.raises(ValueError, match="need groups of 8"):
        sampler.sample(probs, 2, 4, np.random.default_rng(1))


def test_the_lab_measures_a_tree_method_its_own_way_at_equal_steps(tmp_path):
    """``snr_lab measure`` samples tree_grpo by its trees and puts its SNR at equal steps; with
    no branch levels it is trajectory_mc on other episodes, so the ratio's interval holds 1."""
    from baselines.experiments.snr_lab import measure

    args = measure.MeasureArgs(
        routine_lengths=[3],
        estimators=["trajectory_mc", 'tree_grpo{"depth": 0, "trees": 8}', "tree_grpo"],
        episodes=2400,
        workers=1,
        out=tmp_path,
    )
    (record,) = measure.run_experiment(measure.EXPERIMENT, args, measure.plan(args))
    rows = {r["estimator"]: r for r in record["results"]}
    flat = rows['tree_grpo{"depth": 0, "trees": 8}']
    assert flat["steps_per_group"] == pytest.approx(8 * flat["mean_leaf_length"])
    low, high = record["ratios"]['tree_grpo{"depth": 0, "trees": 8}/trajectory_mc'][1:]
    assert low < 1 < high
    tree = rows["tree_grpo"]
    assert tree["steps_per_group"] < 8 * tree["mean_leaf_length"]  # shared steps counted once
    assert tree["sampling"].startswith("tree rollouts: 2 trees x 2^2")
