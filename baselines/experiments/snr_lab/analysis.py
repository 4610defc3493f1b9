"""Analysis of the SNR lab: flat tables of the measured settings and the figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import plotting
from baselines.lib.lab import PAPER, fit_text
from baselines.lib.tables import pyplot

RAW_COSINE = ("cosine_raw", "cosine_raw_low", "cosine_raw_high")
"""The cosine estimate before clipping to [-1, 1]: kept in the JSON records, left out of every
table (:attr:`routine_envs.snr.SNRResult.cosine_raw`)."""

ESTIMATE_NOTE = (
    "relative bias and cosine are estimates with 95% jackknife intervals [low, high]; the cosine "
    "is clipped to [-1, 1] (the raw estimate, which can exceed 1, is cosine_raw in "
    "results.jsonl: docs/estimators.md)"
)


def table_fields(result: dict[str, Any]) -> dict[str, Any]:
    """An estimator's result without the raw cosine (:data:`RAW_COSINE`): what tables show."""
    return {k: v for k, v in result.items() if k not in RAW_COSINE}


def with_interval(value: float, low: float, high: float, digits: int = 3) -> str:
    """``0.132 [0.0996, 0.158]``: an estimate and its interval, ``digits`` significant."""
    return f"{value:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}]"


def estimate_rows(rows: list[dict[str, Any]], density_kwarg: str) -> list[dict[str, str]]:
    """The lab's table for reading (console, Markdown): one row per (setting, estimator), each
    estimate beside its 95% interval, the cosine clipped to [-1, 1] (as in ``rows``)."""
    table = []
    for r in rows:
        row = {
            density_kwarg: str(r[density_kwarg]),
            "rho": f"{r['rho']:.4g}",
            "estimator": str(r["estimator"]),
            "SNR per episode [95% CI]": with_interval(r["snr"], r["snr_low"], r["snr_high"]),
            "SNR / reference [95% CI]": with_interval(
                r["ratio_to_reference"], r["ratio_low"], r["ratio_high"]
            ),
        }
        if r.get("relative_bias") is not None:
            row["relative bias, estimate [95% CI]"] = with_interval(
                r["relative_bias"], r["relative_bias_low"], r["relative_bias_high"]
            )
            row["cosine, estimate in [-1, 1] [95% CI]"] = (
                f"{r['cosine']:.4f} [{r['cosine_low']:.4f}, {r['cosine_high']:.4f}]"
            )
            row["MSE"] = f"{r['mse']:.4g}"
        table.append(row)
    if any(r.get("relative_bias_closed_form") is not None for r in rows):
        for row, r in zip(table, rows, strict=True):  # the exact value where one is known
            closed = r.get("relative_bias_closed_form")
            row["relative bias, closed form"] = "-" if closed is None else f"{closed:.4g}"
    if any(r.get("snr_exact") is not None for r in rows):
        for row, r in zip(table, rows, strict=True):  # oracle, trajectory_exact: exact noise
            exact = r.get("snr_exact")
            row["SNR per episode, exact noise"] = "-" if exact is None else f"{exact:.4g}"
    return table


