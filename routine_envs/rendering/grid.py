"""Text and RGB pictures of a Routine Grid maze, its words and MiniGrid codes, its text view for
language-model agents, and a dependency-free PNG writer."""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from routine_envs.rendering.text_view import Call, Param, TextView, Tool

#: the character of each cell kind (wall, corridor, junction, goal, lava, dead end) in text maps.
KIND_CHARS = "#.+G~x"
#: MiniGrid's (object, color, state) encoding of each kind, for the image observation.
MINIGRID_ENCODING = np.array(
    [
        (2, 5, 0),  # wall: grey wall
        (1, 0, 0),  # corridor: empty
        (1, 0, 0),  # junction: empty (its shape shows the branches)
        (8, 1, 0),  # goal: green goal
        (9, 0, 0),  # lava: red lava
        (3, 5, 0),  # dead end: grey floor
    ],
    dtype=np.uint8,
)
#: a move's turn relative to the heading it is taken from -> the word for that way out.
TURN_WORDS = {3: "left", 0: "ahead", 1: "right"}
HEADING_WORDS = ("east", "south", "west", "north")
KIND_WORDS = ("a wall", "corridor", "a junction", "the goal", "lava", "a dead end")

TILE = 10  # pixels per grid square
COLORS = {
    "wall": (60, 60, 60),
    "corridor": (235, 235, 235),
    "junction": (205, 205, 205),
    "visited": (175, 200, 230),
    "goal": (60, 170, 75),
    "lava": (215, 60, 40),
    "dead_end": (110, 100, 90),
    "agent": (30, 80, 200),
    "critical": (250, 200, 0),
}
KIND_COLORS = ("wall", "corridor", "junction", "goal", "lava", "dead_end")
ARROWS = ">v<^"  # agent heading: east, south, west, north


def render_grid(dynamics: Any, state: int, history: Any, mode: str) -> str | np.ndarray:
    """The renderer of Routine Grid: ``render_mode`` ``"ansi"`` or ``"rgb_array"``."""
    if mode == "ansi":
        return render_grid_ansi(dynamics, state, history)
    return render_grid_rgb(dynamics, state, history)


def render_grid_ansi(dynamics: Any, state: int, history: Any) -> str:
    """The maze as text: ``#`` wall, ``.`` corridor, ``+`` junction, ``*`` a critical cell, ``G``
    goal, ``~`` lava, ``x`` dead end, the agent as an arrow of its heading; a header line.

    Args:
        dynamics: a ``GridDynamics``; state: its current state (a ``state_id``); history: the
            episode's ``EpisodeHistory``.
    """
    layout = dynamics.layout
    cell = layout.cells[state]
    rows = layout.chars()
    for sid, other in enumerate(layout.cells):
        if dynamics.is_critical(sid):
            rows[other.row][other.col] = "*"
    rows[cell.row][cell.col] = ARROWS[cell.heading]
    header = (
        f"Routine Grid  step {len(history.actions)}  junction "
        f"{cell.junction + 1}/{dynamics.num_junctions}  "
        f"{'critical' if dynamics.is_critical(state) else 'routine'}  "
        f"gap={dynamics.action_gap(state):.3g}  rho={dynamics.decision_density:.4f}"
    )
    return "\n".join([header, *("".join(r) for r in rows)]) + "\n"


