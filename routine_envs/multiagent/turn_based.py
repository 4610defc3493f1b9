"""The turn-based adapter of the team environments for a parameter-shared policy.

**The adapter.** :class:`TurnBasedTeamEnv` presents one team environment of
:mod:`routine_envs.multiagent` as a single-agent Gymnasium env for a *parameter-shared* policy:
the agents take turns within each step of the team (``agent_0`` first), each turn is one
Gymnasium step in which the shared policy acts for one agent on that agent's observation (which
carries the agent's one-hot index, so the shared policy tells the agents apart), and the team
reward is paid on the turn that completes the round (0 on the others). ``info`` carries the
acting agent's annotations: ``critical`` (that agent's) and ``state_id`` (``joint id *
num_agents + agent index``: the teammates' choices within the round are hidden from the acting
agent, as in the simultaneous-move game). At the end ``num_critical``, ``episode_length`` and
``decision_density`` count agent turns, so the realized rho is the mean per-agent rho.

A ``DummyVecEnv`` of such wrappers works unchanged with SB3's ``PPO`` (turn-level: GAE on a
critic of the acting agent's observation) and with ``TrajectoryAdvantagePPO`` (which resets each
member team with the group's seed and steps it individually). SuperSuit's
``pettingzoo_env_to_vec_env_v1`` + ``concat_vec_envs_v1`` (each agent a sub-env of one vector
env) installs here, but its agents of one team are coupled sub-envs of a ``MarkovVectorEnv``,
not member envs that ``TrajectoryAdvantagePPO`` can reset and step one by one, so the comparison
uses this adapter for both methods: same data, same presentation.

The wrapper exposes the team env's exact model the way the suite's envs do (``num_states``,
``decision_observations()``, ``success_probability(table)``, ``oracle(table)``), so a trainer
evaluates the exact success probability of the shared policy and the ``oracle`` estimator gives
every agent its exact counterfactual advantage.

``TeamDilutedDoors-v0``/``-v1`` and ``TeamRoutineGrid-v0``/``-v1`` (the turn-based views) are
rows of the registration table (:data:`routine_envs.registration.TEAM_ADAPTERS`): ``import
routine_envs`` registers them without importing this module (nor PettingZoo); their entry point
is the versioned module's ``turn_based_env`` (:func:`turn_based_constructor`), which
``gym.make`` imports.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from routine_envs import annotations as keys
from routine_envs.envs import validation
from routine_envs.multiagent.base import TeamEnv
from routine_envs.oracle import OracleValues
from routine_envs.registration import TEAM_ADAPTERS
from routine_envs.rendering.text_view import TextView


class TurnBasedTeamEnv(gym.Env[np.ndarray, np.int64]):
    """A team environment as a turn-based single-agent env for a parameter-shared policy.

    Observation and action spaces are the (identical) per-agent spaces of the team env. One
    episode of the team lasting ``T`` steps is ``num_agents * T`` steps here.

    ## Information

    The keys of :mod:`routine_envs.annotations`, of the agent whose turn it is: ``critical``
    (that agent's), ``state_id`` (``joint id * num_agents + agent index``) and ``anchor`` (its
    observation's) and ``turn_score`` (the team state's) on every ``reset``/``step``;
    ``success``, ``num_critical``,
    ``episode_length`` and ``decision_density`` at the end, counted in agent turns.

    Args:
        team: a :class:`~routine_envs.multiagent.base.TeamEnv` (a native ``ParallelEnv``).
        render_mode: ``None`` (keep the team env's), ``"ansi"`` (the team env's picture and a
            line naming the agent whose turn it is) or ``"human"`` (that picture printed at
            every reset and every turn, as the single-agent envs print theirs; ``render()``
            returns None).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": validation.RenderModes(["ansi", "human"]),
        "render_fps": 4,
    }

    def __init__(self, team: TeamEnv, render_mode: str | None = None) -> None:
        if not isinstance(team, TeamEnv):
            raise ValueError(f"team must be a routine_envs.multiagent env, got {type(team)}")
        render_mode = validation.render_mode(render_mode, self.metadata["render_modes"])
        self.team = team
        self.render_mode = team.render_mode if render_mode is None else render_mode
        if self.render_mode is not None:  # the adapter prints (per turn); the team only draws
            team.render_mode = "ansi"
        self.agent_names = list(team.possible_agents)
        first = self.agent_names[0]
        self.observation_space = team.observation_space(first)
        self.action_space = team.action_space(first)
        for name in self.agent_names[1:]:
            if (
                team.observation_space(name) != self.observation_space
                or team.action_space(name) != self.action_space
            ):
                raise ValueError("parameter sharing needs the same spaces for every agent")
        self.num_agents = len(self.agent_names)
        #: turn-view ids: ``joint state_id * num_agents + acting agent index``.
        self.num_states = team.num_states * self.num_agents
        self._turn = 0
        self._round_obs: dict[str, np.ndarray] = {}
        self._round_infos: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, int] = {}

    @property
    def np_random(self) -> np.random.Generator:
        """The team env's generator: every random draw of an episode is the team's, so setting
        it (e.g. to give branched rollouts common random numbers) sets the team's."""
        return self.team.np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self.team.np_random = value

    # ------------------------------------------------------------------------ Gymnasium API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset the team (``seed`` reseeds it); the first turn is ``agent_0``'s."""
        super().reset(seed=seed)
        self._round_obs, self._round_infos = self.team.reset(seed=seed, options=options)
        self._turn = 0
        self._pending = {}
        if self.render_mode == "human":
            self.render()
        return self._round_obs[self.agent_names[0]], self._turn_info(0)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The acting agent's action; the team steps once every agent has acted."""
        if not self._round_obs:
            raise gym.error.ResetNeeded("step() called before reset()")
        if not self.team.agents:
            raise gym.error.ResetNeeded("step() called on a finished episode: call reset()")
        name = self.agent_names[self._turn]
        self._pending[name] = self.team.check_action(name, action)
        if self._turn + 1 < self.num_agents:
            self._turn += 1
            next_name = self.agent_names[self._turn]
            if self.render_mode == "human":
                self.render()
            return self._round_obs[next_name], 0.0, False, False, self._turn_info(self._turn)
        observations, rewards, terminations, truncations, infos = self.team.step(self._pending)
        self._pending = {}
        self._turn = 0
        self._round_obs, self._round_infos = observations, infos
        first = self.agent_names[0]
        terminated, truncated = terminations[first], truncations[first]
        info = self._turn_info(0)
        if terminated or truncated:
            turns = self.num_agents * infos[first][keys.EPISODE_LENGTH]
            critical = sum(infos[a][keys.NUM_CRITICAL] for a in self.agent_names)
            info.update(keys.episode_end_info(infos[first][keys.SUCCESS], critical, turns))
        if self.render_mode == "human":
            self.render()
        return observations[first], float(rewards[first]), terminated, truncated, info

    def render(self) -> str | None:
        """``"ansi"``: the team env's picture and, while the episode runs, a line naming the
        agent whose turn it is; ``"human"``: that text printed, None returned."""
        if self.render_mode is None:
            gym.logger.warn("render() called with render_mode=None: pass render_mode to gym.make")
            return None
        picture = self.team.render()  # raises ResetNeeded before reset
        if self.team.agents:
            turn = f"turn {self._turn + 1}/{self.num_agents}: {self.agent_names[self._turn]} acts"
            picture = picture.rstrip("\n") + f"\n{turn}\n"
        if self.render_mode == "human":
            print(picture, flush=True)
            return None
        return picture

    def text_view(self) -> TextView:
        """What a language-model agent is told: the team dynamics' view of one agent's
        observation (the acting agent's, whose one-hot index it reads)."""
        return self.team.dynamics.text_view()

    def _turn_info(self, turn: int) -> dict[str, Any]:
        info = self._round_infos[self.agent_names[turn]]
        return {
            keys.CRITICAL: info[keys.CRITICAL],
            keys.STATE_ID: info[keys.STATE_ID] * self.num_agents + turn,
            keys.ANCHOR: info[keys.ANCHOR],  # the acting agent's observation is this turn's
            keys.TURN_SCORE: info[keys.TURN_SCORE],  # the team's state: the same for every turn
        }

    # ------------------------------------------------------------------------------ oracle
    @property
    def decision_density(self) -> float:
        """The team env's mean per-agent rho."""
        return float(self.team.decision_density)

    @property
    def max_episode_length(self) -> int:
        """``num_agents * team.max_episode_length`` turns."""
        return self.num_agents * self.team.max_episode_length

    def decision_observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every turn-view decision id and its observation: shapes ``(K * num_agents,)`` and
        ``(K * num_agents, observation_size)``."""
        ids, obs = self.team.decision_observations()
        k = self.num_agents
        turn_ids = (ids[:, None] * k + np.arange(k)[None, :]).ravel()
        return turn_ids, obs.reshape(len(turn_ids), -1)

    def _team_policy(self, table: np.ndarray) -> np.ndarray:
        table = np.asarray(table, dtype=np.float64)
        expected = (self.num_states, int(self.action_space.n))
        if table.shape != expected:
            raise ValueError(f"policy table must have shape {expected}, got {table.shape}")
        return table.reshape(self.team.num_states, self.num_agents, -1)

    def success_probability(self, table: np.ndarray) -> float:
        """Exact team success probability of a shared policy given as a turn-view table
        ``(num_states, num_actions)`` (agents draw independently, as in the team env)."""
        return self.team.success_probability(self._team_policy(table))

    def oracle(self, table: np.ndarray, gamma: float = 1.0) -> OracleValues:
        """Exact per-agent values of a turn-view policy table: ``q[s * N + i, a] = Q_i(s, a)``
        (agent ``i``'s counterfactual action value, teammates' actions averaged under the
        policy) and ``v[s * N + i] = V(s)``: see ``TeamEnv.agent_values``."""
        q, v = self.team.agent_values(self._team_policy(table), gamma=gamma)
        reachable = np.repeat(self.team.model().reachable, self.num_agents)
        return OracleValues(
            q=q.reshape(self.num_states, -1), v=np.repeat(v, self.num_agents), reachable=reachable
        )


# ------------------------------------------------------------------------------ registration
def turn_based_constructor(team_class: type[TeamEnv]) -> Callable[..., TurnBasedTeamEnv]:
    """The entry point of the registered turn-based id of ``team_class``: its keyword
    arguments are the team env's (its ``inspect.signature``, which the command lines read to
    refuse an unknown name with one line).

    The render mode is checked before the team env is built. A mode the adapter does not draw
    (``"rgb_array"``: the team envs draw text only) is a ``RenderModeError``, a ``ValueError``
    and a ``TypeError``: SB3's ``make_vec_env`` asks every env for ``"rgb_array"`` and falls
    back to the default on ``TypeError``."""

    def turn_based_env(render_mode: str | None = None, **kwargs: Any) -> TurnBasedTeamEnv:
        render_mode = validation.render_mode(render_mode, TurnBasedTeamEnv.metadata["render_modes"])
        return TurnBasedTeamEnv(team_class(**kwargs), render_mode=render_mode)

    name = team_class.metadata["name"]
    turn_based_env.__doc__ = f"The turn-based view of ``{name}`` (a registered id's entry point)."
    turn_based_env.__signature__ = inspect.signature(team_class)  # type: ignore[attr-defined]
    return turn_based_env


TEAM_ENVS: dict[str, dict[str, Any]] = {
    row.id: {
        "entry_point": row.entry_point,
        "kwargs": row.kwargs,
        "density_kwarg": row.density_kwarg,
    }
    for row in TEAM_ADAPTERS
}
"""The turn-based team ids (rows of :data:`routine_envs.registration.TEAM_ADAPTERS`), with the
keyword argument that sets rho."""
