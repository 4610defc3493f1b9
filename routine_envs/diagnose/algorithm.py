"""The branching test: sample states, branch each into every action with common random numbers,
test whether the return depends on the action (method: :mod:`routine_envs.diagnose`)."""

from __future__ import annotations

import copy
import math
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from routine_envs import annotations as keys
from routine_envs.diagnose.policies import as_policy, policy_name, with_action_mask
from routine_envs.diagnose.results import (
    Agreement,
    DiagnosisResult,
    MinimumDetectableEffect,
    StateRecord,
)
from routine_envs.diagnose.statistics import (
    action_dependence_test,
    cluster_wilson_interval,
    min_rollouts,
    minimum_detectable_effect,
    variance_standard_error,
)

ContinuationPolicy = Callable[[Any, dict[str, Any], np.random.Generator], int]
"""A policy for sampling states and continuing rollouts: ``(observation, info, rng) -> action``.
It must draw all its randomness from ``rng`` (that is how common random numbers are kept)."""


def _check_env(env: gym.Env) -> gym.spaces.Discrete:
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            "diagnose needs a discrete action space (gymnasium.spaces.Discrete) to branch into "
            f"every action; got {space}"
        )
    if int(space.n) < 2:
        raise ValueError(f"diagnose needs at least 2 actions, got {space}")
    return space


