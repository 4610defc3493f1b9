"""Reading a method's runs and the references of a protocol tier: only the rows that are runs of
the protocol's current plan (by run key), the references read only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import manifest
from baselines.lib import protocol as protocols
from baselines.lib import protocol_runs
from baselines.lib.results import ResultsFile


def load_records(path: Path, read_only: bool = False) -> list[dict[str, Any]]:
    """The valid records of a results file (none when it does not exist); ``read_only``: never
    write anything (references: bad lines are skipped, not moved)."""
    if not path.exists():
        return []
    from baselines.lib import runs
    from baselines.lib.records import upgrade

    store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check, upgrade)
    return store.read() if read_only else store.load()


def planned_records(
    protocol: protocols.Protocol,
    tier: str,
    method: str,
    path: Path,
    config_folder: Path,
    read_only: bool = False,
    trainer: str | None = None,
) -> list[dict[str, Any]]:
    """The records of ``path`` that are runs of ``method`` on ``trainer`` (default: the
    protocol's) in the protocol's ``tier`` as it is now (by run key): rows of an earlier draft's
    settings, of another tier or of the other trainer are left out."""
    jobs = protocol_runs.plan(
        protocol, protocol.tier(tier), method, config_folder, trainer=trainer or protocol.trainer
    )
    return protocol_runs.current_records(load_records(path, read_only), jobs)


def load_references(
    protocol: protocols.Protocol,
    tier: str,
    refs: manifest.References,
    config_folder: Path,
    skip: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The reference records of ``tier`` by method (without ``skip``) from ``refs`` (opened,
    so verified or accepted as unverified: :func:`~.manifest.open_references`), read only:
    only runs of the protocol's current settings (:func:`planned_records`)."""
    out = {}
    for method in protocol.references_of(tier):
        if method == skip:
            continue
        records = planned_records(
            protocol, tier, method, refs.path(method), config_folder, read_only=True
        )
        if records:
            out[method] = records
    return out
