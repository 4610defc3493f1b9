"""diagnose's advice in sigma^2 / Var(R): withheld, with a one-line warning, where Var(R) is 0
or from too small a sample (issue 30)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routine_envs
from routine_envs.diagnose import diagnose, format_result, reading
from routine_envs.diagnose.statistics import (
    MIN_VARIANCE_EPISODES,
    return_variance_warning,
    variance_standard_error,
)

gym.register_envs(routine_envs)


def _optimal_doors(env: gym.Env):
    """The optimal policy of Diluted Doors as ``(obs, info, rng) -> action``: the correct door at
    every door (read from the privileged state id), action 0 in the corridors."""
    dynamics = env.unwrapped.dynamics

    def policy(obs, info, rng) -> int:
        state = dynamics.state_from_id(info["state_id"])
        return dynamics.correct_doors[state.floor] if state.position == 0 else 0

    return policy


@pytest.fixture(scope="module")
def constant_return_result():
    """Every sampled episode succeeds (Var(R) = 0) while every door is critical (rho = 1/11)."""
    env = gym.make("DilutedDoors-v1", routine_length=10)
    return diagnose(env, num_states=40, num_rollouts=10, policy=_optimal_doors(env))


def test_zero_return_variance_warns_once_and_gives_no_critic_advice(constant_return_result):
    result = constant_return_result
    assert result.return_variance == 0.0 and 0.0 < result.rho < 0.5
    assert result.rho == pytest.approx(1 / 11)
    report = format_result(result)
    warnings = [line for line in report.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "Var(R) = 0 over the" in warnings[0] and "undefined" in warnings[0]
    text = " ".join(reading(result).split())
    assert "sigma^2/Var(R) <" not in text and "breaks even" not in text
    assert "keeps at least half" not in text
    # what does not rest on Var(R) is still said
    assert "rho^(-1/2) = 3.3x" in text


def test_enough_episodes_keep_the_critic_advice():
    """Diluted Doors with the fraction reward under the uniform policy: many episodes, a spread
    of returns, so the advice (in squared return units) stays, and no warning is printed."""
    env = gym.make("DilutedDoors-v1", routine_length=2, reward="fraction")
    result = diagnose(env, num_states=120, num_rollouts=10)
    assert result.num_episodes >= MIN_VARIANCE_EPISODES
    assert result.return_variance > 1.96 * result.return_variance_se > 0
    report = format_result(result)
    assert "warning:" not in report
    text = " ".join(reading(result).split())
    assert f"sigma^2/Var(R) < rho = {result.rho:.3g}" in text


def test_too_few_episodes_withhold_the_advice():
    """Fewer than MIN_VARIANCE_EPISODES episodes with a positive Var(R): a warning naming the
    count and no advice."""
    env = gym.make("DilutedDoors-v1", routine_length=2, reward="fraction")
    result = diagnose(env, num_states=20, num_rollouts=10)
    assert 1 < result.num_episodes < MIN_VARIANCE_EPISODES and result.return_variance > 0
    report = format_result(result)
    assert f"from only {result.num_episodes} sampled episodes" in report
    assert "sigma^2/Var(R) < rho" not in " ".join(reading(result).split())


@pytest.mark.parametrize(
    ("successes", "episodes", "warned"),
    [
        (1, 200, True),  # one rare success: Var(R) 0.005 +- 0.005
        (3, 200, True),  # 0.0148 +- 0.0084: its 95% interval still reaches 0
        (6, 200, False),  # 0.0292 +- 0.0113
        (2, 12, False),  # docs/diagnose.md's DilutedDoors-v0 run: 0.1515 +- 0.072
        (5, 9, True),  # too few episodes whatever the spread
        (0, 50, True),  # Var(R) = 0
    ],
)
def test_too_small_is_the_documented_rule(successes, episodes, warned):
    returns = np.zeros(episodes)
    returns[:successes] = 1.0
    variance = float(np.var(returns, ddof=1))
    message = return_variance_warning(episodes, variance, variance_standard_error(returns))
    assert (message is not None) is warned
    if message is not None:
        assert "\n" not in message and "Var(R)" in message


def test_undefined_variance_with_one_episode():
    assert math.isnan(variance_standard_error(np.array([1.0])))
    assert "undefined with 1 sampled" in return_variance_warning(1, math.nan, math.nan)


@pytest.mark.parametrize("kind", ["normal", "bernoulli"])
def test_variance_standard_error_matches_the_spread_of_sample_variances(kind):
    """The distribution-free standard error is the standard deviation of s^2 over repeated
    samples, for a light-tailed (normal) and a heavy-tailed (Bernoulli p = 0.05) return."""
    rng = np.random.default_rng(0)
    n, repeats = 200, 4000
    if kind == "normal":
        samples = rng.normal(0.0, 2.0, size=(repeats, n))
    else:
        samples = (rng.random((repeats, n)) < 0.05).astype(float)
    spread = float(np.var(samples, axis=1, ddof=1).std())
    estimates = np.array([variance_standard_error(x) for x in samples[:400]])
    assert float(np.median(estimates)) == pytest.approx(spread, rel=0.1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=40),
    st.floats(0.1, 10),
    st.floats(-50, 50),
)
def test_variance_standard_error_scales_like_the_variance(values, scale, shift):
    x = np.asarray(values)
    se = variance_standard_error(x)
    assert se >= 0.0
    assert variance_standard_error(scale * x + shift) == pytest.approx(
        scale**2 * se, rel=1e-6, abs=1e-6
    )
