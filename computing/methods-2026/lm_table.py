"""The language-model table of docs/estimators.md: GRPO steps to the target for Turn-PPO (``gae``
with the learned turn-level value model) against ``trajectory_mc`` at each density, IQM over
seeds with bootstrap intervals, a run that did not reach the target censored at the step limit
(a lower bound), and the ratio as the benchmark computes it.

    python computing/methods-2026/lm_table.py computing/methods-2026/lm
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from baselines.experiments.benchmark.scores import ratio_text, ratio_to
from baselines.lib import stats

METHODS = ("gae", "trajectory_mc")
LIMIT = 200  # lm train --steps: the step limit of a run (its budget)


def row(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    reached = [s is not None for s in summary["steps_to_target"]]
    steps = [float(s) if s is not None else float(LIMIT) for s in summary["steps_to_target"]]
    return {
        "rho": summary["rho"],
        "steps": steps,
        "censored": [not r for r in reached],
        "budget": float(LIMIT),
        "runs": len(steps),
        "reached": sum(reached),
        "seeds": summary["seeds"],
    }


def main(root: Path) -> None:
    print(
        "| routine length | rho | seeds | Turn-PPO (gae) steps, IQM [95% CI] | trajectory_mc "
        "| gae / trajectory_mc [95% CI] |"
    )
    print("|---|---|---|---|---|---|")
    for length in sorted({int(p.name.split("-")[0][1:]) for p in root.glob("L*-*")}):
        rows = {
            m: row(root / f"L{length}-{m}")
            for m in METHODS
            if (root / f"L{length}-{m}" / "summary.json").is_file()
        }
        if len(rows) < 2:
            continue
        cells = []
        for m in METHODS:
            r = rows[m]
            est, low, high = stats.bootstrap_ci(np.array(r["steps"]), stats.iqm)
            bound = ">= " if any(r["censored"]) else ""
            cells.append(
                f"{bound}{float(est):.1f} [{float(low):.1f}, {float(high):.1f}] "
                f"({r['reached']}/{r['runs']})"
            )
        ratio = ratio_text(ratio_to(rows["gae"], rows["trajectory_mc"]))
        seeds = rows["gae"]["seeds"]
        print(
            f"| {length} | 1/{round(1 / rows['gae']['rho'])} | {seeds[0]}-{seeds[-1]} | "
            f"{cells[0]} | {cells[1]} | {ratio} |"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
