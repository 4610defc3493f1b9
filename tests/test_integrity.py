"""Results you can trust: run keys that cover every setting, no double counting, no NaN, no
lost work, schedules that are what the record says (fast: no test trains for long)."""

from __future__ import annotations

from pathlib import Path

import pytest

from baselines.experiments.compare import sweep as compare
from baselines.experiments.snr_lab import sweep as snr_lab
from routine_envs import credit

ROOT = Path(__file__).resolve().parents[1]


def fake_run(job):
    """A stand-in for a training run: the job plus a flat success curve (no training)."""
    points = job["budget"] // job["eval_every"] + 1
    return {
        **job,
        "timesteps": [i * job["eval_every"] for i in range(points)],
        "success": [0.5] * points,
        "steps_to_target": None,
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
    (tmp_path / "DilutedDoors-v0.yml").write_text("common:\n  learning_rate: 0.1\n")
    other_lr = compare.plan(tiny(tmp_path))[0]
    assert other_lr["hyperparameters"]["learning_rate"] == 0.1
    assert compare.run_key(other_lr) != compare.run_key(base)
    (tmp_path / "DilutedDoors-v0.yml").write_text(
        "methods:\n  trajectory_mc:\n    estimator_kwargs: {normalize_std: true}\n"
    )
    other_kwargs = compare.plan(tiny(tmp_path))[0]
    assert other_kwargs["estimator"]["kwargs"] == {"normalize_std": True}
    assert compare.run_key(other_kwargs) != compare.run_key(base)
    (tmp_path / "DilutedDoors-v0.yml").unlink()

    class ChangedTrajectoryMC(credit.TrajectoryMC):
        """The same name, other code."""

    monkeypatch.setitem(credit.ESTIMATORS, "trajectory_mc", ChangedTrajectoryMC)
    other_code = compare.plan(tiny(tmp_path))[0]
    assert other_code["estimator"]["code"] != base["estimator"]["code"]
    assert compare.run_key(other_code) != compare.run_key(base)
    assert base["versions"]["routine_envs"]


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


def test_duplicate_values_in_list_flags_are_refused(capsys):
    from baselines import multiagent, snr_network

    code, err = one_line_error(capsys, compare.parse_args, ["--seeds", "0", "0", "1"])
    assert code == 2 and "--seeds" in err and "duplicate" in err and "0" in err
    code, err = one_line_error(
        capsys, snr_lab.parse_args, ["rho-law", "--routine-lengths", "2", "2", "3"]
    )
    assert code == 2 and "--routine-lengths" in err and "duplicate" in err
    code, err = one_line_error(capsys, multiagent.parse_args, ["--methods", "ppo", "ppo"])
    assert code == 2 and "--methods" in err
    assert snr_network.parse_args(["--net-arch", "64", "64"]).net_arch == [64, 64]  # a shape


def test_duplicate_values_in_settings_are_refused_before_any_run(tmp_path):
    with pytest.raises(ValueError, match=r"seeds.*duplicate.*\[0\]"):
        compare.plan(tiny(tmp_path, seeds=[0, 0, 1]))
    with pytest.raises(ValueError, match=r"routine_lengths.*duplicate"):
        compare.plan(tiny(tmp_path, routine_lengths=[1, 1]))
    with pytest.raises(ValueError, match=r"routine_lengths.*duplicate"):
        snr_lab.rho_law(snr_lab.LabArgs(out=tmp_path, routine_lengths=(2, 2, 3), episodes=400))
