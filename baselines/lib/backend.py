"""Where a sweep's runs run: the settings every sweep shares, a mixin of its settings dataclass.

- ``process`` (the default): a spawned process pool of ``--workers`` processes on this machine.
- ``ray``: each run one Ray task (one CPU, torch threads 1) on a local Ray instance of
  ``--workers`` CPUs, or on an existing cluster with ``--address`` (its CPUs set the
  parallelism). Ray is the ``[cluster]`` extra, imported only when this backend is chosen
  (:mod:`baselines.lib.ray_backend`).

Either way this process (the driver) is the only writer of the results file: records come back
from the runs and are validated and appended by :func:`baselines.lib.runner.run_resumable`, so
resume, deduplication and rejected rows are the same on both. A sweep (or a new command) gets
the backend in one line: its settings dataclass inherits :class:`BackendArgs` and passes itself
as ``backend=`` to ``run_resumable``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("process", "ray")
INSTALL_HINT = 'pip install -e ".[cluster]"'


@dataclass
class BackendArgs:
    """Where the runs run (fields shared by every sweep's settings)."""

    backend: str = field(
        default="process",
        metadata={
            "help": "where runs run: 'process' (a process pool of --workers on this machine) or "
            "'ray' (one Ray task per run: a local Ray instance of --workers CPUs, or the "
            "cluster at --address; needs the [cluster] extra)",
            "choices": list(BACKENDS),
        },
    )
    address: str | None = field(
        default=None,
        metadata={
            "help": "with --backend ray: the address of a running Ray cluster ('auto', "
            "'HOST:6379' on a node of it, or 'ray://HOST:10001'); its CPUs set the "
            "parallelism, not --workers. Not given: a local Ray instance"
        },
    )
    max_in_flight: int = field(
        default=0,
        metadata={
            "help": "with --backend ray: runs submitted at once; 0: twice the cluster's CPUs, "
            "read again as runs finish (nodes that join are used)",
            "min": 0,
        },
    )
    retries: int = field(
        default=3,
        metadata={
            "help": "with --backend ray: times a run is started again when its worker dies "
            "(process killed, node lost); a run that raises is reported at once",
            "min": 0,
        },
    )


def backend_fields(settings: BackendArgs) -> dict[str, Any]:
    """The :class:`BackendArgs` fields of ``settings``, to hand them to another sweep's settings."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(BackendArgs)}


def check_backend(settings: BackendArgs) -> None:
    """``ValueError`` naming the setting when the backend settings are not usable, before any
    work: an unknown ``backend``, ``address`` without the Ray backend, negative counts, or the
    Ray backend without Ray installed (the message names the extra)."""
    if settings.backend not in BACKENDS:
        raise ValueError(f"--backend must be one of {list(BACKENDS)}, got {settings.backend!r}")
    if settings.address is not None and settings.backend != "ray":
        raise ValueError(
            f"--address {settings.address} is the address of a Ray cluster: it needs "
            f"--backend ray (the backend is {settings.backend!r})"
        )
    for name in ("max_in_flight", "retries"):
        if getattr(settings, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
    if settings.backend == "ray":
        require_ray()


def require_ray() -> None:
    """``ValueError`` naming the ``[cluster]`` extra when Ray cannot be imported."""
    try:
        import ray  # noqa: F401
    except ImportError as err:
        raise ValueError(
            f"--backend ray needs Ray, which is not installed ({err}): install the cluster "
            f"extra, {INSTALL_HINT}"
        ) from None
