"""Checks of an environment id and its keyword arguments, before any work: a ``module:Env-v0``
id whose module cannot be imported, an id that is not registered, keyword arguments that the
environment's constructor does not take (checked against ``inspect.signature`` of the entry
point), and spaces the trainers cannot use."""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

import gymnasium as gym

MAKE_KWARGS = {"max_episode_steps", "disable_env_checker"}
"""Keyword arguments of ``gym.make`` itself, accepted for every id."""


def check_env_id(env_id: str, flag: str = "--env-id") -> gym.envs.registration.EnvSpec:
    """The spec of ``env_id`` (``module:Env-v0`` imports ``module`` first, as ``gym.make``
    does); ``ValueError`` naming ``flag`` otherwise."""
    module, sep, name = env_id.rpartition(":")
    if sep:
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise ValueError(f"{flag} {env_id}: cannot import module {module!r} ({err})") from None
    else:
        name = env_id
    if name not in gym.registry:
        import routine_envs

        raise ValueError(
            f"{flag}: unknown environment {env_id!r}; registered by routine_envs: "
            f"{[e.id for e in routine_envs.ENVIRONMENTS]}"
        )
    return gym.spec(name)


def constructor_parameters(spec: gym.envs.registration.EnvSpec) -> set[str] | None:
    """The keyword arguments the entry point of ``spec`` takes, or ``None`` when it takes any
    (``**kwargs``) or cannot be inspected."""
    entry = spec.entry_point
    try:
        creator = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
        params = inspect.signature(creator).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}


def check_env_kwargs(env_id: str, kwargs: Any, flag: str = "--env-kwargs") -> None:
    """``kwargs`` must be a mapping of names the environment's constructor takes;
    ``ValueError`` naming ``flag``, the unknown names and the allowed ones otherwise."""
    if not isinstance(kwargs, dict):
        raise ValueError(f"{flag} must be a JSON object, got {kwargs!r}")
    allowed = constructor_parameters(check_env_id(env_id))
    if allowed is None:
        return
    allowed |= MAKE_KWARGS
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(
            f"{flag}: {env_id} takes no keyword argument(s) {unknown}; allowed: {sorted(allowed)}"
        )


#: observation spaces an ``MlpPolicy`` reads (SB3 flattens or one-hot encodes them).
MLP_OBSERVATION_SPACES = (
    gym.spaces.Box,
    gym.spaces.Discrete,
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
)


def check_trainable(env: gym.Env, env_id: str, flag: str = "--env-id") -> None:
    """The trainers of :mod:`baselines.lib.training` (SB3's ``PPO``, ``MaskablePPO`` and
    ``TrajectoryAdvantagePPO`` with an ``MlpPolicy``) need a ``Discrete`` action space and an
    observation space an MLP reads (:data:`MLP_OBSERVATION_SPACES`); ``ValueError`` naming
    ``flag``, the id and the space otherwise."""
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise ValueError(
            f"{flag} {env_id}: the trainers need a Discrete action space (PPO over discrete "
            f"actions, as every routine_envs environment has), got {env.action_space}"
        )
    if not isinstance(env.observation_space, MLP_OBSERVATION_SPACES):
        names = [space.__name__ for space in MLP_OBSERVATION_SPACES]
        raise ValueError(
            f"{flag} {env_id}: the trainers' MlpPolicy needs an observation space of "
            f"{names}, got {type(env.observation_space).__name__}"
        )


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)``; the environment's refusal of a keyword argument
    (``num_floors must be >= 1``) as a ``ValueError`` naming ``--env-kwargs`` and the value."""
    try:
        return gym.make(env_id, **env_kwargs)
    except ValueError as err:
        raise ValueError(f"--env-kwargs {json.dumps(env_kwargs)}: {err}") from None
