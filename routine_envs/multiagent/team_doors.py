"""Team Diluted Doors: Diluted Doors for a team on a shared reward, with per-agent annotations."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pettingzoo import AECEnv

from routine_envs.envs import validation
from routine_envs.envs.diluted_doors import DilutedDoorsEnv, DoorsState
from routine_envs.multiagent.base import TeamEnv, to_aec
from routine_envs.oracle import Outcome


def _chooser_table(chooser: Any, num_agents: int, num_floors: int) -> tuple[int, ...]:
    """The designated agent of every floor, from ``"rotate"``, an agent index, or a sequence of
    ``num_floors`` agent indices."""
    if isinstance(chooser, str):
        if chooser != "rotate":
            raise ValueError(
                f"chooser must be 'rotate', an agent index or a sequence of {num_floors} agent "
                f"indices, got {chooser!r}"
            )
        return tuple(f % num_agents for f in range(num_floors))
    if isinstance(chooser, numbers.Integral) and not isinstance(chooser, bool):
        k = validation.integer("chooser", chooser, minimum=0, maximum=num_agents - 1)
        return (k,) * num_floors
    if isinstance(chooser, (list, tuple)):
        if len(chooser) != num_floors:
            raise ValueError(
                f"chooser as a sequence needs one agent index per floor ({num_floors}), "
                f"got {len(chooser)}: {chooser!r}"
            )
        return tuple(
            validation.integer(f"chooser[{f}]", k, minimum=0, maximum=num_agents - 1)
            for f, k in enumerate(chooser)
        )
    raise ValueError(
        f"chooser must be 'rotate', an agent index or a sequence of {num_floors} agent indices, "
        f"got {chooser!r} ({type(chooser).__name__})"
    )


class TeamDilutedDoorsEnv(TeamEnv[DoorsState]):
    """## Description

    Diluted Doors (``DilutedDoors-v0``) played by a team of ``num_agents`` agents on one shared
    reward. The team crosses ``num_floors`` floors together. On each floor one *designated*
    agent, the floor's chooser, picks the door (one of ``num_doors``, exactly one correct, fixed
    by ``layout_seed``); every other agent's action on that step is ignored. Then come
    ``routine_length`` routine steps in the corridor, in which every agent's action is ignored.
    The chooser of floor ``f`` is agent ``f mod num_agents`` (``chooser="rotate"``, the
    default), one fixed agent (``chooser=k``), or given per floor (a sequence).

    The dynamics are the single-agent core's: the team's joint state is a
    :class:`~routine_envs.envs.diluted_doors.DoorsState`, and a joint action moves it exactly as
    the chooser's action alone moves ``DilutedDoorsEnv`` (same transition function, same
    ``state_id``, same reward). In a team trained on the shared reward most of an agent's actions
    are routine for the team outcome: the signal is diluted across agents as well as across
    steps.

    **Per-agent decision density.** An episode lasts ``T = sum_f (1 + L_f)`` steps; agent ``i``
    is critical only at the doors of the floors it chooses (``n_i`` of them), so its decision
    density is ``rho_i = n_i / T``. With a fixed routine length ``L``:

        rho_i = n_i / (num_floors * (1 + L));  team rho (steps where some agent is critical)
        = 1 / (1 + L);  mean over agents = 1 / (num_agents * (1 + L)).

    With the rotating chooser and ``num_floors`` a multiple of ``num_agents`` (the default: 2
    agents, 4 floors) every agent has ``rho_i = 1 / (num_agents * (1 + L))`` exactly. As in the
    single-agent env, with ``reward="success"`` the doors after a wrong one are not critical, so
    such an episode's realized densities are lower.

    ## Agents

    ``possible_agents = ["agent_0", ..., "agent_{num_agents-1}"]``; every agent acts on every
    step and all leave ``env.agents`` together when the episode ends.

    ## Action Space

    ``Discrete(num_doors)`` per agent. The chooser's action ``k`` at the doors opens door ``k``;
    every other action is ignored.

    ## Observation Space

    ``Box(0, 1, (num_floors + 6 + num_agents,), float32)`` per agent:

    | index | meaning |
    |---|---|
    | ``0 .. num_floors+4`` | the single-agent observation of the joint state (see below) |
    | ``num_floors+5 .. num_floors+4+num_agents`` | one-hot of the observing agent's index |
    | ``num_floors+5+num_agents`` | 1 when the observing agent is the chooser of the current floor |

    The first ``num_floors + 5`` entries are ``DilutedDoors-v0``'s observation: floor one-hot, at
    the doors, corridor position and cells left, doors correct so far, terminal.
    ``env.state()`` concatenates every agent's observation (``state_space``).

    ## Rewards

    The single-agent reward, paid to every agent on the last step: ``"success"`` pays 1 when every
    door was correct, ``"fraction"`` the share of correct doors.

    ## Starting State

    At the doors of floor 0. The only randomness is the routine length of each floor when
    ``routine_length`` is a ``(low, high)`` range, drawn on ``env.np_random``.

    ## Episode End

    Terminated for every agent after the last floor's corridor; truncated for every agent after
    ``max_cycles`` steps when it is set (default ``None``: episodes end within
    ``num_floors * (1 + high)`` steps).

    ## Information

    ``infos[agent]`` on ``reset`` and every ``step``: ``critical`` (can *this agent's* action
    change the expected team return?) and ``state_id`` (the canonical id of the joint state, the
    same for every agent and equal to the single-agent env's id of that state). At the end, per
    agent: ``success`` (the team's), ``num_critical`` (this agent's critical steps),
    ``episode_length`` (steps of the team episode) and ``decision_density`` (``num_critical /
    episode_length``, this agent's realized rho). Exact definition of ``critical``:
    :meth:`~routine_envs.multiagent.base.TeamEnv.action_gaps` ``> 0``.

    ## Arguments

    ```python
    diluted_doors_v0.parallel_env(num_agents=2, num_floors=4, num_doors=3, routine_length=10,
                                  chooser="rotate", reward="success", layout_seed=0,
                                  max_cycles=None, render_mode=None)
    ```

    - ``num_agents`` (int >= 1): team size.
    - ``num_floors``, ``num_doors``, ``routine_length``, ``reward``, ``layout_seed``: as for
      ``DilutedDoors-v0``.
    - ``chooser`` (``"rotate"``, an agent index, or a sequence of ``num_floors`` agent indices):
      who picks the door on each floor.
    - ``max_cycles`` (int >= 1 or ``None``): truncate after this many steps.
    - ``render_mode`` (``None`` or ``"ansi"``).

    ## Version History

    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {**TeamEnv.metadata, "name": "diluted_doors_v0"}

    def __init__(
        self,
        num_agents: int = 2,
        num_floors: int = 4,
        num_doors: int = 3,
        routine_length: int | tuple[int, int] = 10,
        chooser: str | int | Sequence[int] = "rotate",
        reward: str = "success",
        layout_seed: int = 0,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        core = DilutedDoorsEnv(
            num_floors=num_floors,
            num_doors=num_doors,
            routine_length=routine_length,
            reward=reward,
            layout_seed=layout_seed,
        )
        n = validation.integer("num_agents", num_agents, minimum=1)
        super().__init__(
            num_agents=n,
            observation_size=core.observation_space.shape[0] + n + 1,
            num_actions=core.num_doors,
            max_cycles=max_cycles,
            render_mode=render_mode,
        )
        #: the single-agent core whose transition function, ids and observations are reused.
        self.core = core
        self._cores = (core,)
        #: the chooser (agent index) of every floor, shape ``(num_floors,)``.
        self.choosers: tuple[int, ...] = _chooser_table(chooser, n, core.num_floors)
        self.num_states = core.num_states
        self._chosen_doors: list[int] = []

    _shared_attributes = TeamEnv._shared_attributes | {"core", "choosers"}

    # ---------------------------------------------------------------------------- config
    @property
    def num_floors(self) -> int:
        return self.core.num_floors

    @property
    def num_doors(self) -> int:
        return self.core.num_doors

    @property
    def routine_length(self) -> int | tuple[int, int]:
        """The configured routine length: an int, or the ``(low, high)`` range."""
        return self.core.routine_length

    @property
    def reward_mode(self) -> str:
        return self.core.reward_mode

    @property
    def correct_doors(self) -> tuple[int, ...]:
        return self.core.correct_doors

    @property
    def team_decision_density(self) -> float:
        """Expected share of steps at which some agent is critical: the single-agent rho,
        ``1 / (1 + L)`` for a fixed ``L`` (an episode without a wrong door)."""
        return self.core.decision_density

    @property
    def agent_decision_density(self) -> dict[str, float]:
        """Expected ``rho_i`` of every agent: ``n_i / num_floors * team rho`` with ``n_i`` the
        floors agent ``i`` chooses (``n_i / (num_floors * (1 + L))`` for a fixed ``L``)."""
        team = self.team_decision_density
        return {
            name: self.choosers.count(i) / self.num_floors * team
            for i, name in enumerate(self.possible_agents)
        }

    @property
    def decision_density(self) -> float:
        """The mean per-agent rho, ``team rho / num_agents`` (``1 / (num_agents * (1 + L))``
        for a fixed ``L``)."""
        return self.team_decision_density / self.team_size

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode in steps (rounds), ``num_floors * (1 + high)``."""
        return self.core.max_episode_length

    # ----------------------------------------------------------------------------- hooks
    def _initial_outcomes(self) -> Sequence[tuple[float, DoorsState]]:
        return self.core._initial_outcomes()

    def _outcomes(self, state: DoorsState, actions: tuple[int, ...]) -> Sequence[Outcome]:
        if state.floor >= self.core.num_floors:
            return self.core._outcomes(state, 0)
        return self.core._outcomes(state, actions[self.choosers[state.floor]])

    def _state_id(self, state: DoorsState) -> int:
        return self.core._state_id(state)

    def _observe(self, state: DoorsState, agent: int) -> np.ndarray:
        base = self.core._observe(state)
        extra = np.zeros(self.team_size + 1, dtype=np.float32)
        extra[agent] = 1.0
        if state.floor < self.core.num_floors and self.choosers[state.floor] == agent:
            extra[-1] = 1.0
        return np.concatenate([base, extra])

    def _is_critical(self, state: DoorsState, agent: int) -> bool:
        return self.core._is_critical(state) and self.choosers[state.floor] == agent

    def _is_success(self, state: DoorsState) -> bool:
        return self.core._is_success(state)

    def describe_state(self, state_id: int) -> DoorsState:
        """Inverse of ``state_id``: the joint :class:`DoorsState` with that id."""
        return self.core.describe_state(state_id)

    # ------------------------------------------------------------------------- rendering
    def _after_reset(self) -> None:
        self._chosen_doors = []

    def _after_step(
        self, state: DoorsState, actions: tuple[int, ...], next_state: DoorsState
    ) -> None:
        if state.position == 0 and state.floor < self.core.num_floors:
            self._chosen_doors.append(actions[self.choosers[state.floor]])

    def _render_ansi(self) -> str:
        from routine_envs.multiagent.rendering import render_team_doors_ansi

        return render_team_doors_ansi(self)

    def __repr__(self) -> str:
        return (
            f"TeamDilutedDoorsEnv(num_agents={self.team_size}, num_floors={self.num_floors}, "
            f"num_doors={self.num_doors}, routine_length={self.routine_length!r}, "
            f"choosers={self.choosers}, reward={self.reward_mode!r}, "
            f"layout_seed={self.core.layout_seed})"
        )


def parallel_env(**kwargs: Any) -> TeamDilutedDoorsEnv:
    """The native ``ParallelEnv`` (keyword arguments of :class:`TeamDilutedDoorsEnv`)."""
    return TeamDilutedDoorsEnv(**kwargs)


def raw_env(**kwargs: Any) -> AECEnv:
    """The AEC version, derived with PettingZoo's ``parallel_to_aec`` (no extra wrappers)."""
    return to_aec(parallel_env(**kwargs), wrapped=False)


def env(**kwargs: Any) -> AECEnv:
    """The AEC version wrapped as PettingZoo wraps its own environments."""
    return to_aec(parallel_env(**kwargs))
