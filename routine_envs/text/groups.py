"""Groups of episodes with identical starts, for GRPO-style methods."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from routine_envs.text.env import TextEnv, make_text_env


def make_group(
    env: str | Callable[[], TextEnv], size: int, seed: int | None = None, **kwargs: Any
) -> tuple[list[TextEnv], list[str], list[dict[str, Any]]]:
    """``size`` text envs started from one identical initial state.

    The first env is reset with ``seed``; every other starts from a deep copy of its initial
    state (:meth:`TextEnv.reset_to_initial_state`), so the group shares the start (a hidden bug,
    a routine length drawn at reset) and the random future: two members that reply alike play
    alike, and only the replies make them differ.

    Args:
        env: an env id (made with :func:`make_text_env` and ``kwargs``) or a zero-argument
            factory of :class:`TextEnv`.
        size: the group size (int >= 1).
        seed: seed of the shared start.

    Returns:
        The envs, their first observations and their first infos (lists of length ``size``).
    """
    if not isinstance(size, numbers.Integral) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size must be an int >= 1, got {size!r}")
    if isinstance(env, str):
        env_id = env

        def factory() -> TextEnv:
            return make_text_env(env_id, **kwargs)
    else:
        if kwargs:
            raise ValueError(f"kwargs {sorted(kwargs)} are for an env id, not a factory")
        factory = env
    first = factory()
    obs, info = first.reset(seed=seed)
    envs, observations, infos = [first], [obs], [info]
    start = first.get_initial_state()
    for _ in range(int(size) - 1):
        member = factory()
        obs, info = member.reset_to_initial_state(start)
        envs.append(member)
        observations.append(obs)
        infos.append(info)
    return envs, observations, infos
