"""``python -m routine_envs diagnose``: argument parsing and the command."""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import gymnasium as gym

from routine_envs.diagnose.algorithm import branch, check_arguments, diagnose
from routine_envs.diagnose.report import format_result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m routine_envs diagnose``."""
    parser.add_argument("env_id", help="a registered Gymnasium id, e.g. DilutedDoors-v0")
    parser.add_argument(
        "--kwargs", default="{}", help="keyword arguments of gym.make, as a JSON object"
    )
    parser.add_argument("--states", type=int, default=200, help="minimum number of states tested")
    parser.add_argument("--rollouts", type=int, default=16, help="continuations per action")
    parser.add_argument("--alpha", type=float, default=0.01, help="significance level per state")
    parser.add_argument("--seed", type=int, default=0, help="seeds resets, policy and rollouts")
    parser.add_argument(
        "--max-steps", type=int, default=1000, help="step budget of an episode (a time limit)"
    )
    parser.add_argument("--confidence", type=float, default=0.95, help="level of the CI of rho")
    parser.add_argument("--json", metavar="PATH", help="also write the result (with records)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run ``python -m routine_envs diagnose`` with parsed ``args``; the exit status."""
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as error:
        raise SystemExit(f"--kwargs must be a JSON object: {error}") from None
    if not isinstance(kwargs, dict):
        raise SystemExit(f"--kwargs must be a JSON object, got {args.kwargs!r}")
    try:
        env = gym.make(args.env_id, **kwargs)
    except (gym.error.Error, TypeError, ValueError) as error:
        raise SystemExit(f"cannot make {args.env_id} with {kwargs}: {error}") from None
    try:  # refuse bad settings and unbranchable envs with a message, not a traceback
        check_arguments(
            env, args.states, args.rollouts, args.alpha, args.max_steps, args.confidence
        )
        env.reset(seed=args.seed)
        branch(env)
    except (TypeError, ValueError) as error:
        env.close()
        raise SystemExit(f"error: {error}") from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            result = diagnose(
                env,
                num_states=args.states,
                num_rollouts=args.rollouts,
                alpha=args.alpha,
                seed=args.seed,
                progress=not args.no_progress,
                max_steps=args.max_steps,
                confidence=args.confidence,
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
