"""A contributed environment, outside the package: one file, one registration call.

``tests/conftest.py`` imports every module of this folder; the contract suite, the text
interface, the native vector env, ``routine_envs.diagnose`` and the SNR lab then take the id
like any of the package's (``tests/test_contributed_env.py``).
"""

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs import register_dynamics
from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation


class KeyState(NamedTuple):
    """``cell`` 0..length (``length``: at the door), ``key_at`` the key's cell, ``has_key``;
    ``ended`` 0 while walking, 1 the door stayed shut, 2 it opened."""

    cell: int
    key_at: int
    has_key: int
    ended: int


@dataclass(frozen=True)
class KeyCorridorDynamics(Dynamics):
    """## Description
    You walk a corridor of ``length`` cells to a locked door. A key lies on one of the cells,
    drawn at the start; pick it up where it lies (it slips from your hand with probability
    ``fumble``), then open the door at the end with it.

    ## Action Space
    ``Discrete(3)``: 0 ``forward``, 1 ``pick_up``, 2 ``open_door``. In the corridor every action
    moves one cell on (``pick_up`` also takes the key where it lies); at the door every action
    ends the episode.

    ## Observation Space
    ``Box(0, 1, (4,), float32)``: the cell / ``length``, a key lies here, you hold the key, the
    episode is over. Where the key lies shows only on its cell; whether you hold it is your own
    doing: nothing hidden about a decision's outcome is shown.

    ## Rewards
    1 for opening the door with the key, else 0.

    ## Starting State
    Cell 0 without the key; the key's cell uniform in ``0..length-1`` (on ``np_random``).

    ## Episode End
    Terminated at the door (every action there ends the episode), after ``length + 1`` steps.

    ## Information
    ``critical``, ``state_id``, ``anchor`` and ``turn_score`` (the default: the exact success
    probability under the optimal policy) on every step; ``success``, ``num_critical``,
    ``episode_length`` and ``decision_density`` at the end. Critical: the key's cell (before
    the key is taken) and the door with the key in hand.

    ## Arguments
    ``length`` (int, 1..100: there are ``2 (length + 1) length + 2`` state ids), ``fumble``
    (probability in [0, 1)), ``max_steps``, ``render_mode`` (``None``, ``"ansi"``, ``"human"``).

    ## Version History
    - v0: initial release.
    """

    length: int = 6
    fumble: float = 0.25

    density_kwarg = "length"
    density_rule = "length L: rho = 2/(1+L) when the key is taken"
    small_config: ClassVar[dict] = {"length": 3}

    def __post_init__(self):
        self._derive(
            length=validation.integer("length", self.length, minimum=1, maximum=100),
            fumble=validation.probability("fumble", self.fumble),
        )
        if self.fumble >= 1:
            raise ValueError(f"fumble must be < 1 (the key must be takeable), got {self.fumble}")

    num_states = property(lambda self: 2 * (self.length + 1) * self.length + 2)
    num_actions = property(lambda self: 3)
    observation_space = property(lambda self: gym.spaces.Box(0, 1, (4,), np.float32))
    decision_density = property(lambda self: 2 / (1 + self.length))
    max_episode_length = property(lambda self: self.length + 1)

    def action_names(self):
        return ("forward", "pick_up", "open_door")

    def initial_outcomes(self):
        return tuple((1 / self.length, KeyState(0, k, 0, 0)) for k in range(self.length))

    def outcomes(self, state, action):
        cell, key_at, has_key, _ = state
        if cell == self.length:  # the door: every action ends the episode
            opened = has_key and action == 2
            return ((1.0, self.ending(opened), float(opened), True),)
        on = KeyState(cell + 1, key_at, has_key, 0)
        if action != 1 or cell != key_at or has_key:
            return ((1.0, on, 0.0, False),)
        taken = on._replace(has_key=1)
        return ((1 - self.fumble, taken, 0.0, False), (self.fumble, on, 0.0, False))

    def ending(self, opened):
        return KeyState(self.length, 0, int(opened), 1 + int(opened))

    def state_id(self, state):
        if state.ended:
            return self.num_states - 3 + state.ended
        return (state.cell * self.length + state.key_at) * 2 + state.has_key

    def state_from_id(self, state_id):
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        if state_id >= self.num_states - 2:
            return self.ending(state_id == self.num_states - 1)
        block, has_key = divmod(state_id, 2)
        return KeyState(*divmod(block, self.length), has_key, 0)

    def observe(self, state):
        key_here = state.cell == state.key_at and not state.has_key and not state.ended
        return np.array(
            [state.cell / self.length, key_here, state.has_key, state.ended > 0], np.float32
        )

    def is_success(self, state):
        return state.ended == 2

    def describe(self, state):
        if state.ended:
            return "the door opened" if state.ended == 2 else "the door stayed shut"
        where = "at the door" if state.cell == self.length else f"cell {state.cell}"
        here = "; a key lies here" if self.observe(state)[1] else ""
        return f"{where} of {self.length}{here}; " + ("key in hand" if state.has_key else "no key")


register_dynamics("KeyCorridor-v0", KeyCorridorDynamics)
