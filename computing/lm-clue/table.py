"""The dilution table of docs/llm.md (markdown) from a ``lm dilution`` folder's records.

    python computing/lm-clue/table.py computing/lm-clue/bandit-dilution

Per density value, for each estimator: median GRPO steps to target with its 95 % bootstrap
interval over seeds and the runs that reached the target (censored cells as bounds:
:func:`baselines.experiments.lm.analysis.format_steps`), the ratio of medians to the oracle's
with its interval (:func:`~baselines.experiments.lm.analysis.format_ratio`) and the median CPU
seconds per run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from baselines.experiments.lm import analysis  # noqa: E402


def markdown(folder: Path) -> str:
    """The table of the records in ``folder / "results.jsonl"``."""
    records = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    rows = analysis.dilution_table(records)
    column = next(k for k in rows[0] if k not in ("estimator", "rho"))
    estimators = sorted({r["estimator"] for r in rows}, key=lambda e: (e == "oracle", e))
    head = [column, "rho"]
    for name in estimators:
        ratio = [] if name == "oracle" else [f"`{name}` / oracle"]
        head += [f"`{name}` steps", *ratio, f"`{name}` CPU s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for value in sorted({r[column] for r in rows}):
        cells = {r["estimator"]: r for r in rows if r[column] == value}
        first = next(iter(cells.values()))
        line = [str(value), f"{first['rho']:.3g}"]
        for name in estimators:
            cell = cells.get(name)
            width = 2 if name == "oracle" else 3
            if cell is None:
                line += ["not run"] * width
                continue
            ratio = [] if name == "oracle" else [cell["ratio_display"]]
            line += [cell["display"], *ratio, f"{cell['median_cpu_seconds']:.0f}"]
        lines.append("| " + " | ".join(line) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(Path(sys.argv[1])))
