"""Drawing several series so that none hides another: a distinct marker per series, and where
two series have the same values, a small horizontal shift and a legend note naming the other.

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
SHIFT = 0.035
"""Horizontal shift of a coinciding series, as a fraction of a decade on a log axis (of the
axis span on a linear one): about 8% in x per step on a log axis, small against a factor of 2."""

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
        return f"{name} (same values as {same[name]}; drawn shifted right)"
    return name


def shifted(x: Sequence[float], steps: int, log: bool = True, span: float = 1.0) -> np.ndarray:
    """``x`` moved ``steps`` shifts of :data:`SHIFT` to the right: by a factor
    ``10**(SHIFT * steps)`` on a log axis, by ``SHIFT * steps * span`` on a linear one."""
    values = np.asarray(x, dtype=np.float64)
    if log:
        return values * 10 ** (SHIFT * steps)
    return values + SHIFT * steps * span


def shifts(same: Mapping[str, str], names: Sequence[str]) -> dict[str, int]:
    """How many shifts each series gets: 0 for a series of its own values, 1, 2, ... for the
    second, third, ... series with the same values."""
    count: dict[str, int] = {}
    out = {}
    for name in names:
        first = same.get(name, name)
        out[name] = count.get(first, 0)
        count[first] = out[name] + 1
    return out


def style(index: int) -> dict[str, Any]:
    """Marker and fill of the ``index``-th series: distinct markers, every other one hollow,
    so that near-equal points stay apart."""
    kw: dict[str, Any] = {"marker": MARKERS[index % len(MARKERS)]}
    if index % 2:
        kw["mfc"] = "none"
    return kw
