"""The report card's figures: learning curves per environment and density, steps to target
against rho, each PNG beside a CSV of its numbers (:mod:`baselines.experiments.benchmark.report`
writes them)."""

from __future__ import annotations

import functools
import io
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.benchmark import scores
from baselines.experiments.benchmark.privileged import method_labels
from baselines.lib import plotting
from baselines.lib.results import write_atomic
from baselines.lib.tables import pyplot

Record = dict[str, Any]


def save_figure(fig: Any, path: Path) -> None:
    """Save a matplotlib figure as PNG at ``path``, all or nothing (a full disk leaves no
    truncated image)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    write_atomic(path, buffer.getvalue())


@functools.cache
def reference_order() -> tuple[str, ...]:
    """Every shipped reference method once, in release order (each protocol version's tiers, its
    references in the protocol's order): a later release only appends."""
    from baselines.lib import protocol as protocols

    found = dict.fromkeys(protocols.REFERENCE_METHODS)
    for version, tiers in protocols.REFERENCE_MANIFESTS.items():
        protocol = protocols.load_protocol(version)
        for tier in tiers:
            found.update(dict.fromkeys(protocol.references_of(tier)))
    return tuple(found)


def method_colours(names: Iterable[str]) -> dict[str, str]:
    """Each method's colour (:func:`~baselines.lib.plotting.colours`): a shipped reference has
    the same one in every figure, on every page (its place in :func:`reference_order`); other
    methods take the next free colours in the order given."""
    return plotting.colours(list(names), first=reference_order())


def curves_by(records: list[Record]) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """IQM success curve per (setting, density value): ``(timesteps, iqm success)``."""
    out: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
    for (_, setting, value), runs in scores.group_records(records).items():
        t = np.asarray(runs[0]["timesteps"], dtype=np.float64)
        s = np.array([r["success"] for r in runs if len(r["success"]) == len(t)])
        out[(setting, value)] = (t, np.asarray(scores.iqm(s, axis=0)))
    return out


def curve_rows(
    method: str, records: list[Record], references: dict[str, list[Record]]
) -> list[dict]:
    """The numbers of ``learning_curves.png``: one row per method, setting, density value and
    evaluation (``timestep``, ``success_iqm``: the IQM over seeds of the exact success)."""
    return [
        {
            "method": name,
            "setting": setting,
            "density_value": value,
            "timestep": t,
            "success_iqm": y,
        }
        for name, recs in {method: records, **references}.items()
        for (setting, value), (ts, ys) in sorted(curves_by(recs).items())
        for t, y in zip(ts.tolist(), ys.tolist(), strict=True)
    ]


def panel_titles(records: list[Record]) -> dict[tuple[str, int], str]:
    """What each learning-curve panel shows, by (setting, density value): the environment and
    its arguments, then the density argument, its value and rho, e.g.
    ``DilutedDoors-v1 {"num_floors": 2}`` / ``routine_length = 29, rho = 0.0333``."""
    out = {}
    for (_, setting, value), runs in scores.group_records(records).items():
        kwarg = runs[0].get("density_kwarg") or "density"
        env, _, kwargs = setting.partition("{")
        env_line = env if kwargs in ("", "}") else f"{env} {{{kwargs}"
        out[(setting, value)] = (
            f"{env_line[:64]}\n{kwarg} = {value}, rho = {float(runs[0]['rho']):.3g}"
        )
    return out


def plot_curves(
    method: str,
    records: list[Record],
    references: dict[str, list[Record]],
    path: Path,
    privileged: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """IQM learning curves, one panel per (setting, density) titled with both, the method bold
    beside the references; each method keeps its colour (:func:`method_colours`: the same on
    every card) and line style in every panel and one legend under the figure names them all (a
    reference whose curve equals another's in a panel says so there). ``privileged`` (method ->
    the privileged fields it reads, :func:`~.privileged.privileged_of`): every name carries its
    mark, ``oracle (privileged: state_ids)`` (:func:`~.privileged.method_label`)."""
    plt = pyplot()
    mine = curves_by(records)
    titles = panel_titles(records)
    keys = sorted(mine, key=lambda k: (k[0], k[1]))
    settings = sorted({k[0] for k in keys})
    cols = max(sum(1 for k in keys if k[0] == s) for s in settings)
    ref_curves = {name: curves_by(recs) for name, recs in references.items()}
    colours = method_colours(ref_curves)
    styles = {
        name: {
            "color": colours[name],
            "linestyle": plotting.LINESTYLES[i % len(plotting.LINESTYLES)],
        }
        for i, name in enumerate(ref_curves)
    }
    fig, axes = plt.subplots(
        len(settings), cols, figsize=(3.3 * cols + 0.6, 2.9 * len(settings) + 0.9), squeeze=False
    )
    handles: dict[str, Any] = {}
    for row, setting in enumerate(settings):
        values = sorted(k[1] for k in keys if k[0] == setting)
        for col in range(cols):
            ax = axes[row][col]
            if col >= len(values):
                ax.axis("off")
                continue
            key = (setting, values[col])
            here = {n: c[key] for n, c in ref_curves.items() if key in c}
            same = plotting.same_as({method: mine[key], **here})
            for name, curve in here.items():
                (line,) = ax.plot(*curve, lw=0.9, alpha=0.75, **styles[name])
                handles.setdefault(name, line)
                if name in same:  # drawn under the other: say so in the panel
                    short = method_labels([name, same[name]], privileged, 24)
                    ax.text(
                        0.98,
                        0.04 + 0.09 * list(same).index(name),
                        f"{short[name]} = {short[same[name]]}",
                        transform=ax.transAxes,
                        ha="right",
                        fontsize=5.5,
                    )
            (line,) = ax.plot(*mine[key], lw=2.2, color="black")
            handles.setdefault(method, line)
            ax.set_title(titles[key], fontsize=7)
            ax.set_ylim(-0.02, 1.02)
            ax.tick_params(labelsize=6)
            ax.xaxis.get_offset_text().set_fontsize(6)
            ax.set_xlabel("environment steps", fontsize=6)
            if col == 0:
                ax.set_ylabel("exact success probability\n(IQM over seeds)", fontsize=7)
    names = [method, *(n for n in ref_curves if n in handles)]
    shown = method_labels(names, privileged, 48)
    fig.legend(
        [handles[n] for n in names],
        [shown[n] + (" (this method)" if n == method else "") for n in names],
        loc="lower center",
        ncol=min(len(names), 4),
        fontsize=7,
        frameon=False,
    )
    rows_of_legend = -(-len(names) // 4)
    fig.tight_layout(rect=(0, (0.2 + 0.2 * rows_of_legend) / fig.get_figheight(), 1, 1))
    save_figure(fig, path)
    plt.close(fig)


def plot_against_rho(
    method: str,
    mine: dict[str, Any],
    references: dict[str, dict[str, Any]],
    path: Path,
    privileged: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """Steps to target (IQM, bootstrap bars; hollow markers: censored, a lower bound) against
    rho, one panel per setting (up to four a row, log axes labelled with plain numbers), the
    method (black) beside the references (each in its :func:`method_colours`), the legend under
    the panels. ``privileged`` (method -> the privileged fields it reads,
    :func:`~.privileged.privileged_of`): every name in the legend carries its mark
    (:func:`~.privileged.method_label`)."""
    plt = pyplot()
    settings = sorted(mine["settings"])
    colours = method_colours(references)
    cols = min(4, len(settings))
    rows_of_panels = -(-len(settings) // cols)
    legend_rows = -(-(len(references) + 1) // 4)
    fig, axes = plt.subplots(
        rows_of_panels,
        cols,
        figsize=(4.6 * cols, 3.8 * rows_of_panels + 0.25 * legend_rows + 0.4),
        squeeze=False,
    )
    for ax in axes.reshape(-1)[len(settings) :]:
        ax.axis("off")
    for ax, setting in zip(axes.reshape(-1), settings, strict=False):
        entries = {**{n: r["settings"].get(setting) for n, r in references.items()}}
        entries[method] = mine["settings"][setting]
        shown = {
            n: sorted(e["rows"], key=lambda r: r["rho"])
            for n, e in entries.items()
            if e is not None
        }
        names = method_labels(shown, privileged, 40)
        same = plotting.same_as(
            {
                names[n]: ([r["rho"] for r in rs], [r["steps_iqm"] for r in rs])
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
                color="black" if bold else colours[name],
                capsize=2,
                ms=4,
                label=plotting.label(names[name], same),
                **plotting.style(index),
            )
            for xi, r in zip(x, rows, strict=True):
                if r["steps_bound"] != "exact":
                    ax.plot(xi, r["steps_iqm"], "^", mfc="none", color=line[0].get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        plotting.plain_log_ticks(ax)
        ax.tick_params(labelsize=7, which="both")
        ax.set_title(setting[:50], fontsize=8)
        ax.set_xlabel(f"decision density rho{plotting.dodge_note(len(shown))}", fontsize=7)
    for row in axes:
        row[0].set_ylabel("steps to target (IQM;\n^ = censored, lower bound)", fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()  # its "same values" notes too
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, (0.3 + 0.2 * legend_rows) / fig.get_figheight(), 1, 1))
    save_figure(fig, path)
    plt.close(fig)
