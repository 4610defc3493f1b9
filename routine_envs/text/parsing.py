"""Reading a language model's reply as an action, leniently, without ever raising.

:func:`parse_action` accepts, in this order of precedence:

1. a tool call as JSON: ``{"name": "open_door", "arguments": {"door": 2}}`` (``arguments`` may
   be a JSON string, as in OpenAI's format), wrapped as ``{"function": {...}}`` or in
   ``<tool_call>...</tool_call>`` tags (the last one counts);
2. the content of the last ``<action>...</action>`` or ``<answer>...</answer>`` tag, read as
   below;
3. the action as text: the whole reply, else its last non-empty line, as a call
   (``open_door 2``, ``open_door(2)``, ``Open door 2``, ``"walk"``, an optional ``Action:``
   prefix) or as an index into the action list (``2``, ``action 2``).

Case, underscores versus spaces or hyphens, quotes, backticks, brackets, commas and a final
full stop do not matter. Anything else is an invalid reply, reported with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from routine_envs.text.views import Call, TextView

#: the longest piece of a reply quoted back in a reason (characters).
MAX_QUOTE = 60
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_TAGGED = re.compile(r"<(action|answer)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_NOISE = re.compile(r"[\"'`()\[\]{},;:*]")


@dataclass(frozen=True)
class Parsed:
    """The result of reading a reply: ``action`` (``None`` when the reply names none) and, for
    an invalid reply, ``reason``."""

    action: int | None
    reason: str = ""

    @property
    def valid(self) -> bool:
        return self.action is not None


def _quote(text: str) -> str:
    shown = ascii(text)  # ASCII only: the reason goes into a text observation
    return shown if len(shown) <= MAX_QUOTE else f"{shown[: MAX_QUOTE - 15]}... ({len(text)} chars)"


def _normalize(text: str) -> str:
    text = _NOISE.sub(" ", text.lower()).replace("_", " ").replace("-", " ")
    text = text.strip().rstrip(".!").strip()
    return " ".join(text.split())


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
        """The action ``reply`` names (see the module docstring); never raises."""
        if not isinstance(reply, str):
            return Parsed(None, f"the reply must be text, got {type(reply).__name__}")
        if not reply.strip():
            return Parsed(None, "the reply is empty; " + self._hint())
        json_text = self._json_call(reply)
        if json_text is not None:
            return self._parse_json(json_text)
        tagged = _TAGGED.findall(reply)
        if tagged:
            return self._parse_text(tagged[-1][1], reply)
        found = self._parse_text(reply, reply)
        if found.valid:
            return found
        lines = [line for line in reply.splitlines() if line.strip()]
        if len(lines) > 1:
            return self._parse_text(lines[-1], reply)
        return found

    # ------------------------------------------------------------------------ internals
    def _hint(self) -> str:
        texts = self.view.action_texts()
        shown = ", ".join(texts[:12]) + (", ..." if len(texts) > 12 else "")
        return f"reply with one action: {shown} (or its index 0..{len(texts) - 1})"

    @staticmethod
    def _json_call(reply: str) -> str | None:
        calls = _TOOL_CALL.findall(reply)
        if calls:
            return calls[-1].strip()
        fenced = _FENCE.findall(reply)
        if fenced:
            return fenced[-1]
        stripped = reply.strip()
        if stripped.startswith("{") and stripped.endswith("}"):
            return stripped
        return None

    def _parse_json(self, text: str) -> Parsed:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return Parsed(None, f"the tool call {_quote(text)} is not valid JSON")
        if isinstance(data, list):
            if len(data) != 1:
                return Parsed(None, f"make exactly one tool call per turn, got {len(data)}")
            data = data[0]
        if not isinstance(data, dict):
            return Parsed(None, f"a tool call must be a JSON object, got {_quote(text)}")
        if isinstance(data.get("function"), dict):
            data = data["function"]
        name = data.get("name")
        args = data.get("arguments", data.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError):
                return Parsed(None, f"the arguments {_quote(args)} are not valid JSON")
        if not isinstance(name, str) or not isinstance(args, dict):
            return Parsed(None, "a tool call needs a string 'name' and an object 'arguments'")
        tool = self._tools.get(_normalize(name))
        if tool is None:
            tools = ", ".join(t.name for t in self.view.tools)
            return Parsed(None, f"unknown tool {_quote(name)}; tools: {tools}")
        values = []
        for param in tool.params:
            if param.name not in args:
                return Parsed(None, f"{tool.name} needs the argument {param.name!r}")
            value = _coerce(args[param.name], param.choices)
            if value is None:
                choices = ", ".join(map(str, param.choices))
                return Parsed(
                    None,
                    f"{tool.name}: {param.name} must be one of {choices}, "
                    f"got {_quote(str(args[param.name]))}",
                )
            values.append(value)
        extra = sorted(set(args) - {p.name for p in tool.params})
        if extra:
            return Parsed(None, f"{tool.name} takes no argument(s) {extra}")
        action = self._by_call.get((tool.name, tuple(values)))
        if action is None:  # a tool whose argument combination is no action
            return Parsed(None, f"{tool.name}{tuple(values)} is not an action; " + self._hint())
        return Parsed(action)

    def _parse_text(self, text: str, reply: str) -> Parsed:
        key = _normalize(text)
        if key.startswith("action "):
            key = key[len("action ") :]
        action = self._by_text.get(key)
        if action is not None:
            return Parsed(action)
        if key.isascii() and key.isdigit() and len(key) <= 6:
            index = int(key)
            if index < self.view.num_actions:
                return Parsed(index)
            return Parsed(None, f"action index {index} is outside 0..{self.view.num_actions - 1}")
        return Parsed(None, f"no action found in {_quote(reply)}; " + self._hint())


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


def parse_action(view: TextView, reply: Any) -> Parsed:
    """Read ``reply`` as an action of ``view`` (builds an :class:`ActionParser`; keep one to
    parse many replies)."""
    return ActionParser(view).parse(reply)
