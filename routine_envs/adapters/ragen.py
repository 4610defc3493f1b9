"""RAGEN: every environment with RAGEN's ``BaseEnv`` interface (no RAGEN import needed).

``reset(seed=None) -> str`` (the rendered first observation), ``step(action: str) ->
(observation, reward, done, info)`` with RAGEN's ``info`` keys ``action_is_valid``,
``action_is_effective`` and ``success`` besides the suite's annotations, ``render(mode="text")``,
``get_all_actions()`` and ``close()``; also the older API's ``success()``, ``copy()`` and integer
actions (an index into ``ACTION_LOOKUP``). ``system_prompt`` holds the rules and the action
format.
"""

from __future__ import annotations

import copy
from typing import Any

from routine_envs import annotations as keys
from routine_envs.text import TextEnv, make_text_env


class RoutineRagenEnv:
    """A routine-envs environment as a RAGEN text env.

    Args:
        env_id: a routine-envs id.
        **kwargs: env keyword arguments and ``invalid_penalty``/``max_turns``.
    """

    def __init__(self, env_id: str = "DilutedDoors-v1", **kwargs: Any) -> None:
        self.text_env: TextEnv = make_text_env(env_id, **kwargs)
        #: action index -> canonical text (RAGEN's ``ACTION_LOOKUP``).
        self.ACTION_LOOKUP = dict(enumerate(self.text_env.view.action_texts()))
        self._rendered = ""
        self._success = False

    @property
    def system_prompt(self) -> str:
        return self.text_env.system_prompt

    def reset(self, seed: int | None = None, **kwargs: Any) -> str:
        """Start an episode; returns its rendered first observation."""
        self._rendered, _ = self.text_env.reset(seed=seed)
        self._success = False
        return self._rendered

    def step(self, action: str | int) -> tuple[str, float, bool, dict[str, Any]]:
        """One reply (or an action index); ``done`` is ``terminated or truncated``."""
        if (
            isinstance(action, int)
            and not isinstance(action, bool)
            and action in self.ACTION_LOOKUP
        ):
            action = self.ACTION_LOOKUP[action]
        text, reward, terminated, truncated, info = self.text_env.step(action)
        self._rendered = text
        valid = not info[keys.INVALID_TURN]
        info = dict(info)
        info["action_is_valid"] = valid
        info["action_is_effective"] = valid and not info.get(keys.INVALID_ACTION, False)
        info["success"] = self._success = bool(info.get(keys.SUCCESS, False))
        return text, reward, terminated or truncated, info

    def success(self) -> bool:
        """Whether the episode ended in success (the older API)."""
        return self._success

    def copy(self) -> RoutineRagenEnv:
        """A branch of this env: the same state and future (the older API)."""
        return copy.deepcopy(self)

    def render(self, mode: str = "text") -> str:
        """The current observation as text (``mode="text"`` only)."""
        if mode != "text":
            raise ValueError(f"mode must be 'text', got {mode!r}")
        return self._rendered

    def get_all_actions(self) -> list[str]:
        """The canonical text of every action."""
        return list(self.ACTION_LOOKUP.values())

    def close(self) -> None:
        self.text_env.close()
