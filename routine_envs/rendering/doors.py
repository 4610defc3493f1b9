"""Text and RGB pictures of a Diluted Doors episode, and its text view for language-model
agents."""

from __future__ import annotations

from typing import Any

import numpy as np

from routine_envs.rendering.text_view import Param, TextView, Tool

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


def render_doors(dynamics: Any, state: Any, history: Any, mode: str) -> str | np.ndarray:
    """The renderer of Diluted Doors: ``render_mode`` ``"ansi"`` or ``"rgb_array"``."""
    if mode == "ansi":
        return render_doors_ansi(dynamics, state, history)
    return render_doors_rgb(dynamics, state, history)


def chosen_doors(history: Any) -> tuple[list[int], list[int]]:
    """From an episode history: the door chosen on each floor passed so far, and the corridor
    length each of those doors opened (0: none)."""
    doors, lengths = [], []
    for i, action in enumerate(history.actions):
        before, after = history.states[i], history.states[i + 1]
        if before.position == 0:  # a door was chosen
            doors.append(action)
            lengths.append(after.corridor_length if after.floor == before.floor else 0)
    return doors, lengths


def render_doors_ansi(dynamics: Any, state: Any, history: Any) -> str:
    """One line per floor: the doors (``[k]`` the one chosen, ``+``/``x`` right or wrong, ``@``
    the agent deciding, ``!`` a critical state) and the corridor (``=`` walked, ``@`` the agent).

    Args:
        dynamics: a ``DoorsDynamics``; state: its current ``DoorsState``; history: the episode's
            ``EpisodeHistory``.
    """
    env = dynamics
    chosen, corridor_lengths = chosen_doors(history)
    critical = dynamics.is_critical(state)
    header = (
        f"Diluted Doors  step {len(history.actions)}  floor "
        f"{min(state.floor, env.num_floors - 1) + 1}/{env.num_floors}  "
        f"correct {dynamics.num_correct(state)}  reward={env.reward}  "
        f"rho={env.decision_density:.4f}"
    )
    lines = [header]
    for floor in range(env.num_floors):
        doors = []
        here = floor == state.floor
        for door in range(env.num_doors):
            if floor < len(chosen) and chosen[floor] == door:
                mark = "+" if door == env.correct_doors[floor] else "x"
                doors.append(f"[{door}]{mark}")
            else:
                doors.append(f" {door}  ")
        door_mark = ("@!" if critical else "@ ") if here and state.position == 0 else "  "
        if floor < len(corridor_lengths):
            length = corridor_lengths[floor]
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
                if dynamics.num_correct(state) == env.num_floors
                else f"{dynamics.num_correct(state)}/{env.num_floors} doors correct"
            )
        )
    return "\n".join(lines) + "\n"


def render_doors_rgb(dynamics: Any, state: Any, history: Any) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 picture: a row per floor, doors on the left, the corridor on the
    right; the agent in blue, chosen doors green (correct) or red (wrong), a yellow frame around
    the agent when its state is critical."""
    env = dynamics
    chosen_list, corridor_lengths = chosen_doors(history)
    critical = dynamics.is_critical(state)
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
        chosen = chosen_list[floor] if floor < len(chosen_list) else None
        for door in range(env.num_doors):
            color = "door"
            if chosen == door:
                color = "correct" if door == env.correct_doors[floor] else "wrong"
            fill(floor, door, color)
        if floor < len(corridor_lengths):
            length = corridor_lengths[floor]
            walked = state.position if floor == state.floor else length
            for cell in range(length):
                fill(floor, env.num_doors + 1 + cell, "walked" if cell < walked else "corridor")
    if state.floor < env.num_floors:
        col = state.position - 1 + env.num_doors + 1 if state.position else None
        if col is None:  # at the doors: the agent stands over the whole row of doors
            for door in range(env.num_doors):
                fill(state.floor, door, "agent", inset=4)
                if critical:
                    frame(state.floor, door)
        else:
            fill(state.floor, col, "agent", inset=3)
    return img


# ---------------------------------------------------------------------------- text view
def doors_view(dynamics: Any, version: str) -> TextView:
    """The text view of Diluted Doors ``version`` (``"v0"``: its observation shows the doors
    right so far; ``"v1"``: in its ``observation`` mode) for a ``DoorsDynamics`` or
    ``PathDoorsDynamics``; the text is a function of the observation alone."""
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
