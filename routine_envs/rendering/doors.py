"""Text and RGB pictures of a Diluted Doors episode."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from routine_envs.envs.diluted_doors import DilutedDoorsEnv

CELL = 12  # pixels per cell edge
COLORS = {
    "background": (255, 255, 255),
    "door": (150, 150, 150),
    "correct": (60, 170, 75),
    "wrong": (210, 60, 50),
    "corridor": (225, 225, 225),
    "walked": (170, 190, 215),
    "agent": (30, 80, 200),
    "critical": (250, 200, 0),
}


def render_doors_ansi(env: DilutedDoorsEnv) -> str:
    """One line per floor: the doors (``[k]`` the one chosen, ``+``/``x`` right or wrong, ``@``
    the agent deciding, ``!`` a critical state) and the corridor (``=`` walked, ``@`` the agent)."""
    state = env.state
    header = (
        f"Diluted Doors  step {env._episode_length}  floor "
        f"{min(state.floor, env.num_floors - 1) + 1}/{env.num_floors}  "
        f"correct {state.num_correct}  reward={env.reward_mode}  "
        f"rho={env.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(env.num_floors):
        doors = []
        here = floor == state.floor
        for door in range(env.num_doors):
            if floor < len(env._chosen_doors) and env._chosen_doors[floor] == door:
                mark = "+" if door == env.correct_doors[floor] else "x"
                doors.append(f"[{door}]{mark}")
            else:
                doors.append(f" {door}  ")
        door_mark = ("@!" if env.critical else "@ ") if here and state.position == 0 else "  "
        if floor < len(env._corridor_lengths):
            length = env._corridor_lengths[floor]
            walked = state.position if here else length
            cells = "=" * max(0, walked - 1) + ("@" if here else "=" * min(1, walked))
            cells += "." * (length - len(cells))
        else:
            cells = "?"  # the corridor length is drawn when the door is passed
        lines.append(f"floor {floor + 1:>2} {door_mark} {''.join(doors)} | {cells}")
    if state.floor >= env.num_floors:
        lines.append(
            "finished: "
            + (
                "success"
                if state.num_correct == env.num_floors
                else f"{state.num_correct}/{env.num_floors} doors correct"
            )
        )
    return "\n".join(lines) + "\n"


def render_doors_rgb(env: DilutedDoorsEnv) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 picture: a row per floor, doors on the left, the corridor on the
    right; the agent in blue, chosen doors green (correct) or red (wrong), a yellow frame around
    the agent when its state is critical."""
    state = env.state
    max_len = env.routine_range[1]
    width_cells = env.num_doors + 1 + max_len
    img = np.empty((env.num_floors * (CELL + 2) + 2, width_cells * CELL + 2, 3), dtype=np.uint8)
    img[:] = COLORS["background"]

    def fill(row: int, col: int, color: str, inset: int = 1) -> None:
        y, x = 2 + row * (CELL + 2), 1 + col * CELL
        img[y + inset : y + CELL - inset, x + inset : x + CELL - inset] = COLORS[color]

    def frame(row: int, col: int) -> None:
        y, x = 2 + row * (CELL + 2), 1 + col * CELL
        img[y : y + CELL, x : x + 2] = img[y : y + CELL, x + CELL - 2 : x + CELL] = COLORS[
            "critical"
        ]
        img[y : y + 2, x : x + CELL] = img[y + CELL - 2 : y + CELL, x : x + CELL] = COLORS[
            "critical"
        ]

    for floor in range(env.num_floors):
        chosen = env._chosen_doors[floor] if floor < len(env._chosen_doors) else None
        for door in range(env.num_doors):
            color = "door"
            if chosen == door:
                color = "correct" if door == env.correct_doors[floor] else "wrong"
            fill(floor, door, color)
        if floor < len(env._corridor_lengths):
            length = env._corridor_lengths[floor]
            walked = state.position if floor == state.floor else length
            for cell in range(length):
                fill(floor, env.num_doors + 1 + cell, "walked" if cell < walked else "corridor")
    if state.floor < env.num_floors:
        col = state.position - 1 + env.num_doors + 1 if state.position else None
        if col is None:  # at the doors: the agent stands over the whole row of doors
            for door in range(env.num_doors):
                fill(state.floor, door, "agent", inset=4)
                if env.critical:
                    frame(state.floor, door)
        else:
            fill(state.floor, col, "agent", inset=3)
    return img
