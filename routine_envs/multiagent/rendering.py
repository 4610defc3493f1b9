"""Text pictures of the team environments (``render_mode="ansi"``; for people: they mark every
choice right or wrong) and their text views (one agent's observation in words, for the
turn-based adapters: a function of that observation alone)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from routine_envs.envs.routine_grid import DEAD_END, GOAL, LAVA
from routine_envs.rendering.doors import doors_view
from routine_envs.rendering.grid import grid_core_text, grid_rules, grid_tools
from routine_envs.rendering.grid_v1 import TURN_WORDS, TURNS, grid_v1_view, vector_text
from routine_envs.rendering.text_view import TextView


def agent_flags(dynamics: Any, state: Any) -> dict[str, bool]:
    """``{agent name: is_agent_critical}`` of every agent in ``state``."""
    return {f"agent_{i}": dynamics.is_agent_critical(state, i) for i in range(dynamics.team_size)}


# ------------------------------------------------------------------------------- pictures
def render_team_doors(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """Team Diluted Doors (a ``TeamDoorsDynamics``; ``history``: the episode's, joint actions by
    index): see :func:`doors_picture`."""
    chosen = [
        dynamics.joint_action(action)[dynamics.choosers[before.floor]]
        for before, action in zip(history.states, history.actions, strict=False)
        if before.position == 0 and before.floor < dynamics.num_floors
    ]
    return doors_picture(dynamics, state, history, "Team Diluted Doors", chosen, state.num_correct)


def render_team_doors_v1(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """Team Diluted Doors v1 (a ``TeamPathDoorsDynamics``): see :func:`doors_picture`."""
    return doors_picture(
        dynamics, state, history, "Team Diluted Doors v1", state.path, dynamics.num_correct(state)
    )


def doors_picture(
    dynamics: Any, state: Any, history: Any, title: str, chosen: Sequence[int], correct: int
) -> str:
    """One line per floor: its chooser, the doors (``[k]`` the door chosen, ``+``/``x`` right or
    wrong, ``@`` the team at the doors, ``!`` the chooser critical) and the corridor progress.

    Args:
        dynamics: the team's; state: the joint state (``floor``, ``position``,
            ``corridor_length``); history: the episode's; title: the first words;
            chosen: the door chosen on each floor passed; correct: the doors right so far.
    """
    critical = agent_flags(dynamics, state)
    header = (
        f"{title}  step {len(history.actions)}  agents {dynamics.team_size}  "
        f"correct {correct}/{dynamics.num_floors}  reward={dynamics.reward_mode}  "
        f"rho per agent={dynamics.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(dynamics.num_floors):
        chooser = f"agent_{dynamics.choosers[floor]}"
        here = floor == state.floor
        doors = []
        for door in range(dynamics.num_doors):
            if floor < len(chosen) and chosen[floor] == door:
                doors.append(f"[{door}]" + ("+" if door == dynamics.correct_doors[floor] else "x"))
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
    if state.floor >= dynamics.num_floors:
        lines.append("finished: " + ("success" if dynamics.is_success(state) else "failure"))
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


def render_team_grid_v1(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """Every agent's walk: where it is, whether it is critical, and each way taken marked right
    (``+``) or wrong (``x``)."""
    blocks = [
        f"Team Routine Grid v1  step {len(history.actions)}  agents {dynamics.team_size}  "
        f"reward={dynamics.reward_mode}  rho per agent={dynamics.decision_density:.4f}"
    ]
    for i, (core, here) in enumerate(zip(dynamics.cores, state, strict=True)):
        ways = [
            f"{TURN_WORDS[TURNS[core.branching][way]]}{'+' if way == right else 'x'}"
            for way, right in zip(here.path, core.correct_ways, strict=False)
        ]
        if dynamics.ended(state, i):
            status = "through its exit door: " + ("goal" if core.is_success(here) else "dead end")
        else:
            status = "critical" if dynamics.is_agent_critical(state, i) else "routine"
            where = f"junction {here.floor + 1}/{core.num_junctions}"
            if here.position:
                where += f", corridor cell {here.position}/{here.corridor_length}"
            status = f"{where}, {status}"
        blocks.append(f"agent_{i}: {status}; ways taken: " + (" ".join(ways) if ways else "none"))
    return "\n".join(blocks) + "\n"


# ---------------------------------------------------------------------------- text views
def agent_view(
    dynamics: Any,
    core_view: TextView,
    describe_agent: Callable[[int, np.ndarray, np.ndarray], str],
    name: str,
    rules: Sequence[str],
) -> TextView:
    """A team agent's view: ``You are agent_<i>.``, then ``describe_agent(i, core, obs)`` with
    ``core`` the first ``dynamics.core_observation_size`` entries of the observation ``obs``
    (the core's; the agent's index is the one-hot after them). The tools are ``core_view``'s."""
    size, k = dynamics.core_observation_size, dynamics.team_size

    def describe(obs: Any) -> str:
        obs = np.asarray(obs, dtype=np.float64)
        agent = int(np.argmax(obs[size : size + k]))
        return f"You are agent_{agent}. " + describe_agent(agent, obs[:size], obs)

    return TextView(
        name=name,
        task=core_view.task,
        rules=tuple(rules),
        tools=core_view.tools,
        calls=core_view.calls,
        aliases=core_view.aliases,
        describe=describe,
    )


