"""Team Diluted Doors: Diluted Doors for a team on a shared reward, with per-agent annotations."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from routine_envs.envs import validation
from routine_envs.envs.diluted_doors import DoorsDynamics, DoorsState
from routine_envs.multiagent.base import MAX_TEAM_SIZE, TeamDynamics, TeamEnv, agent_name
from routine_envs.multiagent.rendering import render_team_doors, team_doors_view
from routine_envs.oracle import Outcome
from routine_envs.rendering.text_view import TextView


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


@dataclass(frozen=True)
class TeamDoorsDynamics(TeamDynamics[DoorsState]):
    """The exact MDP of Team Diluted Doors (see :class:`TeamDilutedDoorsV0Env` for the rules):
    the single-agent dynamics ``core`` (:meth:`make_core`: same joint states, ``state_id``,
    rewards), moved by the floor's chooser's action alone.

    The fields are the team env's configuration: ``num_agents``, the core's ``num_floors``,
    ``num_doors``, ``routine_length``, ``reward`` and ``layout_seed``, and ``chooser``
    (``"rotate"``, an agent index or a sequence of ``num_floors`` agent indices).
    """

    num_agents: int = 2
    num_floors: int = 4
    num_doors: int = 3
    routine_length: int | tuple[int, int] = 10
    chooser: str | int | tuple[int, ...] = "rotate"
    reward: str = "success"
    layout_seed: int = 0

    renderer = staticmethod(render_team_doors)
    #: v0's core shows the share of doors right so far (kept for comparison: v1 hides it)
    hides_outcome = False
    #: the version of the core's text view (``doors_view``)
    core_version: ClassVar[str] = "v0"

    def __post_init__(self) -> None:
        core = self.make_core()
        n = validation.integer("num_agents", self.num_agents, minimum=1, maximum=MAX_TEAM_SIZE)
        choosers = _chooser_table(self.chooser, n, core.num_floors)
        chooser = tuple(self.chooser) if isinstance(self.chooser, list) else self.chooser
        self._derive(
            num_agents=n,
            chooser=chooser,
            num_floors=core.num_floors,
            num_doors=core.num_doors,
            routine_length=core.routine_length,
            reward=core.reward,
            layout_seed=core.layout_seed,
        )
        #: the single-agent dynamics, the chooser (agent index) of every floor (length
        #: ``num_floors``) and the length of the core's observation.
        self._derive(
            core=core,
            choosers=choosers,
            core_observation_size=core.observation_space.shape[0],
        )

    def make_core(self) -> DoorsDynamics:
        """The single-agent dynamics of the configuration (``DilutedDoors-v0``'s)."""
        return DoorsDynamics(
            self.num_floors, self.num_doors, self.routine_length, self.reward, self.layout_seed
        )

    # ---------------------------------------------------------------------------- config
    @property
    def team_size(self) -> int:
        return self.num_agents

    @property
    def agent_num_actions(self) -> int:
        return self.num_doors

    @property
    def agent_observation_size(self) -> int:
        return self.core_observation_size + self.num_agents + 1

    @property
    def num_states(self) -> int:
        return self.core.num_states

    @property
    def reward_mode(self) -> str:
        return self.reward

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
            agent_name(i): self.choosers.count(i) / self.num_floors * team
            for i in range(self.num_agents)
        }

    @property
    def decision_density(self) -> float:
        """The mean per-agent rho, ``team rho / num_agents`` (``1 / (num_agents * (1 + L))``
        for a fixed ``L``)."""
        return self.team_decision_density / self.num_agents

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode in steps (rounds), ``num_floors * (1 + high)``."""
        return self.core.max_episode_length

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, DoorsState]]:
        return self.core.initial_outcomes()

    def joint_outcomes(self, state: DoorsState, actions: tuple[int, ...]) -> Sequence[Outcome]:
        if state.floor >= self.core.num_floors:
            return self.core.outcomes(state, 0)
        return self.core.outcomes(state, actions[self.choosers[state.floor]])

    def state_id(self, state: DoorsState) -> int:
        return self.core.state_id(state)

    def state_from_id(self, state_id: int) -> DoorsState:
        return self.core.state_from_id(state_id)

    def observe_agent(self, state: DoorsState, agent: int) -> np.ndarray:
        base = self.core.observe(state)
        extra = np.zeros(self.num_agents + 1, dtype=np.float32)
        extra[agent] = 1.0
        if state.floor < self.core.num_floors and self.choosers[state.floor] == agent:
            extra[-1] = 1.0
        return np.concatenate([base, extra])

    def is_agent_critical(self, state: DoorsState, agent: int) -> bool:
        """The core's criticality, for the floor's chooser only (cheaper than the joint model;
        a test checks it against the exact per-agent action gap)."""
        return self.core.is_critical(state) and self.choosers[state.floor] == agent

    def is_critical(self, state: DoorsState) -> bool:
        return self.core.is_critical(state)

    def is_success(self, state: DoorsState) -> bool:
        return self.core.is_success(state)

    def turn_score(self, state: DoorsState) -> float:
        """The core's: 1.0 while every door passed so far was right (whoever chose it), the
        exact success probability under the optimal joint policy (cheaper than the joint model;
        a test checks the two agree)."""
        return self.core.turn_score(state)

    def describe(self, state: DoorsState) -> str:
        text = self.core.describe(state)
        if state.floor < self.core.num_floors:
            text += f"; {agent_name(self.choosers[state.floor])} chooses on this floor"
        return text

    def build_text_view(self) -> TextView:
        """One agent's observation in words, for the turn-based adapter
        (:func:`~routine_envs.multiagent.rendering.team_doors_view`)."""
        return team_doors_view(self)


class TeamDilutedDoorsV0Env(
    TeamEnv[DoorsState], dynamics=TeamDoorsDynamics, name="diluted_doors_v0"
):
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
    the chooser's action alone moves ``DilutedDoorsV0Env`` (same transition function, same
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

    **What the observation reveals.** Nothing of which door is right before it is chosen: the
    doors are fixed by ``layout_seed``, for the team to learn. Whether a choice was right shows
    at once: the share of doors correct so far (index ``num_floors + 3``) changes on the step
    right after the chooser's door, so every agent, chooser or not, sees whether that door was
    right ``routine_length`` steps before the floor ends, and before the reward
    (``reward="success"`` pays only at the end of the episode). With ``reward="success"`` it
    also shows, after a wrong door, that every later door has become routine. The agent index
    and the chooser bit say who acts, nothing of the doors.

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
    change the expected team return?), ``anchor`` (a stable hash of this agent's observation),
    ``turn_score`` (the team's: the exact probability of success from the joint state under the
    optimal joint policy; privileged) and ``state_id`` (the canonical id of the joint state, the
    same for every agent and equal to the single-agent env's id of that state). At the end, per
    agent: ``success`` (the team's), ``num_critical`` (this agent's critical steps),
    ``episode_length`` (steps of the team episode) and ``decision_density`` (``num_critical /
    episode_length``, this agent's realized rho). Exact definition of ``critical``:
    :meth:`~routine_envs.multiagent.base.TeamDynamics.action_gaps_per_agent` ``> 0``.

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
    - ``render_mode`` (``None``, ``"ansi"`` or ``"human"``: the text picture printed at every reset
      and step).

    ## Version History

    - v0: initial release (kept, unchanged, for comparison; it leaks: see What the observation
      reveals).
    - v1: ``TeamDilutedDoors-v1`` (``diluted_doors_v1``), on ``DilutedDoors-v1``: no outcome shown.
    """
