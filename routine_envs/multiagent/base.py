"""The shared base of the team environments: a native PettingZoo ``ParallelEnv`` with per-agent
annotations, built on a single-agent core's dynamics.

A subclass describes the team's dynamics once, as a pure transition function over hashable joint
states and *joint* actions (``_outcomes(state, actions)``, ``actions`` a tuple with one action per
agent), plus how each agent observes a state, which agent's action is critical there, and the
canonical id of a joint state. The base owns the rest: ``reset``/``step`` with seeding on
``self.np_random``, action checking, the per-agent info contract of
:mod:`routine_envs.annotations`, episode bookkeeping, the ``max_cycles`` truncation, ``state()``,
rendering dispatch, ``copy.deepcopy`` branching and the exact joint model, on which
:meth:`TeamEnv.action_gaps` computes every agent's optimal action gap (the exact definition of
``critical`` per agent) and :meth:`TeamEnv.success_probability` evaluates a decentralized policy
without sampling.

Every agent acts on every step (a simultaneous-move game); the team shares one reward, paid to
every agent. Agents leave ``env.agents`` only when the team's episode ends.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from routine_envs import annotations as keys
from routine_envs.envs import validation
from routine_envs.envs.base import (
    check_discrete_action,
    copy_generator,
    sample_item,
)
from routine_envs.oracle import (
    OracleValues,
    Outcome,
    TabularModel,
    build_model,
    evaluate_policy,
    optimal_values,
)

StateType = TypeVar("StateType", bound=Hashable)

TeamPolicy = np.ndarray | Callable[[int, int], Sequence[float] | np.ndarray]
"""A decentralized tabular policy: an array of shape ``(num_states, num_agents, num_actions)`` of
action probabilities (agent ``i`` acts on its own observation of joint state ``s`` with row
``[s, i]``), or a function ``(state_id, agent_index) -> probabilities`` of shape
``(num_actions,)``."""


def agent_name(index: int) -> str:
    """PettingZoo's recommended agent naming: ``agent_0``, ``agent_1``, ..."""
    return f"agent_{index}"


