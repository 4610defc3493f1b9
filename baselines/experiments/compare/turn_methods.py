"""Short training runs of the turn-level methods beside ``ppo`` and ``trajectory_mc`` with the
batched trainer (:mod:`baselines.lib.batched`: the same algorithm as SB3's, many runs per
process), on Diluted Doors v1 at two densities and on SearchOrAnswer-v0.

``python -m baselines turn_methods [--seeds 0 1 2 3] [--out DIR]`` trains
every (setting, method, seed) with the environment's hyperparameters
(``baselines/configs/<env id>.yml``, defaults where there is none), evaluates the exact success
probability 12 times per run, and writes ``runs.csv`` (one row per run: steps to the 0.9 target,
interpolated between evaluations, ``inf`` where never reached) and ``summary.csv`` (per
setting and method: the runs that reached it and the mean steps of those, the median over all
runs with unreached runs at infinity): :mod:`baselines.experiments.compare.analysis`, from the
runs' evaluations alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.compare import analysis
from baselines.lib.runs import Run, train

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
    records = [
        {
            "setting": f"{spec.env_id}{json.dumps(spec.env_kwargs)}",
            "method": spec.method.text,
            "seed": spec.seed,
            "budget": spec.budget,
            "timesteps": result.timesteps,
            "success": result.success,
        }
        for spec, result in zip(specs, results, strict=True)
    ]
    runs = analysis.turn_run_rows(records, TARGET)
    summary = analysis.turn_summary(runs)
    analysis.write_turn_methods(runs, summary, seeds, TARGET, out)
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
