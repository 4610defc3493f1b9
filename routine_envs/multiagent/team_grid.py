"""Team Routine Grid: agents navigate parallel Routine Grid mazes on a shared reward."""

from __future__ import annotations

import itertools
import math
from abc import abstractmethod
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.routine_grid import GOAL, JUNCTION, TERMINAL_KINDS, GridDynamics
from routine_envs.multiagent.base import MAX_TEAM_SIZE, TeamDynamics, TeamEnv, agent_name
from routine_envs.multiagent.rendering import render_team_grid, team_grid_view
from routine_envs.oracle import Outcome
from routine_envs.rendering.text_view import TextView

REWARD_MODES = ("success", "fraction")

JointCells = tuple[int, ...]
"""The joint state: every agent's cell (its single-agent ``state_id``), agent 0 first."""


@dataclass(frozen=True)
class TeamMazesDynamics(TeamDynamics[tuple[Hashable, ...]]):
    """Agents in their own single-agent mazes, stepped side by side on a shared reward: one
    :attr:`core_class` per agent (``cores[i]``, the maze of ``layout_seed + i``). The joint
    state is every agent's state in its maze, agent 0 first; its ``state_id`` is ``sum_i
    id_i(s_i) * prod_{j<i} n_j`` with ``id_i`` and ``n_j`` the cores' ids and state counts.

    The fields are the team env's configuration: ``num_agents``, the cores' ``num_junctions``,
    ``branching`` and ``corridor_length``, the team's ``reward`` (``"success"``: every agent
    must win; ``"fraction"``: the share that do) and ``layout_seed``. A version implements the
    joint step, the observation, success and :meth:`can_win`.
    """

    num_agents: int = 2
    num_junctions: int = 3
    branching: int = 3
    corridor_length: int | tuple[int, int] = 5
    reward: str = "success"
    layout_seed: int = 0

    #: the single-agent dynamics of every agent's maze (built with the maze fields and the
    #: agent's ``layout_seed``)
    core_class: ClassVar[type[Dynamics]]

    def __post_init__(self) -> None:
        n = validation.integer("num_agents", self.num_agents, minimum=1, maximum=MAX_TEAM_SIZE)
        seed = validation.integer("layout_seed", self.layout_seed, minimum=0)
        reward = validation.choice("reward", self.reward, REWARD_MODES)
        cores = tuple(
            self.core_class(
                num_junctions=self.num_junctions,
                branching=self.branching,
                corridor_length=self.corridor_length,
                layout_seed=seed + i,
            )
            for i in range(n)
        )
        sizes = [core.num_states for core in cores]
        if math.prod(sizes) >= 2**63:  # state ids are int64 in every batch and vector env
            raise ValueError(
                f"num_agents={len(sizes)} gives {math.prod(sizes):.3e} joint states "
                f"(the product of {sizes[0]}-state mazes), more than int64 state ids hold "
                "(2**63): use fewer agents or smaller mazes"
            )
        first = cores[0]
        self._derive(
            num_agents=n,
            num_junctions=first.num_junctions,
            branching=first.branching,
            corridor_length=first.corridor_length,
            reward=reward,
            layout_seed=seed,
        )
        #: every agent's maze, the strides of the joint ``state_id`` and the length of a
        #: maze's observation.
        self._derive(
            cores=cores,
            strides=tuple(math.prod(sizes[:i]) for i in range(len(sizes))),
            _num_states=math.prod(sizes),
            core_observation_size=first.observation_space.shape[0],
        )

    # ---------------------------------------------------------------------------- config
    @property
    def team_size(self) -> int:
        return len(self.cores)

    @property
    def agent_num_actions(self) -> int:
        return self.branching

    @property
    def agent_observation_size(self) -> int:
        return self.core_observation_size + self.team_size + 1

    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def reward_mode(self) -> str:
        return self.reward

    @property
    def decision_density(self) -> float:
        """The mean per-agent rho (``1 / (1 + L)`` for a fixed ``L``)."""
        values = self.agent_decision_density.values()
        return float(sum(values) / len(values))

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, tuple[Hashable, ...]]]:
        starts = [core.initial_outcomes() for core in self.cores]
        return tuple(
            (math.prod(p for p, _ in combo), tuple(s for _, s in combo))
            for combo in itertools.product(*starts)
        )

    def state_id(self, state: tuple[Hashable, ...]) -> int:
        return sum(
            core.state_id(s) * stride
            for core, s, stride in zip(self.cores, state, self.strides, strict=True)
        )

    def state_from_id(self, state_id: int) -> tuple[Hashable, ...]:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        states = []
        for core in self.cores:
            state_id, own = divmod(state_id, core.num_states)
            states.append(core.state_from_id(own))
        return tuple(states)

    @abstractmethod
    def can_win(self, state: tuple[Hashable, ...], agent: int) -> bool:
        """Whether agent ``agent`` can still win its maze (privileged)."""

    def is_agent_critical(self, state: tuple[Hashable, ...], agent: int) -> bool:
        """The agent's own maze criticality while its action can change the team's return:
        with ``"success"`` only while every agent can still win (cheaper than the joint model;
        a test checks it against the exact per-agent action gap)."""
        if not self.cores[agent].is_critical(state[agent]):
            return False
        return self.reward == "fraction" or all(
            self.can_win(state, i) for i in range(self.team_size)
        )

    def is_critical(self, state: tuple[Hashable, ...]) -> bool:
        return any(self.is_agent_critical(state, i) for i in range(self.team_size))

    def turn_score(self, state: tuple[Hashable, ...]) -> float:
        """The product of each agent's exact success probability in its own maze under its
        optimal policy: the mazes are independent, so it is the team's under the optimal joint
        policy (cheaper than the joint model, which large teams cannot build; a test checks
        the two agree)."""
        return math.prod(core.turn_score(s) for core, s in zip(self.cores, state, strict=True))


