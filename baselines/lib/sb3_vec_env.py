"""Train Stable-Baselines3 on a Gymnasium ``VectorEnv``: :class:`GymnasiumVecEnv`.

SB3 algorithms take an SB3 ``VecEnv`` (its own API: ``step`` returns ``dones`` and a list of
per-environment info dicts, and resets finished environments within the step), not a Gymnasium
``VectorEnv``. The adapter translates, so the natively vectorized Diluted Doors can feed SB3::

    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from baselines.lib.sb3_vec_env import GymnasiumVecEnv

    venv = gym.make_vec("DilutedDoors-v1", num_envs=64, autoreset_mode="same_step")
    model = PPO("MlpPolicy", VecMonitor(GymnasiumVecEnv(venv))).learn(100_000)

It behaves like ``DummyVecEnv`` over the same single environments (``tests/test_vector_env.py``
checks it step by step): float32 rewards, each info dict with the environment's keys plus
``"TimeLimit.truncated"``, ``"terminal_observation"`` on the step that ended an episode, the
reset's info in ``reset_infos``, and ``seed(s)`` seeding sub-environment ``i`` with ``s + i``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)


class GymnasiumVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over a Gymnasium ``VectorEnv`` with array observations.

    Works with either autoreset mode of the vector env (``metadata["autoreset_mode"]``):
    ``SAME_STEP`` (cheapest: the vector env resets within the step), or ``NEXT_STEP``, for which
    the adapter resets finished sub-environments with ``reset(options={"reset_mask": done})``
    (supported by ``ModelVectorEnv`` and ``SyncVectorEnv``).

    Sub-environments of a natively vectorized env are not separate objects: ``get_attr`` returns
    the vector env's attribute once per index, ``set_attr`` and ``env_method`` act on the vector
    env as a whole (``env_method`` returns its result once per index), and ``env_is_wrapped`` is
    false. Per-environment reset options are not supported.
    """

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        if not isinstance(venv, gym.vector.VectorEnv):
            raise TypeError(f"venv must be a gymnasium VectorEnv, got {type(venv).__name__}")
        mode = venv.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP):
            raise ValueError(
                f"the vector env's autoreset mode must be SAME_STEP or NEXT_STEP: {mode}"
            )
        self.venv = venv
        self.autoreset_mode = AutoresetMode(mode)
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None

    # ------------------------------------------------------------------------- SB3 VecEnv API
    def reset(self) -> VecEnvObs:
        """Reset every sub-environment, with the seeds of ``seed()`` if any (used once)."""
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, infos = self.venv.reset(seed=seeds)
        self.reset_infos = _unbatch(infos, self.num_envs)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Step; returns observations, float32 rewards, ``dones`` and one info dict per env."""
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        index = np.flatnonzero(dones).tolist()
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            if index:
                step_infos = _unbatch(infos, self.num_envs)  # the new episodes' first infos
                final_infos = _unbatch(infos["final_info"], self.num_envs)
                for i in index:
                    self.reset_infos[i] = step_infos[i]
                    step_infos[i] = final_infos[i]
                    step_infos[i]["terminal_observation"] = infos["final_obs"][i]
            else:
                step_infos = _unbatch(infos, self.num_envs)
        else:
            step_infos = _unbatch(infos, self.num_envs)
            if index:
                final_obs = obs
                obs, reset_infos = self.venv.reset(options={"reset_mask": dones})
                reset_list = _unbatch(reset_infos, self.num_envs)
                for i in index:
                    step_infos[i]["terminal_observation"] = final_obs[i]
                    self.reset_infos[i] = reset_list[i]
        for info, term, trunc in zip(
            step_infos, terminated.tolist(), truncated.tolist(), strict=True
        ):
            info["TimeLimit.truncated"] = trunc and not term
        return obs, rewards.astype(np.float32), dones, step_infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The vector env's attribute ``attr_name``, once per index."""
        value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` on the vector env (only for all sub-environments at once)."""
        if len(list(self._get_indices(indices))) != self.num_envs:
            raise NotImplementedError("a natively vectorized env sets attributes for all envs")
        setattr(self.venv, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs
    ) -> list[Any]:
        """Call the vector env's method once; its result, once per index."""
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def _unbatch(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's batched infos (``key`` arrays with ``"_key"`` masks) as one dict per env, with
    Python scalars as single environments give them. ``final_obs``/``final_info`` are skipped."""
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, values in infos.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        mask = infos.get("_" + key)
        if isinstance(values, dict):
            nested = _unbatch(values, num_envs)
            for i in np.flatnonzero(mask).tolist():
                out[i][key] = nested[i]
            continue
        items = values.tolist() if values.dtype != object else list(values)
        if mask is None or mask.all():
            for info, value in zip(out, items, strict=True):
                info[key] = value
        else:
            for i in np.flatnonzero(mask).tolist():
                out[i][key] = items[i]
    return out
