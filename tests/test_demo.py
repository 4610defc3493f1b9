"""``make demo`` section 1: the picture's rho and the episode's decision_density are both named,
with the reason they differ (issue 30)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("matplotlib")

from baselines.experiments.demo.sweep import show_episode


@pytest.mark.parametrize("seed", range(6))
def test_episode_names_configured_and_visited_rho(seed, tmp_path, capsys):
    shown = show_episode(tmp_path, seed)
    text = capsys.readouterr().out
    assert shown["configured_rho"] == pytest.approx(1 / 4)  # L = 3
    # the picture's title shows the configured rho; the header says so in words
    assert "rho=0.2500" in text
    assert "The picture's rho=0.2500 is the configured rho 1/(1+L)" in text
    assert "doors after a wrong one are routine" in text
    end = re.search(r"'num_critical': (\d+), 'episode_length': (\d+)", text)
    critical, length = int(end[1]), int(end[2])
    assert shown["visited_rho"] == pytest.approx(critical / length)
    # every door is critical unless it came after a wrong one: the doors account for the gap
    assert critical == shown["doors"] - shown["routine_doors"]
    assert length == shown["doors"] * 4
    visited_line = next(line for line in text.splitlines() if line.startswith("visited rho"))
    assert f"{critical} critical / {length} steps = {critical / length:.4f}" in visited_line
    if shown["routine_doors"]:
        assert "< configured rho 1/(1+L) = 0.2500" in visited_line
        assert text.count("(a door after a wrong one)") == shown["routine_doors"]
    else:
        assert "= configured rho" in visited_line and "no door came after" in visited_line
    assert (tmp_path / "episode.png").stat().st_size > 0


def test_some_seed_shows_the_gap(tmp_path, capsys):
    """Seed 0 (the demo's default) is the issue's episode: a wrong second door, rho 2/12."""
    shown = show_episode(tmp_path, 0)
    capsys.readouterr()
    assert shown["routine_doors"] == 1 and shown["visited_rho"] == pytest.approx(2 / 12)


def test_the_episode_picture_has_a_key_for_every_colour_and_a_caption_per_frame(
    tmp_path, monkeypatch, capsys
):
    """Issue 41: episode.png was coloured squares without a title or key. Every colour the
    renderer paints (but the background) is in the key, each frame has a caption saying where
    the agent is and whether it decides, and the title names both rhos."""
    from baselines.experiments.demo import sweep
    from routine_envs.rendering.doors import COLORS

    assert {k for k, _ in sweep.EPISODE_LEGEND} == set(COLORS) - {"background"}
    drawn = {}
    monkeypatch.setattr(
        sweep, "episode_figure", lambda f, c, t, p: drawn.update(frames=f, captions=c, title=t)
    )
    show_episode(tmp_path, 0)
    assert "[k]x door k chosen, wrong" in capsys.readouterr().out  # the terminal's key
    assert len(drawn["frames"]) == len(drawn["captions"]) == 4  # 3 floors' doors and the end
    assert drawn["captions"][1] == "step 4: at floor 2's doors (a decision)"
    assert drawn["captions"][2] == "step 8: at floor 3's doors (routine: the episode has failed)"
    assert "configured rho = 1/(1+L) = 0.250" in drawn["title"] and "rho = 0.167" in drawn["title"]


def test_a_summary_whose_shares_are_all_equal_says_so(tmp_path, monkeypatch):
    from baselines.lib import curves

    titles = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(
        matplotlib.axes.Axes,
        "set_title",
        lambda self, text, *a, **k: titles.append(text) or original(self, text, *a, **k),
    )
    row = {"runs": 6, "reached_share": 1.0, "auc": 0.7, "auc_low": 0.6, "auc_high": 0.8}
    curves.plot_summary([{**row, "method": "a"}, {**row, "method": "b"}], tmp_path / "s.png")
    assert "every method reached the target in 100% of its runs" in titles[-1]
    curves.plot_summary(
        [{**row, "method": "a"}, {**row, "method": "b", "reached_share": 0.5}], tmp_path / "t.png"
    )
    assert "every method" not in titles[-1]
