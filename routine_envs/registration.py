"""Every environment id of the suite, registered with Gymnasium: one call per id.

An id is a dynamics class and, optionally, a preset of its keyword arguments:

    register_dynamics("Button-v0", ButtonDynamics)             # outside the package, the same
    register_dynamics("ButtonFar-v0", ButtonDynamics, length=50)

:func:`register_dynamics` builds the registration row from the dynamics class alone
(:func:`dynamics_entry`: the defaults are its fields', the rho rule, the density keyword and the
small test configuration are its class attributes), registers the id with Gymnasium with its env
class as the entry point (the ``RoutineEnv`` subclass declared for the dynamics, or a generic one)
and the native vector env attached (``gym.make_vec(id, num_envs)`` is a
:class:`~routine_envs.envs.model_vector.ModelVectorEnv`), and keeps the row where the tests, the
docs and the experiments find it (:func:`entry`, :func:`entries`). The package's own ids are the
table :data:`ENVIRONMENTS`, built by the same function.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode

from routine_envs.dynamics import Dynamics
from routine_envs.envs.base import config_fields, env_class, is_module_level
from routine_envs.envs.clue_doors import ClueDynamics
from routine_envs.envs.code_fix import CodeFixDynamics
from routine_envs.envs.diluted_doors import DoorsDynamics
from routine_envs.envs.diluted_doors_v1 import PathDoorsDynamics
from routine_envs.envs.routine_grid import GridDynamics
from routine_envs.envs.routine_grid_v1 import TreeGridDynamics
from routine_envs.envs.search_or_answer import SearchDynamics


@dataclass(frozen=True)
class EnvEntry:
    """One registered id.

    ``kwargs`` are the registered keyword arguments (for an id of a dynamics class: every field's
    default, then the preset). ``max_episode_steps`` is ``None`` for environments whose episodes
    end by construction within a bound that depends on their keyword arguments: a fixed
    Gymnasium ``TimeLimit`` would cut episodes of larger configurations short. ``rho_rule`` says
    (in words) what sets the decision density and ``density_kwarg`` names that keyword (swept by
    the experiments). ``vector_entry_point`` is the native vector env
    (:class:`ModelVectorEntryPoint`, for every id of a dynamics class). ``small_kwargs`` is a
    configuration (over ``kwargs``) whose episodes take a few steps, for the tests' Monte-Carlo
    checks; ``dynamics`` the dynamics class (``None`` for the team adapters).
    """

    id: str
    entry_point: str | Callable[..., gym.Env]
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None
    vector_entry_point: Any = None
    #: how :attr:`density_kwarg` sets rho, in words (``"routine_length L: rho = 1/(1+L)"``).
    rho_rule: str = ""
    #: the keyword argument that sets the decision density (swept by the comparison runner).
    density_kwarg: str | None = None
    small_kwargs: dict[str, Any] = field(default_factory=dict)
    dynamics: type[Dynamics] | None = None


class DynamicsEnvCreator:
    """The entry point of an id whose env class is not a module attribute (the generic class of
    :func:`~routine_envs.envs.base.env_class`, made for dynamics that have no env class of their
    own): ``creator(**kwargs)`` makes the env. It shows the env class's ``metadata`` and
    ``__signature__`` (``gym.make`` and the keyword checks of the command lines read them) and
    pickles as its dynamics class, so env specs that hold it pickle."""

    def __init__(self, dynamics: type[Dynamics]) -> None:
        self.dynamics = dynamics
        self.env_class = env_class(dynamics)
        self.metadata = self.env_class.metadata
        self.__signature__ = inspect.signature(self.env_class)

    def __call__(self, **kwargs: Any) -> gym.Env:
        return self.env_class(**kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return DynamicsEnvCreator, (self.dynamics,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DynamicsEnvCreator) and other.dynamics is self.dynamics

    def __hash__(self) -> int:
        return hash(self.dynamics)

    def __repr__(self) -> str:
        return f"DynamicsEnvCreator({self.dynamics.__module__}.{self.dynamics.__qualname__})"


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


def dynamics_entry(env_id: str, dynamics: type[Dynamics], **preset: Any) -> EnvEntry:
    """The registration row of ``env_id``: the env class of ``dynamics`` with every field's
    default and then ``preset`` (keyword arguments the env class takes, fields or options such
    as ``max_steps``) as its kwargs; the rho rule, the density keyword and the small
    configuration of the dynamics class; the native vector env. Registers nothing.

    Raises:
        ValueError: ``env_id`` is not a non-empty string, ``dynamics`` is no ``Dynamics``
            subclass, or ``preset`` names a keyword the env class does not take.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
    cls = env_class(dynamics)
    accepted = inspect.signature(cls).parameters
    unknown = sorted(set(preset) - set(accepted))
    if unknown:
        raise ValueError(
            f"{env_id}: {cls.__name__} takes no keyword argument(s) {unknown}; "
            f"allowed: {sorted(accepted)}"
        )
    kwargs = {f.name: accepted[f.name].default for f in config_fields(dynamics)}
    kwargs = {name: value for name, value in kwargs.items() if value is not inspect.Parameter.empty}
    kwargs.update(preset)
    if is_module_level(cls):
        entry_point: str | Callable[..., gym.Env] = f"{cls.__module__}:{cls.__qualname__}"
    else:
        entry_point = DynamicsEnvCreator(dynamics)
    return EnvEntry(
        id=env_id,
        entry_point=entry_point,
        kwargs=kwargs,
        vector_entry_point=ModelVectorEntryPoint(entry_point),
        rho_rule=dynamics.density_rule,
        density_kwarg=dynamics.density_kwarg,
        small_kwargs=dict(dynamics.small_config),
        dynamics=dynamics,
    )


