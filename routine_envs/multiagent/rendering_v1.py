"""Text pictures and text views of the v1 team environments (Team Diluted Doors v1, Team
Routine Grid v1): the views read one agent's observation alone, which shows no outcome before
the end; the pictures are for people and mark every choice right or wrong."""

from __future__ import annotations

from typing import Any

import numpy as np

from routine_envs.rendering.doors import doors_view
from routine_envs.rendering.grid_v1 import TURN_WORDS, TURNS, grid_v1_view, vector_text
from routine_envs.rendering.text_view import TextView


def _agent_text(obs: np.ndarray, size: int, team_size: int) -> tuple[int, np.ndarray]:
    """The observing agent's index and the core part of a team agent's observation."""
    obs = np.asarray(obs, dtype=np.float64)
    return int(np.argmax(obs[size : size + team_size])), obs[:size]


def render_team_doors_v1(dynamics: Any, state: Any, history: Any, mode: str) -> str:
    """One line per floor: its chooser, the doors (``[k]`` the door chosen, ``+``/``x`` right
    or wrong, ``@`` the team at the doors, ``!`` the chooser critical) and the corridor."""
    critical = {i: dynamics.is_agent_critical(state, i) for i in range(dynamics.team_size)}
    path = state.path
    header = (
        f"Team Diluted Doors v1  step {len(history.actions)}  agents {dynamics.team_size}  "
        f"correct {dynamics.num_correct(state)}/{dynamics.num_floors}  "
        f"reward={dynamics.reward_mode}  rho per agent={dynamics.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(dynamics.num_floors):
        chooser = dynamics.choosers[floor]
        doors = []
        for door in range(dynamics.num_doors):
            if floor < len(path) and path[floor] == door:
                doors.append(f"[{door}]" + ("+" if door == dynamics.correct_doors[floor] else "x"))
            else:
                doors.append(f" {door}  ")
        here = floor == state.floor
        mark = ("@!" if critical[chooser] else "@ ") if here and state.position == 0 else "  "
        corridor = ""
        if here and state.position > 0:
            corridor = f"corridor {state.position}/{state.corridor_length}"
        elif floor < state.floor:
            corridor = "passed"
        lines.append(
            f"floor {floor + 1:>2} {'agent_' + str(chooser):>9} {mark} {''.join(doors)} | "
            f"{corridor}"
        )
    if state.floor >= dynamics.num_floors:
        lines.append("finished: " + ("success" if dynamics.is_success(state) else "failure"))
    return "\n".join(lines) + "\n"


def team_doors_v1_view(dynamics: Any) -> TextView:
    """One agent of Team Diluted Doors v1 in words: ``DilutedDoors-v1``'s text of the core part
    (no outcome before the end), who the agent is and whether it chooses this floor's door."""
    core_view = doors_view(dynamics.core, "v1")
    size, k = dynamics.core.observation_size, dynamics.team_size

    def describe(obs: Any) -> str:
        agent, core = _agent_text(obs, size, k)
        chooser = (
            " You choose this floor's door."
            if float(np.asarray(obs)[-1]) > 0.5
            else " Another agent chooses this floor's door: your action here is ignored."
        )
        return f"You are agent_{agent}. " + core_view.describe(core) + chooser

    rules = (
        *core_view.rules,
        f"You are one of a team of {k} agents on one shared reward; on each floor one agent "
        "chooses the door and every other agent's action is ignored.",
    )
    return TextView(
        name="Team Diluted Doors",
        task=core_view.task,
        rules=rules,
        tools=core_view.tools,
        calls=core_view.calls,
        aliases=core_view.aliases,
        describe=describe,
    )


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


def team_grid_v1_view(dynamics: Any) -> TextView:
    """One agent of Team Routine Grid v1 in words: ``RoutineGrid-v1``'s text of its own maze
    (its outcome only once the team's episode is over), who it is and how many of the team are
    through their exit doors."""
    cores = dynamics.cores
    size, k = cores[0].observation_size, dynamics.team_size
    j = cores[0].num_junctions
    core_view = grid_v1_view(cores[0])

    def describe(obs: Any) -> str:
        agent, core = _agent_text(obs, size, k)
        through = float(np.asarray(obs)[-1])
        if core[j + 10] > 0.5 and through < 1.0:
            own = (
                "You walked through your exit door; you wait there (your actions are ignored) "
                "until the whole team is through."
            )
        else:
            own = vector_text(cores[agent], core)
        team = f" Of the team of {k}, {round(through * k)} are through their exit doors."
        return f"You are agent_{agent}. {own}{team}"

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
    return TextView(
        name="Team Routine Grid",
        task=core_view.task,
        rules=rules,
        tools=core_view.tools,
        calls=core_view.calls,
        aliases=core_view.aliases,
        describe=describe,
    )
