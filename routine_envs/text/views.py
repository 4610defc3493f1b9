"""What a language-model agent is told: each environment's observation as text, its rules and
its actions as tools.

A :class:`TextView` is built once per environment from its public configuration (never from
its hidden state) and turns an *observation* into text: the text is a function of the
observation alone, so equal observations give equal text and the text shows nothing the
observation hides (no door's correctness in ``DilutedDoors-v1``, no layout). Each view also
lists the actions as :class:`Tool` calls (an OpenAI-style tool schema, and a canonical text
form per action, ``"open_door 2"``), which :mod:`routine_envs.text.parsing` reads back.

Views exist for every registered id (Diluted Doors v0/v1 in each observation mode, Routine Grid
in its vector and image modes, CodeFix in its text mode) and for the turn-based team envs; any
other env with a ``Box`` observation and ``Discrete`` actions gets a generic view that prints
the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from routine_envs.envs.code_fix import CodeFixDynamics
from routine_envs.envs.code_fix_text import SIMPLE_TOOLS
from routine_envs.envs.diluted_doors import DoorsDynamics
from routine_envs.envs.diluted_doors_v1 import PathDoorsDynamics
from routine_envs.envs.routine_grid import (
    HEADING_WORDS,
    KIND_CHARS,
    MINIGRID_ENCODING,
    GridDynamics,
)


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


# ------------------------------------------------------------------------------ doors
def _doors_view(dynamics: DoorsDynamics | PathDoorsDynamics, version: str) -> TextView:
    n, d = dynamics.num_floors, dynamics.num_doors
    mode = getattr(dynamics, "observation", "progress")  # v0 shows its progress
    reward = (
        "1 if every door was right, else 0"
        if dynamics.reward == "success"
        else "the share of doors that were right"
    )
    rules = [
        f"There are {n} floors. Each starts with {d} doors, numbered 0..{d - 1}, of which "
        "exactly one is right; the right doors are the same in every episode.",
        "After the doors comes a corridor; in a corridor every action just walks one cell on.",
        "A wrong door does not end the episode: you always cross every floor.",
        f"The reward is paid once, at the end: {reward}.",
    ]
    if mode == "progress":
        rules.append("You are told how many of your doors so far were right.")
    else:
        rules.append("You are not told whether a door was right before the end.")
    scale = dynamics.position_scale
    terminal = n + 4 if mode == "progress" else n + 3

    def describe(obs: np.ndarray) -> str:
        obs = np.asarray(obs, dtype=np.float64)
        if obs[terminal] > 0.5:
            text = f"You have crossed all {n} floors: the episode is over."
        else:
            floor = int(np.argmax(obs[:n]))
            if obs[n] > 0.5:
                text = (
                    f"Floor {floor + 1} of {n}: you stand before {d} doors (0..{d - 1}). Open one."
                )
            else:
                walked = round(obs[n + 1] / scale)
                total = walked + round(obs[n + 2] / scale)
                text = (
                    f"Floor {floor + 1} of {n}, in the corridor: cell {walked} of {total}. "
                    "Every action walks on."
                )
        if mode == "progress":
            text += f" Right doors so far: {round(obs[n + 3] * n)}."
        elif mode == "actions":
            chosen = obs[n + 4 :].reshape(n, d)
            passed = [
                f"floor {f + 1}: door {int(np.argmax(row))}"
                for f, row in enumerate(chosen)
                if row.max() > 0.5
            ]
            text += " Doors chosen so far: " + (", ".join(passed) if passed else "none") + "."
        return text

    door = Param("door", "integer", tuple(range(d)), "the door to open")
    return TextView(
        name=f"Diluted Doors {version}",
        task=(
            "You are an agent crossing the floors of a building. On each floor you choose one "
            "door; then you walk down a corridor to the next floor."
        ),
        rules=tuple(rules),
        tools=(
            Tool("open_door", "Open a door (at the doors; in a corridor it walks on).", (door,)),
            Tool("walk", "Walk one cell on (in a corridor; the same as open_door 0)."),
        ),
        calls=tuple(("open_door", (k,)) for k in range(d)),
        aliases={("walk", ()): 0},
        describe=describe,
    )


# ------------------------------------------------------------------------------- grid
def _grid_core_text(core: GridDynamics, obs: np.ndarray) -> str:
    """The text of a Routine Grid vector observation (``num_junctions + 13`` entries)."""
    obs = np.asarray(obs, dtype=np.float64)
    j = core.num_junctions
    height, width = core.layout.kinds.shape
    scale = 1.0 / (core.corridor_range[1] + 1)
    row, col = round(obs[j + 10] * (height - 1)), round(obs[j + 11] * (width - 1))
    where = f"grid row {row}, column {col}"
    if obs[j + 12] > 0.5:
        return f"You are on a cell that ends the episode ({where}): the episode is over."
    junction = int(np.argmax(obs[:j]))
    heading = HEADING_WORDS[int(np.argmax(obs[j + 3 : j + 7]))]
    open_ways = [
        turn for turn, ok in zip(("left", "ahead", "right"), obs[j + 7 : j + 10], strict=True) if ok
    ]
    if obs[j] > 0.5:
        ways = ", ".join(f"way {k}: {turn}" for k, turn in enumerate(open_ways))
        return (
            f"At junction {junction + 1} of {j}, heading {heading} ({where}). Ways out, counted "
            f"from your left: {ways}. Choose one."
        )
    walked = round(obs[j + 1] / scale)
    left = round(obs[j + 2] / scale)
    return (
        f"In the corridor after junction {junction + 1} of {j}, heading {heading} ({where}): "
        f"{walked} moves along it, {left} to go; open: {', '.join(open_ways) or 'none'}. "
        "Every action moves on."
    )


def _grid_image_text(core: GridDynamics, obs: np.ndarray) -> str:
    """The egocentric image observation as characters, one row per line (you: ``A``)."""
    view = np.asarray(obs)
    codes = {tuple(int(x) for x in code): KIND_CHARS[k] for k, code in enumerate(MINIGRID_ENCODING)}
    v = view.shape[0]
    rows = []
    for r in range(v):
        chars = [codes.get(tuple(int(x) for x in view[r, c]), "?") for c in range(v)]
        if r == v - 1:
            chars[v // 2] = "A"
        rows.append("".join(chars))
    return "Your view (you are A, facing up):\n" + "\n".join(rows)


def _grid_rules(core: GridDynamics) -> list[str]:
    rules = [
        f"The maze has {core.num_junctions} junctions on the way to the goal, each with "
        f"{core.branching} ways out: one leads on towards the goal, the others to a dead end or "
        "lava, which end the episode. The maze is the same in every episode.",
        "Between junctions lie one-way corridors; in a corridor every action moves one cell on.",
        "The reward is 1 for reaching the goal, else 0.",
    ]
    if core.step_cost:
        rules.append(
            f"In a corridor every action other than way 0 (walk) costs {core.step_cost:g}."
        )
    return rules


def _grid_tools(core: GridDynamics) -> tuple[tuple[Tool, ...], tuple[Call, ...], dict]:
    b = core.branching
    way = Param("way", "integer", tuple(range(b)), "the way out, counted from your left")
    tools = (
        Tool("take_way", "Take a way out of a junction (in a corridor it moves on).", (way,)),
        Tool("walk", "Move one cell on (in a corridor; the same as take_way 0)."),
    )
    return tools, tuple(("take_way", (k,)) for k in range(b)), {("walk", ()): 0}


def _grid_view(dynamics: GridDynamics) -> TextView:
    tools, calls, aliases = _grid_tools(dynamics)
    rules = _grid_rules(dynamics)
    if dynamics.obs_mode == "image":
        rules.append(
            "You see the cells ahead of you: # wall, . open floor, G goal, ~ lava, x dead end."
        )
        describe: Callable[[Any], str] = lambda obs: _grid_image_text(dynamics, obs)  # noqa: E731
    else:
        describe = lambda obs: _grid_core_text(dynamics, obs)  # noqa: E731
    return TextView(
        name="Routine Grid",
        task="You are an agent walking through a maze to its goal.",
        rules=tuple(rules),
        tools=tools,
        calls=calls,
        aliases=aliases,
        describe=describe,
    )


# ---------------------------------------------------------------------------- codefix
def _code_fix_view(dynamics: CodeFixDynamics) -> TextView:
    modules = tuple(dynamics.module_names)
    patches = tuple(range(dynamics.num_patches))
    module = Param("module", "string", modules, "a module of the repository")
    descriptions = {
        "read_log": "Read the failing test's log (in triage).",
        "scroll": "Scroll to the next section of the open module.",
        "read": "Read the next function of the open module.",
        "run_tests": "Run the whole test suite (after a patch).",
        "run_related_tests": "Run the tests of the failing module (after a patch).",
        "revert": "Undo the patch and start the next attempt (after the tests ran).",
        "submit": "Submit the fix; the hidden tests decide the reward (after the tests ran).",
    }
    tools = (
        *(Tool(name, descriptions[name]) for name in SIMPLE_TOOLS),
        Tool("open", "Open a module (in triage).", (module,)),
        Tool(
            "apply_patch",
            "Apply a candidate patch to the open module (at its failing code).",
            (module, Param("patch", "integer", patches, "the candidate patch's index")),
        ),
    )
    calls: list[Call] = []
    for text in dynamics.tool_calls:  # the env's own text form of each action
        name, *args = text.split()
        calls.append((name, tuple(int(x) if x.isdigit() else x for x in args)))
    return TextView(
        name="Code Fix",
        task=(
            "You are a coding agent fixing a bug in a repository: one test fails. Find the "
            "buggy module, apply the patch that fixes it, run the tests and submit."
        ),
        rules=(
            "Each reply is one tool call; its output is shown to you, with the calls valid now.",
            "A call that is not valid now changes nothing.",
            f"You may try {dynamics.max_attempts} patch(es); submitting ends the episode.",
            "The reward is 1 when the submitted patch fixes the bug, else 0"
            + (f", minus {dynamics.step_cost:g} per call." if dynamics.step_cost else "."),
        ),
        tools=tools,
        calls=tuple(calls),
        describe=str,
    )


# ------------------------------------------------------------------------------- team
def _team_view(turn_env: Any) -> TextView:
    """The turn-based team envs: the acting agent's observation (its core's, its one-hot index
    and one extra entry) in words."""
    dynamics = turn_env.team.dynamics
    k = turn_env.num_agents
    if hasattr(dynamics, "core"):  # team Diluted Doors: v0's core, plus the chooser flag
        core_view = _doors_view(dynamics.core, "v0")
        size = dynamics.core.num_floors + 5

        def extra(obs: np.ndarray, agent: int) -> str:
            return (
                " You choose this floor's door."
                if obs[-1] > 0.5
                else " Another agent chooses this floor's door: your action here is ignored."
            )

        rules = (
            *core_view.rules,
            f"You are one of a team of {k} agents on one shared reward; on each floor one agent "
            "chooses the door and every other agent's action is ignored.",
        )
        cores = [dynamics.core] * k
        describe_core = lambda obs, agent: core_view.describe(obs)  # noqa: E731
        tools, calls, aliases = core_view.tools, core_view.calls, core_view.aliases
        name, task = "Team Diluted Doors", core_view.task
    else:  # team Routine Grid: each agent its own maze, plus the teammates-on-track share
        cores = list(dynamics.cores)
        size = cores[0].observation_space.shape[0]

        def extra(obs: np.ndarray, agent: int) -> str:
            return f" Share of your teammates still on track: {obs[-1]:.0%}."

        rules = (
            *_grid_rules(cores[0]),
            f"You are one of a team of {k} agents, each in its own maze, on one shared reward.",
        )
        describe_core = lambda obs, agent: _grid_core_text(cores[agent], obs)  # noqa: E731
        tools, calls, aliases = _grid_tools(cores[0])
        name, task = "Team Routine Grid", "You are an agent walking through a maze to its goal."

    def describe(obs: np.ndarray) -> str:
        obs = np.asarray(obs, dtype=np.float64)
        agent = int(np.argmax(obs[size : size + k]))
        return f"You are agent_{agent}. " + describe_core(obs[:size], agent) + extra(obs, agent)

    return TextView(
        name=name,
        task=task,
        rules=tuple(rules),
        tools=tools,
        calls=calls,
        aliases=aliases,
        describe=describe,
    )


# ---------------------------------------------------------------------------- generic
def _generic_view(env: gym.Env) -> TextView:
    """Any env with a ``Discrete`` action space: the observation's numbers, the action index."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            f"env must have a Discrete action space for a text view, got {space} "
            f"of {type(env.unwrapped).__name__}"
        )
    n = int(space.n)

    def describe(obs: Any) -> str:
        values = np.asarray(obs).ravel()
        return "Observation: [" + ", ".join(f"{x:.4g}" for x in values.tolist()) + "]"

    return TextView(
        name=type(env.unwrapped).__name__,
        task="You are an agent acting in an environment described by numbers.",
        rules=("You see the observation's numbers after every action.",),
        tools=(Tool("act", "Take an action.", (Param("action", "integer", tuple(range(n)), ""),)),),
        calls=tuple(("act", (a,)) for a in range(n)),
        describe=describe,
    )