#: every row registered through :func:`register_entry`, by id, in the order of registration.
_REGISTERED: dict[str, EnvEntry] = {}


def register_entry(row: EnvEntry) -> EnvEntry:
    """Register ``row`` with Gymnasium and keep it (:func:`entry`, :func:`entries`). The same row
    again is a no-op; another row for a registered id is a ``ValueError``."""
    known = _REGISTERED.get(row.id)
    if known is not None:
        if known == row:
            return known
        raise ValueError(f"{row.id!r} is already registered, by {known.entry_point!r}")
    if row.id in gym.registry:
        raise ValueError(f"{row.id!r} is already registered with Gymnasium by another package")
    gym.register(
        id=row.id,
        entry_point=row.entry_point,
        vector_entry_point=row.vector_entry_point,
        max_episode_steps=row.max_episode_steps,
        kwargs=dict(row.kwargs),
    )
    _REGISTERED[row.id] = row
    return row


def register_dynamics(env_id: str, dynamics: type[Dynamics], **preset: Any) -> EnvEntry:
    """Register ``env_id``: the env of ``dynamics`` at its defaults and ``preset``, with its
    native vector env (see :func:`dynamics_entry`); all an environment needs, inside the package
    or outside. Idempotent for the same arguments; returns the row."""
    return register_entry(dynamics_entry(env_id, dynamics, **preset))


def unregister(env_id: str) -> None:
    """Remove an id that outside code registered with :func:`register_dynamics` (a notebook
    that defines its dynamics class again registers the new class after this); ``ValueError``
    for the package's own ids and for ids not registered so."""
    if any(row.id == env_id for row in (*ENVIRONMENTS, *TEAM_ADAPTERS)):
        raise ValueError(f"{env_id!r} is one of the package's ids: it cannot be unregistered")
    if env_id not in _REGISTERED:
        raise ValueError(f"{env_id!r} was not registered with register_dynamics")
    del _REGISTERED[env_id]
    gym.registry.pop(env_id, None)


ENVIRONMENTS: tuple[EnvEntry, ...] = (
    dynamics_entry("DilutedDoors-v0", DoorsDynamics),
    dynamics_entry("DilutedDoors-v1", PathDoorsDynamics),
    dynamics_entry("RoutineGrid-v0", GridDynamics),
    dynamics_entry("RoutineGridSoft-v0", GridDynamics, soft_routine=0.01, critical_tolerance=0.1),
    dynamics_entry("RoutineGrid-v1", TreeGridDynamics),
    dynamics_entry("CodeFix-v0", CodeFixDynamics),
    dynamics_entry("CodeFix-v1", CodeFixDynamics, vocabulary="arbitrary"),
    dynamics_entry("SearchOrAnswer-v0", SearchDynamics),
    dynamics_entry("ClueDoors-v0", ClueDynamics),
)
"""The package's environments, one row per id (registered by :func:`register_all`)."""


