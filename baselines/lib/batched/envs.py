"""What the runs of one environment configuration share: one single env (its dynamics, exact
model and tables, built once), one native vector env holding every run's sub-environments, the
decision states and their observations for the exact evaluation, and a model sampler built on
first use.

Runs of one ``(env_id, env_kwargs)`` never build a second model: the vector env is built from
the single env (:class:`routine_envs.envs.model_vector.ModelVectorEnv` expands the states its
episodes visit, with the keys memo of the same dynamics), the evaluation reads the model cached
on those dynamics, and estimators get the same ``env.unwrapped``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

import routine_envs
from baselines.lib.batched.evaluation import SuccessEvaluator
from baselines.lib.batched.tabular import StateTable
from routine_envs.envs.model_vector import ModelVectorEnv

gym.register_envs(routine_envs)


def config_key(env_id: str, env_kwargs: dict[str, Any]) -> str:
    """The identity of an environment configuration (canonical JSON)."""
    return json.dumps([env_id, env_kwargs], sort_keys=True, default=str)


class LazySampler:
    """A :class:`routine_envs.sampler.ModelSampler` of ``env`` built on first use (its tables
    cost memory that only model-rollout estimators need); attributes are forwarded."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._sampler: Any = None

    def built(self) -> Any:
        if self._sampler is None:
            from routine_envs.sampler import ModelSampler

            self._sampler = ModelSampler(self._env)
        return self._sampler

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.built(), name)


def check_env(env: gym.Env, env_id: str) -> Any:
    """The dynamics of ``env`` (``gym.make(env_id, ...)``), or a one-line ``ValueError`` naming
    ``--trainer batched`` when the batched trainer cannot train on it: no exact model, a
    non-Discrete action space, an observation that is not a flat Box."""
    base = env.unwrapped
    dynamics = getattr(base, "dynamics", None)
    if dynamics is None or not hasattr(base, "success_probability"):
        raise ValueError(
            f"--trainer batched needs an environment of the suite with an exact model "
            f"(env.unwrapped.dynamics); {env_id} has none: use --trainer sb3"
        )
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise ValueError(
            f"--trainer batched needs a Discrete action space, {env_id} has {env.action_space}"
        )
    space = env.observation_space
    if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
        raise ValueError(
            f"--trainer batched needs a flat Box observation space, {env_id} has {space} "
            "(choose the vector observation mode)"
        )
    return dynamics


class EnvConfig:
    """One environment configuration shared by ``num_runs`` runs of ``num_envs`` sub-envs each.

    Attributes:
        env: the single env (``gym.make(env_id, **env_kwargs)``), never stepped.
        dynamics: its dynamics (the exact model is cached there, shared by everything below).
        venv: one :class:`ModelVectorEnv` of ``num_runs * num_envs`` sub-environments (run
            ``k`` of this configuration owns sub-environments ``k * num_envs`` to
            ``(k + 1) * num_envs - 1``), autoreset within the step (``SAME_STEP``).
        masked: whether the env has action masks (MaskablePPO's path).
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], num_runs: int, num_envs: int):
        self.env_id, self.env_kwargs = env_id, dict(env_kwargs)
        self.env = gym.make(env_id, **env_kwargs)
        dynamics = check_env(self.env, env_id)
        space = self.env.observation_space
        self.dynamics = dynamics
        self.obs_dim = int(space.shape[0])
        self.num_actions = int(self.env.action_space.n)
        self.masked = bool(dynamics.has_action_masks)
        self.num_runs, self.num_envs = num_runs, num_envs
        self.venv = ModelVectorEnv(
            self.env, num_runs * num_envs, autoreset_mode=AutoresetMode.SAME_STEP
        )
        self.sampler = LazySampler(self.env)
        self._decision: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = None
        self._table: StateTable | None = None
        self._evaluator: SuccessEvaluator | None = None

    # ------------------------------------------------------------------ evaluation
    def decision_states(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(ids, observations, masks)`` of every reachable non-terminal state: shapes
        ``(K,)``, ``(K, obs_dim)`` float32 and ``(K, num_actions)`` bool (``None`` unmasked)."""
        if self._decision is None:
            base = self.env.unwrapped
            ids, observations = base.decision_observations()
            masks = self.dynamics.mask_table()[ids] if self.masked else None
            self._decision = (ids, np.array(observations, dtype=np.float32), masks)
        return self._decision

    def state_table(self) -> StateTable:
        """The decision states as network inputs (:class:`~baselines.lib.batched.tabular.
        StateTable`), built once."""
        if self._table is None:
            ids, observations, masks = self.decision_states()
            self._table = StateTable.of(ids, observations, masks, self.env.unwrapped.num_states)
        return self._table

    def evaluator(self) -> SuccessEvaluator:
        """Exact success probabilities of policies given on :meth:`decision_states`
        (:class:`~baselines.lib.batched.evaluation.SuccessEvaluator`), built once."""
        if self._evaluator is None:
            self._evaluator = SuccessEvaluator(self.dynamics)
            if not np.array_equal(self._evaluator.ids, self.decision_states()[0]):
                raise RuntimeError(f"{self.env_id}: the decision states are not in id order")
        return self._evaluator

    # ----------------------------------------------------------------------- sizes
    @property
    def max_episode_length(self) -> int:
        return int(self.env.unwrapped.max_episode_length)


def build_configs(
    runs: Sequence[tuple[str, dict[str, Any]]], num_envs: int
) -> tuple[list[EnvConfig], np.ndarray, np.ndarray]:
    """One :class:`EnvConfig` per distinct configuration of ``runs`` (``(env_id, env_kwargs)``
    each), in order of first appearance; returns them, the configuration index of each run and
    each run's slot within its configuration, both shape ``(R,)``."""
    keys: dict[str, int] = {}
    counts: list[int] = []
    config_of, slot_of = [], []
    for env_id, kwargs in runs:
        key = config_key(env_id, kwargs)
        if key not in keys:
            keys[key] = len(keys)
            counts.append(0)
        c = keys[key]
        config_of.append(c)
        slot_of.append(counts[c])
        counts[c] += 1
    firsts = {}
    for i, (env_id, kwargs) in enumerate(runs):
        firsts.setdefault(config_of[i], (env_id, kwargs))
    configs = [
        EnvConfig(*firsts[c], num_runs=counts[c], num_envs=num_envs) for c in range(len(counts))
    ]
    return configs, np.array(config_of, dtype=np.int64), np.array(slot_of, dtype=np.int64)
