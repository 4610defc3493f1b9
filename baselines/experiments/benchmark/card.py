"""A method's report card as a pure function of what it is computed from.

``report --method SPEC`` and ``verify-submission`` build a card the same way: from the method's
rows, the shipped references, the lab rows, the drops manifest, the privileged fields each method
read and three *claims* of the machine that made it (git commit, hardware, the command's wall
time), which are facts of that machine no one else can rebuild. Everything else in the card is
derived here, so the verifier rebuilds every file of a submitted card from its rows and compares
them byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import aggregates, manifest, paper, privileged, report
from baselines.lib import protocol as protocols
from routine_envs import plugins

Record = dict[str, Any]
CLAIMS = ("git commit", "hardware", "command seconds")
"""What a card says of the machine that made it, not rebuilt from its rows."""


@dataclass(frozen=True)
class CardSettings:
    """What a card is of: the method spec, the tier, the trainer, the settings' env ids
    (``None``: every setting of the tier) and whether the lab measured the method."""

    method: str
    tier: str
    trainer: str
    env_ids: tuple[str, ...] | None = None
    lab: bool = True


def references_of(
    protocol: protocols.Protocol,
    settings: CardSettings,
    refs: manifest.References,
    configs: Path,
) -> dict[str, list[Record]]:
    """The reference runs a card of ``settings`` sets its method beside: the shipped ones of its
    tier from ``refs`` (opened), but the method's own, on its settings' env ids only; a method
    with no run there left out."""
    from baselines.experiments.benchmark.reading import load_references

    found = load_references(protocol, settings.tier, refs, configs, skip=settings.method)
    env_ids = settings.env_ids
    return {
        name: kept
        for name, recs in found.items()
        if (kept := [r for r in recs if env_ids is None or r["env_id"] in env_ids])
    }


def claims_now(started: float) -> dict[str, Any]:
    """This machine's claims (:data:`CLAIMS`) for a card made by a command that started at
    ``started`` (``time.perf_counter()``)."""
    return {
        "git commit": report.git_commit(Path(__file__).parent),
        "hardware": report.hardware(),
        "command seconds": round(report.command_seconds(started)),
    }


def method_label(method: str) -> str:
    """How the card names ``method``: a built-in's label (marked where it reads privileged
    fields), outside code as written (never imported here)."""
    if plugins.is_import_path(plugins.parse_spec(method, "method").target):
        return plugins.parse_spec(method, "method").text
    from baselines.lib.specs import parse_method

    return parse_method(method).label()


def reads_of(
    method: str,
    records: Sequence[Record],
    references: Mapping[str, Sequence[Record]],
    claimed: Sequence[str] | None = None,
    resolve: bool = True,
) -> dict[str, tuple[str, ...]]:
    """The privileged fields each method read, from their estimators
    (:func:`~.privileged.privileged_of`). With ``resolve=False`` (a verifier: outside code is
    never imported), outside code's come from what its rows record, or ``claimed`` (a rerun
    checks the claim)."""
    outside = plugins.is_import_path(plugins.parse_spec(method, "method").target)
    if resolve or not outside:
        return privileged.privileged_of({method: records, **references})
    return {method: recorded_reads(records, claimed), **privileged.privileged_of(references)}


def recorded_reads(records: Sequence[Record], claimed: Sequence[str] | None) -> tuple[str, ...]:
    """The privileged fields outside code's runs say they read: the rows' ``privileged_fields``
    where they record them (one value for every row, else ``ValueError``), else
    ``claimed``."""
    from baselines.lib.privileged import FIELD
    from routine_envs.episodes import PRIVILEGED_FIELDS

    found = {tuple(r[FIELD]) for r in records if isinstance(r.get(FIELD), list)}
    if len(found) > 1:
        raise ValueError(f"the rows record different privileged fields: {sorted(found)}")
    read = set(found.pop() if found else claimed or ())
    return tuple(f for f in PRIVILEGED_FIELDS if f in read)


def steps_counted(method: str) -> str | None:
    """How a built-in method's budget counts steps where it is not every environment step (its
    estimator's ``steps_counted``: tree rollouts); ``None`` otherwise, and for outside code,
    which is never imported to write a card."""
    from routine_envs import credit

    target = method.split("{", 1)[0].strip()  # the name before its JSON arguments
    if target not in credit.ESTIMATORS:
        return None
    return getattr(credit.estimator_class(target), "steps_counted", None)


def in_lab(methods: Sequence[str]) -> list[str]:
    """The methods of ``methods`` the lab measures: all but those whose budget counts steps its
    own way (:func:`steps_counted`: tree rollouts, whose groups share prefixes), which the lab's
    independent episodes would measure as another algorithm."""
    return [m for m in methods if steps_counted(m) is None]


def header(
    protocol: protocols.Protocol,
    settings: CardSettings,
    records: Sequence[Record],
    references: Mapping[str, Sequence[Record]],
    refs: manifest.References,
    reads: Mapping[str, Sequence[str]],
    claims: Mapping[str, Any],
) -> dict[str, Any]:
    """The card's header: what it is of, then the machine's ``claims``."""
    tier = protocol.tier(settings.tier)
    versions = report.versions_of(list(records))
    ref_versions = [v for recs in references.values() for v in report.versions_of(list(recs))]
    out = {
        "method": method_label(settings.method),
        "privileged fields read": privileged.privileged_text(reads.get(settings.method, ())),
        "protocol": f"{protocol.version} ({protocol.status}, sha256 {protocol.sha256[:12]}), "
        f"tier {settings.tier}",
        "settings": "all of the tier's"
        if settings.env_ids is None
        else "only those on " + ", ".join(settings.env_ids) + " (a partial card)",
        "runs": f"{len(records)} of {tier.num_runs_per_method}",
        "trainer": settings.trainer
        + (
            f"; the references: {protocol.trainer} (the trainers' equivalence: docs/batched.md)"
            if settings.trainer != protocol.trainer
            else ""
        ),
        "seeds": ", ".join(map(str, tier.seeds)),
        "package versions": json.dumps(versions, sort_keys=True),
        "references": ", ".join(f"{n} ({len(r)} runs)" for n, r in references.items()) or "none",
        "reference files": refs.status,
        "git commit": str(claims["git commit"]),
        "hardware": str(claims["hardware"]),
        "wall time": f"{int(claims['command seconds'])} s for this command (from its start to "
        f"this card), {sum(r['wall_time'] for r in records):.0f} s of training summed over its "
        "runs",
    }
    counted = steps_counted(settings.method)
    if counted:
        out = {**out, "steps counted": counted}
    if not refs.verified:
        out = {"unverified references": refs.status, **out}
    if any(v not in versions for v in ref_versions):
        other = [v for v in ref_versions if v not in versions]
        out["note"] = "some references were made with other package versions: " + json.dumps(
            other, sort_keys=True
        )
    hashes = sorted(
        {r["protocol"]["sha256"] for recs in (records, *references.values()) for r in recs}
    )
    if hashes != [protocol.sha256]:
        out["protocol files of the runs"] = (
            ", ".join(h[:12] for h in hashes)
            + f": not only this file of {protocol.version} ({protocol.sha256[:12]})"
        )
    return out


def write(
    folder: Path,
    protocol: protocols.Protocol,
    settings: CardSettings,
    records: list[Record],
    references: dict[str, list[Record]],
    refs: manifest.References,
    lab: list[dict[str, Any]],
    drops_manifest: dict[str, Any],
    reads: dict[str, tuple[str, ...]],
    claims: Mapping[str, Any],
    paper_rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write the card into ``folder`` (``report.md``, ``scores.json`` with the claims,
    ``scores.csv``, the drops manifest, the figures; on a tier that measures the paper's SNR,
    its ``paper_rows``, :func:`paper_rows`; where the protocol reports ``aggregates``, the
    method's against the references, :func:`~.aggregates.versus`); the scores. The same inputs
    give the same bytes."""
    tier = protocol.tier(settings.tier)
    aggregated = None
    if protocol.report["aggregates"] != "none":
        aggregated = aggregates.versus(settings.method, records, references)
    head = header(protocol, settings, records, references, refs, reads, claims)
    if head["method"] != settings.method and settings.method in reads:
        reads = {**reads, head["method"]: reads[settings.method]}  # as the card names it
    return report.write_report(
        folder,
        head,
        records,
        references,
        lab,
        drops_manifest,
        decision_axes=tier.axes(),
        privileged=reads,
        paper_snr=paper_rows if tier.snr is not None else None,
        claims={k: claims[k] for k in CLAIMS},
        per_decision_target=protocol.per_decision_target,
        aggregated=aggregated,
    )


def paper_rows(
    protocol: protocols.Protocol,
    settings: CardSettings,
    claimed: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]] | None:
    """The paper tier's SNR rows of a card (``None`` on a tier that measures none): the tier's
    estimators and, with the lab, the card's method, measured here; for outside code that must
    not run here (a verifier), the method's rows are ``claimed`` (its bundled ``paper.json``),
    placed where the measurement puts them."""
    tier = protocol.tier(settings.tier)
    if tier.snr is None:
        return None
    method = settings.method
    outside = plugins.is_import_path(plugins.parse_spec(method, "method").target)
    if not claimed or not outside:
        return paper.snr_rows(protocol, tier, [method] if settings.lab else [])
    rows = paper.snr_rows(protocol, tier, [])
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        out.append(row)
        last = i + 1 == len(rows) or (rows[i + 1]["setting"], rows[i + 1]["density_value"]) != (
            row["setting"],
            row["density_value"],
        )
        if last:
            out += [
                dict(c)
                for c in claimed
                if c.get("estimator") == method
                and (c.get("setting"), c.get("density_value"))
                == (row["setting"], row["density_value"])
            ]
    return out
