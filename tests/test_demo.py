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
