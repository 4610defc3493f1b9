"""A submission's tuned column (a protocol with ``tuning``: rb3): what ``benchmark submit``
bundles of ``benchmark tune``'s output, and how ``verify-submission`` rebuilds it from rows.

A protocol with tuning ranks on the tuned column (docs/benchmark.md, "Default and tuned"), so a
submission without one can only be set beside the references' defaults. Where ``tune`` made it,
the bundle holds three more members:

- :data:`SEARCH` (``tuning/results.jsonl``): every run of the search
  (:func:`~.tuning.tuning_runs` of the method's default plan), none missing: the choice rests
  on all of them;
- :data:`CHOICE` (``tuned/TUNED.json``): the choice as ``tune`` writes it (the method, the
  chosen values per setting family, every combination's objective);
- :data:`RUNS` (``tuned/results.jsonl``): the tuned runs of the plan (:func:`~.tuning.
  tuned_runs` of that choice), missing ones only in a partial bundle;

and ``SUBMISSION.json`` a ``tuned`` entry (:func:`summary`: the chosen values, the run counts,
the headline of the tuned runs). The verifier checks the search is exactly the planned one,
recomputes the choice from its rows and compares ``TUNED.json`` whole, checks the tuned rows
are exactly the runs that choice plans, and rebuilds the ``tuned`` entry (compared with the
rest of ``SUBMISSION.json``: :func:`~.verification.check_tuned_column`). Spot reruns
(``--rerun``) draw from every column's rows (:func:`~.verification.rerun_pool`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import scores, submission, tuning
from baselines.experiments.benchmark.reading import load_records
from baselines.lib import protocol_runs
from baselines.lib.protocol import Protocol
from baselines.lib.runs import Run

Record = dict[str, Any]
SEARCH = "tuning/results.jsonl"
CHOICE = "tuned/TUNED.json"
RUNS = "tuned/results.jsonl"
MEMBERS = (SEARCH, CHOICE, RUNS)


def choice_of(
    protocol: Protocol, tier: str, method: str, defaults: Sequence[Run], search: Sequence[Record]
) -> dict[str, Any]:
    """``TUNED.json`` as ``benchmark tune`` computes it from the search's rows ``search``:
    ``{"method", "chosen", "searched"}`` (:func:`~.tuning.objectives`, :func:`~.tuning.choose`
    with ``defaults``' values as each family's default)."""
    assert protocol.tuning is not None
    chosen_tier = protocol.tier(tier)
    found = tuning.objectives(search, protocol.tuning, chosen_tier)
    chosen = tuning.choose(found, tuning.default_combinations(protocol, chosen_tier, defaults))
    return {"method": method, "chosen": chosen, "searched": found}


def summary(
    protocol: Protocol, tier: str, choice: Mapping[str, Any], search: int, runs: Sequence[Record],
    planned: Sequence[Run],
) -> dict[str, Any]:  # fmt: skip
    """``SUBMISSION.json``'s ``tuned`` entry: the chosen values per family, the search's and
    the tuned column's run counts (of ``planned``), and the tuned runs' headline per setting
    (:func:`~.submission.headline`; no exponent where a setting lacks densities)."""
    densities: dict[str, set[int]] = {}
    for run in planned:
        densities.setdefault(run.context["setting"], set()).add(run.context["density_value"])
    method_scores = scores.method_scores(runs, {s: len(v) for s, v in densities.items()})
    return {
        "chosen": {family: pick["chosen"] for family, pick in choice["chosen"].items()},
        "search_runs": search,
        "runs": len(runs),
        "planned_runs": len(planned),
        "headline": submission.headline({"method": method_scores}),
    }


def collect(
    folder: Path,
    protocol: Protocol,
    tier: str,
    method: str,
    defaults: Sequence[Run],
    partial: bool,
) -> tuple[dict[str, bytes], dict[str, Any]] | None:
    """The tuned column's members and ``SUBMISSION.json`` entry from ``benchmark tune``'s
    output beside the method's folder ``folder`` (``<folder>+tuning/``, ``<folder>+tuned/``);
    ``None`` where the protocol has no tuning or ``tune`` wrote no choice.

    Raises:
        ValueError: runs of the search missing, a ``TUNED.json`` that is not the search's
            choice, or tuned runs missing without ``partial`` (one line, what to run).
    """
    tuned = folder.with_name(folder.name + tuning.TUNED_SUFFIX)
    if protocol.tuning is None or not (tuned / "TUNED.json").is_file():
        return None
    chosen_tier = protocol.tier(tier)
    planned_search = tuning.tuning_runs(protocol, chosen_tier, defaults)
    searched = folder.with_name(folder.name + "+tuning") / "results.jsonl"
    search = protocol_runs.current_records(load_records(searched), planned_search)
    again = (
        f"python -m baselines benchmark tune --protocol {protocol.version} --tier {tier} "
        f"--method {shlex.quote(method)}"
    )
    if len(search) < len(planned_search):
        raise ValueError(
            f"{searched}: {len(planned_search) - len(search)} of the search's "
            f"{len(planned_search)} runs are missing ({again} resumes them)"
        )
    choice = choice_of(protocol, tier, method, defaults, search)
    written = json.loads((tuned / "TUNED.json").read_text())
    if submission.compare(choice, written):
        raise ValueError(f"{tuned / 'TUNED.json'} is not the choice of the search's runs: {again}")
    planned = tuning.tuned_runs(defaults, choice["chosen"], chosen_tier)
    runs = protocol_runs.current_records(load_records(tuned / "results.jsonl"), planned)
    if len(runs) < len(planned) and not partial:
        raise ValueError(
            f"{tuned / 'results.jsonl'}: {len(planned) - len(runs)} of the tuned column's "
            f"{len(planned)} runs are missing ({again} resumes them; --partial bundles a "
            "partial submission)"
        )
    members = {
        SEARCH: submission.rows_bytes(search),
        CHOICE: json.dumps(choice, indent=1, sort_keys=True).encode(),
        RUNS: submission.rows_bytes(runs),
    }
    return members, summary(protocol, tier, choice, len(search), runs, planned)
