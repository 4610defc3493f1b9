"""Text pictures of the team environments (``render_mode="ansi"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from routine_envs.envs.routine_grid import DEAD_END, GOAL, LAVA

if TYPE_CHECKING:
    from routine_envs.multiagent.team_doors import TeamDilutedDoorsEnv
    from routine_envs.multiagent.team_grid import TeamRoutineGridEnv


def render_team_doors_ansi(env: TeamDilutedDoorsEnv) -> str:
    """One line per floor: its chooser, the doors (``[k]`` the door chosen, ``+``/``x`` right or
    wrong, ``@`` the team at the doors, ``!`` the chooser critical) and the corridor progress."""
    state = env.joint_state
    critical = env.critical
    header = (
        f"Team Diluted Doors  step {env._rounds}  agents {env.team_size}  "
        f"correct {state.num_correct}/{env.num_floors}  reward={env.reward_mode}  "
        f"rho per agent={env.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(env.num_floors):
        chooser = env.possible_agents[env.choosers[floor]]
        here = floor == state.floor
        doors = []
        for door in range(env.num_doors):
            if floor < len(env._chosen_doors) and env._chosen_doors[floor] == door:
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
        lines.append("finished: " + ("success" if env._is_success(state) else "failure"))
    return "\n".join(lines) + "\n"


def render_team_grid_ansi(env: TeamRoutineGridEnv) -> str:
    """Every agent's maze (``@`` the agent; ``#`` wall, ``.`` corridor, ``+`` junction, ``S``
    start, ``G`` goal, ``~`` lava, ``x`` dead end), with its status and criticality."""
    state = env.joint_state
    critical = env.critical
    blocks = [
        f"Team Routine Grid  step {env._rounds}  agents {env.team_size}  "
        f"reward={env.reward_mode}  rho per agent={env.decision_density:.4f}"
    ]
    for i, (core, name) in enumerate(zip(env.cores, env.possible_agents, strict=True)):
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
