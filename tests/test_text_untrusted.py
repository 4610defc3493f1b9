"""A model's reply is untrusted input: whatever it is (any text, huge text, any Python object),
``TextEnv.step`` returns within 0.1 s of this process's CPU time (``time.process_time``: other
processes' load does not count), its observation lies in the observation space, and the action
taken is the one the reply names or none (an invalid turn with a bounded, ASCII reason).

Each reproducer of issue 23's "text replies" gets a direct test; the property tests compare the
parser with the former regular-expression parser (kept below as ``legacy_action``, the
definition of what each reply names) on every reply short enough for it to be fast.
``TEXT_FUZZ_EXAMPLES`` (an environment variable) sets the property tests' example count.
"""

from __future__ import annotations

import gc
import json
import os
import re
import time
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.text import TextEnv, TextView, parsing
from tests.bench_text_parsing import SHAPES, adversarial_reply
from tests.test_text import ALL_IDS, make, reply_forms

FUZZ_EXAMPLES = int(os.environ.get("TEXT_FUZZ_EXAMPLES", "300"))
#: CPU seconds a step may take on any reply.
STEP_CPU = 0.1
try:
    import pettingzoo  # noqa: F401

    FUZZ_IDS = ALL_IDS
except ImportError:
    FUZZ_IDS = [env_id for env_id in ALL_IDS if not env_id.startswith("Team")]


