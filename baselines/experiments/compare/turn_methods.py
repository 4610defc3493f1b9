"""Short training runs of the turn-level methods beside ``ppo`` and ``trajectory_mc`` with the
batched trainer (:mod:`baselines.lib.batched`: the same algorithm as SB3's, many runs per
process), on Diluted Doors v1 at two densities and on SearchOrAnswer-v0.

``python -m baselines turn_methods [--seeds 0 1 2 3] [--out DIR]`` trains
every (setting, method, seed) with the environment's hyperparameters
(``baselines/configs/<env id>.yml``, defaults where there is none), evaluates the exact success
probability 12 times per run, and writes ``runs.csv`` (one row per run: steps to the 0.9 target,
interpolated between evaluations, ``inf`` where never reached) and ``summary.csv`` (per
setting and method: the runs that reached it and the mean steps of those, the median over all
runs with unreached runs at infinity).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.runs import Run, train
from baselines.lib.stats import first_crossing
from baselines.lib.tables import format_table, write_csv

METHODS = (
    "ppo",
    "trajectory_mc",
    'discounted_turn{"gamma": 0.9}',
    "turn_index_norm",
    'turn_index_norm{"fix": true}',
    'turn_credit{"gamma": 0.9}',
)
#: (env id, kwargs, budget in steps): 1000 episodes of the longest episode, at least 15,000
SETTINGS: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("DilutedDoors-v1", {"num_floors": 2, "routine_length": 0}, 15_000),
    ("DilutedDoors-v1", {"num_floors": 2, "routine_length": 9}, 20_000),
    ("SearchOrAnswer-v0", {}, 19_000),
)
TARGET = 0.9
EVALUATIONS = 12


def main(seeds: list[int], out: Path) -> list[dict[str, Any]]:
    """Train every run, write ``runs.csv``, ``summary.csv`` and ``summary.json``."""
    out.mkdir(parents=True, exist_ok=True)
    specs = [
        Run.of(env_id, method, kwargs, seed, budget, budget // EVALUATIONS, TARGET, "batched")
        for env_id, kwargs, budget in SETTINGS
        for method in METHODS
        for seed in seeds
    ]
    results = train(specs)
    runs = []
    for spec, result in zip(specs, results, strict=True):
        steps = first_crossing(result.timesteps, result.success, TARGET)
        runs.append(
            {
                "setting": f"{spec.env_id}{json.dumps(spec.env_kwargs)}",
                "method": spec.method.text,
                "seed": spec.seed,
                "budget": spec.budget,
                "steps_to_target": steps,
                "final_success": result.success[-1],
            }
        )
    write_csv(out / "runs.csv", runs)
    summary = []
    for setting in dict.fromkeys(r["setting"] for r in runs):
        for method in METHODS:
            mine = [r for r in runs if r["setting"] == setting and r["method"] == method]
            steps = np.array([r["steps_to_target"] for r in mine])
            reached = steps[np.isfinite(steps)]
            summary.append(
                {
                    "setting": setting,
                    "method": method,
                    "reached": f"{len(reached)}/{len(steps)}",
                    "mean steps (reached)": round(float(reached.mean())) if len(reached) else "-",
                    "median steps": "inf"
                    if math.isinf(float(np.median(steps)))
                    else round(float(np.median(steps))),
                    "mean final success": round(
                        float(np.mean([r["final_success"] for r in mine])), 3
                    ),
                }
            )
    write_csv(out / "summary.csv", summary)
    (out / "summary.json").write_text(
        json.dumps({"seeds": seeds, "target": TARGET, "summary": summary}, indent=2)
    )
    print(format_table(summary))
    return summary


@dataclass
class TurnMethodsSettings:
    """Short batched-trainer runs of the turn-level methods (module docstring)."""

    seeds: list[int] = field(
        default_factory=lambda: [0, 1, 2, 3], metadata={"help": "seeds of the runs", "min": 0}
    )
    out: Path = field(
        default=Path("results/compare/turn_methods"), metadata={"help": "output folder"}
    )


def run(settings: TurnMethodsSettings) -> list[dict[str, Any]]:
    """``python -m baselines turn_methods``: :func:`main` of ``settings``."""
    return main(list(settings.seeds), settings.out)
