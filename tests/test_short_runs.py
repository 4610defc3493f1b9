"""docs/calibration/short_runs.py: the calibration tables of docs/reproducing.md section 6."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    path = ROOT / "docs" / "calibration" / "short_runs.py"
    spec = importlib.util.spec_from_file_location("short_runs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tables_count_what_the_runs_measured(tmp_path, capsys):
    """One cell per method x density, its runs' rows; "reached" and the smaller budget's count
    agree with the per-run steps to target; the budget is the protocol's rule."""
    script = load_script()
    out = tmp_path / "doors"
    script.main(
        ["--env-id", "DilutedDoors-v1", "--env-kwargs", '{"num_floors": 1}',
         "--density-kwarg", "routine_length", "--values", "0", "1", "--methods", "ppo",
         "--seeds", "2", "--budget-episodes", "5000", "--also-budgets", "2000",
         "--min-budget-steps", "100", "--eval-points", "6", "--out", str(out)]
    )  # fmt: skip
    with open(out.with_suffix(".csv")) as handle:
        rows = list(csv.DictReader(handle))
    cells = json.loads(out.with_suffix(".json").read_text())
    assert len(rows) == 4 and len(cells) == 2
    for cell in cells:
        L = cell["density_value"]
        longest = 1 * (L + 1)  # one floor: the door, then L routine steps
        assert cell["budget"] == (5000 * longest // 6) * 6
        mine = [r for r in rows if int(r["density_value"]) == L]
        steps = [float(r["steps_to_target"]) for r in mine if r["steps_to_target"]]
        assert cell["reached"] == len(steps)
        assert cell["budget_of_2000_episodes"] == max(2000 * longest, 100)
        assert cell["reached_within_2000_episodes"] == sum(s <= 2000 * longest for s in steps)
        assert cell["rho"] == pytest.approx(1 / (1 + L))
    assert cells[0]["reached"] == 2  # one door at L = 0 is learned in 5000 steps
    assert "| routine_length=0 |" in capsys.readouterr().out


def test_bad_settings_are_refused_naming_the_flag(capsys):
    script = load_script()
    with pytest.raises(SystemExit):
        script.parse_args(["--env-id", "X", "--density-kwarg", "L", "--values", "1",
                           "--seeds", "0", "--out", "o"])  # fmt: skip
    assert "--seeds must be >= 1" in capsys.readouterr().err
