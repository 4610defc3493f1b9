"""Learning curves of training runs: statistics across seeds, tables and plots (bsuite-style),
for every experiment that trains (the comparison sweep, the team sweep).

Every function takes training records (:class:`~baselines.lib.training_runs.TrainingRecord`
rows: one dict per run, with ``method``, ``seed``, ``density_kwarg``, ``density_value``,
``rho``, ``timesteps``, ``success``, ``budget``, ``target``; older rows with
``routine_length`` are read through :func:`~baselines.lib.records.upgrade`) and returns plain
rows (lists of dicts), so it is tested on small synthetic tables. Tables name the density
column by the environment's keyword (``routine_length``, ``corridor_length``).
Across seeds: the interquartile mean (IQM) or the mean, with percentile bootstrap confidence
intervals over seeds (:mod:`baselines.lib.stats`). ``summary_scores`` is the sweep's score;
:func:`sweep_tables` is every table of a sweep (a pure function of its records),
:func:`write_tables` writes them with their plots and :func:`report` prints them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import plotting
from baselines.lib.records import upgrade
from baselines.lib.scoring import normalized_auc, steps_to_target
from baselines.lib.stats import STATISTICS, bootstrap_ci
from baselines.lib.tables import format_table, pyplot, write_csv

Record = dict[str, Any]
Row = dict[str, Any]


# ------------------------------------------------------------------------------- grouping
def current(records: Iterable[Record]) -> list[Record]:
    """``records`` with the current density fields (:func:`~baselines.lib.records.upgrade`)."""
    return [upgrade(r) for r in records]


def density_column(records: Iterable[Record]) -> str:
    """The name of the density column of the tables: the records' ``density_kwarg`` (the
    same for every record of a sweep; ``density_value`` when they differ or there are none)."""
    names = {r["density_kwarg"] for r in records}
    return names.pop() if len(names) == 1 else "density_value"


def density_symbol(column: str) -> str:
    """How a plot's panel names the density keyword: ``L`` for a length."""
    return "L" if column.endswith("_length") else column


def method_label(record: Record) -> str:
    """How tables and plots name a run's method: its ``label`` where the record has one (GiGPO
    grouping by the privileged ``state_id`` is ``gigpo (privileged: state_id)``), else its
    ``method``."""
    return record.get("label") or record["method"]


def field_of(record: Record, key: str) -> Any:
    """``record[key]``; the method is its label (:func:`method_label`)."""
    return method_label(record) if key == "method" else record[key]


def baseline_label(records: Iterable[Record], baseline: str) -> str:
    """The label of the runs of method ``baseline`` (the name itself if it is a label or no run
    has it)."""
    for record in records:
        if record["method"] == baseline:
            return method_label(record)
    return baseline


def group_runs(records: Iterable[Record], *keys: str) -> dict[tuple, list[Record]]:
    """Records grouped by the values of ``keys`` (sorted by seed within a group); ``method`` is
    grouped by its label, so runs of one method with other estimator arguments stay apart."""
    groups: dict[tuple, list[Record]] = defaultdict(list)
    for record in records:
        groups[tuple(field_of(record, k) for k in keys)].append(record)

    def order(item: tuple[tuple, list[Record]]) -> list[tuple[int, Any]]:
        # numbers in numeric order (L = 3 before L = 10), then anything else as text
        return [(0, v) if isinstance(v, (int, float)) else (1, str(v)) for v in item[0]]

    return {k: sorted(v, key=lambda r: r["seed"]) for k, v in sorted(groups.items(), key=order)}


def ratio_bound(method_censored: bool, baseline_censored: bool) -> str:
    """What a ratio of mean steps is when censored runs count at their budget: a censored run
    took *at least* its budget, so censoring in the method makes the ratio a lower bound, in the
    baseline an upper bound, in both neither."""
    if method_censored and baseline_censored:
        return "not bounded"
    if method_censored:
        return "lower bound"
    return "upper bound" if baseline_censored else "exact"


BOUND_SIGN = {"exact": "", "lower bound": ">= ", "upper bound": "<= ", "not bounded": "~ "}
"""How tables print a value that is a bound (``>= 1.3``)."""


