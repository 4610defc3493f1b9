"""The benchmark's runs: every (setting, density, seed) of a protocol tier for one method.

A run is a training run of the library (:func:`baselines.lib.training_runs.run_training`: one
:func:`baselines.lib.training.main` in a worker process) with the protocol's budget, schedule,
target and hyperparameters; its record and key are every training run's, plus the protocol
version and tier, so the report can tell whose runs it reads. Results go to one JSON-lines file
per method (``<out>/<method slug>/results.jsonl``, resumable); the references ship as such files
in ``baselines/references/<version>/<tier>/``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from baselines.lib import data, trainers, training_runs
from baselines.lib.backend import BackendArgs
from baselines.lib.protocol import Protocol, Tier
from baselines.lib.records import upgrade
from baselines.lib.results import write_atomic
from baselines.lib.runner import Batching, run_resumable
from baselines.lib.training_runs import TrainingRecord

REFERENCE_DIR = data.REFERENCES
KEY_FIELDS = (*training_runs.KEY_FIELDS, "protocol", "tier")
"""A benchmark run's identity: the comparison run's key fields (every setting the run depends
on: environment and its arguments, method spec and code fingerprint, seed, budget, schedule,
target, hyperparameters) plus the protocol version and the tier."""


def run_key(job: dict[str, Any]) -> str:
    """Every field of :data:`KEY_FIELDS`, and the trainer unless it is SB3 (whose runs, the
    shipped references among them, keep the keys they were written with), as canonical JSON.
    The protocol enters by its version only: its file hash is recorded
    (``job["protocol"]["sha256"]``) but not keyed, because every setting a run depends on is
    keyed by itself; so an edit of a draft protocol redoes exactly the runs whose settings it
    changes (a released file never changes)."""
    fields = {k: job[k] for k in KEY_FIELDS}
    fields["protocol"] = job["protocol"]["version"]
    if trainers.trainer_of(job) != trainers.DEFAULT_TRAINER:
        fields["trainer"] = trainers.trainer_of(job)
    return json.dumps(fields, sort_keys=True)


def current_records(
    records: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The records that are runs of ``jobs`` (by key), in file order: a results file may hold
    runs of an earlier draft's settings, which no score may read."""
    keys = {run_key(job) for job in jobs}
    return [r for r in records if r.get("key") in keys]


