"""``runs export``: every shipped run of a protocol, verified first, as one table whose values
are the records' (censored runs as censored, not as the budget), in CSV and Parquet alike."""

from __future__ import annotations

import csv
import json
import shutil

import pytest

from baselines import commands
from baselines.experiments.benchmark import manifest
from baselines.experiments.benchmark.shipped import shipped_tiers
from baselines.experiments.runs import export
from baselines.lib import protocol_runs
from tests import runs_files


def test_the_csv_holds_every_shipped_run_with_its_own_values(tmp_path):
    path = tmp_path / "rb1.csv"
    result = commands.main(["runs", "export", "--protocols", "rb1", "--out", str(path)])
    (tier,) = shipped_tiers(["rb1"])
    records = {r["key"]: (m, r) for m, rows in tier.found.items() for r in rows}
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert result["rows"] == len(rows) == len(records) == 960 and not tier.tuned
    assert list(rows[0]) == list(export.COLUMNS)
    censored = 0
    for row in rows:
        method, record = records[row["key"]]
        assert (row["protocol"], row["tier"], row["method"], row["column"]) == (
            "rb1", "lite", method, "default"
        )  # fmt: skip
        assert json.loads(row["success"]) == record["success"]  # every digit of the curve
        assert float(row["final_success"]) == record["success"][-1]
        assert json.loads(row["env_kwargs"]) == record["env_kwargs"]
        assert int(row["seed"]) == record["seed"] and float(row["rho"]) == record["rho"]
        if record["steps_to_target"] is None:  # censored: empty, never the budget
            censored += 1
            assert row["steps_to_target"] == "" and row["censored"] == "True"
        else:
            assert float(row["steps_to_target"]) == record["steps_to_target"]
            assert row["censored"] == "False"
    assert censored > 0  # rb1 lite has censored runs: the branch above is exercised


def test_parquet_holds_the_same_values_with_both_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "rb3.parquet"
    commands.main(["runs", "export", "--protocols", "rb3", "--out", str(path)])
    table = pq.read_table(path).to_pylist()
    tiers = shipped_tiers(["rb3"])
    want = sum(len(rows) for t in tiers for col in (t.found, t.tuned) for rows in col.values())
    assert len(table) == want and {r["column"] for r in table} == {"default", "tuned"}
    lite = next(t for t in tiers if t.name == "lite")
    record = lite.tuned["ppo"][0]
    row = next(r for r in table if r["key"] == record["key"] and r["column"] == "tuned")
    assert row["success"] == record["success"] and row["timesteps"] == record["timesteps"]
    assert json.loads(row["hyperparameters"]) == record["hyperparameters"]


def test_a_changed_reference_stops_the_export_and_a_bad_name_is_refused(
    tmp_path, monkeypatch, capsys
):
    root = tmp_path / "references"
    shutil.copytree(manifest.shipped_folder("rb1", "lite"), root / "rb1" / "lite")
    monkeypatch.setattr(protocol_runs, "REFERENCE_DIR", root)
    ppo = root / "rb1" / "lite" / "ppo.jsonl.gz"
    lines = runs_files.text(ppo).splitlines()
    runs_files.write(ppo, "\n".join(lines[1:]) + "\n")  # one run dropped
    out = tmp_path / "x.csv"
    with pytest.raises(SystemExit) as end:
        commands.main(["runs", "export", "--protocols", "rb1", "--out", str(out)])
    err = capsys.readouterr().err
    assert end.value.code == 2 and "ppo.jsonl.gz: changed" in err and not out.exists()
    with pytest.raises(SystemExit) as end:
        commands.main(["runs", "export", "--protocols", "rb1", "--out", str(tmp_path / "x.xls")])
    assert end.value.code == 2 and ".csv or .parquet" in capsys.readouterr().err
