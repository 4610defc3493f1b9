"""One experiment shape (issue 24): record dataclasses with the density by keyword and value,
old rows read through a conversion (the shipped references untouched), specs parsed once, and
experiments that share library code instead of importing each other."""

from __future__ import annotations

import ast
import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from baselines.lib import records, runs, specs
from baselines.lib.results import ResultsFile
from tests import runs_files

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "baselines" / "references" / "rb1" / "lite"


def test_old_rows_are_upgraded_on_read_and_the_files_are_not_touched(tmp_path):
    """A row of every env's old shape (``routine_length`` as the density of RoutineGrid too)
    reads as the current record: the env's own keyword, the value, no ``routine_length``; the
    file is byte-identical afterwards, even when a bad line makes ``load`` repair it."""
    old = {
        "key": "k",
        "env_id": "RoutineGrid-v0",
        "env_kwargs": {"corridor_length": 4},
        "method": "ppo",
        "seed": 0,
        "routine_length": 4,
        "rho": 0.2,
        "timesteps": [0, 10],
        "success": [0.0, 0.5],
        "budget": 10,
        "target": 0.9,
    }
    upgraded = records.upgrade(old)
    assert upgraded["density_kwarg"] == "corridor_length" and upgraded["density_value"] == 4
    assert "routine_length" not in upgraded and old["routine_length"] == 4  # a copy
    path = tmp_path / "results.jsonl"
    text = json.dumps(old) + "\n"
    path.write_text(text)
    store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check)
    assert store.read(report=lambda m: None) == []  # without the conversion: not a record
    store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check, records.upgrade)
    (row,) = store.read()
    assert row["density_value"] == 4 and path.read_text() == text
    path.write_text(text + "not json\n")
    assert [r["key"] for r in store.load(report=lambda m: None)] == ["k"]
    assert path.read_text() == text  # the repair keeps the good line as it was written


def test_shipped_references_read_as_current_records_and_stay_byte_identical():
    manifest = {
        line.split()[1]: line.split()[0]
        for line in (REFERENCES / "MANIFEST.sha256").read_text().splitlines()
    }
    for name, digest in manifest.items():
        path = REFERENCES / name
        store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check, records.upgrade)
        rows = store.read()
        assert len(rows) == 120, name
        assert all("routine_length" not in r and r["density_kwarg"] for r in rows)
        assert {r["density_kwarg"] for r in rows} <= {"routine_length", "corridor_length"}
        record = runs.TrainingRecord.from_row(rows[0])
        assert record.row() == rows[0]  # the dataclass holds the whole row
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_benchmark_plans_the_shipped_references_keys():
    """The run keys of the benchmark's plan (the training runs of the library now) are the
    keys the shipped references were written with, for every reference method."""
    from baselines.lib import protocol, protocol_runs

    rb1 = protocol.load_protocol("rb1")
    tier = rb1.tier("lite")
    import tempfile

    with tempfile.TemporaryDirectory() as configs:
        for method in protocol.REFERENCE_METHODS:
            jobs = protocol_runs.plan(rb1, tier, method, Path(configs))
            keys = {runs.key(j) for j in jobs}
            path = REFERENCES / f"{protocol_runs.method_slug(method)}.jsonl.gz"
            shipped = {json.loads(line)["key"] for line in runs_files.text(path).splitlines()}
            assert keys == shipped, method