def method_slug(method: str) -> str:
    """A file name for a method spec: its safe characters, plus a short hash when the spec
    has others (JSON arguments, colons), so two specs never share a file."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", method).strip("_")[:60]
    if safe == method:
        return safe
    return f"{safe}-{hashlib.sha256(method.encode()).hexdigest()[:8]}"


def reference_path(protocol: Protocol, tier: str, method: str) -> Path:
    """Where the reference results of ``method`` ship."""
    return REFERENCE_DIR / protocol.version / tier / f"{method_slug(method)}.jsonl"


def write_configs(protocol: Protocol, folder: Path) -> dict[str, Path]:
    """The protocol's hyperparameters as one YAML config per section (an env id, or a section
    settings name) in ``folder`` (what the workers' ``baselines.train`` reads), each written
    atomically (a full disk leaves no empty config); ``{section: path}``."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for section in protocol.hyperparameters:
        path = folder / f"{protocol.version}-{section}.yml"
        text = protocol.config_text(section)
        if not path.is_file() or path.read_text() != text:
            write_atomic(path, text)
        paths[section] = path
    return paths


def plan(
    protocol: Protocol,
    tier: Tier,
    method: str,
    config_folder: Path,
    env_ids: list[str] | None = None,
    trainer: str = trainers.DEFAULT_TRAINER,
    code: str | None = None,
) -> list[dict[str, Any]]:
    """Every run of ``method`` in ``tier`` (or only its settings on ``env_ids``) on ``trainer``
    (:data:`~baselines.lib.trainers.TRAINERS`), validated before any training: the method
    resolves (outside code is imported here), the hyperparameters the trainer will read equal
    the protocol's, the trainer can train it (one line naming ``--trainer``).

    ``code``: for outside code (``package.module:Name``), its code fingerprint, given instead of
    importing it: the runs are then planned as data (what a verifier of someone else's
    submission does), with the protocol's hyperparameters and nothing of the method run."""
    from baselines.lib.config import check_method, load_hyperparameters
    from routine_envs import plugins

    spec = plugins.parse_spec(method, "method") if code is not None else check_method(method)
    if code is not None and not plugins.is_import_path(spec.target):
        raise ValueError(f"method {method!r}: only outside code is planned from its fingerprint")
    configs = write_configs(protocol, config_folder)
    chosen = [s for s in tier.settings if env_ids is None or s.env_id in env_ids]
    if env_ids is not None:
        unknown = sorted(set(env_ids) - {s.env_id for s in tier.settings})
        if unknown:
            raise ValueError(f"--env-id {unknown} not in tier {tier.name}")
    jobs = []
    for setting in chosen:
        wanted = protocol.method_hyperparameters(setting.section, spec.target)
        if spec.kwargs:
            wanted["estimator_kwargs"] = {**wanted.get("estimator_kwargs", {}), **spec.kwargs}
        described = None
        if code is not None:
            estimator = {"name": spec.target, "kwargs": wanted.get("estimator_kwargs") or {}}
            described = {
                method: {
                    "label": spec.text,
                    "hyperparameters": wanted,
                    "estimator": {**estimator, "code": code},
                }
            }
        got = (
            wanted
            if code is not None
            else load_hyperparameters(setting.env_id, spec, configs[setting.section])
        )
        if got != wanted:
            raise ValueError(
                f"the trainer's hyperparameters for {method} on {setting.env_id} differ from "
                f"protocol {protocol.version}'s: {got} != {wanted} (did the default config "
                "gain a key?)"
            )
        runs = training_runs.training_jobs(
            setting.env_id,
            setting.env_kwargs,
            setting.density_kwarg,
            setting.values,
            [method],
            tier.seeds,
            setting.budget_episodes,
            setting.min_budget_steps,
            protocol.eval_points,
            protocol.target,
            configs[setting.section],
            trainer=trainer,
            described=described,
        )
        for job in runs:
            job.update(
                protocol={"version": protocol.version, "sha256": protocol.sha256},
                tier=tier.name,
                setting=setting.name,
            )
            jobs.append(job)
    return jobs


def run_benchmark_job(job: dict[str, Any]) -> TrainingRecord:
    """One run (a worker's job): a training run, keyed by :func:`run_key`."""
    record = training_runs.run_training(job)
    record.extra["key"] = run_key(job)
    return record


def run_benchmark_batch(jobs: list[dict[str, Any]]) -> list[TrainingRecord]:
    """Runs of the batched trainer trained together (a worker's batch), keyed by
    :func:`run_key`."""
    records = training_runs.run_training_batch(jobs)
    for job, record in zip(jobs, records, strict=True):
        record.extra["key"] = run_key(job)
    return records


BATCHING = Batching(training_runs.batch_group, run_benchmark_batch)
"""The runner's batching of benchmark jobs (:data:`~baselines.lib.training_runs.BATCHING`)."""


def run_method(
    jobs: list[dict[str, Any]],
    path: Path,
    workers: int,
    progress: bool = True,
    backend: BackendArgs | None = None,
) -> list[dict[str, Any]]:
    """Run what is missing of ``jobs`` into the results file at ``path`` (resumable), on the
    process pool or on Ray (``backend``); jobs of the batched trainer in batches
    (:data:`BATCHING`)."""
    return run_resumable(
        jobs,
        run_key,
        run_benchmark_job,
        path,
        workers,
        required=training_runs.SCHEMA,
        check=TrainingRecord.check,
        progress=progress,
        backend=backend,
        upgrade=upgrade,
        batching=BATCHING,
    )
