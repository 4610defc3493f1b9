"""Analysis of the LM experiments: tables, fits and summaries as pure functions of their records.

Every function takes records as rows (one dict per run of ``train`` and ``dilution``,
:class:`~baselines.experiments.lm.records.LMRunRecord`; one per density value of ``snr``,
:class:`~baselines.experiments.lm.records.SNRRecord`; older rows are read through
:func:`~baselines.experiments.lm.records.upgrade`) and returns plain rows or a summary dict, so
it is tested on small hand-written tables; the commands write them (CSV, JSON) and draw them
(:mod:`baselines.experiments.lm.plots`). Tables name the density column by the env's keyword
(``routine_length`` for Diluted Doors), as the suite's other tables do.

A run that does not reach the target within its ``steps`` is censored: the steps-to-target
tables count it as ``steps`` (a lower bound of its true value), so a median over runs of which
at most half reached the target is itself only a lower bound (``median_is_lower_bound``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from baselines.experiments.lm.records import ESTIMATE_FIELDS, upgrade
from baselines.lib.curves import density_column
from routine_envs import snr

Row = dict[str, Any]


def current(records: Iterable[Row]) -> list[Row]:
    """``records`` with the current density fields (:func:`~.records.upgrade`)."""
    return [upgrade(r) for r in records]


# ----------------------------------------------------------------------------- train
CURVE_COLUMNS = (
    "seed",
    "step",
    "success",
    "exact_success",
    "canonical_mass",
    "invalid_fraction",
    "frac_reward_zero_std",
    "cpu_seconds",
    "total_cpu_seconds",
    "loss",
    "clip_fraction",
)
"""The columns of ``curve.csv``."""


def curve_rows(records: Iterable[Row]) -> list[Row]:
    """Every step of every run, with the warm start's CPU time added (``total_cpu_seconds``)
    and a step 0 row (after the warm start, before GRPO); the columns of
    :data:`CURVE_COLUMNS` a step has."""
    rows = []
    for r in records:
        rows.append(
            {
                "seed": r["seed"],
                "step": 0,
                "exact_success": r["initial_exact_success"],
                "canonical_mass": r.get("initial_canonical_mass"),
                "cpu_seconds": 0.0,
                "total_cpu_seconds": r["warm_start_cpu_seconds"],
            }
        )
        for row in r["curve"]:
            full = {c: row.get(c) for c in CURVE_COLUMNS if c in row}
            full["seed"] = r["seed"]
            full["total_cpu_seconds"] = row["cpu_seconds"] + r["warm_start_cpu_seconds"]
            rows.append(full)
    return rows


TRAIN_TABLE_COLUMNS = ("seed", "steps_to_target", "final_exact_success", "cpu_seconds")


def train_table(records: Iterable[Row]) -> list[Row]:
    """One row per run: its seed, steps to target (``None``: not reached), final exact success
    and CPU seconds."""
    return [{c: r[c] for c in TRAIN_TABLE_COLUMNS} for r in records]


def train_summary(records: Iterable[Row]) -> Row:
    """The runs of ``lm train`` (one env, one estimator, several seeds): how many reached the
    target (``"k/n"``), and per seed the steps to target, initial and final exact success and
    CPU seconds (rounded to 0.1 s); the median CPU seconds."""
    records = current(records)
    first = records[0]
    reached = [r["steps_to_target"] for r in records if r["steps_to_target"] is not None]
    return {
        "env_id": first["env_id"],
        "env_kwargs": first["env_kwargs"],
        "density_kwarg": first["density_kwarg"],
        "density_value": first["density_value"],
        "rho": first["rho"],
        "estimator": first["estimator"],
        "target": first["target"],
        "parameters": first["parameters"],
        "seeds": [r["seed"] for r in records],
        "reached": f"{len(reached)}/{len(records)}",
        "steps_to_target": [r["steps_to_target"] for r in records],
        "initial_exact_success": [r["initial_exact_success"] for r in records],
        "final_exact_success": [r["final_exact_success"] for r in records],
        "cpu_seconds": [round(r["cpu_seconds"], 1) for r in records],
        "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in records])),
    }


# -------------------------------------------------------------------------- dilution
def steps_or_bound(record: Row) -> int:
    """A run's steps to target, or its ``steps`` when censored (a lower bound)."""
    reached = record["steps_to_target"]
    return record["steps"] if reached is None else reached


