"""Refusals that name the flag and the value (issue 36): a bad setting is one line naming the
flag as typed and the value given, whether argparse, a settings check or a command's own check
refuses it; a refused command creates nothing."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from baselines import commands
from routine_envs import cli


def refused(argv: list[str], capsys) -> str:
    """The one line on stderr of ``python -m baselines ARGV``, which must exit with status 2."""
    with pytest.raises(SystemExit) as end:
        commands.main(argv)
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_train_target_success_nan_names_the_flag_and_the_value(tmp_path, capsys):
    out = tmp_path / "out"
    err = refused(["train", "--target-success", "nan", "--out", str(out)], capsys)
    assert "--target-success" in err and "nan" in err
    assert not out.exists()


def test_compare_statistic_names_the_flag_and_the_value(tmp_path, capsys):
    out = tmp_path / "out"
    err = refused(["compare", "--statistic", "nope", "--out", str(out)], capsys)
    assert "--statistic nope" in err and "iqm" in err
    assert not out.exists()


@pytest.mark.parametrize("text", ["nan", "NaN", "+nan"])
def test_no_float_flag_takes_nan(text, capsys):
    with pytest.raises(SystemExit) as end:  # parsed only: nothing would run even if it passed
        commands.settings_of("lm train", ["--learning-rate", text])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2 and "--learning-rate" in err and text in err, err


def test_a_bound_float_refuses_nan_and_says_so():
    parse = cli._bounded(float, 0.0, 1.0)
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number, got 'nan'"):
        parse("nan")
    assert parse("0.5") == 0.5


def test_check_unique_names_the_flag():
    with pytest.raises(ValueError, match=r"--routine-lengths: duplicate values \[1\]"):
        cli.check_unique("routine_lengths", [1, 1, 2])


@dataclasses.dataclass
class Toy:
    """A settings class whose checks name fields, not flags."""

    statistic: str = dataclasses.field(default="iqm", metadata={"help": "iqm or mean"})
    target_success: float = dataclasses.field(default=0.9, metadata={"help": "target"})
    seeds: list[int] = dataclasses.field(default_factory=list, metadata={"help": "seeds"})
    out: Path = dataclasses.field(default=Path("x y"), metadata={"help": "folder"})


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("statistic must be one of ['iqm', 'mean']", "--statistic nope: must be one of"),
        ("target_success: must be in (0, 1]", "--target-success 2.0: must be in (0, 1]"),
        ("seeds must be >= 0, got [0, -1]", "--seeds 0 -1: must be >= 0"),
        ("out must be a folder", "--out 'x y': must be a folder"),
        ("--statistic nope: already named", "--statistic nope: already named"),
        ("statistics are fine", "statistics are fine"),  # not a field name: unchanged
        ("the statistic must be", "the statistic must be"),
    ],
)
def test_a_refusal_naming_a_field_names_its_flag_and_value(message, expected):
    settings = Toy(statistic="nope", target_success=2.0, seeds=[0, -1])
    assert cli.name_the_flag(message, settings).startswith(expected)


def test_a_missing_hyperparameter_file_names_config(tmp_path):
    from baselines.lib.config import load_hyperparameters

    missing = tmp_path / "missing.yml"
    with pytest.raises(ValueError, match=f"--config {missing}: no hyperparameter file there"):
        load_hyperparameters("DilutedDoors-v0", "ppo", missing)


def test_a_required_setting_not_given_is_named_by_its_flag():
    @dataclasses.dataclass
    class Needs:
        report: Path = dataclasses.field(metadata={"help": "where"})
        poll_seconds: float = dataclasses.field(metadata={"help": "how often"})

    with pytest.raises(ValueError, match="Needs: --report, --poll-seconds must be given"):
        cli.settings_from(Needs, {})


# ----------------------------------------------------------------- refused commands create nothing
@pytest.mark.parametrize("trainer", ["sb3", "batched"])
@pytest.mark.parametrize("num_floors", [-1, 10**9])
def test_train_refuses_bad_env_kwargs_before_making_its_folder(tmp_path, capsys, num_floors,
                                                               trainer):  # fmt: skip
    out = tmp_path / "X"
    argv = ["train", "--env-kwargs", f'{{"num_floors": {num_floors}}}', "--out", str(out)]
    err = refused([*argv, "--trainer", trainer], capsys)
    assert "num_floors" in err and "--env-kwargs" in err
    assert not out.exists()


@pytest.mark.parametrize("out", ["", ".", "a_file"])  # "/": checked without training below
def test_train_refuses_an_empty_or_unsafe_out(out, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("")
    err = refused(["train", "--total-timesteps", "10", "--out", out], capsys)
    assert "--out" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


def test_check_output_folder_refuses_the_unsafe_places(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="--out '': give a folder"):
        cli.check_output_folder("")
    with pytest.raises(ValueError, match=r"--out \.: the current folder itself"):
        cli.check_output_folder(Path("."))
    with pytest.raises(ValueError, match=f"--out {tmp_path}: the current folder itself"):
        cli.check_output_folder(tmp_path)
    with pytest.raises(ValueError, match="--results /: the root folder"):
        cli.check_output_folder(Path("/"), "--results")
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="a file is in the way"):
        cli.check_output_folder(tmp_path / "f")
    cli.check_output_folder(Path("sub/deeper"))  # a folder below the current one is fine
    assert (tmp_path / "sub" / "deeper").is_dir()
    cli.check_output_folder(Path("."), allow_current=True)  # a file's folder may be here


def test_an_empty_path_flag_is_refused_at_parse(capsys):
    with pytest.raises(SystemExit):
        commands.settings_of("train", ["--config", ""])
    assert "argument --config: must be a path, got ''" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "--target-success", "2.0"], "--target-success 2.0: must be in (0, 1]"),
        (["compare", "--budget-episodes", "0"], "--budget-episodes: must be >= 1, got 0"),
        (["compare", "--seeds", "0", "-1"], "--seeds: must be >= 0, got -1"),
    ],
)
def test_a_sweeps_refusals_name_each_flag(tmp_path, capsys, argv, message):
    """A sweep refused ``--target-success 2.0`` nowhere, and named three flags in one message."""
    out = tmp_path / "out"
    assert message in refused([*argv, "--out", str(out)], capsys)
    assert not out.exists()


def test_leaderboard_refuses_an_empty_out(capsys):
    """``leaderboard --out ''`` wrote into ``rb2/<tier>`` of the current folder."""
    assert "--out" in refused(["benchmark", "leaderboard", "--tier", "lite", "--out", ""], capsys)
