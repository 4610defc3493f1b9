"""The resumable runner: run the jobs of a sweep that are not yet in its results file.

Several runners may share one results file (two people, or two terminals, on one ``--out``):
each run is claimed before it starts (:meth:`~baselines.lib.results.ResultsFile.try_claim`),
so no run is ever trained twice. A runner that finds a run claimed by another live process
runs the others first, then waits for it and reads its record from the file (or runs it itself
if that process ended without writing it). Ctrl-C stops the runs in progress and raises
:class:`Interrupted`, whose message says what is saved.

With a :class:`Batching`, jobs of one group (e.g. the seeds and densities of one environment and
method for the batched trainer) go to one worker call together: each is still claimed, keyed,
validated and written as its own record, all of them when the call returns (a call stopped
halfway saves none of its runs).

A run that raises is kept in ``<results>.failures.jsonl`` with its traceback (the last
:data:`TRACEBACK_CHARS` characters); the console shows the first failure whole and counts the
others in one line.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import queue
import signal
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.lib.backend import BackendArgs, check_backend
from baselines.lib.results import Check, Claim, Position, ResultsFile, Schema, Upgrade
from routine_envs.cli import CommandFailed
from routine_envs.cli import Interrupted as CommandInterrupted

WAIT_SECONDS = 0.5
"""How often a runner looks again at the runs other processes hold (seconds)."""

TRACEBACK_CHARS = 20_000
"""The end of a failed run's traceback kept in the failures file (characters)."""

Task = tuple[Callable[[Any], Any], str, Any]
"""``(worker, key, job)``; for a batch ``(batch worker, key of its first job, _BatchJob)``."""


@dataclass(frozen=True)
class Batching:
    """Which jobs share one worker call, and the worker that runs them together.

    Attributes:
        group: a job's group (jobs of one group may share a call), ``None``: the job runs
            alone through the runner's ordinary ``worker``.
        worker: ``worker(jobs) -> records``, one record (or row) per job, in order; a
            module-level function (spawned processes and Ray workers look it up by name).
        max_size: jobs per call at most.
    """

    group: Callable[[dict[str, Any]], str | None]
    worker: Callable[[list[dict[str, Any]]], Sequence[Any]]
    max_size: int = 64


@dataclass(frozen=True)
class _BatchJob:
    """The jobs of one batch call, with their keys."""

    keys: tuple[str, ...]
    jobs: tuple[dict[str, Any], ...]


def batch_sizes(groups: Sequence[str | None], workers: int, max_size: int) -> dict[str | None, int]:
    """Jobs per call for each group of the jobs to do (``groups``: each job's group): at most
    ``max_size``, and small enough that the calls give every one of ``workers`` something to
    do when there are fewer groups than workers; a group's calls are of equal size (give or
    take one). ``None`` (jobs run alone) gets 1."""
    counts = Counter(g for g in groups if g is not None)
    limit = max(1, min(max_size, math.ceil(sum(counts.values()) / max(1, workers))))
    sizes: dict[str | None, int] = {None: 1}
    for group, n in counts.items():
        calls = math.ceil(n / limit)
        sizes[group] = math.ceil(n / calls)
    return sizes


class RunFailed(CommandFailed):
    """Runs of a sweep failed; the message (one line) names the first (env, kwargs, method,
    seed) and its error, counts the others and says which file keeps every traceback. The runs
    that finished are in the results file."""


class Interrupted(CommandInterrupted):
    """Ctrl-C during a sweep: the runs in progress were stopped; the message says how many runs
    are saved and where (a rerun resumes from there)."""


