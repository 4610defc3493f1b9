"""The team layer: joint dynamics over joint actions, and a thin PettingZoo ``ParallelEnv``.

A team environment is, like a single-agent one, an immutable *dynamics* object plus an env that
holds only the episode. :class:`TeamDynamics` is a :class:`~routine_envs.dynamics.Dynamics`
whose actions are *joint* actions (index ``np.ravel_multi_index(actions, (m,) * k)``), so the
exact-model layer (model, oracle, optimal values) serves teams unchanged; on top it has every
agent's observation, every agent's exact action gap (the definition of ``critical`` per agent)
and the values of decentralized policies. :class:`TeamEnv` owns ``reset``/``step`` with
seeding on ``self.np_random``, action checking, the per-agent info contract of
:mod:`routine_envs.annotations`, the ``max_cycles`` truncation, ``state()``, rendering dispatch
and ``copy.deepcopy`` branching (the dynamics and their model are shared by every copy).

Every agent acts on every step (a simultaneous-move game); the team shares one reward, paid to
every agent. Agents leave ``env.agents`` only when the team's episode ends.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from routine_envs import annotations as keys
from routine_envs.annotations import observation_anchor
from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import (
    EpisodeHistory,
    branch_copy,
    check_discrete_action,
    sample_item,
)
from routine_envs.oracle import OracleValues, Outcome, evaluate_policy, success_values

StateType = TypeVar("StateType", bound=Hashable)

TeamPolicy = np.ndarray | Callable[[int, int], Sequence[float] | np.ndarray]
"""A decentralized tabular policy: an array of shape ``(num_states, num_agents, num_actions)`` of
action probabilities (agent ``i`` acts on its own observation of joint state ``s`` with row
``[s, i]``), or a function ``(state_id, agent_index) -> probabilities`` of shape
``(num_actions,)``."""


#: the largest team: every agent observes a one-hot of its index, and the joint model has
#: ``num_actions ** num_agents`` joint actions.
MAX_TEAM_SIZE = 16


def agent_name(index: int) -> str:
    """PettingZoo's recommended agent naming: ``agent_0``, ``agent_1``, ..."""
    return f"agent_{index}"