@dataclass(frozen=True)
class TeamGridDynamics(TeamMazesDynamics):
    """The exact MDP of Team Routine Grid (see :class:`TeamRoutineGridV0Env` for the rules):
    one single-agent :class:`GridDynamics` per agent, whose ``state_id`` is its cell."""

    core_class = GridDynamics
    renderer = staticmethod(render_team_grid)
    #: v0's mazes and the share of teammates on track show mistakes (kept for comparison)
    hides_outcome = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self._derive(
            terminal=tuple(
                tuple(cell.kind in TERMINAL_KINDS for cell in core.layout.cells)
                for core in self.cores
            ),
            goal=tuple(
                tuple(cell.kind == GOAL for cell in core.layout.cells) for core in self.cores
            ),
            on_track=tuple(frozenset(core.layout.spine) for core in self.cores),
        )

    def junction_steps(self, agent: int) -> list[int]:
        """The steps at which agent ``agent`` stands on a junction on its way to the goal."""
        core = self.cores[agent]
        cells = core.layout.cells
        return [t for t, sid in enumerate(core.layout.spine[:-1]) if cells[sid].kind == JUNCTION]

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode in steps: the longest way to a goal."""
        return max(len(core.layout.spine) - 1 for core in self.cores)

    @property
    def agent_decision_density(self) -> dict[str, float]:
        """Every agent's rho in the episode where every agent reaches its goal:
        ``num_junctions / max_episode_length`` (``1 / (1 + L)`` for a fixed ``L``)."""
        length = self.max_episode_length
        return {agent_name(i): len(self.junction_steps(i)) / length for i in range(self.team_size)}

    @property
    def team_decision_density(self) -> float:
        """Share of the steps with some agent critical in the episode where every agent reaches
        its goal (``1 / (1 + L)`` for a fixed ``L``)."""
        steps = set().union(*(self.junction_steps(i) for i in range(self.team_size)))
        return len(steps) / self.max_episode_length

    def joint_outcomes(self, state: JointCells, actions: tuple[int, ...]) -> Sequence[Outcome]:
        nxt = list(state)
        arrived = 0.0
        for i, cell in enumerate(state):
            if self.terminal[i][cell]:
                continue  # this agent's maze has ended: it waits
            ((_, nxt[i], reward, _),) = self.cores[i].outcomes(cell, actions[i])
            arrived += reward
        done = all(self.terminal[i][c] for i, c in enumerate(nxt))
        if self.reward == "fraction":
            team = arrived / self.team_size
        else:
            team = 1.0 if done and all(self.goal[i][c] for i, c in enumerate(nxt)) else 0.0
        return ((1.0, tuple(nxt), team, done),)

    def teammates_on_track(self, state: JointCells, agent: int) -> float:
        """Share of agent ``agent``'s teammates still on their way to their goal."""
        others = [i for i in range(self.team_size) if i != agent]
        if not others:
            return 1.0
        return sum(state[i] in self.on_track[i] for i in others) / len(others)

    def can_win(self, state: JointCells, agent: int) -> bool:
        """Whether agent ``agent`` is still on its way to its goal."""
        return state[agent] in self.on_track[agent]

    def observe_agent(self, state: JointCells, agent: int) -> np.ndarray:
        base = self.cores[agent].observe(state[agent])
        extra = np.zeros(self.team_size + 1, dtype=np.float32)
        extra[agent] = 1.0
        extra[-1] = self.teammates_on_track(state, agent)
        return np.concatenate([base, extra])

    def is_success(self, state: JointCells) -> bool:
        return all(self.goal[i][c] for i, c in enumerate(state))

    def build_text_view(self) -> TextView:
        """One agent's observation in words, for the turn-based adapter
        (:func:`~routine_envs.multiagent.rendering.team_grid_view`)."""
        return team_grid_view(self)


