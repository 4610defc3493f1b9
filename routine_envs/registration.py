"""Every environment id of the suite, registered with Gymnasium from one table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode


@dataclass(frozen=True)
class EnvEntry:
    """One row of the registration table.

    ``max_episode_steps`` is ``None`` for environments whose episodes end by construction within a
    bound that depends on their keyword arguments: a fixed Gymnasium ``TimeLimit`` would cut
    episodes of larger configurations short. ``rho`` says what sets the decision density.
    ``vector_entry_point`` is a hand-written native vector env; ``None`` gives every row with
    dynamics the generic :class:`~routine_envs.envs.model_vector.ModelVectorEnv`, driven by its
    exact model (``gym.make_vec(id, num_envs)``).
    """

    id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None
    vector_entry_point: str | None = None
    rho: str = ""
    #: the keyword argument that sets the decision density (swept by the comparison runner).
    density_kwarg: str | None = None


ENVIRONMENTS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="DilutedDoors-v0",
        entry_point="routine_envs.envs.diluted_doors:DilutedDoorsEnv",
        kwargs={
            "num_floors": 3,
            "num_doors": 3,
            "routine_length": 10,
            "reward": "success",
            "layout_seed": 0,
        },
        rho="routine_length L: rho = 1/(1+L)",
        density_kwarg="routine_length",
    ),
    EnvEntry(
        id="DilutedDoors-v1",
        entry_point="routine_envs.envs.diluted_doors_v1:DilutedDoorsV1Env",
        kwargs={
            "num_floors": 3,
            "num_doors": 3,
            "routine_length": 10,
            "reward": "success",
            "layout_seed": 0,
            "observation": "actions",
        },
        rho="routine_length L: rho = 1/(1+L)",
        density_kwarg="routine_length",
    ),
    *(
        EnvEntry(
            id=env_id,
            entry_point="routine_envs.envs.routine_grid:RoutineGridEnv",
            kwargs={
                "num_junctions": 3,
                "branching": 3,
                "corridor_length": 5,
                "layout_seed": 0,
                **extra,
            },
            rho="corridor_length L: rho = 1/(1+L)",
            density_kwarg="corridor_length",
        )
        for env_id, extra in (
            ("RoutineGrid-v0", {}),
            ("RoutineGridSoft-v0", {"soft_routine": 0.01, "critical_tolerance": 0.1}),
        )
    ),
    EnvEntry(
        id="CodeFix-v0",
        entry_point="routine_envs.envs.code_fix:CodeFixEnv",
        kwargs={
            "num_modules": 4,
            "num_patches": 3,
            "routine_length": 10,
            "signal_noise": 0.05,
            "max_attempts": 1,
            "step_cost": 0.0,
            "obs_mode": "vector",
            "layout_seed": 0,
        },
        rho="routine_length L: rho = 2/(2+L) per fix, 3/(3+L) when the log is read",
        density_kwarg="routine_length",
    ),
    EnvEntry(
        id="CodeFix-v1",
        entry_point="routine_envs.envs.code_fix:CodeFixEnv",
        kwargs={
            "num_modules": 4,
            "num_patches": 3,
            "routine_length": 10,
            "signal_noise": 0.05,
            "max_attempts": 1,
            "step_cost": 0.0,
            "obs_mode": "vector",
            "layout_seed": 0,
            "vocabulary": "arbitrary",
        },
        rho="routine_length L: rho = 2/(2+L) per fix, 3/(3+L) when the log is read",
        density_kwarg="routine_length",
    ),
)


TEAM_ADAPTERS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="TeamDilutedDoors-v0",
        entry_point="routine_envs.multiagent.turn_based:team_diluted_doors",
        kwargs={
            "num_agents": 2,
            "num_floors": 4,
            "num_doors": 3,
            "routine_length": 10,
            "chooser": "rotate",
            "reward": "success",
            "layout_seed": 0,
        },
        rho="routine_length L: rho per agent = 1/(N(1+L)) (rotating chooser)",
        density_kwarg="routine_length",
    ),
    EnvEntry(
        id="TeamRoutineGrid-v0",
        entry_point="routine_envs.multiagent.turn_based:team_routine_grid",
        kwargs={
            "num_agents": 2,
            "num_junctions": 3,
            "branching": 3,
            "corridor_length": 5,
            "reward": "success",
            "layout_seed": 0,
        },
        rho="corridor_length L: rho per agent = 1/(1+L)",
        density_kwarg="corridor_length",
    ),
)
"""The team environments as single-agent Gymnasium envs for a parameter-shared policy (agents
take turns; needs the ``multiagent`` extra when made). Adapters, not dynamics: the contract suite
and the docs pages cover :data:`ENVIRONMENTS`; the PettingZoo envs have their own tests."""


def entry(env_id: str) -> EnvEntry:
    """The registration row of ``env_id``; ``ValueError`` for an id that is not in the table."""
    for row in (*ENVIRONMENTS, *TEAM_ADAPTERS):
        if row.id == env_id:
            return row
    known = [row.id for row in (*ENVIRONMENTS, *TEAM_ADAPTERS)]
    raise ValueError(f"{env_id!r} is not a routine_envs environment; known: {known}")


@dataclass(frozen=True)
class ModelVectorEntryPoint:
    """A ``vector_entry_point`` building a :class:`ModelVectorEnv` over the single env that
    ``entry_point`` (``"module:Class"``, resolved on each call, or a callable) builds from the
    keyword arguments. ``gym.make_vec(id, num_envs, max_episode_steps=..., autoreset_mode=...,
    **kwargs)`` calls it as ``creator(num_envs=..., **kwargs)``; the env kwargs go to the single
    env, the others to the vector env. A module-level class, so env specs that hold it pickle."""

    entry_point: str | Callable[..., gym.Env]

    def __call__(
        self,
        num_envs: int = 1,
        *,
        max_episode_steps: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        from routine_envs.envs.model_vector import ModelVectorEnv

        entry = self.entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        return ModelVectorEnv(
            creator(**kwargs),
            num_envs,
            max_episode_steps=max_episode_steps,
            autoreset_mode=autoreset_mode,
            render_mode=render_mode,
        )


def make_model_vector_env(entry_point: str | Callable[..., gym.Env]) -> ModelVectorEntryPoint:
    """The ``vector_entry_point`` of a registration: a :class:`ModelVectorEntryPoint`."""
    return ModelVectorEntryPoint(entry_point)


def register_all() -> None:
    """Register every row of :data:`ENVIRONMENTS` and :data:`TEAM_ADAPTERS` (ids already
    registered are left alone)."""
    for entry in (*ENVIRONMENTS, *TEAM_ADAPTERS):
        if entry.id in gym.registry:
            continue
        vector = entry.vector_entry_point
        if vector is None and entry in ENVIRONMENTS:
            vector = make_model_vector_env(entry.entry_point)
        gym.register(
            id=entry.id,
            entry_point=entry.entry_point,
            vector_entry_point=vector,
            max_episode_steps=entry.max_episode_steps,
            kwargs=dict(entry.kwargs),
        )
