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
at most half reached the target is itself only a lower bound (``median_is_lower_bound``), and
a cell where no run reached it is ``"censored"``: never printed as a measurement
(:func:`format_steps`).

Intervals are percentile bootstraps over the seeds (``scipy.stats.bootstrap``,
:data:`BOOTSTRAP_RESAMPLES` resamples, random state :data:`BOOTSTRAP_SEED`, 95 %).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any

import numpy as np

from baselines.experiments.lm.records import ESTIMATE_FIELDS, upgrade
from baselines.lib.curves import density_column
from routine_envs import snr

Row = dict[str, Any]

BOOTSTRAP_RESAMPLES = 9999
"""Resamples of every bootstrap interval."""
BOOTSTRAP_SEED = 0
"""Random state of every bootstrap interval (so the tables are a function of the records)."""
CONFIDENCE = 0.95


def bootstrap_interval(
    statistic: Any, *samples: Sequence[float], seed: int = BOOTSTRAP_SEED
) -> tuple[float, float, float]:
    """``statistic(*samples)`` and its 95 % percentile-bootstrap interval over the samples
    (each resampled on its own: independent runs). Samples without spread give a zero-width
    interval (the bootstrap distribution is a point); a sample of one value likewise."""
    from scipy import stats

    arrays = [np.asarray(x, dtype=float) for x in samples]
    value = float(statistic(*arrays))
    if all(len(a) < 2 or np.all(a == a[0]) for a in arrays):
        return value, value, value
    result = stats.bootstrap(
        tuple(arrays),
        lambda *xs: statistic(*xs),
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=False,
        paired=False,
        random_state=np.random.default_rng(seed),
    )
    ci = result.confidence_interval
    return value, float(ci.low), float(ci.high)


def median_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """``median(a) / median(b)``."""
    return float(np.median(a) / np.median(b))


def format_steps(row: Row) -> str:
    """A cell of steps to target as printed: ``"censored"`` when no run reached the target,
    ``">= m"`` when the median is only a lower bound (at most half reached), else ``"m (lo-hi)"``
    with ``">= budget"`` as the upper end when the interval reaches censored runs; then the
    runs that reached the target (``k/n``)."""
    reached, runs, budget = row["reached"], row["runs"], row["budget"]
    if reached == 0:
        return f"censored (0/{runs} reached in {budget})"
    if row["median_is_lower_bound"]:
        return f">= {row['median_steps']:g} ({reached}/{runs} reached)"
    high = row["median_high"]
    top = f">= {budget}" if high >= budget and reached < runs else f"{high:g}"
    return f"{row['median_steps']:g} ({row['median_low']:g} to {top}; {reached}/{runs})"


def format_ratio(row: Row) -> str:
    """A ratio of median steps to the oracle's as printed: ``"censored"`` when the cell or the
    oracle's has no measured median, ``">= r"`` when only the cell's median is a bound (then the
    ratio is one too), else ``"r (lo-hi)"``."""
    ratio = row.get("ratio_to_oracle")
    if ratio is None:
        return "censored"
    if row["median_is_lower_bound"]:
        return f">= {ratio:.2f}"
    return f"{ratio:.2f} ({row['ratio_low']:.2f}-{row['ratio_high']:.2f})"


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
    "sampled_success",
    "sampled_success_low",
    "sampled_success_high",
    "sampled_episodes",
    "sampled_invalid_fraction",
)
"""The columns of ``curve.csv``: ``exact_success`` is the canonical policy table's (the model
renormalised over canonical replies) on the exact model; ``sampled_success`` is success as
the model samples (episodes played at its temperature, replies read by the env as written;
Clopper-Pearson interval), every few steps."""


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
                **(r.get("initial_sampled") or {}),
            }
        )
        for row in r["curve"]:
            full = {c: row.get(c) for c in CURVE_COLUMNS if c in row}
            full["seed"] = r["seed"]
            full["total_cpu_seconds"] = row["cpu_seconds"] + r["warm_start_cpu_seconds"]
            rows.append(full)
    return rows


