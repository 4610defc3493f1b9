"""The LM experiments' records and analysis (baselines.experiments.lm.records, .analysis) on
small hand-written tables whose answers are known: steps to target with censored runs, the
log-log slopes on exact power laws, the learning-curve rows; old rows read as current records,
the files unchanged; no training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from baselines import commands
from baselines.experiments.lm import analysis, dilution, exact_snr, train
from baselines.experiments.lm.records import LMRunRecord, SNRRecord, density_of, upgrade
from baselines.lib.results import ResultsFile

ESTIMATORS = ["oracle", "trajectory_exact"]


def run_row(
    estimator: str = "oracle",
    length: int = 3,
    seed: int = 0,
    reached: int | None = 2,
    steps: int = 10,
    cpu: float = 1.0,
) -> dict:
    """A run's row as ``lm train`` writes it: the curve stops at the step that reached."""
    run = reached if reached is not None else steps
    curve = [
        {"step": s, "success": 0.5, "exact_success": 0.5, "cpu_seconds": cpu * s / run}
        for s in range(1, run + 1)
    ]
    return LMRunRecord(
        density_kwarg="routine_length",
        density_value=length,
        rho=1 / (1 + length),
        env_id="DilutedDoors-v1",
        env_kwargs={"num_floors": 1, "routine_length": length},
        estimator=estimator,
        seed=seed,
        steps=steps,
        target=0.8,
        parameters=1000,
        steps_run=run,
        cpu_seconds=cpu,
        warm_start_cpu_seconds=0.5,
        curve=curve,
        steps_to_target=reached,
        initial_exact_success=1 / 3,
        final_exact_success=0.9 if reached is not None else 0.4,
        extra={"learning_rate": 1e-3, "initial_canonical_mass": 0.95},
    ).row()


def snr_row(length: int, ratio: float, tabular: float) -> dict:
    rho = 1 / (1 + length)
    estimates = {}
    for name in ESTIMATORS:
        estimates.update(
            {
                f"snr_{name}": 1.0,
                f"snr_{name}_low": 0.9,
                f"snr_{name}_high": 1.1,
                f"{name}_relative_bias": 0.0,
                f"{name}_cosine": 1.0,
            }
        )
    return SNRRecord(
        density_kwarg="routine_length",
        density_value=length,
        rho=rho,
        env_id="DilutedDoors-v1",
        env_kwargs={"num_floors": 1, "routine_length": length},
        estimators=ESTIMATORS,
        episodes=800,
        group_size=8,
        warm_start_steps=10,
        dim=16,
        num_layers=2,
        seed=0,
        parameters=1000,
        J=1 / 3,
        ratio=ratio,
        ratio_low=ratio * 0.9,
        ratio_high=ratio * 1.1,
        tabular_ratio=tabular,
        logit_gradient_error=1e-17 * length,
        parameter_gradient_error=1e-7,
        cpu_seconds=2.0,
        extra={**estimates, "canonical_mass_min": 0.9, "parameter_gradient_norm": 0.1},
    ).row()


# ----------------------------------------------------------------------- dilution
def dilution_records() -> list[dict]:
    """L = 1: oracle reaches in 2, 4, 6 steps; trajectory_mc in 3, and twice not in 10.
    L = 3: oracle in 4, 8, 12; trajectory_mc never in 10."""
    rows = []
    for seed, (o1, t1, o3) in enumerate([(2, 3, 4), (4, None, 8), (6, None, 12)]):
        rows.append(run_row("oracle", 1, seed, o1))
        rows.append(run_row("trajectory_mc", 1, seed, t1))
        rows.append(run_row("oracle", 3, seed, o3, steps=20))
        rows.append(run_row("trajectory_mc", 3, seed, None))
    return rows


def test_dilution_table_counts_censored_runs_as_bounds() -> None:
    table = {
        (r["estimator"], r["routine_length"]): r
        for r in analysis.dilution_table(dilution_records())
    }
    assert list(table) == sorted(table)  # sorted by estimator, then density
    oracle = table[("oracle", 1)]
    assert (oracle["median_steps"], oracle["min_steps"], oracle["max_steps"]) == (4.0, 2, 6)
    assert (oracle["reached"], oracle["runs"], oracle["median_is_lower_bound"]) == (3, 3, False)
    assert oracle["rho"] == 0.5 and oracle["median_cpu_seconds"] == 1.0
    mc = table[("trajectory_mc", 1)]  # 3, then censored at 10 twice: the median is a bound
    assert (mc["reached"], mc["median_steps"], mc["max_steps"]) == (1, 10.0, 10)
    assert mc["median_is_lower_bound"] is True
    never = table[("trajectory_mc", 3)]
    assert (never["reached"], never["median_steps"], never["median_is_lower_bound"]) == (
        0,
        10.0,
        True,
    )
    even = analysis.dilution_table([run_row(seed=0, reached=2), run_row(seed=1, reached=None)])
    assert even[0]["median_steps"] == 6.0 and even[0]["median_is_lower_bound"] is True


