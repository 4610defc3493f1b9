"""GEM: every environment with GEM's ``Env`` interface (no GEM import needed).

``reset(seed) -> (observation, info)`` (the first observation starts with the rules),
``step(action: str) -> (observation, reward, terminated, truncated, info)``,
``sample_random_action() -> str``, ``spawn(same_state=False)`` and, for groups of identical
starts, ``get_initial_state()`` / ``reset_to_initial_state(state)`` (deep copies).
:func:`register` adds every id to GEM's registry (``gem.make("routine_envs:CodeFix-v1")``,
``gem.make_vec([...])``), which passes a ``seed`` to the constructor.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

from routine_envs.text import InitialState, TextEnv, make_text_env


class RoutineGemEnv:
    """A routine-envs environment as a GEM text env.

    Args:
        env_id: a routine-envs id.
        seed: seed of the first ``reset`` without one (GEM's ``make_vec`` passes it); later
            resets without a seed continue the env's random stream.
        **kwargs: env keyword arguments and ``invalid_penalty``/``max_turns``.
    """

    def __init__(
        self, env_id: str = "DilutedDoors-v1", seed: int | None = None, **kwargs: Any
    ) -> None:
        #: the routine-envs id (``gem.make`` sets ``env_id`` to GEM's own id).
        self.routine_env_id = env_id
        self.kwargs = dict(kwargs)
        self.text_env: TextEnv = make_text_env(env_id, **kwargs)
        self.rng = np.random.default_rng(seed)
        self._first_seed = seed

    @property
    def unwrapped(self) -> RoutineGemEnv:
        return self

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode; the observation is the rules, then the first observation."""
        if seed is None:
            seed, self._first_seed = self._first_seed, None
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        text, info = self.text_env.reset(seed=seed)
        return f"{self.text_env.system_prompt}\n\n{text}", info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One reply (any text; a malformed one is an invalid turn)."""
        return self.text_env.step(action)

    def sample_random_action(self) -> str:
        """The canonical text of a uniformly drawn action."""
        return self.text_env.action_text(int(self.rng.integers(self.text_env.view.num_actions)))

    def get_initial_state(self) -> InitialState:
        """The start of the current episode (a deep copy of the env after ``reset``)."""
        return self.text_env.get_initial_state()

    def reset_to_initial_state(self, state: InitialState) -> tuple[str, dict[str, Any]]:
        """Start an episode from ``state``: the same start and random future."""
        text, info = self.text_env.reset_to_initial_state(state)
        return f"{self.text_env.system_prompt}\n\n{text}", info

    def spawn(self, same_state: bool = False, **kwargs: Any) -> RoutineGemEnv:
        """A new env of the same configuration (``kwargs`` override it); with ``same_state``,
        in this env's current state (a branch: the same future for the same replies)."""
        if same_state:
            if kwargs:
                raise ValueError("kwargs cannot be given with same_state=True")
            return copy.deepcopy(self)
        return RoutineGemEnv(self.routine_env_id, **{**self.kwargs, **kwargs})

    def close(self) -> None:
        self.text_env.close()


def register(prefix: str = "routine_envs:") -> list[str]:
    """Register every routine-envs id (and the team ids) with GEM as ``prefix + id``; returns
    the GEM ids (already registered ones are kept). Needs ``gem-llm``."""
    import gem
    from gem.envs.registration import ENV_REGISTRY

    from routine_envs.registration import ENVIRONMENTS, TEAM_ADAPTERS

    names = []
    for row in (*ENVIRONMENTS, *TEAM_ADAPTERS):
        name = prefix + row.id
        if name not in ENV_REGISTRY:
            # a callable entry point: GEM's own ``register`` takes ``env_id`` as its first argument
            gem.register(name, entry_point=functools.partial(RoutineGemEnv, row.id))
        names.append(name)
    return names
