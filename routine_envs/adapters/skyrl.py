"""SkyRL-gym: every environment as a ``skyrl_gym`` ``BaseTextEnv`` (needs ``skyrl-gym``).

    from routine_envs.adapters.skyrl import register
    register()  # skyrl_gym.make("routine_envs", env_config=..., extras={"env_id": ...})

``init(prompt)`` returns the conversation to start from (the system prompt and the first
observation as chat messages), ``step(reply)`` a ``BaseTextEnvStepOutput`` with the next
observation as a user message, the reward, ``done`` and ``metadata["info"]`` (the turn's
``info``: annotations included). Configuration comes from ``extras`` (per example) over
``env_config`` (per run): ``env_id``, ``env_kwargs``, ``seed``, ``invalid_penalty``,
``max_turns``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routine_envs import annotations as keys
from routine_envs.text import make_text_env

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError(
        "routine_envs.adapters.skyrl needs skyrl-gym: pip install 'routine-envs[llm]'"
    ) from err

#: the id :func:`register` registers by default.
SKYRL_ID = "routine_envs"


def _setting(extras: Mapping[str, Any], config: Mapping[str, Any], name: str, default: Any) -> Any:
    if name in extras:
        return extras[name]
    return config.get(name, default) if hasattr(config, "get") else default


class RoutineSkyRLEnv(BaseTextEnv):
    """A routine-envs environment as a SkyRL text env (one episode per instance)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = env_config if env_config is not None else {}
        extras = extras or {}
        env_id = _setting(extras, config, "env_id", "DilutedDoors-v1")
        kwargs = dict(_setting(extras, config, "env_kwargs", {}) or {})
        self.seed = _setting(extras, config, "seed", None)
        self.text_env = make_text_env(
            env_id,
            invalid_penalty=float(_setting(extras, config, "invalid_penalty", 0.0)),
            max_turns=_setting(extras, config, "max_turns", None),
            **kwargs,
        )
        self.max_turns = self.text_env.max_turns or 10**9
        self.last_info: dict[str, Any] = {}

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset; the conversation is ``prompt`` (if any) then the system prompt and the first
        observation."""
        text, info = self.text_env.reset(seed=self.seed)
        self.turns = 0
        self.last_info = info
        system = {"role": "system", "content": self.text_env.system_prompt}
        first = {"role": "user", "content": text}
        return [*(prompt or [system]), first], {"info": info}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One assistant reply: any text (a malformed one is an invalid turn)."""
        self.turns += 1
        text, reward, terminated, truncated, info = self.text_env.step(action)
        self.last_info = info
        done = terminated or truncated
        observations = [] if done else [{"role": "user", "content": text}]
        return BaseTextEnvStepOutput(
            observations=observations, reward=reward, done=done, metadata={"info": info}
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's statistics once it ended (success, rho, invalid turns), else {}."""
        info = self.last_info
        names = (keys.SUCCESS, keys.DECISION_DENSITY, keys.EPISODE_LENGTH, keys.NUM_INVALID_TURNS)
        return {name: float(info[name]) for name in names if name in info}


def register(env_id: str = SKYRL_ID) -> str:
    """Register :class:`RoutineSkyRLEnv` with ``skyrl_gym`` under ``env_id`` (once)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:RoutineSkyRLEnv")
    return env_id
