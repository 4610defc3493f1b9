"""Output of experiments: CSV tables written atomically, plain-text tables, matplotlib."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write ``rows`` atomically (a temporary file renamed over ``path``; a full disk leaves
    ``path`` as it was and names it: :func:`~baselines.lib.results.write_atomic`). The columns
    are every row's keys in order of first appearance; a row without one leaves it empty."""
    from baselines.lib.results import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    if rows:
        columns = list(dict.fromkeys(key for row in rows for key in row))
        writer = csv.DictWriter(text, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    write_atomic(path, text.getvalue())


def format_table(rows: list[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain-text table of ``rows``."""
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0])

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}" if np.isfinite(v) else str(v)
        return str(v)

    cells = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
