"""Team Routine Grid v1: agents walk their own Routine Grid v1 mazes on a shared reward."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from routine_envs.envs.diluted_doors_v1 import PathState
from routine_envs.envs.routine_grid_v1 import TreeGridDynamics
from routine_envs.multiagent.base import TeamEnv, agent_name
from routine_envs.multiagent.rendering import render_team_grid_v1, team_grid_v1_view
from routine_envs.multiagent.team_grid import TeamMazesDynamics
from routine_envs.oracle import Outcome
from routine_envs.rendering.text_view import TextView

JointPaths = tuple[PathState, ...]
"""The joint state: every agent's :class:`PathState` in its own maze, agent 0 first."""


@dataclass(frozen=True)
class TeamTreeGridDynamics(TeamMazesDynamics):
    """The exact MDP of Team Routine Grid v1 (see :class:`TeamRoutineGridV1Env` for the rules):
    one :class:`TreeGridDynamics` per agent. Each core is in ``"success"`` mode (an agent's
    maze is solved when every way it took was right); the team's reward combines them."""

    core_class = TreeGridDynamics
    renderer = staticmethod(render_team_grid_v1)
    hides_outcome = True

    @property
    def max_episode_length(self) -> int:
        """The longest possible episode in steps, ``num_junctions * (1 + high)``."""
        return max(core.max_episode_length for core in self.cores)

    @property
    def agent_decision_density(self) -> dict[str, float]:
        """Every agent's rho in an episode where every way taken is right (``1 / (1 + L)`` for
        a fixed ``L``: the single-agent rho)."""
        return {agent_name(i): core.decision_density for i, core in enumerate(self.cores)}

    @property
    def team_decision_density(self) -> float:
        """Share of the steps with some agent critical in an episode where every way taken is
        right, for a fixed ``L`` (every agent reaches its junctions on the same steps):
        ``1 / (1 + L)``; with a range, the mean of the agents' (a lower bound)."""
        return self.decision_density

    def ended(self, state: JointPaths, agent: int) -> bool:
        """Whether agent ``agent`` has walked through its exit door."""
        return state[agent].floor >= self.cores[agent].num_junctions

    def solved(self, state: JointPaths, agent: int) -> bool:
        """Whether every way agent ``agent`` took so far was right (privileged)."""
        path = state[agent].path
        return self.cores[agent].core.count_correct(path) == len(path)

    def can_win(self, state: JointPaths, agent: int) -> bool:
        """Whether every way agent ``agent`` took so far was right (:meth:`solved`)."""
        return self.solved(state, agent)

    def joint_outcomes(self, state: JointPaths, actions: tuple[int, ...]) -> Sequence[Outcome]:
        per_agent = [
            ((1.0, here),)
            if self.ended(state, i)  # this agent's maze has ended: it waits
            else tuple((p, nxt) for p, nxt, _, _ in self.cores[i].outcomes(here, actions[i]))
            for i, here in enumerate(state)
        ]
        out = []
        for combo in itertools.product(*per_agent):
            nxt = tuple(s for _, s in combo)
            done = all(self.ended(nxt, i) for i in range(self.team_size))
            reward = 0.0
            if done:
                wins = [self.cores[i].is_success(s) for i, s in enumerate(nxt)]
                reward = float(all(wins)) if self.reward == "success" else sum(wins) / len(wins)
            out.append((math.prod(p for p, _ in combo), nxt, reward, done))
        return tuple(out)

    def observe_agent(self, state: JointPaths, agent: int) -> np.ndarray:
        """The agent's own maze observation (its goal flag hidden until every maze has
        ended), its one-hot index and the share of the team through its exit doors."""
        base = self.cores[agent].observe(state[agent])
        through = sum(self.ended(state, i) for i in range(self.team_size)) / self.team_size
        if through < 1.0:
            base[self.num_junctions + 11] = 0.0  # the outcome shows when the team's episode ends
        extra = np.zeros(self.team_size + 1, dtype=np.float32)
        extra[agent] = 1.0
        extra[-1] = through
        return np.concatenate([base, extra])

    def is_success(self, state: JointPaths) -> bool:
        return all(core.is_success(s) for core, s in zip(self.cores, state, strict=True))

    def build_text_view(self) -> TextView:
        """One agent's observation in words (:func:`team_grid_v1_view`)."""
        return team_grid_v1_view(self)


