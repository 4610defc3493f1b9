"""Text pictures of the team environments (``render_mode="ansi"``) and their text views (one
agent's observation in words, for the turn-based adapters)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from routine_envs.envs.routine_grid import DEAD_END, GOAL, LAVA
from routine_envs.rendering.doors import doors_view
from routine_envs.rendering.grid import grid_core_text, grid_rules, grid_tools
from routine_envs.rendering.text_view import TextView


def agent_flags(dynamics: Any, state: Any) -> dict[str, bool]:
    """``{agent name: is_agent_critical}`` of every agent in ``state``."""
    return {f"agent_{i}": dynamics.is_agent_critical(state, i) for i in range(dynamics.team_size)}


def render_team_doors(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """One line per floor: its chooser, the doors (``[k]`` the door chosen, ``+``/``x`` right or
    wrong, ``@`` the team at the doors, ``!`` the chooser critical) and the corridor progress.

    Args:
        dynamics: a ``TeamDoorsDynamics``; state: the joint ``DoorsState``; history: the
            episode's ``EpisodeHistory`` (joint actions as tuples); mode: ``"ansi"``.
    """
    env = dynamics
    critical = agent_flags(dynamics, state)
    chosen = [
        actions[env.choosers[before.floor]]
        for before, actions in zip(history.states, history.actions, strict=False)
        if before.position == 0 and before.floor < env.num_floors
    ]
    header = (
        f"Team Diluted Doors  step {len(history.actions)}  agents {env.team_size}  "
        f"correct {state.num_correct}/{env.num_floors}  reward={env.reward_mode}  "
        f"rho per agent={env.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(env.num_floors):
        chooser = f"agent_{env.choosers[floor]}"
        here = floor == state.floor
        doors = []
        for door in range(env.num_doors):
            if floor < len(chosen) and chosen[floor] == door:
                doors.append(f"[{door}]" + ("+" if door == env.correct_doors[floor] else "x"))
            else:
                doors.append(f" {door}  ")
        mark = "  "
        if here and state.position == 0:
            mark = "@!" if critical[chooser] else "@ "
        if here and state.position > 0:
            corridor = f"corridor {state.position}/{state.corridor_length}"
        elif floor < state.floor:
            corridor = "passed"
        else:
            corridor = ""
        lines.append(f"floor {floor + 1:>2} {chooser:>9} {mark} {''.join(doors)} | {corridor}")
    if state.floor >= env.num_floors:
        lines.append("finished: " + ("success" if env.is_success(state) else "failure"))
    return "\n".join(lines) + "\n"


def render_team_grid(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """Every agent's maze (``@`` the agent; ``#`` wall, ``.`` corridor, ``+`` junction, ``S``
    start, ``G`` goal, ``~`` lava, ``x`` dead end), with its status and criticality.

    Args:
        dynamics: a ``TeamGridDynamics``; state: every agent's cell; history: the episode's
            ``EpisodeHistory``; mode: ``"ansi"``.
    """
    env = dynamics
    critical = agent_flags(dynamics, state)
    blocks = [
        f"Team Routine Grid  step {len(history.actions)}  agents {env.team_size}  "
        f"reward={env.reward_mode}  rho per agent={env.decision_density:.4f}"
    ]
    for i, core in enumerate(env.cores):
        name = f"agent_{i}"
        cell = core.layout.cells[state[i]]
        if cell.kind == GOAL:
            status = "at its goal"
        elif cell.kind in (LAVA, DEAD_END):
            status = "failed (lava)" if cell.kind == LAVA else "failed (dead end)"
        elif state[i] not in core.layout.spine:
            status = "on a wrong branch, routine"
        else:
            status = f"junction {cell.junction + 1}/{core.num_junctions}"
            status += ", critical" if critical[name] else ", routine"
        rows = [list(row) for row in core.layout.desc]
        rows[cell.row][cell.col] = "@"
        blocks.append(f"{name}: {status}\n" + "\n".join("".join(row) for row in rows))
    return "\n\n".join(blocks) + "\n"


# ---------------------------------------------------------------------------- text views
def team_doors_view(dynamics: Any) -> TextView:
    """The view of one agent of Team Diluted Doors (a ``TeamDoorsDynamics``): its observation,
    v0's core, its one-hot index and the chooser flag, in words."""
    core_view = doors_view(dynamics.core, "v0")

    def extra(obs: np.ndarray, agent: int) -> str:
        return (
            " You choose this floor's door."
            if obs[-1] > 0.5
            else " Another agent chooses this floor's door: your action here is ignored."
        )

    rules = (
        *core_view.rules,
        f"You are one of a team of {dynamics.team_size} agents on one shared reward; on each "
        "floor one agent chooses the door and every other agent's action is ignored.",
    )
    return _agent_view(
        dynamics,
        core_view,
        dynamics.core.num_floors + 5,
        lambda obs, agent: core_view.describe(obs),
        extra,
        name="Team Diluted Doors",
        rules=rules,
    )


def team_grid_view(dynamics: Any) -> TextView:
    """The view of one agent of Team Routine Grid (a ``TeamGridDynamics``): its own maze's
    vector observation, its one-hot index and the share of its teammates on track, in words."""
    cores = list(dynamics.cores)
    tools, calls, aliases = grid_tools(cores[0])
    core_view = TextView(
        name="Team Routine Grid",
        task="You are an agent walking through a maze to its goal.",
        rules=(),
        tools=tools,
        calls=calls,
        aliases=aliases,
        describe=str,
    )

    def extra(obs: np.ndarray, agent: int) -> str:
        return f" Share of your teammates still on track: {obs[-1]:.0%}."

    rules = (
        *grid_rules(cores[0]),
        f"You are one of a team of {dynamics.team_size} agents, each in its own maze, on one "
        "shared reward.",
    )
    return _agent_view(
        dynamics,
        core_view,
        cores[0].observation_space.shape[0],
        lambda obs, agent: grid_core_text(cores[agent], obs),
        extra,
        name="Team Routine Grid",
        rules=rules,
    )


def _agent_view(
    dynamics: Any,
    core_view: TextView,
    size: int,
    describe_core: Callable[[np.ndarray, int], str],
    extra: Callable[[np.ndarray, int], str],
    name: str,
    rules: tuple[str, ...],
) -> TextView:
    """A team agent's view: ``You are agent_<i>.``, the core's text of the first ``size``
    entries, then ``extra`` (the agent's index is the one-hot after them)."""
    k = dynamics.team_size

    def describe(obs: np.ndarray) -> str:
        obs = np.asarray(obs, dtype=np.float64)
        agent = int(np.argmax(obs[size : size + k]))
        return f"You are agent_{agent}. " + describe_core(obs[:size], agent) + extra(obs, agent)

    return TextView(
        name=name,
        task=core_view.task,
        rules=tuple(rules),
        tools=core_view.tools,
        calls=core_view.calls,
        aliases=core_view.aliases,
        describe=describe,
    )
