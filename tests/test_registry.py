"""Every registered id: Gymnasium's and SB3's checkers, the info contract, vector envs, import
hygiene. Labelled by id, so a new row of the registration table is tested without a new test."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from routine_envs import annotations as keys
from routine_envs.registration import ENVIRONMENTS
from tests.utils import all_env_ids, run_episode, uniform_policy

EXTRA_CONFIGS = {
    "DilutedDoors-v0": [
        {"routine_length": 0},
        {"routine_length": (0, 5), "reward": "fraction"},
        {"num_floors": 1, "num_doors": 2, "routine_length": 50},
        {"num_floors": 6, "num_doors": 5, "layout_seed": 3},
    ],
}
CASES = [(env_id, {}) for env_id in all_env_ids()] + [
    (env_id, kw) for env_id, configs in EXTRA_CONFIGS.items() for kw in configs
]


def case_id(case):
    env_id, kwargs = case
    return env_id + ("" if not kwargs else "-" + "-".join(f"{k}={v}" for k, v in kwargs.items()))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gymnasium_check_env(case):
    env_id, kwargs = case
    for render_mode in (None, "ansi", "rgb_array"):
        env = gym.make(env_id, render_mode=render_mode, **kwargs)
        check_env(env.unwrapped, skip_render_check=render_mode is None)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sb3_check_env(case):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env_id, kwargs = case
    with_warnings = []
    import warnings

    env = gym.make(env_id, **kwargs)  # (v0 ids warn that a newer version exists: not SB3's)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_checker.check_env(env, warn=True)
        with_warnings = [str(w.message) for w in caught]
    assert not with_warnings, with_warnings


@pytest.mark.parametrize("env_id", all_env_ids())
def test_info_contract_on_every_step(env_id):
    env = gym.make(env_id)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    for ep in range(3):
        rec = run_episode(env, uniform_policy(int(env.action_space.n)), rng, seed=ep)
        for info in rec["infos"]:
            keys.check_step_info(info, u.num_states)
        for info in rec["infos"][:-1]:
            assert not set(keys.EPISODE_END_KEYS) & set(info)
        keys.check_episode_end_info(rec["final_info"])
        assert rec["final_info"][keys.NUM_CRITICAL] == sum(rec["critical"])
        assert rec["final_info"][keys.EPISODE_LENGTH] == len(rec["actions"])


@pytest.mark.parametrize("env_id", all_env_ids())
def test_namespaced_make_and_registry_row(env_id):
    env = gym.make(f"routine_envs:{env_id}")
    row = next(e for e in ENVIRONMENTS if e.id == env_id)
    assert env.spec.kwargs == row.kwargs
    assert env.spec.max_episode_steps == row.max_episode_steps


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", all_env_ids())
def test_make_vec(env_id, mode):
    envs = gym.make_vec(env_id, num_envs=3, vectorization_mode=mode)
    try:
        obs, infos = envs.reset(seed=42)
        assert obs.shape == (3, *envs.single_observation_space.shape)
        assert infos[keys.CRITICAL].shape == (3,) and infos[keys.STATE_ID].dtype.kind == "i"
        ends = 0
        for _ in range(80):
            obs, _rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
            ends += int(np.sum(terminated | truncated))
            if np.any(terminated):
                done = terminated | truncated
                assert np.all(infos["_" + keys.DECISION_DENSITY] == done)
        assert ends >= 3
    finally:
        envs.close()


def test_vector_envs_are_reproducible():
    def run():
        envs = gym.make_vec("DilutedDoors-v0", num_envs=2, routine_length=(0, 8))
        envs.action_space.seed(0)
        obs, _ = envs.reset(seed=5)
        out = [obs]
        for _ in range(40):
            obs, *_ = envs.step(envs.action_space.sample())
            out.append(obs)
        return np.stack(out)

    np.testing.assert_array_equal(run(), run())


def test_import_is_quiet_cheap_and_registers():
    code = textwrap.dedent("""
        import sys
        import gymnasium as gym
        import routine_envs
        gym.make("DilutedDoors-v1")
        heavy = [m for m in ("torch", "pettingzoo", "stable_baselines3", "matplotlib")
                 if m in sys.modules]
        assert not heavy, heavy
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""


def test_namespaced_make_works_without_prior_import():
    code = 'import gymnasium as gym; gym.make("routine_envs:DilutedDoors-v1").reset(seed=0)'
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_registration_is_idempotent():
    from routine_envs.registration import register_all

    before = dict(gym.registry)
    register_all()
    assert dict(gym.registry) == before
