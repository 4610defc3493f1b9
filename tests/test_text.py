"""The text interface: every registered id and team env as a text task; the text shows exactly
what the observation shows; replies are parsed leniently and a malformed one is a counted
invalid turn, never an exception; groups and token advantages."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import routine_envs  # noqa: F401
from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs.diluted_doors_v1 import DilutedDoorsV1Env
from routine_envs.envs.routine_grid import RoutineGridV0Env
from routine_envs.registration import TEAM_ADAPTERS
from routine_envs.text import (
    TextEnv,
    make_group,
    make_text_env,
    parse_action,
    spread_advantages,
    view_for,
)
from tests.utils import registry_ids, small_config

#: every registered id, outside code's included (the registry's)
ALL_IDS = registry_ids()


def make(env_id: str, **kwargs) -> TextEnv:
    """The text env of ``env_id`` at its small configuration (the registry's: an episode is a
    few dozen turns), updated with ``kwargs``."""
    if env_id in {row.id for row in TEAM_ADAPTERS}:
        pytest.importorskip("pettingzoo")
    return make_text_env(env_id, **{**small_config(env_id), **kwargs})


def reply_forms(env: TextEnv, action: int) -> list[str]:
    """Ways a model may write ``action``: canonical text, a tool call, an index, decorated."""
    name, args = env.view.calls[action]
    tool = next(t for t in env.view.tools if t.name == name)
    arguments = {p.name: v for p, v in zip(tool.params, args, strict=True)}
    call = json.dumps({"name": name, "arguments": arguments})
    text = env.action_text(action)
    return [
        text,
        f"<tool_call>{call}</tool_call>",
        json.dumps({"type": "function", "function": {"name": name, "arguments": call}}).replace(
            json.dumps(call), json.dumps(json.dumps(arguments))
        ),
        str(action),
        f"Let me think.\nAction: `{text.upper()}`.",
        f"<action>{text}</action>",
    ]


def test_every_id_has_a_text_view() -> None:
    for env_id in ALL_IDS:
        env = make(env_id)
        text, info = env.reset(seed=0)
        assert env.observation_space.contains(text), env_id
        assert env.view.num_actions == env.unwrapped.action_space.n
        assert env.messages[0]["role"] == "system" and env.messages[1]["content"] == text
        schema = env.tool_schema()
        assert all(tool["type"] == "function" for tool in schema)
        json.dumps(schema)  # serializable
        keys.check_step_info(info)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_random_replies_never_raise_and_keep_the_contract(env_id: str) -> None:
    """Mixed valid and malformed replies: step never raises, the counts follow the rule."""
    env = make(env_id, invalid_penalty=0.5)
    rng = np.random.default_rng(0)
    garbage = ["", "   ", "hello", "{not json", '{"name": "nope"}', "9999", None, 3.5, "💥" * 5]
    for episode in range(3):
        text, info = env.reset(seed=episode)
        turns = critical = invalid = 0
        done = False
        while not done:
            if rng.random() < 0.3:
                reply = garbage[rng.integers(len(garbage))]
            else:
                action = int(rng.integers(env.view.num_actions))
                forms = reply_forms(env, action)
                reply = forms[rng.integers(len(forms))]
            state_before = copy.deepcopy(info)
            text, reward, terminated, truncated, info = env.step(reply)
            turns += 1
            critical += bool(state_before[keys.CRITICAL])
            keys.check_step_info(info)
            assert info[keys.ANCHOR] == keys.observation_anchor(env.observation_text)
            if info[keys.INVALID_TURN]:
                invalid += 1
                assert reward == -0.5 and info[keys.PARSED_ACTION] == -1 and info["invalid_reason"]
                assert info[keys.STATE_ID] == state_before[keys.STATE_ID]
                assert info[keys.CRITICAL] == state_before[keys.CRITICAL]
                assert text.startswith("Invalid reply:") and text.endswith(env.observation_text)
            assert env.observation_space.contains(text)
            done = terminated or truncated
            assert turns < 500
        keys.check_episode_end_info(info)
        assert info[keys.EPISODE_LENGTH] == turns
        assert info[keys.NUM_CRITICAL] == critical
        assert info[keys.NUM_INVALID_TURNS] == invalid
        assert len(env.messages) == 2 + 2 * turns


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_valid_replies_play_exactly_the_wrapped_env(env_id: str) -> None:
    """Without invalid turns the text env is the env: same rewards, ids, flags and counts."""
    env = make(env_id)
    raw = env.env  # the gym.make'd env
    twin = copy.deepcopy(raw)
    rng = np.random.default_rng(1)
    _, info = env.reset(seed=3)
    _, twin_info = twin.reset(seed=3)
    done = False
    while not done:
        action = int(rng.integers(env.view.num_actions))
        _, reward, terminated, truncated, info = env.step(env.action_text(action))
        _, twin_reward, twin_term, twin_trunc, twin_info = twin.step(action)
        assert (reward, terminated, truncated) == (twin_reward, twin_term, twin_trunc)
        for key in (keys.CRITICAL, keys.STATE_ID):
            assert info[key] == twin_info[key]
        done = terminated or truncated
    for key in (keys.SUCCESS, keys.NUM_CRITICAL, keys.EPISODE_LENGTH, keys.DECISION_DENSITY):
        assert info[key] == twin_info[key]
    assert info[keys.NUM_INVALID_TURNS] == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env_id=st.sampled_from(ALL_IDS), data=st.data())
def test_parse_reads_back_every_form_of_every_action(env_id: str, data: st.DataObject) -> None:
    env = make(env_id)
    action = data.draw(st.integers(0, env.view.num_actions - 1))
    for reply in reply_forms(env, action):
        assert env.parser.parse(reply).action == action, reply


@settings(max_examples=200, deadline=None)
@given(reply=st.text(max_size=300))
def test_parse_never_raises_on_any_text(reply: str) -> None:
    view = view_for(gym.make("CodeFix-v1", obs_mode="text"))
    parsed = parse_action(view, reply)
    assert parsed.valid == (parsed.reason == "")
    if parsed.valid:
        assert 0 <= parsed.action < view.num_actions


def test_ambiguous_and_wrong_calls_are_invalid() -> None:
    view = view_for(gym.make("CodeFix-v0", obs_mode="text"))
    for reply in [
        "apply_patch parser 7",
        "open nowhere",
        '[{"name": "read_log"}, {"name": "submit"}]',
        '{"name": "open", "arguments": {"module": "parser", "extra": 1}}',
        '{"name": "apply_patch", "arguments": {"module": "parser", "patch": true}}',
        "read_log submit",
        str(view.num_actions),
    ]:
        parsed = parse_action(view, reply)
        assert not parsed.valid and parsed.reason, reply


# ------------------------------------------------------------------- observation only
def _texts_by_observation(env: gym.Env) -> dict[bytes, set[str]]:
    dynamics = env.unwrapped.dynamics
    view = view_for(env)
    model = dynamics.model()
    groups: dict[bytes, set[str]] = {}
    for sid in np.flatnonzero(model.reachable):
        obs = dynamics.observe(model.states[int(sid)])
        groups.setdefault(np.asarray(obs).tobytes(), set()).add(view.observation_text(obs))
    return groups


@pytest.mark.parametrize(
    "env",
    [
        *(
            DilutedDoorsV1Env(num_floors=3, routine_length=(1, 3), observation=mode)
            for mode in ("actions", "position", "progress")
        ),
        gym.make("DilutedDoors-v0", routine_length=(0, 2)).unwrapped,
        RoutineGridV0Env(branching=2, corridor_length=(0, 3)),
        RoutineGridV0Env(corridor_length=3, obs_mode="image"),
        RoutineGridV0Env(corridor_length=2, soft_routine=True),
    ],
    ids=repr,
)
def test_equal_observations_give_equal_text_and_different_ones_differ(env: gym.Env) -> None:
    """Over every reachable state: the text is a function of the observation, and (in these
    modes) tells apart every pair of observations the agent could tell apart."""
    groups = _texts_by_observation(env)
    assert all(len(texts) == 1 for texts in groups.values())
    texts = [next(iter(t)) for t in groups.values()]
    if env.unwrapped.dynamics.__class__.__name__ != "GridDynamics" or (
        env.unwrapped.dynamics.obs_mode == "vector"
    ):
        assert len(set(texts)) == len(texts)  # lossless: no two observations share a text


@pytest.mark.parametrize("mode", ["actions", "position"])
def test_v1_text_never_tells_whether_a_door_was_right_before_the_end(mode: str) -> None:
    """The same replies under two layouts (different right doors) give the same text until the
    episode is over: the text cannot reveal a door's correctness."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        envs = [
            TextEnv(
                DilutedDoorsV1Env(num_floors=3, routine_length=2, layout_seed=s, observation=mode)
            )
            for s in (0, 1)
        ]
        assert envs[0].unwrapped.correct_doors != envs[1].unwrapped.correct_doors
        texts = [e.reset(seed=0)[0] for e in envs]
        assert texts[0] == texts[1]
        done = False
        while not done:
            reply = str(int(rng.integers(3)))
            outs = [e.step(reply) for e in envs]
            assert outs[0][0] == outs[1][0]
            assert outs[0][4][keys.ANCHOR] == outs[1][4][keys.ANCHOR]
            done = outs[0][2]


