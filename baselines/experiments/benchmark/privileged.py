"""Which privileged batch fields each method of a leaderboard reads
(:data:`routine_envs.episodes.PRIVILEGED_FIELDS`: ``critical``, ``state_ids``, ``turn_scores``,
``values`` where exact), for its ``privileged`` column, for ranking label-free methods apart and
for marking it wherever it is named (:func:`method_label`).

A method's fields are those its runs were given, as each run recorded them (``privileged_fields``
of its row: its estimator's ``requires``, read once when it was built, is what every trainer
gave it: :func:`routine_envs.credit.declare`). A row written before runs recorded them reads
with its built-in method's (:func:`baselines.lib.records.upgrade`); for one of outside code the
estimator is built again from the record as its trainer built it
(:func:`baselines.lib.privileged.build_privileged`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Record = dict[str, Any]


def privileged_of(references: Mapping[str, Sequence[Record]]) -> dict[str, tuple[str, ...]]:
    """Per method (the keys of ``references``, records by method), the privileged fields its runs
    read: the union over its records' recorded fields (a record that has none: over one such
    record per setting, its estimator built again), in :data:`PRIVILEGED_FIELDS` order."""
    from baselines.lib.privileged import FIELD, row_privileged
    from routine_envs.episodes import PRIVILEGED_FIELDS

    out: dict[str, tuple[str, ...]] = {}
    for method, records in references.items():
        read: set[str] = set()
        unrecorded: dict[Any, Record] = {}
        for r in records:
            if r.get(FIELD) is None:
                unrecorded.setdefault(r.get("setting", r.get("env_id")), r)  # one per setting
            else:
                read.update(row_privileged(r))
        for r in unrecorded.values():
            read.update(row_privileged(r))
        out[method] = tuple(f for f in PRIVILEGED_FIELDS if f in read)
    return out


def privileged_text(fields: Sequence[str]) -> str:
    """``critical, state_ids``, or ``none`` (a label-free method)."""
    return ", ".join(fields) if fields else "none"


PRIVILEGED_MARK = " (privileged"
"""How a name that says it reads privileged fields says so: ``oracle (privileged: state_ids)``
(a method's own label may carry one already: ``gigpo (privileged: state_id)``)."""


def method_label(name: str, fields: Sequence[str] | None = None, width: int | None = None) -> str:
    """How a method is named wherever it is shown (tables, the lab's rows, legends): ``name``
    (cut to ``width`` characters where given) with its privileged mark, ``oracle (privileged:
    state_ids)``, from ``fields`` (the privileged fields it reads: :func:`privileged_of`); a
    label-free method (``fields`` empty or ``None``) as it is, and a name that carries a mark
    already (``gigpo (privileged: state_id)``) not marked twice. The mark is never cut."""
    at = name.find(PRIVILEGED_MARK)
    base, own = (name[:at], name[at:]) if at >= 0 else (name, "")
    if width is not None:
        base = base[:width]
    if own or not fields:
        return base + own
    return f"{base} (privileged: {privileged_text(fields)})"


def method_labels(
    names: Iterable[str], privileged: Mapping[str, Sequence[str]] | None, width: int | None = None
) -> dict[str, str]:
    """:func:`method_label` of each of ``names`` by name, its fields from ``privileged``
    (method -> fields, :func:`privileged_of`; ``None``: no marks but the names' own)."""
    return {n: method_label(n, (privileged or {}).get(n), width) for n in names}
