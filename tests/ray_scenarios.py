"""Drivers of the Ray tests, run inside a loopback-only network namespace
(:func:`baselines.lib.loopback.run`): ``python -m tests.ray_scenarios {same,cluster} OUT``.

Each writes what the test checks into ``OUT`` (records, the drivers' output and status) and
leaves the Ray processes to the namespace's watcher, which ends them by process id (``ray
stop`` would end every Ray process of the machine by name, other users' included), and its wall
time. Every wait is a patience (:func:`tests.children.patience`: longer on a loaded machine),
and Ray's own start-up and health-check timeouts are lengthened (:func:`patient_ray`), so a
loaded machine makes the scenarios slower, not failed.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from baselines.commands import settings_of
from baselines.experiments.compare import sweep as compare
from baselines.experiments.snr_lab import sweep as snr_lab
from baselines.lib.backend import BackendArgs
from baselines.lib.runner import RunFailed, run_resumable
from tests import children

ROOT = Path(__file__).resolve().parents[1]
TINY_LAB = ["rho-law", "--episodes", "320", "--routine-lengths", "0", "2", "5"]
TINY_LAB += ["--params", "per_state"]
LONG_LENGTHS = ["10", "20", "30", "40"]  # about 0.5 to 1.5 s each
LONG_LAB = ["rho-law", "--episodes", "16000", "--routine-lengths", *LONG_LENGTHS]
LONG_LAB += ["--params", "per_state"]


RAY_PATIENCE = {
    # the GCS's port file and a node's first connection to the GCS (default 30 s)
    "RAY_gcs_server_port_wait_time_s": 300,
    # requests to the GCS, e.g. the node's registration at start (default 60 s)
    "RAY_gcs_server_request_timeout_seconds": 300,
    # a worker process registering with its raylet (default 60 s)
    "RAY_worker_register_timeout_seconds": 300,
    # the GCS marks a raylet dead after this many failed health checks of this timeout
    # (default 5 of 10 s): a starved raylet is slow, not dead
    "RAY_health_check_timeout_ms": 60_000,
    "RAY_health_check_failure_threshold": 20,
}
"""Ray's timeouts that a loaded machine (load 20 on 2 cores) overruns, and the values the
scenarios set (each may be given in the environment instead). The raylet's own wait for its node
to register (30 s) is not configurable: :func:`start_head` tries ``ray start`` twice instead."""


def patient_ray() -> None:
    """Set :data:`RAY_PATIENCE` in this process's environment (Ray's processes and the drivers
    started from here inherit it), keeping values given already."""
    for name, value in RAY_PATIENCE.items():
        os.environ.setdefault(name, str(value))


def tiny_compare(out: Path, **changes: Any) -> compare.SweepArgs:
    """Two short training runs (the cheapest compare sweep that trains)."""
    settings: dict[str, Any] = dict(
        routine_lengths=[1],
        methods=["ppo", "trajectory_mc"],
        seeds=[0],
        budget_episodes=40,
        eval_points=2,
        out=out,
        workers=2,
    )
    return compare.SweepArgs(**{**settings, **changes})


def slow_job(job: dict[str, Any]) -> dict[str, Any]:
    """A test run: marks its start (seed and process id) in ``job["marks"]``, sleeps, returns
    its record; a job with ``die`` kills its own process every time (a crashing worker), one
    with ``divide`` raises ``ZeroDivisionError`` (a run that fails: its traceback is kept)."""
    if job.get("die"):
        os._exit(3)
    if job.get("divide"):
        return {"value": 1 / 0}
    marks = Path(job["marks"])
    (marks / f"{job['seed']}-{os.getpid()}").touch()
    time.sleep(job["seconds"])
    return {**job, "value": job["seed"] ** 2}


def same(out: Path) -> None:
    """The tiny SNR lab (its CLI) and the tiny compare sweep on one local Ray instance."""
    patient_ray()
    snr_lab.main(settings_of("snr_lab", [*TINY_LAB, "--backend", "ray", "--out", str(out / "lab")]))
    compare.run_sweep(tiny_compare(out / "compare", backend="ray"), progress=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster(out: Path) -> None:
    """A real local cluster (``ray start --head`` with token authentication, as Ray advises)
    and two drivers joining it with ``--address``: :func:`killed_worker`, then
    :func:`killed_driver`; their reports in ``OUT/report.json``."""
    out.mkdir(parents=True, exist_ok=True)
    patient_ray()
    token = out / "auth_token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    start = time.perf_counter()
    address, failed_starts = start_head()
    report: dict[str, Any] = {"seconds": {"ray start": time.perf_counter() - start}}
    report["failed ray starts"] = failed_starts
    print(f"ray start: {report['seconds']['ray start']:.1f} s", flush=True)
    report["worker"] = killed_worker(out / "worker", address)
    report["seconds"]["killed worker"] = time.perf_counter() - start
    print(f"killed worker: {report['seconds']['killed worker']:.1f} s", flush=True)
    report["driver"] = killed_driver(out / "driver", address)
    report["seconds"]["killed driver"] = time.perf_counter() - start
    print(json.dumps(report["seconds"]))
    (out / "report.json").write_text(json.dumps(report))


def start_head() -> tuple[str, list[str]]:
    """``ray start --head`` on a free port, tried twice (a loaded machine can overrun the
    raylet's fixed 30 s start-up wait); its address and the account of each failed attempt.
    ``AssertionError`` with both attempts' output when neither starts."""
    ray = str(Path(sys.executable).parent / "ray")
    failed: list[str] = []
    for _ in range(2):
        port = free_port()
        head = [ray, "start", "--head", f"--port={port}", "--num-cpus=2", "--disable-usage-stats"]
        child = children.run([*head, "--include-dashboard=false"], timeout=180)
        if child.returncode == 0:
            return f"127.0.0.1:{port}", failed
        failed.append(child.describe())
        print(f"ray start failed, trying once more:\n{failed[-1]}", file=sys.stderr, flush=True)
    raise AssertionError("ray start failed twice:\n" + "\n".join(failed))


def killed_worker(out: Path, address: str) -> dict[str, Any]:
    """:func:`drive` on the cluster, the process of its first run SIGKILLed during the run."""
    marks = out / "marks"
    marks.mkdir(parents=True)
    argv = [sys.executable, "-m", "tests.ray_scenarios", "drive", str(out), address]
    launched = time.monotonic()
    driver = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed = None
    deadline = time.monotonic() + children.patience(120)
    while killed is None and driver.poll() is None and time.monotonic() < deadline:
        started = sorted(marks.iterdir())
        if started:
            seed, pid = started[0].name.split("-")
            os.kill(int(pid), signal.SIGKILL)  # a worker process dies during its run
            killed = int(seed)
        time.sleep(0.05)
    done = children.communicate(driver, 180, "the driver of killed_worker", launched)
    report = {"killed": killed, "stdout": done.stdout, "stderr": done.stderr[-3000:]}
    report["returncode"] = driver.returncode
    report["marks"] = sorted(p.name for p in marks.iterdir())
    report["account"] = done.describe()
    return report


def killed_driver(out: Path, address: str) -> dict[str, Any]:
    """The SNR lab's CLI on the cluster, its driver SIGKILLed after its first record, then run
    again."""
    argv = [sys.executable, "-m", "baselines", "snr_lab", *LONG_LAB, "--backend", "ray"]
    argv += ["--address", address, "--out", str(out / "lab")]
    results = out / "lab" / "rho_law" / "results.jsonl"
    driver = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + children.patience(120)
    while driver.poll() is None and time.monotonic() < deadline:
        if results.exists() and results.read_text().count("\n") >= 1:
            break
        time.sleep(0.02)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    first = results.read_text() if results.exists() else ""
    rerun = children.run(argv, cwd=ROOT, timeout=180)
    report = {"first": first, "rerun": rerun.stdout, "stderr": rerun.stderr[-3000:]}
    report["returncode"] = rerun.returncode
    report["account"] = rerun.describe()
    return report


CLUSTER_JOBS = 4
DYING_SEED = 99
RAISING_SEED = 98


def drive(out: Path, address: str) -> None:
    """The driver of :func:`killed_worker`: four slow jobs, one whose worker always dies and
    one that raises."""
    jobs = [{"seed": s, "seconds": 1.0, "marks": str(out / "marks")} for s in range(CLUSTER_JOBS)]
    jobs.append({"seed": DYING_SEED, "die": True, "seconds": 0.0, "marks": str(out / "marks")})
    jobs.append({"seed": RAISING_SEED, "divide": True, "seconds": 0.0, "marks": str(out / "marks")})
    settings = BackendArgs(backend="ray", address=address, retries=1)
    try:
        run_resumable(
            jobs, lambda j: f"seed {j['seed']}", slow_job, out / "results.jsonl", 2,
            progress=False, backend=settings,
        )  # fmt: skip
    except RunFailed as err:
        print(f"RunFailed: {err}")
        sys.exit(1)


SCENARIOS = {"same": same, "cluster": cluster, "drive": drive}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]](Path(sys.argv[2]), *sys.argv[3:])