def test_invalid_turn_leaves_the_state_unchanged_and_counts_in_rho() -> None:
    env = TextEnv(DilutedDoorsV1Env(num_floors=2, routine_length=1), invalid_penalty=0.1)
    _, info = env.reset(seed=0)
    assert info[keys.CRITICAL]  # the first door
    state = env.unwrapped.state
    _, reward, terminated, truncated, info = env.step("I am not sure")
    assert env.unwrapped.state == state and reward == pytest.approx(-0.1)
    assert not (terminated or truncated) and info[keys.INVALID_TURN]
    assert "no action found" in info[keys.INVALID_REASON]
    critical = [True, True]  # the invalid turn and the next one, both at the first door
    # door, invalid in the corridor (routine), corridor, second door, corridor
    for reply in ["open_door 0", "gibberish", "walk", "1", "walk"]:
        if reply == "1":
            critical.append(info[keys.CRITICAL])  # critical iff the first door was right
        _, _, terminated, _, info = env.step(reply)
    assert terminated
    assert info[keys.EPISODE_LENGTH] == 6 and info[keys.NUM_INVALID_TURNS] == 2
    assert info[keys.NUM_CRITICAL] == sum(critical)
    keys.check_episode_end_info(info)


def test_rho_counts_an_invalid_turn_in_a_critical_state_as_critical() -> None:
    env = TextEnv(DilutedDoorsV1Env(num_floors=1, routine_length=1, reward="fraction"))
    env.reset(seed=0)
    for reply in ["??", "??", "0", "walk"]:
        _, _, terminated, _, info = env.step(reply)
    assert terminated
    assert info[keys.EPISODE_LENGTH] == 4
    assert info[keys.NUM_CRITICAL] == 3  # two invalid turns at the door, then the door
    assert info[keys.DECISION_DENSITY] == pytest.approx(3 / 4)