@dataclass(frozen=True)
class TeamDynamics(Dynamics[StateType, np.ndarray]):
    """A team's exact, immutable MDP over joint states and joint actions.

    Subclasses implement, besides :class:`Dynamics`' ``initial_outcomes``, ``state_id``,
    ``state_from_id``, ``is_success``, ``num_states``, ``decision_density`` and
    ``max_episode_length``: :attr:`team_size`, :attr:`agent_num_actions`,
    :attr:`agent_observation_size`, :meth:`joint_outcomes` and :meth:`observe_agent`. The
    joint ``outcomes``, the global ``observe`` and per-agent criticality are derived.
    """

    @property
    @abstractmethod
    def team_size(self) -> int:
        """Number of agents."""

    @property
    @abstractmethod
    def agent_num_actions(self) -> int:
        """Actions per agent (``Discrete``)."""

    @property
    @abstractmethod
    def agent_observation_size(self) -> int:
        """Length of one agent's observation vector (float32 in ``[0, 1]``)."""

    @abstractmethod
    def joint_outcomes(self, state: StateType, actions: tuple[int, ...]) -> Sequence[Outcome]:
        """Every ``(probability, next_state, team_reward, terminated)`` of the joint action
        ``actions`` (one action per agent, agent 0 first)."""

    @abstractmethod
    def observe_agent(self, state: StateType, agent: int) -> np.ndarray:
        """Agent ``agent``'s observation of ``state``: a fresh float32 array in ``[0, 1]``."""

    # --------------------------------------------------------------- derived: joint actions
    @property
    def num_actions(self) -> int:
        """Joint actions: ``agent_num_actions ** team_size``."""
        return self.agent_num_actions**self.team_size

    @property
    def joint_actions(self) -> tuple[tuple[int, ...], ...]:
        """Every joint action, in index order (agent 0's action varies slowest)."""
        return self._cached(
            "joint_actions",
            lambda: tuple(itertools.product(range(self.agent_num_actions), repeat=self.team_size)),
        )

    def joint_action_index(self, actions: Sequence[int]) -> int:
        """Index of a joint action (one action per agent, agent 0 first) in the joint model."""
        shape = (self.agent_num_actions,) * self.team_size
        return int(np.ravel_multi_index(tuple(actions), shape))

    def outcomes(self, state: StateType, action: int) -> Sequence[Outcome]:
        """The outcomes of joint action number ``action`` (see :meth:`joint_action_index`)."""
        return self.joint_outcomes(state, self.joint_actions[action])

    @property
    def observation_space(self) -> gym.spaces.Box:
        """The global observation (every agent's, concatenated): ``state_space``."""
        return gym.spaces.Box(0.0, 1.0, (self.team_size * self.agent_observation_size,), np.float32)

    def agent_observation_space(self) -> gym.spaces.Box:
        """A fresh observation space of one agent."""
        return gym.spaces.Box(0.0, 1.0, (self.agent_observation_size,), np.float32)

    def observe(self, state: StateType) -> np.ndarray:
        """Every agent's observation, concatenated (agent 0 first): for centralized critics."""
        return np.concatenate([self.observe_agent(state, i) for i in range(self.team_size)])

    def agent_anchor(self, state: StateType, agent: int) -> int:
        """The ``anchor`` of agent ``agent``'s observation of ``state`` (computed once)."""
        anchors = self._cached("agent_anchors", dict)
        value = anchors.get((state, agent))
        if value is None:
            value = anchors[state, agent] = observation_anchor(self.observe_agent(state, agent))
        return value

    # ---------------------------------------------------------- derived: per-agent truth
    def is_agent_critical(self, state: StateType, agent: int) -> bool:
        """Ground truth: can agent ``agent``'s action in ``state`` change the expected team
        return? By definition :meth:`action_gaps_per_agent` ``> critical_tolerance``."""
        gaps = self.action_gaps_per_agent()
        return bool(gaps[self.state_id(state), agent] > self.critical_tolerance)

    def action_gaps_per_agent(self) -> np.ndarray:
        """Every agent's exact optimal action gap, shape ``(num_states, num_agents)``:

            gap_i(s) = max over a_-i of [ max_{a_i} Q*(s, a_i, a_-i) - min_{a_i} Q*(s, a_i, a_-i) ]

        with ``Q*`` the team-optimal joint action value (undiscounted team return). Agent ``i``
        is critical in ``s`` exactly when ``gap_i(s) > 0``: some choice of the teammates'
        actions lets agent ``i``'s own action change the team's return. 0 on terminal and
        unreachable ids."""

        def build() -> np.ndarray:
            n, k, m = self.num_states, self.team_size, self.agent_num_actions
            q = self.optimal().q.reshape((n,) + (m,) * k)
            gaps = np.zeros((n, k))
            for i in range(k):
                spread = q.max(axis=1 + i) - q.min(axis=1 + i)
                gaps[:, i] = spread.reshape(n, -1).max(axis=1)
            return gaps

        return self._cached("agent_gaps", build)

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every reachable non-terminal joint ``state_id`` and each agent's observation there:
        shapes ``(K,)`` and ``(K, num_agents, observation_size)``. With these a shared policy
        network gives a :data:`TeamPolicy` for :meth:`success_probability`."""
        model = self.model()
        ids = np.flatnonzero(model.decision_states)
        k = self.team_size
        obs = np.stack(
            [np.stack([self.observe_agent(model.states[int(s)], i) for i in range(k)]) for s in ids]
        )
        return ids, obs

    # ---------------------------------------------------------- decentralized policies
    def agent_policy(self, policy: TeamPolicy) -> np.ndarray:
        """``policy`` as a validated array ``(num_states, num_agents, num_actions)``; rows of ids
        where no action is taken are uniform for a callable (never consulted)."""
        model = self.model()
        n, k, m = self.num_states, self.team_size, self.agent_num_actions
        if callable(policy):
            table = np.full((n, k, m), 1.0 / m)
            for s in np.flatnonzero(model.decision_states):
                for i in range(k):
                    table[s, i] = np.asarray(policy(int(s), i), dtype=np.float64)
            return table
        table = np.asarray(policy, dtype=np.float64)
        if table.shape != (n, k, m):
            raise ValueError(
                f"policy must have shape {(n, k, m)} (num_states, num_agents, num_actions), "
                f"got {table.shape}"
            )
        return table

    def joint_policy(self, policy: TeamPolicy) -> np.ndarray:
        """The joint-action table ``(num_states, num_actions ** num_agents)`` of a decentralized
        policy: each agent draws its action independently from its own row."""
        table = self.agent_policy(policy)
        joint = table[:, 0]
        for i in range(1, self.team_size):
            joint = (joint[:, :, None] * table[:, i, None, :]).reshape(self.num_states, -1)
        return joint

    def agent_values(self, policy: TeamPolicy, gamma: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """The perfect per-agent critic of a decentralized ``policy``, exact (no sampling).

        Returns:
            ``q`` of shape ``(num_states, num_agents, num_actions)``: ``Q_i(s, a_i) = E[Q^pi(s,
            a_i, a_-i)]`` over the teammates' actions ``a_-i ~ pi_-i(. | s)`` (the counterfactual
            value of agent ``i``'s own action), and ``v`` of shape ``(num_states,)``: ``V^pi(s)
            = sum_a pi_i(a | s) Q_i(s, a)`` for every ``i``. ``Q_i(s, .)`` is constant, so agent
            ``i``'s advantage is exactly 0, wherever agent ``i`` is routine.
        """
        table = self.agent_policy(policy)
        values = evaluate_policy(self.model(), self.joint_policy(table), gamma=gamma)
        n, k, m = self.num_states, self.team_size, self.agent_num_actions
        q_joint = values.q.reshape((n,) + (m,) * k)
        q = np.zeros((n, k, m))
        for i in range(k):
            t = np.moveaxis(q_joint, 1 + i, -1)  # (n, the teammates' axes in order..., m)
            for j in range(k):
                if j != i:  # average out teammate j (its axis is now the first after s)
                    t = np.einsum("sa...,sa->s...", t, table[:, j])
            q[:, i] = t
        return q, values.v

    def success_probability(self, policy: TeamPolicy) -> float:
        """Exact probability that a team episode under the decentralized ``policy`` ends in
        success (no sampling; the ``max_cycles`` truncation is not modelled)."""
        return success_values(self.model(), self.success_table(), self.joint_policy(policy))


class TeamEnv(ParallelEnv[str, np.ndarray, int], Generic[StateType]):
    """A thin ``ParallelEnv`` on :class:`TeamDynamics`: it holds only the episode.

    A subclass's ``__init__`` builds its dynamics from its keyword arguments and calls
    ``super().__init__(dynamics, max_cycles=..., render_mode=...)``; its pictures are the
    dynamics' ``renderer`` (the default describes the state in text). Public attributes the env
    does not define are read from its dynamics. Agent ``i`` is ``possible_agents[i] ==
    f"agent_{i}"``.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "team_env_v0",
        "render_modes": validation.RenderModes(["ansi", "human"]),
        "render_fps": 4,
        "is_parallelizable": True,
    }

    def __init__(
        self,
        dynamics: TeamDynamics[StateType],
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        render_mode = validation.render_mode(render_mode, self.metadata["render_modes"])
        #: the team's exact, immutable MDP (shared by deep copies).
        self.dynamics = dynamics
        self.render_mode = render_mode
        #: the number of agents in the team (``len(possible_agents)``; PettingZoo's
        #: ``num_agents`` is the number of *live* agents, 0 before reset and after the end).
        self.team_size = dynamics.team_size
        self.max_cycles = max_cycles
        self.possible_agents = [agent_name(i) for i in range(self.team_size)]
        self.agents: list[str] = []
        # One space object per agent, returned by every call (seeding one agent's action space
        # does not touch another's).
        self.observation_spaces = {
            name: dynamics.agent_observation_space() for name in self.possible_agents
        }
        self.action_spaces = {
            name: gym.spaces.Discrete(dynamics.agent_num_actions) for name in self.possible_agents
        }
        self.state_space = dynamics.observation_space
        self.num_actions = dynamics.agent_num_actions
        #: the joint states of the episode so far and the joint actions taken (tuples, one
        #: action per agent, agent 0 first).
        self.history: EpisodeHistory = EpisodeHistory()
        self._np_random: np.random.Generator | None = None
        self._state: StateType | None = None
        self._rounds = 0
        self._critical_now: tuple[bool, ...] = (False,) * self.team_size
        self._num_critical = [0] * self.team_size

    def __getattr__(self, name: str) -> Any:
        # Configuration lives in the dynamics; read public names from there.
        if name.startswith("_") or name == "dynamics" or "dynamics" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self.__dict__["dynamics"], name)

    # ---------------------------------------------------------------------- PettingZoo API
    def observation_space(self, agent: str) -> gym.spaces.Box:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        """The action space of ``agent`` (the same object on every call)."""
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The environment's random generator (seeded by ``reset(seed=...)``; may be set, as a
        Gymnasium env's, e.g. to give branches common random numbers)."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value

    @property
    def max_cycles(self) -> int | None:
        """Truncate the episode after this many steps (rounds of joint actions); ``None``: never
        (every episode ends by itself within ``max_episode_length`` steps)."""
        return self._max_cycles

    @max_cycles.setter
    def max_cycles(self, value: int | None) -> None:
        self._max_cycles = (
            None if value is None else validation.integer("max_cycles", value, minimum=1)
        )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode; ``seed`` reseeds ``self.np_random`` (as in Gymnasium). Returns every
        agent's observation and info (``critical``, ``state_id``)."""
        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        dynamics = self.dynamics
        state = self._state = sample_item(dynamics.initial_outcomes(), self.np_random)[1]
        self.agents = list(self.possible_agents)
        self._rounds = 0
        self._num_critical = [0] * self.team_size
        self._critical_now = self._critical_flags(state)
        self.history = EpisodeHistory([state], [])
        sid = dynamics.state_id(state)
        observations = {
            name: dynamics.observe_agent(state, i) for i, name in enumerate(self.agents)
        }
        infos = {name: self._step_info(state, sid, i) for i, name in enumerate(self.agents)}
        if self.render_mode == "human":
            self.render()
        return observations, infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        """Take one joint action: ``actions`` maps every live agent to its action.

        Raises:
            gymnasium.error.ResetNeeded: before ``reset`` or after the episode ended.
            ValueError: ``actions`` is not a mapping, or lacks a live agent or names another.
            InvalidActionError: an action outside the agent's action space.
        """
        if self._state is None:
            raise gym.error.ResetNeeded("step() called before reset(): call env.reset() first")
        if not self.agents:
            raise gym.error.ResetNeeded(
                "step() called on a finished episode (every agent is terminated or truncated): "
                "call env.reset() to start a new one"
            )
        joint = self.check_actions(actions)
        dynamics = self.dynamics
        state = self._state
        _, nxt, reward, terminated = sample_item(
            dynamics.joint_outcomes(state, joint), self.np_random
        )
        self._rounds += 1
        for i, flag in enumerate(self._critical_now):
            self._num_critical[i] += flag
        self.history.actions.append(joint)
        self.history.states.append(nxt)
        self._state = nxt
        self._critical_now = (False,) * self.team_size if terminated else self._critical_flags(nxt)
        truncated = (
            not terminated and self._max_cycles is not None and self._rounds >= self._max_cycles
        )
        sid = dynamics.state_id(nxt)
        agents = self.agents
        observations = {name: dynamics.observe_agent(nxt, i) for i, name in enumerate(agents)}
        infos = {name: self._step_info(nxt, sid, i) for i, name in enumerate(agents)}
        if terminated or truncated:
            success = bool(dynamics.is_success(nxt))
            for i, name in enumerate(agents):
                infos[name].update(
                    keys.episode_end_info(success, self._num_critical[i], self._rounds)
                )
            self.agents = []
        rewards = dict.fromkeys(agents, float(reward))
        terminations = dict.fromkeys(agents, bool(terminated))
        truncations = dict.fromkeys(agents, bool(truncated))
        if self.render_mode == "human":
            self.render()
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """``"ansi"``: a text picture of the team's state; ``"human"``: prints it and returns
        None (``reset`` and ``step`` then call it themselves)."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode='ansi'")
            return None
        if self._state is None:
            raise gym.error.ResetNeeded("render() called before reset()")
        dynamics = self.dynamics
        if self.render_mode == "human":
            print(dynamics.renderer(dynamics, self._state, self.history, "ansi"), flush=True)
            return None
        return dynamics.renderer(dynamics, self._state, self.history, self.render_mode)

    def close(self) -> None:
        """Nothing to release."""

    def state(self) -> np.ndarray:
        """A global view for centralized critics: every agent's observation, concatenated
        (agent 0 first), shape ``(num_agents * observation_size,)``, in ``state_space``."""
        if self._state is None:
            raise gym.error.ResetNeeded("state() called before reset()")
        return self.dynamics.observe(self._state)

    # ------------------------------------------------------------------------- annotations
    @property
    def joint_state(self) -> StateType:
        """The current underlying joint state (immutable)."""
        if self._state is None:
            raise gym.error.ResetNeeded("no state before reset()")
        return self._state

    @property
    def state_id(self) -> int:
        """Canonical id of the current joint state."""
        return self.dynamics.state_id(self.joint_state)

    @property
    def critical(self) -> dict[str, bool]:
        """Per agent: can its next action change the expected team return?"""
        return dict(zip(self.possible_agents, self._critical_now, strict=True))

    @property
    def rounds(self) -> int:
        """Steps (joint actions) taken in the episode so far."""
        return self._rounds

    def _critical_flags(self, state: StateType) -> tuple[bool, ...]:
        return tuple(bool(self.dynamics.is_agent_critical(state, i)) for i in range(self.team_size))

    def _step_info(self, state: StateType, state_id: int, agent: int) -> dict[str, Any]:
        return {
            keys.CRITICAL: self._critical_now[agent],
            keys.STATE_ID: state_id,
            keys.ANCHOR: self.dynamics.agent_anchor(state, agent),
            keys.TURN_SCORE: float(self.dynamics.turn_score(state)),
        }

    # ------------------------------------------------------- the exact model (the dynamics')
    @property
    def num_states(self) -> int:
        """Size of the joint ``state_id`` space."""
        return self.dynamics.num_states

    @property
    def num_joint_actions(self) -> int:
        """``num_actions ** num_agents``."""
        return self.dynamics.num_actions

    def action_gaps(self) -> np.ndarray:
        """Every agent's exact optimal action gap, shape ``(num_states, num_agents)`` (see
        :meth:`TeamDynamics.action_gaps_per_agent`)."""
        return self.dynamics.action_gaps_per_agent()

    def optimal(self, gamma: float = 1.0) -> OracleValues:
        """Exact team-optimal ``Q*(s, joint action)`` and ``V*(s)``."""
        return self.dynamics.optimal(gamma=gamma)

    # --------------------------------------------------------------------------- internals
    def check_actions(self, actions: Mapping[str, Any]) -> tuple[int, ...]:
        """The joint action of ``actions`` (a dict from every live agent to its action), agent 0
        first; ``ValueError``/``InvalidActionError`` naming what is wrong."""
        if not isinstance(actions, Mapping):
            raise ValueError(
                f"actions must be a dict from agent name to action, got {type(actions).__name__}"
            )
        unknown = sorted(set(actions) - set(self.agents), key=str)
        if unknown:
            raise ValueError(
                f"actions for agents that are not live: {unknown}; live: {self.agents}"
            )
        missing = [name for name in self.agents if name not in actions]
        if missing:
            raise ValueError(f"every live agent must act: no action for {missing}")
        return tuple(self.check_action(name, actions[name]) for name in self.possible_agents)

    def check_action(self, agent: str, action: Any) -> int:
        """``action`` of ``agent`` as an int in its action space (``InvalidActionError``)."""
        return check_discrete_action(action, self.num_actions, owner=agent)

    def __deepcopy__(self, memo: dict[int, Any]) -> TeamEnv:
        """Branch: an independent env whose future, for the same actions, equals this one's
        (random generator included). The dynamics and the (immutable) state are shared."""
        return branch_copy(self, memo, shared=("_state",))


def to_aec(parallel: Any, wrapped: bool = True) -> Any:
    """The AEC version of a ``ParallelEnv`` (PettingZoo's ``parallel_to_aec``); ``wrapped`` adds
    the wrappers PettingZoo puts on its own environments: out-of-bounds actions are asserted and
    the call order is enforced."""
    from pettingzoo.utils import parallel_to_aec, wrappers

    aec = parallel_to_aec(parallel)
    if wrapped:
        aec = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(aec))
    return aec
