""":func:`main` of ``RUNS.json``: train again some runs of a
submission (``verify-submission --rerun K``), in a process of their own whose path holds the
bundle's method source: the only place a bundle's code runs, and only when the reviewer asks.

``RUNS.json`` holds the bundle's manifest fields, the run keys to rerun and, for a bundle with a
tuned column, its choice (``chosen``, as ``TUNED.json`` has it); the rows are written to
``rows.json`` beside it. Each run is trained as the protocol plans it (the default column's,
the search's or the tuned column's run with that key), on the bundle's trainer, alone (a batch
of one: the batched trainer's runs do not depend on the runs trained beside them)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import tuning
from baselines.lib import protocol as protocols
from baselines.lib import protocol_runs, runs


def rerun(
    fields_: dict[str, Any], keys: list[str], chosen: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The rows of the runs whose keys are ``keys`` (the bundle's), trained again here: each is
    the plan's run with that key (but for the package versions, this checkout's): a default
    run, or with the tuned column's ``chosen`` values a run of the search or of the tuned
    column."""
    protocol = protocols.load_protocol(fields_["version"])
    env_ids = fields_["env_ids"] or None
    tier = protocol.tier(fields_["tier"])
    with tempfile.TemporaryDirectory() as configs:
        planned = protocol_runs.plan(
            protocol, tier, fields_["method"], Path(configs), env_ids, fields_["trainer"]
        )
        if chosen is not None:
            planned = [
                *planned,
                *tuning.tuning_runs(protocol, tier, planned),
                *tuning.tuned_runs(planned, chosen, tier),
            ]
        rows = []
        for key in keys:
            versions = json.loads(key).get("versions")  # the submitter's: a fact of their runs
            wanted = next(
                (
                    runs.replace(run, versions=versions)
                    for run in planned
                    if runs.key(runs.replace(run, versions=versions)) == key
                ),
                None,
            )
            if wanted is None:
                raise ValueError(f"no planned run has the key {key[:200]}")
            record = runs.train_batch([wanted])[0]
            rows.append(json.loads(json.dumps(record.row(), sort_keys=True)))
    return rows


def main(path: str) -> None:
    """Read ``RUNS.json`` at ``path``, write ``rows.json`` beside it (what the verifier's
    subprocess runs: ``python -c "from baselines.experiments.benchmark.rerun import main;
    main(PATH)"``)."""
    asked = Path(path)
    todo = json.loads(asked.read_text())
    rows = rerun(todo["fields"], todo["keys"], todo.get("chosen"))
    (asked.parent / "rows.json").write_text(json.dumps(rows))
