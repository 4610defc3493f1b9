"""Plots never hide a series (issue 30): distinct markers, a sideways dodge, and a legend note
where series have the same values (the lab, the comparison and the benchmark's report card)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.lib import plotting

pytest.importorskip("matplotlib")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.01, 100.0), min_size=1, max_size=6, unique=True),
    st.lists(st.integers(0, 3), min_size=2, max_size=6),
)
def test_same_as_names_the_first_series_with_equal_values(xs, pattern):
    """Series built from a few distinct value lists: each is matched to the first earlier
    series with its values, and only then."""
    rng = np.random.default_rng(len(xs))
    bases = [rng.normal(size=len(xs)) for _ in range(4)]
    series = {f"s{i}": (xs, bases[k]) for i, k in enumerate(pattern)}
    same = plotting.same_as(series)
    for i, k in enumerate(pattern):
        first = pattern.index(k)
        if first < i:
            assert same[f"s{i}"] == f"s{first}"
        else:
            assert f"s{i}" not in same
    assert plotting.label("s1", same).startswith("s1")


def test_dodge_keeps_series_apart_and_near_their_x():
    x = np.array([0.05, 0.25, 1.0])
    placed = [plotting.dodged(x, i, 8) for i in range(8)]
    for i in range(8):
        assert np.all(np.abs(np.log10(placed[i] / x)) <= plotting.DODGE * 3.5 + 1e-12)
        for j in range(i):
            assert np.all(placed[i] != placed[j])
    assert plotting.dodge_note(1) == ""
    assert "8 series dodged sideways by up to 10%" in plotting.dodge_note(8)
    assert len({plotting.style(i)["marker"] for i in range(12)}) == 12


@pytest.fixture
def errorbar_calls(monkeypatch):
    import matplotlib.axes

    calls = []
    original = matplotlib.axes.Axes.errorbar

    def spy(self, x, y, *args, **kwargs):
        calls.append((kwargs.get("label"), kwargs.get("marker"), np.asarray(x, dtype=float)))
        return original(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", spy)
    return calls


def _check(calls, expected_labels):
    assert [c[0] for c in calls] == expected_labels
    assert len({c[1] for c in calls}) == len(calls)  # a marker each
    for i in range(len(calls)):
        for j in range(i):
            assert np.all(calls[i][2] != calls[j][2])  # never at the same place


def test_comparison_steps_plot_shows_a_detector_equal_to_the_annotations(tmp_path, errorbar_calls):
    from baselines.lib import curves as analysis

    rows, ratios = [], []
    for method, factor in (("ppo", 1.0), ("routine_masked", 0.4), ("detector_masked", 0.4)):
        for rho in (0.5, 0.25, 0.0625):
            y = factor * 1e4 * rho**-0.5
            rows.append(
                {"method": method, "rho": rho, "mean_steps": y, "low": 0.8 * y,
                 "high": 1.2 * y, "mean_steps_is": "exact"}
            )  # fmt: skip
            if method != "ppo":
                ratios.append(
                    {"method": method, "rho": rho, "ratio": factor, "low": 0.3, "high": 0.5,
                     "baseline": "ppo", "ratio_is": "exact"}
                )  # fmt: skip
    analysis.plot_steps_to_target(rows, ratios, tmp_path / "steps.png")
    assert (tmp_path / "steps.png").stat().st_size > 0
    left, right = errorbar_calls[:3], errorbar_calls[3:]
    _check(left, ["detector_masked", "ppo", "routine_masked (same values as detector_masked)"])
    _check(
        right,
        ["detector_masked / ppo", "routine_masked / ppo (same values as detector_masked / ppo)"],
    )


def test_report_card_steps_plot_shows_a_method_equal_to_a_reference(tmp_path, errorbar_calls):
    from baselines.experiments.benchmark import figures

    def entry(scale):
        rows = [
            {"rho": rho, "steps_iqm": scale / rho, "steps_low": 0.9 * scale / rho,
             "steps_high": 1.1 * scale / rho, "steps_bound": "exact"}
            for rho in (0.5, 0.1, 0.03)
        ]  # fmt: skip
        return {"settings": {"DilutedDoors-v1{}": {"rows": rows}}}

    references = {"ppo": entry(1000.0), "routine_masked": entry(300.0)}
    figures.plot_against_rho("mine", entry(300.0), references, tmp_path / "rho.png")
    assert (tmp_path / "rho.png").stat().st_size > 0
    _check(errorbar_calls, ["ppo", "routine_masked", "mine (same values as routine_masked)"])


def test_log_axes_are_labelled_with_plain_numbers_at_powers_two_and_five():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from baselines.lib import plotting

    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    plotting.plain_log_ticks(ax)
    minor = ax.xaxis.get_minor_formatter()
    major = ax.xaxis.get_major_formatter()
    assert major(0.1, 0) == "0.1" and major(10, 0) == "10"  # not 10^{-1}
    assert [minor(v, 0) for v in (0.02, 0.03, 0.05, 0.07, 200)] == ["0.02", "", "0.05", "", "200"]
    plt.close(fig)


def test_colours_stay_distinct_past_ten_and_keep_their_place():
    """Twenty series never share a colour (matplotlib's default cycle repeats after ten), and a
    name of the fixed order keeps its colour whatever else a figure draws."""
    import matplotlib
    from matplotlib.colors import to_hex

    tab20 = [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]
    assert list(plotting.PALETTE) == tab20[0::2] + tab20[1::2]  # tab10 first, then the lights
    names = [f"m{i}" for i in range(20)]
    assert len(set(plotting.colours(names).values())) == 20
    order = ["a", "b", "c", *names]
    alone = plotting.colours(["m13"], first=order)
    among = plotting.colours(["x", "m13", "b"], first=order)
    assert alone["m13"] == among["m13"] == plotting.PALETTE[16]
    assert among["x"] == plotting.PALETTE[23 % 20]  # next after the 23 of the order, cycled