class TeamEnv(ParallelEnv[str, np.ndarray, int], Generic[StateType]):
    """Base class: annotated, branchable, exactly modelled team environment (``ParallelEnv``).

    Subclasses call ``super().__init__`` with the team size, the observation size and the number
    of actions per agent, set ``num_states``, and implement the hooks below. States must be
    immutable and hashable. Agent ``i`` is ``possible_agents[i] == f"agent_{i}"``.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "team_env_v0",
        "render_modes": ["ansi"],
        "render_fps": 4,
        "is_parallelizable": True,
    }

    #: size of the joint ``state_id`` space: every id is in ``[0, num_states)``.
    num_states: int
    #: attributes that ``copy.deepcopy`` shares instead of copying (configuration only, and the
    #: current state, immutable by contract).
    _shared_attributes: ClassVar[frozenset[str]] = frozenset(
        {"_model_cache", "_gap_cache", "_joint_actions", "_state", "_cores"}
    )

    def __init__(
        self,
        num_agents: int,
        observation_size: int,
        num_actions: int,
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode
        #: the number of agents in the team (``len(possible_agents)``; PettingZoo's
        #: ``num_agents`` is the number of *live* agents, 0 before reset and after the end).
        self.team_size = validation.integer("num_agents", num_agents, minimum=1)
        self.max_cycles = max_cycles
        self.possible_agents = [agent_name(i) for i in range(self.team_size)]
        self.agents: list[str] = []
        # One space object per agent, returned by every call (seeding one agent's action space
        # does not touch another's).
        self.observation_spaces = {
            name: gym.spaces.Box(0.0, 1.0, (observation_size,), np.float32)
            for name in self.possible_agents
        }
        self.action_spaces = {
            name: gym.spaces.Discrete(num_actions) for name in self.possible_agents
        }
        self.state_space = gym.spaces.Box(
            0.0, 1.0, (self.team_size * observation_size,), np.float32
        )
        self.num_actions = num_actions
        #: every joint action (agent 0's first; index = ``np.ravel_multi_index``), built with the
        #: model: there are ``num_actions ** num_agents`` of them.
        self._joint_actions: tuple[tuple[int, ...], ...] | None = None
        self._np_random: np.random.Generator | None = None
        self._state: StateType | None = None
        self._rounds = 0
        self._critical_now: tuple[bool, ...] = (False,) * self.team_size
        self._num_critical = [0] * self.team_size
        self._model_cache: TabularModel | None = None
        self._gap_cache: np.ndarray | None = None

    # ----------------------------------------------------------------- hooks for subclasses
    @abstractmethod
    def _initial_outcomes(self) -> Sequence[tuple[float, StateType]]:
        """The initial joint-state distribution as ``(probability, state)`` pairs."""

    @abstractmethod
    def _outcomes(self, state: StateType, actions: tuple[int, ...]) -> Sequence[Outcome]:
        """Every ``(probability, next_state, team_reward, terminated)`` of the joint action."""

    @abstractmethod
    def _state_id(self, state: StateType) -> int:
        """Canonical id of the joint ``state`` in ``[0, num_states)`` (the same for every
        agent)."""

    @abstractmethod
    def _observe(self, state: StateType, agent: int) -> np.ndarray:
        """Agent ``agent``'s observation of ``state``: a fresh float32 array in ``[0, 1]``."""

    @abstractmethod
    def _is_critical(self, state: StateType, agent: int) -> bool:
        """Ground truth: can agent ``agent``'s action in ``state`` change the expected team
        return (see :meth:`action_gaps` for the exact definition)?"""

    @abstractmethod
    def _is_success(self, state: StateType) -> bool:
        """Whether the team's episode ending in ``state`` is a success."""

    def _after_reset(self) -> None:
        """Called at the end of ``reset`` (e.g. to clear a history kept for rendering)."""

    def _after_step(
        self, state: StateType, actions: tuple[int, ...], next_state: StateType
    ) -> None:
        """Called in ``step`` once the state has advanced (e.g. to record history)."""

    def _render_ansi(self) -> str:
        raise NotImplementedError

    # ---------------------------------------------------------------------- PettingZoo API
    def observation_space(self, agent: str) -> gym.spaces.Box:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        """The action space of ``agent`` (the same object on every call)."""
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The environment's random generator (seeded by ``reset(seed=...)``)."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

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
        self._state = self._sample(self._initial_outcomes())[1]
        self.agents = list(self.possible_agents)
        self._rounds = 0
        self._num_critical = [0] * self.team_size
        self._critical_now = self._critical_flags(self._state)
        self._after_reset()
        state = self._state
        sid = self._state_id(state)
        observations = {name: self._observe(state, i) for i, name in enumerate(self.agents)}
        infos = {name: self._step_info(sid, i) for i, name in enumerate(self.agents)}
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
        joint = self._check_actions(actions)
        state = self._state
        _, nxt, reward, terminated = self._sample(self._outcomes(state, joint))
        self._rounds += 1
        for i, flag in enumerate(self._critical_now):
            self._num_critical[i] += flag
        self._after_step(state, joint, nxt)
        self._state = nxt
        self._critical_now = (False,) * self.team_size if terminated else self._critical_flags(nxt)
        truncated = (
            not terminated and self._max_cycles is not None and self._rounds >= self._max_cycles
        )
        sid = self._state_id(nxt)
        agents = self.agents
        observations = {name: self._observe(nxt, i) for i, name in enumerate(agents)}
        infos = {name: self._step_info(sid, i) for i, name in enumerate(agents)}
        if terminated or truncated:
            success = bool(self._is_success(nxt))
            for i, name in enumerate(agents):
                infos[name].update(
                    {
                        keys.SUCCESS: success,
                        keys.NUM_CRITICAL: self._num_critical[i],
                        keys.EPISODE_LENGTH: self._rounds,
                        keys.DECISION_DENSITY: self._num_critical[i] / self._rounds,
                    }
                )
            self.agents = []
        rewards = dict.fromkeys(agents, float(reward))
        terminations = dict.fromkeys(agents, bool(terminated))
        truncations = dict.fromkeys(agents, bool(truncated))
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """``"ansi"``: a text picture of the team's state."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode='ansi'")
            return None
        if self._state is None:
            raise gym.error.ResetNeeded("render() called before reset()")
        return self._render_ansi()

    def close(self) -> None:
        """Nothing to release."""

    def state(self) -> np.ndarray:
        """A global view for centralized critics: every agent's observation, concatenated
        (agent 0 first), shape ``(num_agents * observation_size,)``, in ``state_space``."""
        if self._state is None:
            raise gym.error.ResetNeeded("state() called before reset()")
        return np.concatenate([self._observe(self._state, i) for i in range(self.team_size)])

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
        return self._state_id(self.joint_state)

    @property
    def critical(self) -> dict[str, bool]:
        """Per agent: can its next action change the expected team return?"""
        return dict(zip(self.possible_agents, self._critical_now, strict=True))

    def _critical_flags(self, state: StateType) -> tuple[bool, ...]:
        return tuple(bool(self._is_critical(state, i)) for i in range(self.team_size))

    def _step_info(self, state_id: int, agent: int) -> dict[str, Any]:
        return {keys.CRITICAL: self._critical_now[agent], keys.STATE_ID: state_id}

    # ------------------------------------------------------------------------------ oracle
    @property
    def num_joint_actions(self) -> int:
        """``num_actions ** num_agents``."""
        return self.num_actions**self.team_size

    def joint_action_index(self, actions: Sequence[int]) -> int:
        """Index of a joint action (one action per agent, agent 0 first) in the joint model."""
        return int(np.ravel_multi_index(tuple(actions), (self.num_actions,) * self.team_size))

    def model(self) -> TabularModel:
        """The exact tabular model over joint states and *joint* actions (indexed by
        :meth:`joint_action_index`); built on first use, shared by deep copies. Its size grows
        like ``num_actions ** num_agents``: meant for small teams."""
        if self._model_cache is None:
            joint = self._joint_actions = tuple(
                itertools.product(range(self.num_actions), repeat=self.team_size)
            )
            self._model_cache = build_model(
                self._initial_outcomes(),
                lambda s, a: self._outcomes(s, joint[a]),
                self._state_id,
                self.num_states,
                len(joint),
            )
        return self._model_cache

    def optimal(self, gamma: float = 1.0) -> OracleValues:
        """Exact team-optimal ``Q*(s, joint action)`` and ``V*(s)``."""
        return optimal_values(self.model(), gamma=gamma)

    def action_gaps(self) -> np.ndarray:
        """Every agent's exact optimal action gap, shape ``(num_states, num_agents)``:

            gap_i(s) = max over a_-i of [ max_{a_i} Q*(s, a_i, a_-i) - min_{a_i} Q*(s, a_i, a_-i) ]

        with ``Q*`` the team-optimal joint action value (undiscounted team return). Agent ``i``
        is critical in ``s`` exactly when ``gap_i(s) > 0``: some choice of the teammates'
        actions lets agent ``i``'s own action change the team's return. 0 on terminal and
        unreachable ids."""
        if self._gap_cache is None:
            n, k = self.num_states, self.team_size
            q = self.optimal().q.reshape((n,) + (self.num_actions,) * k)
            gaps = np.zeros((n, k))
            for i in range(k):
                spread = q.max(axis=1 + i) - q.min(axis=1 + i)
                gaps[:, i] = spread.reshape(n, -1).max(axis=1)
            self._gap_cache = gaps
        return self._gap_cache

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every reachable non-terminal joint ``state_id`` and each agent's observation there:
        shapes ``(K,)`` and ``(K, num_agents, observation_size)``. With these a shared policy
        network gives a :data:`TeamPolicy` for :meth:`success_probability`."""
        model = self.model()
        ids = np.flatnonzero(model.decision_states)
        obs = np.stack(
            [
                np.stack([self._observe(model.states[int(s)], i) for i in range(self.team_size)])
                for s in ids
            ]
        )
        return ids, obs

    def agent_policy(self, policy: TeamPolicy) -> np.ndarray:
        """``policy`` as a validated array ``(num_states, num_agents, num_actions)``; rows of ids
        where no action is taken are uniform for a callable (never consulted)."""
        model = self.model()
        n, k, m = self.num_states, self.team_size, self.num_actions
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
        n, k, m = self.num_states, self.team_size, self.num_actions
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
        model = self.model()
        success = np.zeros(model.num_states, dtype=bool)
        for sid in np.flatnonzero(model.terminal):
            success[sid] = self._is_success(model.states[int(sid)])
        hits = model.terminated & success[model.next_state]
        values = evaluate_policy(
            dataclasses.replace(model, reward=hits.astype(np.float64)), self.joint_policy(policy)
        )
        return float(model.initial @ values.v)

    # --------------------------------------------------------------------------- internals
    def _check_actions(self, actions: Mapping[str, Any]) -> tuple[int, ...]:
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
        return tuple(self._check_action(name, actions[name]) for name in self.possible_agents)

    def _check_action(self, agent: str, action: Any) -> int:
        return check_discrete_action(action, self.num_actions, owner=agent)

    def _sample(self, items: Sequence[Any]) -> Any:
        return sample_item(items, self.np_random)

    def __deepcopy__(self, memo: dict[int, Any]) -> TeamEnv:
        """Branch: an independent env whose future, for the same actions, equals this one's
        (random generator included). Configuration-only attributes are shared."""
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        shared = self._shared_attributes
        for name, value in self.__dict__.items():
            if name in shared or isinstance(value, (int, float, bool, str, tuple, type(None))):
                clone.__dict__[name] = value
            elif isinstance(value, np.random.Generator):
                clone.__dict__[name] = memo[id(value)] = copy_generator(value)
            else:
                clone.__dict__[name] = copy.deepcopy(value, memo)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_model_cache"] = None  # rebuilt on demand; can be large
        state["_gap_cache"] = None
        return state


def to_aec(parallel: Any, wrapped: bool = True) -> Any:
    """The AEC version of a ``ParallelEnv`` (PettingZoo's ``parallel_to_aec``); ``wrapped`` adds
    the wrappers PettingZoo puts on its own environments: out-of-bounds actions are asserted and
    the call order is enforced."""
    from pettingzoo.utils import parallel_to_aec, wrappers

    aec = parallel_to_aec(parallel)
    if wrapped:
        aec = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(aec))
    return aec