def team_adapter_entry(
    env_id: str,
    module: str,
    kwargs: dict[str, Any],
    rho_rule: str,
    density_kwarg: str,
    small_kwargs: dict[str, Any],
) -> EnvEntry:
    """The row of a turn-based team id: the entry point is ``turn_based_env`` of the versioned
    module ``routine_envs.multiagent.<module>`` (imported by ``gym.make``, not here: it needs
    PettingZoo); ``kwargs`` are the team env's defaults."""
    return EnvEntry(
        id=env_id,
        entry_point=f"routine_envs.multiagent.{module}:turn_based_env",
        kwargs=dict(kwargs),
        rho_rule=rho_rule,
        density_kwarg=density_kwarg,
        small_kwargs=dict(small_kwargs),
    )


#: the team envs of each family, both versions (v1's Diluted Doors has one keyword more)
_TEAM_DOORS: dict[str, Any] = {
    "kwargs": {
        "num_agents": 2,
        "num_floors": 4,
        "num_doors": 3,
        "routine_length": 10,
        "chooser": "rotate",
        "reward": "success",
        "layout_seed": 0,
    },
    "rho_rule": "routine_length L: rho per agent = 1/(N(1+L)) (rotating chooser)",
    "density_kwarg": "routine_length",
    "small_kwargs": {"num_floors": 2, "routine_length": (0, 2)},
}
_TEAM_GRID: dict[str, Any] = {
    "kwargs": {
        "num_agents": 2,
        "num_junctions": 3,
        "branching": 3,
        "corridor_length": 5,
        "reward": "success",
        "layout_seed": 0,
    },
    "rho_rule": "corridor_length L: rho per agent = 1/(1+L)",
    "density_kwarg": "corridor_length",
    # (two branches: under a random policy three make success too rare for the tests'
    # Monte-Carlo checks)
    "small_kwargs": {"num_junctions": 2, "branching": 2, "corridor_length": 2},
}

TEAM_ADAPTERS: tuple[EnvEntry, ...] = (
    team_adapter_entry("TeamDilutedDoors-v0", "diluted_doors_v0", **_TEAM_DOORS),
    team_adapter_entry("TeamRoutineGrid-v0", "routine_grid_v0", **_TEAM_GRID),
    team_adapter_entry(
        "TeamDilutedDoors-v1",
        "diluted_doors_v1",
        **{**_TEAM_DOORS, "kwargs": {**_TEAM_DOORS["kwargs"], "observation": "actions"}},
    ),
    team_adapter_entry("TeamRoutineGrid-v1", "routine_grid_v1", **_TEAM_GRID),
)
"""The team environments as single-agent Gymnasium envs for a parameter-shared policy (agents
take turns; needs the ``multiagent`` extra when made, so their rows name their keyword arguments
here instead of reading them from the team envs: ``tests/test_multiagent.py`` checks that they
are the team envs' defaults). Adapters, not dynamics: the docs pages cover :data:`ENVIRONMENTS`;
the PettingZoo envs have their own tests."""


def entries() -> tuple[EnvEntry, ...]:
    """Every registered row: the package's (:data:`ENVIRONMENTS`, :data:`TEAM_ADAPTERS`), then
    those of outside code (:func:`register_dynamics`), in the order of registration."""
    return tuple(_REGISTERED.values())


def entry(env_id: str) -> EnvEntry:
    """The registration row of ``env_id``; ``module:Name-v0`` imports ``module`` first (as
    ``gym.make`` does: a module of outside code registers its ids when imported). ``ValueError``
    for a module that cannot be imported and for an id that is not in the table nor registered
    by :func:`register_dynamics`."""
    module, sep, name = env_id.rpartition(":") if isinstance(env_id, str) else ("", "", env_id)
    if sep:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"{env_id}: cannot import module {module!r} ({error})") from None
        env_id = name
    for row in (*_REGISTERED.values(), *ENVIRONMENTS, *TEAM_ADAPTERS):
        if row.id == env_id:
            return row
    known = sorted({row.id for row in (*_REGISTERED.values(), *ENVIRONMENTS, *TEAM_ADAPTERS)})
    raise ValueError(f"{env_id!r} is not a routine_envs environment; known: {known}")


def register_all() -> None:
    """Register every row of :data:`ENVIRONMENTS` and :data:`TEAM_ADAPTERS` (idempotent; an id
    that another package registered first is left to it)."""
    for row in (*ENVIRONMENTS, *TEAM_ADAPTERS):
        spec = gym.registry.get(row.id)
        if spec is None:
            register_entry(row)
        elif spec.entry_point == row.entry_point:  # ours (a module reloaded): known again
            _REGISTERED.setdefault(row.id, row)