def describe(job: Any) -> str:
    """``DilutedDoors-v1 {'routine_length': 4}, method ppo, seed 1`` (the fields a job has; a
    job that is an object describes itself: ``job.describe()``)."""
    if not isinstance(job, dict):
        return job.describe() if hasattr(job, "describe") else repr(job)[:200]
    parts = [f"{job['env_id']} {job.get('env_kwargs', {})}" if "env_id" in job else ""]
    parts += [f"{name} {job[name]}" for name in ("experiment", "method", "param") if name in job]
    if "density_value" in job and job.get("density_kwarg") not in job.get("env_kwargs", {}):
        parts.append(f"{job.get('density_kwarg', 'density')} {job['density_value']}")
    parts += [f"seed {job['seed']}"] if "seed" in job else []
    return ", ".join(p for p in parts if p) or repr(job)[:200]


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    counted = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counted is not None:
        return max(1, counted() or 1)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_workers(workers: int, flag: str = "--workers") -> None:
    """``ValueError`` naming ``flag`` and the value unless ``workers`` is an int >= 1."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"{flag} {workers}: must be >= 1 (worker processes)")


def pool_size(workers: int, runs: int) -> int:
    """Worker processes for ``runs`` runs: ``workers``, but never more than the runs nor than
    :func:`usable_cpus` (more processes than CPUs only cost memory)."""
    return max(1, min(workers, runs, usable_cpus()))


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
    upgrade: Upgrade | None = None,
    batching: Batching | None = None,
) -> list[dict[str, Any]]:
    """Run the jobs whose ``key`` is not yet in the results file at ``path`` with ``worker``
    (``workers`` spawned processes, or in this process for 1; or Ray tasks when ``backend``
    says so, see :mod:`baselines.lib.backend`), appending each record as soon as it is done;
    return the records of all ``jobs`` in order. ``worker`` must be importable by name
    (spawned processes and Ray workers look it up). Records are validated (the ``required``
    fields and their kinds, finite numbers, ``check``) when the file is loaded and when a
    record is written (:class:`~baselines.lib.results.ResultsFile`); an invalid record is
    kept aside and left out of the returned records (reported), so tables never see it.
    ``worker`` returns a record's row, or a record object with ``row()``
    (:class:`~baselines.lib.records.Record`); rows read from the file go through ``upgrade``
    first (older field names), the file itself unchanged. ``batching``: jobs of one group run
    in one call of its worker (:class:`Batching`, sized by :func:`batch_sizes`).
    Each run is claimed before it starts; runs claimed by another live process are waited for
    (see the module docstring).

    Raises:
        RunFailed: some runs raised (each named; the others are saved).
        Interrupted: Ctrl-C (a ``KeyboardInterrupt``; the runs finished are saved).
    """
    from tqdm import tqdm

    settings = backend if backend is not None else BackendArgs()
    check_workers(workers)
    check_backend(settings)  # before any work: a bad backend setting names itself
    store = ResultsFile(path, required, check, upgrade)
    store.check_writable()  # before any work: a finished run must have somewhere to go
    keys = [key(j) for j in jobs]
    done = {r["key"]: r for r in store.load()}
    todo = [(k, j) for k, j in zip(keys, jobs, strict=True) if k not in done]
    other = len(set(done) - set(keys))
    cpus = usable_cpus()
    if settings.address is None and min(workers, len(todo)) > cpus:
        print(f"--workers {workers}: capped at the {cpus} CPUs this process may use", flush=True)
        workers = cpus
    where = f"{workers} worker(s)"
    if settings.backend == "ray" and todo:
        from baselines.lib import ray_backend

        where = ray_backend.connect(settings, workers, ray_backend.packages_of(worker))
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
    sweep = _Sweep(store, worker, set(keys), done, bar, unit)
    if batching is not None and todo:
        parallel = workers
        if settings.backend == "ray":
            from baselines.lib import ray_backend

            parallel = ray_backend.cluster_cpus()
        sweep.batching = batching
        sweep.group_of = {k: batching.group(job) for k, job in todo}  # each computed once
        sweep.batch_size = batch_sizes(list(sweep.group_of.values()), parallel, batching.max_size)
    try:
        if settings.backend == "ray":
            sweep.run_on_ray(todo, settings)
        else:
            sweep.run_here(todo, workers)
    except KeyboardInterrupt:
        saved = sum(k in done for k in keys)
        running = f"; the {sweep.running} {unit}(s) in progress were stopped" * bool(sweep.running)
        raise Interrupted(
            f"interrupted: {saved} of {len(jobs)} {unit}s are saved in {store.path}{running}"
        ) from None
    finally:
        sweep.release_all()
        bar.close()
    if sweep.by_others:
        print(
            f"{sweep.by_others} {unit}(s) were run by another process "
            f"({', '.join(sorted(sweep.holders))}) and read from {store.path}",
            flush=True,
        )
    if sweep.invalid:
        print(
            f"{len(sweep.invalid)} {unit}(s) gave an invalid record, left out of the results and "
            f"kept in {store.rejected}: " + "; ".join(sweep.invalid),
            flush=True,
        )
    if sweep.failures:
        raise RunFailed(
            f"{len(sweep.failures)} of {len(todo)} {unit}(s) failed (the {len(done)} done are "
            f"kept in {store.path}; run again to retry the rest): "
            + summarize_failures(sweep.failures, unit)
            + f"; tracebacks in {store.failures}"
        )
    return [done[k] for k in keys if k in done]


def summarize_failures(failures: Sequence[_Failure], unit: str = "run") -> str:
    """The first failure's line, then the others counted in one clause: ``and 7 more run(s)
    failed the same way`` (or by error when they differ, the three most frequent named)."""
    first, rest = failures[0], failures[1:]
    if not rest:
        return first.message
    counts = Counter(f.error for f in rest)
    if list(counts) == [first.error]:
        return f"{first.message}; and {len(rest)} more {unit}(s) failed the same way"
    parts = [f"{counts.pop(first.error)} the same way"] if first.error in counts else []
    parts += [f"{n} with {_clip(error, 200)}" for error, n in counts.most_common(3)]
    others = sum(counts.values()) - sum(n for _, n in counts.most_common(3))
    parts += [f"{others} with other errors"] if others else []
    return f"{first.message}; and {len(rest)} more {unit}(s) failed: {', '.join(parts)}"


def _clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


class _Sweep:
    """The runs of one :func:`run_resumable` call: claims, dispatch and bookkeeping."""

    def __init__(
        self,
        store: ResultsFile,
        worker: Callable[[dict[str, Any]], dict[str, Any]],
        planned: set[str],
        done: dict[str, dict[str, Any]],
        bar: Any,
        unit: str,
    ) -> None:
        self.store, self.worker, self.planned, self.done = store, worker, planned, done
        self.bar, self.unit = bar, unit
        self.claims: dict[str, Claim] = {}
        self.waiting: dict[str, dict[str, Any]] = {}  # runs another process holds
        self.holders: set[str] = set()
        self.position: Position | None = None
        self.by_others = 0
        self.invalid: list[str] = []
        self.failures: list[_Failure] = []
        self.batching: Batching | None = None
        self.group_of: dict[str, str | None] = {}  # a run's batch group (key -> group)
        self.batch_size: dict[str | None, int] = {None: 1}

    @property
    def running(self) -> int:
        return len(self.claims)

    def refresh(self) -> None:
        """Take the records other processes appended since the last look."""
        records, self.position = self.store.read_new(self.position)
        for record in records:
            k = record["key"]
            if k in self.planned and k not in self.done:
                self.done[k] = record
                self.waiting.pop(k, None)
                if k not in self.claims:
                    self.by_others += 1
                    self.bar.update()

    def claim(self, job_key: str, job: dict[str, Any]) -> bool:
        """Claim the run ``job_key`` for this process (``False``: another process holds it, now
        in :attr:`waiting`)."""
        claim = self.store.try_claim(job_key)
        if claim is None:
            self.waiting[job_key] = job
            holder = self.store.holder(job_key)
            if holder not in self.holders:
                self.holders.add(holder)
                self.bar.write(
                    f"{self.unit}s of this sweep are being run by another process ({holder}) "
                    f"writing {self.store.path}: running the others first, then waiting "
                    "for those"
                )
            return False
        self.claims[job_key] = claim
        return True

    def next_task(self, pending: deque[tuple[str, dict[str, Any]]]) -> Task | None:
        """The next pending run this process could claim (and that is still not done), with
        the other pending runs of its batch group (:class:`Batching`) up to the group's size,
        or ``None``; runs held by other processes move to :attr:`waiting`."""
        while pending:
            k, job = pending.popleft()
            if k in self.done or not self.claim(k, job):
                continue
            group = self.group_of.get(k)
            members = [(k, job)]
            if group is not None:
                rest: deque[tuple[str, dict[str, Any]]] = deque()
                size = self.batch_size.get(group, 1)
                while pending and len(members) < size:
                    other = pending.popleft()
                    if other[0] in self.done or self.group_of.get(other[0]) != group:
                        rest.append(other)
                    elif self.claim(*other):
                        members.append(other)
                pending.extendleft(reversed(rest))
            self.refresh()  # some may have been finished by another process just before
            for member_key, _ in members:
                if member_key in self.done:  # written by another process meanwhile
                    self.claims.pop(member_key).release(finished=True)
                    self.by_others += 1
                    self.bar.update()
            members = [m for m in members if m[0] not in self.done]
            if not members:
                continue
            if group is None:
                return (self.worker, *members[0])
            batch = _BatchJob(tuple(m[0] for m in members), tuple(m[1] for m in members))
            return (self.batching.worker, members[0][0], batch)
        return None

    def wait_for_others(self, pending: deque[tuple[str, dict[str, Any]]]) -> None:
        """Wait a little, take what other processes finished, and queue their runs again (a
        run whose holder ended without writing it is then claimed here)."""
        time.sleep(WAIT_SECONDS)
        self.refresh()
        pending.extend(self.waiting.items())
        self.waiting.clear()

    def handle(self, job_key: str, record: Any) -> None:
        """Write a finished run's record (or note its failure) and release its claim; a
        batch's result (a list of ``(key, record)``) run by run."""
        if isinstance(record, list):
            for member_key, member in record:
                self.handle(member_key, member)
            return
        claim = self.claims.pop(job_key)
        finished = False
        try:
            if isinstance(record, _Failure):
                self.failures.append(record)
                self.store.note_failure(
                    job_key, record.message, report=self.bar.write, traceback=record.traceback
                )
                if len(self.failures) == 1:  # the first whole; the others counted at the end
                    shown = record.traceback.rstrip() or "(no traceback)"
                    self.bar.write(f"failed: {record.message}\n{shown}")
                return
            if callable(getattr(record, "row", None)):
                record = record.row()
            record["key"] = job_key  # the key of the job as planned, never recomputed
            try:
                self.store.validate(record)
            except ValueError as err:
                self.invalid.append(f"{job_key}: {err}")
            else:
                self.done[job_key] = record
            # kept aside when invalid or unwritable
            finished = self.store.append(record, report=self.bar.write) and job_key in self.done
        finally:
            claim.release(finished=finished)
            self.bar.update()

    def run_here(self, todo: list[tuple[str, dict[str, Any]]], workers: int) -> None:
        """Run on a spawned process pool (in this process for one worker or one run), at most
        ``workers`` runs claimed at a time."""
        pending = deque(todo)
        finished: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        size = pool_size(workers, len(todo))
        pool = _start_pool(size) if size > 1 else None
        in_flight = 0
        try:
            while True:
                while in_flight < max(size, 1) and (task := self.next_task(pending)):
                    if pool is None:
                        finished.put(_run_one(task))
                    else:
                        pool.apply_async(
                            _run_one,
                            (task,),
                            callback=finished.put,
                            error_callback=lambda err, t=task: finished.put(
                                (t[1], _lost(t[2], _error_line(err), _traceback_of(err)))
                            ),
                        )
                    in_flight += 1
                if in_flight:
                    self.handle(*_next_result(finished))
                    in_flight -= 1
                elif self.waiting:
                    self.wait_for_others(pending)
                else:
                    return
        finally:
            if pool is not None:
                pool.terminate()

    def run_on_ray(self, todo: list[tuple[str, dict[str, Any]]], settings: BackendArgs) -> None:
        """Run as Ray tasks: claim what can be claimed, run it, then wait for the rest."""
        from baselines.lib import ray_backend

        pending = deque(todo)
        while True:
            tasks = []
            while task := self.next_task(pending):
                tasks.append(task)
            if tasks:
                results = ray_backend.run_tasks(_run_one, tasks, settings, _lost)
                try:
                    for job_key, record in results:
                        self.handle(job_key, record)
                finally:
                    results.close()  # cancels the runs still in flight
            elif self.waiting:
                self.wait_for_others(pending)
            else:
                return

    def release_all(self) -> None:
        """Give up every claim still held (runs stopped by Ctrl-C or an error)."""
        for claim in self.claims.values():
            claim.release(finished=False)
        self.claims.clear()


