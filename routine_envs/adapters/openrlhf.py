"""OpenRLHF: an ``AgentInstanceBase``-shaped agent instance (async ``reset``/``step``).

Point ``--agent_func_path`` at a file that does
``from routine_envs.adapters.openrlhf import AgentInstance`` (and OpenRLHF's ``AgentExecutor``
built on it). ``reset(states)`` reads the episode from ``states["label"]`` (a JSON object with
``env_id``, optional ``seed`` and ``env_kwargs``; a plain string is taken as the env id) and
returns ``{"observation": ...}`` (the rules and the first observation); ``step(states)`` reads
``states["action_text"]`` and returns ``rewards``, ``scores``, ``environment_feedback`` (the
next observation, formatted by ``feedback_template``), ``done``, ``sampling_params`` and
``extra_logs`` (the turn's annotations). Rewards and logs are 0-d ``torch`` tensors when torch is
importable (OpenRLHF's ``MultiTurnAgentExecutor`` reads ``rewards.item()``), numpy floats
otherwise. The executor builds the instance with no argument: the default ``env_id`` and the
``label`` decide the episode. When OpenRLHF is installed the class derives from its
``AgentInstanceBase``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from routine_envs import annotations as keys
from routine_envs.text import TextEnv, make_text_env

try:  # OpenRLHF's executor checks the base class
    from openrlhf.utils.agent import AgentInstanceBase as _Base
except ImportError:  # documented signatures only
    _Base = object


def _scalar(value: float) -> Any:
    """``value`` as OpenRLHF reads it (``.item()``): a torch tensor, else a numpy float."""
    try:
        import torch
    except ImportError:
        return np.float64(value)
    return torch.tensor(float(value))


class RoutineAgentInstance(_Base):  # type: ignore[misc, valid-type]
    """One episode of a routine-envs environment per instance.

    Args:
        env_id: the default id (``states["label"]`` may name another).
        feedback_template: how an observation is appended to the token stream;
            ``{observation}`` is replaced by it.
        **kwargs: env keyword arguments and ``invalid_penalty``/``max_turns``.
    """

    def __init__(
        self,
        *args: Any,
        env_id: str = "DilutedDoors-v1",
        feedback_template: str = "\n\n{observation}\n\n",
        **kwargs: Any,
    ) -> None:
        self.env_id = env_id
        self.feedback_template = feedback_template
        self.kwargs = kwargs
        self.text_env: TextEnv | None = None

    async def reset(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Start the episode named by ``states["label"]``."""
        label = states.get("label")
        spec: dict[str, Any] = {}
        if isinstance(label, str) and label.strip().startswith("{"):
            spec = json.loads(label)
        elif isinstance(label, str) and label:
            spec = {"env_id": label}
        elif isinstance(label, dict):
            spec = label
        env_kwargs = {**self.kwargs, **spec.get("env_kwargs", {})}
        self.text_env = make_text_env(spec.get("env_id", self.env_id), **env_kwargs)
        text, _ = self.text_env.reset(seed=spec.get("seed"))
        return {"observation": f"{self.text_env.system_prompt}\n\n{text}"}

    async def step(self, states: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """One reply, ``states["action_text"]``."""
        if self.text_env is None:
            await self.reset(states)
        assert self.text_env is not None
        text, reward, terminated, truncated, info = self.text_env.step(
            states.get("action_text", "")
        )
        done = terminated or truncated
        logs = {
            name: _scalar(info[name])
            for name in (keys.CRITICAL, keys.INVALID_TURN, *keys.EPISODE_END_KEYS)
            if name in info
        }
        return {
            "rewards": _scalar(reward),
            "scores": _scalar(reward),
            "environment_feedback": "" if done else self.feedback_template.format(observation=text),
            "done": done,
            "sampling_params": states.get("sampling_params"),
            "extra_logs": logs,
        }


AgentInstance = RoutineAgentInstance
"""The name OpenRLHF's agent files use."""
