"""Figures of the LM experiments: learning curves, steps to target against rho, exact SNR;
each drawn from the rows and summary of :mod:`baselines.experiments.lm.analysis`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.tables import pyplot


def plot_curves(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """Exact success probability (lines) and batch success rate (dots) of every seed against
    GRPO steps (left) and against CPU seconds, warm start included (right)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    seeds = sorted({r["seed"] for r in rows})
    for i, seed in enumerate(seeds):
        mine = [r for r in rows if r["seed"] == seed]
        color = f"C{i % 10}"
        for ax, x in zip(axes, ("step", "total_cpu_seconds"), strict=True):
            xs = [r[x] for r in mine if r.get("exact_success") is not None]
            ys = [r["exact_success"] for r in mine if r.get("exact_success") is not None]
            ax.plot(xs, ys, color=color, lw=1.5, label=f"seed {seed}: exact success")
            batch = [r for r in mine if r.get("success") is not None]
            ax.plot([r[x] for r in batch], [r["success"] for r in batch], ".", color=color, ms=3)
    for ax, label in zip(axes, ("GRPO step", "CPU seconds (warm start included)"), strict=True):
        ax.axhline(summary["target"], color="k", lw=0.8, ls="--")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success probability")
    axes[0].set_ylim(0, 1.02)
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        f"{summary['env_id']} {summary['env_kwargs']}: {summary['parameters']:,}-parameter LM, "
        f"GRPO with {summary['estimator']} (dots: batch success rate; dashed: target)",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_dilution(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """Median GRPO steps to target (bars: min to max over seeds) against rho per estimator."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for i, estimator in enumerate(sorted({r["estimator"] for r in rows})):
        mine = sorted((r for r in rows if r["estimator"] == estimator), key=lambda r: r["rho"])
        rho = np.array([r["rho"] for r in mine])
        med = np.array([r["median_steps"] for r in mine])
        err = [med - [r["min_steps"] for r in mine], [r["max_steps"] for r in mine] - med]
        fit = summary["slope_log_steps_vs_log_rho"].get(estimator)
        if fit and fit["slope"] is None:
            label = f"{estimator} (censored: no slope)"
        else:
            label = estimator + (f" (slope {fit['slope']:.2f})" if fit else "")
        ax.errorbar(rho * (1 + 0.04 * (i - 1)), med, yerr=err, marker="o", capsize=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("decision density rho = 1/(1+L)")
    ax.set_ylabel(f"GRPO steps to exact success >= {summary['target']}")
    ax.set_title(
        f"Token-level dilution, LM policy ({summary['runs']} runs; censored at {summary['steps']})",
        fontsize=9,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_snr(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """Exact-model SNR of each estimator for the LM policy (left) and the ratio of the
    perfect critic's SNR over the trajectory advantage's, with the tabular closed form
    (right), against rho."""
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
    axes[0].set_ylabel("gradient SNR (one group, LM parameters)")
    ratio = np.array([r["ratio"] for r in rows])
    err = [ratio - [r["ratio_low"] for r in rows], [r["ratio_high"] for r in rows] - ratio]
    axes[1].errorbar(
        rho,
        ratio,
        yerr=err,
        marker="o",
        capsize=3,
        label=f"LM at init (slope {summary['slope']:.3f}, R^2 {summary['r2']:.3f})",
    )
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
        f"Exact gradient SNR of a {summary['parameters']:,}-parameter LM policy on "
        f"{summary['env_id']} (one floor), through its table of canonical replies",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