def layout_rgb(
    dynamics: Any, agent: int | None = None, visited: Sequence[int] = (), tile: int = TILE
) -> np.ndarray:
    """An ``(height * tile, width * tile, 3)`` uint8 picture of the maze grid of ``dynamics``
    (a ``GridDynamics``): critical cells framed in yellow, ``visited`` cells tinted, the agent
    (``state_id`` ``agent``) as a blue triangle pointing its way."""
    layout = dynamics.layout
    palette = np.array([COLORS[name] for name in KIND_COLORS], dtype=np.uint8)
    img = np.kron(palette[layout.kinds], np.ones((tile, tile, 1), dtype=np.uint8))
    t, b = tile, max(1, tile // 8)

    def box(r: int, c: int) -> tuple[slice, slice]:
        return slice(r * t, (r + 1) * t), slice(c * t, (c + 1) * t)

    for here, there in itertools.pairwise(visited):  # cells walked, doorways too
        a, b_ = layout.cells[here], layout.cells[there]
        img[box(a.row, a.col)] = COLORS["visited"]
        if b_.kind in (1, 2):  # corridor, junction (not the terminal square)
            img[box((a.row + b_.row) // 2, (a.col + b_.col) // 2)] = COLORS["visited"]
    for sid, cell in enumerate(layout.cells):
        if dynamics.is_critical(sid):
            ys, xs = box(cell.row, cell.col)
            frame = np.zeros((t, t), dtype=bool)
            frame[: 2 * b], frame[-2 * b :], frame[:, : 2 * b], frame[:, -2 * b :] = (True,) * 4
            img[ys, xs][frame] = COLORS["critical"]
    if agent is not None:
        cell = layout.cells[agent]
        y, x = np.mgrid[0:t, 0:t] + 0.5
        u, v = x / t, y / t - 0.5  # triangle pointing east, then turned to the heading
        mask = (u >= 0.2) & (u <= 0.85) & (np.abs(v) <= 0.4 * (0.85 - u) / 0.65)
        mask = np.rot90(mask, (4 - cell.heading) % 4)
        ys, xs = box(cell.row, cell.col)
        img[ys, xs][mask] = COLORS["agent"]
    return img


def render_grid_rgb(dynamics: Any, state: int, history: Any) -> np.ndarray:
    """The current frame: the maze, the cells visited this episode and the agent."""
    return layout_rgb(dynamics, agent=state, visited=history.states)


def write_png(path: str | Path, image: np.ndarray) -> None:
    """Write an ``(H, W, 3)`` uint8 array as an 8-bit RGB PNG (stdlib only)."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width, _ = image.shape
    raw = b"".join(b"\x00" + image[r].tobytes() for r in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    Path(path).write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def save_layout_png(dynamics: Any, path: str | Path, tile: int = TILE) -> None:
    """Save a picture of the maze of ``dynamics`` (a ``GridDynamics``) with the agent at the
    start (the docs' layout figure)."""
    write_png(path, layout_rgb(dynamics, agent=dynamics.layout.start, tile=tile))


# ---------------------------------------------------------------------------- text view
def grid_core_text(core: Any, obs: np.ndarray) -> str:
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


def grid_image_text(core: Any, obs: np.ndarray) -> str:
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


def grid_rules(core: Any) -> list[str]:
    """The rules of a Routine Grid maze, one sentence each."""
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


def grid_tools(core: Any) -> tuple[tuple[Tool, ...], tuple[Call, ...], dict]:
    """The tools, the call of every action and the aliases of a Routine Grid maze."""
    b = core.branching
    way = Param("way", "integer", tuple(range(b)), "the way out, counted from your left")
    tools = (
        Tool("take_way", "Take a way out of a junction (in a corridor it moves on).", (way,)),
        Tool("walk", "Move one cell on (in a corridor; the same as take_way 0)."),
    )
    return tools, tuple(("take_way", (k,)) for k in range(b)), {("walk", ()): 0}


def grid_view(dynamics: Any) -> TextView:
    """The text view of a ``GridDynamics`` in its observation mode (vector or image)."""
    tools, calls, aliases = grid_tools(dynamics)
    rules = grid_rules(dynamics)
    if dynamics.obs_mode == "image":
        rules.append(
            "You see the cells ahead of you: # wall, . open floor, G goal, ~ lava, x dead end."
        )
        describe: Callable[[Any], str] = lambda obs: grid_image_text(dynamics, obs)  # noqa: E731
    else:
        describe = lambda obs: grid_core_text(dynamics, obs)  # noqa: E731
    return TextView(
        name="Routine Grid",
        task="You are an agent walking through a maze to its goal.",
        rules=tuple(rules),
        tools=tools,
        calls=calls,
        aliases=aliases,
        describe=describe,
    )
