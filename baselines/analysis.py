"""Analysis of a comparison sweep: statistics across seeds, tables and plots (bsuite-style).

Every function takes the list of run records of :mod:`baselines.compare` (one dict per run, with
``method``, ``seed``, ``routine_length``, ``rho``, ``timesteps``, ``success``, ``budget``,
``target``) and returns plain rows (lists of dicts), so it is tested on small synthetic tables.
Across seeds: the interquartile mean (IQM) or the mean, with percentile bootstrap confidence
intervals over seeds.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Record = dict[str, Any]
Row = dict[str, Any]


# ----------------------------------------------------------------------------- statistics
def iqm(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50% (25% trimmed each side; the plain mean
    for fewer than 4 values)."""
    x = np.sort(np.asarray(values, dtype=np.float64), axis=axis)
    n = x.shape[axis]
    k = n // 4
    return np.take(x, np.arange(k, n - k), axis=axis).mean(axis=axis)


def mean(values: Sequence[float] | np.ndarray, axis: int = 0) -> np.ndarray | float:
    return np.asarray(values, dtype=np.float64).mean(axis=axis)


STATISTICS: dict[str, Callable[..., Any]] = {"iqm": iqm, "mean": mean}


def bootstrap_ci(
    samples: np.ndarray,
    statistic: Callable[..., Any] = mean,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and percentile bootstrap interval of ``statistic`` over axis 0 (seeds).

    Args:
        samples: shape ``(num_seeds, ...)``.
    Returns:
        ``(estimate, low, high)``, each of shape ``samples.shape[1:]``.
    """
    samples = np.asarray(samples, dtype=np.float64)
    estimate = np.asarray(statistic(samples, axis=0))
    n = samples.shape[0]
    if n < 2:
        return estimate, estimate.copy(), estimate.copy()
    rng = np.random.default_rng(seed)
    picks = rng.integers(n, size=(num_resamples, n))
    stats = np.stack([statistic(samples[p], axis=0) for p in picks])
    tail = (1 - confidence) / 2 * 100
    return estimate, np.percentile(stats, tail, axis=0), np.percentile(stats, 100 - tail, axis=0)


# ------------------------------------------------------------------------------- grouping
def group_runs(records: Iterable[Record], *keys: str) -> dict[tuple, list[Record]]:
    """Records grouped by the values of ``keys`` (sorted by seed within a group)."""
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for record in records:
        groups[tuple(record[k] for k in keys)].append(record)

    def order(item: tuple[tuple, list[Record]]) -> list[tuple[int, Any]]:
        # numbers in numeric order (L = 3 before L = 10), then anything else as text
        return [(0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in item[0]]

    return {k: sorted(v, key=lambda r: r["seed"]) for k, v in sorted(groups.items(), key=order)}


def steps_to_target(record: Record) -> float:
    """First evaluation timestep with success >= target; ``inf`` when never reached."""
    for t, s in zip(record["timesteps"], record["success"], strict=True):
        if s >= record["target"]:
            return float(t)
    return float("inf")


def normalized_auc(record: Record) -> float:
    """Area under the success curve over the budget, in ``[0, 1]`` (trapezoid rule)."""
    t = np.asarray(record["timesteps"], dtype=np.float64)
    s = np.asarray(record["success"], dtype=np.float64)
    if len(t) < 2:
        return float(s.mean())
    return float(np.sum((s[1:] + s[:-1]) / 2 * np.diff(t)) / (t[-1] - t[0]))


# --------------------------------------------------------------------------------- tables
def learning_curves(records: Iterable[Record], statistic: str = "iqm") -> list[Row]:
    """Per (routine length, method, timestep): the statistic of success across seeds with a
    95% bootstrap band. Runs of a group share their evaluation grid (cut to the shortest)."""
    rows = []
    for (length, method), runs in group_runs(records, "routine_length", "method").items():
        size = min(len(r["success"]) for r in runs)
        table = np.array([r["success"][:size] for r in runs])
        est, lo, hi = bootstrap_ci(table, STATISTICS[statistic])
        for i, t in enumerate(runs[0]["timesteps"][:size]):
            rows.append(
                {
                    "routine_length": length,
                    "rho": runs[0]["rho"],
                    "method": method,
                    "timesteps": t,
                    statistic: float(est[i]),
                    "low": float(lo[i]),
                    "high": float(hi[i]),
                    "seeds": len(runs),
                }
            )
    return rows


def steps_to_target_table(records: Iterable[Record]) -> list[Row]:
    """Per (routine length, method): mean steps to reach the target across seeds, with a 95%
    bootstrap interval. A seed that never reaches it counts as its budget (a lower bound: the
    row's ``censored`` says how many), so a method that fails is not flattered."""
    rows = []
    for (length, method), runs in group_runs(records, "routine_length", "method").items():
        steps = np.array([steps_to_target(r) for r in runs])
        censored = ~np.isfinite(steps)
        filled = np.where(censored, [r["budget"] for r in runs], steps)
        est, lo, hi = bootstrap_ci(filled)
        rows.append(
            {
                "routine_length": length,
                "rho": runs[0]["rho"],
                "method": method,
                "seeds": len(runs),
                "reached": int((~censored).sum()),
                "censored": int(censored.sum()),
                "mean_steps": float(est),
                "low": float(lo),
                "high": float(hi),
                "target": runs[0]["target"],
                "budget": runs[0]["budget"],
            }
        )
    return rows


def ratio_table(
    records: Iterable[Record], baseline: str = "ppo", num_resamples: int = 2000, seed: int = 0
) -> list[Row]:
    """Per (routine length, method != baseline): mean steps to target of the method over that
    of ``baseline`` (turn-level), with a 95% bootstrap interval resampling the seeds of both."""
    records = list(records)
    by_key = group_runs(records, "routine_length", "method")
    rng = np.random.default_rng(seed)
    rows = []
    for (length, method), runs in by_key.items():
        if method == baseline or (length, baseline) not in by_key:
            continue
        base_runs = by_key[(length, baseline)]

        def filled(rs: list[Record]) -> np.ndarray:
            s = np.array([steps_to_target(r) for r in rs])
            return np.where(np.isfinite(s), s, [r["budget"] for r in rs])

        a, b = filled(runs), filled(base_runs)
        ratio = a.mean() / b.mean()
        boots = [
            a[rng.integers(len(a), size=len(a))].mean()
            / b[rng.integers(len(b), size=len(b))].mean()
            for _ in range(num_resamples)
        ]
        rows.append(
            {
                "routine_length": length,
                "rho": runs[0]["rho"],
                "method": method,
                "baseline": baseline,
                "ratio": float(ratio),
                "low": float(np.percentile(boots, 2.5)),
                "high": float(np.percentile(boots, 97.5)),
                "censored": int(sum(not np.isfinite(steps_to_target(r)) for r in runs + base_runs)),
            }
        )
    return rows


def summary_scores(records: Iterable[Record]) -> list[Row]:
    """bsuite-style score per method over the swept routine lengths: the share of runs that
    reach the target within the budget, and the normalized area under the success curve (mean
    over runs, with a 95% bootstrap interval)."""
    rows = []
    for (method,), runs in group_runs(records, "method").items():
        reached = np.array([np.isfinite(steps_to_target(r)) for r in runs], dtype=float)
        aucs = np.array([normalized_auc(r) for r in runs])
        est, lo, hi = bootstrap_ci(aucs)
        rows.append(
            {
                "method": method,
                "runs": len(runs),
                "routine_lengths": len({r["routine_length"] for r in runs}),
                "reached_share": float(reached.mean()),
                "auc": float(est),
                "auc_low": float(lo),
                "auc_high": float(hi),
            }
        )
    return rows


# ---------------------------------------------------------------------------------- output
def write_csv(path: Path, rows: list[Row]) -> None:
    """Write ``rows`` atomically (a temporary file renamed over ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        if rows:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    tmp.replace(path)


def format_table(rows: list[Row], columns: Sequence[str] | None = None) -> str:
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


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_learning_curves(rows: list[Row], path: Path, statistic: str = "iqm") -> None:
    """One panel per routine length: success against steps, a line and band per method."""
    plt = _pyplot()
    lengths = sorted({r["routine_length"] for r in rows})
    fig, axes = plt.subplots(1, len(lengths), figsize=(4.2 * len(lengths), 3.4), squeeze=False)
    for ax, length in zip(axes[0], lengths, strict=True):
        sub = [r for r in rows if r["routine_length"] == length]
        for method in sorted({r["method"] for r in sub}):
            pts = [r for r in sub if r["method"] == method]
            t = [r["timesteps"] for r in pts]
            ax.plot(t, [r[statistic] for r in pts], label=method)
            ax.fill_between(t, [r["low"] for r in pts], [r["high"] for r in pts], alpha=0.2)
        ax.set_title(f"L = {length} (rho = {sub[0]['rho']:.3g}), {sub[0]['seeds']} seeds")
        ax.set_xlabel("environment steps")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel(f"success ({statistic.upper()}, 95% CI)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_steps_to_target(rows: list[Row], ratio_rows: list[Row], path: Path) -> None:
    """Left: steps to target against rho (log-log) per method; right: ratio to the baseline."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for method in sorted({r["method"] for r in rows}):
        pts = sorted((r for r in rows if r["method"] == method), key=lambda r: r["rho"])
        rho = [r["rho"] for r in pts]
        y = np.array([r["mean_steps"] for r in pts])
        err = [y - [r["low"] for r in pts], [r["high"] for r in pts] - y]
        left.errorbar(rho, y, yerr=err, marker="o", capsize=3, label=method)
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("decision density rho")
    left.set_ylabel("steps to target (mean, 95% CI)")
    left.legend(fontsize=8)
    for method in sorted({r["method"] for r in ratio_rows}):
        pts = sorted((r for r in ratio_rows if r["method"] == method), key=lambda r: r["rho"])
        y = np.array([r["ratio"] for r in pts])
        err = [y - [r["low"] for r in pts], [r["high"] for r in pts] - y]
        right.errorbar(
            [r["rho"] for r in pts],
            y,
            yerr=err,
            marker="o",
            capsize=3,
            label=f"{method} / {pts[0]['baseline']}",
        )
    right.axhline(1.0, color="gray", lw=0.8)
    right.set_xscale("log")
    right.set_xlabel("decision density rho")
    right.set_ylabel("steps-to-target ratio")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_summary(rows: list[Row], path: Path) -> None:
    """Bars per method: normalized AUC (with CI) and the share of runs reaching the target."""
    plt = _pyplot()
    methods = [r["method"] for r in rows]
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(max(4, 1.1 * len(methods) + 2), 3.4))
    auc = np.array([r["auc"] for r in rows])
    err = [auc - [r["auc_low"] for r in rows], [r["auc_high"] for r in rows] - auc]
    ax.bar(x - 0.2, auc, 0.4, yerr=err, capsize=3, label="normalized AUC")
    ax.bar(x + 0.2, [r["reached_share"] for r in rows], 0.4, label="share reaching target")
    ax.set_xticks(x, methods, rotation=20)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