# ------------------------------------------------------------ the former parser (reference)
_OLD_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_OLD_TAGGED = re.compile(r"<(action|answer)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_OLD_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_OLD_NOISE = re.compile(r"[\"'`()\[\]{},;:*]")


def _old_normalize(text: str) -> str:
    text = _OLD_NOISE.sub(" ", text.lower()).replace("_", " ").replace("-", " ")
    return " ".join(text.strip().rstrip(".!").strip().split())


def legacy_action(view: TextView, reply: str) -> int | None:
    """The action the parser of main at e88472c read in ``reply`` (quadratic: short replies
    only), or None."""
    by_text: dict[str, int] = {}
    for action, (name, args) in enumerate(view.calls):
        by_text.setdefault(_old_normalize(" ".join((name, *map(str, args)))), action)
    for (name, args), action in view.aliases.items():
        by_text.setdefault(_old_normalize(" ".join((name, *map(str, args)))), action)
    by_call = {call: a for a, call in enumerate(view.calls)} | dict(view.aliases)

    def from_json(text: str) -> int | None:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if isinstance(data, list):
            if len(data) != 1:
                return None
            data = data[0]
        if not isinstance(data, dict):
            return None
        if isinstance(data.get("function"), dict):
            data = data["function"]
        name, args = data.get("name"), data.get("arguments", data.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                return None
        if not isinstance(name, str) or not isinstance(args, dict):
            return None
        tools = {_old_normalize(tool.name): tool for tool in view.tools}
        tool = tools.get(_old_normalize(name))
        if tool is None or set(args) != {p.name for p in tool.params}:
            return None
        values = []
        for param in tool.params:
            value = args[param.name]
            match = [
                c
                for c in param.choices
                if (
                    isinstance(c, int)
                    and not isinstance(value, bool)
                    and (
                        (isinstance(value, int) and value == c)
                        or (isinstance(value, str) and value.strip() == str(c))
                    )
                )
                or (
                    not isinstance(c, int)
                    and isinstance(value, str)
                    and value.strip().lower() == str(c).lower()
                )
            ]
            if not match:
                return None
            values.append(match[0])
        return by_call.get((tool.name, tuple(values)))

    def from_text(text: str) -> int | None:
        key = _old_normalize(text)
        key = key[len("action ") :] if key.startswith("action ") else key
        if key in by_text:
            return by_text[key]
        if key.isascii() and key.isdigit() and len(key) <= 6 and int(key) < view.num_actions:
            return int(key)
        return None

    if not reply.strip():
        return None
    calls, fenced = _OLD_TOOL_CALL.findall(reply), _OLD_FENCE.findall(reply)
    stripped = reply.strip()
    if calls:
        return from_json(calls[-1].strip())
    if fenced:
        return from_json(fenced[-1])
    if stripped.startswith("{") and stripped.endswith("}"):
        return from_json(stripped)
    tagged = _OLD_TAGGED.findall(reply)
    if tagged:
        return from_text(tagged[-1][1])
    found = from_text(reply)
    lines = [line for line in reply.splitlines() if line.strip()]
    return found if found is not None or len(lines) <= 1 else from_text(lines[-1])


def read_window(reply: str) -> str:
    """What the parser reads of ``reply`` by its documented cap: all of it, or the whole lines
    (as ``str.splitlines`` breaks them) of its last ``MAX_REPLY_CHARS`` characters."""
    cap = parsing.MAX_REPLY_CHARS
    if len(reply) <= cap:
        return reply
    before, tail = reply[:-cap], reply[-cap:]
    if len((before[-1] + "x").splitlines()) == 2:  # the tail starts a line
        return tail
    return "".join(tail.splitlines(keepends=True)[1:])


#: a hyphen before a digit (a minus sign: the new parser refuses what the old read as ``k``);
#: the non-ASCII characters the old regexes' IGNORECASE matched to ``i`` and ``s`` in tags.
_CHANGED = re.compile("-[0-9]|[\u0130\u0131\u017f]")


def assert_names_what_legacy_named(action: int | None, view: TextView, window: str) -> None:
    """``action`` is what the former parser reads in ``window`` or (for a reply with a minus
    sign or a changed tag character) none."""
    expected = legacy_action(view, window)
    if _CHANGED.search(window):
        assert action in (None, expected), (window, action, expected)
    else:
        assert action == expected, (window, action, expected)


# --------------------------------------------------------------------------- strategies
FRAGMENTS = [
    *("<tool_call>", "</tool_call>", "<TOOL_CALL>", "</Tool_Call>", "<tool_call"),
    *("<action>", "</action>", "<ACTION>", "</Action>", "<answer>", "</answer>", "</ANSWER>"),
    *("```", "```json", "json", "`", "{", "}", "[", "]", '"', ":", ",", "(", ")", "."),
    *(" ", "  ", "\n", "\t", "\r\n", "\u2028", "\x0c", "-", "--", "_", "!"),
    *("action", "Action:", "open_door", "open-door", "open", "door", "walk", "take_way"),
    *("read_log", "apply_patch", "parser", "submit", "0", "1", "2", "7", "9999", "-1"),
    *('"name"', '"arguments"', '"function"', '"open_door"', '"take_way"', '{"door": 2}'),
    *('{"name": "open_door", "arguments": {"door": 1}}', '{"name": "walk"}', '"{\\"way\\": 1}"'),
    *('{"name": "apply_patch", "arguments": {"module": "parser", "patch": 2}}', "é", "💥"),
]
fragment_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=40
).map("".join)


def replies_for(env: TextEnv) -> st.SearchStrategy[str]:
    """Short replies for ``env``: fragments, tags and every form of each of its actions,
    decorated (hyphens, minus signs, case, bullets), joined in any order."""
    forms = [form for action in range(env.view.num_actions) for form in reply_forms(env, action)]
    texts = env.view.action_texts()
    decorated = [
        variant
        for text in texts
        for variant in (text.replace(" ", "-"), text.replace(" ", " -"), "- " + text, text.upper())
    ]
    pieces = st.sampled_from([*FRAGMENTS, *forms, *texts, *decorated])
    return st.lists(st.one_of(pieces, st.text(max_size=3)), max_size=8).map("".join)


#: units repeated into huge replies (no non-Latin-1 unit beyond 1 MB: memory).
UNITS = [*SHAPES.values(), "<answer>", "```json {", "{", "[", "-1 ", "\n", " ", "x", "é", "💥\n"]
SIZES = [1, 1000, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 1 << 20, 1 << 24]


@st.composite
def huge_text(draw: st.DrawFn, tails: st.SearchStrategy[str] = fragment_text) -> str:
    """A unit of ``UNITS`` repeated to up to 16 MB, then perhaps a line drawn from ``tails``."""
    unit = draw(st.sampled_from(UNITS))
    size = draw(st.one_of(st.sampled_from(SIZES), st.integers(1 << 15, 1 << 18)))
    if max(map(ord, unit)) > 0xFF:
        size = min(size, 1 << 20)
    tail = draw(st.one_of(st.just(""), tails.map(lambda t: "\n" + t)))
    return (unit * (size // len(unit) + 1))[:size] + tail


class RaisingConversions:
    """An object whose ``str``, ``repr``, ``len`` and attributes all raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__

    def __len__(self) -> int:
        raise RuntimeError("no len")

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(name)


class ClaimsToBeStr:
    """``isinstance(obj, str)`` is True (its ``__class__`` lies); it is no str."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


class HostileStr(str):
    """A str whose methods (the ones a parser would call) raise."""

    def _raise(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("hostile")

    strip = lower = find = rfind = translate = splitlines = startswith = endswith = _raise
    __getitem__ = __len__ = __str__ = __repr__ = __iter__ = _raise  # type: ignore[assignment]


class _RaisingNameMeta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise RuntimeError("no name")


class RaisingName(metaclass=_RaisingNameMeta):
    pass


HOSTILE = [
    10**5000,
    -(10**5000),
    RaisingConversions(),
    ClaimsToBeStr(),
    HostileStr("open_door 1"),
    RaisingName(),
    type("\u00e9" * 1000, (), {})(),
    b"open_door 1",
    bytearray(b"\xff" * 1000),
    b"x" * (1 << 24),
    [0] * 1_000_000,
    {i: i for i in range(10_000)},
    None,
    float("nan"),
    1e308,
    3 + 4j,
    object(),
    gym.spaces.Discrete(3),
]
objects = st.one_of(
    st.sampled_from(HOSTILE),
    st.integers(),
    st.floats(),
    st.binary(max_size=100),
    st.lists(st.integers(), max_size=20),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=5),
    st.tuples(st.text(max_size=5)),
)
any_reply = st.one_of(st.text(max_size=200), fragment_text, huge_text(), objects)


# --------------------------------------------------------------------------- helpers
_ENVS: dict[str, TextEnv] = {}


def ready_env(env_id: str) -> TextEnv:
    """One env per id, kept across examples (:func:`timed_step` resets it at an episode's
    end; the parse does not depend on the state)."""
    if env_id not in _ENVS:
        _ENVS[env_id] = make(env_id)
        _ENVS[env_id].reset(seed=0)
    return _ENVS[env_id]


def timed_step(env: TextEnv, reply: Any) -> tuple[tuple, float, str]:
    """``env.step(reply)``, its CPU seconds (garbage collection off while it runs: the step is
    timed, not the collection of earlier examples' garbage) and the assistant message it
    recorded; resets ``env`` if the episode ended."""
    gc.disable()
    try:
        start = time.process_time()
        out = env.step(reply)
        cpu = time.process_time() - start
    finally:
        gc.enable()
    content = env.messages[-2]["content"]
    if out[2] or out[3]:
        env.reset(seed=0)
    return out, cpu, content


def assert_safe_turn(env: TextEnv, out: tuple, cpu: float) -> None:
    text, _, _, _, info = out
    assert cpu < STEP_CPU, cpu
    assert env.observation_space.contains(text)
    reason = info[keys.INVALID_REASON]
    assert len(reason) <= parsing.MAX_REASON_CHARS and reason.isascii() and reason.isprintable()
    assert info[keys.INVALID_TURN] == (info[keys.PARSED_ACTION] == -1) == bool(reason)


# ----------------------------------------------------------------------- reproducers
def negative_replies(env: TextEnv) -> list[str]:
    """Replies naming a negative number: an index, or an action's argument made negative."""
    replies = ["-1", "--1", "-2", "action -1", "Action: -1.", "<action>-1</action>", "`-1`"]
    replies += ["(-1)", "open door -1", "I pick\n-1"]
    for name, args in env.view.calls:
        numbers = [a for a in args if isinstance(a, int)]
        if numbers:
            head = " ".join([name, *(str(a) for a in args if not isinstance(a, int))])
            replies += [f"{head} -{numbers[0]}", f"{head}(-{numbers[0]})", f"{head}--{numbers[0]}"]
    return replies


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_a_minus_sign_is_never_dropped(env_id: str) -> None:
    """``-k`` is not ``k``: on main ``"-1"``, ``"--1"``, ``"action -1"`` and ``"open door -1"``
    were action 1, on every text env."""
    env = make(env_id)
    env.reset(seed=0)
    for reply in negative_replies(env):
        _, _, _, _, info = env.step(reply)
        assert info[keys.INVALID_TURN] and info[keys.PARSED_ACTION] == -1, reply
        assert "minus sign" in info[keys.INVALID_REASON], (reply, info)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_hyphens_between_words_still_separate(env_id: str) -> None:
    """``open-door-2``, a list bullet ``- walk`` and ``open_door - 2`` read as before."""
    env = make(env_id)
    for action, text in enumerate(env.view.action_texts()):
        for reply in (
            text.replace("_", "-").replace(" ", "-"),
            "- " + text,
            f"Action:\n- {text}",
            text.replace(" ", " - "),
        ):
            assert env.parser.parse(reply).action == action, reply
            assert legacy_action(env.view, reply) == action, reply


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("size", [1 << 16, 1 << 20, 1 << 24])
def test_repeated_tags_parse_in_bounded_time(shape: str, size: int) -> None:
    """On main ``"<tool_call>" * 16000`` took a minute and a 64 kB reply of repeated tags two
    seconds or more (quadratic); now a 16 MB one takes milliseconds."""
    env = make("DilutedDoors-v1")
    env.reset(seed=0)
    reply = adversarial_reply(shape, size)
    out, cpu, _ = timed_step(env, reply)
    assert_safe_turn(env, out, cpu)
    assert out[4][keys.INVALID_TURN]
    if size > parsing.MAX_REPLY_CHARS:
        assert (
            f"only the whole lines in its last {parsing.MAX_REPLY_CHARS}"
            in out[4]["invalid_reason"]
        )


@pytest.mark.parametrize(
    "reply",
    [10**5000, RaisingConversions(), ClaimsToBeStr(), HostileStr("open_door 1"), RaisingName()],
    ids=["int_5001_digits", "raising_str_repr", "lying_class", "hostile_str_subclass", "meta"],
)
def test_step_never_raises_for_an_object(reply: Any) -> None:
    """On main ``step(10**5000)`` raised the int-to-str ``ValueError`` and the others raised
    their own errors (``str()``, ``.strip()`` of a non-str that claims to be one)."""
    env = make("DilutedDoors-v1")
    env.reset(seed=0)
    out, cpu, content = timed_step(env, reply)
    assert_safe_turn(env, out, cpu)
    assert type(content) is str and len(content) <= 100 and content.isascii()
    if isinstance(reply, HostileStr):  # a str (subclass) is read as its text
        assert out[4][keys.PARSED_ACTION] == 1 and content == "open_door 1"
    else:
        assert out[4][keys.INVALID_TURN]
        assert out[4][keys.INVALID_REASON].startswith("the reply must be text (a str), got")


def test_non_text_replies_are_described_in_bounded_ascii() -> None:
    describe = parsing.describe_reply
    assert describe(2) == "2 (int)" and describe(None) == "None"
    assert describe(10**5000) == "an int of about 5001 digits"
    assert describe(b"walk") == "b'walk' (bytes of 4)"
    assert describe([0] * 1_000_000) == "a list of 1000000 items"
    assert describe(RaisingName()) == "an object of type RaisingName"
    assert describe(type("\u00e9" * 1000, (), {})()).startswith("an object of type \\xe9\\xe9")
    for obj in HOSTILE:
        shown = describe(obj)
        assert len(shown) <= parsing.MAX_QUOTE + 40 and shown.isascii() and shown.isprintable()


@pytest.mark.parametrize(
    ("key", "within_cap"),
    [("k" * 10**6, False), ("k" * 60_000, True), ("\u00e9", True), ("\u00e9" * 20_000, True)],
    ids=["1e6_chars", "6e4_chars", "e_acute", "e_acute_2e4"],
)
def test_a_huge_or_non_ascii_key_keeps_the_observation_in_its_space(key: str, within_cap: bool):
    """On main a tool call with a 10^6-character key gave a 1,000,035-character reason, and a
    key ``"é"`` an observation outside the ``Text`` space."""
    env = make("DilutedDoors-v1")
    env.reset(seed=0)
    reply = json.dumps({"name": "open_door", "arguments": {"door": 1, key: 0}}, ensure_ascii=False)
    out, cpu, _ = timed_step(env, reply)
    assert_safe_turn(env, out, cpu)
    reason = out[4][keys.INVALID_REASON]
    assert ("takes no argument(s)" in reason) == within_cap, reason


MALFORMED_CALLS = {
    "unknown_non_ascii_tool": '{"name": "' + "\u00e9" * 50_000 + '"}',
    "tool_with_line_separator": '{"name": "nope\u2028\u00e9"}',
    "huge_argument": '{"name": "open_door", "arguments": {"door": "' + "x" * 60_000 + '"}}',
    "deep_argument": '{"name": "open_door", "arguments": {"door": '
    + "[" * 30_000
    + "]" * 30_000
    + "}}",
    "4000_digit_argument": '{"name": "open_door", "arguments": {"door": ' + "7" * 4000 + "}}",
    "deep_string_arguments": '{"name": "open_door", "arguments": "' + "[" * 20_000 + '"}',
    "deep_object": '{"a": ' + "[" * 32_000 + "]" * 32_000 + "}",
    "braces_in_tags": "<tool_call>" + "{" * 60_000 + "</tool_call>",
    "non_ascii_extra_keys": '{"name": "open_door", "arguments": {"door": 1, "'
    + "\u00e9" * 9
    + '": 1, "x": 2}}',
}


@pytest.mark.parametrize("reply", MALFORMED_CALLS.values(), ids=MALFORMED_CALLS.keys())
def test_malformed_calls_are_bounded_invalid_turns(reply: str) -> None:
    env = make("DilutedDoors-v1")
    env.reset(seed=0)
    out, cpu, _ = timed_step(env, reply)
    assert_safe_turn(env, out, cpu)
    assert out[4][keys.INVALID_TURN]


def test_a_long_reply_is_read_at_its_end_and_the_reason_says_so() -> None:
    """The last line of a 100 kB or 16 MB reply counts; a reply whose end is no action says it
    was cut (main said nothing); a cut never splits a line."""
    env = make("DilutedDoors-v1")
    env.reset(seed=0)
    cap = parsing.MAX_REPLY_CHARS
    assert env.parser.parse("Let me think.\n" * 8000 + "open_door 2").action == 2
    assert env.parser.parse("x" * (1 << 24) + "\n<action>walk</action>").action == 0
    for reply in (
        "Let me think.\n" * 8000,
        "x" * 10**6,
        "9" + " " * cap + "2",
        "-" + " " * cap + "1",
    ):
        parsed = env.parser.parse(reply)
        assert not parsed.valid, reply[-20:]
        assert f"the reply has {len(reply)} characters" in parsed.reason
        assert len(parsed.reason) <= parsing.MAX_REASON_CHARS
    # at the cap the whole reply is read: its first line still counts
    assert env.parser.parse("open_door 1" + " " * (cap - 11)).action == 1


# --------------------------------------------------------------------- property tests
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(env_id=st.sampled_from(FUZZ_IDS), data=st.data())
def test_the_parser_reads_what_the_former_parser_read(env_id: str, data: st.DataObject) -> None:
    """Linear scans in place of the lazy regexes change no reading: the same action as main's
    parser, except that a minus sign (and, in a tag's name, a non-ASCII ``ı``/``İ``/``ſ``) can
    make a reply invalid."""
    env = ready_env(env_id)
    reply = data.draw(st.one_of(replies_for(env), fragment_text, st.text(max_size=300)))
    assert_names_what_legacy_named(env.parser.parse(reply).action, env.view, reply)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(env_id=st.sampled_from(FUZZ_IDS), data=st.data())
def test_any_reply_is_a_bounded_safe_turn(env_id: str, data: st.DataObject) -> None:
    """Any reply: within 0.1 s of CPU, the observation in its space, a bounded ASCII reason,
    a bounded chat message for a non-str, and the action the reply names (read as documented:
    the whole lines of its last ``MAX_REPLY_CHARS`` characters) or none."""
    env = ready_env(env_id)
    ours = replies_for(env)
    reply = data.draw(st.one_of(any_reply, ours, huge_text(ours)), label="reply")
    out, cpu, content = timed_step(env, reply)
    action = out[4][keys.PARSED_ACTION]
    assert_safe_turn(env, out, cpu)
    if not issubclass(type(reply), str):
        assert action == -1 and len(content) <= 100 and content.isascii()
        return
    reply = str.__str__(reply)  # the text of a (perhaps hostile) str subclass
    assert content == reply
    window = read_window(reply)
    if len(window) <= 4096:  # the former parser is quadratic: short windows only
        expected = None if action == -1 else action
        assert_names_what_legacy_named(expected, env.view, window)
    elif action != -1:
        assert env.parser.parse(window).action == action


def test_without_history_a_text_env_keeps_no_reply_and_plays_the_same():
    """A server's text env (``history=False``) must not grow with the replies it reads (a
    stream of 64 kB malformed replies held 13 MB in one OpenEnv session), and must play
    exactly as one that keeps the conversation."""
    from routine_envs.text import make_text_env

    kept = make_text_env("DilutedDoors-v1", num_floors=2, routine_length=2)
    bare = make_text_env("DilutedDoors-v1", num_floors=2, routine_length=2, history=False)
    replies = ["x" * 60_000, "open_door(1)", "y" * 60_000, "walk()", "walk()", "open_door(0)"]
    assert kept.reset(seed=3) == bare.reset(seed=3)
    for reply in replies:
        assert kept.step(reply) == bare.step(reply)
    assert len(bare.messages) == 2 and len(kept.messages) == 2 + 2 * len(replies)
    assert sum(len(m["content"]) for m in bare.messages) < 10_000
