"""Reading a language model's reply as an action, leniently, without ever raising.

:func:`parse_action` accepts, in this order of precedence:

1. a tool call as JSON: ``{"name": "open_door", "arguments": {"door": 2}}`` (``arguments`` may
   be a JSON string, as in OpenAI's format), wrapped as ``{"function": {...}}``, in
   ``<tool_call>...</tool_call>`` tags or in a ```` ```json ```` fence (the last one counts);
2. the content of the last ``<action>...</action>`` or ``<answer>...</answer>`` tag, read as
   below;
3. the action as text: the whole reply, else its last non-empty line, as a call
   (``open_door 2``, ``open_door(2)``, ``Open door 2``, ``"walk"``, an optional ``Action:``
   prefix) or as an index into the action list (``2``, ``action 2``).

Case (ASCII case, for the tags), underscores versus spaces or hyphens (``open-door 2``),
quotes, backticks, brackets, commas and a final full stop do not matter. A hyphen that starts
a number (``-1``, ``action -1``, ``open door -1``) is a minus sign: no action has a negative
number, so the reply is invalid (it is never read as ``1``). Anything else is an invalid
reply, reported with the reason.

**Untrusted input.** At most :data:`MAX_REPLY_CHARS` characters of a reply are read, in time
linear in their number: a longer reply is read as if it were the whole lines within its last
:data:`MAX_REPLY_CHARS` characters (the last tag and the last line count, so the end is what
matters; a cut never splits a line), and an invalid reason then says the reply was cut. Tags and
fences are found by linear scans (``str.find`` and regular expressions without nested
repetition) that pair them as the former lazy regular expressions did, without their
quadratic time; JSON nested too deeply is an invalid reply; a reply that is not a ``str`` is an
invalid reply described by :func:`describe_reply` without calling its ``str`` or ``repr``.
Every reason is printable ASCII on one line, at most :data:`MAX_REASON_CHARS` characters,
quoting at most :data:`MAX_QUOTE` characters of the reply.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any

from routine_envs.text.views import Call, TextView

#: the longest piece of a reply quoted back in a reason (characters).
MAX_QUOTE = 60
#: the most characters of a reply that are read (the end of a longer reply, whole lines).
MAX_REPLY_CHARS = 1 << 16
#: the longest invalid reason (characters, printable ASCII, one line).
MAX_REASON_CHARS = 400

_NOISE = re.compile(r"[\"'`()\[\]{},;:*]")
#: a hyphen that separates (not one that starts a number: that is a minus sign, kept).
_SEPARATOR_HYPHEN = re.compile(r"-(?![0-9])|(?<=[0-9a-z])-")
_NEGATIVE = re.compile(r"-[0-9]+")
#: the characters ``str.splitlines`` breaks lines at.
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FENCE_OPEN = re.compile(r"```(?:json)?\s*\{")
_FENCE_CLOSE = re.compile(r"\}\s*```")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_REASON_CHARS = frozenset(string.printable) - frozenset("\t\n\r\x0b\x0c")


@dataclass(frozen=True)
class Parsed:
    """The result of reading a reply: ``action`` (``None`` when the reply names none) and, for
    an invalid reply, ``reason``."""

    action: int | None
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.action is not None


class ActionParser:
    """Reads replies for one :class:`TextView` (the lookup tables are built once)."""

    def __init__(self, view: TextView) -> None:
        self.view = view
        self._by_text: dict[str, int] = {}
        for action, call in enumerate(view.calls):
            self._by_text.setdefault(_normalize(_call_text(call)), action)
        for call, action in view.aliases.items():
            self._by_text.setdefault(_normalize(_call_text(call)), action)
        self._tools = {_normalize(tool.name): tool for tool in view.tools}
        self._by_call: dict[Call, int] = {call: a for a, call in enumerate(view.calls)}
        self._by_call.update(view.aliases)

    def parse(self, reply: Any) -> Parsed:
        """The action ``reply`` names (see the module docstring); never raises, for any
        object, and reads at most :data:`MAX_REPLY_CHARS` characters."""
        if not issubclass(type(reply), str):  # type(), not isinstance: __class__ can lie
            return _invalid(f"the reply must be text (a str), got {describe_reply(reply)}")
        reply = str.__str__(reply)  # an exact str, whatever a subclass overrides
        text, cut = _window(reply)
        parsed = self._parse_window(text, cut)
        if cut and not parsed.valid:
            note = (
                f" (the reply has {len(reply)} characters: only the whole lines in its last "
                f"{MAX_REPLY_CHARS} were read)"
            )
            return Parsed(None, _bounded(parsed.reason, MAX_REASON_CHARS - len(note)) + note)
        return parsed

    # ------------------------------------------------------------------------ internals
    def _parse_window(self, text: str, cut: bool) -> Parsed:
        if not text.strip():
            if cut:
                return _invalid(
                    "no whole line at the reply's end holds text; put the action on a last line"
                )
            return _invalid("the reply is empty; " + self._hint())
        # ASCII lower case, the same length (indices carry over; str.lower may lengthen)
        folded = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
        json_text = _json_call(text, folded)
        if json_text is not None:
            return self._parse_json(json_text)
        tagged = _last_tagged(text, folded)
        if tagged is not None:
            return self._parse_text(tagged, text)
        found = self._parse_text(text, text)
        if found.valid:
            return found
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:
            return self._parse_text(lines[-1], text)
        return found

    def _hint(self) -> str:
        texts = self.view.action_texts()
        shown = ", ".join(texts[:12]) + (", ..." if len(texts) > 12 else "")
        return f"reply with one action: {shown} (or its index 0..{len(texts) - 1})"

    def _parse_json(self, text: str) -> Parsed:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply
            return _invalid(f"the tool call {_quote(text)} is not valid JSON")
        if isinstance(data, list):
            if len(data) != 1:
                return _invalid(f"make exactly one tool call per turn, got {len(data)}")
            data = data[0]
        if not isinstance(data, dict):
            return _invalid(f"a tool call must be a JSON object, got {_quote(text)}")
        if isinstance(data.get("function"), dict):
            data = data["function"]
        name = data.get("name")
        args = data.get("arguments", data.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                return _invalid(f"the arguments {_quote(args)} are not valid JSON")
        if not isinstance(name, str) or not isinstance(args, dict):
            return _invalid("a tool call needs a string 'name' and an object 'arguments'")
        tool = self._tools.get(_normalize(name))
        if tool is None:
            tools = ", ".join(t.name for t in self.view.tools)
            return _invalid(f"unknown tool {_quote(name)}; tools: {tools}")
        values = []
        for param in tool.params:
            if param.name not in args:
                return _invalid(f"{tool.name} needs the argument {param.name!r}")
            value = _coerce(args[param.name], param.choices)
            if value is None:
                choices = ", ".join(map(str, param.choices))
                return _invalid(
                    f"{tool.name}: {param.name} must be one of {choices}, "
                    f"got {_quote_json(args[param.name])}"
                )
            values.append(value)
        extra = sorted(set(args) - {p.name for p in tool.params})
        if extra:
            shown = ", ".join(_quote(key) for key in extra[:3])
            more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
            return _invalid(f"{tool.name} takes no argument(s) {shown}{more}")
        action = self._by_call.get((tool.name, tuple(values)))
        if action is None:  # a tool whose argument combination is no action
            return _invalid(f"{tool.name}{tuple(values)} is not an action; " + self._hint())
        return Parsed(action)

    def _parse_text(self, text: str, reply: str) -> Parsed:
        key = _normalize(text)
        if key.startswith("action "):
            key = key[len("action ") :]
        action = self._by_text.get(key)
        if action is not None:
            return Parsed(action)
        negative = _NEGATIVE.search(key)
        if negative is not None:  # no action is numbered, nor takes, a negative number
            return _invalid(
                f"{_quote(negative.group())} in {_quote(reply)} has a minus sign, but actions "
                "and their arguments count from 0; " + self._hint()
            )
        if key.isascii() and key.isdigit() and len(key) <= 6:
            index = int(key)
            if index < self.view.num_actions:
                return Parsed(index)
            return _invalid(f"action index {index} is outside 0..{self.view.num_actions - 1}")
        return _invalid(f"no action found in {_quote(reply)}; " + self._hint())


# ------------------------------------------------------------------------- finding calls
def _window(reply: str) -> tuple[str, bool]:
    """What is read of ``reply``: all of it, or (``cut``) the whole lines of its last
    :data:`MAX_REPLY_CHARS` characters."""
    if len(reply) <= MAX_REPLY_CHARS:
        return reply, False
    tail = reply[-MAX_REPLY_CHARS:]
    if _LINE_BREAK.match(reply, len(reply) - MAX_REPLY_CHARS - 1):  # the tail starts a line
        return tail, True
    first_break = _LINE_BREAK.search(tail)
    return ("" if first_break is None else tail[first_break.end() :]), True


def _json_call(text: str, folded: str) -> str | None:
    """The JSON text of the reply's tool call: the last ``<tool_call>`` content, else the
    last fenced ``{...}``, else the whole reply if it is ``{...}``; ``None`` if none."""
    call = _last_between(text, folded, "<tool_call>", "</tool_call>")
    if call is not None:
        return call.strip()
    fenced = _last_fenced(text)
    if fenced is not None:
        return fenced
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        return stripped
    return None


def _last_between(text: str, folded: str, open_tag: str, close_tag: str) -> str | None:
    """The content of the last ``open_tag ... close_tag`` pair, paired from the left (each
    open tag with the first close tag after it, as a lazy regex does), in linear time.
    ``folded`` is ``text`` in ASCII lower case; the tags are lower case."""
    found = None
    position = 0
    while (start := folded.find(open_tag, position)) >= 0:
        end = folded.find(close_tag, start + len(open_tag))
        if end < 0:  # no close tag after this open tag, so none after any later one
            break
        found = (start + len(open_tag), end)
        position = end + len(close_tag)
    return None if found is None else text[found[0] : found[1]]


def _last_tagged(text: str, folded: str) -> str | None:
    """The content of the last ``<action>...</action>`` or ``<answer>...</answer>`` pair
    (each open tag with the first close tag of its kind after it), in linear time."""
    found = None
    position = 0
    next_open = {kind: folded.find(f"<{kind}>") for kind in ("action", "answer")}
    while True:
        for kind, start in next_open.items():
            if 0 <= start < position:
                next_open[kind] = folded.find(f"<{kind}>", position)
        starts = [(start, kind) for kind, start in next_open.items() if start >= 0]
        if not starts:
            return None if found is None else text[found[0] : found[1]]
        start, kind = min(starts)
        content = start + len(kind) + 2
        end = folded.find(f"</{kind}>", content)
        if end < 0:  # no later tag of this kind can close either
            next_open[kind] = -1
            position = start + 1
            continue
        found = (content, end)
        position = end + len(kind) + 3


def _last_fenced(text: str) -> str | None:
    """The ``{...}`` of the last ```` ```json {...} ``` ```` fence (``json`` and the spaces
    optional; the first ``}`` followed by the closing fence ends it), in linear time."""
    found = None
    position = 0
    while (opening := _FENCE_OPEN.search(text, position)) is not None:
        brace = opening.end() - 1
        closing = _FENCE_CLOSE.search(text, brace + 1)
        if closing is None:  # nothing closes this fence, so nothing closes a later one
            break
        found = (brace, closing.start() + 1)
        position = closing.end()
    return None if found is None else text[found[0] : found[1]]


# ---------------------------------------------------------------------------- reading text
def _normalize(text: str) -> str:
    text = _NOISE.sub(" ", text.lower()).replace("_", " ")
    text = _SEPARATOR_HYPHEN.sub(" ", text)  # "open-door" -> "open door"; "-1" stays
    text = text.strip().rstrip(".!").strip()
    return " ".join(text.split())


def _call_text(call: Call) -> str:
    name, args = call
    return " ".join((name, *map(str, args)))


def _coerce(value: Any, choices: tuple[Any, ...]) -> Any:
    """``value`` as one of ``choices`` (ints given as strings, names in any case), or None."""
    for choice in choices:
        if isinstance(choice, int) and not isinstance(choice, bool):
            if isinstance(value, bool):
                continue
            if isinstance(value, int) and value == choice:
                return choice
            if isinstance(value, str) and value.strip() == str(choice):
                return choice
        elif isinstance(value, str) and value.strip().lower() == str(choice).lower():
            return choice
    return None


# ------------------------------------------------------------------------ bounded echoes
def _quote(text: str) -> str:
    """``text`` quoted in printable ASCII, at most :data:`MAX_QUOTE` characters."""
    shown = ascii(text[:MAX_QUOTE])  # escapes non-ASCII and control characters
    if len(text) <= MAX_QUOTE and len(shown) <= MAX_QUOTE:
        return shown
    return f"{shown[: MAX_QUOTE - 15]}... ({len(text)} chars)"


def _quote_json(value: Any) -> str:
    """A JSON value (from ``json.loads``) in at most about :data:`MAX_QUOTE` characters,
    without ``str`` of a nested (perhaps deep) container."""
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, list | dict):
        return f"a JSON {'array' if isinstance(value, list) else 'object'} of {len(value)} items"
    return _quote(repr(value))  # bool, None, a float or an int of at most 4300 digits


def _bounded(reason: str, limit: int) -> str:
    """``reason`` in printable ASCII on one line, at most ``limit`` characters."""
    if not _REASON_CHARS.issuperset(reason):
        reason = "".join(c if c in _REASON_CHARS else ascii(c)[1:-1] for c in reason)
    return reason if len(reason) <= limit else reason[: limit - 3] + "..."


def _invalid(reason: str) -> Parsed:
    return Parsed(None, _bounded(reason, MAX_REASON_CHARS))


def describe_reply(reply: object) -> str:
    """A short printable-ASCII text standing for a reply that is not a ``str`` (at most
    :data:`MAX_QUOTE` + 30 characters): ``2 (int)``, ``None``, ``b'walk' (bytes)``, ``a list
    of 3 items``, ``an int of about 5000 digits``, ``an object of type Foo``. Never raises: it
    calls no method the object's class defines (only those of exact built-in types)."""
    kind = type(reply)
    if reply is None or type(reply) is bool:
        return repr(reply)
    if type(reply) is int:
        if reply.bit_length() <= 128:
            return f"{reply!r} (int)"
        return f"an int of about {int(reply.bit_length() * 0.30103) + 1} digits"
    if type(reply) is float or type(reply) is complex:
        return _preview(repr(reply)) + f" ({kind.__name__})"
    if type(reply) is bytes or type(reply) is bytearray:
        shown = _preview(ascii(bytes(reply[:MAX_QUOTE])))
        return f"{shown} ({kind.__name__} of {len(reply)})"
    if type(reply) in (list, tuple, dict, set, frozenset):
        return f"a {kind.__name__} of {len(reply)} items"  # type: ignore[arg-type]
    # the class's own name (a metaclass may define a __name__ property that raises)
    name = str.__str__(type.__dict__["__name__"].__get__(kind, type))
    return f"an object of type {_preview(ascii(name[:MAX_QUOTE])[1:-1])}"


def _preview(text: str) -> str:
    """An ASCII ``text`` cut to :data:`MAX_QUOTE` characters."""
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 3] + "..."


def parse_action(view: TextView, reply: Any) -> Parsed:
    """Read ``reply`` as an action of ``view`` (builds an :class:`ActionParser`; keep one to
    parse many replies)."""
    return ActionParser(view).parse(reply)
