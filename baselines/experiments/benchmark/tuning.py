"""The tuned column of a protocol with ``tuning`` (rb3; docs/benchmark.md, "Default and tuned").

One learning rate for every method cannot tell dilution from a step size that suits one method
and not another, so each method is also scored with hyperparameters searched for it, the same
way for every method, on seeds no tier scores:

- :func:`tuning_runs`: from a method's default runs of a tier (:func:`~baselines.lib.
  protocol_runs.plan`), every candidate (:func:`candidates`: the protocol's grid, and the
  section's default values where the grid lacks them, so the tuned column is never chosen
  over a default it did not try) x every tuning seed, at each setting's highest and lowest
  density (its first and last density value), with the tier's budgets: runs as values, the
  default ones with three fields replaced.
- :func:`choose`: per setting family (:attr:`~baselines.lib.protocol.Setting.family`: the
  settings of one decisions axis share one), the combination whose objective is highest: the
  mean over the family's tuning cells (setting x density) of the IQM over seeds of the
  normalized AUC (:func:`baselines.lib.scoring.normalized_auc`: every run has one, censored or
  not); ties go to the default combination, then to the grid's order.
- :func:`tuned_runs`: the default runs (scoring seeds, every density) with each family's chosen
  values: the tuned column. Where a family's choice is the default, its tuned runs are the
  default runs (the same keys): :func:`reuse_defaults` copies their records instead of training
  them again.
- :func:`load_tuned_references`: a references folder's tuned column (``<slug>+tuned.jsonl``
  and its choice ``<slug>+tuned.json``, :func:`tuned_paths`), the runs of the plan only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.benchmark.manifest import MAX_MANIFEST_BYTES, References
from baselines.experiments.benchmark.reading import load_records
from baselines.lib import compact_runs, protocol_runs
from baselines.lib.protocol import Protocol, Tier, Tuning
from baselines.lib.runs import Run, key, replace
from baselines.lib.scoring import normalized_auc
from baselines.lib.stats import iqm

Record = dict[str, Any]
Combination = dict[str, float]


def families(tier: Tier) -> dict[str, str]:
    """Setting name -> its family, for every setting of ``tier``."""
    return {s.name: s.family for s in tier.settings}


def extremes(tier: Tier) -> dict[str, tuple[int, int]]:
    """Setting name -> its highest- and lowest-density values (the first and the last)."""
    return {s.name: (s.values[0], s.values[-1]) for s in tier.settings}


def combination_of(hyperparameters: Mapping[str, Any], tuning: Tuning) -> Combination:
    """The values of the grid's hyperparameters in ``hyperparameters``."""
    return {name: float(hyperparameters[name]) for name in tuning.grid}


def candidates(tuning: Tuning, default: Combination) -> list[Combination]:
    """The combinations searched for a family whose default values are ``default``: the grid's,
    in its order, then ``default`` when the grid lacks it."""
    grid = tuning.combinations()
    return grid if default in grid else [*grid, dict(default)]


def tuning_runs(protocol: Protocol, tier: Tier, default_runs: Sequence[Run]) -> list[Run]:
    """Every run of the search (see the module docstring) from a method's default runs of
    ``tier``; ``ValueError`` when the protocol has no ``tuning``."""
    tuning = protocol.tuning
    if tuning is None:
        raise ValueError(f"protocol {protocol.version} has no tuning: it scores defaults only")
    ends = extremes(tier)
    first = default_runs[0].seed if default_runs else 0
    out = []
    for run in default_runs:
        setting = run.context["setting"]
        if run.seed != first or run.context["density_value"] not in ends[setting]:
            continue
        for combination in candidates(tuning, combination_of(run.hyperparameters, tuning)):
            for seed in tuning.seeds:
                out.append(
                    replace(
                        run,
                        seed=seed,
                        hyperparameters={**run.hyperparameters, **combination},
                        context={"column": "tuning"},
                    )
                )
    return out