def test_max_turns_truncates_on_invalid_turns() -> None:
    env = TextEnv(DilutedDoorsV1Env(), max_turns=3)
    env.reset(seed=0)
    outs = [env.step("x") for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True]
    assert outs[-1][4][keys.SUCCESS] is False and outs[-1][4][keys.EPISODE_LENGTH] == 3
    with pytest.raises(gym.error.ResetNeeded):
        env.step("0")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"invalid_penalty": -1.0}, "invalid_penalty"),
        ({"invalid_penalty": float("nan")}, "invalid_penalty"),
        ({"invalid_penalty": "1"}, "invalid_penalty"),
        ({"max_turns": 0}, "max_turns"),
        ({"max_turns": 2.5}, "max_turns"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        TextEnv(DilutedDoorsV1Env(), **kwargs)


def test_code_fix_needs_its_text_mode() -> None:
    with pytest.raises(ValueError, match="obs_mode"):
        TextEnv(gym.make("CodeFix-v1"))
    assert make_text_env("CodeFix-v1").unwrapped.obs_mode == "text"


# ------------------------------------------------------------------------------ groups
def test_group_members_share_the_start_and_the_future() -> None:
    envs, texts, infos = make_group("CodeFix-v1", 4, seed=5, routine_length=4, signal_noise=0.5)
    assert len(set(texts)) == 1 and len({i[keys.STATE_ID] for i in infos}) == 1
    replies = ["read_log", "open parser", "scroll", "read"]
    results = [[env.step(r)[0] for r in replies] for env in envs]
    assert all(r == results[0] for r in results)
    # a fresh env restarted from the same initial state starts the same way
    other = make_text_env("CodeFix-v1", routine_length=4, signal_noise=0.5)
    text, info = other.reset_to_initial_state(envs[0].get_initial_state())
    assert text == texts[0] and info[keys.STATE_ID] == infos[0][keys.STATE_ID]
    with pytest.raises(ValueError, match="size"):
        make_group("CodeFix-v1", 0)
    with pytest.raises(gym.error.ResetNeeded):
        TextEnv(DilutedDoorsV1Env()).get_initial_state()


# ---------------------------------------------------------------------- token advantages
def test_spread_advantages_puts_each_turn_on_its_tokens() -> None:
    adv, mask = spread_advantages([1.0, -2.0], [(2, 4), (6, 9)], 10)
    assert adv.tolist() == [0, 0, 1, 1, 0, 0, -2, -2, -2, 0]
    assert mask.tolist() == [False, False, True, True, False, False, True, True, True, False]
    for spans in (
        [(2, 4)],
        [(2, 2), (6, 9)],
        [(2, 7), (6, 9)],
        [(6, 9), (2, 4)],
        [(2, 4), (6, 11)],
    ):
        with pytest.raises(ValueError, match="span"):
            spread_advantages([1.0, -2.0], spans, 10)


@given(
    lengths=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5)), min_size=0, max_size=8),
    data=st.data(),
)
def test_spread_advantages_masks_exactly_the_spans(lengths: list, data: st.DataObject) -> None:
    spans, position = [], 0
    for gap, size in lengths:
        spans.append((position + gap, position + gap + size))
        position += gap + size
    adv = data.draw(st.lists(st.floats(-10, 10), min_size=len(spans), max_size=len(spans)))
    out, mask = spread_advantages(adv, spans, position + 1)
    assert mask.sum() == sum(end - start for start, end in spans)
    for value, (start, end) in zip(adv, spans, strict=True):
        assert np.all(out[start:end] == value) and mask[start:end].all()
    assert np.all(out[~mask] == 0)


