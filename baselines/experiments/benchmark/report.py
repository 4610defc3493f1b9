"""The report card of a method: one Markdown file, its scores as JSON/CSV and PNG figures, headed
by the protocol version, the method spec, package versions, git commit, seeds, hardware and
wall time, against the shipped references."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.benchmark import aggregates, axes, drops, figures, merging, scores
from baselines.experiments.benchmark.privileged import method_label
from baselines.lib.results import write_atomic
from baselines.lib.tables import write_csv

Record = dict[str, Any]


def git_commit(folder: Path) -> str:
    """The commit of the checkout holding ``folder`` (``+dirty`` when it has changes)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


def hardware() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def versions_of(records: list[Record]) -> list[dict[str, Any]]:
    """The distinct package versions the runs were made with."""
    seen = []
    for r in records:
        if r["versions"] not in seen:
            seen.append(r["versions"])
    return seen


def score_rows(label: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat per-density rows of one method's scores on one setting (for CSV)."""
    return [
        {
            "method": label,
            "density_value": r["density_value"],
            "rho": r["rho"],
            "runs": r["runs"],
            "reached": r["reached"],
            "steps_iqm": r["steps_iqm"],
            "steps_low": r["steps_low"],
            "steps_high": r["steps_high"],
            "steps_bound": r["steps_bound"],
            "km_median": r["km_median"],
            "km_median_bound": r["km_median_bound"],
            "auc_iqm": r["auc_iqm"],
            "auc_low": r["auc_low"],
            "auc_high": r["auc_high"],
            "budget": r["budget"],
        }
        for r in entry["rows"]
    ]


def shown_rows(
    name: str, entry: dict[str, Any], references: dict[str, dict[str, Any]], setting: str
) -> list[tuple[str, dict[str, Any]]]:
    """``(label, scores on setting)`` of the method then each reference that has the setting."""
    return [(name, entry)] + [
        (n, r["settings"][setting]) for n, r in references.items() if setting in r["settings"]
    ]


def density_table(
    title: str,
    rows: list[tuple[str, dict[str, Any]]],
    densities: list[dict[str, Any]],
    cell: Any,
    bold: str,
    first: tuple[str, Any] | None = None,
) -> list[str]:
    """A Markdown table: one row per ``(label, entry)``, one column per density of
    ``densities`` (``cell(row of that density) -> str``; ``n/a`` where the entry lacks it), and
    optionally a ``first`` column ``(header, entry -> str)``."""
    head = [first[0]] if first else []
    lines = [
        f"{title}:",
        "",
        "| method | "
        + " | ".join(head + [f"{d['density_value']} (rho {d['rho']:.3g})" for d in densities])
        + " |",
        "|---" * (1 + len(head) + len(densities)) + "|",
    ]
    for label, entry in rows:
        by_value = {r["density_value"]: r for r in entry["rows"]}
        cells = [first[1](entry)] if first else []
        cells += [
            cell(by_value[d["density_value"]]) if d["density_value"] in by_value else "n/a"
            for d in densities
        ]
        mark = "**" if label.split(" (")[0] == bold else ""
        lines.append(f"| {mark}{label}{mark} | " + " | ".join(cells) + " |")
    return lines


def steps_cell(r: dict[str, Any]) -> str:
    return scores.steps_text(r)


def km_cell(r: dict[str, Any]) -> str:
    return scores.km_text(r)


def auc_cell(r: dict[str, Any]) -> str:
    return f"{r['auc_iqm']:.3f} [{r['auc_low']:.3f}, {r['auc_high']:.3f}]"


def near_lines(method: str, near: list[dict[str, Any]]) -> list[str]:
    """One bullet per pair of ``near`` (:func:`~.merging.near_misses`), except that the card's
    ``method``'s pairs that coincide on the same cells are one bullet naming every other
    method (at one decision and rho 1 many methods take the same updates: one line, not one
    per reference)."""
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for n in near:
        if method in n["methods"]:
            grouped.setdefault(tuple(tuple(c) for c in n["coinciding"]), []).append(n)
    lines = [f"- {n['why']}" for n in near if method not in n["methods"]]
    for cells, pairs in grouped.items():
        if len(pairs) == 1:
            lines.append(f"- {pairs[0]['why']}")
            continue
        others = ", ".join(f"`{next(m for m in n['methods'] if m != method)}`" for n in pairs)
        low, high = min(n["differing"] for n in pairs), max(n["differing"] for n in pairs)
        differing = f"{low}" if low == high else f"{low} to {high}"
        where = ", ".join(f"{s} at {v}" for s, v in cells)
        lines.append(
            f"- `{method}` gives the same steps to target as {others} for every seed (within "
            f"{merging.RTOL:g}) only on {where}, and differs from each of them on the "
            f"{differing} other settings and densities they share: kept as separate rows."
        )
    return lines


def markdown(
    header: dict[str, Any],
    mine: dict[str, Any],
    references: dict[str, dict[str, Any]],
    ratios: dict[str, dict[str, Any]],
    lab: list[dict[str, Any]],
    drops_manifest: dict[str, Any] | None = None,
    groups: list[dict[str, Any]] | None = None,
    near: list[dict[str, Any]] | None = None,
    decisions: list[dict[str, Any]] | None = None,
    extra: list[str] | None = None,
    privileged: dict[str, tuple[str, ...]] | None = None,
    per_decision: tuple[str, list[dict[str, Any]]] | None = None,
    aggregated: dict[str, Any] | None = None,
) -> str:
    """The report card's text: per setting the steps to target (IQM), the Kaplan-Meier median
    and the normalized AUC per density, the ratios to the references and the drops manifest;
    per decisions axis (``decisions``, :func:`~.axes.all_axes`) the exponent per number of
    decisions and its trend; equivalent methods (``groups``, :func:`~.merging.merged`) shown as
    one row, pairs that coincide on some settings only (``near``, :func:`~.merging.near_misses`)
    named; ``extra``: lines of a section of the tier's own (the paper tier's quantities);
    ``privileged`` (method -> the privileged fields it reads): every row of a method that reads
    some says which, ``(privileged: critical)``; ``per_decision`` (``(target, axes)``): the
    decisions axes again at the per-decision target; ``aggregated``
    (:func:`~.aggregates.versus`): the method's aggregate across the settings and its
    probability of improvement on each reference, before the settings."""
    groups = groups or []
    aliases, hidden = merging.aliases_of(groups), merging.hidden(groups)
    method = header["method"]
    marked = " (unverified references)" if "unverified references" in header else ""
    lines = [f"# Report card: `{method}` on protocol {header['protocol']}{marked}", ""]
    lines += [f"- **{k}**: {v}" for k, v in header.items() if k not in ("method",)]
    lines.append("")
    lines.append(
        "Scores are defined in docs/benchmark.md. On steps, exponents and ratios: `>=` is a "
        "lower bound and `<=` an upper bound (censored runs count at their budget); `~` means "
        "censored runs on both sides, so no bound either way; `n/a`: undefined (no run reached "
        "the target). `(r/n)`: r of n runs reached the target."
    )
    if groups:
        lines += ["", "## Equivalent methods (one row each)", ""]
        lines += [f"- **{g['name']}** = {', '.join(g['aliases'])}: {g['why']}" for g in groups]
    if near:
        lines += ["", "## Methods that coincide on some settings only (kept apart)", ""]
        lines += near_lines(method, near)
    visible = {n: r for n, r in references.items() if n not in hidden}

    def label(name: str) -> str:
        text = f"{name} (= {', '.join(aliases[name])})" if name in aliases else name
        return method_label(text, (privileged or {}).get(name))

    if aggregated is not None:
        lines += [
            "",
            *aggregates.versus_markdown(aggregated, label(method), {n: label(n) for n in visible}),
        ]
    for setting in sorted(mine["settings"]):
        entry = mine["settings"][setting]
        rows = [(label(n), e) for n, e in shown_rows(method, entry, visible, setting)]
        lines += ["", f"## {setting}", ""]
        lines += density_table(
            "Steps to target, IQM over seeds [95% CI] (runs that reached it / runs)",
            rows,
            entry["rows"],
            steps_cell,
            method,
            first=("dilution exponent [95% CI]", lambda e: scores.exponent_text(e["exponent"])),
        )
        lines.append("")
        lines += density_table(
            "Steps to target, Kaplan-Meier median (`>=`: fewer than half reached it)",
            rows,
            entry["rows"],
            km_cell,
            method,
        )
        lines.append("")
        lines += density_table(
            "Normalized AUC of the success curve, IQM over seeds [95% CI]",
            rows,
            entry["rows"],
            auc_cell,
            method,
        )
        shown_ratios = {n: r for n, r in ratios.get(setting, {}).items() if n not in hidden}
        if shown_ratios:
            lines += ["", "Ratio of steps to target at the lowest density, method / reference:", ""]
            lines += ["| reference | ratio [95% CI] |", "|---|---|"]
            for name, r in shown_ratios.items():
                lines.append(f"| {label(name)} | {scores.ratio_text(r)} |")
        if drops_manifest is not None:
            lines += ["", *drops.markdown_table(drops_manifest, setting)]
            planned = sum(c["planned"] for c in drops_manifest["cells"] if c["setting"] == setting)
            counted = [
                f"{n} {sum(r['runs'] for r in e['rows'])}/{planned} finished, "
                f"{sum(r['runs'] - r['reached'] for r in e['rows'])} censored"
                for n, e in shown_rows(method, entry, references, setting)[1:]
            ]
            if counted:
                lines += ["", "Reference runs here (of the same plan): " + "; ".join(counted) + "."]
    order = [method, *(n for n in references if n not in hidden)]
    views = [("", decisions or []), *([per_decision] if per_decision else [])]
    for target, view in views:
        for axis in view:
            lines += [
                "",
                *axes.markdown(axis, order, {n: label(n) for n in order}, bold=method,
                               target=target),
            ]  # fmt: skip
    if extra:
        lines += ["", *extra]
    measured = [r for r in lab if "snr" in r]  # the others: the advantage probe only
    if measured:
        lines += ["", "## Gradient SNR and exact bias at initialization (the lab)", ""]
        lines.append(
            "Uniform policy (over valid actions), tabular; SNR per episode for a batch "
            "of one group of 8; relative bias `||E g - grad J|| / ||grad J||`. Relative bias "
            "and cosine are estimates with 95% jackknife intervals; the cosine is clipped to "
            "[-1, 1] (its raw estimate, `cosine_raw` in `scores.json`, can exceed 1: "
            "docs/estimators.md)."
        )
        lines += [
            "",
            "| setting | rho | estimator | SNR [CI] | relative bias, estimate [CI] | "
            "cosine, estimate [CI] |",
            "|---|---|---|---|---|---|",
        ]

        def num(value: float | None, spec: str) -> str:
            return "n/a" if value is None else format(value, spec)

        for r in measured:
            snr = "inf (no variance)" if r["snr"] is None else num(r["snr"], ".3g")
            lines.append(
                f"| {r['setting']} | {r['rho']:.3g} | {r.get('label', r['estimator'])} | {snr} "
                f"[{num(r['snr_low'], '.3g')}, {num(r['snr_high'], '.3g')}] | "
                f"{num(r['relative_bias'], '.3g')} "
                f"[{num(r['relative_bias_low'], '.3g')}, {num(r['relative_bias_high'], '.3g')}] | "
                f"{num(r['cosine'], '.3f')} "
                f"[{num(r['cosine_low'], '.3f')}, {num(r['cosine_high'], '.3f')}] |"
            )
    lines += [
        "",
        "Figures: `learning_curves.png` (its numbers: `learning_curves.csv`), `steps_vs_rho.png`; "
        "numbers: `scores.json`, `scores.csv`"
        + (", the drops manifest `drops.csv` and `drops.json`" if drops_manifest else "")
        + ".",
    ]
    return "\n".join(lines) + "\n"


def command_seconds(started: float) -> float:
    """Seconds since the command started: since this process started where the system says
    (Linux ``/proc``: imports and start-up included), else since ``started``
    (``time.perf_counter()`` at the command's start)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        age = -1.0
    return age if age >= 0 else time.perf_counter() - started


def write_report(
    folder: Path,
    header: dict[str, Any],
    records: list[Record],
    references: dict[str, list[Record]],
    lab: list[dict[str, Any]],
    drops_manifest: dict[str, Any] | None = None,
    started: float | None = None,
    decision_axes: list[Any] | None = None,
    paper_snr: list[dict[str, Any]] | None = None,
    privileged: dict[str, tuple[str, ...]] | None = None,
    claims: dict[str, Any] | None = None,
    per_decision_target: float | None = None,
    aggregated: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Compute the scores and write the report card into ``folder``; return the scores.

    ``decision_axes``: the tier's :class:`~baselines.lib.protocol.DecisionsAxis` list, scored
    for the method and every reference (:func:`~.axes.all_axes`, ``decisions_axes`` in
    ``scores.json``); with ``per_decision_target`` (rb3) again at that per-decision target
    (:func:`~.scores.per_decision`, ``decisions_axes_per_decision``). ``paper_snr`` (the paper
    tier's :func:`~.paper.snr_rows`): the paper's quantities in ``paper.png``/``paper.json``
    and a section of the card.

    ``drops_manifest``: what became of every planned run (:func:`~.drops.drops_manifest`),
    written as ``drops.csv``/``drops.json`` and shown beside each setting's scores. ``started``:
    ``time.perf_counter()`` at the command's start; the header's ``wall time`` then ends with
    the command's true wall time up to the card (figures and scores included). ``claims``:
    what the card says of the machine that made it (:data:`~.card.CLAIMS`), kept in
    ``scores.json`` so the card can be rebuilt from its rows. ``aggregated``: the method's
    aggregates against the references (:func:`~.aggregates.versus`), a section of the card and
    ``aggregates`` in ``scores.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    planned = None  # the densities each setting plans: where the runs cover fewer, no exponent
    if drops_manifest is not None:
        planned = dict(Counter(c["setting"] for c in drops_manifest["cells"]))
    mine = scores.method_scores(records, planned)
    ref_scores = {name: scores.method_scores(recs) for name, recs in references.items()}
    ratios = scores.compare_to_references(mine, ref_scores)
    everyone = {header["method"]: mine, **ref_scores}
    probed = merging.probe_pairs(lab)
    groups = merging.merged(everyone, probed=probed)
    near = [  # the card's method's pairs only: the references' among themselves are no news
        n
        for n in merging.near_misses(everyone)
        if frozenset(n["methods"]) not in probed and header["method"] in n["methods"]
    ]
    decisions = axes.all_axes(everyone, decision_axes or [])
    per_decision = None
    if per_decision_target is not None and decision_axes:
        fair = per_decision_scores(
            {header["method"]: records, **references}, decision_axes, per_decision_target
        )
        per_decision = (
            scores.per_decision_label(per_decision_target),
            axes.all_axes(fair, decision_axes),
        )
    extra = None
    if paper_snr is not None:
        from baselines.experiments.benchmark import paper

        extra = paper.markdown(paper.write(folder, paper_snr, everyone))
    for n in near:
        n["why"] += merging.advantage_evidence(lab, *n["methods"])
    rows = [
        row
        for s, e in mine["settings"].items()
        for row in score_rows(header["method"], e)
        for row in [{"setting": s, **row}]
    ]
    for name, sc in ref_scores.items():
        rows += [
            {"setting": s, **row} for s, e in sc["settings"].items() for row in score_rows(name, e)
        ]
    verified = "unverified" if "unverified references" in header else "verified"
    write_csv(folder / "scores.csv", [{**row, "references": verified} for row in rows])
    figures.plot_curves(
        header["method"],
        records,
        references,
        folder / "learning_curves.png",
        privileged=privileged,
    )
    write_csv(
        folder / "learning_curves.csv", figures.curve_rows(header["method"], records, references)
    )
    figures.plot_against_rho(
        header["method"], mine, ref_scores, folder / "steps_vs_rho.png", privileged=privileged
    )
    if drops_manifest is not None:
        write_csv(folder / "drops.csv", drops_manifest["runs"])
        write_atomic(folder / "drops.json", json.dumps(drops_manifest, indent=1))
        header = {**header, "runs": drops.summary(drops_manifest["total"])}
    if started is not None:
        header = {
            **header,
            "wall time": f"{command_seconds(started):.0f} s for this command (from its start to "
            f"this card), {sum(r['wall_time'] for r in records):.0f} s of training summed over "
            "its runs",
        }
    result = {
        "header": header,
        "method": mine,
        "references": ref_scores,
        "ratios": ratios,
        "lab": lab,
        "equivalent_methods": groups,
        "near_equivalent_methods": near,
        "decisions_axes": decisions,
        **({"decisions_axes_per_decision": per_decision[1]} if per_decision else {}),
        "privileged_fields": {n: list(f) for n, f in (privileged or {}).items()},
        **({"aggregates": aggregated} if aggregated is not None else {}),
        **({"claims": claims} if claims is not None else {}),
        **({"drops": drops_manifest} if drops_manifest is not None else {}),
    }
    write_atomic(folder / "scores.json", json.dumps(result, indent=1, allow_nan=False))
    write_atomic(
        folder / "report.md",
        markdown(
            header,
            mine,
            ref_scores,
            ratios,
            lab,
            drops_manifest,
            groups,
            near,
            decisions,
            extra,
            privileged,
            per_decision,
            aggregated,
        ),
    )
    return result


def leaderboard(
    version: str,
    tier: str,
    runs_per_method: int,
    references: dict[str, list[Record]],
    unverified: str | None = None,
    privileged: dict[str, tuple[str, ...]] | None = None,
    decision_axes: list[Any] | None = None,
    not_run: dict[str, tuple[list[str], str]] | None = None,
    per_decision_target: float | None = None,
    tuned: dict[str, list[Record]] | None = None,
) -> str:
    """The references' scores as one Markdown table per setting: the dilution exponent, steps
    to target at the highest and the lowest density, their ratio to ``ppo``'s (the learned
    critic) at the lowest density, and the mean normalized AUC. Equivalent methods
    (:func:`~.merging.merged`) are one row, named ``first (= alias)``, with the sentence saying
    why. ``unverified``: why the references are not the shipped ones (the title and a first
    line say so). ``privileged`` (method -> the privileged fields it reads,
    :func:`~.privileged.privileged_of`): a ``privileged`` column, and per setting the
    label-free methods ranked in one table, those reading privileged fields in another
    (``None``: one table without the column, as rb1's shipped leaderboard). ``decision_axes``
    (the tier's :class:`~baselines.lib.protocol.DecisionsAxis` list): per axis, the exponent
    per number of decisions and its trend (:mod:`~.axes`), label-free methods first.
    ``not_run`` (reference -> ``(aliases, why)``): methods the protocol does not run because
    they are one algorithm with that reference (its ``merged`` entries, with the advantage
    probe's sentence), named in its row as ``(= alias)``. ``per_decision_target`` (rb3): each
    decisions axis again with steps to the per-decision target (:func:`~.scores.per_decision`),
    beside the joint target's. ``tuned`` (rb3: the tuned column's runs by method,
    :mod:`~.tuning`): its scores beside the defaults', every table ranked by them."""
    computed = {name: scores.method_scores(recs) for name, recs in references.items()}
    groups = merging.merged(computed)
    for name, (extra, why) in (not_run or {}).items():
        known = next((g for g in groups if g["name"] == name), None)
        if known is None:
            known = {"name": name, "aliases": [], "why": ""}
            groups.append(known)
        known["aliases"] += extra
        listed = ", ".join(f"`{a}`" for a in extra)
        known["why"] = " ".join(filter(None, [known["why"], f"{why} (not run: {listed})"]))
    aliases, hidden = merging.aliases_of(groups), merging.hidden(groups)
    marked = " (unverified references)" if unverified else ""
    lines = [f"# Leaderboard: protocol {version}, tier {tier}{marked}", ""]
    if unverified:
        lines += [f"**Unverified references**: {unverified}", ""]
    lines.append(
        "Scores as defined in docs/benchmark.md (IQM over seeds, 95% bootstrap intervals; "
        "`>=`/`<=`: bounds from censored runs). Runs per method: "
        + ", ".join(f"{n} {len(r)}/{runs_per_method}" for n, r in references.items())
        + "."
    )
    if privileged is not None:
        lines += [
            "",
            "Methods that read privileged batch fields (`critical`, `state_ids`, `turn_scores`, "
            "exact `values`: what an agent would not have in deployment) are ranked apart from "
            "the label-free ones; the `privileged` column names the fields each reads.",
        ]
    tuned_scores = None
    if tuned:
        tuned_scores = {name: scores.method_scores(recs) for name, recs in tuned.items()}
        lines += [
            "",
            "Each method is also scored with hyperparameters tuned for it (the `tuned:` "
            "columns: the protocol's grid searched per method and setting family on seeds no "
            "tier scores, docs/benchmark.md); tables rank by the tuned steps, the default "
            "columns beside them. Tuned runs: "
            + ", ".join(f"{n} {len(r)}/{runs_per_method}" for n, r in tuned.items())
            + ".",
        ]
    if groups:
        lines += ["", "Equivalent methods, one row each:", ""]
        lines += [f"- **{g['name']}** = {', '.join(g['aliases'])}: {g['why']}" for g in groups]
    settings = sorted({s for sc in computed.values() for s in sc["settings"]})
    for setting in settings:
        lines += ["", f"## {setting}"]
        names = [n for n in computed if setting in computed[n]["settings"] and n not in hidden]
        if privileged is None:
            lines += [
                "",
                *_leaderboard_table(computed, setting, names, aliases, None, tuned_scores),
            ]
            continue
        for title, keep in (
            ("Label-free methods", lambda n: not privileged.get(n)),
            ("Methods reading privileged fields", lambda n: bool(privileged.get(n))),
        ):
            block = [n for n in names if keep(n)]
            if block:
                lines += ["", f"### {title}", ""]
                lines += _leaderboard_table(
                    computed, setting, block, aliases, privileged, tuned_scores
                )
    views = [("", computed)]
    if per_decision_target is not None and decision_axes:
        views.append(
            (
                scores.per_decision_label(per_decision_target),
                per_decision_scores(references, decision_axes, per_decision_target),
            )
        )
    for target, view in views:
        lines += _axes_lines(view, decision_axes or [], hidden, aliases, privileged, target)
    return "\n".join(lines) + "\n"


def per_decision_scores(
    records: dict[str, list[Record]], decision_axes: list[Any], target: float
) -> dict[str, Any]:
    """Each method's scores (:func:`~.scores.method_scores`) on the settings of
    ``decision_axes`` at the per-decision target (:func:`~.scores.per_decision`)."""
    decisions = {name: d for a in decision_axes for d, name in a.settings.items()}
    return {
        n: scores.method_scores(scores.per_decision(r, decisions, target))
        for n, r in records.items()
    }


def _axes_lines(
    computed: dict[str, Any],
    decision_axes: list[Any],
    hidden: set[str],
    aliases: dict[str, list[str]],
    privileged: dict[str, tuple[str, ...]] | None,
    target: str,
) -> list[str]:
    """The leaderboard's decisions-axis sections of ``computed`` (``target``: the steps' target
    when it is not the joint one)."""
    lines: list[str] = []
    for axis in axes.all_axes(computed, decision_axes):
        order = [n for n in computed if n not in hidden]
        if privileged is not None:
            order.sort(key=lambda n: bool(privileged.get(n)))
        labels = {
            n: method_label(
                f"{n} (= {', '.join(aliases[n])})" if n in aliases else n,
                privileged.get(n) if privileged is not None else None,
            )
            for n in order
        }
        lines += ["", *axes.markdown(axis, order, labels, target=target)]
    return lines


def _leaderboard_table(
    computed: dict[str, Any],
    setting: str,
    names: list[str],
    aliases: dict[str, list[str]],
    privileged: dict[str, tuple[str, ...]] | None,
    tuned: dict[str, Any] | None = None,
) -> list[str]:
    """The Markdown lines of one leaderboard table: ``names`` on ``setting`` ranked by their
    steps at the lowest density, with a ``privileged`` column where ``privileged`` is given;
    with ``tuned`` (the tuned column's scores by method), its exponent, steps and ratio to the
    tuned ``ppo`` beside the default ones, ranked by the tuned steps."""
    from baselines.experiments.benchmark.privileged import privileged_text

    column = "" if privileged is None else " privileged |"
    extra = (
        ""
        if tuned is None
        else " tuned: dilution exponent | tuned: steps, lowest rho | tuned: steps / ppo's |"
    )
    lines = [
        f"| method |{column} dilution exponent | steps, highest rho | steps, lowest rho | "
        f"steps / ppo's, lowest rho |{extra} AUC |",
        "|---" * (6 + (privileged is not None) + (0 if tuned is None else 3)) + "|",
    ]

    def lowest(sc: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
        entry = (sc or {}).get(name, {}).get("settings", {}).get(setting)
        return None if entry is None else min(entry["rows"], key=lambda r: r["rho"])

    def rank(name: str) -> tuple[int, float]:  # tuned first where it ran, else default
        row = lowest(tuned, name)
        return (
            (0, row["steps_iqm"]) if row is not None else (1, lowest(computed, name)["steps_iqm"])
        )

    for name in sorted(names, key=rank):
        entry = computed[name]["settings"][setting]
        hi = max(entry["rows"], key=lambda r: r["rho"])
        lo = min(entry["rows"], key=lambda r: r["rho"])
        expo = scores.exponent_text(entry["exponent"], why=False)
        cells = [scores.steps_text(r, also=f"rho {r['rho']:.3g}") for r in (hi, lo)]
        ratio = _ratio_to_ppo(name, lo, lowest(computed, "ppo"))
        more = ""
        if tuned is not None:
            mine = (tuned.get(name) or {}).get("settings", {}).get(setting)
            if mine is None:
                more = " not run | not run | not run |"
            else:
                t_lo = min(mine["rows"], key=lambda r: r["rho"])
                t_ratio = _ratio_to_ppo(name, t_lo, lowest(tuned, "ppo"))
                t_expo = scores.exponent_text(mine["exponent"], why=False)
                more = f" {t_expo} | {scores.steps_text(t_lo)} | {t_ratio} |"
        auc = float(np.mean([r["auc_iqm"] for r in entry["rows"]]))
        shown_name = f"{name} (= {', '.join(aliases[name])})" if name in aliases else name
        read = "" if privileged is None else f" {privileged_text(privileged.get(name, ()))} |"
        lines.append(
            f"| {shown_name} |{read} {expo} | {cells[0]} | {cells[1]} | {ratio} |{more} {auc:.3f} |"
        )
    return lines


def _ratio_to_ppo(name: str, row: dict[str, Any], ppo: dict[str, Any] | None) -> str:
    """A method's cell over ``ppo``'s (:func:`~.scores.ratio_text`; ``n/a`` for ppo itself or
    without ppo's runs)."""
    if ppo is None or name == "ppo":
        return "n/a"
    return scores.ratio_text(scores.ratio_to(row, ppo))
