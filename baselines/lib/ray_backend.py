"""Runs as Ray tasks (``--backend ray``; imports Ray, so it is imported only when asked for).

Each run is one task of one CPU (so Ray never places more runs on a node than it has CPUs) with
torch threads 1; at most ``max_in_flight`` runs are submitted at once (default: twice the
cluster's CPUs, read again as runs finish, so nodes that join are used and every CPU has its
next run queued). A task whose worker dies (process killed, node lost) is started again by Ray
up to ``retries`` times; after that the run is reported as failed with its settings and the
others go on. A run that raises is never retried: the runner reports it like the process pool.

The workers must run the driver's code (run keys hold its fingerprint): on a cluster
(``address``) the packages of the suite and of the worker function are shipped with the job
(Ray's ``py_modules``); a local instance imports them from the driver's folder like the
process pool. Either way each worker checks, once, that its copy of those packages is the
driver's (a digest of their files) and refuses to run otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import ray

from baselines.lib.backend import BackendArgs

TASK_NAME = "sweep-run"
"""The name of every run's task (its worker's process title is ``ray::sweep-run``)."""
SUITE_PACKAGES = ("baselines", "routine_envs")

Task = tuple[Callable[[dict[str, Any]], Any], str, dict[str, Any]]
"""``(worker, key, job)``, as the runner hands it to its ``call``."""


class CodeMismatch(RuntimeError):
    """A Ray worker's copy of the suite is not the driver's."""


def packages_of(worker: Callable) -> tuple[str, ...]:
    """The top-level packages the runs need: the suite's and the worker function's."""
    top = worker.__module__.split(".")[0]
    extra = () if top in SUITE_PACKAGES or top == "__main__" else (top,)
    return (*SUITE_PACKAGES, *extra)


def package_dir(name: str) -> Path:
    """The folder this process imports the package ``name`` from."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise CodeMismatch(f"package {name!r} cannot be imported here")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def code_digest(packages: tuple[str, ...]) -> str:
    """A digest of every file (path and bytes, caches left out) of the ``packages`` as this
    process would import them."""
    digest = hashlib.sha256()
    for name in packages:
        root = package_dir(name)
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def execute(call: Callable[[Task], Any], task: Task, digest: str, packages: tuple[str, ...]):
    """One run in a Ray worker: check the code is the driver's, one torch thread, ``call(task)``."""
    here = code_digest(packages)
    if here != digest:
        raise CodeMismatch(
            f"this worker's copy of {', '.join(packages)} ({package_dir(packages[0]).parent}) "
            "differs from the driver's; ship the driver's code or update the node"
        )
    os.environ["OMP_NUM_THREADS"] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    return call(task)


def connect(settings: BackendArgs, workers: int, packages: tuple[str, ...]) -> str:
    """Join the cluster at ``settings.address`` (shipping ``packages``) or start a local Ray
    instance of ``workers`` CPUs, unless this process is connected already; where the runs go."""
    if not ray.is_initialized():
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.WARNING,
        }
        if settings.address is None:
            ray.init(address="local", num_cpus=workers, **options)
        else:
            modules = [str(package_dir(name)) for name in packages]
            runtime_env = {"py_modules": modules, "excludes": ["__pycache__", "*.pyc"]}
            ray.init(address=settings.address, runtime_env=runtime_env, **options)
    where = "the Ray cluster at " + settings.address if settings.address else "local Ray"
    return f"{where} ({cluster_cpus()} CPUs)"


def cluster_cpus() -> int:
    """The CPUs of the connected cluster (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def run_tasks(
    call: Callable[[Task], tuple[str, Any]],
    tasks: Sequence[Task],
    settings: BackendArgs,
    lost: Callable[[dict[str, Any], str, str], Any],
) -> Iterator[tuple[str, Any]]:
    """``call(task)`` of every task as a Ray task, yielding ``(key, result)`` as they finish;
    a task that cannot finish (its worker died more than ``settings.retries`` times, or the
    code check failed) yields ``(key, lost(job, why, detail))``: ``why`` one line, ``detail``
    Ray's whole account (the remote traceback where there is one). Stopping early cancels the
    rest."""
    packages = packages_of(tasks[0][0]) if tasks else SUITE_PACKAGES
    digest = code_digest(packages)
    remote = ray.remote(execute).options(
        num_cpus=1, max_retries=settings.retries, retry_exceptions=False, name=TASK_NAME
    )
    queue = iter(tasks)
    pending: dict[Any, Task] = {}
    try:
        while True:
            limit = settings.max_in_flight or 2 * cluster_cpus()
            while len(pending) < limit and (task := next(queue, None)) is not None:
                pending[remote.remote(call, task, digest, packages)] = task
            if not pending:
                return
            [ready], _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(ready)
            try:
                result = ray.get(ready)
            except ray.exceptions.RayError as err:
                result = task[1], lost(task[2], why_lost(err, settings.retries), str(err))
            yield result
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def why_lost(err: Exception, retries: int) -> str:
    """A line saying why a task gave no result."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, Exception):  # raised inside the task (the code check)
        return f"{type(cause).__name__}: {cause}"
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return (
        f"its Ray worker died {retries + 1} time(s) ({retries} retries): "
        f"{type(err).__name__}: {first[:300]}"
    )
