"""The team layer: joint dynamics over joint actions, and a thin PettingZoo ``ParallelEnv``.

A team environment is, like a single-agent one, an immutable *dynamics* object plus an env that
holds only the episode. :class:`TeamDynamics` is a :class:`~routine_envs.dynamics.Dynamics`
whose actions are *joint* actions (index ``np.ravel_multi_index(actions, (m,) * k)``), so the
exact-model layer (model, oracle, optimal values) serves teams unchanged; on top it has every
agent's observation, every agent's exact action gap (the definition of ``critical`` per agent)
and the values of decentralized policies. Its fields are the team env's configuration.

:class:`TeamEnv` is a PettingZoo view of the single-agent episode on those dynamics
(:class:`~routine_envs.envs.base.RoutineEnv`, one step per joint action): the episode owns
``reset``/``step`` with seeding on ``np_random``, the ``max_cycles`` truncation, the history,
rendering and ``copy.deepcopy`` branching; the team env adds the agents, the per-agent
observations, the per-agent info contract of :mod:`routine_envs.annotations` and ``state()``.
A team env class is declared with its dynamics class, as a single-agent one is
(``class MyTeamEnv(TeamEnv, dynamics=MyTeamDynamics, name="my_team_v0")``): its constructor,
signature and ``repr`` come from the dynamics' fields; :func:`constructors` gives a versioned
module's ``parallel_env``, ``env`` and ``raw_env``.

Every agent acts on every step (a simultaneous-move game); the team shares one reward, paid to
every agent. Agents leave ``env.agents`` only when the team's episode ends.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np
from pettingzoo import AECEnv, ParallelEnv

from routine_envs import annotations as keys
from routine_envs.annotations import observation_anchor
from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import (
    EpisodeHistory,
    RoutineEnv,
    branch_copy,
    check_discrete_action,
    config_repr,
    config_signature,
    dynamics_from_arguments,
    forward_to_dynamics,
)
from routine_envs.oracle import Outcome, evaluate_policy, success_values

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

    def joint_action_index(self, actions: Sequence[int]) -> int:
        """Index of a joint action (one action per agent, agent 0 first) in the joint model:
        ``np.ravel_multi_index(actions, (num_actions,) * team_size)``, computed in Python (the
        numpy call costs more than a team step)."""
        m = self.agent_num_actions
        if len(actions) != self.team_size or not all(0 <= a < m for a in actions):
            raise ValueError(
                f"a joint action is {self.team_size} actions in [0, {m}), got {actions!r}"
            )
        index = 0
        for a in actions:
            index = index * m + int(a)
        return index

    def joint_action(self, index: int) -> tuple[int, ...]:
        """The joint action (one action per agent, agent 0 first) of number ``index``: the
        inverse of :meth:`joint_action_index` (computed: a table of every joint action would not
        fit for large teams)."""
        m = self.agent_num_actions
        actions = [0] * self.team_size
        for i in range(self.team_size - 1, -1, -1):
            index, actions[i] = divmod(index, m)
        return tuple(actions)

    def outcomes(self, state: StateType, action: int) -> Sequence[Outcome]:
        """The outcomes of joint action number ``action`` (see :meth:`joint_action_index`)."""
        return self.joint_outcomes(state, self.joint_action(action))

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


class JointEpisode(RoutineEnv):
    """A team's episode: the single-agent episode on :class:`TeamDynamics`, one step per joint
    action (by index). :class:`TeamEnv` presents it to PettingZoo."""


class TeamEnv(ParallelEnv[str, np.ndarray, int], Generic[StateType]):
    """A ``ParallelEnv`` view of one episode (:class:`JointEpisode`) on :class:`TeamDynamics`.

    ``TeamEnv(dynamics, max_cycles=None, render_mode=None)`` holds an episode on the given
    dynamics. A team env class declared for a dynamics class, ``class MyTeamEnv(TeamEnv,
    dynamics=MyTeamDynamics, name="my_team_v0")`` (a docstring is all it needs), builds its
    dynamics from its keyword arguments instead: the dynamics' fields (their defaults are the
    env's), then ``max_cycles`` and ``render_mode``; ``metadata["name"]`` is ``name`` and
    ``repr`` shows the configuration. Its pictures are the dynamics' ``renderer``. Public
    attributes the env does not define are read from its dynamics. Agent ``i`` is
    ``possible_agents[i] == f"agent_{i}"``.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "team_env_v0",
        "render_modes": validation.RenderModes(["ansi", "human"]),
        "render_fps": 4,
        "is_parallelizable": True,
    }
    #: the dynamics class this env class builds from its keyword arguments (``None``: the env
    #: is given its dynamics).
    dynamics_class: ClassVar[type[TeamDynamics] | None] = None

    def __init_subclass__(
        cls, dynamics: type[TeamDynamics] | None = None, name: str | None = None, **kwargs: Any
    ) -> None:
        """``dynamics=``: the team env class of that dynamics class; ``name=``: its
        ``metadata["name"]`` (the versioned module's name, PettingZoo's convention)."""
        super().__init_subclass__(**kwargs)
        if name is not None:
            cls.metadata = {**cls.metadata, "name": name}
        if dynamics is not None:
            if not (isinstance(dynamics, type) and issubclass(dynamics, TeamDynamics)):
                raise ValueError(f"dynamics must be a TeamDynamics subclass, got {dynamics!r}")
            cls.dynamics_class = dynamics
            if "__init__" not in cls.__dict__:
                cls.__init__ = _init_from_config  # type: ignore[method-assign]
            cls.__signature__ = config_signature(cls)  # type: ignore[attr-defined]

    def __init__(
        self,
        dynamics: TeamDynamics[StateType],
        max_cycles: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        render_mode = validation.render_mode(render_mode, self.metadata["render_modes"])
        #: the team's exact, immutable MDP (shared by deep copies).
        self.dynamics = dynamics
        #: the episode (joint states, joint actions by index, the random generator).
        self.episode = JointEpisode(dynamics, render_mode=render_mode)
        self.max_cycles = max_cycles
        self.possible_agents = [agent_name(i) for i in range(dynamics.team_size)]
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
        self._critical_now: tuple[bool, ...] = (False,) * dynamics.team_size
        self._num_critical = [0] * dynamics.team_size
        forward_to_dynamics(type(self), dynamics)

    def __repr__(self) -> str:
        return config_repr(self)

    # ---------------------------------------------------------------------- PettingZoo API
    def observation_space(self, agent: str) -> gym.spaces.Box:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Discrete:
        """The action space of ``agent`` (the same object on every call)."""
        return self.action_spaces[agent]

    @property
    def num_actions(self) -> int:
        """Actions per agent (the joint model has ``num_actions ** team_size``)."""
        return self.dynamics.agent_num_actions

    @property
    def np_random(self) -> np.random.Generator:
        """The episode's random generator (seeded by ``reset(seed=...)``; may be set, as a
        Gymnasium env's, e.g. to give branches common random numbers)."""
        return self.episode.np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self.episode.np_random = value

    @property
    def render_mode(self) -> str | None:
        """``None``, ``"ansi"`` or ``"human"`` (the episode's)."""
        return self.episode.render_mode

    @render_mode.setter
    def render_mode(self, value: str | None) -> None:
        self.episode.render_mode = validation.render_mode(value, self.metadata["render_modes"])

    @property
    def max_cycles(self) -> int | None:
        """Truncate the episode after this many steps (rounds of joint actions); ``None``: never
        (every episode ends by itself within ``max_episode_length`` steps)."""
        return self.episode.max_steps

    @max_cycles.setter
    def max_cycles(self, value: int | None) -> None:
        self.episode.max_steps = (
            None if value is None else validation.integer("max_cycles", value, minimum=1)
        )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """Start an episode; ``seed`` reseeds ``self.np_random`` (as in Gymnasium). Returns every
        agent's observation and info (``critical``, ``state_id``, ``anchor``, ``turn_score``)."""
        observation, info = self.episode.reset(seed=seed, options=options)
        state = self.episode.state
        self.agents = list(self.possible_agents)
        self._num_critical = [0] * len(self.possible_agents)
        self._critical_now = self._critical_flags(state)
        return self._split(observation), self._agent_infos(state, info)

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
        if not self.agents:
            if not self.episode.history.states:
                raise gym.error.ResetNeeded("step() called before reset(): call env.reset() first")
            raise gym.error.ResetNeeded(
                "step() called on a finished episode (every agent is terminated or truncated): "
                "call env.reset() to start a new one"
            )
        joint = self.check_actions(actions)
        observation, reward, terminated, truncated, info = self.episode.step(
            self.dynamics.joint_action_index(joint)
        )
        state = self.episode.state
        for i, flag in enumerate(self._critical_now):
            self._num_critical[i] += flag
        self._critical_now = (
            (False,) * len(self._critical_now) if terminated else self._critical_flags(state)
        )
        agents = self.agents
        observations = self._split(observation)
        infos = self._agent_infos(state, info)
        if terminated or truncated:
            for i, name in enumerate(agents):
                infos[name].update(
                    keys.episode_end_info(
                        info[keys.SUCCESS], self._num_critical[i], info[keys.EPISODE_LENGTH]
                    )
                )
            self.agents = []
        rewards = dict.fromkeys(agents, float(reward))
        terminations = dict.fromkeys(agents, bool(terminated))
        truncations = dict.fromkeys(agents, bool(truncated))
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        """``"ansi"``: a text picture of the team's state; ``"human"``: prints it and returns
        None (``reset`` and ``step`` then call it themselves)."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode='ansi'")
            return None
        return self.episode.render()

    def close(self) -> None:
        """Nothing to release."""

    def state(self) -> np.ndarray:
        """A global view for centralized critics: every agent's observation, concatenated
        (agent 0 first), shape ``(num_agents * observation_size,)``, in ``state_space``."""
        if not self.episode.history.states:
            raise gym.error.ResetNeeded("state() called before reset()")
        return self.dynamics.observe(self.episode.state)

    # ------------------------------------------------------------------------- annotations
    @property
    def joint_state(self) -> StateType:
        """The current underlying joint state (immutable)."""
        return self.episode.state

    @property
    def state_id(self) -> int:
        """Canonical id of the current joint state."""
        return self.episode.state_id

    @property
    def critical(self) -> dict[str, bool]:
        """Per agent: can its next action change the expected team return?"""
        return dict(zip(self.possible_agents, self._critical_now, strict=True))

    @property
    def rounds(self) -> int:
        """Steps (joint actions) taken in the episode so far."""
        return len(self.episode.history.actions)

    @property
    def history(self) -> EpisodeHistory:
        """The episode so far (a copy): the joint states and the joint actions taken (tuples,
        one action per agent, agent 0 first)."""
        history = self.episode.history
        joint_action = self.dynamics.joint_action
        return EpisodeHistory(list(history.states), [joint_action(a) for a in history.actions])

    def describe_state(self, state_id: int) -> StateType:
        """Inverse of ``state_id``: the joint state with that id."""
        return self.dynamics.state_from_id(state_id)

    def _critical_flags(self, state: StateType) -> tuple[bool, ...]:
        dynamics = self.dynamics
        return tuple(bool(dynamics.is_agent_critical(state, i)) for i in range(dynamics.team_size))

    def _split(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """Every agent's part of the global observation (every agent's, concatenated)."""
        size = self.dynamics.agent_observation_size
        return {
            name: observation[i * size : (i + 1) * size]
            for i, name in enumerate(self.possible_agents)
        }

    def _agent_infos(self, state: StateType, info: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Every agent's info: its ``critical`` and ``anchor``, the episode's ``state_id`` and
        ``turn_score`` (the team's)."""
        anchor = self.dynamics.agent_anchor
        return {
            name: {
                keys.CRITICAL: self._critical_now[i],
                keys.STATE_ID: info[keys.STATE_ID],
                keys.ANCHOR: anchor(state, i),
                keys.TURN_SCORE: info[keys.TURN_SCORE],
            }
            for i, name in enumerate(self.possible_agents)
        }

    # ------------------------------------------------------- the exact model (the dynamics')
    @property
    def num_joint_actions(self) -> int:
        """``num_actions ** num_agents``."""
        return self.dynamics.num_actions

    def action_gaps(self) -> np.ndarray:
        """Every agent's exact optimal action gap, shape ``(num_states, num_agents)`` (see
        :meth:`TeamDynamics.action_gaps_per_agent`)."""
        return self.dynamics.action_gaps_per_agent()

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
        return branch_copy(self, memo)


