"""Test harness shared by every environment's tests: rollouts, counterfactual branching and
Monte-Carlo estimates that do not use the environments' own models (an independent oracle)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import routine_envs
from routine_envs import registration
from routine_envs.registration import TEAM_ADAPTERS

gym.register_envs(routine_envs)

Policy = Callable[[int, np.random.Generator], int]
"""A test policy: ``(state_id, rng) -> action``."""

CONTRIBUTED = Path(__file__).resolve().parent / "contributed"
"""Environments of outside code, one module each: :func:`register_outside_envs` imports them."""


def all_env_ids() -> list[str]:
    """Every registered id of an environment built on dynamics: the package's
    (:data:`routine_envs.ENVIRONMENTS`), then those of outside code
    (:func:`~routine_envs.registration.register_dynamics`), from the registry."""
    return [row.id for row in registration.entries() if row.dynamics is not None]


def team_adapter_ids() -> list[str]:
    """The ids of the turn-based team adapters (:data:`registration.TEAM_ADAPTERS`)."""
    return [entry.id for entry in TEAM_ADAPTERS]


def registry_ids() -> list[str]:
    """Every registered id: :func:`all_env_ids`, then :func:`team_adapter_ids`."""
    return [*all_env_ids(), *team_adapter_ids()]


def outside_ids() -> list[str]:
    """The ids registered by outside code (not by the package's tables)."""
    package = {row.id for row in (*registration.ENVIRONMENTS, *TEAM_ADAPTERS)}
    return [row.id for row in registration.entries() if row.id not in package]


def small_config(env_id: str) -> dict[str, Any]:
    """The small configuration of ``env_id`` (its registry row's: the dynamics class's
    ``small_config``, or a team adapter's), for the Monte-Carlo checks."""
    return dict(registration.entry(env_id).small_kwargs)


def has_pettingzoo() -> bool:
    """Whether the ``multiagent`` extra is installed (the team adapters need it when made)."""
    import importlib.util

    return importlib.util.find_spec("pettingzoo") is not None


def uniform_policy(num_actions: int) -> Policy:
    return lambda _sid, rng: int(rng.integers(num_actions))


def tabular_sampler(table: np.ndarray) -> Policy:
    """Sample from a ``(num_states, num_actions)`` probability table."""
    cumulative = np.cumsum(table, axis=1)

    def act(sid: int, rng: np.random.Generator) -> int:
        return int(
            min(np.searchsorted(cumulative[sid], rng.random(), side="right"), table.shape[1] - 1)
        )

    return act


def run_episode(
    env: gym.Env, policy: Policy, rng: np.random.Generator, seed: int | None = None
) -> dict[str, Any]:
    """Play one episode from ``reset(seed=seed)``; return the per-step record."""
    obs, info = env.reset(seed=seed)
    record: dict[str, Any] = {
        "obs": [obs],
        "rewards": [],
        "actions": [],
        "critical": [],
        "state_ids": [info["state_id"]],
        "infos": [info],
    }
    done = False
    while not done:
        record["critical"].append(info["critical"])
        action = policy(info["state_id"], rng)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        record["actions"].append(action)
        record["rewards"].append(reward)
        record["obs"].append(obs)
        record["state_ids"].append(info["state_id"])
        record["infos"].append(info)
    record["final_info"] = info
    record["return"] = float(np.sum(record["rewards"]))
    return record


def continue_episode(
    env: gym.Env,
    policy: Policy,
    rng: np.random.Generator,
    info: dict[str, Any],
    max_steps: int = 100_000,
) -> float:
    """Roll ``env`` (mid-episode) to its end under ``policy``; the return from here."""
    total = 0.0
    for _ in range(max_steps):
        action = policy(info["state_id"], rng)
        _, reward, terminated, truncated, info = env.step(action)
        total += reward
        if terminated or truncated:
            return total
    raise AssertionError("episode did not end")


def counterfactual_returns(
    env: gym.Env, info: dict[str, Any], policy: Policy, num_rollouts: int, seed: int
) -> np.ndarray:
    """Branch ``env`` into every first action with ``copy.deepcopy`` and continue each with the
    same random continuation (common random numbers: within a rollout every action's branch gets
    the same environment generator and the same policy generator; rollouts differ).
    Returns shape ``(num_actions, num_rollouts)``."""
    num_actions = int(env.action_space.n)
    returns = np.zeros((num_actions, num_rollouts))
    for i in range(num_rollouts):
        # each rollout gets its own environment randomness, shared by all its action branches
        base = copy.deepcopy(env)
        base.unwrapped.np_random = np.random.default_rng([seed, i, 1])
        for action in range(num_actions):
            branch = copy.deepcopy(base)
            rng = np.random.default_rng([seed, i])
            _, reward, terminated, truncated, next_info = branch.step(action)
            if not (terminated or truncated):
                reward += continue_episode(branch, policy, rng, next_info)
            returns[action, i] = reward
    return returns


def sample_states(
    env: gym.Env,
    policy: Policy,
    num_states: int,
    seed: int,
    where: Callable[[dict[str, Any]], bool] | None = None,
) -> list[tuple[gym.Env, dict[str, Any]]]:
    """Deep copies of ``env`` stopped at ``num_states`` states visited by ``policy`` (distinct
    state ids where possible, non-terminal, and only those whose info passes ``where`` when
    given), with the info observed there."""
    rng = np.random.default_rng(seed)
    found: dict[int, tuple[gym.Env, dict[str, Any]]] = {}
    episode = 0
    while len(found) < num_states and episode < 50 * num_states:
        _, info = env.reset(seed=seed + episode)
        episode += 1
        done = False
        while not done:
            if info["state_id"] not in found and (where is None or where(info)):
                found[info["state_id"]] = (copy.deepcopy(env), info)
                if len(found) >= num_states:
                    break
            _, _, terminated, truncated, info = env.step(policy(info["state_id"], rng))
            done = terminated or truncated
    return list(found.values())


def assert_oracle_matches_rollouts(
    env: gym.Env,
    table: np.ndarray,
    num_states: int,
    num_rollouts: int,
    seed: int = 5,
    where: Callable[[dict[str, Any]], bool] | None = None,
) -> int:
    """Check ``env.unwrapped.oracle(table)`` against Monte-Carlo rollouts of ``table`` branched
    from ``num_states`` visited states (those whose info passes ``where``, when given): every
    ``Q(s, a)`` and ``V(s)`` within 4.5 standard errors. Returns the number of states checked."""
    values = env.unwrapped.oracle(table)
    policy = tabular_sampler(table)
    checked = 0
    for branch, info in sample_states(env, policy, num_states, seed, where):
        sid = info["state_id"]
        returns = counterfactual_returns(branch, info, policy, num_rollouts=num_rollouts, seed=sid)
        for a in range(returns.shape[0]):
            se = returns[a].std() / np.sqrt(num_rollouts)
            assert abs(returns[a].mean() - values.q[sid, a]) <= 4.5 * se + 1e-9, (sid, a)
        v_mc = (table[sid] * returns.mean(axis=1)).sum()
        v_se = returns.std() / np.sqrt(num_rollouts)
        assert abs(v_mc - values.v[sid]) <= 4.5 * v_se + 1e-9, sid
        checked += 1
    return checked


CONTRIBUTED_ID = "Button-v0"
"""The worked example of ``docs/contributing-an-env.md`` (its code registers this id)."""


def register_contributed_example() -> str:
    """Execute the first Python block of ``docs/contributing-an-env.md`` as a module (its last
    line registers :data:`CONTRIBUTED_ID` with ``register_dynamics``); idempotent, returns the
    id."""
    import re
    import sys
    import types

    if CONTRIBUTED_ID in gym.registry:
        return CONTRIBUTED_ID
    page = Path(__file__).resolve().parents[1] / "docs" / "contributing-an-env.md"
    code = re.search(r"```python\n(.*?)```", page.read_text(), re.S).group(1)
    module = types.ModuleType("contributed_button")
    sys.modules[module.__name__] = module  # so dataclasses and pickle can find it
    exec(compile(code, str(page), "exec"), module.__dict__)
    return CONTRIBUTED_ID


def register_outside_envs() -> list[str]:
    """Register the environments of outside code: import every module of :data:`CONTRIBUTED`
    (each registers its ids with ``register_dynamics`` when imported) and run the worked example
    of ``docs/contributing-an-env.md``. Called by ``tests/conftest.py`` before the tests are
    collected, so every test that reads the registry takes them. Returns :func:`outside_ids`."""
    import importlib

    for path in sorted(CONTRIBUTED.glob("*.py")):
        importlib.import_module(f"tests.contributed.{path.stem}")
    register_contributed_example()
    return outside_ids()


def tiny_training_run(method: str, trainer: str, out: Path, **more: Any) -> Any:
    """A 400-step training run of ``method`` (a spec: ``tests.module:Class``) on ``trainer``
    on one-floor Diluted Doors v1 with routine length 2, into ``out``; its result."""
    from baselines.experiments.train.command import TrainArgs, main

    return main(
        TrainArgs(
            env_id="DilutedDoors-v1",
            env_kwargs={"num_floors": 1, "routine_length": 2},
            method=method,
            total_timesteps=400,
            eval_every=200,
            out=out,
            progress=False,
            trainer=trainer,
            **more,
        )
    )


def run_spec(
    env_id: str,
    env_kwargs: dict | None = None,
    method: str = "ppo",
    seed: int = 0,
    budget: int = 50_000,
    eval_every: int = 2_000,
    target: float = 0.9,
    hyperparameters: dict | None = None,
    config=None,
) -> Any:
    """A batched run (:meth:`baselines.lib.runs.Run.of`), in the argument order the batched
    trainer's tests write (env, kwargs, method, seed, budget, evaluation step, target)."""
    from baselines.lib.runs import Run

    return Run.of(env_id, method, env_kwargs, seed, budget, eval_every, target, "batched",
                  config, hyperparameters)  # fmt: skip