def shown(value: float | None, bound: str) -> str:
    """``value`` as a table shows it: ``1.3``, ``>= 1.3`` (lower bound), ``<= 1.3``, ``~ 1.3``
    (censored on both sides: no bound), ``censored`` (no run reached the target: no value)."""
    if bound == "censored" or value is None:
        return "censored"
    return f"{BOUND_SIGN[bound]}{value:.4g}"


# --------------------------------------------------------------------------------- tables
def learning_curves(records: Iterable[Record], statistic: str = "iqm") -> list[Row]:
    """Per (routine length, method, timestep): the statistic of success across seeds with a
    95% bootstrap band. Runs of a group share their evaluation grid (cut to the shortest)."""
    records = current(records)
    column = density_column(records)
    rows = []
    for (length, method), runs in group_runs(records, "density_value", "method").items():
        size = min(len(r["success"]) for r in runs)
        table = np.array([r["success"][:size] for r in runs])
        est, lo, hi = bootstrap_ci(table, STATISTICS[statistic])
        for i, t in enumerate(runs[0]["timesteps"][:size]):
            rows.append(
                {
                    column: length,
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
    """Per (routine length, method): mean steps to reach the target across seeds (each
    interpolated between evaluations), with a 95% bootstrap interval. A seed that never reaches
    it counts as its budget, so a method that fails is not flattered: the mean is then a lower
    bound (``mean_steps_is``; ``censored`` says how many seeds)."""
    records = current(records)
    column = density_column(records)
    rows = []
    for (length, method), runs in group_runs(records, "density_value", "method").items():
        steps = np.array([steps_to_target(r) for r in runs])
        censored = ~np.isfinite(steps)
        filled = np.where(censored, [r["budget"] for r in runs], steps)
        est, lo, hi = bootstrap_ci(filled)
        empty = bool(censored.all())  # the mean would be the budget's: no number at all
        rows.append(
            {
                column: length,
                "rho": runs[0]["rho"],
                "method": method,
                "seeds": len(runs),
                "reached": int((~censored).sum()),
                "censored": int(censored.sum()),
                "mean_steps": None if empty else float(est),
                "mean_steps_is": "censored"
                if empty
                else ("lower bound" if censored.any() else "exact"),
                "low": None if empty else float(lo),
                "high": None if empty else float(hi),
                "target": runs[0]["target"],
                "budget": runs[0]["budget"],
            }
        )
    return rows


def ratio_table(
    records: Iterable[Record], baseline: str = "ppo", num_resamples: int = 2000, seed: int = 0
) -> list[Row]:
    """Per (routine length, method != baseline): mean steps to target of the method over that
    of ``baseline`` (turn-level), with a 95% bootstrap interval resampling the seeds of both.
    ``ratio_is`` says whether censored runs make it a bound (:func:`ratio_bound`)."""
    records = current(records)
    column = density_column(records)
    baseline = baseline_label(records, baseline)
    by_key = group_runs(records, "density_value", "method")
    rng = np.random.default_rng(seed)
    rows = []
    for (length, method), runs in by_key.items():
        if method == baseline or (length, baseline) not in by_key:
            continue
        base_runs = by_key[(length, baseline)]
        mine, base = (np.array([steps_to_target(r) for r in rs]) for rs in (runs, base_runs))
        censored = int((~np.isfinite(mine)).sum() + (~np.isfinite(base)).sum())
        if not (np.isfinite(mine).any() and np.isfinite(base).any()):
            rows.append(  # a side reached the target in no run: no ratio
                {
                    column: length, "rho": runs[0]["rho"], "method": method,
                    "baseline": baseline, "ratio": None, "low": None, "high": None,
                    "censored": censored, "ratio_is": "censored",
                }
            )  # fmt: skip
            continue
        a, b = (
            np.where(np.isfinite(s), s, [r["budget"] for r in rs])  # censored: at the budget
            for s, rs in ((mine, runs), (base, base_runs))
        )
        ratio = a.mean() / b.mean()
        boots = [
            a[rng.integers(len(a), size=len(a))].mean()
            / b[rng.integers(len(b), size=len(b))].mean()
            for _ in range(num_resamples)
        ]
        rows.append(
            {
                column: length,
                "rho": runs[0]["rho"],
                "method": method,
                "baseline": baseline,
                "ratio": float(ratio),
                "low": float(np.percentile(boots, 2.5)),
                "high": float(np.percentile(boots, 97.5)),
                "censored": censored,
                "ratio_is": ratio_bound(
                    bool((~np.isfinite(mine)).any()), bool((~np.isfinite(base)).any())
                ),
            }
        )
    return rows


def summary_scores(records: Iterable[Record]) -> list[Row]:
    """bsuite-style score per method over the swept routine lengths: the share of runs that
    reach the target within the budget, and the normalized area under the success curve (mean
    over runs, with a 95% bootstrap interval)."""
    records = current(records)
    column = density_column(records)
    rows = []
    for (method,), runs in group_runs(records, "method").items():
        reached = np.array([np.isfinite(steps_to_target(r)) for r in runs], dtype=float)
        aucs = np.array([normalized_auc(r) for r in runs])
        est, lo, hi = bootstrap_ci(aucs)
        rows.append(
            {
                "method": method,
                "runs": len(runs),
                f"{column}s": len({r["density_value"] for r in runs}),
                "reached_share": float(reached.mean()),
                "auc": float(est),
                "auc_low": float(lo),
                "auc_high": float(hi),
            }
        )
    return rows


def plot_learning_curves(rows: list[Row], path: Path, statistic: str = "iqm") -> None:
    """One panel per routine length: success against steps, a line and band per method."""
    plt = pyplot()
    column = next(iter(rows[0])) if rows else "density_value"  # the rows' first column
    lengths = sorted({r[column] for r in rows})
    fig, axes = plt.subplots(1, len(lengths), figsize=(4.2 * len(lengths), 3.4), squeeze=False)
    for ax, length in zip(axes[0], lengths, strict=True):
        sub = [r for r in rows if r[column] == length]
        methods = sorted({r["method"] for r in sub})
        curves = {m: [r for r in sub if r["method"] == m] for m in methods}
        same = plotting.same_as(
            {m: ([r["timesteps"] for r in p], [r[statistic] for r in p]) for m, p in curves.items()}
        )
        for index, (method, pts) in enumerate(curves.items()):
            t = [r["timesteps"] for r in pts]
            every = max(len(curves), len(t) // 6, 1)  # markers of different series at other steps
            ax.plot(
                t,
                [r[statistic] for r in pts],
                label=plotting.label(method, same),
                linestyle=plotting.LINESTYLES[index % len(plotting.LINESTYLES)],
                markevery=(index % every, every),
                ms=4,
                **plotting.style(index),
            )
            ax.fill_between(t, [r["low"] for r in pts], [r["high"] for r in pts], alpha=0.2)
        ax.set_title(
            f"{density_symbol(column)} = {length} (rho = {sub[0]['rho']:.3g}), "
            f"{sub[0]['seeds']} seeds"
        )
        ax.set_xlabel("environment steps")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel(f"success ({statistic.upper()}, 95% CI)")
    fig.suptitle("Success probability during training, per routine length", fontsize=10)
    plotting.legend_below(axes[0][0], below=0.24)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


BOUND_MARKERS = {"lower bound": "^", "upper bound": "v", "not bounded": "x"}


def mark_bounds(ax: Any, x: list[float], y: Any, bounds: list[str], color: Any) -> None:
    """Mark the points that are bounds (censored runs): a triangle up for a lower bound (the
    true value is at least this), down for an upper bound, a cross for neither, with the text
    ``>=``/``<=``/``~`` beside it."""
    for xi, yi, bound in zip(x, y, bounds, strict=True):
        if bound in BOUND_MARKERS:
            ax.plot([xi], [yi], BOUND_MARKERS[bound], color=color, ms=11, mfc="none")
            ax.annotate(
                BOUND_SIGN[bound].strip(),
                (xi, yi),
                xytext=(6, 4),
                fontsize=8,
                textcoords="offset points",
                color=color,
            )


def plot_steps_to_target(rows: list[Row], ratio_rows: list[Row], path: Path) -> None:
    """Left: steps to target against rho (log-log) per method; right: ratio to the baseline."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 5.0))
    methods = sorted({r["method"] for r in rows})
    by_method = {  # a fully censored cell has no point
        m: sorted(
            (r for r in rows if r["method"] == m and r["mean_steps"] is not None),
            key=lambda r: r["rho"],
        )
        for m in methods
    }
    same = plotting.same_as(
        {m: ([r["rho"] for r in p], [r["mean_steps"] for r in p]) for m, p in by_method.items()}
    )
    for index, (method, pts) in enumerate(by_method.items()):
        rho = list(plotting.dodged([r["rho"] for r in pts], index, len(methods)))
        y = np.array([r["mean_steps"] for r in pts])
        err = [y - [r["low"] for r in pts], [r["high"] for r in pts] - y]
        line = left.errorbar(
            rho, y, yerr=err, capsize=3, label=plotting.label(method, same), **plotting.style(index)
        )
        mark_bounds(left, rho, y, [r["mean_steps_is"] for r in pts], line.lines[0].get_color())
    if any(by_method.values()):
        left.set_xscale("log")
        left.set_yscale("log")
    else:
        left.text(0.5, 0.5, "no run reached the target:\nevery cell censored", ha="center",
                  va="center", transform=left.transAxes)  # fmt: skip
    left.set_xlabel(f"decision density rho{plotting.dodge_note(len(methods))}", fontsize=8)
    left.set_ylabel("steps to target (mean, 95% CI; ^ >=: censored)")
    left.set_title("Environment steps until the target success", fontsize=10)
    if any(by_method.values()):
        plotting.plain_log_ticks(left)
    plotting.legend_below(left)
    ratio_methods = sorted({r["method"] for r in ratio_rows})
    by_method = {
        m: sorted((r for r in ratio_rows if r["method"] == m), key=lambda r: r["rho"])
        for m in ratio_methods
    }
    names = {m: f"{m} / {p[0]['baseline']}" for m, p in by_method.items()}
    by_method = {m: [r for r in p if r["ratio"] is not None] for m, p in by_method.items()}
    same = plotting.same_as(
        {names[m]: ([r["rho"] for r in p], [r["ratio"] for r in p]) for m, p in by_method.items()}
    )
    for index, (method, pts) in enumerate(by_method.items()):
        x = list(plotting.dodged([r["rho"] for r in pts], index, len(ratio_methods)))
        y = np.array([r["ratio"] for r in pts])
        err = [y - [r["low"] for r in pts], [r["high"] for r in pts] - y]
        line = right.errorbar(
            x,
            y,
            yerr=err,
            capsize=3,
            label=plotting.label(names[method], same),
            **plotting.style(index),
        )
        mark_bounds(
            right,
            x,
            y,
            [r["ratio_is"] for r in pts],
            line.lines[0].get_color(),
        )
    right.axhline(1.0, color="gray", lw=0.8)
    if any(by_method.values()):
        right.set_xscale("log")
    elif ratio_rows:
        right.text(0.5, 0.6, "no ratio: a side reached\nthe target in no run", ha="center",
                   va="center", transform=right.transAxes)  # fmt: skip
    right.set_xlabel(
        f"decision density rho{plotting.dodge_note(max(1, len(ratio_methods)))}", fontsize=8
    )
    right.set_ylabel("steps-to-target ratio")
    right.set_title("Steps over the baseline's (1: as fast; 2: twice the steps)", fontsize=10)
    if any(by_method.values()):
        plotting.plain_log_ticks(right)
    plotting.legend_below(right)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_summary(rows: list[Row], path: Path) -> None:
    """Bars per method: normalized AUC (with its 95% CI) and the share of runs reaching the
    target, each bar labelled with its value (and the runs behind the share); where every
    method's share is the same, the title says so (the AUC then tells them apart)."""
    plt = pyplot()
    methods = [r["method"] for r in rows]
    x = np.arange(len(methods))
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(methods) + 3), 4.4), layout="constrained")
    auc = np.array([r["auc"] for r in rows])
    err = [auc - [r["auc_low"] for r in rows], [r["auc_high"] for r in rows] - auc]
    shares = [r["reached_share"] for r in rows]
    bars = ax.bar(x - 0.2, auc, 0.4, yerr=err, capsize=3, label="normalized AUC [95% CI]")
    ax.bar_label(bars, [f"{a:.2f}" for a in auc], fontsize=7, padding=6)
    share_bars = ax.bar(x + 0.2, shares, 0.4, label="share of runs reaching the target")
    ax.bar_label(
        share_bars,
        [f"{round(s * r['runs'])}/{r['runs']}" for s, r in zip(shares, rows, strict=True)],
        fontsize=7,
    )
    ax.set_xticks(x, methods, rotation=20)
    ax.set_ylim(0, 1.25)
    ax.set_ylabel("score (0 to 1)")
    title = "Summary over the swept densities"
    if len(set(shares)) == 1:
        title += (
            f"\nevery method reached the target in {shares[0]:.0%} of its runs:"
            "\nthe AUC (how early) tells them apart"
        )
    ax.set_title(title, fontsize=9)
    fig.legend(fontsize=8, loc="outside lower center", ncol=2, frameon=False)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- the sweep
