"""The benchmark's runs: every (setting, density, seed) of a protocol tier for one method.

A run is a training run of the library (:class:`baselines.lib.runs.Run`) with the protocol's
budget, schedule, target and hyperparameters, and the protocol version, tier and setting in its
context (so its key, :func:`baselines.lib.runs.key`, says whose run it is). Results go to one
JSON-lines file per method (``<out>/<method slug>/results.jsonl``, resumable); the references
ship as such files in ``baselines/references/<version>/<tier>/``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from baselines.lib import compact_runs, data, trainers
from baselines.lib.backend import BackendArgs
from baselines.lib.protocol import Protocol, Tier
from baselines.lib.records import upgrade
from baselines.lib.results import write_atomic
from baselines.lib.runner import run_resumable
from baselines.lib.runs import BATCHING, SCHEMA, Run, TrainingRecord, key, train_record
from baselines.lib.runs import plan as plan_runs
from baselines.lib.specs import MethodSpec

REFERENCE_DIR = data.REFERENCES


def current_records(records: list[dict[str, Any]], planned: list[Run]) -> list[dict[str, Any]]:
    """The records that are runs of ``planned`` (by key), in file order: a results file may
    hold runs of an earlier draft's settings, which no score may read."""
    keys = {key(run) for run in planned}
    return [r for r in records if r.get("key") in keys]


def method_slug(method: str) -> str:
    """A file name for a method spec: its safe characters, plus a short hash when the spec
    has others (JSON arguments, colons), so two specs never share a file."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", method).strip("_")[:60]
    if safe == method:
        return safe
    return f"{safe}-{hashlib.sha256(method.encode()).hexdigest()[:8]}"


def reference_path(protocol: Protocol, tier: str, method: str) -> Path:
    """Where the reference results of ``method`` ship (compact where they are:
    :func:`~baselines.lib.compact_runs.runs_path`)."""
    return compact_runs.runs_path(REFERENCE_DIR / protocol.version / tier, method_slug(method))


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
) -> list[Run]:
    """Every run of ``method`` in ``tier`` (or only its settings on ``env_ids``) on ``trainer``
    (:data:`~baselines.lib.trainers.TRAINERS`), validated before any training: the method
    resolves (outside code is imported here), the hyperparameters the trainer will read equal
    the protocol's, the trainer can train it (one line naming ``--trainer``).

    ``code``: for outside code (``package.module:Name``), its code fingerprint, given instead of
    importing it: the runs are then planned as data (what a verifier of someone else's
    submission does), with the protocol's hyperparameters and nothing of the method run."""
    from baselines.lib.config import load_hyperparameters
    from baselines.lib.specs import parse_method

    spec = MethodSpec.unresolved(method, code) if code is not None else parse_method(method)
    configs = write_configs(protocol, config_folder)
    chosen = [s for s in tier.settings if env_ids is None or s.env_id in env_ids]
    if env_ids is not None:
        unknown = sorted(set(env_ids) - {s.env_id for s in tier.settings})
        if unknown:
            raise ValueError(f"--env-id {unknown} not in tier {tier.name}")
    runs = []
    for setting in chosen:
        wanted = protocol.method_hyperparameters(setting.section, spec.target)
        if spec.kwargs:
            wanted["estimator_kwargs"] = {**wanted.get("estimator_kwargs", {}), **spec.kwargs}
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
        runs += plan_runs(
            setting.env_id,
            setting.env_kwargs,
            setting.density_kwarg,
            setting.values,
            [spec],
            tier.seeds,
            setting.budget_episodes,
            setting.min_budget_steps,
            protocol.eval_points,
            protocol.target,
            configs[setting.section],
            trainer=trainer,
            hyperparameters={spec.text: got},
            context={
                "protocol": {"version": protocol.version, "sha256": protocol.sha256},
                "tier": tier.name,
                "setting": setting.name,
            },
            evaluation=protocol.evaluation,
        )
    return runs


def run_method(
    runs: list[Run],
    path: Path,
    workers: int,
    progress: bool = True,
    backend: BackendArgs | None = None,
) -> list[dict[str, Any]]:
    """Train what is missing of ``runs`` into the results file at ``path`` (resumable), on the
    process pool or on Ray (``backend``); runs of the batched trainer in batches
    (:data:`~baselines.lib.runs.BATCHING`)."""
    return run_resumable(
        runs,
        key,
        train_record,
        path,
        workers,
        required=SCHEMA,
        check=TrainingRecord.check,
        progress=progress,
        backend=backend,
        upgrade=upgrade,
        batching=BATCHING,
    )
