"""Every experiment's analysis is a pure function of its records (and settings), checked on
small hand-written records whose answers are known, with no training: the comparison's and the
team sweep's tables (steps to target with censored runs as bounds, ratios to the baseline, IQM
across seeds), the turn-level methods' summary, the detector tables, the cost and backend
benchmarks' tables of measured rows and the demo's rho table. The tables are computed without
writing anything; the writing functions write what the combined analysis wrote."""

from __future__ import annotations

import copy
import csv
import json
from types import SimpleNamespace

import pytest

from baselines.experiments.bench_backends import analysis as backends_analysis
from baselines.experiments.bench_training import analysis as cost_analysis
from baselines.experiments.compare import analysis as compare_analysis
from baselines.experiments.demo import analysis as demo_analysis
from baselines.experiments.detectors import analysis as detectors_analysis
from baselines.experiments.multiagent import analysis as team_analysis
from baselines.lib import curves
from baselines.lib.sweeps import SweepArgs

GRID = [0, 100, 200, 300, 400]
STARTS = {0: 0.0, 1: 0.1, 2: 0.2, 3: 0.7}
"""Each seed's success at step 0: IQM 0.15 (the middle two), mean 0.25."""


def curve(reach: int | None, seed: int) -> list[float]:
    """A success curve that first reaches 0.9 exactly at ``reach`` (one of :data:`GRID`; no
    interpolation then), never when ``None``; it starts at the seed's :data:`STARTS`."""
    return [
        STARTS[seed] if t == 0 else (0.9 if reach is not None and t >= reach else 0.0) for t in GRID
    ]


def training_record(method: str, seed: int, value: int, reach: int | None, **extra) -> dict:
    """A training record (the fields of ``TrainingRecord`` the analysis reads)."""
    return {
        "key": f"{method}-{value}-{seed}",
        "method": method,
        "seed": seed,
        "density_kwarg": extra.pop("density_kwarg", "routine_length"),
        "density_value": value,
        "rho": 1 / (1 + value),
        "timesteps": list(GRID),
        "success": curve(reach, seed),
        "budget": GRID[-1],
        "target": 0.9,
        **extra,
    }


# Steps to target per (routine length, method), one per seed (None: censored, at 400).
SWEEP = {
    (1, "ppo"): [100, 100, 200, 200],  # mean 150, exact
    (1, "traj"): [200, 200, 200, 200],  # mean 200: ratio 4/3, exact
    (3, "ppo"): [100, 200, 300, None],  # mean 250, a lower bound
    (3, "traj"): [200, 200, 200, 200],  # ratio 200/250: an upper bound (the baseline censored)
    (7, "ppo"): [100, 100, 100, 100],  # mean 100
    (7, "traj"): [100, 100, 100, None],  # mean 175: ratio 1.75, a lower bound
    (15, "ppo"): [100, 100, 100, None],  # mean 175
    (15, "traj"): [None, None, None, None],  # no run reached: no mean, no ratio
}


def sweep_records(**extra) -> list[dict]:
    return [
        training_record(method, seed, value, reach, **extra)
        for (value, method), steps in SWEEP.items()
        for seed, reach in enumerate(steps)
    ]


def sweep_settings(out, statistic: str = "iqm") -> SweepArgs:
    return SweepArgs(
        methods=["ppo", "traj"], baseline="ppo", statistic=statistic, out=out, workers=1
    )


def files_under(path) -> list:
    return sorted(p.relative_to(path) for p in path.rglob("*")) if path.exists() else []