def curve_band(rows: Iterable[Row], column: str) -> list[Row]:
    """The mean over seeds of ``column`` at every step where it was measured, with its
    bootstrap interval (:func:`bootstrap_interval`): ``rows`` are :func:`curve_rows`' (step 0
    included). A run that stopped (it reached the target) keeps its last value at later steps
    (its model no longer changes); a step counts the runs measured at or before it."""
    by_seed: dict[Any, dict[int, float]] = {}
    for r in rows:
        if r.get(column) is not None:
            by_seed.setdefault(r["seed"], {})[int(r["step"])] = float(r[column])
    steps = sorted({s for values in by_seed.values() for s in values})
    band = []
    for step in steps:
        values = []
        for mine in by_seed.values():
            known = [s for s in mine if s <= step]
            if known:
                values.append(mine[max(known)])
        mean, low, high = bootstrap_interval(np.mean, values)
        band.append(
            {
                "step": step,
                "column": column,
                "runs": len(values),
                "mean": mean,
                "low": low,
                "high": high,
            }
        )
    return band


TRAIN_TABLE_COLUMNS = (
    "seed",
    "steps_to_target",
    "final_exact_success",
    "final_sampled_success",
    "cpu_seconds",
)


def train_table(records: Iterable[Row]) -> list[Row]:
    """One row per run: its seed, steps to target (``None``: not reached), final exact success
    (canonical table), final success as sampled and CPU seconds."""
    return [{c: r.get(c) for c in TRAIN_TABLE_COLUMNS} for r in records]


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
        **({"chance": first["chance"]} if first.get("chance") is not None else {}),
        "estimator": first["estimator"],
        "target": first["target"],
        "parameters": first["parameters"],
        "seeds": [r["seed"] for r in records],
        "reached": f"{len(reached)}/{len(records)}",
        "steps_to_target": [r["steps_to_target"] for r in records],
        "initial_exact_success": [r["initial_exact_success"] for r in records],
        "final_exact_success": [r["final_exact_success"] for r in records],
        "final_sampled_success": [r.get("final_sampled_success") for r in records],
        "steps_to_target_cell": format_steps(steps_cell(records)),
        "cpu_seconds": [round(r["cpu_seconds"], 1) for r in records],
        "median_cpu_seconds": float(np.median([r["cpu_seconds"] for r in records])),
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "random_state": BOOTSTRAP_SEED},
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


def steps_cell(runs: Sequence[Row]) -> Row:
    """Steps to target of one cell's runs (censored runs counted as their ``steps``): runs,
    how many reached the target and how many did not (``failed``), the budget, the median
    with its bootstrap interval (:func:`bootstrap_interval`), whether the median is only a
    lower bound (at most half reached), least and most; ``display`` as :func:`format_steps`."""
    steps = [steps_or_bound(r) for r in runs]
    reached = sum(r["steps_to_target"] is not None for r in runs)
    median, low, high = bootstrap_interval(np.median, steps)
    row = {
        "runs": len(runs),
        "reached": reached,
        "failed": len(runs) - reached,
        "budget": int(max(r["steps"] for r in runs)),
        "median_steps": median,
        "median_low": low,
        "median_high": high,
        "median_is_lower_bound": 2 * reached <= len(runs),
        "min_steps": int(min(steps)),
        "max_steps": int(max(steps)),
    }
    row["display"] = format_steps(row)
    return row


def dilution_table(records: Iterable[Row], reference: str = "oracle") -> list[Row]:
    """Per (estimator, density value), sorted: :func:`steps_cell`'s columns, the median CPU
    seconds, and the ratio of the median steps to ``reference``'s at the same density with its
    bootstrap interval (both cells resampled; ``None`` where either median is not measured:
    the reference's a bound, or no run of the cell reached), ``ratio_display`` as
    :func:`format_ratio`."""
    records = current(records)
    column = density_column(records)
    cells: dict[tuple[str, Any], list[Row]] = {}
    for r in records:
        cells.setdefault((r["estimator"], r["density_value"]), []).append(r)
    rows = []
    for (estimator, value), runs in sorted(cells.items()):
        row = {"estimator": estimator, column: value, "rho": runs[0]["rho"], **steps_cell(runs)}
        row["median_cpu_seconds"] = float(np.median([r["cpu_seconds"] for r in runs]))
        row.update(ratio_to_oracle=None, ratio_low=None, ratio_high=None)
        ref = cells.get((reference, value))
        if (
            ref is not None
            and row["reached"]
            and 2 * sum(r["steps_to_target"] is not None for r in ref) > len(ref)
        ):
            ratio, low, high = bootstrap_interval(
                median_ratio, [steps_or_bound(r) for r in runs], [steps_or_bound(r) for r in ref]
            )
            row.update(ratio_to_oracle=ratio, ratio_low=low, ratio_high=high)
        row["ratio_display"] = format_ratio(row)
        rows.append(row)
    return rows


