"""What a language-model agent is told about an environment: :class:`TextView`, its tools and
the default views built from a dynamics object.

A :class:`TextView` is built once per configuration from its public description (never from a
hidden state) and turns an *observation* into text: the text is a function of the observation
alone, so equal observations give equal text and the text shows nothing the observation hides.
Each view also lists the actions as :class:`Tool` calls (an OpenAI-style tool schema, and a
canonical text form per action, ``"open_door 2"``), which :mod:`routine_envs.text.parsing` reads
back.

Every dynamics object has a view (``dynamics.text_view()``): environments with words of their
own build theirs beside their renderers (:mod:`~routine_envs.rendering.doors`,
:mod:`~routine_envs.rendering.grid`, :mod:`~routine_envs.rendering.code_fix_text`); any other
gets :func:`describe_view`, its states' ``describe()`` texts looked up by observation, its
``action_names()`` as tools and its docstring's sections as the task. Like every module of
:mod:`routine_envs.rendering` this one imports no environment: a dynamics object is read through
its public methods.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from routine_envs.annotations import observation_anchor

#: the most reachable states :func:`describe_view` enumerates (its table of texts).
MAX_DESCRIBED_STATES = 200_000
#: what an action name may be: a lower-case word, digits and underscores after its first letter.
ACTION_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


@dataclass(frozen=True)
class Param:
    """One argument of a tool: ``kind`` ``"integer"`` or ``"string"``, the values it may take
    (``choices``, in order) and what it means."""

    name: str
    kind: str
    choices: tuple[Any, ...]
    description: str


@dataclass(frozen=True)
class Tool:
    """One tool (a family of actions): its name, what it does and its arguments."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema of this tool."""
        properties = {
            p.name: {"type": p.kind, "enum": list(p.choices), "description": p.description}
            for p in self.params
        }
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": [p.name for p in self.params],
                },
            },
        }


Call = tuple[str, tuple[Any, ...]]
"""A tool call: the tool's name and its arguments in the tool's parameter order."""


@dataclass(frozen=True)
class TextView:
    """An environment as a text task.

    Attributes:
        name: a short name of the task (``"Diluted Doors"``).
        task: what the agent must do, in a few sentences (the start of the system prompt).
        rules: the rules that matter, one sentence each.
        tools: the tools, in order.
        calls: per action ``a`` (``0..num_actions-1``), its canonical call.
        aliases: further calls accepted for an action (e.g. ``("walk", ())`` for action 0).
        describe: ``observation -> text``, a function of the observation alone.
    """

    name: str
    task: str
    rules: tuple[str, ...]
    tools: tuple[Tool, ...]
    calls: tuple[Call, ...]
    describe: Callable[[Any], str]
    aliases: dict[Call, int] = field(default_factory=dict)

    @property
    def num_actions(self) -> int:
        return len(self.calls)

    def action_text(self, action: int) -> str:
        """The canonical text of ``action``: the tool name, then its arguments (``"open_door
        2"``)."""
        name, args = self.calls[action]
        return " ".join((name, *map(str, args)))

    def action_texts(self) -> list[str]:
        """The canonical text of every action, in action order."""
        return [self.action_text(a) for a in range(self.num_actions)]

    def tool_schema(self) -> list[dict[str, Any]]:
        """The tools as an OpenAI-style list of function schemas."""
        return [tool.schema() for tool in self.tools]

    def observation_text(self, observation: Any) -> str:
        """The text of ``observation`` (no trailing newline)."""
        return self.describe(observation).rstrip("\n")

    def system_prompt(self) -> str:
        """The task, the rules and the action format, for the system message."""
        lines = [self.task, "", "Rules:"]
        lines += [f"- {rule}" for rule in self.rules]
        lines += ["", "Actions (one per turn):"]
        for tool in self.tools:
            args = " ".join(f"<{p.name}>" for p in tool.params)
            head = f"{tool.name} {args}".rstrip()
            lines.append(f"- {head}: {tool.description}")
            for p in tool.params:
                values = ", ".join(map(str, p.choices))
                lines.append(f"    <{p.name}>: {p.description} (one of {values})")
        lines += [
            "",
            "Reply with exactly one action: a tool call, or the action as plain text on the "
            f"last line of your reply (for example `{self.action_text(self.num_actions - 1)}`),"
            f" or its index 0..{self.num_actions - 1} in this list: "
            + "; ".join(f"{a}: {t}" for a, t in enumerate(self.action_texts()))
            + ".",
            "A reply that names no action is an invalid turn: nothing changes and you are told "
            "why.",
        ]
        return "\n".join(lines)


