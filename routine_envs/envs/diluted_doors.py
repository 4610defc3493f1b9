"""Diluted Doors: the reference environment, in which the decision density is set exactly."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.oracle import Outcome

REWARD_MODES = ("success", "fraction")


class DoorsState(NamedTuple):
    """The underlying state of Diluted Doors.

    ``floor`` in ``[0, num_floors]`` (``num_floors`` = the terminal state); ``position`` 0 at the
    doors, ``1..corridor_length`` in the corridor; ``corridor_length`` the routine length drawn for
    this floor (0 until the door is passed); ``num_correct`` doors chosen correctly so far.
    """

    floor: int
    position: int
    corridor_length: int
    num_correct: int


class DilutedDoorsEnv(RoutineEnv[np.ndarray, DoorsState]):
    """## Description

    The controlled environment of "Drowning in Routine: Signal Dilution in Multi-Turn Agent
    Training" (arXiv 2606.22164). The agent crosses ``num_floors`` floors. Each floor starts with
    one *critical* step, a choice among ``num_doors`` doors of which exactly one is correct (fixed
    by ``layout_seed``, so a policy can learn it), followed by ``routine_length`` *routine* steps
    in a corridor, where every action just advances the agent one cell: the action taken there
    changes nothing that matters for the return. A wrong door does not end the episode, so an
    episode always lasts ``T = sum over floors of (1 + L_f)`` steps, and with a fixed routine
    length ``L`` the decision density is ``rho = num_floors / T = 1 / (1 + L)`` exactly.

    With ``reward="success"`` a single wrong door makes the return 0 whatever follows, so the doors
    after a wrong one are *not* critical: the realized density of such an episode is lower than
    ``1 / (1 + L)``. Under a policy that picks each door correctly with probability ``q``, the
    expected number of critical steps is ``sum_{f<F} q^f`` instead of ``F``. With
    ``reward="fraction"`` every door counts and every episode has density exactly ``F / T``.

    ## Action Space

    ``Discrete(num_doors)``. At a door, action ``k`` opens door ``k``. In a corridor every action
    moves the agent one cell forward (the action is ignored).

    ## Observation Space

    ``Box(0, 1, (num_floors + 5,), float32)``, a function of the state:

    | index | meaning |
    |---|---|
    | ``0 .. num_floors-1`` | one-hot current floor (all zero once finished) |
    | ``num_floors`` | 1 at the doors, else 0 |
    | ``num_floors + 1`` | corridor position / max routine length (0 at the doors) |
    | ``num_floors + 2`` | corridor cells left / max routine length |
    | ``num_floors + 3`` | doors chosen correctly so far / num_floors |
    | ``num_floors + 4`` | 1 in the terminal state, else 0 |

    ## Rewards

    Paid once, on the last step: ``"success"`` pays 1 when every door was correct, else 0;
    ``"fraction"`` pays the share of correct doors. Every other step pays 0.

    ## Starting State

    At the doors of floor 0 with no door chosen. The start is deterministic; the only randomness is
    the routine length of each floor when ``routine_length`` is a ``(low, high)`` range, drawn
    uniformly on ``self.np_random`` when the agent passes the floor's door.

    ## Episode End

    Terminated after the last floor's corridor (``T`` steps). Never truncated: the episode length
    is bounded by ``num_floors * (1 + high)``, so no time limit is registered.

    ## Information

    The keys of :mod:`routine_envs.annotations`: ``critical`` and ``state_id`` on every
    ``reset``/``step``; ``success``, ``num_critical``, ``episode_length`` and ``decision_density``
    at the end. ``critical`` is true exactly at the doors while the return can still change: every
    door with ``"fraction"``, doors with no earlier mistake with ``"success"``.

    ## Arguments

    ```python
    gym.make("DilutedDoors-v0", num_floors=3, num_doors=3, routine_length=10,
             reward="success", layout_seed=0, render_mode=None)
    ```

    - ``num_floors`` (int >= 1): number of floors, i.e. of decisions per episode.
    - ``num_doors`` (int >= 2): doors per floor; the action space size.
    - ``routine_length`` (int >= 0, or a pair ``(low, high)`` with ``0 <= low <= high``): corridor
      cells after each door; a pair draws each floor's length uniformly from ``low..high``.
    - ``reward`` (``"success"`` or ``"fraction"``): see Rewards.
    - ``layout_seed`` (int >= 0): fixes the correct door of every floor.
    - ``render_mode`` (``None``, ``"ansi"`` or ``"rgb_array"``).

    The exact model is exposed: ``env.unwrapped.model()`` (every transition, indexed by
    ``state_id``), ``env.unwrapped.oracle(policy)`` (exact ``Q^pi``, ``V^pi``, ``A^pi``),
    ``env.unwrapped.decision_density`` (the configuration's expected rho) and
    ``copy.deepcopy(env)`` (an independent branch with the same future for the same actions).

    ## Version History

    - v0: initial release.
    """

    def __init__(
        self,
        num_floors: int = 3,
        num_doors: int = 3,
        routine_length: int | tuple[int, int] = 10,
        reward: str = "success",
        layout_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        self.num_floors = validation.integer("num_floors", num_floors, minimum=1)
        self.num_doors = validation.integer("num_doors", num_doors, minimum=2)
        self.routine_range = validation.int_or_range("routine_length", routine_length, minimum=0)
        self.reward_mode = validation.choice("reward", reward, REWARD_MODES)
        self.layout_seed = validation.integer("layout_seed", layout_seed, minimum=0)
        rng = np.random.default_rng(self.layout_seed)
        #: the correct door of each floor, shape ``(num_floors,)``.
        self.correct_doors: tuple[int, ...] = tuple(
            int(d) for d in rng.integers(self.num_doors, size=self.num_floors)
        )

        low, high = self.routine_range
        self._lengths = tuple(range(low, high + 1))
        self._length_prob = 1.0 / len(self._lengths)
        self._obs_scale = 1.0 / max(1, high)
        # state_id layout: doors, then terminal states, then corridor cells (see _state_id).
        counts = self.num_floors + 1  # num_correct takes values 0..num_floors
        self._num_door_ids = self.num_floors * counts
        self._corridor_base = self._num_door_ids + counts
        self._min_corridor = max(low, 1)
        self._cells_per_block = sum(range(self._min_corridor, high + 1))
        self.num_states = self._corridor_base + self._num_door_ids * self._cells_per_block

        self.action_space = gym.spaces.Discrete(self.num_doors)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.num_floors + 5,), np.float32)
        self._door_outcomes: dict[tuple[DoorsState, int], tuple[Outcome, ...]] = {}
        self._chosen_doors: list[int] = []
        self._corridor_lengths: list[int] = []

    _shared_attributes = RoutineEnv._shared_attributes | {
        "_door_outcomes",
        "correct_doors",
        "_lengths",
        "routine_range",
    }

    # ---------------------------------------------------------------------------- config
    @property
    def routine_length(self) -> int | tuple[int, int]:
        """The configured routine length: an int, or the ``(low, high)`` range."""
        low, high = self.routine_range
        return low if low == high else (low, high)

    @property
    def decision_density(self) -> float:
        """Expected rho of the configuration, ``E[num_floors / T]`` with every door critical
        (exact; ``1 / (1 + L)`` for a fixed ``L``). With ``reward="success"`` this is the density
        of an episode without a wrong door; see the class docstring for the others."""
        low, high = self.routine_range
        dist = np.ones(1)
        for _ in range(self.num_floors):  # distribution of the total routine steps
            dist = np.convolve(dist, np.full(high - low + 1, self._length_prob))
        totals = self.num_floors * (1 + low) + np.arange(dist.size)
        return float(np.sum(dist * self.num_floors / totals))

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode, ``num_floors * (1 + high)`` steps."""
        return self.num_floors * (1 + self.routine_range[1])

    # ----------------------------------------------------------------------------- hooks
    def _initial_outcomes(self) -> Sequence[tuple[float, DoorsState]]:
        return ((1.0, DoorsState(0, 0, 0, 0)),)

    def _outcomes(self, state: DoorsState, action: int) -> Sequence[Outcome]:
        floor, position, length, correct = state
        if position == 0:  # at the doors: the decision
            key = (state, action)
            cached = self._door_outcomes.get(key)
            if cached is None:
                correct += action == self.correct_doors[floor]
                cached = tuple(
                    self._after_floor(floor, correct, routine, self._length_prob)
                    for routine in self._lengths
                )
                self._door_outcomes[key] = cached
            return cached
        if position < length:  # routine: every action walks one cell
            return ((1.0, DoorsState(floor, position + 1, length, correct), 0.0, False),)
        return (self._after_floor(floor, correct, 0, 1.0),)

    def _after_floor(self, floor: int, correct: int, routine: int, prob: float) -> Outcome:
        """Outcome of leaving ``floor``'s doors into a corridor of ``routine`` cells (0: none)."""
        if routine > 0:
            return prob, DoorsState(floor, 1, routine, correct), 0.0, False
        if floor + 1 < self.num_floors:
            return prob, DoorsState(floor + 1, 0, 0, correct), 0.0, False
        return prob, DoorsState(self.num_floors, 0, 0, correct), self._final_reward(correct), True

    def _final_reward(self, correct: int) -> float:
        if self.reward_mode == "success":
            return 1.0 if correct == self.num_floors else 0.0
        return correct / self.num_floors

    def _state_id(self, state: DoorsState) -> int:
        floor, position, length, correct = state
        block = floor * (self.num_floors + 1) + correct
        if position == 0:
            return block if floor < self.num_floors else self._num_door_ids + correct
        m = self._min_corridor
        offset = (length - 1) * length // 2 - (m - 1) * m // 2
        return self._corridor_base + block * self._cells_per_block + offset + position - 1

    def describe_state(self, state_id: int) -> DoorsState:
        """Inverse of ``state_id``: the :class:`DoorsState` with that id."""
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        counts = self.num_floors + 1
        if state_id < self._num_door_ids:
            return DoorsState(state_id // counts, 0, 0, state_id % counts)
        if state_id < self._corridor_base:
            return DoorsState(self.num_floors, 0, 0, state_id - self._num_door_ids)
        block, cell = divmod(state_id - self._corridor_base, self._cells_per_block)
        length = self._min_corridor
        while cell >= length:
            cell -= length
            length += 1
        return DoorsState(block // counts, cell + 1, length, block % counts)

    def _observe(self, state: DoorsState) -> np.ndarray:
        floor, position, length, correct = state
        n = self.num_floors
        obs = np.zeros(n + 5, dtype=np.float32)
        if floor < n:
            obs[floor] = 1.0
            if position == 0:
                obs[n] = 1.0
            else:
                obs[n + 1] = position * self._obs_scale
                obs[n + 2] = (length - position) * self._obs_scale
        else:
            obs[n + 4] = 1.0
        obs[n + 3] = correct / n
        return obs

    def _is_critical(self, state: DoorsState) -> bool:
        floor, position, _, correct = state
        if position != 0 or floor >= self.num_floors:
            return False
        return self.reward_mode == "fraction" or correct == floor

    def _is_success(self, state: DoorsState) -> bool:
        return state.num_correct == self.num_floors

    # ------------------------------------------------------------------------- rendering
    def _after_reset(self) -> None:
        self._chosen_doors = []
        self._corridor_lengths = []

    def _after_step(self, state: DoorsState, action: int, next_state: DoorsState) -> None:
        if state.position == 0:  # a door was chosen: remember it and the corridor it opened
            self._chosen_doors.append(action)
            same_floor = next_state.floor == state.floor
            self._corridor_lengths.append(next_state.corridor_length if same_floor else 0)

    def _render_ansi(self) -> str:
        from routine_envs.rendering.doors import render_doors_ansi

        return render_doors_ansi(self)

    def _render_rgb(self) -> np.ndarray:
        from routine_envs.rendering.doors import render_doors_rgb

        return render_doors_rgb(self)

    def __repr__(self) -> str:
        return (
            f"DilutedDoorsEnv(num_floors={self.num_floors}, num_doors={self.num_doors}, "
            f"routine_length={self.routine_length!r}, reward={self.reward_mode!r}, "
            f"layout_seed={self.layout_seed})"
        )