def test_dilution_fit_is_the_power_law_of_exact_medians() -> None:
    """Oracle medians 4 at rho 1/2 and 8 at rho 1/4: steps = 2 / rho, slope -1 exactly."""
    summary = analysis.dilution_summary(dilution_records())
    fits = summary["slope_log_steps_vs_log_rho"]
    assert fits["oracle"]["slope"] == pytest.approx(-1.0, abs=1e-12)
    assert fits["oracle"]["r2"] == pytest.approx(1.0)
    assert fits["oracle"]["censored_cells"] == 0
    # Resampling 3 seeds, each cell's median is its least, middle or largest value with
    # probabilities 7/27, 13/27, 7/27; the two cells' extremes together (7/27)^2 = 6.7 % > 2.5 %
    # each way, so the percentile interval ends exactly at slopes -1 -/+ log2(3).
    assert fits["oracle"]["slope_low"] == pytest.approx(-1 - np.log2(3), abs=1e-9)
    assert fits["oracle"]["slope_high"] == pytest.approx(-1 + np.log2(3), abs=1e-9)
    assert fits["trajectory_mc"]["censored_cells"] == 2  # every median a bound: no slope
    assert fits["trajectory_mc"]["fit"] == "censored" and fits["trajectory_mc"]["slope"] is None
    assert fits["trajectory_mc"]["slope_low"] is None
    assert summary["runs"] == 12 and summary["total_cpu_seconds"] == 12.0
    assert summary["density_kwarg"] == "routine_length" and summary["steps"] == 10
    runs = analysis.dilution_runs(dilution_records())
    assert list(runs[1]) == [
        "estimator",
        "routine_length",
        "rho",
        "seed",
        "steps_to_target",
        "steps_run",
        "final_exact_success",
        "cpu_seconds",
    ]
    assert runs[3]["steps_to_target"] is None and runs[3]["steps_run"] == 10


def test_the_density_column_is_named_by_the_envs_keyword() -> None:
    rows = [{**r, "density_kwarg": "corridor_length"} for r in dilution_records()]
    assert "corridor_length" in analysis.dilution_table(rows)[0]
    mixed = [*dilution_records()[:1], *rows[1:]]  # two keywords: the neutral name
    assert "density_value" in analysis.dilution_runs(mixed)[0]


# -------------------------------------------------------------------------- train
def test_curve_rows_and_train_summary() -> None:
    records = [run_row(seed=0, reached=2, cpu=2.0), run_row(seed=1, reached=None, steps=3)]
    rows = analysis.curve_rows(records)
    assert [(r["seed"], r["step"]) for r in rows] == [
        (0, 0),
        (0, 1),
        (0, 2),
        *[(1, s) for s in range(4)],
    ]
    assert rows[0]["exact_success"] == pytest.approx(1 / 3) and rows[0]["canonical_mass"] == 0.95
    assert rows[0]["total_cpu_seconds"] == 0.5  # the warm start
    assert rows[2]["total_cpu_seconds"] == pytest.approx(2.5)  # 2 s of GRPO after it
    assert set(rows[1]) <= set(analysis.CURVE_COLUMNS)
    summary = analysis.train_summary(records)
    assert summary["reached"] == "1/2" and summary["steps_to_target"] == [2, None]
    assert summary["median_cpu_seconds"] == 1.5 and summary["cpu_seconds"] == [2.0, 1.0]
    assert (summary["density_kwarg"], summary["density_value"], summary["rho"]) == (
        "routine_length",
        3,
        0.25,
    )
    assert analysis.train_table(records)[1] == {
        "seed": 1,
        "steps_to_target": None,
        "final_exact_success": 0.4,
        "final_sampled_success": None,
        "cpu_seconds": 1.0,
    }


# ---------------------------------------------------------------------------- snr
def test_snr_fits_are_the_slopes_of_exact_power_laws() -> None:
    """ratio = 2 rho^-1/2, tabular = rho^-1 over rho in {1, 1/2, 1/4, 1/8}; the dilute end
    (rho <= 1/4) keeps its slopes."""
    lengths = [3, 0, 7, 1]  # out of order: the rows come densest first
    records = [snr_row(n, 2 * (1 + n) ** 0.5, 1.0 + n) for n in lengths]
    summary = analysis.snr_summary(records)
    assert summary["slope"] == pytest.approx(-0.5, abs=1e-12)
    assert summary["r2"] == pytest.approx(1.0)
    assert summary["tabular_slope"] == pytest.approx(-1.0, abs=1e-12)
    assert summary["slope_rho_at_most_0.25"] == pytest.approx(-0.5, abs=1e-12)
    assert summary["tabular_slope_rho_at_most_0.25"] == pytest.approx(-1.0, abs=1e-12)
    assert summary["max_logit_gradient_error"] == pytest.approx(7e-17)
    assert summary["cpu_seconds"] == 8.0 and summary["density_kwarg"] == "routine_length"
    rows = analysis.snr_rows(records)
    assert [r["routine_length"] for r in rows] == [0, 1, 3, 7]
    assert "density_value" not in rows[0] and "key" not in rows[0]
    assert list(rows[0])[-5:] == [
        "snr_trajectory_exact",
        "snr_trajectory_exact_low",
        "snr_trajectory_exact_high",
        "trajectory_exact_relative_bias",
        "trajectory_exact_cosine",
    ]
    table = analysis.snr_table(records, ESTIMATORS)
    assert list(table[0])[:3] == ["routine_length", "rho", "J"]
    one_dilute = analysis.snr_summary(records[1:2] + records[3:])  # rho 1 and 1/2 only
    assert one_dilute["slope_rho_at_most_0.25"] is None


