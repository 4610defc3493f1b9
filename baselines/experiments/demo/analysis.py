"""Analysis of the demo's own measurement: the decision density per routine length against
``1 / (1 + L)``, a pure function of the counted critical steps (tested on made-up counts),
and the rho law's table read from the lab's rows. The rest of the demo runs other experiments
(the SNR lab's rho law, the comparison sweep), whose analyses are theirs
(:mod:`baselines.experiments.snr_lab.analysis`, :mod:`baselines.experiments.compare.analysis`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]

RHO_LAW_COLUMNS = (
    "routine_length", "rho", "ratio", "ratio_low", "ratio_high", "ratio_is", "theory_ratio"
)  # fmt: skip
"""The columns of the rho law the demo prints."""


def rho_table(counts: Iterable[Row]) -> list[Row]:
    """One row per routine length of ``counts`` (in order; consecutive counts of one length
    and other rewards share a row): ``1 / (1 + L)``, the measured share of critical steps under
    each reward (``measured_rho_<reward>``: ``critical / steps``) and the expected share under
    the success reward and the uniform policy (doors after the first wrong one are routine:
    ``sum_f q^f / (floors (1 + L))``, ``q = 1 / doors``). A count is a ``routine_length``, a
    ``reward``, the ``critical`` steps and ``steps`` summed over the episodes, and the env's
    ``num_doors`` and ``num_floors``."""
    rows: list[Row] = []
    shapes: list[Row] = []
    for c in counts:
        length, column = c["routine_length"], f"measured_rho_{c['reward']}"
        if not rows or rows[-1]["routine_length"] != length or column in rows[-1]:
            rows.append({"routine_length": length, "theory_1_over_1_plus_L": 1 / (1 + length)})
            shapes.append(c)
        rows[-1][column] = c["critical"] / c["steps"]
    for row, shape in zip(rows, shapes, strict=True):
        q, floors, length = 1 / shape["num_doors"], shape["num_floors"], row["routine_length"]
        row["theory_success_uniform"] = sum(q**f for f in range(floors)) / (floors * (1 + length))
    return rows


def rho_law_rows(lab_rows: Iterable[Row]) -> list[Row]:
    """The rho law's per-state rows of the lab's ``rho_law.csv``, in the columns of
    :data:`RHO_LAW_COLUMNS`."""
    return [{k: r[k] for k in RHO_LAW_COLUMNS} for r in lab_rows if r["param"] == "per_state"]
