"""Figures of the LM experiments: learning curves, steps to target against rho, exact SNR;
each drawn from the rows and summary of :mod:`baselines.experiments.lm.analysis`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.tables import pyplot


def plot_curves(
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    path: Path,
    bands: dict[str, list[dict[str, Any]]] | None = None,
) -> None:
    """Left: against GRPO steps, the mean over seeds of the canonical table's exact success and
    of success as the model samples, each with its bootstrap band over seeds (``bands``:
    :func:`~baselines.experiments.lm.analysis.curve_band` per column), every seed's exact
    success as a thin line. Right: every seed's exact success against CPU seconds."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    seeds = sorted({r["seed"] for r in rows})
    for i, seed in enumerate(seeds):
        mine = [r for r in rows if r["seed"] == seed and r.get("exact_success") is not None]
        color = f"C{i % 10}"
        axes[0].plot(
            [r["step"] for r in mine], [r["exact_success"] for r in mine], color="0.6", lw=0.6
        )
        axes[1].plot(
            [r["total_cpu_seconds"] for r in mine],
            [r["exact_success"] for r in mine],
            color=color,
            lw=1.0,
            label=f"seed {seed}",
        )
    labels = {
        "exact_success": "canonical table, exact (mean, 95% bootstrap band)",
        "sampled_success": "as the model samples (mean, 95% bootstrap band)",
    }
    for k, (column, band) in enumerate((bands or {}).items()):
        if not band:
            continue
        x = [b["step"] for b in band]
        color = f"C{k}"
        axes[0].plot(
            x,
            [b["mean"] for b in band],
            color=color,
            lw=2,
            marker="o" if column == "sampled_success" else None,
            ms=3,
            label=labels.get(column, column),
        )
        axes[0].fill_between(
            x, [b["low"] for b in band], [b["high"] for b in band], color=color, alpha=0.25
        )
    if "chance" in summary:
        for ax in axes:
            ax.axhline(summary["chance"], color="r", lw=0.8, ls=":")
    for ax, label in zip(axes, ("GRPO step", "CPU seconds (warm start included)"), strict=True):
        ax.axhline(summary["target"], color="k", lw=0.8, ls="--")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success probability")
    axes[0].set_ylim(0, 1.02)
    axes[0].plot([], [], color="0.6", lw=0.6, label="one seed, canonical table")
    axes[0].legend(fontsize=7, loc="upper left")
    axes[1].legend(fontsize=6, loc="upper left", ncol=2)
    chance = f"; dotted: chance {summary['chance']:.3g}" if "chance" in summary else ""
    fig.suptitle(
        f"{summary['env_id']} {summary['env_kwargs']}\n{summary['parameters']:,}-parameter LM, "
        f"GRPO with {summary['estimator']}, {len(seeds)} seeds (dashed: target{chance})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_dilution(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """Median GRPO steps to target against rho per estimator, bars its 95 % bootstrap interval
    over seeds; a median that is only a lower bound (at most half the runs reached) is an open
    upward triangle, a fully censored cell a triangle at the budget."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.4, 4.6))
    for i, estimator in enumerate(sorted({r["estimator"] for r in rows})):
        mine = sorted((r for r in rows if r["estimator"] == estimator), key=lambda r: r["rho"])
        color = f"C{i}"
        shift = 1 + 0.04 * (i - 1)
        fit = summary["slope_log_steps_vs_log_rho"].get(estimator)
        if fit and fit["slope"] is None:
            label = f"{estimator} (censored: no slope)"
        else:
            label = estimator + (
                f" (slope {fit['slope']:.2f}, 95% CI {fit['slope_low']:.2f} to "
                f"{fit['slope_high']:.2f})"
                if fit
                else ""
            )
        measured = [r for r in mine if not r["median_is_lower_bound"]]
        bounds = [r for r in mine if r["median_is_lower_bound"]]
        if measured:
            rho = np.array([r["rho"] for r in measured]) * shift
            med = np.array([r["median_steps"] for r in measured])
            err = [
                med - [r["median_low"] for r in measured],
                [r["median_high"] for r in measured] - med,
            ]
            ax.errorbar(rho, med, yerr=err, marker="o", capsize=3, color=color, label=label)
            label = None
        if bounds:
            ax.plot(
                [r["rho"] * shift for r in bounds],
                [r["median_steps"] for r in bounds],
                "^",
                mfc="none",
                color=color,
                ms=8,
                label=(label or estimator) + ": lower bound (censored)",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("decision density rho = 1/(1+L)")
    ax.set_ylabel(f"GRPO steps to exact success >= {summary['target']}")
    ax.set_title(
        f"Token-level dilution, LM policy, {summary['env_id']}\n({summary['runs']} runs; "
        f"budget {summary['steps']} steps; bars: 95% bootstrap CI of the median over seeds)",
        fontsize=9,
    )
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    rhos = sorted({r["rho"] for r in rows})
    ax.set_xticks(rhos, [f"{r:.3g}" for r in rhos])
    low, high = ax.get_ylim()
    nice = [t for t in (5, 8, 10, 12, 14, 16, 18, 20, 25, 30, 40, 50, 70, 100, 150, 200, 300, 500)]
    ax.set_yticks([t for t in nice if low <= t <= high])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3, which="both")
    # beside the axes: the bars span most of the height, so no corner inside is free
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_snr(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """Exact-model SNR of each estimator for the LM policy (left) and the ratio of the
    perfect critic's SNR over the trajectory advantage's, with the tabular closed form
    (right), against rho; where the rows have them, the exact-noise values of the ratio's two
    estimators as crosses."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    rho = np.array([r["rho"] for r in rows])
    for i, name in enumerate(summary["estimators"]):
        y = np.array([r[f"snr_{name}"] for r in rows])
        lo = np.array([r[f"snr_{name}_low"] for r in rows])
        hi = np.array([r[f"snr_{name}_high"] for r in rows])
        axes[0].errorbar(
            rho, y, yerr=[y - lo, hi - y], marker="o", capsize=3, color=f"C{i}", label=name
        )
        if all(f"snr_{name}_exact" in r for r in rows):
            first = not any(h.get_label().startswith("exact") for h in axes[0].lines)
            label = "exact noise (oracle, trajectory_exact)" if first else None
            axes[0].plot(rho, [r[f"snr_{name}_exact"] for r in rows], "kx", ms=7, label=label)
    axes[0].set_ylabel("gradient SNR (one group, LM parameters)")
    ratio = np.array([r["ratio"] for r in rows])
    err = [ratio - [r["ratio_low"] for r in rows], [r["ratio_high"] for r in rows] - ratio]
    axes[1].errorbar(
        rho,
        ratio,
        yerr=err,
        marker="o",
        capsize=3,
        label=f"LM at init, sampled noise (slope {summary['slope']:.3f}, R^2 {summary['r2']:.3f})",
    )
    if summary.get("exact_slope") is not None:
        exact_label = f"LM at init, exact noise (slope {summary['exact_slope']:.3f})"
        axes[1].plot(rho, [r["ratio_exact"] for r in rows], "rx", ms=8, label=exact_label)
    axes[1].plot(
        rho,
        [r["tabular_ratio"] for r in rows],
        "k-",
        lw=1,
        label=f"uniform tabular policy, closed form (slope {summary['tabular_slope']:.3f})",
    )
    axes[1].set_ylabel(f"SNR({summary['ratio_of'][0]}) / SNR({summary['ratio_of'][1]})")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("decision density rho")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(
        f"Gradient SNR of a {summary['parameters']:,}-parameter LM policy on "
        f"{summary['env_id']} (one floor), through its table of canonical replies\n"
        f"exact gradient; noise sampled from {summary['episodes']:,} episodes, and exact (x) "
        "for oracle and trajectory_exact",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
