"""Analysis of the detector scores: the tables as pure functions of the records (one per
density value and policy, every detector's scores in ``results``: :class:`~baselines.
experiments.detectors.score.DetectorRecord` rows) and the settings, tested on small
hand-written records; :func:`write` writes ``detectors.csv``, ``detectors.md`` and
``summary.json`` and prints the table."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from baselines.lib.tables import format_table, write_csv

Row = dict[str, Any]

TABLE_COLUMNS = (
    "policy",
    "rho",
    "detector",
    "auc",
    "auc_low",
    "auc_high",
    "ap",
    "rho_implied",
    "rho_error",
    "rho_error_low",
    "rho_error_high",
    "cost_per_step",
    "setup_steps",
)
"""The printed table's columns after the density's."""


def flat_rows(records: Iterable[Row]) -> list[Row]:
    """One row per (setting, detector), in the records' order: the env, its density value
    (named by its keyword), the policy's spec and exact success probability, the detector's
    scores."""
    rows = []
    for rec in records:
        for res in rec["results"]:
            rows.append(
                {
                    "env_id": rec["env_id"],
                    "env_kwargs": json.dumps(rec["env_kwargs"], sort_keys=True),
                    rec["density_kwarg"]: rec["density_value"],
                    "policy": rec["policy"]["spec"],
                    "success_probability": rec["success_probability"],
                    **res,
                }
            )
    return rows


def interval(row: Row, name: str, digits: int = 3) -> str:
    """``0.812 [0.80, 0.83]``: a score and its bootstrap interval."""
    value, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def markdown_table(rows: list[Row], density_kwarg: str) -> str:
    """The detector table as Markdown: one line per (density, policy, detector)."""
    lines = [
        f"| {density_kwarg} | policy | rho | detector | AUC | AP | implied rho - rho | "
        "env steps per step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r[density_kwarg]} | `{r['policy']}` | {r['rho']:.3f} | `{r['detector']}` | "
            f"{interval(r, 'auc')} | {interval(r, 'ap')} | {interval(r, 'rho_error')} | "
            f"{r['cost_per_step']:.3g}"
            + (f" (+{r['setup_steps']} setup)" if r["setup_steps"] else "")
            + " |"
        )
    return "\n".join(lines) + "\n"


def summary(records: list[Row], settings: Any) -> Row:
    """What the scores were measured on: the env, the density keyword and the policies (of the
    records, in order), the detectors, the sample and the bootstrap (of ``settings``)."""
    return {
        "env_id": settings.env_id,
        "env_kwargs": settings.env_kwargs,
        "density_kwarg": records[0]["density_kwarg"],
        "policies": list(dict.fromkeys(r["policy"]["spec"] for r in records)),
        "detectors": list(settings.detectors),
        "batches": settings.batches,
        "warmup": settings.warmup,
        "groups": settings.groups,
        "group_size": settings.group_size,
        "resamples": settings.resamples,
        "seed": settings.seed,
        "intervals": "95% percentile bootstrap over episodes",
    }


def tables(records: list[Row], settings: Any) -> dict[str, Any]:
    """``summary`` (:func:`summary`) and ``rows`` (:func:`flat_rows`)."""
    return {"summary": summary(records, settings), "rows": flat_rows(records)}


def write(tables: dict[str, Any], settings: Any) -> None:
    """Write ``detectors.csv``, ``detectors.md`` and ``summary.json`` into ``settings.out``;
    print the table."""
    rows, density_kwarg = tables["rows"], tables["summary"]["density_kwarg"]
    write_csv(settings.out / "detectors.csv", rows)
    (settings.out / "detectors.md").write_text(markdown_table(rows, density_kwarg))
    (settings.out / "summary.json").write_text(
        json.dumps(tables["summary"], indent=2, allow_nan=False)
    )
    print(format_table(rows, [density_kwarg, *TABLE_COLUMNS]))
    print(f"\nwrote {settings.out}/: results.jsonl, detectors.csv, detectors.md, summary.json")


def analyse(records: list[Row], settings: Any) -> dict[str, Any]:
    """:func:`tables`, written and printed (:func:`write`); the tables."""
    result = tables(records, settings)
    write(result, settings)
    return result
