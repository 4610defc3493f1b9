"""The resumable runner: run the jobs of a sweep that are not yet in its results file."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from baselines.lib.backend import BackendArgs, check_backend
from baselines.lib.results import Check, ResultsFile, Schema


class RunFailed(RuntimeError):
    """Runs of a sweep failed; the message names each (env, kwargs, method, seed) and its
    error. The runs that finished are in the results file."""


def describe(job: dict[str, Any]) -> str:
    """``DilutedDoors-v1 {'routine_length': 4}, method ppo, seed 1`` (the fields a job has)."""
    parts = [f"{job['env_id']} {job.get('env_kwargs', {})}" if "env_id" in job else ""]
    parts += [f"{name} {job[name]}" for name in ("experiment", "method", "param") if name in job]
    if "env_id" not in job and "routine_length" in job:
        parts.append(f"routine_length {job['routine_length']}")
    parts += [f"seed {job['seed']}"] if "seed" in job else []
    return ", ".join(p for p in parts if p) or repr(job)[:200]


def run_resumable(
    jobs: list[dict[str, Any]],
    key: Callable[[dict[str, Any]], str],
    worker: Callable[[dict[str, Any]], dict[str, Any]],
    path: Path,
    workers: int,
    required: tuple[str, ...] | Schema = ("key",),
    check: Check | None = None,
    progress: bool = True,
    unit: str = "run",
    backend: BackendArgs | None = None,
) -> list[dict[str, Any]]:
    """Run the jobs whose ``key`` is not yet in the results file at ``path`` with ``worker``
    (``workers`` spawned processes, or in this process for 1; or Ray tasks when ``backend``
    says so, see :mod:`baselines.lib.backend`), appending each record as soon as it is done;
    return the records of all ``jobs`` in order. ``worker`` must be importable by name
    (spawned processes and Ray workers look it up). Records are validated (the ``required``
    fields and their kinds, finite numbers, ``check``) when the file is loaded and when a
    record is written (:class:`~baselines.lib.results.ResultsFile`); an invalid record is
    kept aside and left out of the returned records (reported), so tables never see it."""
    from tqdm import tqdm

    settings = backend if backend is not None else BackendArgs()
    check_backend(settings)  # before any work: a bad backend setting names itself
    store = ResultsFile(path, required, check)
    store.check_writable()  # before any work: a finished run must have somewhere to go
    keys = [key(j) for j in jobs]
    done = {r["key"]: r for r in store.load()}
    todo = [(k, j) for k, j in zip(keys, jobs, strict=True) if k not in done]
    other = len(set(done) - set(keys))
    tasks = [(worker, k, j) for k, j in todo]
    results: Iterator[tuple[str, Any]] = iter(())
    where = f"{workers} worker(s)"
    if settings.backend == "ray" and todo:
        from baselines.lib import ray_backend

        where = ray_backend.connect(settings, workers, ray_backend.packages_of(worker))
        results = ray_backend.run_tasks(_run_one, tasks, settings, _lost)  # runs start when read
    print(
        f"{len(jobs)} {unit}s, {len(jobs) - len(todo)} already in {store.path}, "
        f"{len(todo)} to do on {where}"
        + (f"; {other} record(s) there of other settings, not used" if other else ""),
        flush=True,
    )
    bar = tqdm(
        total=len(jobs),
        initial=len(jobs) - len(todo),
        unit=unit,
        disable=not progress,
        dynamic_ncols=True,
    )
    pool = None
    invalid: list[str] = []
    failures: list[str] = []
    try:
        if settings.backend == "process" and workers > 1 and len(todo) > 1:
            pool = mp.get_context("spawn").Pool(min(workers, len(todo)))
            results = pool.imap_unordered(_run_one, tasks)
        elif settings.backend == "process":
            results = map(_run_one, tasks)
        for job_key, record in results:
            if isinstance(record, _Failure):
                failures.append(record.message)
                bar.write(f"failed: {record.message}")
                bar.update()
                continue
            record["key"] = job_key  # the key of the job as planned, never recomputed
            try:
                store.validate(record)
            except ValueError as err:
                invalid.append(f"{job_key}: {err}")
            else:
                done[job_key] = record
            store.append(record, report=bar.write)  # kept aside when invalid or unwritable
            bar.update()
    finally:
        if pool is not None:
            pool.terminate()
        if isinstance(results, Generator):
            results.close()  # Ray: cancels the runs still in flight
        bar.close()
    if invalid:
        print(
            f"{len(invalid)} {unit}(s) gave an invalid record, left out of the results and "
            f"kept in {store.rejected}: " + "; ".join(invalid),
            flush=True,
        )
    if failures:
        raise RunFailed(
            f"{len(failures)} of {len(todo)} {unit}(s) failed (the {len(done)} done are kept in "
            f"{store.path}; run again to retry the rest): " + " | ".join(failures)
        )
    return [done[k] for k in keys if k in done]


class _Failure:
    """What a worker returns instead of a record when its run raised."""

    def __init__(self, message: str) -> None:
        self.message = message


def _lost(job: dict[str, Any], why: str) -> _Failure:
    """The failure of a run that gave no result (its Ray worker died, retries spent)."""
    return _Failure(f"{describe(job)}: {why}")


def _run_one(task: tuple[Callable, str, dict[str, Any]]) -> tuple[str, Any]:
    """``(key, worker(job))``, or ``(key, _Failure)`` naming the run when it raised, so the
    other runs go on (a module-level function: spawned processes look it up)."""
    worker, job_key, job = task
    try:
        return job_key, worker(job)
    except Exception as err:
        return job_key, _Failure(f"{describe(job)}: {type(err).__name__}: {err}")