# ------------------------------------------------------------------------- default views
def describe_render(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """The default picture of a dynamics object without a renderer of its own (``"ansi"``):
    the step and the state's description."""
    return f"step {len(history.actions)}: {dynamics.describe(state)}\n"


def numbers_text(observation: Any) -> str:
    """An observation as its numbers: ``Observation: [0, 0.5, 1]``."""
    values = np.asarray(observation).ravel()
    return "Observation: [" + ", ".join(f"{x:.4g}" for x in values.tolist()) + "]"


def numbers_view(num_actions: int, name: str) -> TextView:
    """Any environment with ``num_actions`` discrete actions: the observation's numbers and one
    tool ``act <action>`` (what is left when nothing describes the observation in words)."""
    return TextView(
        name=name,
        task="You are an agent acting in an environment described by numbers.",
        rules=("You see the observation's numbers after every action.",),
        tools=(
            Tool(
                "act",
                "Take an action.",
                (Param("action", "integer", tuple(range(num_actions)), ""),),
            ),
        ),
        calls=tuple(("act", (a,)) for a in range(num_actions)),
        describe=numbers_text,
    )


def doc_sections(doc: str | None) -> dict[str, str]:
    """The ``## Title`` sections of a docstring (Gymnasium's layout), each as its first
    paragraph on one line with RST's double backticks as single ones; ``""`` holds the text
    before the first section."""
    sections: dict[str, list[str]] = {"": []}
    title = ""
    for line in (doc or "").splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            title = stripped[3:].strip()
            sections[title] = []
        else:
            sections[title].append(stripped)
    out = {}
    for title, lines in sections.items():
        text = "\n".join(lines).strip()
        paragraph = text.split("\n\n", 1)[0]
        out[title] = " ".join(paragraph.replace("``", "`").split())
    return out


def check_action_names(names: Sequence[str], num_actions: int) -> tuple[str, ...]:
    """``names`` as a tuple, one per action, each matching :data:`ACTION_NAME` and distinct;
    ``ValueError`` naming ``action_names`` otherwise."""
    names = tuple(names)
    if len(names) != num_actions:
        raise ValueError(f"action_names must name all {num_actions} actions, got {len(names)}")
    for name in names:
        if not isinstance(name, str) or not ACTION_NAME.fullmatch(name):
            raise ValueError(
                "action_names must be lower-case words (a letter, then letters, digits or "
                f"underscores; at most 40 characters), got {name!r}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"action_names must be distinct, got {list(names)[:20]}")
    return names


def describe_view(dynamics: Any, *, describes_states: bool = True) -> TextView:
    """The default view of a dynamics object, from what it says of itself.

    - The observation's text is ``dynamics.describe(state)`` of a reachable state with that
      observation (by its anchor, so a function of the observation alone), or its numbers when
      ``describes_states`` is False (``describe`` is the default ``repr`` of a state, which may
      hold what the observation hides) or the observation is none of a reachable state's.
      States an action is taken in whose observations are equal must be described alike
      (``describe`` must not tell what the observation hides): ``ValueError`` otherwise. A
      terminal observation shared by states described differently reads "The episode is over."
    - One tool per action, named by ``dynamics.action_names()`` (:func:`check_action_names`).
    - The name is the class name without ``Dynamics``; the task, the first paragraph of the
      docstring's ``## Description`` (else of the docstring); the rules, the first paragraphs of
      ``## Rewards`` and ``## Episode End`` and the configuration (the fields' values).

    Raises:
        ValueError: bad action names, a ``describe`` that tells apart equal observations, or
            more than :data:`MAX_DESCRIBED_STATES` reachable states (write a view of your own).
    """
    names = check_action_names(dynamics.action_names(), dynamics.num_actions)
    texts = _texts_by_anchor(dynamics) if describes_states else {}

    def describe(observation: Any) -> str:
        text = texts.get(observation_anchor(observation))
        return numbers_text(observation) if text is None else text

    kind = type(dynamics)
    sections = doc_sections(kind.__doc__)
    task = sections.get("Description") or sections[""]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", kind.__name__.removesuffix("Dynamics"))
    rules = [
        f"{label}: {sections[title]}"
        for title, label in (("Rewards", "Reward"), ("Episode End", "Episode end"))
        if sections.get(title)
    ]
    config = ", ".join(
        f"{f.name}={getattr(dynamics, f.name)!r}" for f in dataclasses.fields(dynamics) if f.init
    )
    if config:
        rules.append(f"This configuration: {config}.")
    rules.append("After every action you are told what you observe.")
    return TextView(
        name=words,
        task=task or f"You are an agent acting in {words}.",
        rules=tuple(rules),
        tools=tuple(Tool(name, f"Take action {a}: {name}.") for a, name in enumerate(names)),
        calls=tuple((name, ()) for name in names),
        describe=describe,
    )


def _texts_by_anchor(dynamics: Any) -> dict[int, str]:
    """``{observation anchor: describe(state)}`` over the reachable states (see
    :func:`describe_view`)."""
    model = dynamics.model()
    reachable = np.flatnonzero(model.reachable)
    if reachable.size > MAX_DESCRIBED_STATES:
        raise ValueError(
            f"{type(dynamics).__name__} has {reachable.size:,} reachable states, more than the "
            f"{MAX_DESCRIBED_STATES:,} the describe() view tabulates: write build_text_view()"
        )
    decided: dict[int, tuple[str, int]] = {}
    final: dict[int, set[str]] = {}
    for sid in reachable.tolist():
        state = model.states[sid]
        anchor, text = dynamics.anchor(state), dynamics.describe(state)
        if model.terminal[sid]:
            final.setdefault(anchor, set()).add(text)
            continue
        seen = decided.setdefault(anchor, (text, sid))
        if seen[0] != text:
            raise ValueError(
                f"{type(dynamics).__name__}.describe() tells apart states {seen[1]} and {sid}, "
                f"whose observations are equal ({seen[0]!r} and {text!r}): it shows what the "
                "observation hides; describe what the observation shows, or write "
                "build_text_view()"
            )
    texts = {anchor: text for anchor, (text, _) in decided.items()}
    for anchor, options in final.items():
        if anchor not in texts:
            texts[anchor] = options.pop() if len(options) == 1 else "The episode is over."
    return texts