TABLES = ("learning_curves", "steps_to_target", "ratio_to_turn_level", "summary_scores")
"""The tables of a sweep (:func:`sweep_tables`), each written as ``<name>.csv``."""


def sweep_tables(
    records: Iterable[Record], baseline: str = "ppo", statistic: str = "iqm"
) -> dict[str, list[Row]]:
    """The tables of a sweep, from its records alone (nothing written): learning curves (the
    ``statistic`` across seeds), steps to target, the ratio of each method to ``baseline``
    and the summary scores, by the names of :data:`TABLES`."""
    records = current(records)
    return {
        "learning_curves": learning_curves(records, statistic),
        "steps_to_target": steps_to_target_table(records),
        "ratio_to_turn_level": ratio_table(records, baseline),
        "summary_scores": summary_scores(records),
    }


def write_tables(tables: dict[str, list[Row]], out: Path, statistic: str = "iqm") -> None:
    """Write the tables of :func:`sweep_tables` (CSV) and their plots (PNG) into ``out``."""
    for name in TABLES:
        write_csv(out / f"{name}.csv", tables[name])
    plot_learning_curves(tables["learning_curves"], out / "learning_curves.png", statistic)
    plot_steps_to_target(
        tables["steps_to_target"], tables["ratio_to_turn_level"], out / "steps_to_target.png"
    )
    plot_summary(tables["summary_scores"], out / "summary_scores.png")


