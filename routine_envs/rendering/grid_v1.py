"""Routine Grid v1's egocentric view (the image observation), its pictures and its text view.

The view is drawn from what the agent can know, never from the layout: the cells ahead of it up
to the next junction (or the exit), the first cell of each way out of that junction, and
*unseen* beyond (the next corridor's length is drawn when the junction is passed). Every way of
every junction looks alike, so the view is the same in every layout for the same actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from routine_envs.rendering.grid import COLORS as GRID_COLORS
from routine_envs.rendering.grid import HEADING_WORDS
from routine_envs.rendering.text_view import Call, Param, TextView, Tool

#: what a square of the view holds (index into :data:`VIEW_ENCODING`, :data:`VIEW_CHARS`).
UNSEEN, WALL, FLOOR, EXIT, GOAL, DEAD_END = range(6)
#: MiniGrid's (object, color, state) codes of each kind: unseen, grey wall, empty floor, a closed
#: yellow door (the exit, the same whatever the way taken), green goal, grey floor (a dead end).
VIEW_ENCODING = np.array(
    [(0, 0, 0), (2, 5, 0), (1, 0, 0), (4, 4, 1), (8, 1, 0), (3, 5, 0)], dtype=np.uint8
)
VIEW_CHARS = " #.DGx"
VIEW_WORDS = ("unseen", "a wall", "floor", "the exit door", "the goal", "a dead end")
#: the turn of each way out, counted from the agent's left: -1 left, 0 ahead, 1 right.
TURNS = {2: (-1, 1), 3: (-1, 0, 1)}
TURN_WORDS = {-1: "left", 0: "ahead", 1: "right"}
TILE = 12
VIEW_COLORS = np.array(
    [
        (20, 20, 20),
        GRID_COLORS["wall"],
        GRID_COLORS["corridor"],
        (230, 190, 40),
        GRID_COLORS["goal"],
        GRID_COLORS["dead_end"],
    ],
    dtype=np.uint8,
)


def view_kinds(
    view_size: int,
    branching: int,
    ahead: int | None,
    node: str,
    terminal_kind: int | None = None,
) -> np.ndarray:
    """The kinds of the ``(view_size, view_size)`` egocentric view (agent at the bottom row's
    middle, facing up; row 0 is farthest).

    Args:
        ahead: moves to the next node (0: the agent stands on a junction), ``None`` on the
            episode's last cell; node: ``"junction"`` or ``"exit"``, the node ahead;
            terminal_kind: ``GOAL`` or ``DEAD_END`` on the last cell.
    """
    v, mid = view_size, view_size // 2
    kinds = np.full((v, v), WALL, dtype=np.int8)

    def put(forward: int, right: int, kind: int) -> None:
        row, col = v - 1 - forward, mid + right
        if 0 <= row < v and 0 <= col < v:
            kinds[row, col] = kind

    if ahead is None:
        put(0, 0, terminal_kind if terminal_kind is not None else DEAD_END)
        return kinds
    for forward in range(ahead):
        put(forward, 0, FLOOR)
    if node == "exit":
        put(ahead, 0, EXIT)
        return kinds
    put(ahead, 0, FLOOR)
    for turn in TURNS[branching]:  # the first cell of every way out, then unseen
        if turn == 0:
            put(ahead + 1, 0, FLOOR)
            put(ahead + 2, 0, UNSEEN)
        else:
            put(ahead, turn, FLOOR)
            put(ahead, 2 * turn, UNSEEN)
    return kinds


def view_text(kinds: np.ndarray) -> str:
    """The view's squares as characters, one row per line (the agent: ``A``)."""
    v = kinds.shape[0]
    rows = []
    for r in range(v):
        chars = [VIEW_CHARS[int(k)] for k in kinds[r]]
        if r == v - 1 and kinds[r, v // 2] == FLOOR:
            chars[v // 2] = "A"
        rows.append("".join(chars))
    return "\n".join(rows)


def decode_view(obs: np.ndarray) -> np.ndarray:
    """The kinds of an image observation (inverse of ``VIEW_ENCODING[kinds]``)."""
    view = np.asarray(obs, dtype=np.int64)
    kinds = np.full(view.shape[:2], WALL, dtype=np.int8)
    for kind, code in enumerate(VIEW_ENCODING):
        kinds[np.all(view == code, axis=-1)] = kind
    return kinds


# ------------------------------------------------------------------------ pictures (people)
def render_grid_v1(dynamics: Any, state: Any, history: Any, mode: str) -> str | np.ndarray:
    """The renderer of Routine Grid v1 (``"ansi"`` or ``"rgb_array"``): the agent's view and the
    ways taken, marked right (``+``) or wrong (``x``): a picture for people, which shows what
    the observation hides."""
    kinds = dynamics.view_kinds(state)
    path = state.path
    marks = [
        f"{TURN_WORDS[TURNS[dynamics.branching][way]]}{'+' if way == right else 'x'}"
        for way, right in zip(path, dynamics.correct_ways, strict=False)
    ]
    if mode == "ansi":
        where = dynamics.describe(state)
        critical = "critical" if dynamics.is_critical(state) else "routine"
        header = (
            f"Routine Grid v1  step {len(history.actions)}  {critical}  "
            f"rho={dynamics.decision_density:.4f}"
        )
        ways = "ways taken: " + (" ".join(marks) if marks else "none")
        lines = [header, ways, view_text(kinds)]
        if dynamics.obs_mode == "vector":  # (the image mode's words are the view itself)
            lines.insert(1, where)
        return "\n".join(lines) + "\n"
    image = np.kron(VIEW_COLORS[kinds], np.ones((TILE, TILE, 1), dtype=np.uint8))
    v = kinds.shape[0]
    y, x = np.mgrid[0:TILE, 0:TILE] + 0.5
    triangle = (y / TILE >= 0.2) & (y / TILE <= 0.85) & (np.abs(x / TILE - 0.5) <= 0.4 * y / TILE)
    if kinds[v - 1, v // 2] == FLOOR:
        cell = image[(v - 1) * TILE :, (v // 2) * TILE : (v // 2 + 1) * TILE]
        cell[triangle] = GRID_COLORS["agent"]
    strip = np.full((TILE, v * TILE, 3), 255, dtype=np.uint8)  # right/wrong of each way taken
    for j, (way, right) in enumerate(zip(path, dynamics.correct_ways, strict=False)):
        if (j + 1) * TILE <= strip.shape[1]:
            color = GRID_COLORS["goal"] if way == right else GRID_COLORS["lava"]
            strip[2:-2, j * TILE + 2 : (j + 1) * TILE - 2] = color
    return np.concatenate([strip, image], axis=0)


# ------------------------------------------------------------------------------ text view
def vector_text(dynamics: Any, obs: np.ndarray) -> str:
    """The text of a Routine Grid v1 vector observation (a function of it alone)."""
    obs = np.asarray(obs, dtype=np.float64)
    j, b = dynamics.num_junctions, dynamics.branching
    ways = [TURN_WORDS[TURNS[b][int(np.argmax(obs[j + 12 + k * b : j + 12 + (k + 1) * b]))]]
            for k in range(j) if obs[j + 12 + k * b : j + 12 + (k + 1) * b].any()]  # fmt: skip
    taken = "Ways taken so far: " + (", ".join(ways) if ways else "none") + "."
    if obs[j + 10] > 0.5:
        end = "the goal" if obs[j + 11] > 0.5 else "a dead end"
        return f"You walked through the exit door: {end}. The episode is over. {taken}"
    segment = int(np.argmax(obs[:j]))
    heading = HEADING_WORDS[int(np.argmax(obs[j + 3 : j + 7]))]
    if obs[j] > 0.5:
        outs = []
        for k, turn in enumerate(TURNS[b]):
            outs.append(f"way {k}: {TURN_WORDS[turn]}")
        return (
            f"At junction {segment + 1} of {j}, heading {heading}. Ways out, counted from your "
            f"left: {', '.join(outs)}; they all look alike. {taken} Choose one."
        )
    scale = dynamics.position_scale
    walked, left = round(obs[j + 1] / scale), round(obs[j + 2] / scale)
    nxt = "the exit door" if segment == j - 1 else f"junction {segment + 2}"
    return (
        f"In the corridor after junction {segment + 1} of {j}, heading {heading}: {walked} "
        f"moves along it, {left} to {nxt}. Every action moves on. {taken}"
    )


def image_text(obs: np.ndarray) -> str:
    """The image observation as characters (you: ``A``, facing up)."""
    return "Your view (you are A, facing up):\n" + view_text(decode_view(obs))


def grid_v1_view(dynamics: Any) -> TextView:
    """The text view of Routine Grid v1 in its observation mode."""
    b = dynamics.branching
    way = Param("way", "integer", tuple(range(b)), "the way out, counted from your left")
    tools = (
        Tool("take_way", "Take a way out of a junction (in a corridor it moves on).", (way,)),
        Tool("walk", "Move one cell on (in a corridor; the same as take_way 0)."),
    )
    calls: tuple[Call, ...] = tuple(("take_way", (k,)) for k in range(b))
    rules = [
        f"The maze has {dynamics.num_junctions} junctions, each with {b} ways out that all look "
        "alike and lead on to a corridor and the next junction; one way of each junction is "
        "the right one, the same in every episode.",
        "In a corridor every action moves one cell on. After the last junction's corridor "
        "you walk through the exit door, which ends the episode.",
        "Behind the exit door is the goal when every way taken was right (reward 1), else a "
        "dead end (reward 0); nothing shows before whether a way was right."
        if dynamics.reward == "success"
        else "The reward, paid at the exit, is the share of junctions where the right way "
        "was taken; nothing shows before whether a way was right.",
    ]
    if dynamics.obs_mode == "image":
        rules.append(
            "You see the cells ahead of you: # wall, . floor, D the exit door, blank unseen."
        )
        describe = image_text
    else:

        def describe(obs: Any) -> str:
            return vector_text(dynamics, obs)

    return TextView(
        name="Routine Grid",
        task="You are an agent walking through a maze to its goal.",
        rules=tuple(rules),
        tools=tools,
        calls=calls,
        aliases={("walk", ()): 0},
        describe=describe,
    )
