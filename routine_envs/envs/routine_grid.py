"""Routine Grid: gridworld navigation whose decision density is set by the corridor length."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.oracle import Outcome
from routine_envs.rendering.grid import (
    HEADING_WORDS,
    KIND_CHARS,
    KIND_WORDS,
    MINIGRID_ENCODING,
    TURN_WORDS,
    grid_view,
    render_grid,
)
from routine_envs.rendering.text_view import TextView

#: the dithering cost that ``soft_routine=True`` stands for.
DEFAULT_SOFT_COST = 0.01
OBS_MODES = ("vector", "image")

# Headings, MiniGrid's order: index -> (row step, column step).
EAST, SOUTH, WEST, NORTH = 0, 1, 2, 3
DIR_VEC = ((0, 1), (1, 0), (0, -1), (-1, 0))
# Cell kinds (their characters in ``GridLayout.desc``, ``KIND_CHARS``, and their MiniGrid codes
# in the image observation, ``MINIGRID_ENCODING``, are in :mod:`routine_envs.rendering.grid`).
WALL, CORRIDOR, JUNCTION, GOAL, LAVA, DEAD_END = range(6)
TERMINAL_KINDS = (GOAL, LAVA, DEAD_END)


class GridCell(NamedTuple):
    """What a ``state_id`` of Routine Grid stands for: the agent's cell and heading.

    ``row``/``col`` in the layout grid; ``kind`` one of the cell kinds (``CORRIDOR``,
    ``JUNCTION``, ``GOAL``, ``LAVA``, ``DEAD_END``); ``heading`` 0..3 = east, south, west, north
    (the direction of the move into the cell); ``junction`` the index of the last junction at or
    behind the cell; ``walked`` moves since that junction (0 at a junction); ``left`` moves
    until this corridor ends (0 at a junction and on terminal cells).
    """

    row: int
    col: int
    kind: int
    heading: int
    junction: int
    walked: int
    left: int


@dataclass(frozen=True)
class GridLayout:
    """A Routine Grid maze: the grid and the one-way moves between its cells.

    The grid is drawn MiniGrid-maze style: the agent's cells sit at odd (row, column), with a
    doorway (an open square) between two cells joined by a move and a wall square between any
    other two, so open squares touch only along the corridors. Cells are numbered in row-major
    order; that number is the ``state_id``.

    Attributes:
        kinds: kind of every grid square, int8 array of shape ``(height, width)``; doorways are
            ``CORRIDOR``.
        cells: the :class:`GridCell` of every ``state_id``.
        successors: per ``state_id``, the next ``state_id`` for each action, or ``()`` on a
            terminal cell: ``branching`` entries at a junction, one (any action) in a corridor.
        start: ``state_id`` of junction 0, where every episode starts.
        spine: ``state_id``s of the path from the start to the goal (both included).
        corridor_lengths: ``L_j`` of every junction, shape ``(num_junctions,)``.
        correct_actions: the action that continues towards the goal at each junction.
    """

    kinds: np.ndarray
    cells: tuple[GridCell, ...]
    successors: tuple[tuple[int, ...], ...]
    start: int
    spine: tuple[int, ...]
    corridor_lengths: tuple[int, ...]
    correct_actions: tuple[int, ...]

    @property
    def desc(self) -> tuple[str, ...]:
        """The grid as text, one string per row (FrozenLake's ``desc``): ``#`` wall, ``.``
        corridor, ``+`` junction, ``S`` the start junction, ``G`` goal, ``~`` lava, ``x`` dead
        end."""
        rows = self.chars()
        start = self.cells[self.start]
        rows[start.row][start.col] = "S"
        return tuple("".join(row) for row in rows)

    def chars(self) -> list[list[str]]:
        """The grid as a fresh character array, one list per row: :attr:`desc` without the start
        mark (``+`` there like any junction), for pictures to draw on."""
        return [[KIND_CHARS[k] for k in row] for row in self.kinds.tolist()]


def _feasible_exits(branching: int, length: int) -> list[tuple[tuple[int, ...], int]]:
    """Every ``(exits, correct exit)`` a junction with corridors of ``length`` cells can have.

    A junction is entered heading east, so its ways out are north, east and south (in that order
    from the agent's left). Turning north or south takes one corridor cell, and beside an east
    dead end a second one (see :func:`make_layout`).
    """
    exit_sets = [(NORTH, EAST, SOUTH)] if branching == 3 else [(NORTH, EAST), (NORTH, SOUTH)]
    if branching == 2:
        exit_sets.append((EAST, SOUTH))
    out = []
    for exits in exit_sets:
        for correct in exits:
            if correct == EAST or (length >= 1 and (EAST not in exits or length >= 2)):
                out.append((exits, correct))
    return out


#: documented bounds (the maze's picture grows like num_junctions * corridor_length**2 cells):
#: larger configurations are refused at construction with a ``ValueError``.
MAX_JUNCTIONS = 100
MAX_CORRIDOR_LENGTH = 200
MAX_VIEW_SIZE = 63


def make_layout(
    num_junctions: int, branching: int, corridor_range: tuple[int, int], layout_seed: int
) -> GridLayout:
    """Build the maze of ``layout_seed`` (deterministic; arguments assumed valid).

    Junction ``j`` owns a band of columns: it is entered from the west; its correct branch is a
    corridor of ``L_j`` cells to junction ``j + 1`` (the goal after the last), which starts the
    next band; every other branch is a corridor of ``L_j`` cells ending in lava or a dead end.
    North and south branches go straight up or down; a north (south) correct branch takes one
    step north (south) and then runs east; an east dead end beside it turns away from it at once.
    Bands never share a column, so branches never overlap (they may touch across a band edge:
    the grid puts a wall square between cells that touch without a move joining them).
    """
    rng = np.random.default_rng(layout_seed)
    low, high = corridor_range
    lengths = [int(n) for n in rng.integers(low, high + 1, size=num_junctions)]
    cells: dict[tuple[int, int], list[Any]] = {}  # position -> [kind, heading, j, walked, left]
    moves: dict[tuple[int, int], list[tuple[int, int]]] = {}
    correct_actions = []

    def add(pos: tuple[int, int], kind: int, heading: int, j: int, walked: int, left: int) -> None:
        if pos in cells:
            raise AssertionError(f"layout overlap at {pos}")  # unreachable by construction
        cells[pos] = [kind, heading, j, walked, left]
        moves[pos] = []

    pos = (0, 0)
    add(pos, JUNCTION, EAST, 0, 0, 0)
    spine = [pos]
    for j, length in enumerate(lengths):
        options = _feasible_exits(branching, length)
        exits, correct = options[int(rng.integers(len(options)))]
        correct_actions.append(exits.index(correct))
        junction = pos
        for direction in exits:
            if direction == correct:
                path = [direction] + [EAST] * length if direction != EAST else [EAST] * (length + 1)
            elif direction == EAST:  # beside a north (south) correct branch: turn south (north)
                path = [EAST] + [SOUTH if correct == NORTH else NORTH] * length
            else:
                path = [direction] * (length + 1)
            here = junction
            for step, heading in enumerate(path, start=1):
                dr, dc = DIR_VEC[heading]
                nxt = (here[0] + dr, here[1] + dc)
                last = step == len(path)
                if direction == correct:
                    if last and j == num_junctions - 1:
                        add(nxt, GOAL, heading, j, step, 0)
                    elif last:
                        add(nxt, JUNCTION, heading, j + 1, 0, 0)
                    else:
                        add(nxt, CORRIDOR, heading, j, step, length + 1 - step)
                    spine.append(nxt)
                else:
                    kind = (LAVA if rng.random() < 0.5 else DEAD_END) if last else CORRIDOR
                    add(nxt, kind, heading, j, step, 0 if last else length + 1 - step)
                moves[here].append(nxt)
                here = nxt
        pos = spine[-1]

    # Draw MiniGrid-maze style: cell (r, c) at (2r + 1, 2c + 1) of the grid, with a doorway
    # between two cells that a move joins and a wall between any others that touch.
    min_r = min(r for r, _ in cells)
    min_c = min(c for _, c in cells)
    height = 2 * (max(r for r, _ in cells) - min_r) + 3
    width = 2 * (max(c for _, c in cells) - min_c) + 3
    order = sorted(cells)
    ids = {p: i for i, p in enumerate(order)}
    kinds = np.full((height, width), WALL, dtype=np.int8)
    grid_cells = []
    for r, c in order:
        kind, heading, j, walked, left = cells[(r, c)]
        row, col = 2 * (r - min_r) + 1, 2 * (c - min_c) + 1
        kinds[row, col] = kind
        grid_cells.append(GridCell(row, col, kind, heading, j, walked, left))
        for nr, nc in moves[(r, c)]:
            kinds[row + nr - r, col + nc - c] = CORRIDOR
    return GridLayout(
        kinds=kinds,
        cells=tuple(grid_cells),
        successors=tuple(tuple(ids[n] for n in moves[p]) for p in order),
        start=ids[(0, 0)],
        spine=tuple(ids[p] for p in spine),
        corridor_lengths=tuple(lengths),
        correct_actions=tuple(correct_actions),
    )


def _soft_cost(value: Any) -> float:
    """``soft_routine`` as a cost: ``False`` -> 0, ``True`` -> the default, a number in [0, 1]."""
    if isinstance(value, (bool, np.bool_)):
        return DEFAULT_SOFT_COST if value else 0.0
    if not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(
            f"soft_routine must be a bool or a cost in [0, 1] (e.g. 0.01), got {value!r}"
        )
    return float(value)


def _tolerance(value: Any) -> float:
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Real)
        or not 0.0 <= float(value) < 1.0
    ):
        raise ValueError(f"critical_tolerance must be a number in [0, 1), got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class GridDynamics(Dynamics[int, np.ndarray]):
    """The exact MDP of Routine Grid (see :class:`RoutineGridV0Env` for the rules).

    A state is its ``state_id``: the row-major number of the agent's cell in :attr:`layout`
    (:class:`GridLayout`; :meth:`cell` gives its :class:`GridCell`). The fields are the
    configuration (keyword-only), validated and normalized: ``corridor_length`` an int or a
    ``(low, high)`` pair, ``soft_routine`` the dithering cost (``True`` -> 0.01, ``False`` ->
    0.0) and ``critical_tolerance`` a float. Derived: :attr:`layout`, :attr:`corridor_range`
    and :attr:`step_cost` (the cost again, under the name the env has always used).
    """

    num_junctions: int = 3
    branching: int = 3
    corridor_length: int | tuple[int, int] = 5
    layout_seed: int = 0
    soft_routine: bool | float = False
    #: per configuration (the base class's is a constant): ``critical`` is the exact optimal
    #: action gap above it.
    critical_tolerance: float = 0.1  # type: ignore[misc]
    obs_mode: str = "vector"
    view_size: int = 7

    density_kwarg = "corridor_length"
    density_rule = "corridor_length L: rho = 1/(1+L)"
    small_config: ClassVar[dict[str, Any]] = {"num_junctions": 2, "corridor_length": 2}
    render_modes = ("ansi", "rgb_array", "human")
    renderer = staticmethod(render_grid)
    #: the heading after a junction shows whether it was right (kept for comparison: v1 hides it)
    hides_outcome = False

    def __post_init__(self) -> None:
        junctions = validation.integer(
            "num_junctions", self.num_junctions, minimum=1, maximum=MAX_JUNCTIONS
        )
        branching = validation.integer("branching", self.branching, minimum=2, maximum=3)
        low, high = validation.int_or_range(
            "corridor_length", self.corridor_length, maximum=MAX_CORRIDOR_LENGTH
        )
        if branching == 3 and low < 2:
            raise ValueError(
                f"corridor_length must be >= 2 with branching=3 (room for a branch to turn), "
                f"got {self.corridor_length!r}"
            )
        seed = validation.integer("layout_seed", self.layout_seed, minimum=0)
        cost = _soft_cost(self.soft_routine)
        tolerance = _tolerance(self.critical_tolerance)
        obs_mode = validation.choice("obs_mode", self.obs_mode, OBS_MODES)
        view_size = validation.integer(
            "view_size", self.view_size, minimum=3, maximum=MAX_VIEW_SIZE
        )
        if view_size % 2 == 0:
            raise ValueError(f"view_size must be odd, got {view_size}")
        layout = make_layout(junctions, branching, (low, high), seed)
        self._derive(
            num_junctions=junctions,
            branching=branching,
            corridor_length=low if low == high else (low, high),
            layout_seed=seed,
            soft_routine=cost,
            critical_tolerance=tolerance,
            obs_mode=obs_mode,
            view_size=view_size,
            #: the maze (fixed by the configuration).
            layout=layout,
            #: the configured corridor lengths as a ``(low, high)`` pair.
            corridor_range=(low, high),
            #: the dithering cost of a corridor action other than 0 (0: hard routine).
            step_cost=cost,
        )
        self._derive(
            _outcome_table=self._build_outcomes(),
            _obs_table=self._vector_observations() if obs_mode == "vector" else (),
            _views={},  # memo of egocentric_view (derived, read-only arrays)
        )
        # The exact action gap and ``critical`` of every state_id by their definitions (from
        # the model), as tuples: the lookups ``step`` does for every state it reaches.
        self._derive(
            _gap_values=tuple(self.action_gaps().tolist()),
            _critical_flags=tuple(self.critical_table().tolist()),
        )

    # ----------------------------------------------------------------------------- sizes
    @property
    def num_states(self) -> int:
        return len(self.layout.cells)

    @property
    def num_actions(self) -> int:
        return self.branching

    @property
    def observation_space(self) -> gym.spaces.Box:
        if self.obs_mode == "vector":
            return gym.spaces.Box(0.0, 1.0, (self.num_junctions + 13,), np.float32)
        v = self.view_size
        return gym.spaces.Box(0, 255, (v, v, 3), np.uint8)

    @property
    def approximate_routine(self) -> bool:  # type: ignore[override]
        """Routine is approximate exactly when corridor actions carry a dithering cost."""
        return self.step_cost > 0

    @property
    def reports_action_gap(self) -> bool:
        """Routine Grid has always reported ``action_gap`` on every step, hard routine (gaps
        exactly 0 or 1) included, not only when its routine is approximate."""
        return True

    @property
    def decision_density(self) -> float:
        """Exact rho of an episode that reaches the goal: critical states on the way / its
        length (``1 / (1 + L)`` for a fixed corridor length ``L`` and the default tolerance)."""
        path = self.layout.spine[:-1]
        return sum(self._critical_flags[s] for s in path) / len(path)

    @property
    def max_episode_length(self) -> int:
        """Steps of an episode that reaches the goal, the longest possible."""
        return len(self.layout.spine) - 1

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, int]]:
        return ((1.0, self.layout.start),)

    def outcomes(self, state: int, action: int) -> Sequence[Outcome]:
        return self._outcome_table[state][action]

    def state_id(self, state: int) -> int:
        return state

    def state_from_id(self, state_id: int) -> int:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        return int(state_id)

    def cell(self, state: int) -> GridCell:
        """The :class:`GridCell` (position, kind, heading, ...) of ``state``."""
        return self.layout.cells[self.state_from_id(state)]

    def observe(self, state: int) -> np.ndarray:
        if self._obs_table:
            return self._obs_table[state].copy()
        return self.egocentric_view(state).copy()

    def is_critical(self, state: int) -> bool:
        """A lookup in the flags computed once from the exact action gaps (a test checks it
        against :meth:`Dynamics.is_critical`)."""
        return self._critical_flags[state]

    def action_gap(self, state: int) -> float:
        """A lookup in the exact action gaps computed once from the model (as the base's)."""
        return self._gap_values[state]

    def is_success(self, state: int) -> bool:
        return self.layout.cells[state].kind == GOAL

    def describe(self, state: int) -> str:
        """Where the agent is and what it sees of the way on: heading, junction or corridor,
        the ways out of a junction (not where they lead) and the cell the next move enters."""
        cell = self.cell(state)
        heading = HEADING_WORDS[cell.heading]
        junction = f"junction {cell.junction + 1} of {self.num_junctions}"
        if cell.kind == GOAL:
            return f"on the goal, heading {heading}: the maze is solved"
        if cell.kind == LAVA:
            return f"in lava, heading {heading}: the episode is over"
        if cell.kind == DEAD_END:
            return f"at a dead end, heading {heading}: the episode is over"
        nexts = self.layout.successors[state]
        if cell.kind == JUNCTION:
            ways = []
            for action, nxt in enumerate(nexts):
                out = self.layout.cells[nxt].heading
                turn = TURN_WORDS[(out - cell.heading) % 4]
                ways.append(f"action {action}: {turn} ({HEADING_WORDS[out]})")
            return f"at {junction}, heading {heading}; ways out: {', '.join(ways)}"
        ahead = KIND_WORDS[self.layout.cells[nexts[0]].kind]
        cost = f" (actions other than 0 cost {self.step_cost:g})" if self.step_cost else ""
        return (
            f"in the corridor after {junction}, heading {heading}, {cell.walked} of "
            f"{cell.walked + cell.left} moves along it; every action moves on{cost}; "
            f"next: {ahead}"
        )

    def build_text_view(self) -> TextView:
        """Routine Grid in words, in the observation mode
        (:func:`~routine_envs.rendering.grid.grid_view`)."""
        return grid_view(self)

    # ----------------------------------------------------------------------- observations
    def egocentric_view(self, state_id: int) -> np.ndarray:
        """The image observation of ``state_id``, shape ``(view_size, view_size, 3)`` uint8
        (read-only, shared: copy it to modify)."""
        cached = self._views.get(state_id)
        if cached is None:
            v, cell = self.view_size, self.layout.cells[state_id]
            ahead = (v - 1 - np.arange(v))[:, None]  # cells ahead of the agent, by view row
            right = (np.arange(v) - v // 2)[None, :]  # cells to its right, by view column
            (fr, fc), (rr, rc) = DIR_VEC[cell.heading], DIR_VEC[(cell.heading + 1) % 4]
            rows = cell.row + ahead * fr + right * rr + v
            cols = cell.col + ahead * fc + right * rc + v
            padded = np.pad(self.layout.kinds, v, constant_values=WALL)
            cached = MINIGRID_ENCODING[padded[rows, cols]]
            cached.flags.writeable = False
            self._views[state_id] = cached
        return cached

    # ----------------------------------------------------------------------------- tables
    def _build_outcomes(self) -> tuple[tuple[tuple[Outcome, ...], ...], ...]:
        """Per ``state_id`` and action, the single deterministic outcome (``()`` if terminal)."""
        cells, table = self.layout.cells, []
        for sid, nexts in enumerate(self.layout.successors):
            row = []
            for a in range(self.branching if nexts else 0):
                nxt = nexts[a] if len(nexts) > 1 else nexts[0]
                kind = cells[nxt].kind
                reward = 1.0 if kind == GOAL else 0.0
                if cells[sid].kind == CORRIDOR and a != 0:
                    reward -= self.step_cost
                row.append(((1.0, nxt, reward, kind in TERMINAL_KINDS),))
            table.append(tuple(row))
        return tuple(table)

    def _vector_observations(self) -> tuple[np.ndarray, ...]:
        layout, n = self.layout, self.num_junctions
        height, width = layout.kinds.shape
        scale = 1.0 / (self.corridor_range[1] + 1)
        out = []
        for cell in layout.cells:
            obs = np.zeros(n + 13, dtype=np.float32)
            obs[cell.junction] = 1.0
            obs[n] = cell.kind == JUNCTION
            obs[n + 1] = cell.walked * scale
            obs[n + 2] = cell.left * scale
            obs[n + 3 + cell.heading] = 1.0
            for i, turn in enumerate((-1, 0, 1)):
                dr, dc = DIR_VEC[(cell.heading + turn) % 4]
                obs[n + 7 + i] = layout.kinds[cell.row + dr, cell.col + dc] != WALL
            obs[n + 10] = cell.row / (height - 1)
            obs[n + 11] = cell.col / (width - 1)
            obs[n + 12] = cell.kind in TERMINAL_KINDS
            obs.flags.writeable = False
            out.append(obs)
        return tuple(out)


class RoutineGridV0Env(RoutineEnv[np.ndarray, int], dynamics=GridDynamics):
    """## Description

    Navigation in a gridworld maze, in the MiniGrid tradition, where the decision density is set
    by how much routine walking separates the real decisions. The agent starts at junction 0 and
    must pass ``num_junctions`` junctions to reach the goal. At each junction it picks one of
    ``branching`` branches: one continues towards the goal, the others are *dead ends* (a wall)
    or *traps* (lava). Between junctions lie corridors of ``corridor_length`` cells. Corridors
    are one-way and **routine is exact: in a corridor every action moves the agent one cell
    along it**, so the action taken there cannot change the return. Every branch of junction
    ``j``, right or wrong, is a corridor of the same ``L_j`` cells; a wrong one ends on its dead
    end or lava cell, which ends the episode. The maze is fixed by ``layout_seed`` (a policy can
    learn it); it is a tree, so every episode ends within ``num_junctions + sum_j L_j`` steps.

    ![A RoutineGrid-v0 layout at the start: agent (blue), critical cells (yellow frames), goal
    (green), lava (red), dead ends (dark)](routine_grid.png)

    **Decision density.** Every junction on the way is critical (the right branch returns 1,
    a wrong one 0) and no corridor cell is, so an episode that has passed junctions
    ``0..j`` has taken ``sum_{i<=j} (1 + L_i)`` steps of which ``j + 1`` critical:

        rho = (j + 1) / sum_{i<=j} (1 + L_i);   for a fixed corridor length L:  rho = 1 / (1 + L)

    for *every* episode, successful or not (a wrong branch is exactly as long as the right
    one). With ``corridor_length=(low, high)`` each ``L_j`` is drawn once per layout and
    ``env.unwrapped.decision_density`` is the rho of an episode that reaches the goal,
    ``num_junctions / (num_junctions + sum_j L_j)``. A ``max_steps`` truncation can cut an
    episode inside a corridor, which lowers its rho.

    **Soft routine.** With ``soft_routine`` a cost ``c`` (``True``: 0.01) makes corridor actions
    matter a little: in a corridor action 0 walks on for free and every other action walks on
    too but costs ``c`` (dithering). Routine is then approximate: the optimal action gap
    ``max_a Q*(s, a) - min_a Q*(s, a)`` is ``c`` in a corridor and 1 at a junction. Annotations
    come from the environment's own model: the gap of every state is computed exactly by value
    iteration over the model (``env.unwrapped.optimal()``),
    ``info["action_gap"]`` reports it and ``critical`` is ``action_gap > critical_tolerance``
    (default 0.1: with ``c <= 0.1`` the corridors stay routine and rho keeps the formula above).
    With hard routine the gaps are exactly 0 or 1, so any tolerance gives the same flags as
    ``action_gap > 0``.

    **Geometry.** Each junction is entered heading east; its ways out are north, east and south
    (``branching=3``) or two of them (``branching=2``, at most 3 ways out of a grid cell entered
    from one side). The correct way is uniform among those the corridor length leaves room for:
    turning north or south needs ``L_j >= 1`` cells (``>= 2`` beside an east dead end), so
    ``branching=3`` needs ``corridor_length >= 2``. The maze is drawn MiniGrid-maze style: the
    agent's cells sit at odd (row, column) of the grid with a doorway square between two cells
    that a move joins and a wall square between any others, so a step moves the agent two grid
    squares and open squares touch only along corridors (a breadth-first search over the grid
    finds exactly the maze's paths).

    ## Action Space

    ``Discrete(branching)``. At a junction action ``k`` takes the ``k``-th way out counted from
    the agent's left (north, east, south for a junction entered heading east). In a corridor every
    action moves one cell along it (with ``soft_routine``, actions other than 0 cost ``c``).

    ## Observation Space

    ``obs_mode="vector"`` (default): ``Box(0, 1, (num_junctions + 13,), float32)``, a function of
    the state:

    | index | meaning |
    |---|---|
    | ``0 .. J-1`` | one-hot index of the last junction at or behind the agent |
    | ``J`` | 1 at a junction |
    | ``J + 1`` | moves since that junction / (max corridor length + 1) |
    | ``J + 2`` | moves until the corridor ends / (max corridor length + 1) |
    | ``J + 3 .. J + 6`` | one-hot heading: east, south, west, north |
    | ``J + 7 .. J + 9`` | a doorway to the agent's left, ahead, right (a move leads there) |
    | ``J + 10``, ``J + 11`` | grid row / (height - 1), grid column / (width - 1) |
    | ``J + 12`` | 1 on a terminal cell (goal, lava, dead end) |

    ``obs_mode="image"``: MiniGrid's partial egocentric view, ``Box(0, 255, (view_size,
    view_size, 3), uint8)``: the ``view_size x view_size`` cells ahead of the agent, which stands
    at row ``view_size - 1``, column ``view_size // 2``, facing row 0. Each cell holds MiniGrid's
    ``(object, color, state)`` codes: wall ``(2, 5, 0)``, corridor or junction ``(1, 0, 0)``,
    goal ``(8, 1, 0)``, lava ``(9, 0, 0)``, dead end ``(3, 5, 0)``; outside the grid is wall.
    Unlike MiniGrid the array is indexed ``(row, column)`` like an image and walls do not occlude.
    Stable-Baselines3's ``check_env`` warns that such an image is below the 36x36 its default
    ``CnnPolicy`` needs: use a custom features extractor, or the vector mode.

    **What the observation reveals.** This version leaks, and is kept for comparison (rb1 uses
    it; the contract suite's leak probes check that it leaks): ``RoutineGrid-v1`` shows no
    outcome before the end. Both modes are functions of the agent's cell, and nothing
    is hidden but the layout (which branch of each junction is right, where lava lies), which
    ``layout_seed`` fixes for a policy to learn. Part of it, though, shows through by a rule
    that holds in every layout, without learning any: a right branch runs on east after its
    first cell, a wrong one never does (see Geometry).

    - Before a choice, ``"vector"``: a junction shows only which ways out exist. With
      ``branching=3`` (always north, east and south), and with ``branching=2`` and
      ``L_j >= 2``, that tells nothing of the right one. With ``branching=2`` and ``L_j <= 1``
      it does: when the way ahead (east) is open, it is the right one (the geometry leaves no
      room for a right north or south branch beside an east one).
    - Before a choice, ``"image"``: at every junction the view shows the first cells of every
      branch, and the right branch is the one whose first cell opens to the east (the square
      east of it is a doorway, a wall for every wrong branch). A script that reads the view
      picks the right branch at every junction of every layout.
    - After a choice, both modes: from the first corridor cell on, the heading and the
      doorways (``J + 3 .. J + 9``, or the view) show the direction of the way on, east exactly
      on the right branch. So whether the choice was right shows one step after it, ``L_j``
      steps before the episode ends on lava or a dead end. The grid row and column
      (``J + 10``, ``J + 11``) show it as well.
    - ``describe()`` gives the ways out of a junction by turn and heading (not where they lead)
      and, in a corridor, the heading (east from the second cell on exactly on the right branch)
      and the kind of the next cell (lava or a dead end one step before).

    These giveaways are properties of v0, kept as they are; the annotations do not depend on
    them (every junction on the way is critical, every corridor cell routine).

    ## Rewards

    1 for the step onto the goal, 0 for every other step (a dead end or lava pays 0); with
    ``soft_routine``, minus ``c`` for each corridor step taken with an action other than 0.

    ## Starting State

    At junction 0, heading east. The start and the dynamics are deterministic: the maze is fixed
    by ``layout_seed``, and ``reset(seed=...)`` changes nothing but ``np_random``.

    ## Episode End

    Terminated on the goal, on lava or on a dead end. Truncated after ``max_steps`` steps when it
    is set (default ``None``: episodes end by themselves within ``num_junctions + sum_j L_j``
    steps, so no time limit is registered).

    ## Information

    The keys of :mod:`routine_envs.annotations`: ``critical``, ``state_id`` and ``anchor`` (a stable
    hash of the observation) on every ``reset``/``step``; ``success`` (the goal was reached),
    ``num_critical``, ``episode_length`` and ``decision_density`` at the end. Also ``action_gap``
    (float, on every reset/step): the exact optimal action gap of the state just observed (0 on
    terminal cells). ``critical`` is ``action_gap > critical_tolerance``. ``turn_score`` (float,
    every ``reset``/``step``; privileged): the exact probability of reaching the goal from the
    cell under the optimal policy (1.0 on the goal, 0.0 in lava and at dead ends).

    ## Arguments

    ```python
    gym.make("RoutineGrid-v0", num_junctions=3, branching=3, corridor_length=5, layout_seed=0,
             soft_routine=False, critical_tolerance=0.1, obs_mode="vector", view_size=7,
             max_steps=None, render_mode=None)
    ```

    - ``num_junctions`` (int >= 1): decisions on the way to the goal.
    - ``branching`` (2 or 3): branches per junction; the action space size.
    - ``corridor_length`` (int >= 0, or ``(low, high)`` with ``0 <= low <= high``; ``low >= 2``
      when ``branching=3``): cells of every corridor; a pair draws each junction's ``L_j``
      uniformly from ``low..high`` once per layout.
    - ``layout_seed`` (int >= 0): fixes the maze (lengths, correct branches, traps).
    - ``soft_routine`` (bool, or a cost in [0, 1]): see Soft routine; ``True`` means 0.01.
    - ``critical_tolerance`` (float in [0, 1)): ``critical`` is ``action_gap`` above it.
    - ``obs_mode`` (``"vector"`` or ``"image"``), ``view_size`` (odd int >= 3, image width).
    - ``max_steps`` (int >= 1 or ``None``): truncate episodes after this many steps.
    - ``render_mode`` (``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``): text map, or a picture
      with the critical cells framed in yellow; ``"human"`` prints the text map at every reset and
      step.

    The MDP is public: ``env.unwrapped.dynamics`` is an immutable :class:`GridDynamics` (the
    maze ``.layout``, ``.desc``, outcomes, ids, observations, ``egocentric_view``, action gaps,
    state descriptions) with the exact ``model()`` and perfect critic ``oracle(policy)``, also
    forwarded by the env. ``describe_state(state_id)`` is an id's :class:`GridCell`.
    No procedural layouts: a new maze needs a new ``layout_seed``.

    ## Version History

    - v0: initial release (kept, unchanged, for comparison; it leaks: see What the observation
      reveals).
    - v1: ``RoutineGrid-v1``, every way of a junction alike, the outcome shown only at the exit.
    """

    @property
    def soft_routine(self) -> bool:
        """Whether corridor actions carry a dithering cost (the cost is ``step_cost``)."""
        return self.dynamics.step_cost > 0

    def describe_state(self, state_id: int) -> GridCell:
        """The :class:`GridCell` (position, kind, heading, ...) with that ``state_id``."""
        return self.dynamics.cell(state_id)


__all__ = ["GridCell", "GridDynamics", "GridLayout", "RoutineGridV0Env", "make_layout"]