class TeamRoutineGridV1Env(
    TeamEnv[JointPaths], dynamics=TeamTreeGridDynamics, name="routine_grid_v1"
):
    """## Description

    ``num_agents`` agents each walk their own Routine Grid v1 maze (``RoutineGrid-v1``), side by
    side, one step per agent per round, on one shared reward. Agent ``i``'s maze is the
    single-agent maze of ``layout_seed + i``: ``num_junctions`` junctions, each with
    ``branching`` ways out that all look and continue alike (one is right), joined by corridors
    of ``corridor_length`` cells in which every action moves the agent one cell on, and an exit
    door after the last junction's corridor. Each agent's decisions are its own; the team is
    paid once, when every agent has walked through its exit door. An agent through its door
    waits there (its actions ignored) until the team's episode ends.

    **Per-agent criticality.** Agent ``i`` is critical exactly at its junctions while its own
    way can still change the team's return: with ``reward="fraction"`` while its own ways so far
    were all right; with ``reward="success"`` while every agent's ways so far were all right.

    **Decision density.** For a fixed corridor length ``L`` every agent reaches its ``j``-th
    junction on the same step; in an episode where every way taken is right each agent is
    critical at ``num_junctions`` of the ``num_junctions * (1 + L)`` steps: ``rho_i = 1 / (1 +
    L)``. With ``corridor_length=(low, high)`` each corridor's length is drawn per episode.

    ## Agents

    ``possible_agents = ["agent_0", ..., "agent_{num_agents-1}"]``; every agent acts on every
    step and all leave ``env.agents`` together when the team's episode ends.

    ## Action Space

    ``Discrete(branching)`` per agent, as in ``RoutineGrid-v1``: the ``k``-th way out of a
    junction counted from the agent's left; any action walks a corridor; ignored once the agent
    is through its exit door.

    ## Observation Space

    ``Box(0, 1, (size + num_agents + 1,), float32)`` per agent, ``size = num_junctions *
    (branching + 1) + 12``:

    | index | meaning |
    |---|---|
    | ``0 .. size-1`` | ``RoutineGrid-v1``'s vector observation of the agent's own maze |
    | ``size .. size+num_agents-1`` | one-hot of the observing agent's index |
    | ``size+num_agents`` | share of the team (the agent included) through their exit doors |

    The goal flag of the agent's own observation (its index ``num_junctions + 11``) stays 0
    until every agent is through its door. ``env.state()`` concatenates every agent's
    observation (``state_space``).

    **What the observation reveals.** Nothing of which way is right, nor whether a way taken
    (the agent's or a teammate's) was right, until the team's episode ends: an agent sees its own
    walk (``RoutineGrid-v1``'s observation: where it is, the ways open, the ways it took) and how
    many of the team have walked through their exit doors, which depends on the corridor lengths
    alone. For the same joint actions and corridor lengths the observations before the last are
    the same under every ``layout_seed`` (the contract suite's leak probes check it). At the end
    every agent's goal flag and the reward show the outcome. ``TeamRoutineGrid-v0`` is kept for
    comparison: its agents see their own and their teammates' mistakes one step after them.

    ## Rewards

    Paid to every agent when the team's episode ends: ``"success"`` (default) 1 when every
    agent's maze was solved (every way right), else 0; ``"fraction"`` the share of agents whose
    maze was solved.

    ## Starting State

    Every agent at junction 1 of its maze, heading east. The only randomness is the corridor
    lengths when ``corridor_length`` is a ``(low, high)`` range (drawn on ``env.np_random``).

    ## Episode End

    Terminated for every agent when every agent is through its exit door; truncated for every
    agent after ``max_cycles`` steps when it is set (default ``None``: episodes end within
    ``max_episode_length`` steps).

    ## Information

    ``infos[agent]`` on ``reset`` and every ``step``: ``critical`` (can *this agent's* action
    change the expected team return?), ``anchor`` (a stable hash of this agent's observation)
    and ``state_id`` (the canonical id of the joint state, the same for every agent). At the end,
    per agent: ``success`` (the team's), ``num_critical``, ``episode_length`` and
    ``decision_density`` (this agent's). ``turn_score`` on every step (the team's, privileged):
    the product of each agent's exact success probability in its maze. Exact definition of
    ``critical``:
    :meth:`~routine_envs.multiagent.base.TeamEnv.action_gaps` ``> 0``.

    ## Arguments

    ```python
    routine_grid_v1.parallel_env(num_agents=2, num_junctions=3, branching=3, corridor_length=5,
                                 reward="success", layout_seed=0, max_cycles=None,
                                 render_mode=None)
    ```

    - ``num_agents`` (int, 1..16): team size; agent ``i`` walks the maze of ``layout_seed + i``.
    - ``num_junctions``, ``branching``, ``corridor_length``, ``layout_seed``: as for
      ``RoutineGrid-v1`` (vector observations).
    - ``reward`` (``"success"`` or ``"fraction"``): see Rewards.
    - ``max_cycles`` (int >= 1 or ``None``): truncate after this many steps.
    - ``render_mode`` (``None``, ``"ansi"`` or ``"human"``): the text picture (for people: it
      marks each way taken right or wrong).

    ## Version History

    - v1: on ``RoutineGrid-v1``: no agent sees whether a way (its own or a teammate's) was
      right before the end (v0's geometry showed an agent its own mistakes, and its last entry,
      the share of teammates still on track, showed theirs); the reward is paid at the end in
      both modes.
    - v0: ``TeamRoutineGrid-v0``, kept registered, unchanged, for comparison.
    """
