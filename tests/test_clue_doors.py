"""Clue Doors: the right door is told in words, anew on every floor of every episode, so only
a policy that reads succeeds; nothing shows before the end whether a door was right."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

import routine_envs  # noqa: F401 (registers the ids)
from routine_envs.envs.clue_doors import COLOURS, ClueDynamics, ClueState
from routine_envs.text import make_text_env


@pytest.fixture(scope="module", params=[(2, 2, 1), (2, 3, 0), (3, 3, 2)])
def dynamics(request) -> ClueDynamics:
    floors, doors, length = request.param
    return ClueDynamics(num_floors=floors, num_doors=doors, routine_length=length)


def reading_policy(d: ClueDynamics) -> np.ndarray:
    """Open the door the note names (walk with action 0 elsewhere)."""
    policy = np.zeros((d.num_states, d.num_actions))
    for sid in range(d.num_states):
        state = d.state_from_id(sid)
        at_doors = state.floor < d.num_floors and state.position == 0
        policy[sid, d.right_door(state) if at_doors else 0] = 1.0
    return policy


def test_only_a_policy_that_reads_the_note_succeeds(dynamics):
    d = dynamics
    assert d.success_probability(reading_policy(d)) == pytest.approx(1.0)
    uniform = np.full((d.num_states, d.num_actions), 1 / d.num_actions)
    chance = d.num_doors**-d.num_floors
    assert d.success_probability(uniform) == pytest.approx(chance)
    # any fixed door per floor (what a policy that ignores the text can do) is chance too
    fixed = np.zeros_like(uniform)
    fixed[:, d.num_doors - 1] = 1.0
    assert d.success_probability(fixed) == pytest.approx(chance)


def test_a_door_shows_nothing_of_whether_it_was_right_until_the_end(dynamics):
    """From every state at the doors, every action leads to the same distribution of next
    observations (and rewards before the end): only the hidden bit differs."""
    d = dynamics
    for sid in range(d.num_states):
        state = d.state_from_id(sid)
        if state.floor == d.num_floors or state.position != 0:
            continue
        seen = set()
        for action in range(d.num_actions):
            nexts = sorted(  # the end may show the outcome: only that it ended is compared
                (round(p, 12), b"end" if done else d.observe(s).tobytes(), 0.0 if done else r)
                for p, s, r, done in d.outcomes(state, action)
            )
            seen.add(tuple(map(tuple, nexts)))
        assert len(seen) == 1, state
        # and the observation never encodes the hidden bit
        assert np.array_equal(d.observe(state), d.observe(state._replace(right=1 - state.right)))


def test_critical_exactly_at_the_doors_while_every_door_was_right(dynamics):
    d = dynamics
    for sid in np.flatnonzero(d.model().reachable):
        state = d.state_from_id(int(sid))
        at_doors = state.floor < d.num_floors and state.position == 0
        assert d.is_critical(state) == (at_doors and bool(state.right)), state


def test_state_ids_round_trip(dynamics):
    d = dynamics
    assert [d.state_id(d.state_from_id(i)) for i in range(d.num_states)] == list(
        range(d.num_states)
    )
    assert d.state_from_id(d.state_id(ClueState(0, 0, 1, 1, 1))) == ClueState(0, 0, 1, 1, 1)


def test_an_agent_that_reads_the_text_always_succeeds_and_rho_is_one_over_one_plus_l():
    env = make_text_env("ClueDoors-v0", num_floors=3, num_doors=4, routine_length=2)
    rng = np.random.default_rng(0)
    notes = set()
    for seed in range(20):
        text, info = env.reset(seed=seed)
        done = False
        while not done:
            match = re.search(r"take the (\w+) door", text)
            if match:  # at the doors: find the door painted the colour the note names
                notes.add(text)
                colour = match.group(1)
                door = int(re.search(rf"door (\d+) is {colour}\b", text).group(1))
                reply = f"open_door {door}"
            else:
                reply = "walk" if rng.random() < 0.5 else f"open_door {rng.integers(4)}"
            text, reward, terminated, truncated, info = env.step(reply)
            done = terminated or truncated
        assert info["success"] and reward == 1.0
        assert info["decision_density"] == pytest.approx(1 / 3)  # 3 doors in 9 turns
    assert len(notes) > 30  # the notes and paints change from floor to floor and episode


def test_the_text_names_only_the_paints_colours():
    d = gym.make("ClueDoors-v0", num_doors=2).unwrapped.dynamics
    assert set(COLOURS[:2]) == {c for p in d.paints for c in (COLOURS[i] for i in p)}
    with pytest.raises(ValueError, match="num_doors"):
        ClueDynamics(num_doors=7)


def test_a_note_that_names_the_door_changes_the_text_only():
    """``note="door"``: the note names the right door's number (checked by hand on one state);
    the model, observations and annotations are the default's, and the default text is
    today's."""
    default = ClueDynamics(num_floors=1, num_doors=2, routine_length=0)
    door = ClueDynamics(num_floors=1, num_doors=2, routine_length=0, note="door")
    assert default.note == "colour" and default.paints == door.paints == ((0, 1), (1, 0))
    state = ClueState(0, 0, 1, 0, 1)  # door 0 blue, door 1 red; the note: red, so door 1
    assert default.describe(state) == (
        "floor 1 of 1, at 2 doors: door 0 is blue, door 1 is red. "
        "A note on the wall says: take the red door"
    )
    assert door.describe(state) == (
        "floor 1 of 1, at 2 doors: door 0 is blue, door 1 is red. "
        "A note on the wall says: take door 1"
    )
    a, b = default.model(), door.model()
    assert np.array_equal(a.reachable, b.reachable)
    for sid in range(default.num_states):
        s = default.state_from_id(sid)
        assert np.array_equal(default.observe(s), door.observe(s))
        assert default.is_critical(s) == door.is_critical(s)
        for action in range(default.num_actions):
            assert default.outcomes(s, action) == door.outcomes(s, action)
    assert gym.make("ClueDoors-v0").unwrapped.dynamics.note == "colour"
    with pytest.raises(ValueError, match="note"):
        ClueDynamics(note="number")


def test_an_agent_that_copies_the_note_s_door_always_succeeds():
    env = make_text_env("ClueDoors-v0", num_floors=3, num_doors=3, routine_length=1, note="door")
    assert "names the number of the right door" in env.system_prompt
    for seed in range(10):
        text, info = env.reset(seed=seed)
        done = False
        while not done:
            match = re.search(r"take door (\d+)$", text)
            text, reward, terminated, truncated, info = env.step(
                f"open_door {match.group(1)}" if match else "walk"
            )
            done = terminated or truncated
        assert info["success"] and reward == 1.0