# ----------------------------------------------------------------------------- compare
@pytest.mark.parametrize("statistic, expected", [("iqm", 0.15), ("mean", 0.25)])
def test_compare_tables_are_a_pure_function_of_the_records(tmp_path, statistic, expected):
    records = sweep_records()
    before = copy.deepcopy(records)
    tables = compare_analysis.tables(records, sweep_settings(tmp_path / "out", statistic))
    assert records == before and files_under(tmp_path) == []  # nothing changed or written
    assert set(tables) == set(curves.TABLES)

    steps = {(r["routine_length"], r["method"]): r for r in tables["steps_to_target"]}
    for (value, method), reach in SWEEP.items():
        row = steps[(value, method)]
        filled = [400 if s is None else s for s in reach]
        censored = reach.count(None)
        assert (row["reached"], row["censored"], row["seeds"]) == (4 - censored, censored, 4)
        if censored == 4:  # the budget's mean would measure the budget: no number
            assert row["mean_steps"] is row["low"] is row["high"] is None
            assert row["mean_steps_is"] == "censored"
            continue
        assert row["mean_steps"] == pytest.approx(sum(filled) / 4), (value, method)
        assert row["mean_steps_is"] == ("lower bound" if censored else "exact")
        assert row["low"] <= row["mean_steps"] <= row["high"]
    assert steps[(7, "ppo")]["low"] == steps[(7, "ppo")]["high"] == 100  # identical seeds

    ratios = {r["routine_length"]: r for r in tables["ratio_to_turn_level"]}
    assert [r["method"] for r in ratios.values()] == ["traj"] * 4  # never the baseline itself
    expected_ratios = {
        1: (200 / 150, "exact", 0),
        3: (200 / 250, "upper bound", 1),
        7: (175 / 100, "lower bound", 1),
    }
    assert ratios[15]["ratio"] is None and ratios[15]["ratio_is"] == "censored"
    assert ratios[15]["censored"] == 5
    for value, (ratio, bound, censored) in expected_ratios.items():
        row = ratios[value]
        assert row["ratio"] == pytest.approx(ratio) and row["ratio_is"] == bound, value
        assert row["censored"] == censored and row["baseline"] == "ppo"
        assert row["low"] <= row["ratio"] <= row["high"]
    assert ratios[1]["low"] >= 1.0 and ratios[1]["high"] <= 2.0  # ppo's seeds resampled

    scores = {r["method"]: r for r in tables["summary_scores"]}
    assert scores["ppo"]["reached_share"] == 14 / 16 and scores["traj"]["reached_share"] == 11 / 16
    assert scores["ppo"]["runs"] == 16 and scores["ppo"]["routine_lengths"] == 4

    start = [r for r in tables["learning_curves"] if r["timesteps"] == 0 and r["method"] == "ppo"]
    assert [r["routine_length"] for r in start] == [1, 3, 7, 15]  # numeric order
    assert all(r[statistic] == pytest.approx(expected) and r["seeds"] == 4 for r in start)


def test_compare_writes_what_the_combined_analysis_wrote(tmp_path, capsys):
    records = sweep_records()
    settings = sweep_settings(tmp_path / "new")
    tables = compare_analysis.analyse(records, settings)
    out = capsys.readouterr().out
    assert ">= 250" in out and "<= 0.8" in out and ">= 1.75" in out  # bounds marked
    assert "2.286" not in out and "censored" in out  # the fully censored cell: no number
    assert f"wrote {settings.out}/" in out
    combined = curves.analyse(records, tmp_path / "old", "ppo", "iqm")
    assert tables == combined
    names = [p.name for p in files_under(tmp_path / "old")]
    assert names == [p.name for p in files_under(settings.out)] and len(names) == 7
    for name in names:
        assert (settings.out / name).read_bytes() == (tmp_path / "old" / name).read_bytes(), name


# ------------------------------------------------------------------------- turn_methods
def turn_record(setting: str, method: str, seed: int, success: list[float]) -> dict:
    return {
        "setting": setting,
        "method": method,
        "seed": seed,
        "budget": 200,
        "timesteps": [0, 100, 200],
        "success": success,
    }


def test_turn_methods_summary_counts_unreached_runs_at_infinity():
    records = [
        turn_record("A", "m1", 0, [0.0, 0.9, 1.0]),  # 100
        turn_record("A", "m1", 1, [0.0, 0.6, 1.0]),  # 100 + 0.3 / 0.4 * 100 = 175
        turn_record("A", "m1", 2, [0.0, 0.5, 0.5]),  # never
        turn_record("A", "m2", 0, [0.0, 0.1, 0.2]),
        turn_record("A", "m2", 1, [0.0, 0.1, 0.2]),
        turn_record("A", "m3", 0, [0.0, 0.9, 0.9]),  # 100
        turn_record("A", "m3", 1, [0.0, 0.0, 0.0]),  # never: the median of two is inf
        turn_record("B", "m1", 0, [0.95, 1.0, 1.0]),  # at once: 0
    ]
    runs = compare_analysis.turn_run_rows(records, 0.9)
    assert [r["steps_to_target"] for r in runs] == [
        100.0,
        pytest.approx(175.0),
        float("inf"),
        float("inf"),
        float("inf"),
        100.0,
        float("inf"),
        0.0,
    ]
    assert runs[2] == {
        "setting": "A",
        "method": "m1",
        "seed": 2,
        "budget": 200,
        "steps_to_target": float("inf"),
        "final_success": 0.5,
    }
    summary = compare_analysis.turn_summary(runs)
    assert [(r["setting"], r["method"]) for r in summary] == [
        ("A", "m1"),
        ("A", "m2"),
        ("A", "m3"),
        ("B", "m1"),
    ]
    m1, m2, m3, b = summary
    assert m1["reached"] == "2/3" and m1["mean steps (reached)"] == 138  # round(137.5)
    assert m1["median steps"] == 175 and m1["mean final success"] == 0.833
    assert m2["reached"] == "0/2" and m2["mean steps (reached)"] == "-"
    assert m2["median steps"] == "inf" and m2["mean final success"] == 0.2
    assert m3["reached"] == "1/2" and m3["mean steps (reached)"] == 100
    assert m3["median steps"] == "inf"  # half the runs never reached it
    assert b["reached"] == "1/1" and b["median steps"] == 0


