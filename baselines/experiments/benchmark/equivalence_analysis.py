"""Analysis of the equivalence study: per (method, environment setting, density), steps to
target of the batched runs against the SB3 references, scored as the leaderboard scores them
(:func:`baselines.experiments.benchmark.scores.setting_scores`: IQM over seeds, censored runs at
their budget) and compared by :func:`~baselines.experiments.benchmark.scores.ratio_to` (IQM
ratio batched / SB3 with a two-sample percentile bootstrap 95% interval).

A cell is **equivalent** by two one-sided tests at level 0.05 against the margin
``[0.85, 1.18]`` (:func:`~baselines.experiments.benchmark.scores.tost`: the 90% bootstrap
interval of the ratio inside the margin); a cell where a run of either trainer did not reach the
target is ``censored``, reported apart and never counted as equivalent.
Writes ``equivalence.csv``/``.json`` (the table), and one PNG per environment
(``curves_<env id>.png``, the IQM learning curves of both trainers with bootstrap bands, one
panel per method and density) beside ``curves_<env id>.csv`` (their numbers).
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from baselines.experiments.benchmark.scores import (
    EQUIVALENCE_MARGIN,
    ratio_text,
    ratio_to,
    setting_scores,
    steps_text,
    tost,
)
from baselines.lib.stats import bootstrap_ci, iqm

if TYPE_CHECKING:
    from baselines.experiments.benchmark.manifest import References

BAND = EQUIVALENCE_MARGIN
"""The equivalence margin of the ratio batched / SB3 (:func:`~.scores.tost`)."""
Record = dict[str, Any]


def load_references(
    protocol: str, tier: str, methods: Sequence[str], refs: References | None = None
) -> list[Record]:
    """The shipped reference runs of ``methods``, each tagged with its trainer (a row that
    names none is SB3's: rb1's references), read from ``refs`` (default: the shipped folder
    opened by :func:`~baselines.experiments.benchmark.manifest.open_references`, so checked
    against the pinned manifest: a changed file is refused naming it before it is parsed)."""
    from baselines.experiments.benchmark import manifest
    from baselines.lib.protocol import load_protocol
    from baselines.lib.trainers import trainer_of

    if refs is None:
        refs = manifest.open_references(load_protocol(protocol), tier)
    out = []
    for method in methods:
        path = refs.path(method)
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                out.append({**row, "trainer": trainer_of(row)})
    return out


def cells(records: Iterable[Record]) -> dict[tuple[str, str, str, int], list[Record]]:
    """Runs by ``(method, setting, trainer, density_value)``."""
    out: dict[tuple[str, str, str, int], list[Record]] = defaultdict(list)
    for r in records:
        key = (r["method"], r["setting"], r.get("trainer", "sb3"), int(r["density_value"]))
        out[key].append(r)
    return dict(out)


def equivalence_rows(batched: Sequence[Record], references: Sequence[Record]) -> list[Record]:
    """One row per (method, setting, density) present in both: both IQMs and the ratio."""
    groups = cells([*batched, *references])
    rows = []
    for (method, setting, trainer, value), runs in sorted(groups.items()):
        if trainer != "batched" or (method, setting, "sb3", value) not in groups:
            continue
        ours = setting_scores(runs)
        theirs = setting_scores(groups[(method, setting, "sb3", value)])
        ratio = ratio_to(ours, theirs)
        test = tost(ours, theirs, BAND)
        rows.append(
            {
                "method": method,
                "setting": setting,
                "env_id": runs[0]["env_id"],
                "density_kwarg": runs[0]["density_kwarg"],
                "density_value": value,
                "rho": float(runs[0]["rho"]),
                "sb3_runs": theirs["runs"],
                "sb3_reached": theirs["reached"],
                "sb3_iqm": theirs["steps_iqm"],
                "sb3_steps": steps_text(theirs),
                "batched_runs": ours["runs"],
                "batched_reached": ours["reached"],
                "batched_iqm": ours["steps_iqm"],
                "batched_steps": steps_text(ours),
                "ratio": ratio["ratio"],
                "low": ratio["low"],
                "high": ratio["high"],
                "bound": ratio["bound"],
                "ratio_text": ratio_text(ratio),
                "tost_p": test["p"],
                "tost_low": test["low"],
                "tost_high": test["high"],
                "verdict": test["verdict"],
                "note": test["note"],
                "equivalent": test["verdict"] == "equivalent",
            }
        )
    return rows


def markdown_table(rows: Sequence[Record]) -> str:
    """The table as Markdown (docs/batched.md quotes it): the uncensored cells with their TOST
    verdict, then the censored cells apart."""
    lines = [
        "| env | density | method | SB3 IQM steps (reached) | batched IQM steps (reached) | "
        "ratio [95% CI] | TOST p (90% CI) | equivalent |",
        "|---|---|---|---|---|---|---|---|",
    ]
    censored = [r for r in rows if r["verdict"] == "censored"]
    for r in rows:
        if r["verdict"] == "censored":
            continue
        tested = (
            "n/a"
            if r["tost_low"] is None
            else f"{r['tost_p']:.3f} ({r['tost_low']:.3f}, {r['tost_high']:.3f})"
        )
        lines.append(
            f"| {r['setting']} | {r['density_kwarg']}={r['density_value']} | {r['method']} | "
            f"{r['sb3_steps']} | {r['batched_steps']} | {r['ratio_text']} | {tested} | "
            f"{'yes' if r['equivalent'] else 'not shown'} |"
        )
    if censored:
        lines += [
            "",
            "Censored cells (a run of either trainer did not reach the target: not tested, "
            "not counted as equivalent):",
            "",
            "| env | density | method | SB3 steps | batched steps | censored |",
            "|---|---|---|---|---|---|",
        ]
        for r in censored:
            lines.append(
                f"| {r['setting']} | {r['density_kwarg']}={r['density_value']} | {r['method']} | "
                f"{r['sb3_steps']} | {r['batched_steps']} | {r['note']} |"
            )
    margin = f"[{BAND[0]}, {BAND[1]}]"
    counted = [r for r in rows if r["verdict"] != "censored"]
    lines += [
        "",
        f"{sum(r['equivalent'] for r in counted)} of {len(counted)} uncensored cells equivalent "
        f"(two one-sided tests at 0.05, margin {margin}); {len(censored)} censored cells apart.",
    ]
    return "\n".join(lines)


def curve_rows(records: Sequence[Record]) -> list[Record]:
    """IQM success with a bootstrap 95% band at every evaluation point, per (method, setting,
    density, trainer)."""
    rows = []
    for (method, setting, trainer, value), runs in sorted(cells(records).items()):
        length = min(len(r["success"]) for r in runs)
        success = np.array([r["success"][:length] for r in runs])
        est, low, high = bootstrap_ci(success, iqm)
        for k in range(length):
            rows.append(
                {
                    "method": method,
                    "setting": setting,
                    "env_id": runs[0]["env_id"],
                    "density_value": value,
                    "trainer": trainer,
                    "timesteps": runs[0]["timesteps"][k],
                    "success_iqm": float(est[k]),
                    "low": float(low[k]),
                    "high": float(high[k]),
                    "runs": len(runs),
                }
            )
    return rows


def plot_curves(rows: Sequence[Record], env_id: str, path: Path) -> None:
    """Both trainers' IQM learning curves of one setting (``env_id``: its rows' ``setting``,
    or their env id where each env has one setting), one panel per (method, density)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    mine = [r for r in rows if r["setting"] == env_id] or [r for r in rows if r["env_id"] == env_id]
    methods = sorted({r["method"] for r in mine})
    values = sorted({r["density_value"] for r in mine})
    fig, axes = plt.subplots(
        len(methods), len(values), figsize=(3.2 * len(values), 2.6 * len(methods)), squeeze=False
    )
    colors = {"sb3": "tab:blue", "batched": "tab:orange"}
    for i, method in enumerate(methods):
        for j, value in enumerate(values):
            ax = axes[i][j]
            for trainer in ("sb3", "batched"):
                pts = [
                    r
                    for r in mine
                    if r["method"] == method
                    and r["density_value"] == value
                    and r["trainer"] == trainer
                ]
                if not pts:
                    continue
                t = [p["timesteps"] for p in pts]
                ax.plot(
                    t,
                    [p["success_iqm"] for p in pts],
                    color=colors[trainer],
                    label=f"{trainer} ({pts[0]['runs']} seeds)",
                )
                ax.fill_between(
                    t,
                    [p["low"] for p in pts],
                    [p["high"] for p in pts],
                    color=colors[trainer],
                    alpha=0.2,
                )
            ax.axhline(0.9, color="grey", lw=0.6, ls="--")
            ax.set_title(f"{method}, {mine[0].get('density_kwarg', 'L')}={value}", fontsize=9)
            ax.set_ylim(0, 1.02)
            ax.xaxis.set_major_locator(MaxNLocator(4))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k"))
            ax.tick_params(labelsize=7)
            if i == len(methods) - 1:
                ax.set_xlabel("env steps", fontsize=8)
            if j == 0:
                ax.set_ylabel("success (IQM)", fontsize=8)
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"{env_id}: SB3 vs the batched trainer (IQM, 95% bootstrap band)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_csv(path: Path, rows: Sequence[Record]) -> None:
    if not rows:
        return
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def analyse(
    batched: Sequence[Record],
    out: Path,
    protocol: str,
    tier: str,
    methods: Sequence[str],
    extra_sb3: Sequence[Record] = (),
    refs: References | None = None,
) -> list[Record]:
    """Write the table and the curves (see the module docstring); return the table's rows.
    ``extra_sb3``: SB3 runs of more seeds, scored with the shipped references (read from
    ``refs``, checked by default: :func:`load_references`)."""
    references = load_references(protocol, tier, methods, refs)
    references += [{**r, "trainer": "sb3"} for r in extra_sb3 if r["method"] in methods]
    settings = {r["setting"] for r in batched}
    references = [r for r in references if r["setting"] in settings]
    return analyse_records(batched, references, out)


