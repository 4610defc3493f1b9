"""Diluted Doors: the reference environment, in which the decision density is set exactly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.oracle import Outcome, TabularModel, model_from_arrays
from routine_envs.rendering.doors import doors_view, render_doors
from routine_envs.rendering.text_view import TextView

REWARD_MODES = ("success", "fraction")
#: documented bounds: larger configurations are refused at construction (``ValueError``).
MAX_FLOORS = 1000
MAX_DOORS = 100
MAX_ROUTINE_LENGTH = 100_000
MAX_ROUTINE_RANGE = 1000  # high - low of a (low, high) routine length: outcomes per door step


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


@dataclass(frozen=True)
class DoorsDynamics(Dynamics[DoorsState, np.ndarray]):
    """The exact MDP of Diluted Doors (see :class:`DilutedDoorsV0Env` for the rules).

    ``state_id`` layout: the doors ``floor * (num_floors + 1) + num_correct``, then the terminal
    states (one per ``num_correct``), then the corridor cells, block by block.
    """

    num_floors: int = 3
    num_doors: int = 3
    routine_length: int | tuple[int, int] = 10
    reward: str = "success"
    layout_seed: int = 0

    density_kwarg = "routine_length"
    density_rule = "routine_length L: rho = 1/(1+L)"
    small_config: ClassVar[dict[str, Any]] = {
        "num_floors": 2,
        "routine_length": (0, 2),
        "reward": "fraction",
    }
    render_modes = ("ansi", "rgb_array", "human")
    renderer = staticmethod(render_doors)
    #: the share of doors right so far shows one step after each door (kept for comparison)
    hides_outcome = False

    def __post_init__(self) -> None:
        floors = validation.integer("num_floors", self.num_floors, minimum=1, maximum=MAX_FLOORS)
        doors = validation.integer("num_doors", self.num_doors, minimum=2, maximum=MAX_DOORS)
        low, high = validation.int_or_range(
            "routine_length",
            self.routine_length,
            minimum=0,
            maximum=MAX_ROUTINE_LENGTH,
            max_width=MAX_ROUTINE_RANGE,
        )
        seed = validation.integer("layout_seed", self.layout_seed, minimum=0)
        self._derive(
            num_floors=floors,
            num_doors=doors,
            routine_length=low if low == high else (low, high),
            reward=validation.choice("reward", self.reward, REWARD_MODES),
            layout_seed=seed,
        )
        rng = np.random.default_rng(seed)
        counts = floors + 1  # num_correct takes values 0..num_floors
        min_corridor = max(low, 1)
        cells_per_block = (high * (high + 1) - (min_corridor - 1) * min_corridor) // 2
        self._derive(
            #: the correct door of each floor, length ``num_floors``.
            correct_doors=tuple(int(d) for d in rng.integers(doors, size=floors)),
            #: the routine lengths a floor can draw, ``(low, high)``.
            routine_range=(low, high),
            lengths=tuple(range(low, high + 1)),
            length_probability=1.0 / (high - low + 1),
            #: observation scale of corridor positions, ``1 / max(1, high)``.
            position_scale=1.0 / max(1, high),
            num_door_ids=floors * counts,
            corridor_base=floors * counts + counts,
            min_corridor=min_corridor,
            cells_per_block=cells_per_block,
            _num_states=floors * counts + counts + floors * counts * cells_per_block,
            _door_outcomes={},  # memo of the door transitions (derived, never observable)
        )

    # ----------------------------------------------------------------------------- sizes
    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def num_actions(self) -> int:
        return self.num_doors

    @property
    def observation_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 1.0, (self.num_floors + 5,), np.float32)

    @property
    def decision_density(self) -> float:
        """Expected rho of the configuration, ``E[num_floors / T]`` with every door critical
        (exact; ``1 / (1 + L)`` for a fixed ``L``). With ``reward="success"`` this is the density
        of an episode without a wrong door; see the env's docstring for the others."""
        return self._cached("decision_density", self._expected_density)

    def _expected_density(self) -> float:
        low, high = self.routine_range
        n, width = self.num_floors, high - low + 1
        if width == 1:
            return n / (n * (1 + low))
        if n * width <= 100_000:  # the exact distribution of the total routine steps
            dist = np.ones(1)
            for _ in range(n):
                dist = np.convolve(dist, np.full(width, self.length_probability))
        else:  # the same distribution as an n-fold convolution power, by FFT
            size = n * (width - 1) + 1
            spectrum = np.fft.rfft(np.full(width, self.length_probability), size)
            dist = np.clip(np.fft.irfft(spectrum**n, size), 0.0, None)
            dist /= dist.sum()
        totals = n * (1 + low) + np.arange(dist.size)
        return float(np.sum(dist * n / totals))

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode, ``num_floors * (1 + high)`` steps."""
        return self.num_floors * (1 + self.routine_range[1])

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, DoorsState]]:
        return ((1.0, DoorsState(0, 0, 0, 0)),)

    def outcomes(self, state: DoorsState, action: int) -> Sequence[Outcome]:
        floor, position, length, correct = state
        if position == 0:  # at the doors: the decision
            key = (state, action)
            cached = self._door_outcomes.get(key)
            if cached is None:
                correct += action == self.correct_doors[floor]
                cached = tuple(
                    self._after_floor(floor, correct, routine, self.length_probability)
                    for routine in self.lengths
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
        return prob, DoorsState(self.num_floors, 0, 0, correct), self.final_reward(correct), True

    def final_reward(self, num_correct: int) -> float:
        """The reward of the last step after ``num_correct`` correct doors."""
        if self.reward == "success":
            return 1.0 if num_correct == self.num_floors else 0.0
        return num_correct / self.num_floors

    def build_model(self) -> TabularModel:
        """The exact model built in bulk with numpy (the same transitions, in the same order
        within every ``(state, action)``, as the generic search; a test checks it)."""
        n, doors = self.num_floors, self.num_doors
        counts = n + 1
        lengths = np.asarray(self.lengths, dtype=np.int64)
        m = self.min_corridor
        correct_doors = np.asarray(self.correct_doors, dtype=np.int64)
        final = np.array([self.final_reward(c) for c in range(counts)])

        def door_id(floor: np.ndarray, correct: np.ndarray) -> np.ndarray:
            return floor * counts + correct

        def cell_id(
            floor: np.ndarray, correct: np.ndarray, length: np.ndarray, position: np.ndarray | int
        ) -> np.ndarray:
            offset = (length - 1) * length // 2 - (m - 1) * m // 2
            return (
                self.corridor_base
                + door_id(floor, correct) * self.cells_per_block
                + (offset + position - 1)
            )

        def leave(floor: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, ...]:
            """Next id, reward, terminated of leaving ``floor``'s corridor (or its doors)."""
            last = floor + 1 >= n
            nxt = np.where(last, self.num_door_ids + correct, door_id(floor + 1, correct))
            return nxt, np.where(last, final[correct], 0.0), last

        # doors (floor f, c <= f correct so far) x action x routine length, in that order
        f, c = np.nonzero(np.tril(np.ones((n, counts), dtype=bool)))
        f_a = np.repeat(f, doors)
        c_a = np.repeat(c, doors)
        a_a = np.tile(np.arange(doors), f.size)
        c2 = c_a + (a_a == correct_doors[f_a])
        k = lengths.size
        f_d, c_d, a_d = np.repeat(f_a, k), np.repeat(c2, k), np.repeat(a_a, k)
        length_d = np.tile(lengths, f_a.size)
        nxt_leave, reward_leave, done_leave = leave(f_d, c_d)
        corridor = length_d > 0
        door_next = np.where(corridor, cell_id(f_d, c_d, length_d, 1), nxt_leave)
        door_reward = np.where(corridor, 0.0, reward_leave)
        door_done = np.where(corridor, False, done_leave)
        door_state = np.repeat(door_id(f_a, c_a), k)
        # corridor cells: (floor, c <= floor + 1, length >= 1, position), every action
        walked = lengths[lengths > 0]
        cells = [
            (ff, cc, ll, pp)
            for ff in range(n)
            for cc in range(min(ff + 1, n) + 1)
            for ll in walked.tolist()
            for pp in range(1, ll + 1)
        ]
        cf, cc, cl, cp = (
            np.array(col, dtype=np.int64)
            for col in (zip(*cells, strict=True) if cells else [()] * 4)
        )
        here = cell_id(cf, cc, cl, cp)
        end_next, end_reward, end_done = leave(cf, cc)
        inside = cp < cl
        cell_next = np.where(inside, here + 1, end_next)
        cell_reward = np.where(inside, 0.0, end_reward)
        cell_done = np.where(inside, False, end_done)

        def per_action(column: np.ndarray) -> np.ndarray:
            return np.repeat(column, doors)

        state = np.concatenate([door_state, per_action(here)])
        action = np.concatenate([a_d, np.tile(np.arange(doors), here.size)])
        prob = np.concatenate(
            [np.full(door_state.size, self.length_probability), np.ones(here.size * doors)]
        )
        next_state = np.concatenate([door_next, per_action(cell_next)])
        reward = np.concatenate([door_reward, per_action(cell_reward)])
        terminated = np.concatenate([door_done, per_action(cell_done)])
        columns = (state, action, prob, next_state, reward, terminated)
        return model_from_arrays(self.num_states, doors, 0, columns, self.state_from_id)

    def state_id(self, state: DoorsState) -> int:
        floor, position, length, correct = state
        block = floor * (self.num_floors + 1) + correct
        if position == 0:
            return block if floor < self.num_floors else self.num_door_ids + correct
        m = self.min_corridor
        offset = (length - 1) * length // 2 - (m - 1) * m // 2
        return self.corridor_base + block * self.cells_per_block + offset + position - 1

    def state_from_id(self, state_id: int) -> DoorsState:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        counts = self.num_floors + 1
        if state_id < self.num_door_ids:
            return DoorsState(state_id // counts, 0, 0, state_id % counts)
        if state_id < self.corridor_base:
            return DoorsState(self.num_floors, 0, 0, state_id - self.num_door_ids)
        block, cell = divmod(state_id - self.corridor_base, self.cells_per_block)
        length = self.min_corridor
        while cell >= length:
            cell -= length
            length += 1
        return DoorsState(block // counts, cell + 1, length, block % counts)

    def observe(self, state: DoorsState) -> np.ndarray:
        floor, position, length, correct = state
        n = self.num_floors
        obs = np.zeros(n + 5, dtype=np.float32)
        if floor < n:
            obs[floor] = 1.0
            if position == 0:
                obs[n] = 1.0
            else:
                obs[n + 1] = position * self.position_scale
                obs[n + 2] = (length - position) * self.position_scale
        else:
            obs[n + 4] = 1.0
        obs[n + 3] = correct / n
        return obs

    def is_critical(self, state: DoorsState) -> bool:
        """At a door while the return can still change (cheaper than the model; a test checks
        it against the exact action gap)."""
        floor, position, _, correct = state
        if position != 0 or floor >= self.num_floors:
            return False
        return self.reward == "fraction" or correct == floor

    def is_success(self, state: DoorsState) -> bool:
        return state.num_correct == self.num_floors

    def turn_score(self, state: DoorsState) -> float:
        """1.0 while every door passed so far was the right one (the path is on track), else
        0.0: the exact success probability under the optimal policy, by the rules (cheaper than
        the model; a test checks the two agree)."""
        floor, position, _, correct = state
        passed = self.num_floors if floor >= self.num_floors else floor + (position > 0)
        return float(correct == passed)

    def num_correct(self, state: DoorsState) -> int:
        """Doors chosen correctly so far in ``state``."""
        return state.num_correct

    def describe(self, state: DoorsState) -> str:
        floor, position, length, correct = state
        n = self.num_floors
        if floor >= n:
            return f"finished all {n} floors; {correct} of {n} doors were correct"
        where = (
            f"at the {self.num_doors} doors"
            if position == 0
            else f"in the corridor, cell {position} of {length}"
        )
        return f"floor {floor + 1} of {n}, {where}; {correct} doors correct so far"

    def build_text_view(self) -> TextView:
        """Diluted Doors v0 in words (:func:`~routine_envs.rendering.doors.doors_view`)."""
        return doors_view(self, "v0")


class DilutedDoorsV0Env(RoutineEnv[np.ndarray, DoorsState], dynamics=DoorsDynamics):
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

    **What the observation reveals.** Nothing of which door is right before it is chosen (the
    doors are fixed by ``layout_seed``, for a policy to learn), but whether it was right at
    once: the share of doors chosen correctly so far (index ``num_floors + 3``) changes on the
    step after each door, ``routine_length`` steps before the floor ends and before the reward,
    so a learned critic can read each door's outcome instead of assigning the credit. This
    version leaks, and is kept for comparison (the contract suite's leak probes check that it
    does); ``DilutedDoors-v1`` shows no outcome before the end.

    ## Rewards

    Paid once, on the last step: ``"success"`` pays 1 when every door was correct, else 0;
    ``"fraction"`` pays the share of correct doors. Every other step pays 0.

    ## Starting State

    At the doors of floor 0 with no door chosen. The start is deterministic; the only randomness is
    the routine length of each floor when ``routine_length`` is a ``(low, high)`` range, drawn
    uniformly on ``self.np_random`` when the agent passes the floor's door.

    ## Episode End

    Terminated after the last floor's corridor (``T`` steps). Truncated after ``max_steps`` steps
    when it is set (default ``None``: the episode length is bounded by ``num_floors * (1 + high)``,
    so no time limit is registered).

    ## Information

    The keys of :mod:`routine_envs.annotations`: ``critical``, ``state_id`` and ``anchor`` (a stable
    hash of the observation) on every ``reset``/``step``; ``success``, ``num_critical``,
    ``episode_length`` and ``decision_density`` at the end. ``critical`` is true exactly at the
    doors while the return can still change: every door with ``"fraction"``, doors with no earlier
    mistake with ``"success"``. ``turn_score`` (float, every ``reset``/``step``; privileged): 1.0
    while every door passed so far was the right one, else 0.0.

    ## Arguments

    ```python
    gym.make("DilutedDoors-v0", num_floors=3, num_doors=3, routine_length=10,
             reward="success", layout_seed=0, max_steps=None, render_mode=None)
    ```

    - ``num_floors`` (int >= 1): number of floors, i.e. of decisions per episode.
    - ``num_doors`` (int >= 2): doors per floor; the action space size.
    - ``routine_length`` (int >= 0, or a pair ``(low, high)`` with ``0 <= low <= high``): corridor
      cells after each door; a pair draws each floor's length uniformly from ``low..high``.
    - ``reward`` (``"success"`` or ``"fraction"``): see Rewards.
    - ``layout_seed`` (int >= 0): fixes the correct door of every floor.
    - ``max_steps`` (int >= 1 or ``None``): truncate episodes after this many steps.
    - ``render_mode`` (``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``: the text picture
      printed at every reset and step).

    The MDP is public: ``env.unwrapped.dynamics`` is an immutable :class:`DoorsDynamics`
    (outcomes, ``state_id`` and its inverse, observations, criticality, ``decision_density``,
    ``max_episode_length``, state descriptions), with the exact model ``dynamics.model()`` (every
    transition, indexed by ``state_id``) and the perfect critic ``dynamics.oracle(policy)``
    (exact ``Q^pi``, ``V^pi``, ``A^pi``), also forwarded by the env. ``copy.deepcopy(env)`` is an
    independent branch with the same future for the same actions.

    ## Version History

    - v0: initial release.
    """

    @property
    def reward_mode(self) -> str:
        """``"success"`` or ``"fraction"`` (the ``reward`` argument)."""
        return self.dynamics.reward
