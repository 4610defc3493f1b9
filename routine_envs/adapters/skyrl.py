"""SkyRL-gym: every environment as a ``skyrl_gym`` ``BaseTextEnv`` (needs ``skyrl-gym``).

    from routine_envs.adapters.skyrl import register
    register()  # skyrl_gym.make("routine_envs", env_config=..., extras={"env_id": ...})

``init(prompt)`` returns the conversation to start from: the env's system prompt (unless the
prompt brings a system message of its own), the prompt's other messages, and the first
observation, merged into the prompt's last user message when there is one (a dataset prompt
``[{"role": "user", ...}]`` gives roles ``['system', 'user']``, never two user messages in a
row; a prompt that already ends with the first observation is not repeated). ``step(reply)``
returns a ``BaseTextEnvStepOutput`` with the next observation as a user message, the reward,
``done``, ``metadata["info"]`` (the turn's ``info``) and ``metadata["annotations"]`` (the
episode's :class:`~routine_envs.adapters.annotations.AnnotationLog` as a dict: per turn
``step``, ``critical``, ``anchor``, ``state_id``, ``invalid_turn``; per episode
``decision_density``, ``num_critical``, ``num_invalid_turns``, ...); ``get_metrics()`` gives the
episode's counts as floats, which SkyRL's generator logs per episode.

Configuration comes from ``extras`` (per example) over
``env_config`` (per run): ``env_id``, ``env_kwargs``, ``seed``, ``invalid_penalty``,
``max_turns``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routine_envs.adapters.annotations import AnnotationLog
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
        self.annotations = AnnotationLog()

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset; the conversation to start from (see the module docstring)."""
        text, info = self.text_env.reset(seed=self.seed)
        self.turns = 0
        self.last_info = info
        self.annotations.start(info)
        messages = [dict(m) for m in (prompt or [])]
        if not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": self.text_env.system_prompt})
        last = messages[-1]
        if last.get("role") != "user":
            messages.append({"role": "user", "content": text})
        elif not str(last.get("content", "")).rstrip().endswith(text):
            last["content"] = f"{last.get('content', '')}\n\n{text}".lstrip()
        return messages, {"info": info}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One assistant reply: any text (a malformed one is an invalid turn)."""
        self.turns += 1
        text, reward, terminated, truncated, info = self.text_env.step(action)
        self.last_info = info
        done = terminated or truncated
        self.annotations.record(info, done)
        observations = [] if done else [{"role": "user", "content": text}]
        metadata = {"info": info, "annotations": self.annotations.as_dict()}
        return BaseTextEnvStepOutput(
            observations=observations, reward=reward, done=done, metadata=metadata
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's annotations as floats once it ended (``success``,
        ``decision_density``, ``num_critical``, ``num_invalid_turns``, ``episode_length``,
        ``critical_turn_fraction``), else {}."""
        return self.annotations.metrics() if self.annotations.episode() is not None else {}


def register(env_id: str = SKYRL_ID) -> str:
    """Register :class:`RoutineSkyRLEnv` with ``skyrl_gym`` under ``env_id`` (once)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:RoutineSkyRLEnv")
    return env_id