def check_arguments(
    env: gym.Env,
    num_states: int = 200,
    num_rollouts: int = 16,
    alpha: float = 0.01,
    max_steps: int = 1000,
    confidence: float = 0.95,
) -> gym.spaces.Discrete:
    """Check :func:`diagnose`'s arguments before any work; ``ValueError`` naming the first bad
    one. Returns the action space."""
    space = _check_env(env)
    if num_states < 1:
        raise ValueError(f"num_states must be >= 1, got {num_states}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    needed = min_rollouts(int(space.n), alpha)
    if num_rollouts < needed:
        raise ValueError(
            f"num_rollouts={num_rollouts} cannot find any state critical with {int(space.n)} "
            f"actions at alpha={alpha}: the smallest p-value with n rollouts is 2^(1-n), times "
            f"{int(space.n) - 1} comparisons; use num_rollouts >= {needed}"
        )
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    return space


def branch(env: gym.Env) -> gym.Env:
    """``copy.deepcopy(env)``, or a ``TypeError`` saying how to make ``env`` branchable."""
    try:
        return copy.deepcopy(env)
    except Exception as error:
        raise TypeError(
            f"diagnose branches the environment with copy.deepcopy, which failed for {env}: "
            f"{type(error).__name__}: {error}. Make the environment deep-copyable (e.g. define "
            "__deepcopy__, or keep unpicklable resources out of its attributes)."
        ) from error


def _env_name(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


def _finite_reward(env: gym.Env, reward: Any, step: int) -> float:
    """``reward`` as a float; ``ValueError`` naming the env and the step when it is NaN or
    infinite (a rho from such returns would be meaningless: every difference is NaN)."""
    value = float(reward)
    if not math.isfinite(value):
        raise ValueError(
            f"{_env_name(env)} returned reward {value} at step {step} of an episode: "
            "diagnose needs finite rewards"
        )
    return value


def _continue(
    env: gym.Env,
    action: int,
    policy: ContinuationPolicy,
    rng: np.random.Generator,
    steps_left: int,
    step: int = 0,
) -> tuple[float, bool]:
    """Take ``action`` in ``env`` (at episode step ``step``), then follow ``policy`` to the
    episode's end or until ``steps_left`` steps were taken. Returns ``(undiscounted return, cut
    at the step budget)``; ``ValueError`` for a reward that is not finite."""
    obs, reward, terminated, truncated, info = env.step(action)
    total = _finite_reward(env, reward, step + 1)
    taken = 1
    while not (terminated or truncated):
        if taken >= steps_left:
            return total, True
        action = policy(obs, with_action_mask(env, info), rng)
        obs, reward, terminated, truncated, info = env.step(action)
        taken += 1
        total += _finite_reward(env, reward, step + taken)
    return total, False


def _rollout_returns(
    env: gym.Env,
    actions: Sequence[int],
    policy: ContinuationPolicy,
    num_rollouts: int,
    steps_left: int,
    seed_key: tuple[int, ...],
    step: int = 0,
) -> tuple[np.ndarray, int]:
    """``G[a, i]`` at the current state of ``env`` (left untouched), shape
    ``(len(actions), num_rollouts)``, and the number of continuations cut at the budget."""
    returns = np.empty((len(actions), num_rollouts))
    cut = 0
    last = len(actions) - 1
    for i in range(num_rollouts):
        base = branch(env)
        base.unwrapped.np_random = np.random.default_rng((*seed_key, i, 0))
        for k, action in enumerate(actions):
            child = base if k == last else branch(base)
            rng = np.random.default_rng((*seed_key, i, 1))
            returns[k, i], was_cut = _continue(child, action, policy, rng, steps_left, step)
            cut += was_cut
    return returns, cut


def diagnose(
    env: gym.Env,
    num_states: int = 200,
    num_rollouts: int = 16,
    alpha: float = 0.01,
    seed: int = 0,
    continuation_policy: ContinuationPolicy | None = None,
    progress: bool = False,
    max_steps: int = 1000,
    confidence: float = 0.95,
    policy: Any = None,
) -> DiagnosisResult:
    """Estimate the decision density rho of ``env`` by counterfactual branching.

    See the module docstring for the method and its assumptions. ``env`` is reset (with seeds
    derived from ``seed``) and stepped; nothing else about it is changed.

    Args:
        env: a Gymnasium environment with a ``Discrete`` action space that ``copy.deepcopy``
            branches (wrappers such as ``TimeLimit`` are kept and copied with it).
        num_states: minimum number of states to test; episodes are sampled whole, so up to one
            episode more are tested.
        num_rollouts: continuations per action at each state, at least
            :func:`min_rollouts` (``1 + log2((A - 1) / alpha)``); the test's power grows with it
            (see :attr:`DiagnosisResult.mde`).
        alpha: significance level of the per-state test (family-wise over the ``A - 1``
            comparisons), in (0, 1).
        seed: seeds everything: episode resets, the sampling policy and the rollouts.
        continuation_policy: ``(obs, info, rng) -> action``, used both to sample states and to
            continue rollouts; ``None`` is the uniform random policy. The older spelling of
            ``policy`` (give one of the two).
        progress: show a progress bar (tqdm) on stderr.
        max_steps: step budget of an episode (a time limit): a sampled episode is cut after
            ``max_steps`` steps and a continuation from step ``t`` after ``max_steps - t`` steps;
            cuts are counted and warned about.
        confidence: level of the confidence interval of rho.
        policy: the policy that samples the states and continues the rollouts, in any form
            :func:`~routine_envs.diagnose.as_policy` accepts: ``None`` or ``"uniform"``, a
            stable-baselines3 model or the path of a saved one (``.zip``), a callable
            ``observation -> action probabilities``, a ``(obs, info, rng) -> action`` callable,
            or ``"package.module:callable"``. Its name is in ``settings["policy"]``.

    Returns:
        A :class:`DiagnosisResult`.

    Raises:
        ValueError: for a non-discrete action space, a bad argument, a policy that cannot be
            loaded or returns bad probabilities, or a reward that is NaN or infinite (the env and
            the step named).
        TypeError: when ``copy.deepcopy(env)`` fails.
    """
    space = check_arguments(env, num_states, num_rollouts, alpha, max_steps, confidence)
    start_time = time.perf_counter()
    if continuation_policy is not None and policy is not None:
        raise ValueError("give policy or continuation_policy, not both")
    # continuation_policy is taken as it is; policy may be any form as_policy accepts
    policy = continuation_policy if continuation_policy is not None else as_policy(policy, space)
    actions = [int(space.start) + k for k in range(int(space.n))]

    records: list[StateRecord] = []
    episode_critical: list[int] = []
    episode_lengths: list[int] = []
    episode_returns: list[float] = []
    truncated_episodes = 0
    truncated_rollouts = 0
    variances: list[np.ndarray] = []
    bar = tqdm(
        total=num_states, desc="diagnose", unit="state", file=sys.stderr, disable=not progress
    )
    try:
        episode = 0
        while len(records) < num_states:
            reset_seed = int(np.random.SeedSequence((seed, episode, 0)).generate_state(1)[0])
            obs, info = env.reset(seed=reset_seed)
            sample_rng = np.random.default_rng((seed, episode, 1))
            step, critical_count, total = 0, 0, 0.0
            done = False
            while not done:
                if step >= max_steps:
                    truncated_episodes += 1
                    break
                returns, cut = _rollout_returns(
                    env,
                    actions,
                    policy,
                    num_rollouts,
                    max_steps - step,
                    (seed, episode, 2, step),
                    step,
                )
                truncated_rollouts += cut
                outcome = action_dependence_test(returns)
                variances.append(outcome.sd_differences**2)
                annotated = info.get(keys.CRITICAL)
                record = StateRecord(
                    episode=episode,
                    step=step,
                    critical=outcome.p_value <= alpha,
                    p_value=outcome.p_value,
                    mean_returns=tuple(float(x) for x in returns.mean(axis=1)),
                    max_abs_difference=float(np.max(np.abs(outcome.mean_differences))),
                    max_sd_difference=float(np.max(outcome.sd_differences)),
                    identical=not outcome.mean_differences.any()
                    and not outcome.sd_differences.any(),
                    annotated=None if annotated is None else bool(annotated),
                )
                records.append(record)
                critical_count += record.critical
                if len(records) > bar.total:  # the last episode runs past num_states
                    bar.total = len(records)
                bar.update()
                action = policy(obs, with_action_mask(env, info), sample_rng)
                obs, reward, terminated, truncated, info = env.step(action)
                total += _finite_reward(env, reward, step + 1)
                step += 1
                done = terminated or truncated
            episode_critical.append(critical_count)
            episode_lengths.append(step)
            episode_returns.append(total)
            episode += 1
    finally:
        bar.close()

    if truncated_episodes or truncated_rollouts:
        warnings.warn(
            f"{truncated_episodes} sampled episodes and {truncated_rollouts} continuations reached "
            f"max_steps={max_steps} and were cut there: rho is that of the environment under a "
            f"time limit of {max_steps} steps",
            RuntimeWarning,
            stacklevel=2,
        )
    crit = np.asarray(episode_critical)
    lengths = np.asarray(episode_lengths)
    keep = lengths > 0  # an episode that ended at reset has no step to test
    (low, high), deff = cluster_wilson_interval(crit[keep], lengths[keep], confidence)
    num_critical = int(crit.sum())
    num_tested = int(lengths.sum())
    all_variances = np.concatenate(variances)
    standardized = minimum_detectable_effect(num_rollouts, len(actions), alpha)
    annotated = [r for r in records if r.annotated is not None]
    agreement = None
    if annotated:
        agreement = Agreement(
            true_positives=sum(r.critical and r.annotated for r in annotated),
            false_positives=sum(r.critical and not r.annotated for r in annotated),
            false_negatives=sum(not r.critical and r.annotated for r in annotated),
            true_negatives=sum(not r.critical and not r.annotated for r in annotated),
        )
    spec = getattr(env, "spec", None)
    return DiagnosisResult(
        rho=num_critical / num_tested,
        ci=(low, high),
        ci_method="Wilson score interval on the effective sample size n/deff "
        "(design effect from the episode-clustered variance of the ratio estimator)",
        design_effect=deff,
        confidence=confidence,
        num_states=num_tested,
        num_episodes=int(keep.sum()),
        num_critical=num_critical,
        num_inconclusive=sum(not r.critical and not r.identical for r in records),
        episode_mean_rho=float(np.mean(crit[keep] / lengths[keep])),
        return_variance=float(np.var(episode_returns, ddof=1)) if episode > 1 else math.nan,
        return_variance_se=variance_standard_error(np.asarray(episode_returns)),
        mde=MinimumDetectableEffect(
            standardized=standardized,
            return_units=standardized * math.sqrt(float(all_variances.mean())),
        ),
        agreement=agreement,
        records=records,
        num_truncated_episodes=truncated_episodes,
        num_truncated_rollouts=truncated_rollouts,
        elapsed_seconds=time.perf_counter() - start_time,
        settings={
            "env": spec.id if spec is not None else type(env.unwrapped).__name__,
            "env_kwargs": dict(spec.kwargs) if spec is not None else {},
            "num_states": num_states,
            "num_rollouts": num_rollouts,
            "alpha": alpha,
            "seed": seed,
            "max_steps": max_steps,
            "confidence": confidence,
            "num_actions": len(actions),
            "policy": policy_name(policy),
            "test": f"two-sided paired t-test of each action against action {actions[0]}, "
            f"Bonferroni over {len(actions) - 1} comparisons, common random numbers",
        },
    )
