"""Text and RGB pictures of a Routine Grid maze, and a dependency-free PNG writer."""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
