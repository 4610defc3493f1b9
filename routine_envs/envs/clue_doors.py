"""Clue Doors: Diluted Doors whose right door is told, in words, anew on every floor of every
episode, so a policy must read to choose."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.oracle import Outcome
from routine_envs.rendering.text_view import Param, TextView, Tool, describe_view

COLOURS = ("red", "blue", "green", "yellow", "white", "black")
"""The paint of the doors (the first ``num_doors``), named in the notes."""

NOTES = ("colour", "door")
"""What a note names: ``"colour"`` the right door's colour (the default), ``"door"`` its number."""


class ClueState(NamedTuple):
    """The underlying state: ``floor`` in ``[0, num_floors]`` (``num_floors``: the end);
    ``position`` 0 at the doors, ``1..routine_length`` in the corridor; ``paint`` the index of
    the floor's assignment of colours to doors (:attr:`ClueDynamics.paints`) and ``clue`` the
    colour its note names (both 0 in a corridor and at the end); ``right`` 1 while every door
    chosen so far was the one the notes named (hidden: never observed before the end)."""

    floor: int
    position: int
    paint: int
    clue: int
    right: int


@dataclass(frozen=True)
class ClueDynamics(Dynamics[ClueState, np.ndarray]):
    """## Description
    A building of ``num_floors`` floors. On each floor the agent stands before ``num_doors``
    doors, each painted a different colour, and a note on the wall names the colour of the right
    door; the paint and the note are drawn anew, uniformly, on every floor of every episode. After
    the door comes a corridor of ``routine_length`` cells where every action walks on. The reward,
    paid at the end, is 1 if every door opened was the one the notes named.

    So the right action of each critical turn depends on what the observation says in that
    episode: a policy that ignores the note succeeds with probability ``num_doors ** -num_floors``,
    one that reads it always. It is Diluted Doors for agents that must read (a language model
    cannot memorise one reply per floor), with the decision density set the same way.

    ## Action Space
    ``Discrete(num_doors)``: at the doors action ``k`` opens door ``k``; in a corridor every
    action walks one cell on.

    ## Observation Space
    ``Box(0, 1, (5 + D + D * D,), float32)``, ``D = num_doors``: ``[0]`` the floor / floors;
    ``[1]`` the position in the corridor / ``routine_length``; ``[2]`` 1 at the doors; ``[3]`` 1
    at the end; ``[4]`` 1 at the end of a success; ``[5 : 5 + D]`` one-hot the colour the note
    names; ``[5 + D :]`` the doors' paint, door by door one-hot colours (zeros away from the
    doors).

    **What the observation reveals.** The note and the paint of the floor the agent stands on
    (what it needs to choose); never whether a door opened was right before the end: the
    observations after a right and a wrong door are the same.

    ## Rewards
    1 at the end if every door opened was the one named, else 0. Every other step pays 0.

    ## Starting State
    At the doors of floor 0, the paint and the note drawn uniformly on ``self.np_random`` (so are
    every later floor's, when the agent reaches its doors).

    ## Episode End
    Terminated after the last floor's corridor: ``num_floors (1 + routine_length)`` steps.

    ## Information
    The keys of :mod:`routine_envs.annotations`: ``critical``, ``state_id``, ``anchor`` and
    ``turn_score`` on every ``reset``/``step``; ``success``, ``num_critical``,
    ``episode_length`` and ``decision_density`` at the end. ``critical`` is true at the doors
    while every door so far was right (after a mistake no action changes the return).
    ``state_id`` encodes whether every door so far was right, and ``turn_score`` (1.0 while it
    is, else 0.0) is it: both privileged.

    ## Arguments
    ```python
    gym.make("ClueDoors-v0", num_floors=3, num_doors=3, routine_length=10, note="colour",
             max_steps=None, render_mode=None)
    ```

    - ``num_floors`` (int, 1..50), ``num_doors`` (int, 2..6; at most 720 paints).
    - ``routine_length`` (int, 0..10000): the corridor's cells; rho = 1/(1+L).
    - ``note`` (``"colour"`` or ``"door"``): what the note's text names. ``"colour"`` (the
      default): the right door's colour ("take the red door"), so a reader must find the door
      of that colour. ``"door"``: its number ("take door 1"), the word the reply opens it by, a
      copy to read. The states, observations, dynamics and annotations are the same; only the
      text differs (the note's door is a function of the observation, which holds the note's
      colour and the paint).
    - ``max_steps``, ``render_mode`` (``None``, ``"ansi"``, ``"human"``) as every env.

    ## Version History
    - v0: initial release.
    """

    num_floors: int = 3
    num_doors: int = 3
    routine_length: int = 10
    note: str = "colour"

    density_kwarg = "routine_length"
    density_rule = "routine_length L: rho = 1/(1+L)"
    small_config: ClassVar[dict[str, Any]] = {"num_floors": 2, "num_doors": 2, "routine_length": 1}

    def __post_init__(self) -> None:
        floors = validation.integer("num_floors", self.num_floors, minimum=1, maximum=50)
        doors = validation.integer("num_doors", self.num_doors, minimum=2, maximum=len(COLOURS))
        length = validation.integer("routine_length", self.routine_length, 0, 10_000)
        validation.choice("note", self.note, NOTES)
        paints = tuple(itertools.permutations(range(doors)))
        variants = len(paints) * doors
        self._derive(
            num_floors=floors,
            num_doors=doors,
            routine_length=length,
            paints=paints,
            variants=variants,
            _corridor_base=floors * 2 * variants,
            _end_base=floors * 2 * (variants + length),
        )

    # ----------------------------------------------------------------------------- sizes
    num_states = property(lambda self: self._end_base + 2)
    num_actions = property(lambda self: self.num_doors)
    observation_space = property(
        lambda self: gym.spaces.Box(0.0, 1.0, (5 + self.num_doors + self.num_doors**2,), np.float32)
    )
    decision_density = property(lambda self: 1.0 / (1 + self.routine_length))
    max_episode_length = property(lambda self: self.num_floors * (1 + self.routine_length))

    def right_door(self, state: ClueState) -> int:
        """The door painted the colour the note of ``state``'s floor names."""
        return self.paints[state.paint].index(state.clue)

    def turn_score(self, state: ClueState) -> float:
        """1.0 while every door opened was right (at the end: success), else 0.0."""
        return float(state.right)

    # ----------------------------------------------------------------------- the dynamics
    def action_names(self) -> tuple[str, ...]:
        return tuple(f"open_door_{k}" for k in range(self.num_doors))

    def _doors(self, floor: int, right: int) -> Sequence[tuple[float, ClueState]]:
        """The doors of ``floor``: every paint and note, uniform."""
        share = 1.0 / self.variants
        return tuple(
            (share, ClueState(floor, 0, paint, clue, right))
            for paint in range(len(self.paints))
            for clue in range(self.num_doors)
        )

    def initial_outcomes(self) -> Sequence[tuple[float, ClueState]]:
        return self._doors(0, 1)

    def _leave(self, floor: int, right: int) -> Sequence[Outcome]:
        if floor + 1 < self.num_floors:
            return tuple((p, s, 0.0, False) for p, s in self._doors(floor + 1, right))
        return ((1.0, ClueState(self.num_floors, 0, 0, 0, right), float(right), True),)

    def outcomes(self, state: ClueState, action: int) -> Sequence[Outcome]:
        floor, position, _, _, right = state
        if position == 0:  # the doors: the only decision of the floor
            right = int(right and action == self.right_door(state))
            if self.routine_length == 0:
                return self._leave(floor, right)
            return ((1.0, ClueState(floor, 1, 0, 0, right), 0.0, False),)
        if position < self.routine_length:  # routine: every action walks on
            return ((1.0, ClueState(floor, position + 1, 0, 0, right), 0.0, False),)
        return self._leave(floor, right)

    def state_id(self, state: ClueState) -> int:
        floor, position, paint, clue, right = state
        if floor == self.num_floors:
            return self._end_base + right
        block = floor * 2 + right
        if position == 0:
            return block * self.variants + paint * self.num_doors + clue
        return self._corridor_base + block * self.routine_length + position - 1

    def state_from_id(self, state_id: int) -> ClueState:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        state_id = int(state_id)
        if state_id >= self._end_base:
            return ClueState(self.num_floors, 0, 0, 0, state_id - self._end_base)
        if state_id >= self._corridor_base:
            block, cell = divmod(state_id - self._corridor_base, self.routine_length)
            floor, right = divmod(block, 2)
            return ClueState(floor, cell + 1, 0, 0, right)
        block, variant = divmod(state_id, self.variants)
        floor, right = divmod(block, 2)
        paint, clue = divmod(variant, self.num_doors)
        return ClueState(floor, 0, paint, clue, right)

    def observe(self, state: ClueState) -> np.ndarray:
        floor, position, paint, clue, right = state
        d = self.num_doors
        obs = np.zeros(5 + d + d * d, dtype=np.float32)
        obs[0] = floor / self.num_floors
        if floor == self.num_floors:
            obs[3] = 1.0
            obs[4] = float(right)
            return obs
        obs[1] = position / self.routine_length if position else 0.0
        if position == 0:
            obs[2] = 1.0
            obs[5 + clue] = 1.0
            for door, colour in enumerate(self.paints[paint]):
                obs[5 + d + door * d + colour] = 1.0
        return obs

    def build_text_view(self) -> TextView:
        """One tool, ``open_door <door>`` (``walk`` also accepted in a corridor), the rules in
        words, and every observation told as :meth:`describe` tells its state."""
        d = self.num_doors
        named = "colour" if self.note == "colour" else "number"
        door = Param("door", "integer", tuple(range(d)), "the door to open")
        rules = (
            f"There are {self.num_floors} floors. Each has {d} doors, each painted a different "
            f"colour, and a note on the wall that names the {named} of the right door; the "
            "paint and the note change on every floor of every episode.",
            f"After the doors comes a corridor of {self.routine_length} cell(s); in a corridor "
            "every action just walks one cell on.",
            "A wrong door does not end the episode, and you are not told whether a door was "
            "right before the end.",
            "The reward is paid once, at the end: 1 if every door was the one the note named, "
            "else 0.",
        )
        return dataclasses.replace(
            describe_view(self),
            name="Clue Doors",
            task="You are an agent crossing the floors of a building. On each floor you read a "
            "note and open one door; then you walk down a corridor to the next floor.",
            rules=rules,
            tools=(
                Tool(
                    "open_door", "Open a door (at the doors; in a corridor it walks on).", (door,)
                ),
                Tool("walk", "Walk one cell on (in a corridor; the same as open_door 0)."),
            ),
            calls=tuple(("open_door", (k,)) for k in range(d)),
            aliases={("walk", ()): 0},
        )

    def is_success(self, state: ClueState) -> bool:
        return state.floor == self.num_floors and bool(state.right)

    def describe(self, state: ClueState) -> str:
        """What the observation shows: the floor, and at the doors their paint and the note
        (never whether a door opened was right, before the end)."""
        floor, position, paint, clue, right = state
        n = self.num_floors
        if floor == n:
            return f"finished all {n} floors: " + ("every door was right" if right else "failed")
        if position:
            return (
                f"floor {floor + 1} of {n}, in the corridor, cell {position} of "
                f"{self.routine_length}: every action walks on"
            )
        doors = ", ".join(
            f"door {door} is {COLOURS[colour]}" for door, colour in enumerate(self.paints[paint])
        )
        says = (
            f"take the {COLOURS[clue]} door"
            if self.note == "colour"
            else f"take door {self.right_door(state)}"
        )
        return (
            f"floor {floor + 1} of {n}, at {self.num_doors} doors: {doors}. A note on the wall "
            f"says: {says}"
        )


class ClueDoorsEnv(RoutineEnv[np.ndarray, ClueState], dynamics=ClueDynamics):
    """The env of :class:`ClueDynamics` (its docstring is the env's documentation), a module
    attribute so that its registered entry point is the string
    ``routine_envs.envs.clue_doors:ClueDoorsEnv`` like every package env's."""

    __doc__ = ClueDynamics.__doc__