def dilution_fits(records: Iterable[Row]) -> dict[str, Row]:
    """Per estimator with at least two density values: the least-squares slope of log median
    steps (:func:`dilution_table`) against log rho, its R^2, its 95 % bootstrap interval
    (``slope_low``, ``slope_high``: every density's runs resampled on their own, censored runs
    as their ``steps``) and how many of the medians fitted are lower bounds (``censored_cells``:
    the slope is then biased). Where every median is a lower bound the fit is ``"censored"``
    (``slope``, ``r2`` and the interval ``None``): a line through bounds alone measures the
    budget, not the method."""
    records = current(records)
    table = dilution_table(records)
    fits = {}
    for estimator in sorted({r["estimator"] for r in table}):
        mine = [r for r in table if r["estimator"] == estimator]
        if len(mine) < 2:
            continue
        censored = sum(r["median_is_lower_bound"] for r in mine)
        if censored == len(mine):
            fits[estimator] = {
                "slope": None,
                "r2": None,
                "slope_low": None,
                "slope_high": None,
                "censored_cells": censored,
                "fit": "censored",
            }
            continue
        rhos = [r["rho"] for r in mine]
        slope, _, r2 = snr.fit_loglog(rhos, [r["median_steps"] for r in mine])
        samples = [
            [steps_or_bound(r) for r in records if r["estimator"] == estimator and r["rho"] == rho]
            for rho in rhos
        ]
        _, low, high = bootstrap_interval(partial(median_slope, np.log(rhos)), *samples)
        fits[estimator] = {
            "slope": slope,
            "r2": r2,
            "slope_low": low,
            "slope_high": high,
            "censored_cells": censored,
        }
    return fits


def median_slope(log_rho: np.ndarray, *cells: np.ndarray) -> float:
    """The least-squares slope of log median of each cell (one per density) against
    ``log_rho`` (shape ``(cells,)``)."""
    return float(np.polyfit(log_rho, np.log([np.median(c) for c in cells]), 1)[0])


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
        "slope_log_steps_vs_log_rho": dilution_fits(records),
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
    :data:`SNR_COLUMNS` (the density named by its keyword), ``noise`` (how the SNR's noise
    was measured: sampled, from ``episodes`` episodes; the gradient is exact), then each
    estimator's."""
    records = sorted(current(records), key=lambda r: -r["rho"])
    column = density_column(records)
    rows = []
    for r in records:
        row = {column if c == "density_value" else c: r.get(c) for c in SNR_COLUMNS}
        row["noise"] = f"sampled ({r['episodes']} episodes)"  # the gradient is exact
        if "ratio_exact" in r:  # measured with the exact noise of the ratio's two estimators
            row["noise"] += "; oracle and trajectory_exact also exact"
            row["ratio_exact"] = r["ratio_exact"]
            for name in EXACT_NOISE:
                row[f"snr_{name}_exact"] = r[f"snr_{name}_exact"]
        for name in r["estimators"]:
            row.update({f.format(name): r[f.format(name)] for f in ESTIMATE_FIELDS})
        rows.append(row)
    return rows


EXACT_NOISE = ("oracle", "trajectory_exact")
"""The estimators whose noise ``lm snr`` also computes exactly (:mod:`routine_envs.exact_noise`)."""


def loglog_slope(rows: list[Row], y: str) -> float | None:
    """The slope of log ``y`` against log rho over ``rows`` (``None``: fewer than two, or a row
    without ``y``)."""
    if len(rows) < 2 or any(r.get(y) is None for r in rows):
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
        "exact_slope": loglog_slope(rows, "ratio_exact"),
        "exact_slope_rho_at_most_0.25": loglog_slope(dilute, "ratio_exact"),
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
    columns = ["rho", "J", "ratio", "ratio_low", "ratio_high", "ratio_exact", "tabular_ratio"]
    columns += [f"snr_{n}" for n in estimators] + [f"{n}_relative_bias" for n in estimators]
    records = current(records)
    density = density_column(records)
    rows = snr_rows(records)
    if any("ratio_exact" not in r for r in rows):  # records made before the exact noise
        columns.remove("ratio_exact")
    return [{density: r[density], **{c: r[c] for c in columns}} for r in rows]