def test_text_keys_are_documented() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "text.md").read_text()
    for key in (*keys.TEXT_KEYS, keys.NUM_INVALID_TURNS):
        assert f"``{key}``" in keys.__doc__ and f'info["{key}"]' in page, key


def test_docs_first_example_runs() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "text.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "docs/text.md", "exec"), namespace)
    assert namespace["info"][keys.PARSED_ACTION] == 2


# ------------------------------------------------------------- the default view of a dynamics
@dataclass(frozen=True)
class HiddenCoinDynamics(Dynamics):
    """## Description
    Guess a coin tossed at the start, which the observation never shows.

    ## Rewards
    1 for the right guess.
    """

    leaky: bool = False

    num_states = property(lambda self: 4)
    num_actions = property(lambda self: 2)
    observation_space = property(lambda self: gym.spaces.Box(0, 1, (1,), np.float32))
    decision_density = property(lambda self: 1.0)
    max_episode_length = property(lambda self: 1)

    def initial_outcomes(self):
        return ((0.5, 0), (0.5, 1))

    def outcomes(self, state, action):
        return ((1.0, 2 + (action == state), float(action == state), True),)

    def state_id(self, state):
        return state

    def state_from_id(self, state_id):
        if not 0 <= state_id < 4:
            raise ValueError(f"state_id must be in [0, 4), got {state_id}")
        return state_id

    def observe(self, state):
        return np.array([state >= 2], dtype=np.float32)

    def is_success(self, state):
        return state == 3

    def action_names(self):
        return ("heads", "tails")

    def describe(self, state):
        if state >= 2:
            return "won" if state == 3 else "lost"
        return f"the coin shows {'heads' if state == 0 else 'tails'}" if self.leaky else "tossed"


def test_the_default_view_tells_what_describe_says_of_the_observation() -> None:
    view = HiddenCoinDynamics().text_view()
    assert view.task == "Guess a coin tossed at the start, which the observation never shows."
    assert view.rules[0] == "Reward: 1 for the right guess."
    assert view.action_texts() == ["heads", "tails"] and view.calls[1] == ("tails", ())
    assert view.observation_text(np.zeros(1, np.float32)) == "tossed"
    # the two ends share an observation and differ in words: the text cannot say which
    assert view.observation_text(np.ones(1, np.float32)) == "The episode is over."
    assert view.observation_text(np.full(1, 0.5, np.float32)) == "Observation: [0.5]"
    assert HiddenCoinDynamics().text_view() is not view  # (one per dynamics object)


def test_the_default_view_refuses_a_describe_that_tells_what_is_hidden() -> None:
    with pytest.raises(ValueError, match=r"tells apart states 0 and 1, whose observations are"):
        HiddenCoinDynamics(leaky=True).text_view()


def test_without_describe_the_default_view_shows_the_numbers() -> None:
    from routine_envs.envs.diluted_doors import DoorsDynamics

    class Plain(HiddenCoinDynamics):
        describe = Dynamics.describe  # (repr of the state: may hold what is hidden)

    view = dataclass(frozen=True)(Plain)().text_view()
    assert view.observation_text(np.zeros(1, np.float32)) == "Observation: [0]"
    assert DoorsDynamics.action_names(DoorsDynamics()) == ("action_0", "action_1", "action_2")
    with pytest.raises(ValueError, match="action_names"):
        from routine_envs.rendering.text_view import check_action_names

        check_action_names(["Open door"], 1)