def analyse(
    records: list[dict[str, Any]], out: Path, baseline: str = "ppo", statistic: str = "iqm"
) -> dict[str, list[dict[str, Any]]]:
    """The tables of a sweep (:func:`sweep_tables`), written into ``out``
    (:func:`write_tables`); return the tables."""
    tables = sweep_tables(records, baseline, statistic)
    write_tables(tables, out, statistic)
    return tables


def report_written(
    tables: dict[str, list[dict[str, Any]]], records: list[dict[str, Any]], out: Path
) -> None:
    """Print the tables (:func:`report`) and the files :func:`write_tables` wrote to ``out``."""
    report(tables, records)
    print(
        f"\nwrote {out}/: results.jsonl, learning_curves.csv/.png, steps_to_target.csv/"
        ".png, ratio_to_turn_level.csv, summary_scores.csv/.png"
    )


def report(tables: dict[str, list[dict[str, Any]]], records: list[dict[str, Any]]) -> None:
    """Print the settings of the records and the tables of :func:`sweep_tables`."""
    hyper = records[0].get("hyperparameters", {}) if records else {}
    print(
        f"\nsettings: {records[0].get('env_id', '') if records else ''} "
        f"seeds={sorted({r['seed'] for r in records})} "
        f"trainer={', '.join(sorted({r.get('trainer') or 'sb3' for r in records}))} "
        f"hyperparameters={hyper}"
    )
    print(
        "\nsteps to target success (mean over seeds, each interpolated between evaluations; "
        "seeds that never reached it count at the budget: '>=' marks the mean as a lower bound):"
    )
    steps = [
        {**r, "mean_steps": shown(r["mean_steps"], r["mean_steps_is"])}
        for r in tables["steps_to_target"]
    ]
    print(
        format_table(
            steps,
            [
                density_column(current(records)),
                "rho",
                "method",
                "seeds",
                "reached",
                "mean_steps",
                "low",
                "high",
                "budget",
            ],
        )
    )
    print(
        "\nratio of steps to target, method / turn-level baseline ('>=': a lower bound, the "
        "method's censored seeds count at the budget; '<=': the baseline's; '~': both):"
    )
    ratios = [
        {**r, "ratio": shown(r["ratio"], r["ratio_is"])} for r in tables["ratio_to_turn_level"]
    ]
    print(format_table(ratios, [c for c in (ratios[0] if ratios else {}) if c != "ratio_is"]))
    print("\nsummary score per method:")
    print(format_table(tables["summary_scores"]))
