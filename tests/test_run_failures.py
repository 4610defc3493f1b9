"""Failed runs say where (issue 36): every failure record keeps its traceback (bounded), the
console shows the first failure whole and counts the others in one line, on the process pool,
in this process and on the batched path; ``--workers`` is capped at the CPUs this process may
use, and zero or a negative count is refused naming the flag."""

from __future__ import annotations

import json
import os

import pytest

from baselines.lib import runner
from baselines.lib.runner import Batching, RunFailed, run_resumable


def divide(job: dict) -> dict:
    """A run that raises ``ZeroDivisionError`` where ``job["d"]`` is 0 (module level: the pool
    looks it up by name)."""
    return {"value": 1 / job["d"]}


def divide_all(jobs: list[dict]) -> list[dict]:
    """The batch worker of :func:`divide`: one call for every job of a group."""
    return [divide(job) for job in jobs]


def shout(job: dict) -> dict:
    """A run whose error message is far longer than what a failure record keeps."""
    raise ValueError("x" * 100_000)


def failures(path) -> list[dict]:
    return [json.loads(line) for line in path.with_name("r.failures.jsonl").read_text().split("\n")
            if line]  # fmt: skip


def run_divisions(tmp_path, workers: int, batching: Batching | None = None) -> str:
    jobs = [{"d": 0, "seed": s} for s in range(3)] + [{"d": 2, "seed": 3}]
    with pytest.raises(RunFailed) as failed:
        run_resumable(
            jobs, lambda j: f"seed {j['seed']}", divide, tmp_path / "r.jsonl", workers,
            required=("key", "value"), progress=False, batching=batching,
        )  # fmt: skip
    return str(failed.value)


@pytest.mark.parametrize(
    ("workers", "batching"),
    [
        (1, None),
        (2, None),
        (1, Batching(lambda job: "zero" if job["d"] == 0 else None, divide_all)),
    ],
    ids=["in-process", "process-pool", "batched"],
)
def test_each_failure_keeps_its_traceback_and_the_console_shows_the_first_whole(
    tmp_path, capsys, workers, batching
):
    message = run_divisions(tmp_path, workers, batching)
    printed = capsys.readouterr().out
    # one line for the lot: the first failure, the others counted, where the tracebacks are
    assert "\n" not in message
    assert message.startswith("3 of 4 run(s) failed")
    assert message.count("ZeroDivisionError") == 1
    assert "and 2 more run(s) failed the same way" in message
    assert f"tracebacks in {tmp_path / 'r.failures.jsonl'}" in message
    # the first failure printed whole, with the file and line that raised; the others not
    assert printed.count("Traceback (most recent call last)") == 1
    assert f'{__file__}", line' in printed and '1 / job["d"]' in printed
    kept = failures(tmp_path / "r.jsonl")
    assert sorted(entry["key"] for entry in kept) == ["seed 0", "seed 1", "seed 2"]
    for entry in kept:
        assert "ZeroDivisionError: division by zero" in entry["error"]
        assert "Traceback (most recent call last)" in entry["traceback"]
        assert f'{__file__}", line' in entry["traceback"]


def test_a_failure_record_keeps_the_end_of_a_long_traceback(tmp_path, capsys):
    with pytest.raises(RunFailed):
        run_resumable([{"seed": 0}], str, shout, tmp_path / "r.jsonl", 1, progress=False)
    (entry,) = failures(tmp_path / "r.jsonl")
    assert len(entry["traceback"]) <= runner.TRACEBACK_CHARS + 100
    assert entry["traceback"].rstrip().endswith("x" * 100)  # the end is what is kept
    assert len(capsys.readouterr().out) < 2 * runner.TRACEBACK_CHARS


def test_different_errors_are_counted_apart(tmp_path):
    jobs = [{"d": 0, "seed": 0}, {"d": 0, "seed": 1}, {"d": "a", "seed": 2}]
    with pytest.raises(RunFailed) as failed:
        run_resumable(
            jobs, lambda j: f"seed {j['seed']}", divide, tmp_path / "r.jsonl", 1, progress=False
        )
    message = str(failed.value)
    assert "and 2 more run(s) failed: 1 the same way, 1 with TypeError" in message


# ------------------------------------------------------------------------------ --workers
def test_workers_are_capped_at_the_cpus_this_process_may_use(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(runner, "usable_cpus", lambda: 2)
    assert runner.pool_size(10**20, 50) == 2
    assert runner.pool_size(10**20, 1) == 1  # never more workers than runs
    assert runner.pool_size(1, 50) == 1
    jobs = [{"d": 1, "seed": s} for s in range(3)]
    run_resumable(jobs, lambda j: str(j["seed"]), divide, tmp_path / "r.jsonl", 10**20,
                  required=("key", "value"), progress=False)  # fmt: skip
    printed = capsys.readouterr().out
    assert "--workers 100000000000000000000: capped at the 2 CPUs this process may use" in printed
    assert "to do on 2 worker(s)" in printed


@pytest.mark.parametrize("workers", [0, -3])
def test_zero_or_negative_workers_are_refused_naming_the_flag(tmp_path, workers):
    with pytest.raises(ValueError, match=f"--workers {workers}: must be >= 1"):
        run_resumable([{"seed": 0}], str, divide, tmp_path / "r.jsonl", workers)
    assert not (tmp_path / "r.jsonl").exists()


def test_usable_cpus_is_what_the_scheduler_allows():
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert runner.usable_cpus() == expected
