"""Text pictures of the team environments (``render_mode="ansi"``)."""

from __future__ import annotations

from typing import Any

from routine_envs.envs.routine_grid import DEAD_END, GOAL, LAVA


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
