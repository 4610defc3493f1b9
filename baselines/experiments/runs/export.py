"""``runs export``: the shipped reference runs of one or more protocols as one table.

One row per run (a reference's default column, and its tuned column where the protocol tunes),
read from the verified shipped references (:func:`~baselines.experiments.benchmark.reading.
shipped_tiers`): a changed reference file stops the export, as it stops every command. Nested
fields (env kwargs, hyperparameters, curves) are JSON text in CSV and lists or JSON text in
Parquet, so both formats hold the same values; a censored run (it never reached the target)
has an empty ``steps_to_target`` and ``censored`` true, never the budget in its place.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark.shipped import ShippedTier, shipped_tiers
from baselines.lib.results import write_atomic

COLUMNS = (
    "protocol", "tier", "method", "column", "setting", "env_id", "env_kwargs", "density_kwarg",
    "density_value", "rho", "seed", "budget", "target", "steps_to_target", "censored",
    "final_success", "steps_trained", "eval_every", "timesteps", "success", "privileged_fields",
    "label", "trainer", "evaluation", "hyperparameters", "estimator", "versions", "wall_time",
    "cpu_time", "key",
)  # fmt: skip
"""The table's columns, in order."""
NESTED = ("env_kwargs", "hyperparameters", "estimator", "versions", "privileged_fields")
"""Columns whose values are JSON text in either format (their shape varies by method)."""
CURVES = ("timesteps", "success")
"""Columns that are lists of numbers: JSON text in CSV, list columns in Parquet."""


@dataclass
class ExportArgs:
    """Settings of ``runs export``."""

    out: Path = field(metadata={"help": "the table to write: FILE.csv or FILE.parquet"})
    protocols: list[str] = field(
        default_factory=list,
        metadata={"help": "protocol versions to export (default: every one with references)"},
    )


def table_rows(tiers: list[ShippedTier]) -> Iterator[dict[str, Any]]:
    """One row per shipped run of ``tiers``, in the order of :data:`COLUMNS` (nested fields
    as Python values)."""
    for tier in tiers:
        for column, found in (("default", tier.found), ("tuned", tier.tuned)):
            for method, records in found.items():
                for r in records:
                    computed = {
                        "protocol": tier.protocol.version,
                        "tier": tier.name,
                        "method": method,
                        "column": column,
                        "censored": r.get("steps_to_target") is None,
                        "final_success": r["success"][-1] if r.get("success") else None,
                    }
                    yield {name: computed.get(name, r.get(name)) for name in COLUMNS}


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    """``rows`` as CSV (nested fields and curves as JSON text, ``None`` as empty)."""
    import io

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                name: json.dumps(value) if name in NESTED + CURVES and value is not None else value
                for name, value in row.items()
            }
        )
    write_atomic(path, text.getvalue())


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """``rows`` as Parquet (zstd; curves as list columns, nested fields as JSON text)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(
            f"--out {path}: Parquet needs pyarrow (pip install pyarrow), or write .csv"
        ) from None
    columns = {
        name: [
            json.dumps(row[name]) if name in NESTED and row[name] is not None else row[name]
            for row in rows
        ]
        for name in COLUMNS
    }
    types = {name: pa.list_(pa.float64()) for name in CURVES}
    table = pa.table({n: pa.array(v, type=types.get(n)) for n, v in columns.items()})
    import io

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    write_atomic(path, sink.getvalue())


WRITERS = {".csv": write_csv, ".parquet": write_parquet}


def main(args: ExportArgs) -> dict[str, Any]:
    """Write the table; ``{"path", "rows"}``."""
    path = Path(args.out)
    writer = WRITERS.get(path.suffix)
    if writer is None:
        raise ValueError(f"--out {path}: name a .csv or .parquet file")
    rows = list(table_rows(shipped_tiers(list(args.protocols))))
    path.parent.mkdir(parents=True, exist_ok=True)
    writer(rows, path)
    tiers = sorted({(r["protocol"], r["tier"]) for r in rows})
    print(f"wrote {path}: {len(rows):,} runs of {len(tiers)} tiers ({path.stat().st_size:,} bytes)")
    return {"path": path, "rows": len(rows)}
