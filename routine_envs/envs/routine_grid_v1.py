"""Routine Grid v1: gridworld junctions whose ways all look alike, the outcome shown at the exit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.envs.diluted_doors_v1 import PathDoorsDynamics, PathState
from routine_envs.oracle import Outcome, TabularModel
from routine_envs.rendering.grid_v1 import (
    DEAD_END,
    GOAL,
    TURNS,
    VIEW_ENCODING,
    grid_v1_view,
    render_grid_v1,
    vector_text,
    view_kinds,
)
from routine_envs.rendering.text_view import TextView

OBS_MODES = ("vector", "image")
REWARDS = ("success", "fraction")
#: documented bounds: the states grow like ``branching ** num_junctions``.
MAX_JUNCTIONS = 30
MAX_CORRIDOR_LENGTH = 1000
MAX_VIEW_SIZE = 63


@dataclass(frozen=True, kw_only=True)
class TreeGridDynamics(Dynamics[PathState, np.ndarray]):
    """The exact MDP of Routine Grid v1 (see :class:`RoutineGridV1Env` for the rules).

    The walk is Diluted Doors v1's MDP (:attr:`core`, a
    :class:`~routine_envs.envs.diluted_doors_v1.PathDoorsDynamics` with a floor per junction and
    a door per way out): the same states (:class:`PathState`: junction, position in its
    corridor, the corridor's length, the ways taken), ``state_id``, rewards, criticality and
    exact model. What is new is the geometry the agent sees: headings, turns, doorways and an
    egocentric view, all functions of the ways taken and the corridor position.
    """

    num_junctions: int = 3
    branching: int = 3
    corridor_length: int | tuple[int, int] = 5
    reward: str = "success"
    layout_seed: int = 0
    obs_mode: str = "vector"
    view_size: int = 7

    density_kwarg = "corridor_length"
    density_rule = "corridor_length L: rho = 1/(1+L)"
    small_config: ClassVar[dict[str, Any]] = {"num_junctions": 2, "corridor_length": 2}
    render_modes = ("ansi", "rgb_array", "human")
    renderer = staticmethod(render_grid_v1)
    hides_outcome = True

    def __post_init__(self) -> None:
        junctions = validation.integer(
            "num_junctions", self.num_junctions, minimum=1, maximum=MAX_JUNCTIONS
        )
        branching = validation.integer("branching", self.branching, minimum=2, maximum=3)
        low, high = validation.int_or_range(
            "corridor_length", self.corridor_length, maximum=MAX_CORRIDOR_LENGTH
        )
        view_size = validation.integer(
            "view_size", self.view_size, minimum=3, maximum=MAX_VIEW_SIZE
        )
        if view_size % 2 == 0:
            raise ValueError(f"view_size must be odd, got {view_size}")
        core = PathDoorsDynamics(
            num_floors=junctions,
            num_doors=branching,
            routine_length=low if low == high else (low, high),
            reward=validation.choice("reward", self.reward, REWARDS),
            layout_seed=validation.integer("layout_seed", self.layout_seed, minimum=0),
            observation="actions",
        )
        self._derive(
            num_junctions=junctions,
            branching=branching,
            corridor_length=core.routine_length,
            reward=core.reward,
            layout_seed=core.layout_seed,
            obs_mode=validation.choice("obs_mode", self.obs_mode, OBS_MODES),
            view_size=view_size,
            #: the walk's MDP (Diluted Doors v1's, observation ``"actions"``).
            core=core,
            #: the right way (action) of every junction, fixed by ``layout_seed``.
            correct_ways=core.correct_doors,
            #: the configured corridor lengths as a ``(low, high)`` pair.
            corridor_range=(low, high),
            #: the scale of the moves walked / to go in the vector observation.
            position_scale=1.0 / (high + 1),
        )

    # ----------------------------------------------------------------------------- sizes
    @property
    def num_states(self) -> int:
        return self.core.num_states

    @property
    def num_actions(self) -> int:
        return self.branching

    @property
    def observation_size(self) -> int:
        """Length of the vector observation, ``num_junctions * (branching + 1) + 12``."""
        return self.num_junctions * (self.branching + 1) + 12

    @property
    def observation_space(self) -> gym.spaces.Box:
        if self.obs_mode == "vector":
            return gym.spaces.Box(0.0, 1.0, (self.observation_size,), np.float32)
        v = self.view_size
        return gym.spaces.Box(0, 255, (v, v, 3), np.uint8)

    @property
    def decision_density(self) -> float:
        """The rho of an episode that takes every right way, ``E[num_junctions / T]`` (``1 / (1
        + L)`` for a fixed ``L``)."""
        return self.core.decision_density

    @property
    def max_episode_length(self) -> int:
        return self.core.max_episode_length

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, PathState]]:
        return self.core.initial_outcomes()

    def outcomes(self, state: PathState, action: int) -> Sequence[Outcome]:
        return self.core.outcomes(state, action)

    def state_id(self, state: PathState) -> int:
        return self.core.state_id(state)

    def state_from_id(self, state_id: int) -> PathState:
        return self.core.state_from_id(state_id)

    def is_critical(self, state: PathState) -> bool:
        """The core's rule (a junction while the return can still change; the contract suite
        checks it against the exact action gap)."""
        return self.core.is_critical(state)

    def is_success(self, state: PathState) -> bool:
        return self.core.is_success(state)

    def build_model(self) -> TabularModel:
        """The core's bulk-built model (the same transitions as the generic search)."""
        return self.core.build_model()

    # ------------------------------------------------------------------------- geometry
    def heading(self, path: Sequence[int]) -> int:
        """The compass heading after the ways ``path`` (0..3: east, south, west, north; the walk
        starts heading east, a left way turns 90 degrees counter-clockwise)."""
        turns = TURNS[self.branching]
        return sum(turns[way] for way in path) % 4

    def moves(self, state: PathState) -> tuple[int, int]:
        """``(moves since the junction, moves to the next junction or the exit)``: ``(0, 0)``
        at a junction, ``(p, L + 1 - p)`` on cell ``p`` of a corridor of ``L`` cells."""
        if state.position == 0:
            return 0, 0
        return state.position, state.corridor_length + 1 - state.position

    def view_kinds(self, state: PathState) -> np.ndarray:
        """What each square of the egocentric view holds (see
        :func:`~routine_envs.rendering.grid_v1.view_kinds`), ``(view_size, view_size)``."""
        if state.floor >= self.num_junctions:
            kind = GOAL if self.is_success(state) else DEAD_END
            return view_kinds(self.view_size, self.branching, None, "exit", kind)
        _, ahead = self.moves(state)
        last = state.floor == self.num_junctions - 1
        node = "exit" if state.position > 0 and last else "junction"
        return view_kinds(self.view_size, self.branching, ahead, node)

    def observe(self, state: PathState) -> np.ndarray:
        if self.obs_mode == "image":
            return VIEW_ENCODING[self.view_kinds(state)]
        return self.vector_observation(state)

    def vector_observation(self, state: PathState) -> np.ndarray:
        """The ``obs_mode="vector"`` observation of ``state`` (in either mode), shape
        ``(J * (branching + 1) + 12,)`` float32."""
        j, b = self.num_junctions, self.branching
        obs = np.zeros(self.observation_size, dtype=np.float32)
        for k, way in enumerate(state.path):
            obs[j + 12 + k * b + way] = 1.0
        obs[j + 3 + self.heading(state.path)] = 1.0
        if state.floor >= j:
            obs[j + 10] = 1.0
            obs[j + 11] = self.is_success(state)
            return obs
        obs[state.floor] = 1.0
        walked, ahead = self.moves(state)
        obs[j + 1] = walked * self.position_scale
        obs[j + 2] = ahead * self.position_scale
        if state.position == 0:
            obs[j] = 1.0
            for turn in TURNS[b]:
                obs[j + 8 + turn] = 1.0
        else:
            obs[j + 8] = 1.0  # the way ahead: the corridor, then a junction or the exit
        return obs

    def describe(self, state: PathState) -> str:
        """The vector observation in words, one line (the vector text view's, so nothing it
        hides), in either observation mode: the image mode's text is a multi-line picture."""
        return vector_text(self, self.vector_observation(state))

    def action_names(self) -> tuple[str, ...]:
        return tuple(f"take_way_{k}" for k in range(self.branching))

    def build_text_view(self) -> TextView:
        """Routine Grid v1 in words (:func:`~routine_envs.rendering.grid_v1.grid_v1_view`)."""
        return grid_v1_view(self)


