"""The model-driven vector env: step-by-step bit-identity with ``SyncVectorEnv`` over single envs
(``gym.make_vec(..., vectorization_mode="sync")``) on Diluted Doors v0 and v1, the contributed
example and a test env with action masks, approximate routine and a random start; every
autoreset mode, the time limit, the single env's own step budget, seeds, reset masks, the
per-step observation fallback, branching and bad inputs."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs import DilutedDoorsV0Env, InvalidActionError, model_vector
from routine_envs.envs.base import RoutineEnv
from routine_envs.envs.diluted_doors_v1 import PathDoorsDynamics
from routine_envs.envs.model_vector import ModelVectorEnv
from routine_envs.registration import make_model_vector_env
from tests.test_vector_env import assert_expands_on_first_visit, assert_same
from tests.utils import register_contributed_example

V0 = "DilutedDoors-v0"
# v1 under a test namespace until the table registers it (a second version of DilutedDoors in
# the default namespace would make Gymnasium warn that v0 is out of date, in every later test)
V1 = "DilutedDoors-v1" if "DilutedDoors-v1" in gym.registry else "ModelVectorTest/DilutedDoors-v1"
if V1 not in gym.registry:
    gym.register(V1, entry_point="routine_envs.envs.diluted_doors_v1:DilutedDoorsV1Env")
BUTTON = register_contributed_example()


# ------------------------------------------------------------- a test env with every option
@dataclass(frozen=True)
class WalkDynamics(Dynamics):
    """Walk right to the goal ``size - 1`` (pays 1, each step costs 0.01): ``step`` moves one
    cell (stays with probability ``slip``), ``wait`` stays (costs 0.005 per cell reached),
    ``jump`` moves two cells or stays with probability 1/2 and is valid only on even cells (an
    invalid action is a no-op). The start is random, given out of id order; routine is only
    approximate (the gaps grow along the walk: the first cells are not critical)."""

    size: int = 6
    slip: float = 0.25

    approximate_routine = True
    has_action_masks = True
    critical_tolerance = 0.012

    num_states = property(lambda self: self.size)
    num_actions = property(lambda self: 3)
    observation_space = property(lambda self: gym.spaces.Box(0, 1, (2,), np.float32))
    decision_density = property(lambda self: 0.5)
    max_episode_length = property(lambda self: 10_000)

    def initial_outcomes(self):
        return ((0.5, 2), (0.3, 0), (0.2, 1))

    def outcomes(self, state, action):
        if not self.action_mask(state)[action]:
            return ((1.0, state, 0.0, False),)
        goal = self.size - 1
        if action == 1:
            return ((1.0, state, -0.005 * (state + 1), False),)
        target = min(state + (1 if action == 0 else 2), goal)
        reward, done = (1.0, True) if target == goal else (-0.01, False)
        stay = 0.5 if action == 2 else self.slip
        return ((1 - stay, target, reward, done), (stay, state, -0.01, False))

    def state_id(self, state):
        return state

    def state_from_id(self, state_id):
        return state_id

    def action_mask(self, state):
        return np.array([True, True, state % 2 == 0])

    def observe(self, state):
        return np.array([state / (self.size - 1), state % 2], dtype=np.float32)

    def is_success(self, state):
        return state >= self.size - 2  # also when truncated next to the goal


@dataclass(frozen=True)
class DictWalkDynamics(WalkDynamics):
    """The walk with a ``Dict`` observation (not a single array: computed at every step)."""

    @property
    def observation_space(self):
        return gym.spaces.Dict(
            {
                "cell": gym.spaces.Discrete(self.size),
                "parity": gym.spaces.Box(0, 1, (1,), np.float32),
            }
        )

    def observe(self, state):
        return {"cell": state, "parity": np.array([state % 2], dtype=np.float32)}


class TextWalkDynamics(WalkDynamics):
    """The walk with a ``Text`` observation (a batch of them is a tuple of strings, which
    ``Tuple``'s handling once took apart: ``'str' object has no attribute 'take'``)."""

    @property
    def observation_space(self):
        return gym.spaces.Text(8, charset="cell0123456789")

    def observe(self, state):
        return f"cell{state}"


@dataclass(frozen=True)
class InterleavedWalkDynamics(WalkDynamics):
    """The walk with its model's transitions interleaved across ``(state, action)``s (each one's
    outcomes still in their order): the vector env must sort them."""

    def build_model(self):
        model = super().build_model()
        sa = model.state * model.num_actions + model.action
        rng = np.random.default_rng(0)
        r = rng.random(sa.size)  # random positions, then given out in order within each group
        by_group = np.argsort(sa, kind="stable")
        positions = np.empty(sa.size)
        positions[by_group] = r[np.lexsort((r, sa))]
        order = np.argsort(positions)
        columns = ("state", "action", "prob", "next_state", "reward", "terminated")
        return dataclasses.replace(model, **{c: getattr(model, c)[order] for c in columns})


class WalkEnv(RoutineEnv):
    def __init__(
        self,
        size=6,
        slip=0.25,
        dict_obs=False,
        max_steps=None,
        render_mode=None,
        mixed=False,
        text_obs=False,
    ):
        kind = DictWalkDynamics if dict_obs else InterleavedWalkDynamics if mixed else WalkDynamics
        kind = TextWalkDynamics if text_obs else kind
        super().__init__(kind(size, slip), render_mode, max_steps)


WALK = "ModelVectorTest/Walk-v0"
if WALK not in gym.registry:
    gym.register(WALK, entry_point=WalkEnv)


# ------------------------------------------------------------------------------- harness
def model_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """``env_id``'s spec with a ModelVectorEnv over its single env as vector entry point."""
    spec = gym.spec(env_id)
    return dataclasses.replace(spec, vector_entry_point=make_model_vector_env(spec.entry_point))


def make_pair(
    env_id: str,
    num_envs: int,
    mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    max_episode_steps: int | None = None,
    **kwargs: Any,
) -> tuple[gym.vector.VectorEnv, ModelVectorEnv]:
    """(``SyncVectorEnv`` over ``gym.make`` single envs with a ``TimeLimit`` when
    ``max_episode_steps``, the ModelVectorEnv built by ``gym.make_vec``), configured alike."""
    reference = gym.make_vec(
        env_id,
        num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        max_episode_steps=max_episode_steps,
        **kwargs,
    )
    native = gym.make_vec(
        model_spec(env_id),
        num_envs,
        autoreset_mode=mode,
        max_episode_steps=max_episode_steps,
        **kwargs,
    )
    assert isinstance(native, ModelVectorEnv)
    return reference, native


def as_numpy(seed: Any) -> Any:
    """The same seeds as numpy integers (the vector env accepts them; single envs do not)."""
    if isinstance(seed, list):
        return [None if s is None else np.int64(s) for s in seed]
    return seed if seed is None else np.int64(seed)


def run_both(
    reference: gym.vector.VectorEnv,
    native: ModelVectorEnv,
    steps: int,
    seed: Any,
    rng: np.random.Generator,
) -> int:
    """Step both with the same random actions comparing everything; return episodes ended.
    Seeds reach the native env as numpy integers. With autoreset disabled, finished sub-envs
    are reset with a mask and fresh or no seeds."""
    assert_same(reference.reset(seed=seed), native.reset(seed=as_numpy(seed)), "reset")
    ended = 0
    for t in range(steps):
        actions = rng.integers(native.single_action_space.n, size=native.num_envs)
        expected = reference.step(actions)
        assert_same(expected, native.step(actions), f"step {t}")
        done = expected[2] | expected[3]
        ended += int(done.sum())
        if done.any() and native.metadata["autoreset_mode"] == AutoresetMode.DISABLED:
            seeds = [int(rng.integers(1000)) if rng.random() < 0.5 else None for _ in done]
            assert_same(
                reference.reset(seed=seeds, options={"reset_mask": done.copy()}),
                native.reset(seed=as_numpy(seeds), options={"reset_mask": done.copy()}),
                f"masked reset after step {t}",
            )
    return ended


CONFIGS = [
    (V0, {}),
    (V0, {"routine_length": (0, 5), "reward": "fraction"}),
    (V0, {"routine_length": 0}),
    (V0, {"num_floors": 1, "num_doors": 2, "routine_length": (2, 4)}),
    (V0, {"num_floors": 4, "num_doors": 5, "routine_length": (1, 3), "layout_seed": 7}),
    # 36k reachable states, expanded as visited; 118 routine lengths to draw from; episodes of
    # up to 242 steps (all end in 250)
    (V0, {"num_floors": 2, "routine_length": (3, 120)}),
    (V1, {}),
    (V1, {"observation": "actions", "routine_length": (1, 3)}),
    (V1, {"observation": "position", "routine_length": (0, 4), "reward": "fraction"}),
    (V1, {"observation": "progress", "num_floors": 4, "num_doors": 2, "routine_length": (2, 3)}),
    (V1, {"observation": "actions", "num_floors": 5, "routine_length": 1, "layout_seed": 3}),
    (BUTTON, {}),
    (BUTTON, {"length": 0, "payout": 0.5}),
    (BUTTON, {"num_buttons": 2, "payout": 1.0, "length": 2}),
    (WALK, {}),
    (WALK, {"dict_obs": True, "slip": 0.5}),
    (WALK, {"text_obs": True, "slip": 0.5}),
    (WALK, {"mixed": True, "size": 9}),
]


def config_id(case: tuple[str, dict[str, Any]]) -> str:
    env_id, kwargs = case
    return env_id + ":" + ("-".join(f"{k}={v}" for k, v in kwargs.items()) or "default")


# ------------------------------------------------------------------------------ equivalence
@pytest.mark.parametrize("case", CONFIGS, ids=config_id)
def test_same_as_sync_vector_env_step_by_step(case):
    """Observations, rewards, terminations, truncations and every info array with its mask
    equal SyncVectorEnv's, across many episodes, after a reseed with a list (numpy ints and
    ``None``) and after a reset without seed (generators continue)."""
    env_id, kwargs = case
    reference, native = make_pair(env_id, 6, **kwargs)
    if kwargs.get("routine_length") == (3, 120):  # what the case is for, still true
        assert_expands_on_first_visit(native)
        assert native.dynamics.max_episode_length <= 250  # every sub-env crosses a reset
    rng = np.random.default_rng(0)
    ended = run_both(reference, native, 250, 11, rng)
    ended += run_both(reference, native, 100, [3, None, 0, 2**40, None, 5], rng)
    ended += run_both(reference, native, 100, None, rng)
    assert ended >= 6


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
@pytest.mark.parametrize("max_episode_steps", [None, 1, 7])
@pytest.mark.parametrize("case", [CONFIGS[1], CONFIGS[8], CONFIGS[12], CONFIGS[14]], ids=config_id)
def test_same_as_sync_vector_env_in_every_autoreset_mode(case, max_episode_steps, mode):
    """Including Gymnasium's time limit passed through gym.make_vec (truncated on the N-th
    step, also when terminated there; no episode-end keys unless terminated)."""
    env_id, kwargs = case
    reference, native = make_pair(env_id, 5, mode, max_episode_steps, **kwargs)
    assert native.metadata["autoreset_mode"] == mode
    assert native.max_episode_steps == max_episode_steps
    ended = run_both(reference, native, 200, 4, np.random.default_rng(1))
    assert ended >= 10


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
def test_the_single_envs_own_step_budget_is_kept(mode):
    """``max_steps`` of the single env truncates only when not terminated, with the episode-end
    keys (success of a non-terminal state included); a time limit can sit on top of it."""
    for max_episode_steps in (None, 5):
        reference, native = make_pair(WALK, 5, mode, max_episode_steps, max_steps=4, size=5)
        assert native.max_steps == 4
        ended = run_both(reference, native, 150, 2, np.random.default_rng(3))
        assert ended >= 10


def test_time_limit_semantics_differ_from_the_step_budget():
    """What the time limit does, spelled out: button with length 2 ends on step 3."""
    envs = gym.make_vec(model_spec(BUTTON), 2, max_episode_steps=3, length=2)
    envs.reset(seed=0)
    for _ in range(2):
        envs.step(np.zeros(2, dtype=np.int64))
    _, _, terminated, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert terminated.all() and truncated.all() and infos["_" + keys.SUCCESS].all()
    envs = gym.make_vec(model_spec(BUTTON), 2, max_episode_steps=2, length=2)
    envs.reset(seed=0)
    envs.step(np.zeros(2, dtype=np.int64))
    _, _, terminated, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert truncated.all() and not terminated.any() and keys.SUCCESS not in infos


@pytest.mark.parametrize("bound", ["per_step", "midway"])
@pytest.mark.parametrize("case", [CONFIGS[7], CONFIGS[12], CONFIGS[14]], ids=config_id)
def test_observations_and_masks_without_a_full_table(case, bound, monkeypatch):
    """Above the memory bound rows are computed at every step (from the first, or once the
    visited states' rows pass it): the same values either way."""
    monkeypatch.setattr(model_vector, "MAX_TABLE_BYTES", 0 if bound == "per_step" else 2048)
    env_id, kwargs = case
    reference, native = make_pair(env_id, 6, AutoresetMode.SAME_STEP, **kwargs)
    ended = run_both(reference, native, 200, 5, np.random.default_rng(2))
    assert ended >= 6


@pytest.mark.parametrize("case", [CONFIGS[1], CONFIGS[8], CONFIGS[13]], ids=config_id)
def test_draws_without_the_shared_distribution_shortcut(case, monkeypatch):
    """Where random (state, action)s have different probabilities a vectorized binary search
    picks the outcome: forced here on configurations of 2 to 6 outcomes."""
    monkeypatch.setattr(model_vector, "SHARED_DISTRIBUTION_SHORTCUT", False)
    env_id, kwargs = case
    reference, native = make_pair(env_id, 6, **kwargs)
    assert run_both(reference, native, 200, 8, np.random.default_rng(4)) >= 6


def test_draws_differ_across_sub_envs():
    """With random outcomes, sub-envs diverge (the equivalence above is not vacuous)."""
    envs = gym.make_vec(model_spec(V1), 64, routine_length=(0, 9))
    envs.reset(seed=0)
    _, _, _, _, infos = envs.step(np.zeros(64, dtype=np.int64))
    assert len(set(infos[keys.STATE_ID].tolist())) >= 8
    walk = ModelVectorEnv(WalkDynamics(), 64)
    _, infos = walk.reset(seed=0)
    assert set(infos[keys.STATE_ID].tolist()) == {0, 1, 2}


def test_built_from_dynamics_an_env_or_a_function():
    dynamics = PathDoorsDynamics(routine_length=(1, 2))
    results = []
    for source in (
        dynamics,
        gym.make(V1, routine_length=(1, 2)),
        lambda: gym.make(V1, routine_length=(1, 2)),
    ):
        envs = ModelVectorEnv(source, 3)
        assert envs.dynamics == dynamics and envs.num_envs == 3
        out = [envs.reset(seed=1)]
        out += [envs.step(np.array([0, 1, 2])) for _ in range(20)]
        results.append(out)
    assert_same(tuple(results[0]), tuple(results[1]), "dynamics vs env")
    assert_same(tuple(results[0]), tuple(results[2]), "dynamics vs function")


def test_make_vec_passes_arguments_and_spec():
    envs = gym.make_vec(model_spec(V1), 4, routine_length=3, observation="position")
    assert envs.spec.kwargs["routine_length"] == 3 and envs.spec.kwargs["num_envs"] == 4
    assert envs.dynamics == PathDoorsDynamics(routine_length=3, observation="position")
    assert envs.observation_space.shape == (4, 7) and envs.action_space.shape == (4,)
    assert isinstance(envs.metadata["autoreset_mode"], AutoresetMode)
    registered = make_model_vector_env("routine_envs.envs.diluted_doors:DilutedDoorsV0Env")
    envs = registered(num_envs=2, max_episode_steps=9, autoreset_mode="same_step", num_floors=2)
    assert envs.max_episode_steps == 9 and envs.autoreset_mode == AutoresetMode.SAME_STEP
    assert isinstance(envs.single_env, DilutedDoorsV0Env) and envs.dynamics.num_floors == 2


def test_deepcopy_branches_the_vector_env():
    envs = gym.make_vec(model_spec(WALK), 4)
    envs.reset(seed=3)
    actions = np.random.default_rng(0).integers(3, size=(60, 4))
    for a in actions[:10]:
        envs.step(a)
    twin = copy.deepcopy(envs)
    assert twin.dynamics is envs.dynamics
    for a in actions[10:]:
        assert_same(envs.step(a), twin.step(a), "branch")


# ------------------------------------------------------------------------------ bad input
class NoDynamicsEnv(gym.Env):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"num_envs": 0}, ValueError, "num_envs"),
        ({"num_envs": 2.0}, ValueError, "num_envs"),
        ({"num_envs": True}, ValueError, "num_envs"),
        ({"max_episode_steps": 0}, ValueError, "max_episode_steps"),
        ({"autoreset_mode": "sometimes"}, ValueError, "autoreset_mode"),
        ({"render_mode": "ansi"}, ValueError, "render_mode"),
        ({"source": NoDynamicsEnv()}, TypeError, "no dynamics"),
        ({"source": 3}, TypeError, "source"),
        ({"source": gym.wrappers.TimeLimit(WalkEnv(), 5)}, ValueError, "max_episode_steps"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ModelVectorEnv(**{"source": WalkDynamics(), "num_envs": 2, **kwargs})


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        (np.array([0, 1]), "shape"),
        (np.zeros((3, 1), dtype=np.int64), "shape"),
        (np.array([0.0, 1.0, 2.0]), "integer"),
        (np.array([True, False, True]), "integer"),
        (np.array([0, 3, 1]), r"\[1\]"),
        (np.array([0, -1, 1]), r"\[1\]"),
        ("012", "shape"),
    ],
)
def test_invalid_actions_raise_value_error(actions, match):
    envs = ModelVectorEnv(WalkDynamics(), 3)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=match) as caught:
        envs.step(actions)
    assert isinstance(caught.value, InvalidActionError)
    # the failed steps changed nothing; a list of ints and unsigned integers are fine
    fresh = ModelVectorEnv(WalkDynamics(), 3)
    fresh.reset(seed=0)
    for a in ([0, 1, 2], np.array([0, 0, 2], dtype=np.uint8)):
        assert_same(fresh.step(np.asarray(a, dtype=np.int64)), envs.step(a), str(a))