def dilution_runs(records: Iterable[Row]) -> list[Row]:
    """One row per run (``dilution.csv``): estimator, density, rho, seed, steps to target
    (``None``: censored), steps run, final exact success, CPU seconds."""
    records = current(records)
    column = density_column(records)
    return [
        {
            "estimator": r["estimator"],
            column: r["density_value"],
            "rho": r["rho"],
            "seed": r["seed"],
            "steps_to_target": r["steps_to_target"],
            "steps_run": r["steps_run"],
            "final_exact_success": r["final_exact_success"],
            "cpu_seconds": r["cpu_seconds"],
        }
        for r in records
    ]


def dilution_table(records: Iterable[Row]) -> list[Row]:
    """Per (estimator, density value), sorted: the runs, how many reached the target, the
    median, least and most steps to target (censored runs counted as ``steps``), whether the
    median is only a lower bound (at most half the runs reached the target) and the median
    CPU seconds."""
    records = current(records)
    column = density_column(records)
    rows = []
    for estimator, value in sorted({(r["estimator"], r["density_value"]) for r in records}):
        runs = [r for r in records if (r["estimator"], r["density_value"]) == (estimator, value)]
        steps = [steps_or_bound(r) for r in runs]
        reached = sum(r["steps_to_target"] is not None for r in runs)
        rows.append(
            {
                "estimator": estimator,
                column: value,
                "rho": runs[0]["rho"],
                "runs": len(runs),
                "reached": reached,
                "median_steps": float(np.median(steps)),
                "median_is_lower_bound": 2 * reached <= len(runs),
                "min_steps": int(min(steps)),
                "max_steps": int(max(steps)),
                "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in runs])),
            }
        )
    return rows


def dilution_fits(table: Iterable[Row]) -> dict[str, Row]:
    """Per estimator with at least two density values in ``table`` (:func:`dilution_table`):
    the least-squares slope of log median steps against log rho, its R^2, and how many of the
    medians fitted are lower bounds (``censored_cells``: the slope is then biased). Where every
    median is a lower bound the fit is ``"censored"`` (``slope`` and ``r2`` ``None``): a line
    through bounds alone measures the budget, not the method."""
    table = list(table)
    fits = {}
    for estimator in sorted({r["estimator"] for r in table}):
        mine = [r for r in table if r["estimator"] == estimator]
        if len(mine) < 2:
            continue
        censored = sum(r["median_is_lower_bound"] for r in mine)
        if censored == len(mine):
            fits[estimator] = {"slope": None, "r2": None, "censored_cells": censored}
            fits[estimator]["fit"] = "censored"
            continue
        slope, _, r2 = snr.fit_loglog([r["rho"] for r in mine], [r["median_steps"] for r in mine])
        fits[estimator] = {"slope": slope, "r2": r2, "censored_cells": censored}
    return fits


def dilution_summary(records: Iterable[Row]) -> Row:
    """The env, target and step budget of the runs, their number, the fits of
    :func:`dilution_fits` and the total CPU seconds."""
    records = current(records)
    first = records[0]
    return {
        "env_id": first["env_id"],
        "density_kwarg": first["density_kwarg"],
        "target": first["target"],
        "steps": first["steps"],
        "runs": len(records),
        "slope_log_steps_vs_log_rho": dilution_fits(dilution_table(records)),
        "total_cpu_seconds": float(sum(r["cpu_seconds"] for r in records)),
    }