class RoutineGridV1Env(RoutineEnv[np.ndarray, PathState], dynamics=TreeGridDynamics):
    """## Description

    Navigation in a gridworld maze, in the MiniGrid tradition, whose decision density is set by
    the routine walking between decisions, and whose observation never shows whether a
    decision was right before the episode ends. The agent starts at junction 1, heading east,
    and passes ``num_junctions`` junctions. At each it takes one of ``branching`` ways out
    (left, ahead, right; or left, right); one is right (fixed by ``layout_seed``, so a policy
    can learn it). **Every way, right or wrong, looks alike and continues alike**: a corridor
    of ``L`` cells, then the next junction, and after the last junction's corridor an exit
    door. Stepping through it ends the episode: behind it is the goal when every way taken was
    right, else a dead end. In a corridor **every action moves the agent one cell on** (exact
    routine).

    The maze is a tree, so every path is its own (nothing meets again), drawn in the agent's
    frame: headings, turns and doorways follow from the ways taken, the same in every layout.
    The walk is Diluted Doors v1's MDP (a floor per junction, a door per way out; the same
    ``state_id`` and model, :attr:`TreeGridDynamics.core`) seen as a maze; the right ways of
    ``layout_seed`` are the correct doors of ``DilutedDoors-v1`` with that seed.

    **Decision density.** An episode takes ``T = sum_j (1 + L_j)`` steps, whatever the ways
    taken. With ``reward="success"`` (default) a junction is critical while every way so far
    was right (after a wrong one nothing can change the return), so an episode that takes every
    right way has ``rho = num_junctions / T``, ``1 / (1 + L)`` for a fixed corridor length
    ``L`` (``env.unwrapped.decision_density``), and one whose first wrong way is at junction
    ``k`` (1-based) has ``k / T``. With ``reward="fraction"`` every junction is critical and
    every episode has ``rho = num_junctions / T``. ``corridor_length=(low, high)`` draws each
    corridor's length uniformly on ``self.np_random`` when its junction is passed.

    ## Action Space

    ``Discrete(branching)``. At a junction action ``k`` takes the ``k``-th way out counted from
    the agent's left (``branching=3``: left, ahead, right; ``branching=2``: left, right). In a
    corridor every action moves one cell on.

    ## Observation Space

    ``obs_mode="vector"`` (default): ``Box(0, 1, (J * (branching + 1) + 12,), float32)`` with
    ``J = num_junctions``, a function of the state:

    | index | meaning |
    |---|---|
    | ``0 .. J-1`` | one-hot index of the junction at or behind the agent (zero at the end) |
    | ``J`` | 1 at a junction |
    | ``J + 1`` | moves since the junction / (max corridor length + 1) |
    | ``J + 2`` | moves to the next junction or the exit / (max corridor length + 1) |
    | ``J + 3 .. J + 6`` | one-hot heading: east, south, west, north (from the turns taken) |
    | ``J + 7 .. J + 9`` | a way open to the agent's left, ahead, right |
    | ``J + 10`` | 1 once through the exit door (the episode is over) |
    | ``J + 11`` | 1 once through it onto the goal (the outcome, at the end only) |
    | ``J + 12 ..`` | the way taken at each junction passed, one-hot per junction |

    ``obs_mode="image"``: a MiniGrid-style egocentric view, ``Box(0, 255, (view_size,
    view_size, 3), uint8)``, the agent at row ``view_size - 1``, column ``view_size // 2``,
    facing row 0: the corridor ahead up to the next junction, that junction's ways out (their
    first cell, then unseen ``(0, 0, 0)``: the next corridor's length is not drawn yet) or the
    exit door ``(4, 4, 1)`` (a closed yellow door); walls ``(2, 5, 0)``, floor ``(1, 0, 0)``.
    On the last step the agent's square shows the goal ``(8, 1, 0)`` or a dead end
    ``(3, 5, 0)``. The view does not show the ways taken, so the image mode is partially
    observed (two states with different paths can look alike; use memory, or the vector mode,
    which is Markov).

    **What the observation reveals.** Only the agent's own doing and the routine's progress:
    where it is on its walk (junction, moves walked and to go, heading), the ways open, and the
    ways it took; never which way is right, nor whether a way taken was right, until the
    episode ends. In both modes and in ``describe()``, for the same actions and the same
    corridor lengths, every observation before the last is the same under every
    ``layout_seed`` (the contract suite's leak probes check it, and that a classifier reading
    the observations predicts success on unseen layouts no better than one reading
    observations that ignore the layout). Before a choice every way looks alike; after it the
    corridor, the next junction and the exit door look the same whichever way was taken; the
    outcome shows at the end (the goal or a dead end behind the exit door, ``J + 11``, and the
    reward). ``RoutineGrid-v0`` is kept for comparison: its geometry shows whether a way was
    right one step after it (a right branch runs on east, a wrong one never does).

    ## Rewards

    ``reward="success"``: 1 on the last step when every way taken was right, else 0.
    ``"fraction"``: the share of junctions where the right way was taken, on the last step.
    Every other step pays 0.

    ## Starting State

    At junction 1, heading east, no way taken. The only randomness is each corridor's length
    when ``corridor_length`` is a ``(low, high)`` range (drawn on ``self.np_random``).

    ## Episode End

    Terminated through the exit door, after ``T = sum_j (1 + L_j)`` steps. Truncated after
    ``max_steps`` steps when it is set (default ``None``: episodes end within
    ``num_junctions * (1 + high)`` steps, so no time limit is registered).

    ## Information

    The keys of :mod:`routine_envs.annotations`: ``critical``, ``state_id`` and ``anchor`` (a
    stable hash of the observation) on every ``reset``/``step``; ``success`` (every way was
    right), ``num_critical``, ``episode_length`` and ``decision_density`` at the end.
    ``critical`` is exact: a junction while the return can still change. ``state_id`` (Diluted
    Doors v1's) encodes the ways taken and is privileged. ``turn_score`` (float, every
    ``reset``/``step``; privileged): the exact probability of success from the state under the
    optimal policy (1.0 while every way taken was right, else 0.0).

    ## Arguments

    ```python
    gym.make("RoutineGrid-v1", num_junctions=3, branching=3, corridor_length=5,
             reward="success", layout_seed=0, obs_mode="vector", view_size=7, max_steps=None,
             render_mode=None)
    ```

    - ``num_junctions`` (int, 1..30), ``branching`` (2 or 3): decisions and ways per decision.
    - ``corridor_length`` (int 0..1000, or ``(low, high)``): cells of every corridor; a pair
      draws each corridor's length per episode.
    - ``reward`` (``"success"`` or ``"fraction"``), ``layout_seed`` (int >= 0): the right ways.
    - ``obs_mode`` (``"vector"`` or ``"image"``), ``view_size`` (odd int, 3..63).
    - ``max_steps`` (int >= 1 or ``None``), ``render_mode`` (``None``, ``"ansi"``,
      ``"rgb_array"``, ``"human"``): the pictures show the agent's view and mark each way taken
      right or wrong (for people: they show what the observation hides).

    The states number ``sum_j b^j + b^J + cells * sum_j b^(j+1)`` (``b = branching``; 247 at
    the defaults); the exact model is built in bulk up to 20 million states.
    ``env.unwrapped.dynamics`` is the immutable :class:`TreeGridDynamics`, with the exact
    ``model()`` and perfect critic ``oracle(policy)``.

    ## Version History

    - v1: every way of a junction looks and continues alike, the dead end shown only at the
      exit (v0's geometry showed whether a way was right one step after it, and its image view
      showed the right way before the choice); corridor lengths of a range are drawn per
      episode instead of per layout; no soft routine.
    - v0: ``RoutineGrid-v0``, kept registered, unchanged, for comparison.
    """


__all__ = ["RoutineGridV1Env", "TreeGridDynamics"]
