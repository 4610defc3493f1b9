"""Drawing several series so that none hides another: a distinct marker per series, each series
dodged sideways by a small step, and where two series have the same values a legend note naming
the other.

Two estimators can have exactly the same SNR at every rho (a scaled estimator and its base,
``rloo`` and ``trajectory_mc``), two methods the same steps (a detector that equals the
annotations): drawn with one marker at one place, the later one is invisible though the legend
lists it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
"""One marker per series, in order (cycled past twelve)."""
LINESTYLES = ("-", "--", "-.", ":")
"""One line style per series, in order (cycled)."""
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip
"""Twenty distinct colours: matplotlib's ``tab20`` (Vega's ``category20``), its ten dark shades
first (``tab10``, matplotlib's default cycle) then their light partners, so up to ten series look
as matplotlib draws them and up to twenty never share a colour (cycled past twenty)."""
DODGE = 0.012
"""Sideways step between neighbouring series, in decades on a log axis (2.8% in x), as a share of
the axis span on a linear one: series ``i`` of ``k`` sits ``(i - (k - 1) / 2)`` steps off its x."""

Series = Mapping[str, tuple[Sequence[float], Sequence[float]]]


def same_as(series: Series, rtol: float = 1e-6, atol: float = 1e-12) -> dict[str, str]:
    """For every series whose points equal an earlier series' (the same x values, y within
    ``rtol``/``atol``, in mapping order), the name of the first such series.

    Args:
        series: name -> ``(x, y)``, each of shape ``(n,)``; missing values (nan) compare equal.
    """
    names = list(series)
    found: dict[str, str] = {}
    for i, name in enumerate(names):
        x, y = (np.asarray(v, dtype=np.float64) for v in series[name])
        for other in names[:i]:
            if other in found:
                continue
            ox, oy = (np.asarray(v, dtype=np.float64) for v in series[other])
            if (
                x.shape == ox.shape
                and np.array_equal(x, ox, equal_nan=True)
                and np.allclose(y, oy, rtol=rtol, atol=atol, equal_nan=True)
            ):
                found[name] = other
                break
    return found


def label(name: str, same: Mapping[str, str]) -> str:
    """The legend text of ``name``: itself, and the series it coincides with, if any."""
    if name in same:
        return f"{name} (same values as {same[name]})"
    return name


def dodged(
    x: Sequence[float], index: int, count: int, log: bool = True, span: float = 1.0
) -> np.ndarray:
    """``x`` of the ``index``-th of ``count`` series, moved sideways by its :data:`DODGE`
    steps: times ``10**(DODGE * steps)`` on a log axis, plus ``DODGE * steps * span`` on a
    linear one."""
    steps = index - (count - 1) / 2
    values = np.asarray(x, dtype=np.float64)
    if log:
        return values * 10 ** (DODGE * steps)
    return values + DODGE * steps * span


def dodge_note(count: int) -> str:
    """The axis-label note for ``count`` dodged series on a log axis, `` (points of the 3 series
    dodged sideways by up to 1%)``; empty for a single series."""
    if count < 2:
        return ""
    largest = 10 ** (DODGE * (count - 1) / 2) - 1
    return f" (points of the {count} series dodged sideways by up to {largest:.0%})"


def style(index: int) -> dict[str, Any]:
    """Marker and fill of the ``index``-th series: distinct markers, every other one hollow,
    so that near-equal points stay apart."""
    kw: dict[str, Any] = {"marker": MARKERS[index % len(MARKERS)]}
    if index % 2:
        kw["mfc"] = "none"
    return kw


def colours(names: Sequence[str], first: Sequence[str] = ()) -> dict[str, str]:
    """A colour of :data:`PALETTE` for each of ``names``: ``first`` (a fixed order, e.g. every
    known method) take the palette's colours in their order whether drawn or not, so a name of
    ``first`` has the same colour in every figure; the other names the next ones, in their order.
    """
    slot = {n: i for i, n in enumerate(dict.fromkeys([*first, *names]))}
    return {n: PALETTE[slot[n] % len(PALETTE)] for n in names}


def legend_below(ax: Any, columns: int = 1, below: float = 0.16) -> None:
    """The legend under the panel (its top ``below`` axes heights under the axes, clear of the
    x label), where it covers no point; ``tight_layout`` makes room for it."""
    ax.legend(
        fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -below), ncol=columns, frameon=False
    )


def plain_log_ticks(ax: Any) -> None:
    """Label both log axes of ``ax`` with plain numbers (``0.02``, ``6``, ``10``) instead of
    ``6 x 10^0``: every power of ten, and the minor ticks at 2 and 5 times one (so a decade
    with no power of ten inside still has labels, and none overlap)."""
    import math

    from matplotlib.ticker import FuncFormatter

    def plain(value: float, _: int) -> str:
        return f"{value:g}"

    def two_and_five(value: float, _: int) -> str:
        if value <= 0:
            return ""
        lead = round(value / 10 ** math.floor(math.log10(value)), 6)
        return f"{value:g}" if lead in (2.0, 5.0) else ""

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(plain))
        axis.set_minor_formatter(FuncFormatter(two_and_five))