def _init_from_config(
    self: TeamEnv,
    *args: Any,
    max_cycles: int | None = None,
    render_mode: str | None = None,
    **config: Any,
) -> None:
    """``__init__`` of a team env class for a dynamics class: the dynamics' fields (positional
    in their order, or by name), then the truncation and the render mode."""
    dynamics = dynamics_from_arguments(type(self), args, config)
    TeamEnv.__init__(self, dynamics, max_cycles=max_cycles, render_mode=render_mode)


def to_aec(parallel: Any, wrapped: bool = True) -> Any:
    """The AEC version of a ``ParallelEnv`` (PettingZoo's ``parallel_to_aec``); ``wrapped`` adds
    the wrappers PettingZoo puts on its own environments: out-of-bounds actions are asserted and
    the call order is enforced."""
    from pettingzoo.utils import parallel_to_aec, wrappers

    aec = parallel_to_aec(parallel)
    if wrapped:
        aec = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(aec))
    return aec


def constructors(
    env_class: type[TeamEnv],
) -> tuple[Callable[..., TeamEnv], Callable[..., AECEnv], Callable[..., AECEnv]]:
    """A versioned module's ``parallel_env`` (the native ``ParallelEnv``), ``env`` (the AEC
    version, wrapped as PettingZoo wraps its own environments) and ``raw_env`` (AEC, derived
    with ``parallel_to_aec``, no extra wrappers) of ``env_class``: each takes its keyword
    arguments."""

    def parallel_env(**kwargs: Any) -> TeamEnv:
        return env_class(**kwargs)

    def env(**kwargs: Any) -> AECEnv:
        return to_aec(env_class(**kwargs))

    def raw_env(**kwargs: Any) -> AECEnv:
        return to_aec(env_class(**kwargs), wrapped=False)

    signature = inspect.signature(env_class)
    for function, what in (
        (parallel_env, "The native ``ParallelEnv``"),
        (env, "The AEC version wrapped as PettingZoo wraps its own environments"),
        (raw_env, "The AEC version, derived with PettingZoo's ``parallel_to_aec``"),
    ):
        function.__doc__ = f"{what} (keyword arguments of :class:`{env_class.__name__}`)."
        function.__signature__ = signature  # type: ignore[attr-defined]
    return parallel_env, env, raw_env