def _next_result(finished: queue.SimpleQueue[tuple[str, Any]]) -> tuple[str, Any]:
    """The next finished run, waiting in short steps (so Ctrl-C is seen at once)."""
    while True:
        try:
            return finished.get(timeout=0.2)
        except queue.Empty:
            continue


def _start_pool(size: int) -> Any:
    """A spawned pool of ``size`` workers that leave Ctrl-C to the runner: they start with
    SIGINT ignored (inherited, so not even their start-up prints a traceback) and keep it so.
    This process ignores it too while it starts them (about 0.1 s): a Ctrl-C then is missed."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    try:
        return mp.get_context("spawn").Pool(size, initializer=_ignore_interrupts)
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, previous)


def _ignore_interrupts() -> None:
    """A pool worker leaves Ctrl-C to the runner, which stops it (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Failure:
    """What a worker returns instead of a record when its run raised: the run (``what``), its
    error (one line) and the end of its traceback."""

    def __init__(self, what: str, error: str, traceback_text: str = "") -> None:
        self.what, self.error = what, error
        self.traceback = _bounded(traceback_text)

    @property
    def message(self) -> str:
        """``<the run>: <error>``, one line."""
        return f"{self.what}: {self.error}"


def _bounded(text: str) -> str:
    """The last :data:`TRACEBACK_CHARS` characters of ``text``, saying what was cut."""
    if len(text) <= TRACEBACK_CHARS:
        return text
    return f"[{len(text) - TRACEBACK_CHARS} characters cut]\n" + text[-TRACEBACK_CHARS:]


def _error_line(err: BaseException) -> str:
    """``ZeroDivisionError: division by zero``, one line (bounded)."""
    return _clip(f"{type(err).__name__}: {err}", 2_000)


def _traceback_of(err: BaseException) -> str:
    """The traceback of ``err`` with its causes (a pool's remote traceback is one)."""
    return "".join(traceback.format_exception(err))


def _lost(job: Any, why: str, detail: str = "") -> Any:
    """The failure of a run that gave no result (its Ray worker died, retries spent; a pool
    call that failed), ``detail`` its traceback or error text; of each run of a batch, as a
    batch's result."""
    if isinstance(job, _BatchJob):
        pairs = zip(job.keys, job.jobs, strict=True)
        return [(k, _Failure(describe(j), why, detail)) for k, j in pairs]
    return _Failure(describe(job), why, detail)


def _run_one(task: Task) -> tuple[str, Any]:
    """``(key, worker(job))``, or ``(key, _Failure)`` naming the run when it raised, so the
    other runs go on (a module-level function: spawned processes look it up). A batch:
    ``(key, [(key, record), ...])`` of its runs, every one a ``_Failure`` when the call
    raised or returned the wrong number of records."""
    worker, job_key, job = task
    if isinstance(job, _BatchJob):
        try:
            records = list(worker(list(job.jobs)))
            if len(records) != len(job.jobs):
                raise ValueError(f"{len(records)} records for {len(job.jobs)} runs of a batch")
        except Exception as err:
            why = f"{_error_line(err)} (in a batch of {len(job.jobs)} runs)"
            text = traceback.format_exc()
            records = [_Failure(describe(j), why, text) for j in job.jobs]
        return job_key, list(zip(job.keys, records, strict=True))
    try:
        return job_key, worker(job)
    except Exception as err:
        return job_key, _Failure(describe(job), _error_line(err), traceback.format_exc())
