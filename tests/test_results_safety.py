"""Results files are safe to share and every command ends cleanly (issue 23, files on disk).

- Concurrent appends and repairing loads lose no row; a partial last line never swallows the
  next append.
- Two runners on one results file never train the same run; a run claimed by another live
  process is waited for (its pid reported) and taken from the file; a crashed holder's run is
  trained here.
- Output folders are checked before any config is written, on every entry point; a full disk
  is one line naming the path and leaves no empty config; Ctrl-C is one line saying what is
  saved and the command that resumes, exit status 130.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from baselines.lib.results import ResultsFile
from tests import children

ROOT = Path(__file__).resolve().parents[1]
APPENDERS, ROWS_EACH = 4, 500


def python(tmp_path: Path, code: str, *args: str, **popen: object) -> subprocess.Popen:
    """Start ``code`` (a script, saved as ``script_<n>.py`` in ``tmp_path``) in a fresh
    interpreter with the repository and ``tmp_path`` importable."""
    script = tmp_path / f"script_{len(list(tmp_path.glob('script_*.py')))}.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


APPENDER = """
import sys
from baselines.lib.results import ResultsFile

store = ResultsFile(sys.argv[1])
for j in range(int(sys.argv[3])):
    store.append({"key": f"w{sys.argv[2]}-{j}", "pad": "x" * 200}, report=lambda m: None)
"""

LOADER = """
import os, sys
from baselines.lib.results import ResultsFile

store = ResultsFile(sys.argv[1])
loads = 0
while not os.path.exists(sys.argv[2]):
    good = store.load(report=lambda m: None)
    loads += 1
    if good:
        store.append(good[0], report=lambda m: None)  # a duplicate: the next load moves it
print(loads)
"""


def test_concurrent_appends_and_repairing_loads_lose_no_row(tmp_path):
    """4 processes x 500 appends while another process loads the file over and over, with a
    duplicate and a partial line present (each load repairs the file): 0 rows lost."""
    path = tmp_path / "results.jsonl"
    first = [json.dumps({"key": f"seed-{i}"}) for i in range(2)]
    path.write_text("\n".join([*first, first[0]]) + '\n{"key": "crash", "pa')  # dup + partial
    stop = tmp_path / "stop"
    loader = python(tmp_path, LOADER, str(path), str(stop))
    appenders = [
        python(tmp_path, APPENDER, str(path), str(i), str(ROWS_EACH)) for i in range(APPENDERS)
    ]
    for p in appenders:
        children.communicate(p, timeout=600, what="an appender").check()
    stop.touch()
    loaded = children.communicate(loader, timeout=600, what="the loader").check()
    assert int(loaded.stdout) > 0, loaded.describe()  # it loaded (and repaired) meanwhile
    keys = [r["key"] for r in ResultsFile(path).load(report=lambda m: None)]
    expected = {f"w{i}-{j}" for i in range(APPENDERS) for j in range(ROWS_EACH)}
    lost = (expected | {"seed-0", "seed-1"}) - set(keys)
    assert len(lost) == 0, f"{len(lost)} of {len(expected) + 2} rows lost"
    assert len(keys) == len(set(keys))


def test_an_append_after_a_partial_line_starts_a_new_line(tmp_path):
    store = ResultsFile(tmp_path / "results.jsonl")
    store.append({"key": "a"})
    with store.path.open("ab") as f:
        f.write(b'{"key": "b", "se')  # a writer killed mid-line
    assert store.append({"key": "c"})
    messages = []
    assert [r["key"] for r in store.load(report=messages.append)] == ["a", "c"]
    assert len(messages) == 1 and "corrupt line 2" in messages[0]
    assert store.path.read_text() == '{"key": "a"}\n{"key": "c"}\n'  # repaired under the lock


def test_reading_a_clean_file_writes_nothing(tmp_path):
    store = ResultsFile(tmp_path / "results.jsonl")
    store.path.write_text('{"key": "a"}\n')
    before = sorted(p.name for p in tmp_path.iterdir())
    assert [r["key"] for r in store.load()] == ["a"]
    assert [r["key"] for r in store.read()] == ["a"]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no lock file either


def test_read_new_returns_only_what_was_appended_since(tmp_path):
    store = ResultsFile(tmp_path / "results.jsonl")
    store.append({"key": "a"})
    records, position = store.read_new()
    assert [r["key"] for r in records] == ["a"]
    assert store.read_new(position) == ([], position)
    store.append({"key": "b"})
    records, position = store.read_new(position)
    assert [r["key"] for r in records] == ["b"]
    store.path.write_text('{"key": "z"}\n')  # rewritten (another inode): read from the start
    assert [r["key"] for r in store.read_new(position)[0]] == ["z"]


# ------------------------------------------------------------------------- claims
FASTWORK = """
import os, time