class TeamRoutineGridV0Env(TeamEnv[JointCells], dynamics=TeamGridDynamics, name="routine_grid_v0"):
    """## Description

    ``num_agents`` agents each navigate their own Routine Grid maze (``RoutineGrid-v0``), side
    by side, one step per agent per round, on one shared reward. Agent ``i``'s maze is the
    single-agent maze of ``layout_seed + i``: junctions where it picks one of ``branching``
    branches (one continues towards its goal, the others end in lava or a dead end), joined by
    corridors of ``corridor_length`` cells in which every action moves it one cell along. Each
    agent's junction decisions are its own; the team is paid once for all of them.

    An agent whose maze episode has ended (goal, lava or dead end) waits on its terminal cell
    until the team's episode ends, when every maze has ended; its actions are ignored. Every
    branch of a junction, right or wrong, is ``L_j`` cells long, so with a fixed corridor length
    all agents reach their ``j``-th junction on the same step.

    **Per-agent criticality.** Agent ``i`` is critical exactly at its junctions while its own
    action can still change the team's return: with ``reward="fraction"`` at every junction;
    with ``reward="success"`` (every agent must reach its goal) only while every teammate can
    still reach its own goal. Once a teammate has taken a wrong branch, the other agents'
    junctions are routine for the team outcome.

    **Decision density.** For a fixed corridor length ``L``, in an episode where every agent
    reaches its goal, each agent is critical at ``num_junctions`` of the ``num_junctions *
    (1 + L)`` steps: ``rho_i = 1 / (1 + L)`` for every agent, and the team's steps with some
    critical agent have the same share. With ``corridor_length=(low, high)`` the mazes differ in
    length; ``agent_decision_density`` and ``team_decision_density`` give the exact values for
    the episode in which every agent succeeds.

    ## Agents

    ``possible_agents = ["agent_0", ..., "agent_{num_agents-1}"]``; every agent acts on every
    step and all leave ``env.agents`` together when the team's episode ends.

    ## Action Space

    ``Discrete(branching)`` per agent: as in ``RoutineGrid-v0`` (the ``k``-th way out at a
    junction, counted from the agent's left; any action walks a corridor; ignored once the
    agent's maze has ended).

    ## Observation Space

    ``Box(0, 1, (num_junctions + 14 + num_agents,), float32)`` per agent:

    | index | meaning |
    |---|---|
    | ``0 .. num_junctions+12`` | the single-agent vector observation of the agent's own cell |
    | ``num_junctions+13 .. num_junctions+12+num_agents`` | one-hot of the observing agent's index |
    | ``num_junctions+13+num_agents`` | share of the teammates still able to reach their goal |

    (The last entry is 1 for a team of one.)

    **What the observation reveals.** The agent's own entries are ``RoutineGrid-v0``'s vector
    observation of its cell, with its giveaways (see that page): a junction shows only its ways
    out (nothing of the right one with ``branching=3``, or with ``corridor_length >= 2``; with
    ``branching=2`` and a corridor of at most one cell an open way ahead is the right one), and
    from the first corridor cell after a junction the heading and doorways show whether the
    agent's own choice was right (the way on heads east exactly on a right branch), one step
    after it and long before the team's reward. The last entry shows the teammates' choices
    just as early: it drops on the step right after a teammate takes a wrong branch, so every
    agent learns of the mistake at once (with ``reward="success"``, also that its own remaining
    junctions have become routine), before the reward that pays for it.

    ``env.state()`` concatenates every agent's observation (``state_space``).

    ## Rewards

    ``"success"`` (default): 1, paid to every agent on the last step, when every agent reached
    its goal; else 0. ``"fraction"``: each agent reaching its goal pays ``1 / num_agents`` to
    every agent on the step it arrives.

    ## Starting State

    Every agent at junction 0 of its maze. The dynamics are deterministic: ``reset(seed=...)``
    only seeds ``env.np_random``.

    ## Episode End

    Terminated for every agent when every maze has ended; truncated for every agent after
    ``max_cycles`` steps when it is set (default ``None``: episodes end within
    ``max_episode_length`` steps).

    ## Information

    ``infos[agent]`` on ``reset`` and every ``step``: ``critical`` (can *this agent's* action
    change the expected team return?), ``anchor`` (a stable hash of this agent's observation),
    ``turn_score`` (the team's: the exact probability of success from the joint state under the
    optimal joint policy; privileged) and ``state_id`` (the canonical id of the joint state, the
    same for every agent: ``sum_i cell_i * prod_{k<i} n_k`` with ``cell_i`` the agent's
    single-agent ``state_id`` and ``n_k`` the cells of maze ``k``). At the end, per agent:
    ``success`` (the team's: every agent reached its goal), ``num_critical``,
    ``episode_length`` and ``decision_density`` (this agent's). Exact definition of
    ``critical``: :meth:`~routine_envs.multiagent.base.TeamEnv.action_gaps` ``> 0``.

    ## Arguments

    ```python
    routine_grid_v0.parallel_env(num_agents=2, num_junctions=3, branching=3, corridor_length=5,
                                 reward="success", layout_seed=0, max_cycles=None,
                                 render_mode=None)
    ```

    - ``num_agents`` (int >= 1): team size; agent ``i`` walks the maze of ``layout_seed + i``.
    - ``num_junctions``, ``branching``, ``corridor_length``, ``layout_seed``: as for
      ``RoutineGrid-v0`` (hard routine, vector observations).
    - ``reward`` (``"success"`` or ``"fraction"``): see Rewards.
    - ``max_cycles`` (int >= 1 or ``None``): truncate after this many steps.
    - ``render_mode`` (``None``, ``"ansi"`` or ``"human"``: the text picture printed at every reset
      and step).

    ## Version History

    - v0: initial release (kept, unchanged, for comparison; it leaks: see What the observation
      reveals).
    - v1: ``TeamRoutineGrid-v1`` (``routine_grid_v1``), on ``RoutineGrid-v1``: no outcome shown.
    """