def team_doors_view(dynamics: Any) -> TextView:
    """One agent of Team Diluted Doors (either version) in words: the single-agent text of its
    core's part (``doors_view`` of the core's version: v1's shows no outcome before the end),
    and whether it chooses this floor's door."""
    core_view = doors_view(dynamics.core, dynamics.core_version)

    def describe_agent(agent: int, core: np.ndarray, obs: np.ndarray) -> str:
        chooser = (
            " You choose this floor's door."
            if obs[-1] > 0.5
            else " Another agent chooses this floor's door: your action here is ignored."
        )
        return core_view.describe(core) + chooser

    rules = (
        *core_view.rules,
        f"You are one of a team of {dynamics.team_size} agents on one shared reward; on each "
        "floor one agent chooses the door and every other agent's action is ignored.",
    )
    return agent_view(dynamics, core_view, describe_agent, "Team Diluted Doors", rules)


def team_grid_view(dynamics: Any) -> TextView:
    """One agent of Team Routine Grid (a ``TeamGridDynamics``) in words: its own maze's vector
    observation, and the share of its teammates on track."""
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

    def describe_agent(agent: int, core: np.ndarray, obs: np.ndarray) -> str:
        share = f" Share of your teammates still on track: {obs[-1]:.0%}."
        return grid_core_text(cores[agent], core) + share

    rules = (
        *grid_rules(cores[0]),
        f"You are one of a team of {dynamics.team_size} agents, each in its own maze, on one "
        "shared reward.",
    )
    return agent_view(dynamics, core_view, describe_agent, "Team Routine Grid", rules)


def team_grid_v1_view(dynamics: Any) -> TextView:
    """One agent of Team Routine Grid v1 in words: ``RoutineGrid-v1``'s text of its own maze
    (its outcome only once the team's episode is over), and how many of the team are through
    their exit doors."""
    cores = dynamics.cores
    k, j = dynamics.team_size, cores[0].num_junctions
    core_view = grid_v1_view(cores[0])

    def describe_agent(agent: int, core: np.ndarray, obs: np.ndarray) -> str:
        through = float(obs[-1])
        if core[j + 10] > 0.5 and through < 1.0:
            own = (
                "You walked through your exit door; you wait there (your actions are ignored) "
                "until the whole team is through."
            )
        else:
            own = vector_text(cores[agent], core)
        return f"{own} Of the team of {k}, {round(through * k)} are through their exit doors."

    rules = (
        *core_view.rules[:2],  # (the third is the single-agent reward)
        f"You are one of a team of {k} agents, each in its own maze, on one shared reward paid "
        "when every agent is through its exit door: "
        + (
            "1 when every agent's ways were all right, else 0."
            if dynamics.reward == "success"
            else "the share of agents whose ways were all right."
        ),
    )
    return agent_view(dynamics, core_view, describe_agent, "Team Routine Grid", rules)
