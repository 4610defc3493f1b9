"""The tests' child processes say why they failed (issue 36): output, exit status and elapsed
time in every failure message, timeouts that grow with the machine's load, and a loopback
watcher that says when it killed its command (the Ray cluster test once failed with exit status
247 and nothing else)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from baselines.lib import loopback
from tests import children

ROOT = Path(__file__).resolve().parents[1]


def test_a_failed_child_reports_its_output_status_and_time():
    with pytest.raises(AssertionError) as failed:
        children.run(["sh", "-c", "echo to-out; echo to-err >&2; exit 3"], check=True)
    message = str(failed.value)
    assert "exit status 3 after" in message and " s (load " in message
    assert "to-out" in message and "to-err" in message


def test_a_child_past_its_patience_is_killed_and_what_it_printed_is_kept():
    code = "print('begun', flush=True); import time; time.sleep(60)"
    with pytest.raises(children.ChildTimedOut) as failed:
        children.run([sys.executable, "-c", code], timeout=0.5)
    message = str(failed.value)
    assert "timed out after" in message and "begun" in message


def test_exit_status_247_reads_as_a_sigkill():
    assert "SIGKILL" in children.exit_status(247)  # sys.exit(-9) of a watcher
    assert "SIGKILL" in children.exit_status(137)  # a shell's 128 + 9
    assert children.exit_status(-9) == "killed by SIGKILL"
    assert children.exit_status(2) == "exit status 2"


def test_patience_grows_with_the_load_and_the_factor(monkeypatch):
    monkeypatch.setattr(children, "usable_cpus", lambda: 2)
    monkeypatch.setattr(children.os, "getloadavg", lambda: (40.0, 30.0, 20.0))
    monkeypatch.delenv(children.PATIENCE_VARIABLE, raising=False)
    assert children.patience(10) == pytest.approx(200)  # load 20 per CPU: 20 times longer
    monkeypatch.setattr(children.os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    assert children.patience(10) == pytest.approx(10)  # an idle machine: as given
    monkeypatch.setenv(children.PATIENCE_VARIABLE, "3")
    assert children.patience(10) == pytest.approx(30)


def test_the_loopback_watcher_says_when_it_killed_its_command():
    reason = loopback.unavailable()
    if reason:
        pytest.skip(f"needs a loopback-only network namespace: {reason}")
    code = "print('started'); import time; time.sleep(120)"  # no flush: unbuffered anyway
    outcome = loopback.run([sys.executable, "-c", code], timeout=2)
    assert outcome.timed_out and outcome.returncode != 0
    assert "started" in outcome.stdout  # what it printed before the kill is kept
    assert "killed" in outcome.stderr and "its timeout of 2" in outcome.stderr
    said = outcome.describe()
    assert "killed at its timeout" in said and "started" in said and " s;" in said


def test_a_watcher_whose_starter_dies_still_ends_its_namespace(tmp_path):
    """A killed test run (its ``loopback.run`` process SIGKILLed) once left Ray's daemons
    running in their namespace; the watcher now dies with its starter and ends them."""
    reason = loopback.unavailable()
    if reason:
        pytest.skip(f"needs a loopback-only network namespace: {reason}")
    pids = tmp_path / "pids"
    command = ["sh", "-c", f"sleep 300 & echo $! > {pids}; sleep 300"]
    starter = subprocess.Popen(
        [sys.executable, "-c", f"from baselines.lib import loopback; loopback.run({command!r})"],
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + children.patience(60)
        while not (pids.exists() and pids.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        daemon = int(pids.read_text())
        assert Path(f"/proc/{daemon}").exists()
    finally:
        starter.kill()
        starter.wait()
    deadline = time.monotonic() + children.patience(30)
    while alive(daemon) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(daemon), f"process {daemon} of the namespace outlived its watcher"


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not count)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