def analyse_records(batched: Sequence[Record], sb3: Sequence[Record], out: Path) -> list[Record]:
    """:func:`analyse` of two sets of runs, ``batched`` (the batched trainer's) and ``sb3``
    (SB3's), whichever made the references: the table and, per environment (per setting where
    an environment has several), the curves."""
    out.mkdir(parents=True, exist_ok=True)
    batched = [{**r, "trainer": "batched"} for r in batched]
    references = [{**r, "trainer": "sb3"} for r in sb3]
    rows = equivalence_rows(batched, references)
    write_csv(out / "equivalence.csv", rows)
    (out / "equivalence.json").write_text(json.dumps(rows, indent=1))
    (out / "equivalence.md").write_text(markdown_table(rows) + "\n")
    curves = curve_rows([*batched, *references])
    settings = sorted({r["setting"] for r in batched})
    several = len(settings) > len({r["env_id"] for r in batched})
    for setting in settings:
        first = next(r for r in batched if r["setting"] == setting)
        name = setting if several else first["env_id"]
        env_rows = [c for c in curves if c["setting"] == setting]
        for c in env_rows:
            c["density_kwarg"] = first["density_kwarg"]
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
        write_csv(out / f"curves_{slug}.csv", env_rows)
        plot_curves(env_rows, setting, out / f"curves_{slug}.png")
    return rows