def work(job):
    fd = os.open(os.environ["FASTWORK_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{job['seed']} {os.getpid()}\\n".encode())
    os.close(fd)
    time.sleep(float(os.environ.get("FASTWORK_SECONDS", "0.05")))
    return {"seed": job["seed"], "value": 2 * job["seed"]}
"""

RUNNER = """
import json, os, sys, time
from fastwork import work
from baselines.lib.runner import run_resumable

if __name__ == "__main__":  # spawned pool workers import this file too
    path, workers, runs, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    while not os.path.exists(go):
        time.sleep(0.01)
    jobs = [{"seed": s} for s in range(runs)]
    records = run_resumable(jobs, lambda j: f"run-{j['seed']}", work, path, workers, progress=False)
    print("RESULT", json.dumps([r["key"] for r in records]))
"""


def fast_worker_env(tmp_path: Path, monkeypatch, seconds: float = 0.05) -> Path:
    """A trivially fast worker module in ``tmp_path`` that logs each run it trains; the log."""
    (tmp_path / "fastwork.py").write_text(textwrap.dedent(FASTWORK))
    log = tmp_path / "trained.log"
    monkeypatch.setenv("FASTWORK_LOG", str(log))
    monkeypatch.setenv("FASTWORK_SECONDS", str(seconds))
    return log


def trained(log: Path) -> list[int]:
    return [int(line.split()[0]) for line in log.read_text().splitlines()] if log.exists() else []


def test_two_runners_on_one_results_file_never_train_the_same_run(tmp_path, monkeypatch):
    """Two runners started together on one file (one with a process pool, one in-process):
    every run is trained once, and each runner returns every run's record."""
    log = fast_worker_env(tmp_path, monkeypatch)
    runs, go, path = 30, tmp_path / "go", tmp_path / "results.jsonl"
    runners = [python(tmp_path, RUNNER, str(path), w, str(runs), str(go)) for w in ("2", "1")]
    go.touch()
    outputs = [children.communicate(p, timeout=600, what="a runner") for p in runners]
    for done in outputs:
        out = done.check().stdout
        result = json.loads(out.split("RESULT ", 1)[1])
        assert result == [f"run-{s}" for s in range(runs)]
    seeds = trained(log)
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    assert twice == [], f"{len(twice)} runs trained twice"
    assert sorted(seeds) == list(range(runs))
    keys = [json.loads(x)["key"] for x in path.read_text().splitlines()]
    assert sorted(keys) == sorted(f"run-{s}" for s in range(runs))
    assert not (tmp_path / "results.rejected.jsonl").exists()
    assert list((tmp_path / "results.jsonl.claims").iterdir()) == []  # finished: no claims left


HOLDER = """
import json, os, sys, time
from baselines.lib.results import ResultsFile

store = ResultsFile(sys.argv[1])
claim = store.try_claim(sys.argv[2])
assert claim is not None
print("claimed", flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.01)
store.append({"key": sys.argv[2], "seed": 3, "value": -1})  # its record, then the release
claim.release(finished=True)
"""


def run_fast_sweep(tmp_path: Path, runs: int) -> list[dict]:
    """The fast sweep of ``runs`` runs in this process (one worker)."""
    from baselines.lib.runner import run_resumable

    sys.path.insert(0, str(tmp_path))
    try:
        from fastwork import work

        return run_resumable(
            [{"seed": s} for s in range(runs)],
            lambda j: f"run-{j['seed']}",
            work,
            tmp_path / "results.jsonl",
            1,
            progress=False,
        )
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fastwork", None)


def test_a_run_claimed_by_another_process_is_waited_for_and_not_trained(
    tmp_path, monkeypatch, capsys
):
    log = fast_worker_env(tmp_path, monkeypatch)
    path, release = tmp_path / "results.jsonl", tmp_path / "release"
    holder = python(tmp_path, HOLDER, str(path), "run-3", str(release))
    assert holder.stdout.readline().strip() == "claimed"
    threading.Timer(1.5, release.touch).start()  # after the runner did the others
    records = run_fast_sweep(tmp_path, 6)
    children.communicate(holder, timeout=60, what="the holder").check()
    assert sorted(trained(log)) == [0, 1, 2, 4, 5]  # run 3 was the other process's
    assert [r["key"] for r in records] == [f"run-{s}" for s in range(6)]
    assert records[3]["value"] == -1  # its record, read from the file
    printed = capsys.readouterr().out
    assert f"pid {holder.pid} on" in printed and "waiting" in printed


def test_a_run_whose_holder_died_is_trained_here(tmp_path, monkeypatch):
    """Claims are locks that die with their process: a killed holder frees its run."""
    log = fast_worker_env(tmp_path, monkeypatch)
    path = tmp_path / "results.jsonl"
    holder = python(tmp_path, HOLDER, str(path), "run-1", str(tmp_path / "never"))
    assert holder.stdout.readline().strip() == "claimed"
    threading.Timer(1.0, holder.kill).start()
    records = run_fast_sweep(tmp_path, 3)
    assert sorted(trained(log)) == [0, 1, 2]
    assert [r["value"] for r in records] == [0, 2, 4]


# ------------------------------------------------------------- output folders, full disk
def cli(argv: list[str]):
    """``python -m baselines ARGV``, in this process."""
    from baselines.commands import main

    return main(argv)


ENTRY_POINTS = [
    ["benchmark", "run", "--method", "ppo", "--tier", "smoke"],
    ["benchmark", "report", "--method", "ppo", "--tier", "smoke"],
    ["benchmark", "references", "--compute", "--tier", "smoke"],
    ["benchmark", "leaderboard", "--tier", "lite"],
    ["compare"],
    ["multiagent"],
    ["snr_lab", "rho-law"],
    ["snr_lab", "measure"],
    ["detectors", "score"],
    ["demo"],
    ["snr_network"],
    ["train", "--total-timesteps", "10"],
]


@pytest.mark.parametrize("kind", ["a file", "/proc"])
@pytest.mark.parametrize("argv", ENTRY_POINTS, ids=lambda a: " ".join(a[:2]))
def test_a_bad_output_folder_is_one_line_before_anything_is_written(
    argv, kind, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    if kind == "a file":
        out = tmp_path / "a_file"
        out.write_text("")
    else:
        out = Path("/proc/routine_envs_test")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(SystemExit) as end:
        cli([*argv, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2, err
    assert len(err.splitlines()) == 1 and str(out) in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no config, no results


def test_the_policy_command_checks_its_folder_before_training(tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for out in (a_file / "policy.npy", Path("/proc/routine_envs_test/policy.npy")):
        with pytest.raises(SystemExit) as end:
            cli(["detectors", "policy", "--out", str(out), "--total-timesteps", "10"])
        err = capsys.readouterr().err.strip()
        assert end.value.code == 2 and len(err.splitlines()) == 1 and str(out.parent) in err


def test_an_unwritable_folder_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    from routine_envs import cli as core_cli

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "tmpXYZ"))

    monkeypatch.setattr(core_cli.tempfile, "TemporaryFile", refuse)
    with pytest.raises(SystemExit) as end:
        cli(["benchmark", "run", "--method", "ppo", "--tier", "smoke", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2 and len(err.splitlines()) == 1
    assert "cannot write there" in err and "Permission denied" in err
    assert not (tmp_path / "configs").exists()


@pytest.fixture
def full_disk(monkeypatch):
    """Every write of file data under a folder fails with ENOSPC, as on a full disk: files
    are still created (empty), their writes fail."""
    import builtins

    folders: list[Path] = []

    def under(name: object) -> bool:
        try:
            path = Path(os.fspath(name)).resolve()
        except TypeError:
            return False
        return any(path.is_relative_to(f) for f in folders)

    real_write, real_open = os.write, io.open

    def write(fd: int, data: bytes) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target and under(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    def fake_open(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and under(file) and set(mode) & set("wax+"):

            def fail(*_: object) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            class Wrapped:
                def __init__(self, inner):
                    self._inner = inner

                def __getattr__(self, name):
                    return (
                        fail
                        if name in ("write", "writelines", "flush")
                        else getattr(self._inner, name)
                    )

                def __enter__(self):
                    return self

                def __exit__(self, *exc):
                    self._inner.close()

            return Wrapped(handle)
        return handle

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(builtins, "open", fake_open)
    return lambda folder: folders.append(Path(folder).resolve())


def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_empty_config(
    tmp_path, full_disk, capsys
):
    full_disk(tmp_path / "out" / "configs")
    with pytest.raises(SystemExit) as end:
        cli(
            [
                "benchmark",
                "run",
                "--method",
                "ppo",
                "--tier",
                "smoke",
                "--out",
                str(tmp_path / "out"),
            ]
        )
    err = capsys.readouterr().err.strip()
    assert end.value.code == 1, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "No space left on device" in err and str(tmp_path / "out" / "configs") in err
    left = list((tmp_path / "out" / "configs").iterdir())
    assert left == [], f"left behind: {left}"  # no empty config, no temporary file


def test_a_record_that_meets_a_full_disk_is_kept_and_the_file_stays_whole(tmp_path, full_disk):
    store = ResultsFile(tmp_path / "out" / "results.jsonl")
    store.append({"key": "a"})
    full_disk(store.path)
    messages = []
    assert not store.append({"key": "b", "pad": "x" * 100}, report=messages.append)
    assert len(messages) == 1 and "No space left on device" in messages[0]
    assert store.path.read_text() == '{"key": "a"}\n'  # nothing half-written
    kept = Path(messages[0].rsplit("kept in ", 1)[1])
    assert json.loads(kept.read_text().splitlines()[-1])["key"] == "b"  # nothing lost
    kept.unlink()


# ------------------------------------------------------------------------------ Ctrl-C
SLOW_SWEEP = """
import sys, time
from baselines.lib import cli
from baselines.lib.runner import run_resumable
from fastwork import work

def main(args):
    return run_resumable([{"seed": s} for s in range(40)], lambda j: f"run-{j['seed']}", work,
                         args, 2, progress=False)

if __name__ == "__main__":  # spawned pool workers import this file too
    cli.run_main(main, sys.argv[1])
"""


def as_in_a_terminal() -> None:
    """In the child before it starts: Ctrl-C's default action, as a terminal's foreground
    command has it. A test run started in the background of a non-interactive shell (``make
    test &``, ``nohup``) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt: the interrupted command would run to its end and exit 0."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt_when(proc: subprocess.Popen, ready: object, timeout: float = 300) -> tuple[str, str]:
    """Send Ctrl-C (SIGINT to the process group, as a terminal does) once ``ready()``."""
    start = time.monotonic()
    deadline = start + children.patience(timeout)
    while not ready():
        if proc.poll() is not None:
            done = children.communicate(proc, what="the command to interrupt")
            raise AssertionError(done.describe("it ended before it was ready to be interrupted"))
        if time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(children.account(
                "the command to interrupt", None, out, err, time.monotonic() - start,
                f"never ready within {children.patience(timeout):.0f} s",
            ))  # fmt: skip
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    done = children.communicate(proc, timeout=120, what="the interrupted command")
    return done.stdout, done.stderr


def saved_lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_ctrl_c_in_a_sweep_is_one_line_with_what_is_saved_and_the_resume_command(
    tmp_path, monkeypatch
):
    fast_worker_env(tmp_path, monkeypatch, seconds=0.5)
    path = tmp_path / "results.jsonl"
    proc = python(
        tmp_path, SLOW_SWEEP, str(path), start_new_session=True, preexec_fn=as_in_a_terminal
    )
    _, err = interrupt_when(proc, lambda: saved_lines(path) >= 2)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    saved = saved_lines(path)
    assert lines[0].startswith(f"interrupted: {saved} of 40 runs are saved in {path}")
    assert lines[0].endswith(f"resume with: {sys.executable} {tmp_path / 'script_0.py'} {path}")


def test_ctrl_c_in_benchmark_run_is_one_line_exit_130(tmp_path):
    out_dir = tmp_path / "out"
    argv = ["-m", "baselines", "benchmark", "run", "--method", "trajectory_mc"]
    argv += ["--protocol", "rb1"]
    argv += ["--tier", "smoke"]
    argv += ["--workers", "2", "--out", str(out_dir), "--no-progress", "--no-lab"]
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_in_a_terminal,
    )
    seen: list[float] = []

    def training() -> bool:  # the pool is up and its workers are past their start-up
        if not seen and _pool_started(proc):
            seen.append(time.monotonic())
        return bool(seen) and time.monotonic() - seen[0] > 3

    _, err = interrupt_when(proc, training)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "of 4 runs are saved in" in lines[0]
    assert lines[0].endswith("resume with: " + " ".join([sys.executable, *argv]))


def _pool_started(proc: subprocess.Popen) -> bool:
    """Whether the benchmark's process pool is up (the process has children)."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    return children.exists() and len(children.read_text().split()) >= 2
