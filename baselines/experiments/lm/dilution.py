"""``python -m baselines.lm dilution``: token-level dilution, measured. Steps of GRPO until the
LM policy's exact success probability reaches ``--target``, against the decision density rho
(one floor of DilutedDoors-v1, ``rho = 1 / (1 + L)``), for several turn-advantage estimators
spread onto the reply tokens (default: ``trajectory_mc``, ``routine_masked`` and the perfect
critic ``oracle``), over seeds.

A run that does not reach the target within ``--steps`` is censored: it counts as ``--steps``
in the median and is reported as not reached. Resumable (``results.jsonl`` in ``--out``);
writes ``dilution.csv`` (one row per run), ``table.csv`` (median steps and CPU seconds per
estimator and rho), ``dilution.png`` and ``summary.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.lm import train
from baselines.lib import cli
from baselines.lib.runner import run_resumable
from baselines.lib.tables import format_table, write_csv
from routine_envs import snr


@dataclass
class DilutionSettings(train.LMSettings):
    """Token-level dilution: GRPO steps to target against rho, per estimator (LM policy)."""

    routine_lengths: list[int] = field(
        default_factory=lambda: [1, 3, 7, 15],
        metadata={"help": "corridor lengths L (rho = 1/(1+L) on one floor)", "min": 0},
    )
    estimators: list[str] = field(
        default_factory=lambda: ["trajectory_mc", "routine_masked", "oracle"],
        metadata={"help": "advantage estimators compared"},
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2, 3], metadata={"help": "seeds"})
    workers: int = field(default=1, metadata={"help": "runs in parallel", "min": 1})
    out: Path = field(default=Path("results/lm/dilution"), metadata={"help": "output folder"})


def plan(settings: DilutionSettings) -> list[dict[str, Any]]:
    """One run per (L, estimator, seed), the env's ``routine_length`` set to L."""
    for name in ("routine_lengths", "estimators", "seeds"):
        cli.check_unique(name, getattr(settings, name))
    return [
        train.job_of(
            settings,
            seed,
            estimator=estimator,
            env_kwargs={**settings.env_kwargs, "routine_length": int(length)},
        )
        for length in settings.routine_lengths
        for estimator in settings.estimators
        for seed in settings.seeds
    ]


def run(job: dict[str, Any]) -> dict[str, Any]:
    """One training run (:func:`baselines.experiments.lm.train.run`)."""
    return train.run(job)


def table(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median steps to target (censored at ``steps``) and CPU seconds per (estimator, L)."""
    rows = []
    cells = sorted({(r["estimator"], r["env_kwargs"]["routine_length"]) for r in records})
    for estimator, length in cells:
        runs = [
            r
            for r in records
            if r["estimator"] == estimator and r["env_kwargs"]["routine_length"] == length
        ]
        steps = [r["steps_to_target"] or r["steps"] for r in runs]
        rows.append(
            {
                "estimator": estimator,
                "routine_length": length,
                "rho": runs[0]["rho"],
                "runs": len(runs),
                "reached": sum(r["steps_to_target"] is not None for r in runs),
                "median_steps": float(np.median(steps)),
                "min_steps": int(min(steps)),
                "max_steps": int(max(steps)),
                "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in runs])),
            }
        )
    return rows


def analyse(records: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """The table, its CSVs and figure, and the fitted slope of log median steps against log rho
    per estimator; the summary."""
    from baselines.experiments.lm import plots

    out.mkdir(parents=True, exist_ok=True)
    run_columns = ("estimator", "routine_length", "rho", "seed", "steps_to_target", "steps_run")
    write_csv(
        out / "dilution.csv",
        [
            {
                **{c: r.get(c) for c in run_columns if c != "routine_length"},
                "routine_length": r["env_kwargs"]["routine_length"],
                "final_exact_success": r["final_exact_success"],
                "cpu_seconds": r["cpu_seconds"],
            }
            for r in records
        ],
    )
    rows = table(records)
    write_csv(out / "table.csv", rows)
    slopes = {}
    for estimator in sorted({r["estimator"] for r in rows}):
        mine = [r for r in rows if r["estimator"] == estimator]
        if len(mine) >= 2:
            slope, _, r2 = snr.fit_loglog(
                [r["rho"] for r in mine], [r["median_steps"] for r in mine]
            )
            slopes[estimator] = {"slope": slope, "r2": r2}
    summary = {
        "env_id": records[0]["env_id"],
        "target": records[0]["target"],
        "steps": records[0]["steps"],
        "runs": len(records),
        "slope_log_steps_vs_log_rho": slopes,
        "total_cpu_seconds": float(sum(r["cpu_seconds"] for r in records)),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    plots.plot_dilution(rows, summary, out / "dilution.png")
    return summary


def main(settings: DilutionSettings) -> dict[str, Any]:
    """Run (resumably), analyse, print the table and the summary."""
    cli.check_output_folder(settings.out)
    records = run_resumable(
        plan(settings), train.key, run, settings.out / "results.jsonl", settings.workers
    )
    summary = analyse(records, settings.out)
    print(format_table(table(records)))
    print(json.dumps(summary, indent=2))
    return summary