def markdown_table(rows: list[dict[str, str]]) -> str:
    """``rows`` (equal keys, text cells) as a Markdown table."""
    if not rows:
        return "(no rows)\n"
    columns = list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r[c] for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def flat_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (setting, estimator): its SNR and its ratio to the setting's reference (the
    raw cosine left out, :func:`table_fields`)."""
    rows = []
    for rec in records:
        for res in rec["results"]:
            ratio = rec["ratios"].get(f"{res['estimator']}/{rec['reference']}", [1.0, 1.0, 1.0])
            rows.append(
                {
                    rec["density_kwarg"]: rec["density_value"],
                    "rho": rec["rho"],
                    "param": rec["param"],
                    **table_fields(res),
                    "ratio_to_" + rec["reference"]: ratio[0],
                    "ratio_low": ratio[1],
                    "ratio_high": ratio[2],
                    "episodes": rec["episodes"],
                    "group_size": rec["group_size"],
                }
            )
    return rows


def series_errorbars(
    ax: Any,
    groups: dict[str, list[dict]],
    y: str,
    low: str | None = None,
    high: str | None = None,
    labels: dict[str, str] | None = None,
    **kw: Any,
) -> dict[str, str]:
    """One series per name of ``groups`` (its rows sorted by rho): ``y`` against rho (a log
    axis), with error bars from ``low`` to ``high`` (a line through the points without them).
    Every series has its own marker and is dodged sideways by a small step, so none hides
    another; a series with the same values as an earlier one says so in its legend
    (:mod:`baselines.lib.plotting`). Returns the coincidences, name -> the earlier name."""
    names = list(groups)
    series = {n: ([r["rho"] for r in groups[n]], [r[y] for r in groups[n]]) for n in names}
    same = plotting.same_as(series)
    text = {n: (labels or {}).get(n, n) for n in names}
    for index, name in enumerate(names):
        rows = groups[name]
        x = plotting.dodged([r["rho"] for r in rows], index, len(names))
        v = np.array([r[y] for r in rows], dtype=np.float64)
        legend = plotting.label(text[name], {text[k]: text[o] for k, o in same.items()})
        style = {**plotting.style(index), **kw}
        if low is None or high is None:
            ax.plot(x, v, linestyle=plotting.LINESTYLES[index % 4], label=legend, **style)
            continue
        err = [v - np.array([r[low] for r in rows]), np.array([r[high] for r in rows]) - v]
        ax.errorbar(x, v, yerr=err, linestyle="none", capsize=3, label=legend, **style)
    return same


def by_estimator(rows: list[dict], names: list[str] | None = None) -> dict[str, list[dict]]:
    """``rows`` grouped by estimator (``names`` in order, default all sorted), sorted by rho."""
    names = names if names is not None else sorted({r["estimator"] for r in rows})
    return {
        n: sorted((r for r in rows if r["estimator"] == n), key=lambda r: r["rho"]) for n in names
    }


PARAM_WORDS = {
    "per_state": "one logit vector per state (per_state)",
    "per_floor": "one logit vector per floor, shared by its steps (per_floor)",
}
"""The policy parametrizations of the rho law, as a reader needs them named."""


def plot_rho_law(rows: list[dict], fits: dict, path: Path) -> None:
    """The SNR ratio against rho per parametrization, the closed form and rho^(-1/2)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    groups = {
        param: sorted(
            (r for r in rows if r["param"] == param and r["ratio"] is not None),
            key=lambda r: r["rho"],
        )
        for param in ("per_state", "per_floor")
    }
    groups = {param: sub for param, sub in groups.items() if sub}
    labels = {p: f"measured, {PARAM_WORDS[p]}:\n{fit_text(fits[p])}" for p in groups}
    series_errorbars(ax, groups, "ratio", "ratio_low", "ratio_high", labels=labels, ms=4)
    bounds = [r for r in rows if r["ratio"] is None and r["ratio_low"] is not None]
    if bounds:  # the trajectory SNR not resolved from 0: the ratio is at least this
        ax.plot(
            [r["rho"] for r in bounds],
            [r["ratio_low"] for r in bounds],
            "^",
            color="0.4",
            ms=5,
            label="lower bound (trajectory SNR not resolved from 0)",
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
    plotting.plain_log_ticks(ax)
    ax.set_xlabel(
        "decision density rho = 1/(1+L), L routine steps per decision"
        + ("\n" + plotting.dodge_note(len(groups)).strip(" ()") if len(groups) > 1 else "")
    )
    ax.set_ylabel("gradient SNR: perfect critic / trajectory advantage")
    ax.set_title(
        "Diluted Doors: the rho law (uniform policy, exact model)\nthe paper: slope "
        f"{PAPER['slope']:.3f}, R^2 {PAPER['r2']:.3f}, about 17.4x at rho 1/51",
        fontsize=10,
    )
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
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4))
    ratio = ("ratio_to_trajectory_exact", "ratio_low", "ratio_high")
    noisy = by_estimator(rows, [f"oracle:{c}" for c in sigma_multiples])
    labels = {f"oracle:{c}": f"sigma = {c} std(R)" for c in sigma_multiples}
    series_errorbars(left, noisy, *ratio, labels=labels, ms=4)
    for sub in noisy.values():
        left.plot([r["rho"] for r in sub], [r["theory_ratio"] for r in sub], "k-", lw=0.6)
    left.set_title("noisy perfect critic (lines: closed form)")
    mc = by_estimator(rows, [f"mc_rollout:{k}" for k in rollouts])
    labels = {f"mc_rollout:{k}": f"k = {k} rollouts" for k in rollouts}
    series_errorbars(right, mc, *ratio, labels=labels, ms=4)
    right.set_title("Monte-Carlo critic")
    for ax, count in ((left, len(noisy)), (right, len(mc))):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xlabel(f"decision density rho{plotting.dodge_note(count)}", fontsize=8)
        ax.set_ylabel("SNR(critic) / SNR(trajectory)")
        plotting.legend_below(ax, columns=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_beyond(rows: list[dict], path: Path) -> None:
    """Every estimator's SNR per episode (left) and its environment steps (right)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4))
    groups = by_estimator(rows)
    series_errorbars(left, groups, "snr", "snr_low", "snr_high", ms=4)
    series_errorbars(right, groups, "env_steps_per_episode", ms=4)
    left.set_ylabel("gradient SNR per episode")
    right.set_ylabel("environment steps per episode of gradient data")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"decision density rho{plotting.dodge_note(len(groups))}", fontsize=8)
        plotting.legend_below(ax, columns=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_measure(rows: list[dict], path: Path, title: str) -> None:
    """Each estimator's SNR per episode (left, log-log) and its relative bias against the
    exact gradient (right), against rho, with 95% jackknife intervals; each series with its own
    marker, dodged sideways, coinciding ones named in the legend (:func:`series_errorbars`)."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4))
    groups = by_estimator(rows)
    series_errorbars(left, groups, "snr", "snr_low", "snr_high", ms=4)
    bias = ("relative_bias", "relative_bias_low", "relative_bias_high")
    series_errorbars(right, groups, *bias, ms=4)
    left.set_ylabel("gradient SNR per episode")
    left.set_yscale("log")
    right.set_ylabel("relative bias ||E g - grad J|| / ||grad J||")
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel(f"decision density rho{plotting.dodge_note(len(groups))}", fontsize=8)
        plotting.legend_below(ax, columns=2)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
