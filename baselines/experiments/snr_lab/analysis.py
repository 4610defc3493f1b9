"""Analysis of the SNR lab: flat tables of the measured settings and the figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.tables import pyplot


def flat_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (setting, estimator): its SNR and its ratio to the setting's reference."""
    rows = []
    for rec in records:
        for res in rec["results"]:
            ratio = rec["ratios"].get(f"{res['estimator']}/{rec['reference']}", [1.0, 1.0, 1.0])
            rows.append(
                {
                    "routine_length": rec["routine_length"],
                    "rho": rec["rho"],
                    "param": rec["param"],
                    **res,
                    "ratio_to_" + rec["reference"]: ratio[0],
                    "ratio_low": ratio[1],
                    "ratio_high": ratio[2],
                    "episodes": rec["episodes"],
                    "group_size": rec["group_size"],
                }
            )
    return rows


def fit_text(f: dict[str, Any]) -> str:
    """``slope -0.508, R^2 0.9994``, or why the fit is not available."""
    if f.get("slope") is None:
        return f.get("note", "fit not available")
    return f"slope {f['slope']:.3f}, R^2 {f['r2']:.4f}"


def errorbars(ax: Any, rows: list[dict], y: str, low: str, high: str, **kw: Any) -> None:
    """``rows[y]`` against ``rho`` with error bars from ``rows[low]`` to ``rows[high]``."""
    x = np.array([r["rho"] for r in rows])
    v = np.array([r[y] for r in rows])
    err = [v - np.array([r[low] for r in rows]), np.array([r[high] for r in rows]) - v]
    kw.setdefault("marker", "o")
    ax.errorbar(x, v, yerr=err, linestyle="none", capsize=3, **kw)


def plot_rho_law(rows: list[dict], fits: dict, path: Path) -> None:
    """The SNR ratio against rho per parametrization, the closed form and rho^(-1/2)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for param, marker in (("per_state", "o"), ("per_floor", "s")):
        sub = sorted((r for r in rows if r["param"] == param), key=lambda r: r["rho"])
        if not sub:
            continue
        f = fits[param]
        errorbars(
            ax,
            sub,
            "ratio",
            "ratio_low",
            "ratio_high",
            label=f"measured, {param} ({fit_text(f)})",
            marker=marker,
            ms=4,
        )
    theory = sorted((r for r in rows if r["param"] == rows[0]["param"]), key=lambda r: r["rho"])
    ax.plot(
        [r["rho"] for r in theory],
        [r["theory_ratio"] for r in theory],
        "k-",
        lw=1,
        label="closed form (uniform policy)",
    )
    rho = np.array([r["rho"] for r in theory])
    ref = theory[-1]["theory_ratio"] * rho**-0.5
    ax.plot(rho, ref, "k:", lw=1, label="rho^(-1/2)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("decision density rho = 1/(1+L)")
    ax.set_ylabel("SNR(perfect critic) / SNR(trajectory)")
    ax.set_title("Diluted Doors: the rho law")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_critic(
    rows: list[dict], path: Path, sigma_multiples: Sequence[float], rollouts: Sequence[int]
) -> None:
    """Left: the noisy oracle's SNR ratio per ``sigma / std(R)`` (lines: closed form); right:
    the Monte-Carlo critic's per number of rollouts ``k``."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for c in sigma_multiples:
        sub = sorted((r for r in rows if r["estimator"] == f"oracle:{c}"), key=lambda r: r["rho"])
        errorbars(
            left,
            sub,
            "ratio_to_trajectory_exact",
            "ratio_low",
            "ratio_high",
            label=f"sigma = {c} std(R)",
            ms=4,
        )
        left.plot([r["rho"] for r in sub], [r["theory_ratio"] for r in sub], "k-", lw=0.6)
    left.set_title("noisy perfect critic (lines: closed form)")
    for k in rollouts:
        sub = sorted(
            (r for r in rows if r["estimator"] == f"mc_rollout:{k}"), key=lambda r: r["rho"]
        )
        errorbars(
            right,
            sub,
            "ratio_to_trajectory_exact",
            "ratio_low",
            "ratio_high",
            label=f"k = {k} rollouts",
            ms=4,
        )
    right.set_title("Monte-Carlo critic")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xlabel("decision density rho")
        ax.set_ylabel("SNR(critic) / SNR(trajectory)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_beyond(rows: list[dict], path: Path) -> None:
    """Every estimator's SNR per episode (left) and its environment steps (right)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in sorted({r["estimator"] for r in rows}):
        sub = sorted((r for r in rows if r["estimator"] == name), key=lambda r: r["rho"])
        errorbars(left, sub, "snr", "snr_low", "snr_high", label=name, ms=4)
        right.plot(
            [r["rho"] for r in sub],
            [r["env_steps_per_episode"] for r in sub],
            "o-",
            label=name,
            ms=4,
        )
    left.set_ylabel("gradient SNR per episode")
    right.set_ylabel("environment steps per episode of gradient data")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("decision density rho")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_measure(rows: list[dict], path: Path, title: str) -> None:
    """Each estimator's SNR per episode (left, log-log) and its relative bias against the
    exact gradient (right), against rho, with 95% jackknife intervals."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in sorted({r["estimator"] for r in rows}):
        sub = sorted((r for r in rows if r["estimator"] == name), key=lambda r: r["rho"])
        errorbars(left, sub, "snr", "snr_low", "snr_high", label=name, ms=4)
        errorbars(
            right, sub, "relative_bias", "relative_bias_low", "relative_bias_high", label=name, ms=4
        )
    left.set_ylabel("gradient SNR per episode")
    left.set_yscale("log")
    right.set_ylabel("relative bias ||E g - grad J|| / ||grad J||")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("decision density rho")
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
