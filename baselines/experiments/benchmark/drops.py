"""The drops manifest: what became of every planned run behind a score.

Every run the protocol plans for a method ends in one of four states, each with its reason:

- ``reached``: finished, and its success crossed the target (its steps to target are exact);
- ``censored``: finished without reaching the target within its budget (it counts at the budget,
  so the score beside it is a bound);
- ``failed``: its record was refused (a non-finite success, a bad field: the reason the results
  file gave when it kept the line aside in ``<results>.rejected.jsonl``) or its run raised (the
  error the runner kept in ``<results>.failures.jsonl``), and no valid record of it exists;
- ``missing``: no record at all (not run yet, or stopped before it finished; ``run`` resumes it).

``finished`` is ``reached + censored``; ``planned = finished + failed + missing``. Only
``reached`` runs give exact steps; a score is read over the finished runs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from baselines.lib.runs import Run
from baselines.lib.runs import key as run_key
from baselines.lib.scoring import steps_to_target

Record = dict[str, Any]
STATUSES = ("reached", "censored", "failed", "missing")
COUNTS = ("planned", "finished", *STATUSES)


def rejected_path(results: Path) -> Path:
    """Where a results file keeps the lines it refused (``results.rejected.jsonl``)."""
    return results.with_name(results.stem + ".rejected.jsonl")


def failures_path(results: Path) -> Path:
    """Where the runner keeps the errors of runs that raised (``results.failures.jsonl``:
    :meth:`~baselines.lib.results.ResultsFile.note_failure`)."""
    return results.with_name(results.stem + ".failures.jsonl")


def json_lines(path: Path) -> list[Any]:
    """The JSON values of the readable lines of ``path`` (none when it does not exist)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))  # NaN is accepted: it is the evidence
        except ValueError:
            continue
    return out


def failed_runs(results: Path) -> dict[str, str]:
    """``{run key: reason}`` of the runs whose record the results file refused (its rejected
    file's reason) or whose run raised (the runner's failures file: its error); the last
    reason per key. Lines without a readable key are skipped."""
    out: dict[str, str] = {}
    for entry in json_lines(rejected_path(results)):
        try:
            key = json.loads(entry["text"])["key"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(key, str):
            out[key] = f"record refused: {entry.get('reason', 'invalid')}"
    for entry in json_lines(failures_path(results)):
        if isinstance(entry, dict) and isinstance(entry.get("key"), str):
            out[entry["key"]] = f"the run raised: {entry.get('error', 'unknown error')}"
    return out


def censoring_reason(record: Record) -> str:
    """Why a finished run is censored: the target, its budget and its best success."""
    success = record["success"]
    best = max(range(len(success)), key=lambda i: success[i])
    return (
        f"success stayed below {record['target']} within its budget of "
        f"{int(record['budget']):,} steps (highest {success[best]:.3f} at step "
        f"{int(record['timesteps'][best]):,})"
    )


def run_rows(
    jobs: Sequence[Run], records: Iterable[Record], failed: dict[str, str]
) -> list[dict[str, Any]]:
    """One row per planned run (``jobs``, in plan order): setting, density, seed, status and
    reason. ``records``: the valid records of the runs (by ``key``); ``failed``: reasons of
    refused or failed runs by key (:func:`failed_runs`)."""
    by_key = {r["key"]: r for r in records if "key" in r}
    rows = []
    for job in jobs:
        key = run_key(job)
        record = by_key.get(key)
        if record is not None:
            reached = math.isfinite(steps_to_target(record))
            status = "reached" if reached else "censored"
            reason = "" if reached else censoring_reason(record)
        elif key in failed:
            status, reason = "failed", failed[key]
        else:
            status = "missing"
            reason = "no record: not run yet, or stopped before it finished (`run` resumes it)"
        rows.append(
            {
                "setting": job.context["setting"],
                "density_value": int(job.context["density_value"]),
                "rho": float(job.context["rho"]),
                "seed": int(job.seed),
                "status": status,
                "reason": reason,
            }
        )
    return rows


def counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """``planned``, ``finished`` and the count of each status among ``rows``."""
    rows = list(rows)
    out = {"planned": len(rows), **{s: sum(r["status"] == s for r in rows) for s in STATUSES}}
    out["finished"] = out["reached"] + out["censored"]
    return {k: out[k] for k in COUNTS}


def drops_manifest(
    jobs: Sequence[Run], records: Iterable[Record], failed: dict[str, str]
) -> dict[str, Any]:
    """The manifest: ``runs`` (:func:`run_rows`), ``cells`` (counts per setting and density,
    in plan order) and ``total`` (:func:`counts` over every run)."""
    rows = run_rows(jobs, records, failed)
    cells: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["setting"], r["density_value"]), []).append(r)
    return {
        "runs": rows,
        "cells": [
            {"setting": s, "density_value": v, "rho": rs[0]["rho"], **counts(rs)}
            for (s, v), rs in cells.items()
        ],
        "total": counts(rows),
    }


def summary(total: dict[str, int]) -> str:
    """``120 planned: 118 finished (110 reached the target, 8 censored), 1 failed, 1 missing``."""
    return (
        f"{total['planned']} planned: {total['finished']} finished ({total['reached']} reached "
        f"the target, {total['censored']} censored), {total['failed']} failed, "
        f"{total['missing']} missing"
    )


def markdown_table(manifest: dict[str, Any], setting: str) -> list[str]:
    """The card's lines for ``setting``: counts per density, then each dropped or censored
    run with its reason."""
    cells = [c for c in manifest["cells"] if c["setting"] == setting]
    if not cells:
        return []
    lines = [
        "Runs behind these scores (drops manifest; `drops.csv` lists every run):",
        "",
        "| density | rho | " + " | ".join(COUNTS) + " |",
        "|---" * (2 + len(COUNTS)) + "|",
    ]
    lines += [
        f"| {c['density_value']} | {c['rho']:.3g} | " + " | ".join(str(c[k]) for k in COUNTS) + " |"
        for c in cells
    ]
    dropped = [r for r in manifest["runs"] if r["setting"] == setting and r["reason"]]
    if dropped:
        lines.append("")
        lines += [
            f"- density {r['density_value']}, seed {r['seed']}: {r['status']}: {r['reason']}"
            for r in dropped
        ]
    return lines
