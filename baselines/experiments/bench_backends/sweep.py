"""Sweep backends: ``python -m baselines bench_backends``.

The same small comparison sweep (DilutedDoors-v1, PPO, ``--runs`` seeds) on the process pool
and on a local Ray instance, with 1 and 2 workers, each in a fresh interpreter and a fresh
results folder; prints the wall time of each (Ray's start-up included, and beside it), the
overhead ratio Ray / process pool (goal: at most 1.15 with 2 workers on 2 cores), the speed-up
of 2 workers over 1, the mean training time per run, and whether both backends gave the same
records. Not a test: it asserts nothing.

Ray may talk to loopback addresses only here: the benchmark runs itself again inside a network
namespace with only ``lo`` up (:mod:`baselines.lib.loopback`, as root or where user namespaces
are allowed) and reports the peers of every connection; ``--no-namespace`` runs it where it is
(for a machine where Ray's traffic on the interface address is fine).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.bench_backends import analysis
from baselines.lib import cli, loopback
from baselines.lib.backend import BACKENDS

INSIDE = "ROUTINE_ENVS_BENCH_IN_NAMESPACE"
"""Set in the environment of the benchmark run inside the namespace."""


@dataclass
class BenchArgs:
    """Wall time of one sweep on the process pool and on local Ray, with 1 and 2 workers."""

    runs: int = field(default=12, metadata={"help": "runs of the sweep (seeds)", "min": 1})
    routine_length: int = field(default=2, metadata={"help": "routine length L", "min": 0})
    budget_steps: int = field(default=30_000, metadata={"help": "training steps per run", "min": 1})
    workers: list[int] = field(
        default_factory=lambda: [1, 2], metadata={"help": "worker counts to time", "min": 1}
    )
    backends: list[str] = field(
        default_factory=lambda: list(BACKENDS),
        metadata={"help": "backends to time; the first is the reference", "choices": BACKENDS},
    )
    namespace: bool = field(
        default=True,
        metadata={"help": "run inside a loopback-only network namespace (see the docstring)"},
    )


def sweep_settings(out: Path, backend: str, workers: int, args: BenchArgs) -> dict[str, Any]:
    """The compare sweep's settings of one measurement."""
    return {
        "routine_lengths": [args.routine_length],
        "methods": ["ppo"],
        "seeds": list(range(args.runs)),
        "budget_episodes": 1,
        "min_budget_steps": args.budget_steps,
        "eval_points": 4,
        "out": str(out),
        "workers": workers,
        "backend": backend,
    }


TIMINGS = ("wall_time", "cpu_time")
"""What a record measures of the machine, not of the run: left out when the two backends'
records are compared (both differ from run to run)."""


def comparable(records: list[dict[str, Any]]) -> list[str]:
    """The records as canonical JSON without :data:`TIMINGS`, sorted: what must be the same on
    every backend."""
    return sorted(
        json.dumps({k: v for k, v in r.items() if k not in TIMINGS}, sort_keys=True)
        for r in records
    )


def time_sweep(settings: dict[str, Any]) -> dict[str, Any]:
    """Run the sweep (in a fresh interpreter: see :func:`measure`); its wall time, Ray's
    start-up, the mean training time per run and the records without timings. The sweep is
    the library's training sweep (:mod:`baselines.lib.sweeps`), as ``compare`` runs it."""
    from baselines.lib import runs, sweeps
    from baselines.lib.experiment import Experiment, run_experiment

    args = cli.settings_from(
        sweeps.SweepArgs, {**settings, "out": Path(settings["out"]), "baseline": "ppo"}
    )
    sweeps.check_sweep(args, "routine_length")
    jobs = sweeps.runs_of(args, "routine_length")
    sweep = Experiment(
        "bench_backends", lambda _: jobs, runs.key, runs.train_record, runs.TrainingRecord
    )
    start = time.perf_counter()
    startup = 0.0
    if args.backend == "ray":
        from baselines.lib import ray_backend

        ray_backend.connect(args, args.workers, ray_backend.packages_of(sweep.run))
        startup = time.perf_counter() - start
    records = run_experiment(sweep, args, progress=False)
    wall = time.perf_counter() - start
    assert len(records) == len(jobs)
    return {
        "wall": wall,
        "startup": startup,
        "per_run": statistics.mean(r["wall_time"] for r in records),
        "records": comparable(records),
    }


def measure(out: Path, backend: str, workers: int, args: BenchArgs) -> dict[str, Any]:
    """:func:`time_sweep` in a fresh interpreter (a cold start, as a user's command)."""
    code = (
        "import json, sys; from baselines.experiments.bench_backends import sweep; "
        "print('RESULT ' + json.dumps(sweep.time_sweep(json.loads(sys.stdin.read()))))"
    )
    settings = json.dumps(sweep_settings(out, backend, workers, args))
    proc = subprocess.run(
        [sys.executable, "-c", code], input=settings, capture_output=True, text=True, check=False
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{backend} x {workers} failed: {proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def main(args: BenchArgs) -> dict[str, Any]:
    """Time every backend x worker count (alternately, in that order), print the table and the
    ratios, and return them; inside a loopback-only namespace unless ``args.namespace`` is off."""
    if args.namespace and not os.environ.get(INSIDE):
        reason = loopback.unavailable()
        if reason:
            cli.fail(f"no loopback-only network namespace ({reason}); --no-namespace to run here")
        again = [sys.executable, "-m", "baselines", "bench_backends", *cli.to_argv(args)]
        outcome = loopback.run(
            again, env={**os.environ, INSIDE: "1"}, timeout=3 * 3600, capture=False
        )
        outside = outcome.outside()
        print(
            f"network: {len(outcome.peers)} distinct peers, "
            + (f"OUTSIDE 127.0.0.0/8: {outside}" if outside else "all in 127.0.0.0/8")
            + f"; interfaces up: {', '.join(outcome.interfaces)}"
        )
        return {"returncode": outcome.returncode, "outside": outside}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workers in args.workers:
            for backend in args.backends:
                result = measure(Path(tmp) / f"{backend}-{workers}", backend, workers, args)
                rows.append({"backend": backend, "workers": workers, **result})
                print(
                    f"{backend:<8} {workers} worker(s): {result['wall']:7.1f} s "
                    f"(start-up {result['startup']:.1f} s, {result['per_run']:.2f} s per run)",
                    flush=True,
                )
    return report(rows, args)


def report(rows: list[dict[str, Any]], args: BenchArgs) -> dict[str, Any]:
    """Print and return the overhead ratios, the speed-ups and whether the records agree
    (:func:`baselines.experiments.bench_backends.analysis.summary`)."""
    result = analysis.summary(rows, args.backends, args.workers)
    analysis.print_summary(result, args)
    return result