# ----------------------------------------------------------------------------- team sweep
def test_team_tables_add_the_team_density_to_the_comparison(tmp_path, capsys):
    records = [
        {**r, "num_agents": 2, "team_rho": 2 * r["rho"] if r["density_value"] < 7 else 0.1}
        for r in sweep_records()
    ]
    settings = sweep_settings(tmp_path / "out")
    tables = team_analysis.tables(records, settings)
    assert files_under(tmp_path) == []
    assert tables["team"] == [
        {"routine_length": 1, "num_agents": 2, "rho": 0.5, "team_rho": 1.0},
        {"routine_length": 3, "num_agents": 2, "rho": 0.25, "team_rho": 0.5},
        {"routine_length": 7, "num_agents": 2, "rho": 0.125, "team_rho": 0.1},
        {"routine_length": 15, "num_agents": 2, "rho": 0.0625, "team_rho": 0.1},
    ]
    assert {k: v for k, v in tables.items() if k != "team"} == curves.sweep_tables(records)
    corridor = [{**r, "density_kwarg": "corridor_length"} for r in records]
    assert "corridor_length" in team_analysis.tables(corridor, settings)["team"][0]
    team_analysis.write(tables, records, settings)
    out = capsys.readouterr().out
    assert "team: 2 agents" in out
    assert "team rho = L=15: 0.1, L=1: 1, L=3: 0.5, L=7: 0.1" in out  # in text order, as before
    assert (settings.out / "steps_to_target.csv").exists()
    assert not (settings.out / "team.csv").exists()  # printed, not written (as before)


# ------------------------------------------------------------------------------ detectors
def detector_result(name: str, auc: float, setup: int = 0) -> dict:
    return {
        "detector": name,
        "auc": auc,
        "auc_low": auc - 0.1,
        "auc_high": min(auc + 0.1, 1.0),
        "ap": 0.5,
        "ap_low": 0.4,
        "ap_high": 0.6,
        "rho": 0.25,
        "rho_implied": 0.3,
        "rho_error": 0.05,
        "rho_error_low": 0.0,
        "rho_error_high": 0.1,
        "cost_per_step": 2.5 if setup else 0.0,
        "setup_steps": setup,
        "seconds": 0.1,
    }


def detector_record(value: int, policy: str) -> dict:
    return {
        "key": f"{value}{policy}",
        "env_id": "DilutedDoors-v1",
        "env_kwargs": {"num_floors": 2, "b": 1},
        "density_kwarg": "routine_length",
        "density_value": value,
        "rho": 1 / (1 + value),
        "policy": {"spec": policy},
        "detectors": ["annotations", "critic"],
        "results": [detector_result("annotations", 1.0), detector_result("critic", 0.8, 100)],
        "success_probability": 0.125,
    }