def view_for(env: gym.Env) -> TextView:
    """The :class:`TextView` of ``env`` (wrapped or not).

    Raises:
        ValueError: a CodeFix env not in ``obs_mode="text"`` (its text is its own: make it with
            that mode), or an env without a ``Discrete`` action space.
    """
    base = env.unwrapped
    dynamics = getattr(base, "dynamics", None)
    if isinstance(dynamics, CodeFixDynamics):
        if getattr(base, "obs_mode", None) != "text":
            raise ValueError(
                "obs_mode must be 'text' for CodeFix's text interface (its observation is then "
                "the transcript an agent reads), got " + repr(getattr(base, "obs_mode", None))
            )
        return _code_fix_view(dynamics)
    if isinstance(dynamics, PathDoorsDynamics):
        return _doors_view(dynamics, "v1")
    if isinstance(dynamics, DoorsDynamics):
        return _doors_view(dynamics, "v0")
    if isinstance(dynamics, GridDynamics):
        return _grid_view(dynamics)
    if hasattr(base, "team") and hasattr(base, "num_agents"):
        return _team_view(base)
    return _generic_view(env)


def text_kwargs(entry_point: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments an id's env needs for its text view (CodeFix: ``obs_mode="text"``
    unless given)."""
    if entry_point.endswith(":CodeFixEnv"):
        return {"obs_mode": "text", **kwargs}
    return dict(kwargs)


__all__: Sequence[str] = ("Call", "Param", "TextView", "Tool", "text_kwargs", "view_for")
