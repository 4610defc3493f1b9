"""Diluted Doors v1: the decision density set exactly, and no outcome shown before the end."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.envs.diluted_doors import DoorsDynamics
from routine_envs.oracle import Outcome, TabularModel, model_from_arrays
from routine_envs.rendering.doors import doors_view, render_doors
from routine_envs.rendering.text_view import TextView

OBSERVATIONS = ("actions", "position", "progress")


class PathState(NamedTuple):
    """The underlying state of Diluted Doors v1.

    ``floor`` in ``[0, num_floors]`` (``num_floors`` = the terminal state); ``position`` 0 at the
    doors, ``1..corridor_length`` in the corridor; ``corridor_length`` the routine length drawn for
    this floor (0 until the door is passed); ``path`` the door chosen on every floor passed so far
    (the current floor's included once its door is passed).
    """

    floor: int
    position: int
    corridor_length: int
    path: tuple[int, ...]


@dataclass(frozen=True)
class PathDoorsDynamics(Dynamics[PathState, np.ndarray]):
    """The exact MDP of Diluted Doors v1 (see :class:`DilutedDoorsV1Env` for the rules).

    The state holds the path of doors chosen, so the MDP is Markov for every observation mode
    and the same in all of them (the modes differ only in what ``observe`` shows). ``state_id``
    layout, with ``code(path) = sum_i path[i] * num_doors**i``: the doors of floor ``f`` at
    ``door_base[f] + code``, then the terminal states, then the corridor cells of floor ``f`` at
    ``corridor_base[f] + code * cells_per_block + cell``.
    """

    num_floors: int = 3
    num_doors: int = 3
    routine_length: int | tuple[int, int] = 10
    reward: str = "success"
    layout_seed: int = 0
    observation: str = "actions"

    density_kwarg = "routine_length"
    density_rule = "routine_length L: rho = 1/(1+L)"
    small_config: ClassVar[dict[str, Any]] = {"num_floors": 2, "routine_length": (0, 2)}
    render_modes = ("ansi", "rgb_array", "human")
    renderer = staticmethod(render_doors)

    def __post_init__(self) -> None:
        # the layout, lengths and rewards are v0's: reuse its checks and constants
        layout = DoorsDynamics(
            self.num_floors, self.num_doors, self.routine_length, self.reward, self.layout_seed
        )
        n, d = layout.num_floors, layout.num_doors
        powers = [d**f for f in range(n + 2)]
        door_base = [sum(powers[:f]) for f in range(n + 1)]  # door_base[n]: the terminal states
        corridor_start = door_base[n] + powers[n]
        cells = layout.cells_per_block
        corridor_base = [corridor_start + cells * sum(powers[1 : f + 1]) for f in range(n + 1)]
        self._derive(
            num_floors=n,
            num_doors=d,
            routine_length=layout.routine_length,
            reward=layout.reward,
            layout_seed=layout.layout_seed,
            observation=validation.choice("observation", self.observation, OBSERVATIONS),
            layout=layout,
            correct_doors=layout.correct_doors,
            routine_range=layout.routine_range,
            lengths=layout.lengths,
            length_probability=layout.length_probability,
            position_scale=layout.position_scale,
            min_corridor=layout.min_corridor,
            cells_per_block=cells,
            powers=tuple(powers),
            door_base=tuple(door_base),
            corridor_base=tuple(corridor_base),
            _num_states=corridor_base[n],
        )

    # ----------------------------------------------------------------------------- sizes
    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def num_actions(self) -> int:
        return self.num_doors

    @property
    def observation_size(self) -> int:
        """Length of the observation vector of the configured mode."""
        n = self.num_floors
        return {"actions": n + 4 + n * self.num_doors, "position": n + 4, "progress": n + 5}[
            self.observation
        ]

    @property
    def observation_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(0.0, 1.0, (self.observation_size,), np.float32)

    @property
    def decision_density(self) -> float:
        """As v0's: ``E[num_floors / T]`` with every door critical (``1 / (1 + L)`` for a fixed
        ``L``)."""
        return self.layout.decision_density

    @property
    def max_episode_length(self) -> int:
        return self.layout.max_episode_length

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, PathState]]:
        return ((1.0, PathState(0, 0, 0, ())),)

    def outcomes(self, state: PathState, action: int) -> Sequence[Outcome]:
        floor, position, length, path = state
        if position == 0:  # at the doors: the decision, remembered in the path
            chosen = (*path, action)
            return tuple(
                self._after_floor(floor, chosen, routine, self.length_probability)
                for routine in self.lengths
            )
        if position < length:  # routine: every action walks one cell
            return ((1.0, PathState(floor, position + 1, length, path), 0.0, False),)
        return (self._after_floor(floor, path, 0, 1.0),)

    def _after_floor(self, floor: int, path: tuple[int, ...], routine: int, prob: float) -> Outcome:
        if routine > 0:
            return prob, PathState(floor, 1, routine, path), 0.0, False
        if floor + 1 < self.num_floors:
            return prob, PathState(floor + 1, 0, 0, path), 0.0, False
        reward = self.layout.final_reward(self.count_correct(path))
        return prob, PathState(self.num_floors, 0, 0, path), reward, True

    def count_correct(self, path: Sequence[int]) -> int:
        """How many doors of ``path`` are the correct ones of their floors."""
        return sum(door == right for door, right in zip(path, self.correct_doors, strict=False))

    def turn_score(self, state: PathState) -> float:
        """1.0 while every door of the path is the right one (the path is on track), else 0.0:
        the exact success probability under the optimal policy, by the rules (cheaper than the
        model; a test checks the two agree)."""
        return float(self.count_correct(state.path) == len(state.path))

    def num_correct(self, state: PathState) -> int:
        """Doors chosen correctly so far in ``state`` (privileged: never observed in
        ``"actions"``/``"position"``)."""
        return self.count_correct(state.path)

    def code(self, path: Sequence[int]) -> int:
        """``sum_i path[i] * num_doors**i``: the index of ``path`` among paths of its length."""
        return sum(door * self.powers[i] for i, door in enumerate(path))

    def state_id(self, state: PathState) -> int:
        floor, position, length, path = state
        code = self.code(path)
        if position == 0:
            return self.door_base[floor] + code
        m = self.min_corridor
        offset = (length - 1) * length // 2 - (m - 1) * m // 2
        return self.corridor_base[floor] + code * self.cells_per_block + offset + position - 1

    def state_from_id(self, state_id: int) -> PathState:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        n = self.num_floors
        if state_id < self.corridor_base[0]:  # doors or terminal
            floor = max(f for f in range(n + 1) if self.door_base[f] <= state_id)
            return PathState(floor, 0, 0, self._decode(state_id - self.door_base[floor], floor))
        floor = max(f for f in range(n) if self.corridor_base[f] <= state_id)
        code, cell = divmod(state_id - self.corridor_base[floor], self.cells_per_block)
        length = self.min_corridor
        while cell >= length:
            cell -= length
            length += 1
        return PathState(floor, cell + 1, length, self._decode(code, floor + 1))

    def _decode(self, code: int, length: int) -> tuple[int, ...]:
        path = []
        for _ in range(length):
            code, door = divmod(code, self.num_doors)
            path.append(door)
        return tuple(path)

    def observe(self, state: PathState) -> np.ndarray:
        floor, position, length, path = state
        n = self.num_floors
        obs = np.zeros(self.observation_size, dtype=np.float32)
        if floor < n:
            obs[floor] = 1.0
            if position == 0:
                obs[n] = 1.0
            else:
                obs[n + 1] = position * self.position_scale
                obs[n + 2] = (length - position) * self.position_scale
        if self.observation == "progress":  # v0's layout: the outcome so far, then terminal
            obs[n + 3] = self.count_correct(path) / n
            obs[n + 4] = floor >= n
            return obs
        obs[n + 3] = floor >= n
        if self.observation == "actions":
            for f, door in enumerate(path):
                obs[n + 4 + f * self.num_doors + door] = 1.0
        return obs

    def is_critical(self, state: PathState) -> bool:
        """At a door while the return can still change (cheaper than the model; the contract
        suite checks it against the exact action gap)."""
        floor, position, _, path = state
        if position != 0 or floor >= self.num_floors:
            return False
        return self.reward == "fraction" or self.count_correct(path) == floor

    def is_success(self, state: PathState) -> bool:
        return self.count_correct(state.path) == self.num_floors

    @property
    def hides_outcome(self) -> bool:  # type: ignore[override]
        """``"progress"`` (v0's observation, kept for comparison) shows the doors right so far."""
        return self.observation != "progress"

    def describe(self, state: PathState) -> str:
        """What the observation shows, in words (nothing more: no outcome before the end)."""
        floor, position, length, path = state
        n = self.num_floors
        if floor >= n:
            text = f"finished all {n} floors"
        elif position == 0:
            text = f"floor {floor + 1} of {n}, at the {self.num_doors} doors"
        else:
            text = f"floor {floor + 1} of {n}, in the corridor, cell {position} of {length}"
        if self.observation == "actions" and path:
            text += "; doors chosen so far: " + ", ".join(str(door) for door in path)
        elif self.observation == "progress":
            text += f"; {self.count_correct(path)} doors correct so far"
        return text

    def build_text_view(self) -> TextView:
        """Diluted Doors v1 in words, in the observation mode
        (:func:`~routine_envs.rendering.doors.doors_view`)."""
        return doors_view(self, "v1")

    # ---------------------------------------------------------------------- exact model
    def build_model(self) -> TabularModel:
        """The exact model built in bulk with numpy (the same transitions, in the same order
        within every ``(state, action)``, as the generic search; a test checks it).

        :meth:`model` refuses configurations above ``MAX_MODEL_STATES`` with their size.
        """
        n, d = self.num_floors, self.num_doors
        lengths = np.asarray(self.lengths, dtype=np.int64)
        k = lengths.size
        m = self.min_corridor
        correct = np.asarray(self.correct_doors, dtype=np.int64)
        final = np.array([self.layout.final_reward(c) for c in range(n + 1)])
        pieces: list[tuple[np.ndarray, ...]] = []

        def cell_offset(length: np.ndarray) -> np.ndarray:
            return (length - 1) * length // 2 - (m - 1) * m // 2

        def leave(floor: int, code: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, ...]:
            """Next id, reward and terminated of leaving ``floor`` with paths ``code`` (of
            length ``floor + 1``) holding ``right`` correct doors."""
            if floor + 1 < n:
                return (
                    self.door_base[floor + 1] + code,
                    np.zeros(code.size),
                    np.zeros(code.size, bool),
                )
            return self.door_base[n] + code, final[right], np.ones(code.size, bool)

        for f in range(n):
            paths = self.powers[f]
            code = np.arange(paths, dtype=np.int64)
            digits = (code[:, None] // np.asarray(self.powers[:f], dtype=np.int64)) % d
            right = (digits == correct[:f]).sum(axis=1) if f else np.zeros(paths, np.int64)
            # doors: (path, action, routine length) in that order
            code_a = np.repeat(code, d)
            action = np.tile(np.arange(d), paths)
            chosen = code_a + action * self.powers[f]
            right_a = np.repeat(right, d) + (action == correct[f])
            nxt, rew, done = leave(f, chosen, right_a)
            length = np.tile(lengths, chosen.size)
            walk = length > 0
            corridor = self.corridor_base[f] + np.repeat(chosen, k) * self.cells_per_block
            pieces.append(
                (
                    np.repeat(self.door_base[f] + code_a, k),
                    np.repeat(action, k),
                    np.full(chosen.size * k, self.length_probability),
                    np.where(walk, corridor + cell_offset(length), np.repeat(nxt, k)),
                    np.where(walk, 0.0, np.repeat(rew, k)),
                    np.where(walk, False, np.repeat(done, k)),
                )
            )
            # corridor cells of floor f: (path incl. floor f's door, length, position) x action
            walked = lengths[lengths > 0]
            if walked.size:
                per_length = np.repeat(walked, walked)
                position = np.concatenate([np.arange(1, ll + 1) for ll in walked.tolist()])
                offset = cell_offset(per_length) + position - 1
                cells = code_a.size
                path_c = np.repeat(chosen, offset.size)
                here = (
                    self.corridor_base[f] + path_c * self.cells_per_block + np.tile(offset, cells)
                )
                inside = np.tile(position < per_length, cells)
                nxt_c, rew_c, done_c = (
                    np.repeat(x, offset.size) for x in leave(f, chosen, right_a)
                )
                pieces.append(
                    (
                        np.repeat(here, d),
                        np.tile(np.arange(d), here.size),
                        np.ones(here.size * d),
                        np.repeat(np.where(inside, here + 1, nxt_c), d),
                        np.repeat(np.where(inside, 0.0, rew_c), d),
                        np.repeat(np.where(inside, False, done_c), d),
                    )
                )
        columns = tuple(np.concatenate(column) for column in zip(*pieces, strict=True))
        return model_from_arrays(self.num_states, d, 0, columns, self.state_from_id)


class DilutedDoorsV1Env(RoutineEnv[np.ndarray, PathState], dynamics=PathDoorsDynamics):
    """## Description

    The controlled environment of "Drowning in Routine: Signal Dilution in Multi-Turn Agent
    Training" (arXiv 2606.22164), in the version whose observation never reveals a decision's
    outcome before the end. The agent crosses ``num_floors`` floors. Each floor starts with one
    *critical* step, a choice among ``num_doors`` doors of which exactly one is correct (fixed by
    ``layout_seed``, so a policy can learn it), followed by ``routine_length`` *routine* steps in
    a corridor, where every action just advances the agent one cell. A wrong door does not end
    the episode, so an episode always lasts ``T = sum over floors of (1 + L_f)`` steps, and with
    a fixed routine length ``L`` the decision density is ``rho = 1 / (1 + L)`` exactly.

    Whether a door was right is revealed only by the final reward: as in the tasks the suite
    stands for (an agent learns whether its decision was right when the tests pass or fail), a
    learned critic must assign the credit itself. With ``reward="success"`` a single wrong door
    makes the return 0 whatever follows, so the doors after a wrong one are *not* critical (the
    realized density is then lower than ``1 / (1 + L)``); with ``reward="fraction"`` every door
    counts and every episode has density exactly ``num_floors / T``.

    ## Action Space

    ``Discrete(num_doors)``. At a door, action ``k`` opens door ``k``. In a corridor every action
    moves the agent one cell forward (the action is ignored).

    ## Observation Space

    ``Box(0, 1, (size,), float32)``, a function of the state; what it reveals depends on
    ``observation``:

    | index | meaning |
    |---|---|
    | ``0 .. num_floors-1`` | one-hot current floor (all zero once finished) |
    | ``num_floors`` | 1 at the doors, else 0 |
    | ``num_floors + 1`` | corridor position / max routine length (0 at the doors) |
    | ``num_floors + 2`` | corridor cells left / max routine length |
    | ``num_floors + 3`` | 1 in the terminal state, else 0 |
    | ``num_floors + 4 ..`` | ``"actions"`` only: the door chosen on each floor passed, |
    | | one-hot per floor (``num_floors * num_doors`` entries; zero for floors not passed) |

    - ``"actions"`` (default, ``size = num_floors + 4 + num_floors * num_doors``): the agent's own
      past choices, as an agent's context holds its transcript. For every action sequence the
      observations are the same whatever ``layout_seed``: they reveal nothing of which doors
      are correct (a property test checks it).
    - ``"position"`` (``size = num_floors + 4``): no history; the value is then not a function of
      the observation (for memory-based methods).
    - ``"progress"`` (``size = num_floors + 5``): v0's observation, whose index ``num_floors + 3``
      is the share of doors chosen correctly so far (then ``num_floors + 4`` is terminal). It
      reveals each door's outcome one step after it is chosen: kept only for comparison.

    **What the observation reveals.** In ``"actions"`` and ``"position"``: where the agent is
    (floor, at the doors or the corridor cell and cells left) and, in ``"actions"``, the doors
    it chose; never which door is right, nor whether a chosen door was right, before the end
    (the reward). For the same actions and routine lengths every observation before the last,
    and ``describe()``, are the same under every ``layout_seed`` (the contract suite's leak
    probes check it, and that a classifier reading the observations predicts success on unseen
    layouts no better than one reading what the actions alone imply). ``"progress"`` shows the
    share of doors right so far, as ``DilutedDoors-v0`` does.

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
    mistake with ``"success"``. ``state_id`` encodes the path of doors chosen (the Markov state) and
    is privileged: it reveals nothing of the outcome either, but equal observations give equal ids
    only in ``"actions"`` mode. ``turn_score`` (float, every ``reset``/``step``; privileged: the
    observation never shows it before the end): 1.0 while every door of the path is right, else
    0.0.

    ## Arguments

    ```python
    gym.make("DilutedDoors-v1", num_floors=3, num_doors=3, routine_length=10,
             reward="success", layout_seed=0, observation="actions", max_steps=None,
             render_mode=None)
    ```

    - ``num_floors`` (int >= 1), ``num_doors`` (int >= 2), ``routine_length`` (int >= 0 or a pair
      ``(low, high)``), ``reward`` (``"success"`` or ``"fraction"``), ``layout_seed`` (int >= 0):
      as for ``DilutedDoors-v0``.
    - ``observation`` (``"actions"``, ``"position"`` or ``"progress"``): see Observation Space.
    - ``max_steps`` (int >= 1 or ``None``): truncate episodes after this many steps.
    - ``render_mode`` (``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``, the text picture
      printed at every reset and step): the pictures show which doors were right (a view for
      people, not for the agent).

    The state count grows with the paths: ``sum_{f<F} D^f + D^F + cells * sum_{f<F} D^(f+1)``
    (430 states at the defaults; 4.4 million at 10 floors, 3 doors, ``L = 50``). The exact model is
    built on first use up to 20 million states. The MDP is public: ``env.unwrapped.dynamics`` is
    an immutable :class:`PathDoorsDynamics` with the exact model ``dynamics.model()`` and the
    perfect critic ``dynamics.oracle(policy)``, also forwarded by the env. ``copy.deepcopy(env)``
    is an independent branch with the same future for the same actions.

    ## Version History

    - v1: the observation no longer shows the doors chosen correctly so far (v0's index
      ``num_floors + 3``, which told a learned critic each door's outcome one step after the
      choice); the state holds the path of doors chosen; ``observation`` chooses what is shown.
    - v0: initial release (kept registered, unchanged, for comparison).
    """


__all__ = [
    "OBSERVATIONS",
    "DilutedDoorsV1Env",
    "PathDoorsDynamics",
    "PathState",
]