def test_step_before_reset_and_bad_resets():
    envs = ModelVectorEnv(WalkDynamics(), 2)
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        envs.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="first reset"):
        envs.reset(options={"reset_mask": np.array([True, False])})
    for seed, match in (
        ([1], "one entry per"),
        (-1, "seed"),
        ([1, 2.5], "seed"),
        ([1, -2], "seed"),
        ("7", "seed"),
        (True, "seed"),
        (1.0, "seed"),
    ):
        with pytest.raises(ValueError, match=match):
            envs.reset(seed=seed)
    envs.reset(seed=np.array([4, 5]))
    for mask in (np.array([1, 0]), np.array([True]), np.array([False, False]), [True, False]):
        with pytest.raises(ValueError, match="reset_mask"):
            envs.reset(options={"reset_mask": mask})


def test_disabled_autoreset_requires_a_masked_reset():
    envs = ModelVectorEnv(WalkDynamics(size=3), 3, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=0)
    for _ in range(200):
        _, _, terminated, truncated, _ = envs.step(np.zeros(3, dtype=np.int64))
        if (terminated | truncated).any():
            break
    with pytest.raises(gym.error.ResetNeeded, match="reset_mask"):
        envs.step(np.zeros(3, dtype=np.int64))
    envs.reset(options={"reset_mask": terminated | truncated})
    envs.step(np.zeros(3, dtype=np.int64))


