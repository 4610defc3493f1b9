"""The report card of a method: one Markdown file, its scores as JSON/CSV and PNG figures, headed
by the protocol version, the method spec, package versions, git commit, seeds, hardware and
wall time, against the shipped references."""

from __future__ import annotations

import io
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.benchmark import scores
from baselines.lib import plotting
from baselines.lib.results import write_atomic
from baselines.lib.tables import pyplot, write_csv

Record = dict[str, Any]


def git_commit(folder: Path) -> str:
    """The commit of the checkout holding ``folder`` (``+dirty`` when it has changes)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


def hardware() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def versions_of(records: list[Record]) -> list[dict[str, Any]]:
    """The distinct package versions the runs were made with."""
    seen = []
    for r in records:
        if r["versions"] not in seen:
            seen.append(r["versions"])
    return seen


def save_figure(fig: Any, path: Path) -> None:
    """Save a matplotlib figure as PNG at ``path``, all or nothing (a full disk leaves no
    truncated image)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    write_atomic(path, buffer.getvalue())


def curves_by(records: list[Record]) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """IQM success curve per (setting, density value): ``(timesteps, iqm success)``."""
    out: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    for (_, setting, value), runs in scores.group_records(records).items():
        t = np.asarray(runs[0]["timesteps"], dtype=np.float64)
        s = np.array([r["success"] for r in runs if len(r["success"]) == len(t)])
        out[(setting, value)] = (t, np.asarray(scores.iqm(s, axis=0)))
    return out