def test_detector_tables_are_a_pure_function_of_the_records_and_settings(tmp_path, capsys):
    from baselines.experiments.detectors.score import ScoreArgs

    policies = ["uniform", 'mixture{"eps": 0.3}']
    records = [detector_record(v, p) for v in (1, 3) for p in policies]
    settings = ScoreArgs(
        detectors=["annotations", "critic"], policies=policies, batches=2, out=tmp_path / "out"
    )
    tables = detectors_analysis.tables(records, settings)
    assert files_under(tmp_path) == []
    rows = tables["rows"]
    assert len(rows) == 8
    assert [(r["routine_length"], r["policy"], r["detector"]) for r in rows[:3]] == [
        (1, "uniform", "annotations"),
        (1, "uniform", "critic"),
        (1, 'mixture{"eps": 0.3}', "annotations"),
    ]
    assert rows[0]["env_kwargs"] == '{"b": 1, "num_floors": 2}'  # canonical JSON
    assert rows[1]["success_probability"] == 0.125 and rows[1]["auc"] == 0.8
    summary = tables["summary"]
    assert summary["policies"] == policies and summary["density_kwarg"] == "routine_length"
    assert summary["detectors"] == ["annotations", "critic"] and summary["batches"] == 2
    markdown = detectors_analysis.markdown_table(rows, "routine_length").splitlines()
    assert markdown[0].startswith("| routine_length | policy | rho | detector | AUC |")
    assert markdown[3] == (
        "| 1 | `uniform` | 0.250 | `critic` | 0.800 [0.700, 0.900] | 0.500 [0.400, 0.600] | "
        "0.050 [0.000, 0.100] | 2.5 (+100 setup) |"
    )
    assert markdown[2].endswith("| 0 |")  # no setup: none named
    settings.out.mkdir()
    detectors_analysis.write(tables, settings)
    assert (settings.out / "detectors.md").read_text() == "\n".join(markdown) + "\n"
    assert json.loads((settings.out / "summary.json").read_text()) == summary
    assert len((settings.out / "detectors.csv").read_text().splitlines()) == 9
    assert "routine_length" in capsys.readouterr().out.splitlines()[0]


# ------------------------------------------------------------------------- benchmarks
def test_training_cost_table_from_measurements():
    """Two interleaved rounds: medians, spreads, phase shares, and the SB3 ratio taken round by
    round (the rounds' loads differ: round 1 is twice as slow for both trainers, so each
    round's ratio is 10 while a ratio of pooled bests would not be)."""

    def m(trainer, method, runs, repeat, cpu, split, flops=None):
        row = {"trainer": trainer, "method": method, "runs": runs, "repeat": repeat,
               "cpu_per_step": cpu, "split": split}  # fmt: skip
        return row if flops is None else {**row, "update_flops": flops}

    measurements = [
        m("sb3", "ppo", 1, 0, 2e-4, {"rollout": 0.5e-4, "update": 1.5e-4}),
        m("batched", "ppo", 4, 0, 2e-5, {"setup": 0, "rollout": 5e-6, "evaluation": 0,
                                         "update": 1.5e-5}, 1e9),
        m("sb3", "ppo", 1, 1, 4e-4, {"rollout": 1e-4, "update": 3e-4}),
        m("batched", "ppo", 4, 1, 4e-5, {"setup": 0, "rollout": 1e-5, "evaluation": 0,
                                         "update": 3e-5}, 3e9),
    ]  # fmt: skip
    sb3, batched = cost_analysis.cost_table(measurements, peak=1e10)
    assert sb3["trainer"] == "sb3 PPO" and sb3["runs"] == 1
    assert sb3["cpu_s_per_1e6"] == pytest.approx(300.0)  # median of 200 and 400
    assert sb3["spread"] == pytest.approx(200 / 300)
    assert sb3["update_share"] == pytest.approx(0.75) and "setup_share" not in sb3
    assert batched["x_sb3"] == pytest.approx(10.0)
    assert (batched["x_sb3_low"], batched["x_sb3_high"]) == (pytest.approx(10), pytest.approx(10))
    assert batched["rollout_share"] == pytest.approx(0.25)
    assert batched["update_gflops"] == pytest.approx(2.0)  # median of 1 and 3
    assert batched["update_of_peak"] == pytest.approx(0.2)


