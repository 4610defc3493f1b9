"""``python -m baselines.lm dilution``: token-level dilution, measured. Steps of GRPO until the
LM policy's exact success probability reaches ``--target``, against the decision density rho
(one floor of DilutedDoors-v1, ``rho = 1 / (1 + L)``), for several turn-advantage estimators
spread onto the reply tokens (default: ``trajectory_mc``, ``routine_masked`` and the perfect
critic ``oracle``), over seeds.

A run that does not reach the target within ``--steps`` is censored: it counts as ``--steps``
in the median (a lower bound then, ``median_is_lower_bound``, where at most half the runs
reached it) and is reported as not reached. Resumable (``results.jsonl`` in ``--out``; the
records are :class:`~baselines.experiments.lm.records.LMRunRecord`); writes ``dilution.csv``
(one row per run), ``table.csv`` (median steps and CPU seconds per estimator and density
value), ``dilution.png`` and ``summary.json`` (:mod:`baselines.experiments.lm.analysis`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.lm import analysis, train
from baselines.experiments.lm.records import density_of
from baselines.lib import cli
from baselines.lib.tables import format_table, write_csv


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
    """One run per (L, estimator, seed), the env's density keyword (its registry entry's,
    ``routine_length`` for Diluted Doors) set to L."""
    for name in ("routine_lengths", "estimators", "seeds"):
        cli.check_unique(name, getattr(settings, name))
    density_kwarg, _ = density_of(settings.env_id, settings.env_kwargs)
    return [
        train.job_of(
            settings,
            seed,
            estimator=estimator,
            env_kwargs={**settings.env_kwargs, density_kwarg: int(length)},
        )
        for length in settings.routine_lengths
        for estimator in settings.estimators
        for seed in settings.seeds
    ]


def analyse(records: list[dict[str, Any]], settings: DilutionSettings) -> dict[str, Any]:
    """``dilution.csv`` (one row per run), ``table.csv`` (per estimator and density value),
    ``dilution.png`` and ``summary.json`` (the fitted slopes) into ``settings.out``
    (:mod:`baselines.experiments.lm.analysis`); the summary."""
    from baselines.experiments.lm import plots

    out = settings.out
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "dilution.csv", analysis.dilution_runs(records))
    rows = analysis.dilution_table(records)
    write_csv(out / "table.csv", rows)
    summary = analysis.dilution_summary(records)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    plots.plot_dilution(rows, summary, out / "dilution.png")
    return summary


def main(settings: DilutionSettings) -> dict[str, Any]:
    """Run (resumably), analyse, print the table and the summary."""
    cli.check_output_folder(settings.out)
    records = train.run_runs(plan(settings), settings)
    summary = analyse(records, settings)
    print(format_table(analysis.dilution_table(records)))
    print(json.dumps(summary, indent=2))
    return summary
