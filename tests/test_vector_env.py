"""The native vector env of Diluted Doors (the model-driven ``ModelVectorEnv``, what
``gym.make_vec`` gives): step-by-step equivalence with single environments (through
``SyncVectorEnv``), autoreset modes, truncation, seeding, bad arguments, branching; the SB3 adapter
against ``DummyVecEnv``; a smoke test of the benchmark. ``tests/test_model_vector.py`` covers the
model vector env on other dynamics."""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import routine_envs
from routine_envs import annotations as keys
from routine_envs.envs import DilutedDoorsV0Env, InvalidActionError
from routine_envs.envs.model_vector import ModelVectorEnv

ENV_ID = "DilutedDoors-v0"
CONFIGS = [
    {},
    {"routine_length": (0, 5), "reward": "fraction"},
    {"routine_length": 0},
    {"num_floors": 1, "num_doors": 2, "routine_length": (2, 4)},
    {"num_floors": 4, "num_doors": 5, "routine_length": (1, 3), "layout_seed": 7},
    # 36k reachable states, expanded as visited; 118 routine lengths to draw; episodes of up to
    # 242 steps
    {"num_floors": 2, "routine_length": (3, 120)},
]


def config_id(kwargs: dict[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in kwargs.items()) or "default"


def make_pair(
    num_envs: int,
    mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    max_steps: int | None = None,
    **kwargs: Any,
) -> tuple[gym.vector.VectorEnv, gym.vector.VectorEnv]:
    """(SyncVectorEnv over single envs, the native vector env), configured alike: both through
    ``gym.make_vec``, so ``max_episode_steps`` has Gymnasium's ``TimeLimit`` meaning in both."""
    reference = gym.make_vec(
        ENV_ID,
        num_envs,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        max_episode_steps=max_steps,
        **kwargs,
    )
    assert isinstance(reference, gym.vector.SyncVectorEnv)
    native = gym.make_vec(
        ENV_ID, num_envs, autoreset_mode=mode, max_episode_steps=max_steps, **kwargs
    )
    return reference, native


def assert_same(expected: Any, actual: Any, where: str) -> None:
    """Equal values, dtypes and (for batched infos) key sets, recursively."""
    if isinstance(expected, tuple):  # (obs, infos) or (obs, rewards, ..., infos)
        assert isinstance(actual, tuple) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_same(e, a, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert set(actual) == set(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_same(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, np.ndarray) and expected.dtype == object:
        assert actual.dtype == object and actual.shape == expected.shape, where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if e is None:
                assert a is None, f"{where}[{i}]"
            else:
                assert_same(e, a, f"{where}[{i}]")
    elif isinstance(expected, str):  # a Text observation
        assert isinstance(actual, str) and actual == expected, f"{where}: {actual!r}"
    else:
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual).__name__}"
        assert actual.dtype == expected.dtype, f"{where}: {actual.dtype} != {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def assert_expands_on_first_visit(native: ModelVectorEnv) -> None:
    """``native`` has expanded nothing but its initial states when built (the model, 36k
    reachable states here, is never built ahead)."""
    assert native.visited_states <= len(native.dynamics.initial_outcomes())


def run_both(
    reference: gym.vector.VectorEnv,
    native: gym.vector.VectorEnv,
    steps: int,
    seed: Any,
    rng: np.random.Generator,
    num_actions: int,
) -> int:
    """Step both with the same random actions, comparing everything; return episodes ended.
    With autoreset disabled, finished sub-envs are reset with a mask and fresh or no seeds."""
    assert_same(reference.reset(seed=seed), native.reset(seed=seed), "reset")
    ended = 0
    for t in range(steps):
        actions = rng.integers(num_actions, size=native.num_envs)
        expected = reference.step(actions)
        assert_same(expected, native.step(actions), f"step {t}")
        done = expected[2] | expected[3]
        ended += int(done.sum())
        if done.any() and native.metadata["autoreset_mode"] == AutoresetMode.DISABLED:
            seeds = [int(rng.integers(1000)) if rng.random() < 0.5 else None for _ in done]
            assert_same(
                reference.reset(seed=seeds, options={"reset_mask": done.copy()}),
                native.reset(seed=seeds, options={"reset_mask": done.copy()}),
                f"masked reset after step {t}",
            )
    return ended


# ------------------------------------------------------------------------------ equivalence
@pytest.mark.parametrize("kwargs", CONFIGS, ids=config_id)
def test_same_as_single_envs_step_by_step(kwargs):
    """Observations (float32, exactly), rewards, terminations, truncations and every info array
    with its mask equal those of SyncVectorEnv over single envs, across many episodes, after a
    reseed and after a reset without seed (generators continue)."""
    reference, native = make_pair(6, **kwargs)
    assert isinstance(native, ModelVectorEnv)
    if kwargs.get("routine_length") == (3, 120):  # what the case is for, still true
        assert_expands_on_first_visit(native)
        assert native.dynamics.max_episode_length <= 250  # every sub-env crosses a reset
    rng = np.random.default_rng(0)
    n = native.single_action_space.n
    ended = run_both(reference, native, 250, 11, rng, n)
    ended += run_both(reference, native, 100, [3, None, 0, 2**40, None, 5], rng, n)
    ended += run_both(reference, native, 100, None, rng, n)
    assert ended >= 6


def test_reset_seeds_take_effect_at_the_first_draw_as_in_single_envs():
    """Generators are built when a sub-env first draws: a seed given by a reset that is
    followed by reset(seed=None) before any draw, a seed replaced before any draw, and a
    sub-env never seeded (fresh entropy, so only that it runs) behave as SyncVectorEnv's."""
    reference, native = make_pair(4, routine_length=(0, 7))
    rng = np.random.default_rng(2)
    for seed in (9, [1, None, 2, None]):
        assert_same(reference.reset(seed=seed), native.reset(seed=seed), "seeded reset")
    assert_same(reference.reset(seed=None), native.reset(seed=None), "reset without seed")
    run_both(reference, native, 60, None, rng, native.single_action_space.n)
    unseeded = gym.make_vec(ENV_ID, 3, routine_length=(0, 7))
    unseeded.reset()
    for _ in range(20):
        assert len(unseeded.step(np.zeros(3, dtype=np.int64))[0]) == 3


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.value)
@pytest.mark.parametrize("max_steps", [None, 7])
@pytest.mark.parametrize("kwargs", [CONFIGS[1], CONFIGS[3]], ids=config_id)
def test_same_as_single_envs_in_every_autoreset_mode(kwargs, max_steps, mode):
    reference, native = make_pair(5, mode, max_steps, **kwargs)
    assert native.metadata["autoreset_mode"] == mode
    rng = np.random.default_rng(1)
    ended = run_both(reference, native, 200, 4, rng, native.single_action_space.n)
    assert ended >= 10


