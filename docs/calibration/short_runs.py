"""Short calibration runs with the batched trainer: methods x densities x seeds of one env,
budgets as the protocol sizes them, and how many runs reach the target by each budget.

The budget of a density is ``max(budget_episodes * longest episode, min_budget_steps)``, cut
to ``eval_points`` evaluations (as ``baselines.lib.runs.plan`` plans rb1's runs); every
evaluation is the exact success probability of the current policy. ``--also-budgets 2000``
also counts the runs that reached the target within 2000 episodes' budget (read off the same
curves: the first crossing of the target is the same run's). Writes ``<out>.csv`` (one row
per run) and ``<out>.json`` (one row per cell) and prints a markdown table of the cells.

Example (the CodeFix calibration of docs/reproducing.md)::

    PYTHONPATH=. python docs/calibration/short_runs.py --env-id CodeFix-v1 \\
        --density-kwarg routine_length --values 64 --methods ppo oracle trajectory_mc \\
        --seeds 10 --budget-episodes 4000 --also-budgets 2000 \\
        --config docs/calibration/codefix_rb1_hyperparameters.yml \\
        --out docs/calibration/codefix_v1_L64
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

import routine_envs  # noqa: F401  (registers the ids)
from baselines.lib.runs import Run, train
from baselines.lib.stats import iqm


def budget_of(env_id: str, env_kwargs: dict, budget_episodes: int, min_steps: int) -> int:
    """``max(budget_episodes * longest episode, min_steps)`` in environment steps."""
    env = gym.make(env_id, **env_kwargs).unwrapped
    longest = getattr(env, "max_episode_length", None) or env.spec.max_episode_steps
    return max(budget_episodes * int(longest), min_steps)


def first_crossing(steps: list[int], success: list[float], target: float, budget: int):
    """The first evaluation point ``<= budget`` with success ``>= target``, else ``None``."""
    for t, s in zip(steps, success, strict=True):
        if t <= budget and s >= target:
            return t
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's settings (a bad value exits with a one-line error naming its flag)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", required=True)
    parser.add_argument("--env-kwargs", type=json.loads, default={}, metavar="JSON")
    parser.add_argument("--density-kwarg", required=True)
    parser.add_argument("--values", type=json.loads, nargs="+", required=True)
    parser.add_argument("--methods", nargs="+", default=["ppo", "trajectory_mc"])
    parser.add_argument("--seeds", type=int, default=4, help="N seeds: first .. first + N-1")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed")
    parser.add_argument("--budget-episodes", type=int, default=1000)
    parser.add_argument("--min-budget-steps", type=int, default=15000)
    parser.add_argument("--eval-points", type=int, default=40)
    parser.add_argument("--also-budgets", type=int, nargs="*", default=[],
                        help="smaller budgets (in episodes) to count reached runs at")  # fmt: skip
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--config", type=Path, default=None, help="hyperparameter YAML")
    parser.add_argument("--out", type=Path, required=True, help="prefix of .csv and .json")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    if args.first_seed < 0:
        parser.error("--first-seed must be >= 0")
    if args.eval_points < 1:
        parser.error("--eval-points must be >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    """Train every run, write ``<out>.csv`` and ``<out>.json``, print the cells' table."""
    args = parse_args(argv)

    runs, cells = [], []
    for value in args.values:
        kwargs = {**args.env_kwargs, args.density_kwarg: value}
        env = gym.make(args.env_id, **kwargs).unwrapped
        rho = float(env.decision_density)
        budget = budget_of(args.env_id, kwargs, args.budget_episodes, args.min_budget_steps)
        eval_every = max(1, budget // args.eval_points)
        budget = eval_every * args.eval_points
        smaller = {
            b: budget_of(args.env_id, kwargs, b, args.min_budget_steps) for b in args.also_budgets
        }
        for method in args.methods:
            cells.append((value, rho, method, budget, smaller, len(runs)))
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                runs.append(
                    Run.of(args.env_id, method, kwargs, seed, budget, eval_every, args.target,
                           "batched", config=args.config)
                )  # fmt: skip
    results = train(runs)

    rows, summary = [], []
    for value, rho, method, budget, smaller, first in cells:
        mine = list(zip(runs, results, strict=True))[first : first + args.seeds]
        steps = [r.steps_to_target for _, r in mine]
        for run, r in mine:
            rows.append(
                {
                    "env_id": args.env_id,
                    "env_kwargs": json.dumps(run.env_kwargs, sort_keys=True),
                    "density_value": value,
                    "rho": round(rho, 5),
                    "method": method,
                    "seed": run.seed,
                    "budget": budget,
                    "steps_to_target": r.steps_to_target,
                    "final_success": round(r.final_success, 4),
                    "max_success": round(max(r.success), 4),
                    "cpu_time": None if r.cpu_time is None else round(r.cpu_time, 2),
                }
            )
        cell = {
            "env_id": args.env_id,
            "env_kwargs": args.env_kwargs,
            "density_kwarg": args.density_kwarg,
            "density_value": value,
            "rho": rho,
            "method": method,
            "seeds": len(mine),
            "budget": budget,
            "reached": sum(s is not None for s in steps),
            "iqm_steps_censored": float(iqm([budget if s is None else s for s in steps])),
            "median_final_success": float(np.median([r.final_success for _, r in mine])),
            "cpu_time": float(sum(r.cpu_time or 0.0 for _, r in mine)),
        }
        for episodes, b in smaller.items():
            cell[f"budget_of_{episodes}_episodes"] = b
            cell[f"reached_within_{episodes}_episodes"] = sum(
                first_crossing(r.timesteps, r.success, args.target, b) is not None for _, r in mine
            )
        summary.append(cell)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    extra = [k for k in summary[0] if k.startswith("reached_within")]
    head = ["density", "rho", "method", "budget (steps)", "reached", *extra,
            "IQM steps (censored)", "median final success", "CPU s"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|---" * (8 + len(extra)) + "|")
    for c in summary:
        print(
            f"| {args.density_kwarg}={c['density_value']} | {c['rho']:.4f} | {c['method']} | "
            f"{c['budget']:,} | {c['reached']}/{c['seeds']} | "
            + "".join(f"{c[k]}/{c['seeds']} | " for k in extra)
            + f"{c['iqm_steps_censored']:,.0f} | {c['median_final_success']:.3f} | "
            f"{c['cpu_time']:.0f} |"
        )


if __name__ == "__main__":
    main()