# ------------------------------------------------------------------------------- snr
SNR_COLUMNS = (
    "env_id",
    "episodes",
    "group_size",
    "warm_start_steps",
    "dim",
    "num_layers",
    "seed",
    "density_value",  # named by the env's keyword in the table
    "rho",
    "parameters",
    "J",
    "canonical_mass_min",
    "canonical_mass_mean",
    "logit_gradient_error",
    "parameter_gradient_error",
    "parameter_gradient_norm",
    "ratio",
    "ratio_low",
    "ratio_high",
    "tabular_ratio",
    "cpu_seconds",
)
"""The columns of ``snr.csv`` before the estimators' (:data:`~.records.ESTIMATE_FIELDS`)."""

DILUTE_RHO = 0.25
"""The dilute end of the SNR fits (``rho <= DILUTE_RHO``), where the law's slope is -1/2."""


def snr_rows(records: Iterable[Row]) -> list[Row]:
    """One row per density value (``snr.csv``), densest first: the columns of
    :data:`SNR_COLUMNS` (the density named by its keyword), then each estimator's."""
    records = sorted(current(records), key=lambda r: -r["rho"])
    column = density_column(records)
    rows = []
    for r in records:
        row = {column if c == "density_value" else c: r.get(c) for c in SNR_COLUMNS}
        for name in r["estimators"]:
            row.update({f.format(name): r[f.format(name)] for f in ESTIMATE_FIELDS})
        rows.append(row)
    return rows


def loglog_slope(rows: list[Row], y: str) -> float | None:
    """The slope of log ``y`` against log rho over ``rows`` (``None``: fewer than two)."""
    if len(rows) < 2:
        return None
    return snr.fit_loglog([r["rho"] for r in rows], [r[y] for r in rows])[0]


def snr_summary(records: Iterable[Row]) -> Row:
    """The fitted slopes of log SNR ratio against log rho, the LM's (with R^2) and the tabular
    closed form's, over all density values and over the dilute end (``rho <= 0.25``); the
    settings, the largest gradient errors (the exactness checks) and the total CPU seconds."""
    rows = sorted(current(records), key=lambda r: -r["rho"])
    first = rows[0]
    slope, _, r2 = snr.fit_loglog([r["rho"] for r in rows], [r["ratio"] for r in rows])
    dilute = [r for r in rows if r["rho"] <= DILUTE_RHO]
    return {
        "env_id": first["env_id"],
        "density_kwarg": first["density_kwarg"],
        "parameters": first["parameters"],
        "estimators": first["estimators"],
        "ratio_of": ["oracle", "trajectory_exact"],
        "slope": slope,
        "r2": r2,
        "tabular_slope": loglog_slope(rows, "tabular_ratio"),
        "slope_rho_at_most_0.25": loglog_slope(dilute, "ratio"),
        "tabular_slope_rho_at_most_0.25": loglog_slope(dilute, "tabular_ratio"),
        "warm_start_steps": first["warm_start_steps"],
        "episodes": first["episodes"],
        "max_logit_gradient_error": max(r["logit_gradient_error"] for r in rows),
        "max_parameter_gradient_error": max(r["parameter_gradient_error"] for r in rows),
        "cpu_seconds": float(sum(r["cpu_seconds"] for r in rows)),
    }


def snr_table(records: Iterable[Row], estimators: list[str]) -> list[Row]:
    """The printed table: per density value (densest first) the ratio, the closed form and
    each of ``estimators``' SNR and relative bias."""
    columns = ["rho", "J", "ratio", "ratio_low", "ratio_high", "tabular_ratio"]
    columns += [f"snr_{n}" for n in estimators] + [f"{n}_relative_bias" for n in estimators]
    records = current(records)
    density = density_column(records)
    return [{density: r[density], **{c: r[c] for c in columns}} for r in snr_rows(records)]
