"""The shape of every experiment, and the one way to run it.

An experiment is a settings dataclass (its fields carry help, bounds and defaults: the command
line is generated from them, :mod:`routine_envs.cli`) and four functions, gathered in an
:class:`Experiment`:

- ``plan(settings) -> list[Job]``: every job, validated before any work (a bad setting is a
  ``ValueError`` naming its flag); a job is a JSON object (it travels to worker processes and
  Ray tasks, and is the settings part of its record);
- ``key(job) -> str``: the job's identity in the results file, from everything its result
  depends on (code fingerprints of the specs included), so a rerun does only what is missing;
- ``run(job) -> Record``: one job, in a worker (a module-level function: workers import it by
  name); the record is a :class:`~baselines.lib.records.Record` dataclass (``density_kwarg``,
  ``density_value``, ``rho`` and the experiment's fields) or its row;
- ``analyse(records, settings)``: tables (CSV), figures (PNG) and a summary into
  ``settings.out``, from the records (rows of the results file) alone; what it returns is the
  command's result.

:func:`run_experiment` runs a plan through the one runner (:func:`~baselines.lib.runner.
run_resumable`: a process pool or Ray, per-run claims, the one results file with its schema
derived from the record class); :func:`main` is ``plan``, ``run`` and ``analyse`` in a row.
Experiments share library code (:mod:`baselines.lib`); one that runs others (the demo) calls
their public entry functions. The library imports no experiment, and declares no command (each
experiment package declares its own rows: :mod:`baselines.commands`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.lib.backend import BackendArgs
from baselines.lib.records import Record, upgrade
from baselines.lib.runner import Batching, run_resumable

Job = dict[str, Any]


def results_path(settings: Any) -> Path:
    """Where an experiment's records go by default: ``<settings.out>/results.jsonl``."""
    return Path(settings.out) / "results.jsonl"


@dataclass(frozen=True)
class Experiment:
    """An experiment (see the module docstring).

    Attributes:
        name: what the runner's messages and the docs call it.
        plan, key, run, analyse: the four functions of the contract.
        record: the record class (its fields give the results file's schema, its ``check``
            the experiment's own check of a row, its ``unit`` the runner's word for a job).
        results: where the records of ``settings`` go (default :func:`results_path`).
        batching: which jobs run together in one worker call (the batched trainer's:
            :data:`~baselines.lib.training_runs.BATCHING`); ``None``: each job alone.
    """

    name: str
    plan: Callable[[Any], list[Job]]
    key: Callable[[Job], str]
    run: Callable[[Job], Any]
    record: type[Record]
    analyse: Callable[[list[dict[str, Any]], Any], Any] | None = None
    results: Callable[[Any], Path] = results_path
    batching: Batching | None = None

    @property
    def schema(self) -> dict[str, str]:
        """The fields every record has, with their kinds: ``key`` and the record class's."""
        return {"key": "str", **self.record.schema()}


def run_experiment(
    experiment: Experiment,
    settings: Any,
    jobs: list[Job] | None = None,
    progress: bool = True,
    path: Path | None = None,
    workers: int | None = None,
    backend: BackendArgs | None = None,
) -> list[dict[str, Any]]:
    """Run what is missing of ``jobs`` (default: ``experiment.plan(settings)``) through the one
    runner into ``path`` (default: ``experiment.results(settings)``), ``workers`` at a time
    (default: ``settings.workers``) on ``backend`` (default: ``settings`` where it is a
    :class:`~baselines.lib.backend.BackendArgs`, else the process pool); every record of the
    jobs, in order, as rows (older rows upgraded: :func:`~baselines.lib.records.upgrade`)."""
    planned = experiment.plan(settings) if jobs is None else jobs
    if backend is None and isinstance(settings, BackendArgs):
        backend = settings
    return run_resumable(
        planned,
        experiment.key,
        experiment.run,
        path if path is not None else experiment.results(settings),
        workers if workers is not None else getattr(settings, "workers", 1),
        required=experiment.schema,
        check=getattr(experiment.record, "check", None),
        progress=progress,
        unit=experiment.record.unit,
        backend=backend,
        upgrade=upgrade,
        batching=experiment.batching,
    )


def main(experiment: Experiment, settings: Any, progress: bool = True) -> Any:
    """Plan, run (what is missing) and analyse ``experiment`` with ``settings``; what the
    analysis returns."""
    records = run_experiment(experiment, settings, progress=progress)
    return experiment.analyse(records, settings) if experiment.analyse is not None else records
