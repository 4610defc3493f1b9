"""``register_dynamics``: the one call that registers an id, inside the package or outside, and
the env class it registers (the fields as keyword arguments, their defaults written once)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import gymnasium as gym
import numpy as np
import pytest

from routine_envs import registration
from routine_envs.envs import DilutedDoorsV0Env
from routine_envs.envs.base import RoutineEnv, env_class
from routine_envs.envs.code_fix import CodeFixDynamics, CodeFixEnv
from routine_envs.envs.diluted_doors import DoorsDynamics
from routine_envs.envs.model_vector import ModelVectorEnv
from routine_envs.envs.routine_grid import GridDynamics, RoutineGridV0Env
from routine_envs.registration import dynamics_entry, register_dynamics
from tests.contributed.key_corridor import KeyCorridorDynamics


@pytest.fixture
def far_corridor():
    """``TestFarCorridor-v0``, registered for one test (so the registry the other tests read is
    the same whatever the order of the tests)."""
    yield register_dynamics("TestFarCorridor-v0", KeyCorridorDynamics, length=20, max_steps=9)
    registration.unregister("TestFarCorridor-v0")
    assert "TestFarCorridor-v0" not in gym.registry
    with pytest.raises(ValueError, match="not registered with register_dynamics"):
        registration.unregister("TestFarCorridor-v0")


def test_a_preset_is_the_defaults_then_the_preset(far_corridor):
    """A second id of a dynamics class: its kwargs are every field's default, then the preset
    (an env option such as ``max_steps`` too); made, it is that configuration; its row carries
    the class's rho rule, density keyword and small configuration."""
    row = far_corridor
    assert row.kwargs == {"length": 20, "fumble": 0.25, "max_steps": 9}
    assert (row.rho_rule, row.density_kwarg) == (
        KeyCorridorDynamics.density_rule,
        KeyCorridorDynamics.density_kwarg,
    )
    env = gym.make("TestFarCorridor-v0")
    assert env.unwrapped.dynamics == KeyCorridorDynamics(length=20)
    assert env.unwrapped.max_steps == 9
    assert isinstance(gym.make_vec("TestFarCorridor-v0", 2), ModelVectorEnv)
    assert registration.entry("TestFarCorridor-v0") is row
    assert (
        register_dynamics("TestFarCorridor-v0", KeyCorridorDynamics, length=20, max_steps=9) == row
    )


@pytest.mark.parametrize(
    ("args", "preset", "message"),
    [
        (("", KeyCorridorDynamics), {}, "env_id must be a non-empty string"),
        ((3, KeyCorridorDynamics), {}, "env_id must be a non-empty string"),
        (("TestBad-v0", dict), {}, "dynamics must be a Dynamics subclass"),
        (("TestBad-v0", {}), {}, "dynamics must be a Dynamics subclass"),
        (("TestBad-v0", KeyCorridorDynamics(), ), {}, "dynamics must be a Dynamics subclass"),
        (("TestBad-v0", KeyCorridorDynamics), {"lenght": 3}, r"argument\(s\) \[.lenght."),
        (("KeyCorridor-v0", KeyCorridorDynamics), {"length": 2}, "already registered"),
        (("CartPole-v1", KeyCorridorDynamics), {}, "already registered with Gymnasium"),
    ],
)  # fmt: skip
def test_bad_registrations_are_one_line_value_errors(args, preset, message):
    before = dict(gym.registry)
    with pytest.raises(ValueError, match=message) as caught:
        register_dynamics(*args, **preset)
    assert "\n" not in str(caught.value)
    assert dict(gym.registry) == before


