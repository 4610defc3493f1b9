"""SearchOrAnswer-v0 beyond the contract suite: the agent's plan (the best policy that sees
the answer only once found) against the exact model and against play, its threshold, the exact
decision density, and which turns are critical."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from routine_envs import annotations as keys
from routine_envs.envs.search_or_answer import RUNNING, SEARCH, SearchDynamics
from routine_envs.oracle import evaluate_policy


def plan_table(dynamics: SearchDynamics) -> np.ndarray:
    """The agent's plan as a ``(num_states, num_actions)`` table: answer the found candidate,
    else search where the plan searches, else guess uniformly."""
    search, _ = dynamics.agent_plan()
    k = dynamics.num_candidates
    table = np.zeros((dynamics.num_states, dynamics.num_actions))
    for sid in range(dynamics.num_states):
        state = dynamics.state_from_id(sid)
        if state.found:
            table[sid, 1 + state.answer] = 1.0
        elif search[state.searches]:
            table[sid, SEARCH] = 1.0
        else:
            table[sid, 1:] = 1.0 / k
    return table


def plan_success(dynamics: SearchDynamics) -> np.ndarray:
    """The exact success probability of the plan from every state (the model's evaluation)."""
    model = dynamics.model()
    hits = (model.terminated & dynamics.success_table()[model.next_state]).astype(float)
    values = evaluate_policy(model, plan_table(dynamics), reward=hits).v
    return np.where(model.terminal, dynamics.success_table().astype(float), values)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"num_candidates": 3, "max_searches": 4, "find_probability": 0.3, "reading_length": 0},
        {"search_cost": 0.5},  # above the threshold: answer at once
        {"num_candidates": 5, "max_searches": 3, "find_probability": 1.0, "search_cost": 0.1},
    ],
)
def test_turn_score_is_the_plans_exact_success_probability(kwargs):
    dynamics = gym.make("SearchOrAnswer-v0", **kwargs).unwrapped.dynamics
    reachable = dynamics.model().reachable
    np.testing.assert_allclose(
        dynamics.turn_score_table()[reachable], plan_success(dynamics)[reachable], atol=1e-12
    )


def test_the_plan_searches_while_a_search_is_worth_its_cost():
    """Below ``p (1 - 1/K)`` a search is worth more than a guess at every budget left, so the
    plan searches to the end; above, it answers at once. Hand-computed success: ``1 - (1-p)^n +
    (1-p)^n / K`` with ``n`` searches."""
    cheap = SearchDynamics(num_candidates=4, max_searches=3, find_probability=0.4, search_cost=0.2)
    search, success = cheap.agent_plan()
    np.testing.assert_array_equal(search, [True, True, True, False])
    assert success[0] == pytest.approx(1 - 0.6**3 + 0.6**3 / 4)
    dear = SearchDynamics(num_candidates=4, max_searches=3, find_probability=0.4, search_cost=0.31)
    search, success = dear.agent_plan()
    np.testing.assert_array_equal(search, [False] * 4)
    assert success[0] == pytest.approx(0.25) and dear.decision_density == 1.0


def test_decision_density_and_success_match_play_of_the_plan():
    env = gym.make("SearchOrAnswer-v0", find_probability=0.3, reading_length=3)
    dynamics = env.unwrapped.dynamics
    table = plan_table(dynamics)
    rng = np.random.default_rng(0)
    densities, successes, lengths = [], [], []
    for ep in range(3000):
        _, info = env.reset(seed=ep)
        done = False
        while not done:
            probs = table[info[keys.STATE_ID]]
            _, _, terminated, truncated, info = env.step(int(rng.choice(len(probs), p=probs)))
            done = terminated or truncated
        densities.append(info[keys.DECISION_DENSITY])
        successes.append(info[keys.SUCCESS])
        lengths.append(info[keys.EPISODE_LENGTH])
    assert len(set(lengths)) > 3  # the length is the policy's (and chance's) doing
    spread = np.std(densities) / np.sqrt(len(densities))
    assert abs(np.mean(densities) - dynamics.decision_density) < 4 * spread
    _, success = dynamics.agent_plan()
    assert abs(np.mean(successes) - success[0]) < 4 * np.sqrt(0.25 / len(successes))


def test_decisions_are_critical_and_reading_turns_routine():
    dynamics = SearchDynamics(num_candidates=3, max_searches=3, reading_length=2)
    model = dynamics.model()
    critical = dynamics.critical_table()
    for sid in np.flatnonzero(model.reachable):
        state = dynamics.state_from_id(int(sid))
        decision = state.outcome == RUNNING and state.reading == 0
        assert bool(critical[sid]) == decision, state


def test_density_keyword_sets_the_reading_turns():
    short = SearchDynamics(reading_length=0)
    long = SearchDynamics(reading_length=8)
    assert short.decision_density == 1.0
    assert 1 / 9 < long.decision_density < 0.5
    assert SearchDynamics.density_kwarg == "reading_length"


def test_observation_hides_the_answer_until_found():
    dynamics = SearchDynamics(num_candidates=3)
    unseen = {dynamics.observe(s).tobytes() for _, s in dynamics.initial_outcomes()}
    assert len(unseen) == 1
    starts = [s for _, s in dynamics.initial_outcomes()]
    found = {dynamics.observe(s._replace(found=1, searches=1)).tobytes() for s in starts}
    assert len(found) == 3


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_candidates": 1}, "num_candidates"),
        ({"max_searches": 0}, "max_searches"),
        ({"find_probability": 0.0}, "find_probability"),
        ({"find_probability": 1.5}, "find_probability"),
        ({"search_cost": -0.1}, "search_cost"),
        ({"reading_length": -1}, "reading_length"),
        ({"num_candidates": 50, "max_searches": 200, "reading_length": 100}, "state ids"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        SearchDynamics(**kwargs)