def test_routine_lengths_are_drawn_per_sub_env():
    """With a range, sub-envs draw different corridors (the equivalence above is not vacuous)."""
    envs = gym.make_vec(ENV_ID, 64, routine_length=(0, 9))
    envs.reset(seed=0)
    _, _, _, _, infos = envs.step(np.zeros(64, dtype=np.int64))
    assert len(set(infos[keys.STATE_ID].tolist())) >= 8


def native(num_envs: int, **kwargs: Any) -> ModelVectorEnv:
    """The native vector env over ``DilutedDoorsV0Env(**kwargs)`` (what ``gym.make_vec`` builds),
    with the vector env's own arguments split off."""
    vector = {
        k: kwargs.pop(k)
        for k in ("max_episode_steps", "autoreset_mode", "render_mode")
        if k in kwargs
    }
    return ModelVectorEnv(DilutedDoorsV0Env(**kwargs), num_envs, **vector)


# -------------------------------------------------------------------------------- autoreset
def finish_episode(envs: gym.vector.VectorEnv) -> tuple:
    """Step with action 0 until sub-env 0's episode ends; the last step's results."""
    for _ in range(1000):
        out = envs.step(np.zeros(envs.num_envs, dtype=np.int64))
        if out[2][0] or out[3][0]:
            return out
    raise AssertionError("episode did not end")