def objectives(records: Iterable[Record], tuning: Tuning, tier: Tier) -> dict[str, list[Record]]:
    """Per family, one row per combination found in ``records`` (tuning runs): its values, the
    objective (mean over the family's cells of the IQM over seeds of the normalized AUC), the
    cells and runs it rests on; in the grid's order, then any other candidate (a default the grid
    lacks) in the order found."""
    family_of = families(tier)
    cells: dict[tuple[str, str], dict[tuple[str, int], list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    texts = {_text(c): c for c in tuning.combinations()}
    for r in records:
        values = combination_of(r["hyperparameters"], tuning)
        combination = _text(values)
        texts.setdefault(combination, values)
        family = family_of[r["setting"]]
        cells[(family, combination)][(r["setting"], int(r["density_value"]))].append(
            normalized_auc(r)
        )
    out: dict[str, list[Record]] = defaultdict(list)
    for family in dict.fromkeys(family_of.values()):
        for text, combination in texts.items():
            found = cells.get((family, text))
            if not found:
                continue
            per_cell = [float(iqm(np.asarray(v))) for v in found.values()]
            out[family].append(
                {
                    "values": combination,
                    "auc": float(np.mean(per_cell)),
                    "cells": len(found),
                    "runs": sum(len(v) for v in found.values()),
                }
            )
    return dict(out)


def choose(
    found: Mapping[str, list[Record]], default: Mapping[str, Combination]
) -> dict[str, Record]:
    """Per family: the combination with the highest objective (``found``:
    :func:`objectives`), ties to the family's ``default`` combination, then to the grid's
    order; ``{"chosen", "default", "auc", "default_auc", "searched"}``."""
    out = {}
    for family, rows in found.items():
        base = default[family]
        best = max(rows, key=lambda r: (r["auc"], r["values"] == base, -rows.index(r)))
        base_row = next((r for r in rows if r["values"] == base), None)
        out[family] = {
            "chosen": best["values"],
            "default": dict(base),
            "auc": best["auc"],
            "default_auc": None if base_row is None else base_row["auc"],
            "searched": len(rows),
        }
    return out


def tuned_runs(default_runs: Sequence[Run], chosen: Mapping[str, Record], tier: Tier) -> list[Run]:
    """The tuned column: ``default_runs`` with their family's chosen values (``chosen``:
    :func:`choose`); ``ValueError`` naming a family that has no choice."""
    family_of = families(tier)
    out = []
    for run in default_runs:
        family = family_of[run.context["setting"]]
        if family not in chosen:
            raise ValueError(f"no tuned values for {family}: its tuning runs are missing")
        values = chosen[family]["chosen"]
        out.append(
            replace(
                run,
                hyperparameters={**run.hyperparameters, **values},
                context={"column": "tuned"},
            )
        )
    return out


def reuse_defaults(runs: Sequence[Run], source: Path, target: Path) -> int:
    """Copy into the results file ``target`` the records of ``source`` (the method's default
    runs) that are runs of ``runs`` (the tuned column: a family whose choice is the default has
    the default runs' keys) and that ``target`` lacks; how many (training them again would give
    the same rows, bit for bit)."""
    from baselines.lib import runs as runs_lib
    from baselines.lib.records import upgrade
    from baselines.lib.results import ResultsFile

    wanted = {key(run) for run in runs}
    store = ResultsFile(target, runs_lib.SCHEMA, runs_lib.TrainingRecord.check, upgrade)
    have = {r["key"] for r in load_records(target, read_only=True)}
    copied = 0
    for record in load_records(source, read_only=True):
        if record["key"] in wanted and record["key"] not in have:
            copied += store.append(record)
            have.add(record["key"])
    return copied


def default_combinations(
    protocol: Protocol, tier: Tier, default_runs: Sequence[Run]
) -> dict[str, Combination]:
    """Per family, the grid's hyperparameters as the default runs have them."""
    assert protocol.tuning is not None
    family_of = families(tier)
    return {
        family_of[r.context["setting"]]: combination_of(r.hyperparameters, protocol.tuning)
        for r in default_runs
    }


def markdown(chosen: Mapping[str, Record], found: Mapping[str, list[Record]]) -> list[str]:
    """The search as Markdown: per family the objective of every combination, the chosen one
    and the default marked in the last column."""
    lines = []
    for family, rows in found.items():
        pick = chosen[family]
        names = list(rows[0]["values"])
        lines += [
            f"### {family}",
            "",
            "| " + " | ".join(names) + " | mean IQM AUC | cells | runs | |",
            "|---" * (len(names) + 4) + "|",
        ]
        for r in rows:
            tags = [t for t, on in (("chosen", r["values"] == pick["chosen"]),
                                    ("default", r["values"] == pick["default"])) if on]  # fmt: skip
            cells = " | ".join(f"{r['values'][n]:g}" for n in names)
            lines.append(
                f"| {cells} | {r['auc']:.4f} | {r['cells']} | {r['runs']} | {', '.join(tags)} |"
            )
        lines.append("")
    return lines


TUNED_SUFFIX = "+tuned"
"""A method's tuned column beside its references: ``<slug>+tuned.jsonl.gz`` (the runs; ``.jsonl``
where they are computed) and ``<slug>+tuned.json`` (the chosen values per family,
``benchmark tune``'s ``TUNED.json``)."""


def tuned_paths(folder: Path, method: str) -> tuple[Path, Path]:
    """``(runs, choice)`` of ``method``'s tuned column in a references folder (the runs file:
    :func:`~baselines.lib.compact_runs.runs_path`)."""
    stem = f"{protocol_runs.method_slug(method)}{TUNED_SUFFIX}"
    return compact_runs.runs_path(folder, stem), folder / f"{stem}.json"


def load_tuned_references(
    protocol: Protocol,
    tier: str,
    refs: References,
    config_folder: Path,
) -> dict[str, list[dict[str, Any]]]:
    """The tuned column's records of ``tier`` by reference method, where ``refs`` holds them
    (read only): the runs of the protocol's plan with the recorded choice of each family
    (:func:`tuned_runs`), by run key; ``{}`` for a protocol without ``tuning``."""
    if protocol.tuning is None:
        return {}
    chosen_tier = protocol.tier(tier)
    out = {}
    for method in protocol.references_of(tier):
        runs_path, choice_path = tuned_paths(refs.folder, method)
        if not (runs_path.is_file() and choice_path.is_file()):
            continue
        if choice_path.stat().st_size > MAX_MANIFEST_BYTES:
            raise ValueError(f"{choice_path}: too large for a tuning choice")
        chosen = json.loads(choice_path.read_text())["chosen"]
        defaults = protocol_runs.plan(
            protocol, chosen_tier, method, config_folder, trainer=protocol.trainer
        )
        family_of = families(chosen_tier)
        planned = tuned_runs(
            [r for r in defaults if family_of[r.context["setting"]] in chosen], chosen, chosen_tier
        )
        records = protocol_runs.current_records(load_records(runs_path, read_only=True), planned)
        if records:
            out[method] = records
    return out


def _text(combination: Combination) -> str:
    return ",".join(f"{k}={v:g}" for k, v in combination.items())