def test_the_env_class_of_a_dynamics_class():
    """The package's env classes are declared for their dynamics; a dynamics class without one
    gets a generic class, built once, whose instances pickle and branch."""
    assert (
        env_class(DoorsDynamics) is DilutedDoorsV0Env and env_class(CodeFixDynamics) is CodeFixEnv
    )
    cls = env_class(KeyCorridorDynamics)
    assert env_class(KeyCorridorDynamics) is cls and issubclass(cls, RoutineEnv)
    env = cls(length=4)
    env.reset(seed=3)
    env.step(1)
    for other in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert type(other) is cls and other.state == env.state
        assert other.step(2)[4] == env.step(2)[4]
        env.reset(seed=3)
        env.step(1)


def test_signatures_are_the_fields_then_the_options():
    doors = inspect.signature(DilutedDoorsV0Env).parameters
    assert list(doors) == [
        "num_floors", "num_doors", "routine_length", "reward", "layout_seed",
        "max_steps", "render_mode",
    ]  # fmt: skip
    assert (
        doors["routine_length"].default == 10
        and doors["max_steps"].kind is doors["max_steps"].KEYWORD_ONLY
    )
    grid = inspect.signature(RoutineGridV0Env).parameters  # a kw_only dataclass: keyword-only
    assert all(p.kind is p.KEYWORD_ONLY for p in grid.values())
    assert list(grid)[:4] == ["num_junctions", "branching", "corridor_length", "layout_seed"]
    assert dataclasses.fields(GridDynamics)[0].name == "critical_tolerance"  # (the base's place)
    code_fix = inspect.signature(CodeFixEnv).parameters
    assert list(code_fix)[-3:] == ["obs_mode", "max_steps", "render_mode"]


def test_the_env_takes_its_fields_by_position_or_name_and_nothing_else():
    assert DilutedDoorsV0Env(2, 3, 4).dynamics == DoorsDynamics(2, 3, 4)
    assert DilutedDoorsV0Env(num_floors=2).dynamics == DoorsDynamics(num_floors=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'floors'"):
        DilutedDoorsV0Env(floors=2)
    with pytest.raises(TypeError, match="multiple values for argument 'num_floors'"):
        DilutedDoorsV0Env(2, num_floors=3)
    with pytest.raises(TypeError, match="at most 5 positional"):
        DilutedDoorsV0Env(1, 2, 3, "success", 0, 9)
    with pytest.raises(TypeError, match="at most 0 positional"):
        RoutineGridV0Env(3)
    with pytest.raises(ValueError, match="dynamics must be a Dynamics subclass"):

        class _Bad(RoutineEnv, dynamics=int):  # type: ignore[call-arg]
            pass


def test_repr_shows_the_configuration():
    assert repr(DilutedDoorsV0Env(num_floors=2)) == (
        "DilutedDoorsV0Env(num_floors=2, num_doors=3, routine_length=10, reward='success', "
        "layout_seed=0)"
    )
    assert "max_steps=7" in repr(RoutineGridV0Env(max_steps=7))
    assert "obs_mode='text'" in repr(CodeFixEnv(obs_mode="text"))


def test_outside_code_gets_the_native_vector_env_bit_for_bit():
    """The native vector env of an outside id returns what ``SyncVectorEnv`` returns."""
    from tests.test_contract import same

    native = gym.make_vec("KeyCorridor-v0", 3, length=2)
    sync = gym.make_vec("KeyCorridor-v0", 3, vectorization_mode="sync", length=2)
    rng = np.random.default_rng(0)
    out = [(native.reset(seed=1), sync.reset(seed=1))]
    for _ in range(40):
        actions = rng.integers(3, size=3)
        out.append((native.step(actions), sync.step(actions)))
    assert all(same(a, b) for a, b in out)


def test_the_package_ids_cannot_be_unregistered():
    with pytest.raises(ValueError, match="one of the package's ids"):
        registration.unregister("DilutedDoors-v1")
    assert "DilutedDoors-v1" in gym.registry


def test_dynamics_entry_registers_nothing():
    row = dynamics_entry("TestNeverRegistered-v0", KeyCorridorDynamics)
    assert "TestNeverRegistered-v0" not in gym.registry
    with pytest.raises(ValueError, match="not a routine_envs environment"):
        registration.entry(row.id)