def test_next_step_autoreset_ignores_the_action_and_starts_a_new_episode():
    envs = gym.make_vec(ENV_ID, 2, routine_length=1)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    first_obs, _ = envs.reset(seed=0)
    obs, _, terminated, _, infos = finish_episode(envs)
    assert terminated.all() and obs[0, -1] == 1.0  # terminal flag
    assert infos["_" + keys.EPISODE_LENGTH].all() and (infos[keys.EPISODE_LENGTH] == 6).all()
    obs, rewards, terminated, truncated, infos = envs.step(np.array([2, 1]))
    np.testing.assert_array_equal(obs, first_obs)
    assert not rewards.any() and not terminated.any() and not truncated.any()
    assert infos[keys.CRITICAL].all() and not infos[keys.STATE_ID].any()
    assert keys.EPISODE_LENGTH not in infos
    _, _, _, _, infos = envs.step(np.array([0, 0]))  # the new episode's first real step
    assert (infos[keys.STATE_ID] > 0).all()


def test_same_step_autoreset_returns_final_obs_and_info():
    envs = gym.make_vec(ENV_ID, 2, routine_length=1, autoreset_mode="same_step")
    first_obs, _ = envs.reset(seed=0)
    obs, rewards, _, _, infos = finish_episode(envs)
    np.testing.assert_array_equal(obs, first_obs)  # already reset
    assert infos[keys.CRITICAL].all() and not infos[keys.STATE_ID].any()
    assert infos["_final_obs"].all() and infos["final_obs"][0][-1] == 1.0
    final = infos["final_info"]
    assert (final[keys.EPISODE_LENGTH] == 6).all() and final["_" + keys.SUCCESS].all()
    assert rewards[0] == float(final[keys.SUCCESS][0])
    assert keys.EPISODE_LENGTH not in infos


def test_disabled_autoreset_requires_a_masked_reset():
    envs = gym.make_vec(ENV_ID, 3, routine_length=2, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=0)
    finish_episode(envs)
    with pytest.raises(gym.error.ResetNeeded, match="reset_mask"):
        envs.step(np.zeros(3, dtype=np.int64))
    _, infos = envs.reset(options={"reset_mask": np.array([True, True, True])})
    assert infos["_" + keys.CRITICAL].all() and not infos[keys.STATE_ID].any()
    envs.step(np.zeros(3, dtype=np.int64))


def test_masked_reset_resets_only_the_masked_sub_envs():
    envs = gym.make_vec(ENV_ID, 3)
    envs.reset(seed=0)
    for _ in range(4):
        obs, *_ = envs.step(np.zeros(3, dtype=np.int64))
    mask = np.array([False, True, False])
    new_obs, infos = envs.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(new_obs[~mask], obs[~mask])
    np.testing.assert_array_equal(infos["_" + keys.STATE_ID], mask)
    assert infos[keys.STATE_ID].tolist() == [0, 0, 0] and infos[keys.CRITICAL].tolist()[1]


def test_max_episode_steps_truncates_as_gymnasiums_time_limit():
    """``gym.make_vec(..., max_episode_steps=N)`` truncates on the N-th step as Gymnasium's
    ``TimeLimit`` does over single envs (``vectorization_mode="sync"``): truncated on that step
    even when it also terminates, and no episode-end keys (the env did not end the episode)."""
    envs = gym.make_vec(ENV_ID, 2, max_episode_steps=4, routine_length=5)
    assert envs.unwrapped.max_episode_steps == 4
    envs.reset(seed=0)
    for _ in range(3):
        assert not envs.step(np.zeros(2, dtype=np.int64))[3].any()
    _, _, terminated, truncated, infos = envs.step(np.zeros(2, dtype=np.int64))
    assert truncated.all() and not terminated.any()
    assert keys.EPISODE_LENGTH not in infos
    # terminated on the N-th step too: both flags, as TimeLimit gives
    envs = gym.make_vec(ENV_ID, 1, max_episode_steps=6, routine_length=1)  # episodes of 6 steps
    sync = gym.make_vec(ENV_ID, 1, vectorization_mode="sync", max_episode_steps=6, routine_length=1)
    for vec in (envs, sync):
        vec.reset(seed=0)
        out = [vec.step(np.zeros(1, dtype=np.int64)) for _ in range(6)]
        assert out[-1][2].all() and out[-1][3].all()
        assert out[-1][4][keys.EPISODE_LENGTH].tolist() == [6]


