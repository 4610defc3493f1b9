"""The compact runs format the references ship in: it gives back the JSON lines byte for byte,
refuses what it cannot give back before writing anything, stays read only, and reads a hostile
file in bounded memory with one line naming it."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.experiments.benchmark import manifest
from baselines.lib import compact_runs, runs
from baselines.lib.results import ResultsFile

FINITE = st.floats(allow_nan=False, allow_infinity=False)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | FINITE | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
ROWS = st.lists(
    st.dictionaries(st.sampled_from(["key", "seed", "success", "env_id", "x"]), VALUES),
    max_size=6,
)


def json_lines(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_any_rows_come_back_byte_for_byte(rows):
    """Rows of any fields, values and field orders (some shared, some not, some missing)."""
    data = json_lines(rows)
    assert compact_runs.decode(compact_runs.encode(data)) == data
    packed = compact_runs.pack(data)
    assert gzip.decompress(packed) == compact_runs.encode(data)


def test_shared_fields_are_written_once_and_a_row_keeps_its_own_order(tmp_path):
    rows = [
        {"key": "a", "seed": 0, "hyperparameters": {"lr": 0.001}, "success": [0.5, 1.0]},
        {"seed": 1, "key": "b", "hyperparameters": {"lr": 0.001}, "success": [0.25, 0.75]},
    ]
    text = compact_runs.encode(json_lines(rows)).decode().splitlines()
    header = json.loads(text[0])
    assert header == {
        "format": compact_runs.FORMAT,
        "fields": ["key", "seed", "hyperparameters", "success"],
        "shared": {"hyperparameters": {"lr": 0.001}},
    }
    assert json.loads(text[1]) == {"key": "a", "seed": 0, "success": [0.5, 1.0]}
    assert json.loads(text[2])[compact_runs.ORDER_FIELD] == ["seed", "key", "hyperparameters",
                                                             "success"]  # fmt: skip
    path = tmp_path / "m.jsonl.gz"
    path.write_bytes(compact_runs.pack(json_lines(rows)))
    assert compact_runs.read_lines(path) == json_lines(rows)


def test_lines_that_would_not_come_back_are_refused_and_nothing_is_written(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"key": "a", "seed": 0}\n')
    (tmp_path / "b.jsonl").write_text('{"key":"b","seed":0}\n')  # not json.dumps's spacing
    with pytest.raises(ValueError, match=r"b\.jsonl: line 1 is not the json.dumps of its row"):
        manifest.compact_references(tmp_path, report=lambda line: None)
    assert (tmp_path / "b.jsonl").is_file() and not (tmp_path / "b.jsonl.gz").exists()
    assert (tmp_path / "a.jsonl.gz").is_file() and not (tmp_path / "a.jsonl").exists()
    (tmp_path / "c.jsonl").write_text('{"key": "c"}')  # a partial last line
    with pytest.raises(ValueError, match="partial"):
        compact_runs.pack((tmp_path / "c.jsonl").read_bytes(), "c.jsonl")


def test_the_same_runs_give_the_same_bytes():
    data = json_lines([{"key": "a", "success": [0.1]}, {"key": "b", "success": [0.2]}])
    assert compact_runs.pack(data) == compact_runs.pack(data)  # no time stamp: one manifest


def row(seed: int) -> dict:
    return {
        "key": f"k{seed}",
        "env_id": "DilutedDoors-v1",
        "env_kwargs": {},
        "method": "ppo",
        "seed": seed,
        "timesteps": [0, 10],
        "success": [0.0, 0.5],
        "budget": 10,
        "target": 0.9,
        "density_kwarg": "routine_length",
        "density_value": 0,
        "rho": 1.0,
    }


def test_a_compact_file_is_read_like_json_lines_and_never_written(tmp_path):
    data = json_lines([row(0), row(1)])
    path = tmp_path / "ppo.jsonl.gz"
    path.write_bytes(compact_runs.pack(data))
    plain = tmp_path / "ppo.jsonl"
    plain.write_bytes(data)
    store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check)
    want = ResultsFile(plain, runs.SCHEMA, runs.TrainingRecord.check).read()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert store.read() == store.load() == want and len(want) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # not even a lock file
    with pytest.raises(ValueError, match="compact file is read only"):
        store.append(row(2))
    with pytest.raises(ValueError, match="compact file is read only"):
        store.check_writable()
    assert compact_runs.runs_path(tmp_path, "ppo") == path  # the compact one first
    assert compact_runs.runs_path(tmp_path, "gigpo") == tmp_path / "gigpo.jsonl"


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (b"not gzip at all", "not gzip data"),
        (gzip.compress(b'{"format": "something else"}\n'), "not a 'routine-envs runs 1' file"),
        (gzip.compress(b"[1, 2\n"), "header is not JSON"),
        (gzip.compress(compact_runs.encode(json_lines([row(0)])))[:-12], "truncated"),
        (
            gzip.compress(
                b'{"format": "routine-envs runs 1", "fields": ["a"], "shared": {}}\n{}\n'
            ),
            r"line 2 is not a row \(KeyError\('a'\)\)",
        ),
    ],
    ids=["not gzip", "other format", "bad header", "truncated", "missing field"],
)
def test_a_damaged_file_is_one_line_naming_it(tmp_path, payload, match):
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(payload)
    with pytest.raises(compact_runs.InvalidCompactFile, match=match) as err:
        compact_runs.read_lines(path)
    assert str(path) in str(err.value) and len(str(err.value).splitlines()) == 1


def test_a_small_file_that_inflates_without_limit_is_refused_in_bounded_memory(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(compact_runs, "MAX_DECODED_BYTES", 1_000_000)
    bomb = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    payload = bomb.compress(b"\0" * 50_000_000) + bomb.flush()
    assert len(payload) < 100_000
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(payload)
    with pytest.raises(compact_runs.InvalidCompactFile, match="decompresses to more than"):
        compact_runs.read_lines(path)