def test_a_method_spec_is_resolved_once_per_plan(tmp_path, monkeypatch):
    """Planning the benchmark for an outside method imports and resolves it once (the spec is
    parsed into one MethodSpec that the hyperparameters, label and run key all read; it was
    resolved five times)."""
    from baselines.lib import protocol, protocol_runs
    from routine_envs.credit import registry

    (tmp_path / "once_h24.py").write_text(
        "from routine_envs import credit\n\n\nclass Half(credit.TrajectoryMC):\n"
        '    """Half the trajectory advantage."""\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []
    original = registry.resolve_estimator

    def counting(target):
        calls.append(target)
        return original(target)

    monkeypatch.setattr(registry, "resolve_estimator", counting)  # where specs are resolved
    rb1 = protocol.load_protocol("rb1")
    jobs = protocol_runs.plan(rb1, rb1.tier("smoke"), "once_h24:Half", tmp_path / "configs")
    assert len(jobs) == 4
    assert calls.count("once_h24:Half") == 1
    assert jobs[0].estimator["code"] == specs.parse_method("once_h24:Half").code()


def test_method_spec_knows_label_identity_and_fingerprint():
    spec = specs.parse_method('gigpo{"omega": 0.5}')
    assert spec.target == "gigpo" and spec.kwargs == {"omega": 0.5}
    assert spec.label() == 'gigpo{"omega": 0.5}'
    identity = spec.identity({"omega": 0.2, "group_by": "anchor"})
    assert identity["kwargs"] == {"omega": 0.5, "group_by": "anchor"}
    import inspect

    from routine_envs import credit, plugins

    source = inspect.getsource(credit.GiGPO)
    tree = plugins.syntax_of(ast.parse(textwrap.dedent(source)))
    expected = hashlib.sha256(tree.encode()).hexdigest()[:16]
    assert identity["code"] == expected  # the built-in class's syntax, as the references key it
    # the source text itself is provenance only
    assert spec.source_hash() == hashlib.sha256(source.encode()).hexdigest()[:16]
    assert specs.parse_method("ppo").identity() == {
        "name": "ppo",
        "kwargs": {},
        "code": "stable_baselines3",
    }
    assert specs.parse_method("gigpo") is specs.parse_method("gigpo")  # parsed once
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        specs.parse_method("nope")


def test_record_classes_state_the_density_and_give_the_schema():
    from baselines.experiments.detectors.score import DetectorRecord
    from baselines.experiments.snr_lab.measure import MeasureRecord
    from baselines.experiments.snr_lab.sweep import LabRecord

    for cls in (runs.TrainingRecord, LabRecord, MeasureRecord, DetectorRecord):
        schema = cls.schema()
        assert schema["density_kwarg"] == "str" and schema["density_value"] == "int", cls
        assert schema["rho"] == "number" and "routine_length" not in schema, cls
    assert runs.TrainingRecord.schema()["timesteps"] == "numbers"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_experiments_share_the_library_and_read_only_each_others_public_names():
    """An experiment may call another's public entry functions (the demo runs the rho law and
    the comparison through ``snr_lab.sweep.main`` and ``compare.sweep.main``), never a private
    module or name of it; the library imports no experiment."""
    experiments = ROOT / "baselines" / "experiments"
    names = {p.name for p in experiments.iterdir() if (p / "__init__.py").exists()}
    crossing = []
    for path in experiments.rglob("*.py"):
        own = path.relative_to(experiments).parts[0]
        for module in _imports(path):
            parts = module.split(".")
            inside = parts[:2] == ["baselines", "experiments"] and len(parts) > 2
            private = any(part.startswith("_") for part in parts[3:])
            if inside and parts[2] in names and parts[2] != own and private:
                crossing.append(f"{path.relative_to(ROOT)} imports {module}")
    for path in (ROOT / "baselines" / "lib").rglob("*.py"):  # the library imports no experiment
        crossing += [
            f"{path.relative_to(ROOT)} imports {m}"
            for m in _imports(path)
            if m.startswith("baselines.experiments")
        ]
    assert not crossing, crossing


def test_lab_records_name_the_density(tmp_path):
    from baselines.experiments.snr_lab import sweep as snr_lab

    args = snr_lab.LabArgs(out=tmp_path, routine_lengths=(1, 2, 4), params=("per_state",))
    args.episodes, args.workers = 400, 1
    snr_lab.rho_law(args)
    rows = [
        json.loads(x) for x in (tmp_path / "rho_law" / "results.jsonl").read_text().splitlines()
    ]
    assert {(r["density_kwarg"], r["density_value"]) for r in rows} == {
        ("routine_length", 1),
        ("routine_length", 2),
        ("routine_length", 4),
    }
    header = (tmp_path / "rho_law" / "rho_law.csv").read_text().splitlines()[0]
    assert header.startswith("routine_length,rho,param,")  # the table's column, as before