def plot_curves(
    method: str, records: list[Record], references: dict[str, list[Record]], path: Path
) -> None:
    """IQM learning curves, one panel per (setting, density), the method bold beside the
    references."""
    plt = pyplot()
    mine = curves_by(records)
    keys = sorted(mine, key=lambda k: (k[0], k[1]))
    settings = sorted({k[0] for k in keys})
    cols = max(sum(1 for k in keys if k[0] == s) for s in settings)
    fig, axes = plt.subplots(
        len(settings), cols, figsize=(3.2 * cols, 2.6 * len(settings)), squeeze=False
    )
    ref_curves = {name: curves_by(recs) for name, recs in references.items()}
    for row, setting in enumerate(settings):
        values = sorted(k[1] for k in keys if k[0] == setting)
        for col in range(cols):
            ax = axes[row][col]
            if col >= len(values):
                ax.axis("off")
                continue
            key = (setting, values[col])
            here = {n: c[key] for n, c in ref_curves.items() if key in c}
            same = plotting.same_as(
                {method[:40]: mine[key], **{n[:40]: c for n, c in here.items()}}
            )
            for index, (name, curve) in enumerate(here.items()):
                ax.plot(
                    *curve,
                    lw=0.9,
                    alpha=0.7,
                    linestyle=plotting.LINESTYLES[index % len(plotting.LINESTYLES)],
                    label=plotting.label(name[:40], same),
                )
            ax.plot(*mine[key], lw=2.2, color="black", label=method[:40])
            ax.set_title(f"{setting[:40]} {values[col]}", fontsize=7)
            ax.set_ylim(-0.02, 1.02)
            ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=5)
    fig.supxlabel("environment steps")
    fig.supylabel("exact success probability (IQM over seeds)")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def plot_against_rho(
    method: str, mine: dict[str, Any], references: dict[str, dict[str, Any]], path: Path
) -> None:
    """Steps to target (IQM, bootstrap bars; hollow markers: censored, a lower bound) against
    rho, one panel per setting, the method beside the references."""
    plt = pyplot()
    settings = sorted(mine["settings"])
    fig, axes = plt.subplots(1, len(settings), figsize=(4.6 * len(settings), 3.8), squeeze=False)
    for ax, setting in zip(axes[0], settings, strict=True):
        entries = {**{n: r["settings"].get(setting) for n, r in references.items()}}
        entries[method] = mine["settings"][setting]
        shown = {
            n: sorted(e["rows"], key=lambda r: r["rho"])
            for n, e in entries.items()
            if e is not None
        }
        same = plotting.same_as(
            {
                n[:40]: ([r["rho"] for r in rs], [r["steps_iqm"] for r in rs])
                for n, rs in shown.items()
            }
        )
        for index, (name, rows) in enumerate(shown.items()):
            x = plotting.dodged([r["rho"] for r in rows], index, len(shown))
            y = np.array([r["steps_iqm"] for r in rows])
            err = [y - [r["steps_low"] for r in rows], [r["steps_high"] for r in rows] - y]
            bold = name == method
            line = ax.errorbar(
                x,
                y,
                yerr=err,
                lw=2.2 if bold else 1,
                color="black" if bold else None,
                capsize=2,
                ms=4,
                label=plotting.label(name[:40], same),
                **plotting.style(index),
            )
            for xi, r in zip(x, rows, strict=True):
                if r["steps_bound"] != "exact":
                    ax.plot(xi, r["steps_iqm"], "^", mfc="none", color=line[0].get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(setting[:50], fontsize=8)
        ax.set_xlabel(f"decision density rho{plotting.dodge_note(len(shown))}", fontsize=7)
    axes[0][0].set_ylabel("steps to target (IQM; ^ = censored, lower bound)")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def score_rows(label: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Flat per-density rows of one method's scores on one setting (for CSV)."""
    return [
        {
            "method": label,
            "density_value": r["density_value"],
            "rho": r["rho"],
            "runs": r["runs"],
            "reached": r["reached"],
            "steps_iqm": r["steps_iqm"],
            "steps_low": r["steps_low"],
            "steps_high": r["steps_high"],
            "steps_bound": r["steps_bound"],
            "km_median": r["km_median"],
            "km_median_bound": r["km_median_bound"],
            "auc_iqm": r["auc_iqm"],
            "auc_low": r["auc_low"],
            "auc_high": r["auc_high"],
            "budget": r["budget"],
        }
        for r in entry["rows"]
    ]


def markdown(
    header: dict[str, Any],
    mine: dict[str, Any],
    references: dict[str, dict[str, Any]],
    ratios: dict[str, dict[str, Any]],
    lab: list[dict[str, Any]],
) -> str:
    """The report card's text."""
    marked = " (unverified references)" if "unverified references" in header else ""
    lines = [f"# Report card: `{header['method']}` on protocol {header['protocol']}{marked}", ""]
    lines += [f"- **{k}**: {v}" for k, v in header.items() if k not in ("method",)]
    lines.append("")
    lines.append(
        "Scores are defined in docs/benchmark.md. `>=`: a lower bound (censored runs "
        "count at their budget); `<=`: an upper bound; `~`: censored on both sides."
    )
    for setting in sorted(mine["settings"]):
        entry = mine["settings"][setting]
        lines += ["", f"## {setting}", ""]
        lines.append(
            "| method | dilution exponent [95% CI] | "
            + " | ".join(
                f"steps @ {r['density_value']} (rho {r['rho']:.3g})" for r in entry["rows"]
            )
            + " |"
        )
        lines.append("|---" * (2 + len(entry["rows"])) + "|")
        for name, e in [(header["method"], entry)] + [
            (n, r["settings"][setting]) for n, r in references.items() if setting in r["settings"]
        ]:
            x = e["exponent"]
            expo = (
                f"{scores.shown(round(x['exponent'], 3), x['bound'])} "
                f"[{x['low']:.3f}, {x['high']:.3f}]"
                if x["exponent"] is not None
                else "n/a"
            )
            by_value = {r["density_value"]: r for r in e["rows"]}
            cells = []
            for r in entry["rows"]:
                o = by_value.get(r["density_value"])
                cells.append(
                    "n/a"
                    if o is None
                    else f"{scores.shown(o['steps_iqm'], o['steps_bound'])} "
                    f"[{o['steps_low']:.3g}, {o['steps_high']:.3g}] ({o['reached']}/{o['runs']})"
                )
            bold = "**" if name == header["method"] else ""
            lines.append(f"| {bold}{name}{bold} | {expo} | " + " | ".join(cells) + " |")
        if ratios.get(setting):
            lines += ["", "Ratio of steps to target at the lowest density, method / reference:", ""]
            lines += ["| reference | ratio [95% CI] |", "|---|---|"]
            for name, r in ratios[setting].items():
                lines.append(
                    f"| {name} | {scores.shown(r['ratio'], r['bound'])} "
                    f"[{r['low']:.3g}, {r['high']:.3g}] |"
                )
    if lab:
        lines += ["", "## Gradient SNR and exact bias at initialization (the lab)", ""]
        lines.append(
            "Uniform policy (over valid actions), tabular; SNR per episode for a batch "
            "of one group of 8; relative bias `||E g - grad J|| / ||grad J||`. Relative bias "
            "and cosine are estimates with 95% jackknife intervals; the cosine is clipped to "
            "[-1, 1] (its raw estimate, `cosine_raw` in `scores.json`, can exceed 1: "
            "docs/estimators.md)."
        )
        lines += [
            "",
            "| setting | rho | estimator | SNR [CI] | relative bias, estimate [CI] | "
            "cosine, estimate [CI] |",
            "|---|---|---|---|---|---|",
        ]
        for r in lab:
            lines.append(
                f"| {r['setting']} | {r['rho']:.3g} | {r['estimator']} | {r['snr']:.3g} "
                f"[{r['snr_low']:.3g}, {r['snr_high']:.3g}] | {r['relative_bias']:.3g} "
                f"[{r['relative_bias_low']:.3g}, {r['relative_bias_high']:.3g}] | "
                f"{r['cosine']:.3f} [{r['cosine_low']:.3f}, {r['cosine_high']:.3f}] |"
            )
    lines += [
        "",
        "Figures: `learning_curves.png`, `steps_vs_rho.png`; numbers: `scores.json`, `scores.csv`.",
    ]
    return "\n".join(lines) + "\n"


def write_report(
    folder: Path,
    header: dict[str, Any],
    records: list[Record],
    references: dict[str, list[Record]],
    lab: list[dict[str, Any]],
) -> dict[str, Any]:
    """Compute the scores and write the report card into ``folder``; return the scores."""
    folder.mkdir(parents=True, exist_ok=True)
    mine = scores.method_scores(records)
    ref_scores = {name: scores.method_scores(recs) for name, recs in references.items()}
    ratios = scores.compare_to_references(mine, ref_scores)
    rows = [
        row
        for s, e in mine["settings"].items()
        for row in score_rows(header["method"], e)
        for row in [{"setting": s, **row}]
    ]
    for name, sc in ref_scores.items():
        rows += [
            {"setting": s, **row} for s, e in sc["settings"].items() for row in score_rows(name, e)
        ]
    verified = "unverified" if "unverified references" in header else "verified"
    write_csv(folder / "scores.csv", [{**row, "references": verified} for row in rows])
    result = {
        "header": header,
        "method": mine,
        "references": ref_scores,
        "ratios": ratios,
        "lab": lab,
    }
    write_atomic(folder / "scores.json", json.dumps(result, indent=1, allow_nan=False))
    write_atomic(folder / "report.md", markdown(header, mine, ref_scores, ratios, lab))
    plot_curves(header["method"], records, references, folder / "learning_curves.png")
    plot_against_rho(header["method"], mine, ref_scores, folder / "steps_vs_rho.png")
    return result


def leaderboard(
    version: str,
    tier: str,
    runs_per_method: int,
    references: dict[str, list[Record]],
    unverified: str | None = None,
) -> str:
    """The references' scores as one Markdown table per setting: the dilution exponent, steps
    to target at the highest and the lowest density, their ratio to ``ppo``'s (the learned
    critic) at the lowest density, and the mean normalized AUC. ``unverified``: why the
    references are not the shipped ones (the title and a first line say so)."""
    computed = {name: scores.method_scores(recs) for name, recs in references.items()}
    marked = " (unverified references)" if unverified else ""
    lines = [f"# Leaderboard: protocol {version}, tier {tier}{marked}", ""]
    if unverified:
        lines += [f"**Unverified references**: {unverified}", ""]
    lines.append(
        "Scores as defined in docs/benchmark.md (IQM over seeds, 95% bootstrap intervals; "
        "`>=`/`<=`: bounds from censored runs). Runs per method: "
        + ", ".join(f"{n} {len(r)}/{runs_per_method}" for n, r in references.items())
        + "."
    )
    settings = sorted({s for sc in computed.values() for s in sc["settings"]})
    for setting in settings:
        lines += ["", f"## {setting}", ""]
        lines.append(
            "| method | dilution exponent | steps, highest rho | steps, lowest rho | "
            "steps / ppo's, lowest rho | AUC |"
        )
        lines.append("|---|---|---|---|---|---|")
        baseline = computed.get("ppo", {}).get("settings", {}).get(setting)
        ranked = sorted(
            (n for n in computed if setting in computed[n]["settings"]),
            key=lambda n: min(computed[n]["settings"][setting]["rows"], key=lambda r: r["rho"])[
                "steps_iqm"
            ],
        )
        for name in ranked:
            entry = computed[name]["settings"][setting]
            x = entry["exponent"]
            hi = max(entry["rows"], key=lambda r: r["rho"])
            lo = min(entry["rows"], key=lambda r: r["rho"])
            expo = (
                "n/a"
                if x["exponent"] is None
                else f"{scores.shown(round(x['exponent'], 3), x['bound'])} "
                f"[{x['low']:.3f}, {x['high']:.3f}]"
            )
            cells = [
                f"{scores.shown(r['steps_iqm'], r['steps_bound'])} "
                f"[{r['steps_low']:.3g}, {r['steps_high']:.3g}] ({r['reached']}/{r['runs']}, "
                f"rho {r['rho']:.3g})"
                for r in (hi, lo)
            ]
            ratio = "n/a"
            if baseline is not None and name != "ppo":
                r = scores.ratio_to(lo, min(baseline["rows"], key=lambda row: row["rho"]))
                ratio = f"{scores.shown(r['ratio'], r['bound'])} [{r['low']:.2f}, {r['high']:.2f}]"
            auc = float(np.mean([r["auc_iqm"] for r in entry["rows"]]))
            lines.append(f"| {name} | {expo} | {cells[0]} | {cells[1]} | {ratio} | {auc:.3f} |")
    return "\n".join(lines) + "\n"