# -------------------------------------------------------------- records and old rows
def old_run_row() -> dict:
    """A run's row as ``lm train`` wrote it before the density fields."""
    row = run_row(length=3)
    return {k: v for k, v in row.items() if k not in ("density_kwarg", "density_value")}


def test_old_rows_read_as_current_records(tmp_path: Path) -> None:
    old_run = {"key": "a", **old_run_row()}
    new = upgrade(old_run)
    assert (new["density_kwarg"], new["density_value"]) == ("routine_length", 3)
    old_snr = {"key": "b", **snr_row(7, 4.0, 8.0)}
    old_snr["routine_length"] = old_snr.pop("density_value")
    del old_snr["density_kwarg"]
    assert upgrade(old_snr)["density_value"] == 7 and "routine_length" not in upgrade(old_snr)
    record = LMRunRecord.from_row(old_run)
    assert record.density_value == 3 and record.extra["key"] == "a"
    assert record.row() == new  # the dataclass holds the whole row
    for cls, row in ((LMRunRecord, old_run), (SNRRecord, old_snr)):
        path = tmp_path / f"{cls.__name__}.jsonl"
        text = json.dumps(row) + "\n"
        path.write_text(text)
        schema = {"key": "str", **cls.schema()}
        assert ResultsFile(path, schema, cls.check).read(report=lambda m: None) == []
        (read,) = ResultsFile(path, schema, cls.check, upgrade).read()
        assert read["density_kwarg"] == "routine_length" and path.read_text() == text
    # the analysis reads old rows as the new ones
    assert analysis.dilution_table([old_run]) == analysis.dilution_table([new])
    assert analysis.snr_rows([old_snr]) == analysis.snr_rows([upgrade(old_snr)])


def test_density_of_reads_the_registry() -> None:
    assert density_of("DilutedDoors-v1", {"routine_length": 4}) == ("routine_length", 4)
    assert density_of("RoutineGrid-v0", {}) == ("corridor_length", 5)  # the entry's default
    with pytest.raises(ValueError, match="--env-id"):
        density_of("NoSuchEnv-v0", {})
    assert upgrade({"env_id": "NoSuchEnv-v0", "env_kwargs": {}}) == {
        "env_id": "NoSuchEnv-v0",
        "env_kwargs": {},
    }


def test_record_checks() -> None:
    row = run_row(reached=2)
    LMRunRecord.check(row)
    with pytest.raises(ValueError, match="curve rows"):
        LMRunRecord.check({**row, "steps_run": 3})
    with pytest.raises(ValueError, match="steps_to_target"):
        LMRunRecord.check({**row, "steps_to_target": 5})
    snr = snr_row(1, 2.0, 2.0)
    SNRRecord.check(snr)
    with pytest.raises(ValueError, match="oracle_cosine"):
        SNRRecord.check({k: v for k, v in snr.items() if k != "oracle_cosine"})
    assert {"density_kwarg", "density_value", "rho", "curve"} <= set(LMRunRecord.schema())
    assert "steps_to_target" not in LMRunRecord.schema()  # None when censored
    assert SNRRecord.unit == "length"


# ------------------------------------------------------------------ plans from the tree
def test_plans_set_the_registered_density_keyword() -> None:
    settings = commands.settings_of(
        "lm dilution", ["--routine-lengths", "1", "3", "--seeds", "0", "--estimators", "oracle"]
    )
    jobs = dilution.plan(settings)
    assert [j["env_kwargs"]["routine_length"] for j in jobs] == [1, 3]
    assert "density_kwarg" not in jobs[0]  # the job (and its key) as before
    snr_settings = commands.settings_of("lm snr", ["--routine-lengths", "0", "2"])
    assert [j["env_kwargs"]["routine_length"] for j in exact_snr.plan(snr_settings)] == [0, 2]
    bad = commands.settings_of("lm train", ["--env-id", "NoSuchEnv-v0"])
    with pytest.raises(ValueError, match="--env-id NoSuchEnv-v0"):
        train.plan(bad)
