"""The per-turn score channel ``info["turn_score"]`` over the registry: every step reports the
dynamics' score of the state it reached, the tables the vector env and the model sampler read
are the same scores, the rule-based scores equal the exact model's optimal success probability
where their docstrings say so, and batches carry each step's score of the state it reached."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from routine_envs import annotations as keys
from routine_envs.episodes import PRIVILEGED_FIELDS, collect_episodes
from routine_envs.multiagent.team_doors import TeamDoorsDynamics
from routine_envs.multiagent.team_grid import TeamGridDynamics
from routine_envs.multiagent.team_grid_v1 import TeamTreeGridDynamics
from routine_envs.sampler import ModelSampler
from tests.test_contract import CASES, SMALL, case_id, dynamics_or_skip, make
from tests.utils import run_episode, small_config, uniform_policy

#: the ids whose docstring defines ``turn_score`` as the exact probability of success from the
#: state under the optimal policy (computed by their rules, checked here against the model)
OPTIMAL_SUCCESS_IDS = ("DilutedDoors-v0", "DilutedDoors-v1", "RoutineGrid-v0", "RoutineGridSoft-v0")
#: the exact model is built for the optimal-success check only up to this many state ids
MAX_CHECKED_STATES = 300_000


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_step_reports_the_score_of_the_state_it_reached(case):
    env = make(case)
    dynamics = dynamics_or_skip(env)
    table = dynamics.turn_score_table()
    assert table.shape == (dynamics.num_states,) and table.dtype == np.float64
    rng = np.random.default_rng(0)
    for ep in range(3):
        record = run_episode(env, uniform_policy(int(env.action_space.n)), rng, seed=ep)
        for info in [*record["infos"], record["final_info"]]:
            sid, score = info[keys.STATE_ID], info[keys.TURN_SCORE]
            assert isinstance(score, float) and 0.0 <= score <= 1.0, (sid, score)
            assert score == dynamics.turn_score(dynamics.state_from_id(sid)) == table[sid]
        end = record["final_info"]
        if end[keys.SUCCESS] and not end.get("TimeLimit.truncated", False):
            # a successful terminal state is scored as a success by every definition
            assert end[keys.TURN_SCORE] == 1.0


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in OPTIMAL_SUCCESS_IDS], ids=case_id)
def test_rule_based_scores_are_the_exact_optimal_success_probability(case):
    """Diluted Doors computes its score by its rules (on track or not); the grid uses the
    default. Both must be the exact model's success probability under the optimal policy."""
    dynamics = make(case).unwrapped.dynamics
    if dynamics.num_states > MAX_CHECKED_STATES:
        pytest.skip("too many states for the exact model in a test")
    reachable = dynamics.model().reachable
    exact = dynamics.optimal_success_table()
    np.testing.assert_allclose(dynamics.turn_score_table()[reachable], exact[reachable], atol=1e-9)
    assert 0.0 < exact[reachable].mean() < 1.0  # both outcomes are reachable


@pytest.mark.parametrize("env_id", ["RoutineGridSoft-v0", "CodeFix-v0"])
def test_default_score_matches_episodes_of_the_optimal_policy(env_id):
    """The default score, checked against play: episodes of the optimal policy (uniform over the
    actions within 1e-9 of the best ``Q*``) from a state succeed as often as its score says."""
    env = gym.make(env_id, **small_config(env_id))
    dynamics = env.unwrapped.dynamics
    q, exact = dynamics.optimal().q, dynamics.optimal_success_table()
    rng = np.random.default_rng(3)
    successes, expected, n = 0, 0.0, 600
    for ep in range(n):
        _, info = env.reset(seed=ep)
        expected += exact[info[keys.STATE_ID]] / n
        done = False
        while not done:
            row = q[info[keys.STATE_ID]]
            valid = dynamics.action_mask(env.unwrapped.state)
            row = np.where(valid, row, -np.inf) if valid is not None else row
            best = np.flatnonzero(row >= row.max() - 1e-9 * max(1.0, abs(row.max())))
            _, _, terminated, truncated, info = env.step(int(rng.choice(best)))
            done = terminated or truncated
        successes += bool(info[keys.SUCCESS])
    spread = np.sqrt(max(expected * (1 - expected), 1e-3) / n)
    assert abs(successes / n - expected) < 4 * spread, (successes / n, expected)


@pytest.mark.parametrize("case", [c for c in SMALL if not c[0].startswith("Team")], ids=case_id)
def test_batches_carry_the_score_of_the_state_each_step_reached(case):
    """``collect_episodes`` (infos) and the model sampler (tables) give every step the score of
    the state it reached: the next step's state, the episode's last state at its end."""
    env = make(case)
    dynamics = dynamics_or_skip(env)
    table = dynamics.turn_score_table()
    num_actions = int(env.action_space.n)
    batch = collect_episodes(
        env, lambda obs, info, rng: int(rng.integers(num_actions)), num_groups=4, group_size=2
    )
    assert batch.turn_scores is not None and batch.turn_scores.shape == (batch.num_steps,)
    ends = batch.episode_starts[1:] - 1
    inner = np.setdiff1d(np.arange(batch.num_steps), ends)
    np.testing.assert_array_equal(batch.turn_scores[inner], table[batch.state_ids[inner + 1]])
    sampler = ModelSampler(env)
    uniform = np.full((dynamics.num_states, num_actions), 1.0 / num_actions)
    sampled = sampler.sample(uniform, 5, 3, np.random.default_rng(1))
    ends = sampled.episode_starts[1:] - 1
    inner = np.setdiff1d(np.arange(sampled.num_steps), ends)
    np.testing.assert_array_equal(sampled.turn_scores[inner], table[sampled.state_ids[inner + 1]])
    assert set(np.unique(sampled.turn_scores[ends])) <= set(np.unique(table))
    assert "turn_scores" in ModelSampler.PROVIDES and "turn_scores" in PRIVILEGED_FIELDS


@pytest.mark.parametrize(
    "make_dynamics",
    [
        lambda: TeamDoorsDynamics(num_agents=2, num_floors=2, num_doors=2, routine_length=1),
        lambda: TeamDoorsDynamics(
            num_agents=3, num_floors=3, num_doors=2, routine_length=(0, 1), reward="fraction"
        ),
        lambda: TeamGridDynamics(num_agents=2, num_junctions=2, branching=2, corridor_length=1),
        lambda: TeamTreeGridDynamics(num_agents=2, num_junctions=2, corridor_length=2),
    ],
    ids=["doors", "doors-fraction", "grid", "grid-v1"],
)
def test_team_scores_by_rule_are_the_exact_optimal_joint_success(make_dynamics):
    """The team envs score by rule (the core's; the product over independent mazes), never by
    the joint model, which is too large for real configurations: on small ones both agree."""
    dynamics = make_dynamics()
    reachable = dynamics.model().reachable
    exact = dynamics.optimal_success_table()
    by_rule = np.array(
        [dynamics.turn_score(dynamics.state_from_id(int(s))) for s in np.flatnonzero(reachable)]
    )
    np.testing.assert_allclose(by_rule, exact[reachable], atol=1e-9)
    assert 0.0 < by_rule.mean() < 1.0