def test_training_cost_table_gives_wall_steps_per_second_and_the_wall_ratio():
    """Wall time (what a device other than the CPU is measured in): steps per second of the
    whole batch, the median over rounds, and the ratio to SB3 round by round; rows measured
    without wall time have neither."""
    measurements = [
        {"trainer": "sb3", "method": "ppo", "runs": 1, "repeat": k, "cpu_per_step": 1e-4,
         "split": {}, "wall_per_step": w}
        for k, w in enumerate((1e-4, 3e-4))
    ] + [
        {"trainer": "batched", "method": "ppo", "runs": 8, "repeat": k, "cpu_per_step": 1e-5,
         "split": {}, "update_flops": 1e9, "wall_per_step": w}
        for k, w in enumerate((2e-6, 6e-6))
    ]  # fmt: skip
    sb3, batched = cost_analysis.cost_table(measurements, peak=1e10)
    assert sb3["steps_per_s"] == pytest.approx(1 / 2e-4)  # median of 1e-4 and 3e-4
    assert batched["steps_per_s"] == pytest.approx(1 / 4e-6)
    assert batched["wall_x_sb3"] == pytest.approx(50.0)  # 50 in both rounds
    no_wall = [{k: v for k, v in m.items() if k != "wall_per_step"} for m in measurements]
    assert all("steps_per_s" not in r and "wall_x_sb3" not in r
               for r in cost_analysis.cost_table(no_wall, peak=1e10))  # fmt: skip


def test_measured_costs_take_the_largest_batch_and_merge_into_the_file():
    rows = [
        {"trainer": "sb3 PPO", "method": "ppo", "runs": 1, "cpu_s_per_1e6": 80.0},
        {"trainer": "batched", "method": "ppo", "runs": 10, "cpu_s_per_1e6": 5.0},
        {"trainer": "batched", "method": "ppo", "runs": 40, "cpu_s_per_1e6": 3.0},
    ]
    rows = [{**r, "where": "E"} for r in rows]
    elsewhere = [{**r, "where": "F"} for r in rows]
    header = {"protocol": "rb2", "trainer": "batched", "measured": "now"}
    first = cost_analysis.measured_costs(rows, None, header)
    assert first == {**header, "batch_runs": 40, "seconds_per_step": {"ppo": {"E": 3e-06}}}
    later = {**header, "measured": "later"}
    merged = cost_analysis.measured_costs(elsewhere[:2], first, later)
    assert merged["seconds_per_step"] == {"ppo": {"E": 3e-06, "F": 5e-06}}
    assert merged["measured"] == "now; later" and merged["batch_runs"] == 10
    other = cost_analysis.measured_costs(elsewhere, {**first, "protocol": "rb1"}, header)
    assert other["seconds_per_step"] == {"ppo": {"F": 3e-06}}  # another protocol's: replaced
    settings = [
        {**rows[2], "where": "E{a}", "env_id": "E", "cpu_s_per_1e6": 1.0},
        {**rows[2], "where": "E{b}", "env_id": "E", "cpu_s_per_1e6": 2.0},
    ]
    per_setting = cost_analysis.measured_costs(settings, None, header)["seconds_per_step"]
    assert per_setting == {"ppo": {"E{a}": 1e-06, "E{b}": 2e-06, "E": 1.5e-06}}
    with pytest.raises(ValueError, match="no batched rows"):
        cost_analysis.measured_costs(rows[:1], None, header)


def test_backend_summary_from_measured_rows():
    walls = {("process", 1): 10.0, ("ray", 1): 11.5, ("process", 2): 5.0, ("ray", 2): 6.0}
    rows = [
        {"backend": b, "workers": w, "wall": wall, "records": ["a", "b"]}
        for (b, w), wall in walls.items()
    ]
    result = backends_analysis.summary(rows, ["process", "ray"], [1, 2])
    assert result["overhead"] == {
        "ray/process x1": pytest.approx(1.15),
        "ray/process x2": pytest.approx(1.2),
    }
    assert result["speedup"] == {"process x2": 2.0, "ray x2": pytest.approx(11.5 / 6)}
    assert result["same_records"] is True
    rows[-1]["records"] = ["a", "c"]
    assert backends_analysis.summary(rows, ["process", "ray"], [1, 2])["same_records"] is False
    alone = backends_analysis.summary(rows[2:3], ["process"], [2])
    assert alone == {"overhead": {}, "speedup": {}, "same_records": True}


def test_backend_summary_prints_the_ratios(capsys):
    result = {"overhead": {"ray/process x2": 1.2}, "speedup": {}, "same_records": False}
    settings = SimpleNamespace(
        runs=3, routine_length=2, budget_steps=100, backends=["process", "ray"], workers=[2]
    )
    backends_analysis.print_summary(result, settings)
    out = capsys.readouterr().out
    assert "overhead ray / process, 2 worker(s): 1.200x" in out
    assert "same records on every backend and worker count: NO" in out


