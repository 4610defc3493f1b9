"""Results you can trust: run keys that cover every setting, no double counting, no NaN, no
lost work, schedules that are what the record says (fast: no test trains for long)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import gymnasium as gym
import pytest

from baselines import commands
from baselines.experiments.compare import sweep as compare
from baselines.experiments.snr_lab import records as lab_records
from baselines.experiments.snr_lab import sweep as snr_lab
from baselines.lib import runs
from routine_envs import credit

ROOT = Path(__file__).resolve().parents[1]


def fake_run(job):
    """A stand-in for a training run: the job (a run's row) plus a flat success curve (no
    training)."""
    job = job.row() if hasattr(job, "row") else job
    points = job["budget"] // job["eval_every"] + 1
    return {
        **job,
        "timesteps": [i * job["eval_every"] for i in range(points)],
        "success": [0.5] * points,
        "steps_to_target": None,
        "privileged_fields": [],  # what a run records (a row without reads with its method's)
        "wall_time": 0.0,
        "hyperparameters": job.get("hyperparameters", {}),
    }


def tiny(out, **changes):
    settings = dict(
        routine_lengths=[1],
        methods=["trajectory_mc"],
        seeds=[0],
        budget_episodes=10,
        eval_points=2,
        out=out,
        workers=1,
        baseline="trajectory_mc",
    )
    settings.update(changes)
    return compare.SweepArgs(**settings)


# --------------------------------------------------------------------- 1. stale runs reused
def test_rerun_with_other_settings_never_reports_the_old_runs(tmp_path, monkeypatch):
    calls = []

    def worker(job):
        calls.append(job)
        return fake_run(job)

    monkeypatch.setattr(compare, "run_job", worker)
    first = compare.run_sweep(tiny(tmp_path), progress=False)
    assert len(calls) == 1
    for change in (
        {"budget_episodes": 20},
        {"eval_points": 5},
        {"target_success": 0.5},
    ):
        calls.clear()
        records = compare.run_sweep(tiny(tmp_path, **change), progress=False)
        assert len(calls) == 1, change  # the new settings are run, not the old ones reused
        assert records[0]["key"] != first[0]["key"]
    calls.clear()
    assert compare.run_sweep(tiny(tmp_path), progress=False) == first  # same settings: reused
    assert not calls


def test_run_key_covers_hyperparameters_estimator_arguments_and_code(tmp_path, monkeypatch):
    from baselines.lib import config

    base = compare.plan(tiny(tmp_path))[0]
    monkeypatch.setattr(config, "CONFIG_DIR", tmp_path)
    yml = tmp_path / f"{tiny(tmp_path).env_id}.yml"  # the sweep's env's own config
    yml.write_text("common:\n  learning_rate: 0.1\n")
    other_lr = compare.plan(tiny(tmp_path))[0]
    assert other_lr.row()["hyperparameters"]["learning_rate"] == 0.1
    assert runs.key(other_lr) != runs.key(base)
    yml.write_text("methods:\n  trajectory_mc:\n    estimator_kwargs: {normalize_std: true}\n")
    other_kwargs = compare.plan(tiny(tmp_path))[0]
    assert other_kwargs.row()["estimator"]["kwargs"] == {"normalize_std": True}
    assert runs.key(other_kwargs) != runs.key(base)
    yml.unlink()

    class ChangedTrajectoryMC(credit.TrajectoryMC):
        """The same name, other code."""

    monkeypatch.setitem(credit.ESTIMATORS, "trajectory_mc", ChangedTrajectoryMC)
    other_code = compare.plan(tiny(tmp_path))[0]
    assert other_code.row()["estimator"]["code"] != base.row()["estimator"]["code"]
    assert runs.key(other_code) != runs.key(base)
    assert base.row()["versions"]["routine_envs"]


def test_snr_lab_key_covers_reference_and_estimator_code(monkeypatch):
    args = snr_lab.LabArgs(routine_lengths=(1,), params=("per_state",))

    def key(reference="trajectory_exact"):
        setting = snr_lab._settings(
            args, "rho-law", (1,), ("per_state",), ["oracle", "trajectory_exact"], reference, 400
        )[0]
        return snr_lab.setting_key(setting)

    base = key()
    assert key("oracle") != base

    class ChangedOracle(credit.Oracle):
        """The same name, other code."""

    monkeypatch.setitem(credit.ESTIMATORS, "oracle", ChangedOracle)
    assert key() != base


# ---------------------------------------------------------------- 2. duplicates double-counted
def one_line_error(capsys, parse, argv):
    """The exit code and the error message of a command line that must be refused."""
    with pytest.raises(SystemExit) as exit_info:
        parse(argv)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return exit_info.value.code, err


def parser(path: str):
    """``argv -> settings`` of the command ``path`` of ``python -m baselines``."""
    return functools.partial(commands.settings_of, path)


def command(path: str):
    """``argv -> result`` of ``python -m baselines PATH ARGV``."""
    return lambda argv: commands.main([*path.split(), *argv])


def test_duplicate_values_in_list_flags_are_refused(capsys):
    code, err = one_line_error(capsys, parser("compare"), ["--seeds", "0", "0", "1"])
    assert code == 2 and "--seeds" in err and "duplicate" in err and "0" in err
    code, err = one_line_error(
        capsys, parser("snr_lab"), ["rho-law", "--routine-lengths", "2", "2", "3"]
    )
    assert code == 2 and "--routine-lengths" in err and "duplicate" in err
    code, err = one_line_error(capsys, parser("multiagent"), ["--methods", "ppo", "ppo"])
    assert code == 2 and "--methods" in err
    assert parser("snr_network")(["--net-arch", "64", "64"]).net_arch == [64, 64]  # a shape


def test_duplicate_values_in_settings_are_refused_before_any_run(tmp_path):
    with pytest.raises(ValueError, match=r"seeds.*duplicate.*\[0\]"):
        compare.plan(tiny(tmp_path, seeds=[0, 0, 1]))
    with pytest.raises(ValueError, match=r"--routine-lengths: duplicate"):
        compare.plan(tiny(tmp_path, routine_lengths=[1, 1]))
    with pytest.raises(ValueError, match=r"--routine-lengths: duplicate"):
        snr_lab.rho_law(snr_lab.LabArgs(out=tmp_path, routine_lengths=(2, 2, 3), episodes=400))


# ------------------------------------------------------------- 3 and 9. rows that are not rows
def good_row(key="a", **changes):
    row = {
        "key": key,
        "env_id": "DilutedDoors-v1",
        "env_kwargs": {"routine_length": 1},
        "method": "ppo",
        "seed": 0,
        "density_kwarg": "routine_length",
        "density_value": 1,
        "rho": 0.5,
        "timesteps": [0, 100],
        "success": [0.0, 1.0],
        "budget": 100,
        "target": 0.9,
    }
    row.update(changes)
    return row


def test_results_loader_rejects_every_kind_of_malformed_line(tmp_path):
    from baselines.lib.results import ResultsFile

    store = ResultsFile(tmp_path / "results.jsonl", runs.SCHEMA, runs.TrainingRecord.check)
    bad_lines = [
        "123",
        "null",
        "[1, 2]",
        '"text"',
        json.dumps(good_row(key=["a", "list"])),
        json.dumps(good_row("s", success="abc")),
        json.dumps(good_row("n", success=[0.0, float("nan")])),
        json.dumps(good_row("r", rho=float("nan"))),
        json.dumps(good_row("i", rho=float("inf"))),
        json.dumps(good_row("l", success=[0.0])),  # not one success per timestep
        json.dumps(good_row("m", seed="0")),
        '{"key": "x"}',
    ]
    lines = [json.dumps(good_row("a")), *bad_lines, json.dumps(good_row("b"))]
    store.path.write_text("\n".join(lines) + "\n")
    messages = []
    good = store.load(report=messages.append)
    assert [r["key"] for r in good] == ["a", "b"]
    assert len(messages) == len(bad_lines)
    rejected = [json.loads(x) for x in store.rejected.read_text().splitlines()]
    assert [r["line"] for r in rejected] == list(range(2, 2 + len(bad_lines)))
    assert all(r["reason"] and r["text"] for r in rejected)
    assert any("not finite" in r["reason"] for r in rejected)
    assert [r["key"] for r in store.load(report=messages.append)] == ["a", "b"]  # repaired


def test_snr_loader_rejects_a_row_without_its_ratios(tmp_path):
    from baselines.lib.results import ResultsFile

    row = {
        "key": "k",
        "density_kwarg": "routine_length",
        "density_value": 1,
        "rho": 0.5,
        "estimators": ["oracle", "trajectory_exact"],
        "reference": "trajectory_exact",
        "results": [
            {"estimator": "oracle", "snr": 2.0},
            {"estimator": "trajectory_exact", "snr": 1.0},
        ],
        "ratios": {"oracle/trajectory_exact": [2.0, 1.5, 2.5]},
    }
    store = ResultsFile(
        tmp_path / "results.jsonl", lab_records.LAB_REQUIRED, lab_records.check_lab_record
    )
    store.path.write_text(
        json.dumps(row) + "\n" + json.dumps({**row, "key": "empty", "ratios": {}}) + "\n"
    )
    messages = []
    assert [r["key"] for r in store.load(report=messages.append)] == ["k"]
    assert "oracle/trajectory_exact" in messages[0]


def test_a_non_finite_row_is_not_written_but_kept_aside(tmp_path):
    from baselines.lib.results import ResultsFile

    store = ResultsFile(tmp_path / "results.jsonl", runs.SCHEMA, runs.TrainingRecord.check)
    messages = []
    assert not store.append(good_row(success=[0.0, float("nan")]), report=messages.append)
    assert not store.path.exists() or store.path.read_text() == ""
    assert "not finite" in messages[0] and str(store.rejected) in messages[0]
    assert "NaN" in store.rejected.read_text()  # kept, with its reason


def test_read_only_folder_does_not_claim_to_have_moved_anything(tmp_path):
    from baselines.lib.results import ResultsFile

    store = ResultsFile(tmp_path / "results.jsonl", runs.SCHEMA, runs.TrainingRecord.check)
    store.path.write_text(json.dumps(good_row()) + "\nnot json\n")
    store.rejected.mkdir()  # the rejected file cannot be written (as in a read-only folder)
    messages = []
    assert [r["key"] for r in store.load(report=messages.append)] == ["a"]
    assert messages and not any("moved to" in m for m in messages)
    assert any("left in place" in m for m in messages)
    assert "not json" in store.path.read_text()  # nothing lost either


# ------------------------------------------------------------------------------ 8. lost work
def test_unwritable_output_is_refused_before_any_training(tmp_path, monkeypatch):
    from baselines.experiments.train.command import TrainArgs, main

    calls = []
    monkeypatch.setattr(compare, "run_job", lambda job: calls.append(job) or fake_run(job))
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(ValueError, match="a file is in the way"):
        compare.run_sweep(tiny(a_file), progress=False)
    (tmp_path / "dir" / "results.jsonl").mkdir(parents=True)
    with pytest.raises(ValueError, match="is a directory"):
        compare.run_sweep(tiny(tmp_path / "dir"), progress=False)
    assert not calls
    with pytest.raises(ValueError, match="--out"):
        main(TrainArgs(out=a_file, total_timesteps=10, progress=False))


def test_a_record_that_cannot_be_written_is_kept_and_its_place_reported(
    tmp_path, monkeypatch, capsys
):
    results = tmp_path / "results.jsonl"

    def worker(job):
        if results.exists():
            results.unlink()
        results.mkdir()  # the file became unwritable while the run trained
        return fake_run(job)

    monkeypatch.setattr(compare, "run_job", worker)
    records = compare.run_sweep(tiny(tmp_path), progress=False)
    fallback = tmp_path / "results.unsaved.jsonl"
    assert json.loads(fallback.read_text())["key"] == records[0]["key"]
    assert str(fallback) in capsys.readouterr().out


# ------------------------------------------------------------------ 3. NaN and degenerate input
def strict_json(text):
    def refuse(constant):
        raise ValueError(f"not valid JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_a_fit_of_too_few_points_is_not_available_and_the_summary_is_strict_json(tmp_path):
    args = snr_lab.LabArgs(out=tmp_path, routine_lengths=(1,), params=("per_state",), episodes=400)
    summary = snr_lab.rho_law(args)
    saved = strict_json((tmp_path / "rho_law" / "summary.json").read_text())
    assert saved["fits"]["per_state"]["slope"] is None and saved["fits"]["per_state"]["r2"] is None
    assert "3 distinct" in saved["fits"]["per_state"]["note"]
    assert summary["theory_fit"]["r2"] is None
    assert snr_lab.fit([1.0, 0.5, 0.25], [1.0, 2.0, 4.0])["slope"] == pytest.approx(-1.0)
    assert snr_lab.fit([1.0, 1.0, 0.5], [1.0, 1.0, 2.0])["slope"] is None  # 2 distinct points


def test_train_refuses_eval_episodes_below_one():
    from baselines.experiments.train.command import TrainArgs, run_of

    for bad in (0, -1):
        with pytest.raises(ValueError, match=r"--eval-episodes -?[0-9]+: must be >= 1"):
            run_of(TrainArgs(env_id="CartPole-v1", eval_episodes=bad, progress=False))


class NaNReward(gym.Env):
    """A two-step env whose second step pays NaN (a broken reward)."""

    def __init__(self):
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(3)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return 0, {}

    def step(self, action):
        self.t += 1
        return self.t, float("nan") if self.t == 2 else 0.0, self.t >= 2, False, {}


def test_diagnose_refuses_nan_rewards_naming_the_env_and_the_step():
    from routine_envs.diagnose import diagnose

    with pytest.raises(ValueError, match=r"NaNReward.*reward nan.*step 2"):
        diagnose(NaNReward(), num_states=4, num_rollouts=8)


# ------------------------------------------------------------- 15. a last minibatch of one step
def test_maskable_trajectory_ppo_survives_a_last_minibatch_of_one_step():
    import numpy as np
    import torch as th
    from stable_baselines3.common.env_util import make_vec_env

    from baselines.lib.trajectory_ppo import TrajectoryAdvantageMaskablePPO
    from tests.test_baselines import SMALL, MaskedDoors, collect_once

    venv = make_vec_env(lambda: MaskedDoors(routine_length=1), n_envs=2, seed=0)
    algo = TrajectoryAdvantageMaskablePPO(
        "MlpPolicy", venv, estimator="trajectory_mc", seed=0, **SMALL
    )
    buf, batch, _ = collect_once(algo)
    n = batch.num_steps
    algo.batch_size = n - 1  # the size that triggers it: minibatches of n - 1 and 1 steps
    sizes = [len(s.advantages) for s in buf.get(algo.batch_size)]
    assert sum(sizes) == n and 1 not in sizes
    algo._current_progress_remaining = 1.0
    algo.train()
    assert all(th.isfinite(p).all() for p in algo.policy.parameters())
    assert np.isfinite(buf.advantages).all()


def failing_worker(job):
    """A worker whose run of seed 1 fails (module level: the runner may spawn it)."""
    if job["seed"] == 1:
        raise RuntimeError("NaN logits")
    return fake_run(job)


def test_a_failed_run_is_named_and_the_runs_done_are_kept(tmp_path):
    from baselines.lib.runner import RunFailed, run_resumable

    jobs = [
        {"env_id": "E-v0", "env_kwargs": {"k": 1}, "method": "m", "seed": s, "budget": 2,
         "eval_every": 1, "hyperparameters": {}}
        for s in (0, 1, 2)
    ]  # fmt: skip
    with pytest.raises(RunFailed) as failure:
        run_resumable(jobs, lambda j: str(j["seed"]), failing_worker, tmp_path / "r.jsonl", 1)
    message = str(failure.value)
    assert "E-v0" in message and "{'k': 1}" in message and "seed 1" in message
    assert "NaN logits" in message and "method m" in message
    kept = [json.loads(x)["key"] for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert kept == ["0", "2"]  # the runs before and after the failure are kept


# ------------------------------------------------------------ 6. evaluations past the budget
@pytest.mark.parametrize("method", ["trajectory_mc", "ppo"])
def test_evaluations_are_the_scheduled_points_only(method):
    from baselines.experiments.train.command import TrainArgs, main

    result = main(
        TrainArgs(
            method=method,
            env_kwargs={"routine_length": 1},
            total_timesteps=30,
            eval_every=10,  # far less than one rollout (about 1024 steps)
            progress=False,
        )
    )
    assert result.timesteps == [0, 10, 20, 30]
    assert len(result.success) == 4
    assert result.steps_trained >= 30  # what the learner actually consumed, recorded


# --------------------------------------------------------------- 7. steps to target, censoring
def curve_record(method, seed, success, length=0, grid=(0, 100, 200, 300)):
    return {
        "key": f"{method}{seed}{length}",
        "method": method,
        "seed": seed,
        "routine_length": length,
        "rho": 1 / (1 + length),
        "timesteps": list(grid),
        "success": list(success),
        "budget": grid[-1],
        "target": 0.9,
    }


def test_steps_to_target_interpolates_the_first_crossing():
    from baselines.lib import curves as analysis

    assert analysis.steps_to_target(curve_record("a", 0, [0.1, 0.5, 1.0, 0.2])) == 180.0
    assert analysis.steps_to_target(curve_record("a", 0, [0.95, 0.5, 1.0, 1.0])) == 0.0
    assert analysis.steps_to_target(curve_record("a", 0, [0.1, 0.9, 1.0, 1.0])) == 100.0
    assert analysis.steps_to_target(curve_record("a", 0, [0.1] * 4)) == float("inf")
    # two seeds crossing at different places between the same evaluations: not one number
    runs = [curve_record("a", 0, [0.0, 0.5, 1.0, 1.0]), curve_record("a", 1, [0.0, 0.8, 1.0, 1.0])]
    row = analysis.steps_to_target_table(runs)[0]
    assert row["low"] < row["high"] and row["mean_steps_is"] == "exact"


def test_censored_ratios_are_bounds_in_tables_and_csv(tmp_path, capsys):
    from baselines.lib import curves as analysis

    reached = [curve_record("ppo", s, [0.1, 0.5, 1.0, 1.0]) for s in range(3)]
    never = [curve_record("traj", s, [0.1] * 4) for s in range(3)]
    tables = analysis.analyse(reached + never, tmp_path)
    (ratio,) = tables["ratio_to_turn_level"]
    assert ratio["ratio_is"] == "censored" and ratio["ratio"] is None  # traj reached nothing
    steps = {r["method"]: r for r in tables["steps_to_target"]}
    assert steps["traj"]["mean_steps_is"] == "censored" and steps["traj"]["mean_steps"] is None
    assert steps["ppo"]["mean_steps_is"] == "exact"
    # one seed of traj reaching it: a lower bound, printed as one
    some = [*never[:2], curve_record("traj", 2, [0.1, 0.5, 1.0, 1.0])]
    tables = analysis.analyse(reached + some, tmp_path)
    (ratio,) = tables["ratio_to_turn_level"]
    steps = {r["method"]: r for r in tables["steps_to_target"]}
    assert ratio["ratio_is"] == steps["traj"]["mean_steps_is"] == "lower bound"
    analysis.report(tables, reached + some)
    text = capsys.readouterr().out
    assert f">= {ratio['ratio']:.4g}" in text and f">= {steps['traj']['mean_steps']:.4g}" in text
    header = (tmp_path / "ratio_to_turn_level.csv").read_text().splitlines()[0]
    assert "ratio_is" in header
    base_some = analysis.ratio_table(some + [{**r, "method": "x"} for r in reached], "traj")
    assert base_some[0]["ratio_is"] == "upper bound"
    base_never = analysis.ratio_table(never + [{**r, "method": "x"} for r in reached], "traj")
    assert base_never[0]["ratio_is"] == "censored"


# --------------------------------------------------------------------- 11. clear CLI errors
def refused(capsys, run, argv, *fragments):
    """``run(argv)`` exits with status 2 and one line of error naming every fragment."""
    code, err = one_line_error(capsys, run, argv)
    assert code == 2, (argv, code, err)
    for fragment in fragments:
        assert fragment in err, (argv, err)
    assert "Traceback" not in err and "invalid loads value" not in err
    return err


def test_train_cli_errors_are_one_line_naming_the_flag(capsys):
    train = command("train")
    refused(capsys, train, ["--seed", "-1"], "--seed", ">= 0")
    refused(capsys, train, ["--eval-episodes", "-1"], "--eval-episodes", ">= 1")
    refused(capsys, train, ["--env-kwargs", "[1]"], "--env-kwargs", "JSON object")
    refused(capsys, train, ["--env-kwargs", "{oops"], "--env-kwargs", "JSON object")
    refused(
        capsys, train, ["--env-kwargs", '{"nope": 1}'], "--env-kwargs", "nope", "routine_length"
    )
    refused(capsys, train, ["--env-id", "no_such_module:Env-v0"], "--env-id", "no_such_module")


def test_sweep_cli_errors_are_one_line_naming_the_flag(capsys, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    refused(capsys, command("compare"), ["--seeds", "0", "-1"], "--seeds", ">= 0")
    refused(
        capsys, command("compare"), ["--env-kwargs", '{"nope": 1}', "--out", str(tmp_path)], "nope"
    )
    refused(capsys, command("snr_lab"), ["rho-law", "--seed", "-1"], "--seed")
    refused(capsys, command("snr_lab"), ["rho-law", "--routine-lengths", "-1"], "--routine-lengths")
    refused(capsys, command("snr_lab"), ["rho-law", "--mc-episodes", "0"], "--mc-episodes")
    refused(capsys, command("snr_lab"), ["rho-law", "--out", str(a_file)], "--out", "file")


def test_diagnose_cli_errors_are_one_line_before_any_work(capsys, tmp_path):
    from routine_envs.__main__ import main

    def diagnose(argv):
        return main(["diagnose", *argv])

    refused(capsys, diagnose, ["DilutedDoors-v0", "--seed", "-1"], "--seed", ">= 0")
    refused(capsys, diagnose, ["DilutedDoors-v0", "--json", str(tmp_path / "no" / "r.json")],
            "--json", "no such folder")  # fmt: skip
    refused(
        capsys, diagnose, ["DilutedDoors-v0", "--env-kwargs", '{"nope": 1}'], "--env-kwargs", "nope"
    )
    refused(capsys, diagnose, ["DilutedDoors-v0", "--kwargs", "{oops"], "--kwargs", "JSON object")
    refused(capsys, diagnose, ["no_such_module:Env-v0"], "no_such_module")


# -------------------------------------------------- 12. settings that silently override others
def test_compare_refuses_a_density_kwarg_also_swept_and_a_baseline_not_run(tmp_path):
    with pytest.raises(ValueError, match=r"--env-kwargs.*routine_length.*--routine-lengths"):
        compare.plan(tiny(tmp_path, env_kwargs={"routine_length": 7}))
    with pytest.raises(ValueError, match=r"--baseline rloo.*--methods"):
        compare.plan(tiny(tmp_path, baseline="rloo"))


# ------------------------------------------------------------ privileged grouping is named
def test_gigpo_grouping_by_state_id_is_named_privileged_in_tables(tmp_path, monkeypatch):
    from baselines.lib import config
    from baselines.lib import curves as analysis

    monkeypatch.setattr(config, "CONFIG_DIR", tmp_path)
    (tmp_path / f"{tiny(tmp_path).env_id}.yml").write_text(
        "methods:\n  gigpo:\n    estimator_kwargs: {group_by: state_id}\n"
    )
    monkeypatch.setattr(compare, "run_job", fake_run)
    args = tiny(tmp_path / "out", methods=["gigpo", "trajectory_mc"])
    records = compare.run_sweep(args, progress=False)
    assert {r["label"] for r in records} == {"gigpo (privileged: state_id)", "trajectory_mc"}
    tables = analysis.analyse(records, tmp_path / "out", baseline="trajectory_mc")
    for name in ("steps_to_target", "summary_scores", "ratio_to_turn_level"):
        assert "gigpo (privileged: state_id)" in {r["method"] for r in tables[name]}, name
    ratio = analysis.analyse(records, tmp_path / "out", baseline="gigpo")["ratio_to_turn_level"]
    assert ratio[0]["baseline"] == "gigpo (privileged: state_id)"
