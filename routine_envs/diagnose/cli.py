"""``python -m routine_envs diagnose``: its settings (the flags, through :mod:`routine_envs.cli`)
and the command."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym
import numpy as np

from routine_envs.diagnose.algorithm import branch, check_arguments, diagnose
from routine_envs.diagnose.policies import POLICY_FORMS, UNIFORM, as_policy, with_action_mask
from routine_envs.diagnose.report import format_result


@dataclass
class DiagnoseSettings:
    """Estimate the decision density rho of any branchable Gymnasium environment by
    counterfactual branching: sample states under a policy, branch every action from each with
    common random numbers, and test whether the action changes the return (docs/diagnose.md)."""

    env_id: str = field(
        metadata={
            "help": "a registered Gymnasium id, e.g. DilutedDoors-v1 ('module:Env-v0' imports "
            "the module first)",
            "positional": True,
        }
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "help": "keyword arguments of gym.make, as a JSON object (--kwargs: deprecated)",
            "aliases": ("--kwargs",),
        },
    )
    states: int = field(default=200, metadata={"help": "minimum number of states tested"})
    rollouts: int = field(default=16, metadata={"help": "continuations per action"})
    alpha: float = field(default=0.01, metadata={"help": "significance level per state"})
    seed: int = field(default=0, metadata={"help": "seeds resets, policy and rollouts", "min": 0})
    max_steps: int = field(
        default=1000, metadata={"help": "step budget of an episode (a time limit)"}
    )
    confidence: float = field(default=0.95, metadata={"help": "level of the CI of rho"})
    policy: str = field(
        default=UNIFORM,
        metadata={
            "help": "the policy that reaches the tested states and continues the rollouts "
            f"({POLICY_FORMS})"
        },
    )
    json: Path | None = field(
        default=None,
        metadata={"help": "also write the result (with records) to this file", "metavar": "PATH"},
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})


def _refuse(message: str) -> NoReturn:
    """Bad settings: a ``ValueError`` (one line on stderr, exit status 2, before any work)."""
    raise ValueError(message)


def _make(env_id: str, kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, or a one-line refusal naming what is wrong: a module of
    ``module:Env-v0`` that cannot be imported, an unknown id, kwargs that are not an object or
    that the constructor does not take (its ``inspect.signature``), a bad value."""
    if not isinstance(kwargs, dict):
        _refuse(f"--env-kwargs must be a JSON object, got {kwargs!r}")
    module, sep, name = env_id.rpartition(":")
    if sep:
        try:
            importlib.import_module(module)
        except ImportError as error:
            _refuse(f"{env_id}: cannot import module {module!r} ({error})")
    else:
        name = env_id
    if name not in gym.registry:
        _refuse(f"unknown environment {env_id!r} (not registered with Gymnasium)")
    entry = gym.spec(name).entry_point
    try:
        creator = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
        params = inspect.signature(creator).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError):
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params):
        allowed = {p.name for p in params} | {"max_episode_steps", "disable_env_checker"}
        unknown = sorted(set(kwargs) - allowed)
        if unknown:
            _refuse(
                f"--env-kwargs: {env_id} takes no keyword argument(s) {unknown}; "
                f"allowed: {sorted(allowed)}"
            )
    try:
        return gym.make(env_id, **kwargs)
    except (gym.error.Error, TypeError, ValueError) as error:
        _refuse(f"cannot make {env_id} with --env-kwargs {kwargs}: {' '.join(str(error).split())}")


def run(args: DiagnoseSettings) -> int:
    """Run ``python -m routine_envs diagnose`` with its settings; the exit status. Bad
    settings are refused with a ``ValueError`` naming the flag, before any work."""
    kwargs = args.env_kwargs
    if args.seed < 0:
        _refuse(f"--seed must be >= 0, got {args.seed}")
    if args.json:
        folder = Path(args.json).resolve().parent
        if not folder.is_dir():
            _refuse(f"--json {args.json}: no such folder {folder}")
        if Path(args.json).is_dir() or not os.access(folder, os.W_OK):
            _refuse(f"--json {args.json}: cannot write there")
    env = _make(args.env_id, kwargs)
    try:  # refuse bad settings and unbranchable envs with a message, not a traceback
        check_arguments(
            env, args.states, args.rollouts, args.alpha, args.max_steps, args.confidence
        )
        obs, info = env.reset(seed=args.seed)
        branch(env)
        policy = as_policy(args.policy, env.action_space, what="--policy", env=env)
    except (TypeError, ValueError) as error:
        env.close()
        _refuse(str(error))
    try:  # a policy that fails on the first observation is refused before any work
        policy(obs, with_action_mask(env, info), np.random.default_rng(args.seed))
    except Exception as error:  # user code: one line naming --policy, not a traceback
        env.close()
        message = " ".join(str(error).split())
        if not message.startswith("--policy"):
            name = type(error).__name__
            message = f"--policy {args.policy}: {name} on the first observation: {message}"
        _refuse(message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = diagnose(
                env,
                num_states=args.states,
                num_rollouts=args.rollouts,
                alpha=args.alpha,
                seed=args.seed,
                progress=args.progress,
                max_steps=args.max_steps,
                confidence=args.confidence,
                policy=policy,
            )
        except ValueError as error:  # e.g. a NaN reward: named, no traceback
            raise SystemExit(f"error: {error}") from None
        finally:
            env.close()
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    print(format_result(result))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result.to_dict(), handle, indent=1, default=repr)
    return 0