# ------------------------------------------------------------------------------- the demo
def test_demo_rho_table_from_counts():
    counts = [
        {"routine_length": length, "reward": reward, "critical": critical, "steps": steps,
         "num_doors": 3, "num_floors": 3}
        for length, reward, critical, steps in (
            (0, "fraction", 30, 30),
            (0, "success", 13, 30),
            (3, "fraction", 30, 120),
            (3, "success", 13, 120),
        )
    ]  # fmt: skip
    rows = demo_analysis.rho_table(counts)
    assert rows == [
        {
            "routine_length": 0,
            "theory_1_over_1_plus_L": 1.0,
            "measured_rho_fraction": 1.0,
            "measured_rho_success": 13 / 30,
            "theory_success_uniform": pytest.approx(13 / 27),  # (1 + 1/3 + 1/9) / 3
        },
        {
            "routine_length": 3,
            "theory_1_over_1_plus_L": 0.25,
            "measured_rho_fraction": 0.25,
            "measured_rho_success": 13 / 120,
            "theory_success_uniform": pytest.approx(13 / 108),
        },
    ]
    assert len(demo_analysis.rho_table(counts[:2] * 2)) == 2  # a length given twice: two rows


def test_demo_measures_the_fraction_rho_exactly_and_prints_the_per_state_rho_law():
    from baselines.experiments.demo.sweep import DemoArgs, measure_rho

    rows = measure_rho(DemoArgs(episodes=3, routine_lengths=(0, 2)))
    assert [r["measured_rho_fraction"] for r in rows] == [1.0, pytest.approx(1 / 3)]
    assert all(r["measured_rho_success"] <= r["measured_rho_fraction"] for r in rows)
    lab = [
        {"param": p, "routine_length": 1, "rho": 0.5, "ratio": 2.0, "ratio_low": 1.5,
         "ratio_high": 2.5, "ratio_is": "measured", "theory_ratio": 2.1, "extra": 0}
        for p in ("per_state", "per_floor")
    ]  # fmt: skip
    assert demo_analysis.rho_law_rows(lab) == [
        {k: lab[0][k] for k in demo_analysis.RHO_LAW_COLUMNS}
    ]


def test_the_rho_law_with_an_unresolved_trajectory_snr_gives_a_bound_not_a_crash(tmp_path):
    """At 400 episodes the per-floor trajectory SNR at L = 30 is estimated as 0 (its squared
    mean gradient, estimated without bias, is not positive): no ratio exists, and the lab
    (behind `demo --snr-episodes 400`) raised KeyError. Now that setting says so (with a lower
    bound where the trajectory SNR's interval has a positive upper end) and is left out of the
    fit."""
    import json

    from baselines.commands import main

    out = tmp_path / "lab"
    main(["snr_lab", "rho-law", "--episodes", "400", "--routine-lengths", "0", "1", "3", "30",
          "--params", "per_floor", "--out", str(out), "--workers", "1"])  # fmt: skip
    text = (out / "rho_law/rho_law.csv").read_text().splitlines()
    rows = {int(r["routine_length"]): r for r in csv.DictReader(text)}
    # here the trajectory SNR's upper end is 0 too, so not even a bound exists
    assert rows[30]["ratio"] == rows[30]["ratio_low"] == rows[30]["ratio_high"] == ""
    assert (
        rows[30]["ratio_is"] == "none (trajectory_exact's SNR not resolved from 0 at 400 episodes)"
    )
    assert {rows[n]["ratio_is"] for n in (0, 1, 3)} == {"measured"}
    summary = json.loads((out / "rho_law/summary.json").read_text())
    assert summary["fits"]["per_floor"]["points"] == summary["fits"]["per_floor"]["settings"] == 3
    assert [u["rho"] for u in summary["unresolved"]] == [pytest.approx(1 / 31)]
    assert (out / "rho_law/rho_law.png").stat().st_size > 0


def test_the_backends_compare_records_without_what_they_measure_of_the_machine():
    """Two backends' records of one run differ in wall and CPU seconds only: the same records
    (the CPU seconds were compared, so every report said NO)."""
    from baselines.experiments.bench_backends.sweep import comparable

    a = {"key": "k", "success": [0.5], "wall_time": 1.0, "cpu_time": 0.9}
    b = {**a, "wall_time": 2.0, "cpu_time": 1.7}
    assert comparable([a]) == comparable([b])
    assert comparable([a]) != comparable([{**b, "success": [0.6]}])