def test_make_vec_modes_and_spec():
    default = gym.make_vec(ENV_ID, 4, routine_length=3)
    assert isinstance(default, ModelVectorEnv)
    assert default.spec.kwargs["routine_length"] == 3 and default.spec.kwargs["num_envs"] == 4
    assert default.single_env.routine_length == 3
    assert default.observation_space.shape == (4, 8) and default.action_space.shape == (4,)
    assert isinstance(default.metadata["autoreset_mode"], AutoresetMode)
    sync = gym.make_vec(ENV_ID, 4, vectorization_mode="sync")
    assert isinstance(sync, gym.vector.SyncVectorEnv)
    assert sync.single_observation_space == default.single_observation_space


def test_info_contract_holds_for_every_sub_env():
    envs = gym.make_vec(ENV_ID, 8, routine_length=(0, 4), reward="fraction")
    num_states = envs.unwrapped.single_env.num_states
    envs.action_space.seed(0)
    _, infos = envs.reset(seed=0)
    ended = 0
    for _ in range(60):
        _, _, terminated, truncated, infos = envs.step(envs.action_space.sample())
        for i in range(8):
            keys.check_step_info({k: infos[k][i] for k in keys.STEP_KEYS}, num_states)
        done = terminated | truncated
        if done.any():
            for i in np.flatnonzero(done):
                keys.check_episode_end_info({k: infos[k][i] for k in keys.EPISODE_END_KEYS})
                # fraction: every door critical, so rho = num_floors / T
                assert infos[keys.NUM_CRITICAL][i] == 3
            ended += int(done.sum())
    assert ended >= 8


def test_deepcopy_branches_the_vector_env():
    envs = gym.make_vec(ENV_ID, 4, routine_length=(0, 6))
    envs.reset(seed=3)
    actions = np.random.default_rng(0).integers(3, size=(60, 4))
    for a in actions[:10]:
        envs.step(a)
    twin = copy.deepcopy(envs)
    for a in actions[10:]:
        assert_same(envs.step(a), twin.step(a), "branch")


# ----------------------------------------------------------------------------- seeding
def test_seeding_reproduces_and_distinguishes_runs():
    def run(seed):
        envs = gym.make_vec(ENV_ID, 4, routine_length=(0, 8))
        out = [envs.reset(seed=seed)[0]]
        for t in range(40):
            out.append(envs.step(np.full(4, t % 3))[0])
        return np.stack(out)

    np.testing.assert_array_equal(run(5), run(5))
    assert not np.array_equal(run(5), run(6))
    # sub-env i of seed s is the single env seeded s + i
    assert np.array_equal(run(5)[:, 1], run([6, 6, 6, 6])[:, 0])


# ------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_envs": 0}, "num_envs"),
        ({"num_envs": 2.0}, "num_envs"),
        ({"num_envs": True}, "num_envs"),
        ({"num_floors": 0}, "num_floors"),
        ({"num_doors": 1}, "num_doors"),
        ({"routine_length": (4, 2)}, "routine_length"),
        ({"routine_length": -1}, "routine_length"),
        ({"reward": "dense"}, "reward"),
        ({"layout_seed": -3}, "layout_seed"),
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"autoreset_mode": "sometimes"}, "autoreset_mode"),
        ({"render_mode": "ansi"}, "render_mode"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        native(**{"num_envs": 2, **kwargs})


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
    envs = native(3)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=match) as caught:
        envs.step(actions)
    assert isinstance(caught.value, InvalidActionError)
    # the failed steps changed nothing; a list of ints and unsigned integers are fine
    fresh = native(3)
    fresh.reset(seed=0)
    for a in ([0, 1, 2], np.array([0, 0, 0], dtype=np.uint8)):
        assert_same(fresh.step(np.asarray(a, dtype=np.int64)), envs.step(a), str(a))


def test_step_before_reset_and_bad_resets():
    envs = native(2, routine_length=(0, 2))
    with pytest.raises(gym.error.ResetNeeded, match="before reset"):
        envs.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="first reset"):
        envs.reset(options={"reset_mask": np.array([True, False])})
    for seed, match in (([1], "one entry per"), (-1, "seed"), ([1, 2.5], "seed"), ("7", "seed")):
        with pytest.raises(ValueError, match=match):
            envs.reset(seed=seed)
    envs.reset(seed=0)
    for mask in (np.array([1, 0]), np.array([True]), np.array([False, False]), [True, False]):
        with pytest.raises(ValueError, match="reset_mask"):
            envs.reset(options={"reset_mask": mask})


