"""The second axis: how dilution changes with the number of critical decisions per episode.

A protocol tier may hold one environment family at several numbers of critical decisions
(Diluted Doors with 1, 2 and 4 floors; Routine Grid with 1, 2 and 4 junctions), each over the
same densities (:meth:`baselines.lib.protocol.Tier.axes`). Per method and family this gives
the dilution exponent at each number of decisions and its *trend*: the least-squares slope of
the exponent against ``log2(decisions)``, the change of the exponent per doubling of the
decisions (:func:`~.scores.decisions_axis`), and the ratio of steps to ``ppo``'s at the lowest
density per number of decisions. Tables for the report card and the leaderboard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from baselines.experiments.benchmark import scores
from baselines.lib.protocol import DecisionsAxis

Scores = Mapping[str, Any]  # one method's :func:`~.scores.method_scores`


def axis_scores(method: Scores, axis: DecisionsAxis) -> dict[str, Any] | None:
    """One method's :func:`~.scores.decisions_axis` on ``axis`` (``None`` when it ran fewer
    than two of the axis's settings)."""
    entries = {
        d: method["settings"][name]
        for d, name in axis.settings.items()
        if name in method["settings"]
    }
    if len(entries) < 2:
        return None
    return scores.decisions_axis(entries)


def lowest_ratio(method: Scores, baseline: Scores, setting: str) -> dict[str, Any] | None:
    """``method``'s steps at its lowest density over ``baseline``'s on ``setting``
    (:func:`~.scores.ratio_to`), or ``None`` when either lacks the setting or the density."""
    mine = method["settings"].get(setting)
    theirs = baseline["settings"].get(setting)
    if mine is None or theirs is None:
        return None
    low = min(mine["rows"], key=lambda r: r["rho"])
    match = [r for r in theirs["rows"] if r["density_value"] == low["density_value"]]
    return scores.ratio_to(low, match[0]) if match else None


BASELINES = ("ppo", "oracle")
"""The references each method's steps are compared with per number of decisions: the learned
critic and the perfect critic (the observation-free measure of dilution)."""


def all_axes(
    computed: Mapping[str, Scores],
    axes: Sequence[DecisionsAxis],
    baselines: Sequence[str] = BASELINES,
) -> list[dict[str, Any]]:
    """Every method's scores on every axis: ``[{"family", "kwarg", "decisions", "baselines",
    "methods": {name: {"points", "trend", "ratios": {baseline: {decisions: ratio}}}}}]``
    (``scores.json``'s ``decisions_axes``): each method's steps at the lowest density over each
    baseline's that ran."""
    out = []
    present = [b for b in baselines if b in computed]
    for axis in axes:
        methods = {}
        for name, sc in computed.items():
            entry = axis_scores(sc, axis)
            if entry is None:
                continue
            ratios: dict[str, dict[int, Any]] = {}
            for baseline in present:
                if name == baseline:
                    continue
                for d, setting in axis.settings.items():
                    ratio = lowest_ratio(sc, computed[baseline], setting)
                    if ratio is not None:
                        ratios.setdefault(baseline, {})[d] = ratio
            methods[name] = {**entry, "ratios": ratios}
        if methods:
            out.append(
                {
                    "family": axis.family,
                    "kwarg": axis.kwarg,
                    "decisions": sorted(axis.settings),
                    "baselines": present,
                    "methods": methods,
                }
            )
    return out


def exponent_cell(point: Mapping[str, Any]) -> str:
    return scores.exponent_text(point, why=False)


def trend_cell(trend: Mapping[str, Any]) -> str:
    return scores.exponent_text(trend, why=False)


def ratio_cell(ratio: Mapping[str, Any] | None) -> str:
    return scores.ratio_text(ratio)


def markdown(
    axis: Mapping[str, Any],
    order: Sequence[str],
    labels: Mapping[str, str] | None = None,
    bold: str | None = None,
    heading: str = "##",
    target: str = "",
) -> list[str]:
    """The lines of one axis (an entry of :func:`all_axes`): the exponent per number of
    decisions with its trend, then the ratio to the baseline at the lowest density, one row per
    method of ``order`` that has the axis (``labels``: how to name each row; ``target``: what
    the steps are to, in the title, when not the joint target)."""
    labels = labels or {}
    kwarg, decisions = axis["kwarg"], axis["decisions"]
    names = [n for n in order if n in axis["methods"]]
    if not names:
        return []

    def row_label(name: str) -> str:
        text = labels.get(name, name)
        return f"**{text}**" if name == bold else text

    lines = [
        f"{heading} Number of critical decisions: {axis['family']} ({kwarg} "
        + ", ".join(map(str, decisions))
        + ")"
        + (f", {target}" if target else ""),
        "",
        "Dilution exponent at each number of critical decisions per episode, and its trend: "
        f"the change of the exponent per doubling of `{kwarg}` (least-squares slope on "
        "log2; negative: dilution grows with the decisions). 95% bootstrap intervals "
        "(seeds resampled within every setting and density).",
        "",
        "| method | " + " | ".join(f"{kwarg} = {d}" for d in decisions) + " | trend per doubling |",
        "|---" * (2 + len(decisions)) + "|",
    ]
    for name in names:
        entry = axis["methods"][name]
        points = {p["decisions"]: p for p in entry["points"]}
        cells = [exponent_cell(points[d]) if d in points else "n/a" for d in decisions]
        lines.append(
            f"| {row_label(name)} | " + " | ".join(cells) + f" | {trend_cell(entry['trend'])} |"
        )
    for baseline in axis["baselines"]:
        others = [n for n in names if axis["methods"][n]["ratios"].get(baseline)]
        if not others:
            continue
        lines += [
            "",
            f"Steps to target at the lowest density over `{baseline}`'s, per number of decisions:",
            "",
            "| method | " + " | ".join(f"{kwarg} = {d}" for d in decisions) + " |",
            "|---" * (1 + len(decisions)) + "|",
        ]
        for name in others:
            ratios = axis["methods"][name]["ratios"][baseline]
            cells = [ratio_cell(ratios.get(d)) for d in decisions]
            lines.append(f"| {row_label(name)} | " + " | ".join(cells) + " |")
    return lines