# ------------------------------------------------------------------ bounds and lazy expansion
def test_num_envs_past_the_limit_is_refused_before_any_allocation():
    """Issue 36: ``num_envs=10**9`` was numpy's MemoryError; now a ValueError naming it."""
    limit = model_vector.MAX_NUM_ENVS
    with pytest.raises(ValueError, match=f"num_envs must be <= {limit}, got 1000000000"):
        gym.make_vec("DilutedDoors-v1", num_envs=10**9)
    with pytest.raises(ValueError, match="num_envs"):
        ModelVectorEnv(WalkDynamics(), limit + 1)


def test_the_vector_env_expands_only_what_its_episodes_visit(monkeypatch):
    """Issue 36: 500 floors of Diluted Doors v0 (2.8 million states) cost 11 s of CPU to build
    as a vector env (the whole model, its optimal values and per-state tables); now nothing is
    built ahead: the model is never asked for, and the states expanded are those reached."""
    from routine_envs.envs.diluted_doors import DoorsDynamics

    def no_model(self):
        raise AssertionError("the vector env asked for the whole model")

    monkeypatch.setattr(DoorsDynamics, "model", no_model)
    envs = gym.make_vec("DilutedDoors-v0", num_envs=4, num_floors=500)
    assert envs.visited_states == 1  # the start only
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(200):
        envs.step(rng.integers(envs.single_action_space.n, size=4))
    assert 1 < envs.visited_states < 5_000 < envs.dynamics.num_states


@pytest.mark.parametrize("case", [CONFIGS[5], CONFIGS[8]], ids=config_id)
def test_deep_copies_share_what_was_expanded(case):
    """A branch made mid-episode expands into the same tables: both give SyncVectorEnv's
    numbers for the same actions (checked against one reference each)."""
    env_id, kwargs = case
    reference, native = make_pair(env_id, 4, **kwargs)
    twin_reference, _ = make_pair(env_id, 4, **kwargs)
    rng = np.random.default_rng(1)
    assert_same(reference.reset(seed=2), native.reset(seed=2), "reset")
    twin_reference.reset(seed=2)
    for t in range(20):
        actions = rng.integers(native.single_action_space.n, size=4)
        assert_same(reference.step(actions), native.step(actions), f"step {t}")
        twin_reference.step(actions)
    twin = copy.deepcopy(native)
    for t in range(80):
        a, b = rng.integers(native.single_action_space.n, size=(2, 4))
        assert_same(reference.step(a), native.step(a), f"original, step {t}")
        assert_same(twin_reference.step(b), twin.step(b), f"branch, step {t}")