# --------------------------------------------------------------------------- SB3 adapter
@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
@pytest.mark.parametrize(
    "kwargs", [{"routine_length": (0, 3)}, {"routine_length": 2, "max_episode_steps": 5}]
)
def test_sb3_adapter_matches_dummy_vec_env(kwargs, mode):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import DummyVecEnv

    from baselines.lib.sb3_vec_env import GymnasiumVecEnv

    kwargs = dict(kwargs)
    max_steps = kwargs.pop("max_episode_steps", None)

    def single() -> gym.Env:  # max_episode_steps: Gymnasium's TimeLimit, as make_vec's
        return gym.make(ENV_ID, max_episode_steps=max_steps, **kwargs)

    dummy = DummyVecEnv([single] * 4)
    adapter = GymnasiumVecEnv(
        gym.make_vec(ENV_ID, 4, autoreset_mode=mode, max_episode_steps=max_steps, **kwargs)
    )
    assert adapter.num_envs == 4 and adapter.observation_space == dummy.observation_space
    dummy.seed(9)
    adapter.seed(9)
    np.testing.assert_array_equal(adapter.reset(), dummy.reset())
    assert adapter.reset_infos == dummy.reset_infos
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(120):
        actions = rng.integers(3, size=4)
        obs, rewards, dones, infos = adapter.step(actions)
        e_obs, e_rewards, e_dones, e_infos = dummy.step(actions)
        np.testing.assert_array_equal(obs, e_obs, err_msg=str(t))
        assert rewards.dtype == e_rewards.dtype == np.float32
        np.testing.assert_array_equal(rewards, e_rewards)
        np.testing.assert_array_equal(dones, e_dones)
        for info, expected in zip(infos, e_infos, strict=True):
            final = info.pop("terminal_observation", None)
            e_final = expected.pop("terminal_observation", None)
            assert (final is None) == (e_final is None)
            if final is not None:
                np.testing.assert_array_equal(final, e_final)
            assert info == expected and type(info[keys.STATE_ID]) is int
        assert adapter.reset_infos == dummy.reset_infos
        ended += int(dones.sum())
    assert ended >= 20


def test_sb3_ppo_trains_on_the_adapter():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    from baselines.lib.sb3_vec_env import GymnasiumVecEnv

    venv = gym.make_vec(ENV_ID, 8, routine_length=2, autoreset_mode="same_step")
    env = VecMonitor(GymnasiumVecEnv(venv))
    model = PPO("MlpPolicy", env, n_steps=16, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    assert len(model.ep_info_buffer) >= 8
    assert {info["l"] for info in model.ep_info_buffer} == {9}
    assert env.get_attr("num_envs") == [8] * 8 and env.env_is_wrapped(gym.Wrapper) == [False] * 8


# ------------------------------------------------------------------------------- benchmark
def test_bench_smoke(capsys):
    from routine_envs import bench

    results = bench.main(
        [
            *("--steps", "300", "--repeats", "1", "--sizes", "1", "4"),
            *("--vector-steps", "40", "--copies", "20", "--seconds", "0.2"),
            *("--model-floors", "2", "3"),
        ]
    )
    out = capsys.readouterr().out
    for env_id in [row.id for row in routine_envs.ENVIRONMENTS]:  # (the package's ids)
        assert f"{env_id} unwrapped" in results["single"] and env_id in out
    assert "FrozenLake-v1" in out and "CartPole-v1 native" in out
    assert set(results["vector"]) == {
        f"x {label} @{n}"
        for label in ("CartPole-v1 native", "DilutedDoors-v0 sync")
        for n in (1, 4)
    }
    assert all(v > 0 for v in results["vector"].values())
    assert set(results["deepcopy"]) == {"DilutedDoors-v0 gym.make", "DilutedDoors-v0 unwrapped"}
    assert set(results["model"]) == {
        f"{what} DilutedDoors floors={n} L=50" for what in ("build", "evaluate") for n in (2, 3)
    }
    assert len(results["goals"]) == 5 + 4
    assert all(isinstance(met, bool) for _, _, met in results["goals"].values())
