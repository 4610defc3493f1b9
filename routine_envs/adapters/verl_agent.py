"""verl-agent: an ``EnvironmentManagerBase``-shaped manager over groups of text envs (no
verl-agent import needed).

``reset(kwargs=None) -> ({"text", "image", "anchor"}, infos)`` and ``step(text_actions) ->
(observations, rewards, dones, infos)`` over ``num_groups * group_n`` envs; the members of a
group start from one identical state (GiGPO's and GRPO's groups). :func:`projection` maps the
model's texts to actions and marks ``is_action_valid`` as verl-agent's projection functions do
(an invalid text is an invalid turn of the env, which the manager still steps: the state does
not change). ``observations["anchor"]`` is each env's observation text without history or
invalid-reply note (GiGPO's anchor observation); ``infos[i]["anchor"]`` its stable hash, and
``infos[i]["won"]`` the success verl-agent's ``success_evaluator`` reads. A finished env stays
finished until the next ``reset`` (reward 0, done True).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from routine_envs import annotations as keys
from routine_envs.text import ActionParser, TextEnv, make_group


def projection(
    text_actions: Sequence[str], parsers: Sequence[ActionParser]
) -> tuple[list[int], list[int]]:
    """verl-agent's ``projection_f``: the action of each text (``-1`` where it names none) and
    ``is_action_valid`` (1 or 0)."""
    actions, valids = [], []
    for text, parser in zip(text_actions, parsers, strict=True):
        parsed = parser.parse(text)
        actions.append(-1 if parsed.action is None else parsed.action)
        valids.append(int(parsed.valid))
    return actions, valids


class RoutineEnvironmentManager:
    """``num_groups`` groups of ``group_n`` text envs of ``env_id``.

    Args:
        env_id: a routine-envs id.
        num_groups: groups per batch (int >= 1).
        group_n: envs per group, started identically (int >= 1).
        seed: seeds the groups' starts (group ``g`` of reset ``k`` is seeded deterministically).
        **kwargs: env keyword arguments and ``invalid_penalty``/``max_turns``.
    """

    def __init__(
        self, env_id: str, num_groups: int = 1, group_n: int = 1, seed: int = 0, **kwargs: Any
    ) -> None:
        for name, value in (("num_groups", num_groups), ("group_n", group_n)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.env_id, self.kwargs = env_id, dict(kwargs)
        self.num_groups, self.group_n = num_groups, group_n
        self.rng = np.random.default_rng(seed)
        self.envs: list[TextEnv] = []
        self.done = np.zeros(0, dtype=bool)
        self._last: list[tuple[str, dict[str, Any]]] = []

    @property
    def parsers(self) -> list[ActionParser]:
        return [env.parser for env in self.envs]

    def reset(self, kwargs: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[dict]]:
        """New starts for every group; returns the observations dict and the infos."""
        self.envs, texts, infos = [], [], []
        for _ in range(self.num_groups):
            seed = int(self.rng.integers(2**31 - 1))
            envs, group_texts, group_infos = make_group(
                self.env_id, self.group_n, seed=seed, **self.kwargs
            )
            self.envs += envs
            texts += group_texts
            infos += group_infos
        self.done = np.zeros(len(self.envs), dtype=bool)
        self._last = list(zip(texts, infos, strict=True))
        return self._observations(texts), infos

    def step(
        self, text_actions: Sequence[str]
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """One reply per env (a finished env ignores its reply)."""
        if len(text_actions) != len(self.envs):
            raise ValueError(
                f"text_actions must have {len(self.envs)} entries, got {len(text_actions)}"
            )
        _, valids = projection(text_actions, self.parsers)
        rewards = np.zeros(len(self.envs), dtype=np.float32)
        texts, infos = [], []
        for i, (env, text) in enumerate(zip(self.envs, text_actions, strict=True)):
            if self.done[i]:
                obs, info = self._last[i]
            else:
                obs, reward, terminated, truncated, info = env.step(text)
                rewards[i] = reward
                self.done[i] = terminated or truncated
                info = dict(info)
                info["won"] = bool(info.get(keys.SUCCESS, False))
                self._last[i] = (obs, info)
            info = dict(info)
            info["is_action_valid"] = np.asarray(valids[i])
            texts.append(obs)
            infos.append(info)
        return self._observations(texts), rewards, self.done.copy(), infos

    def build_text_obs(self) -> list[str]:
        """The current text observation of every env."""
        return [text for text, _ in self._last]

    def success_evaluator(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """``{"success_rate": won of each env's last turn}``."""
        won = [float(info.get(keys.SUCCESS, False)) for _, info in self._last]
        return {"success_rate": np.asarray(won)}

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def _observations(self, texts: list[str]) -> dict[str, Any]:
        return {"text": texts, "image": None, "anchor": [env.observation_text for env in self.envs]}
