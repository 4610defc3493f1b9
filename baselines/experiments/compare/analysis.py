"""Analysis of the comparison sweep and of the turn-level methods' short runs: their tables as
pure functions of their records (tested on small hand-written tables), and the functions that
write and print them.

- ``compare``: the learning-curve tables of :mod:`baselines.lib.curves` (shared with the team
  sweep), with the sweep's baseline and statistic;
- ``turn_methods``: one row per run (steps to the target, interpolated between evaluations,
  ``inf`` where never reached) and per (setting, method) the runs that reached it, the mean
  steps of those and the median over all runs (unreached runs at infinity).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import curves
from baselines.lib.scoring import steps_to_target
from baselines.lib.tables import format_table, write_csv

Row = dict[str, Any]


# ----------------------------------------------------------------------------- compare
def tables(records: Iterable[Row], settings: Any) -> dict[str, list[Row]]:
    """The sweep's tables (:func:`baselines.lib.curves.sweep_tables`) with its ``baseline``
    and ``statistic``."""
    return curves.sweep_tables(records, settings.baseline, settings.statistic)


def write(tables: dict[str, list[Row]], records: list[Row], settings: Any) -> None:
    """Write the tables and plots into ``settings.out`` and print them."""
    curves.write_tables(tables, settings.out, settings.statistic)
    curves.report_written(tables, records, settings.out)


def analyse(records: list[Row], settings: Any) -> dict[str, list[Row]]:
    """:func:`tables`, written and printed (:func:`write`); the tables."""
    result = tables(records, settings)
    write(result, records, settings)
    return result


# ------------------------------------------------------------------------- turn_methods
def turn_run_rows(records: Iterable[Row], target: float) -> list[Row]:
    """One row per run (``runs.csv``): its setting, method, seed, budget, steps to ``target``
    (by its evaluation's rule, :func:`baselines.lib.scoring.steps_to_target`; ``inf``: never
    reached) and final success. A record is
    a run's ``setting``, ``method``, ``seed``, ``budget``, ``timesteps`` and ``success``."""
    return [
        {
            "setting": r["setting"],
            "method": r["method"],
            "seed": r["seed"],
            "budget": r["budget"],
            "steps_to_target": steps_to_target(r, target),
            "final_success": r["success"][-1],
        }
        for r in records
    ]


def turn_summary(runs: Iterable[Row]) -> list[Row]:
    """Per (setting, method), in the order of ``runs`` (:func:`turn_run_rows`): the runs that
    reached the target (``"k/n"``), the mean steps of those (``"-"``: none), the median steps
    over all runs (``"inf"`` when at least half never reached it), the mean final success."""
    runs = list(runs)
    summary = []
    for setting in dict.fromkeys(r["setting"] for r in runs):
        for method in dict.fromkeys(r["method"] for r in runs if r["setting"] == setting):
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
    return summary


def write_turn_methods(
    runs: list[Row], summary: list[Row], seeds: list[int], target: float, out: Path
) -> None:
    """Write ``runs.csv``, ``summary.csv`` and ``summary.json`` into ``out``; print the
    summary."""
    write_csv(out / "runs.csv", runs)
    write_csv(out / "summary.csv", summary)
    (out / "summary.json").write_text(
        json.dumps({"seeds": seeds, "target": target, "summary": summary}, indent=2)
    )
    print(format_table(summary))
