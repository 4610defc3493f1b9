"""Censoring in every printed score (issue 38): a cell where no run reached the target prints
``censored (0/N within budget B)`` and never an interval or a ratio; partly censored values are
bounds that say what is censored; an interval of width zero is printed only with its reason;
trainer cross-checks are two one-sided tests that never count a censored cell."""

from __future__ import annotations

import re

import pytest

from baselines.experiments.benchmark import report, scores


def run(seed: int, crossing: float | None, budget: int = 1000, method: str = "m") -> dict:
    """A run whose success steps from 0 to 1 at ``crossing`` (``None``: never)."""
    t = list(range(0, budget + 1, 10))
    s = [1.0 if crossing is not None and x >= crossing else 0.0 for x in t]
    return {
        "method": method, "label": method, "setting": "Env-v0{}", "env_id": "Env-v0",
        "density_kwarg": "routine_length", "density_value": 3, "rho": 0.25, "seed": seed,
        "budget": budget, "target": 0.9, "timesteps": t, "success": s, "evaluation": "updates",
    }  # fmt: skip


def cell(crossings: list[float | None], method: str = "m") -> dict:
    return scores.setting_scores([run(i, c, method=method) for i, c in enumerate(crossings)])


NUMBER_OR_INTERVAL = re.compile(r"\[|\d\.\d+ \[|~|>=|<=")


def test_a_fully_censored_cell_prints_no_number():
    empty = cell([None, None, None])
    assert scores.steps_text(empty) == "censored (0/3 within budget 1e+03)"
    assert scores.km_text(empty) == "censored (0/3 within budget 1e+03)"
    reached = cell([300, 400, 500])
    for ratio in (scores.ratio_to(empty, reached), scores.ratio_to(reached, empty)):
        assert ratio["ratio"] is None and ratio["bound"] == "censored"
        text = scores.ratio_text(ratio)
        assert text.startswith("censored (") and "0/3 within budget 1e+03" in text
        assert not NUMBER_OR_INTERVAL.search(text)


def test_partly_censored_values_are_bounds_that_say_so():
    some = cell([300, None, 500, 400])
    assert scores.steps_text(some).startswith(">= ")
    assert scores.steps_text(some).endswith("(3/4)")
    ratio = scores.ratio_to(some, cell([300, 400, 500, 600]))
    assert ratio["bound"] == "lower bound" and ratio["censored"] == [1, 0]
    text = scores.ratio_text(ratio)
    assert text.startswith(">= ") and text.endswith("(censored: 1 of the method's runs)")
    both = scores.ratio_to(some, cell([300, None, 500, 600]))
    assert scores.ratio_text(both).startswith("~ ")  # censored both sides: no bound at all
    assert "1 of the method's runs, 1 of the reference's runs" in scores.ratio_text(both)


def test_a_zero_width_interval_is_printed_only_with_its_reason():
    same = cell([400, 400, 400])
    assert scores.steps_text(same) == "400 (every run equal) (3/3)"
    one = cell([400])
    assert scores.steps_text(one) == "400 (no interval) (1/1)"
    assert scores.steps_text(cell([300, 400, 500])) == "400 [300, 500] (3/3)"  # IQM, bootstrap
    # a ratio of two cells whose runs all reached the target at one update each (rb3's paper
    # tier: trajectory_mc 16,896 steps and mc_rollout 12,672 in all 10 runs) says why it has
    # no width, rather than "no interval" as if it came from one run
    ratio = scores.ratio_to(cell([600, 600, 600]), cell([400, 400, 400]))
    assert scores.ratio_text(ratio) == "1.5 (every run equal)"
    assert scores.ratio_text(scores.ratio_to(cell([600]), cell([400]))) == "1.5 (no interval)"


def test_the_leaderboard_shows_a_fully_censored_method_without_numbers():
    runs = {
        "ppo": [run(i, 300 + 100 * i, method="ppo") for i in range(4)],
        "slow": [run(i, None, method="slow") for i in range(4)],
        "fast": [run(i, 200 + 100 * i, method="fast") for i in range(4)],
    }
    text = report.leaderboard("rbX", "lite", 4, runs)
    (row,) = [line for line in text.splitlines() if line.startswith("| slow |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2].startswith("censored (0/4 within budget 1e+03")  # steps, highest rho
    assert cells[4] == "censored (method: 0/4 within budget 1e+03)"  # steps / ppo's
    assert not NUMBER_OR_INTERVAL.search(" ".join(cells[2:5]))
    (fast,) = [line for line in text.splitlines() if line.startswith("| fast |")]
    assert re.search(r"\| 0\.\d+ \[0\.\d+, \d\.\d+\] \|", fast)  # a real ratio, with its interval


def test_tost_needs_both_one_sided_tests_and_never_counts_censoring():
    base = [450, 460, 470, 480, 490, 500, 510, 520]
    same = scores.tost(cell(base), cell(base))
    assert same["verdict"] == "equivalent" and same["p"] < 0.05
    assert 0.85 < same["low"] <= 1 <= same["high"] < 1.18
    slower = scores.tost(cell([1.5 * x for x in base]), cell(base))
    assert slower["verdict"] == "not shown equivalent" and slower["low"] > 1.18
    # an interval containing 1 but wider than the margin is not equivalence (the old rule
    # counted "includes 1" as a test of sameness: absence of evidence)
    wide = scores.tost(cell([100, 900, 200, 800]), cell([500, 510, 490, 505]))
    assert wide["verdict"] == "not shown equivalent"
    assert wide["low"] < 1 < wide["high"]
    censored = scores.tost(cell([None, None, None]), cell([None, None, None]))
    assert censored["verdict"] == "censored" and censored["p"] is None
    assert "method 3/3 censored" in censored["note"]


@pytest.mark.parametrize("text", ["2.4 [2.3, 2.6]", ">= 1.8 [1.3, 3.2]"])
def test_the_pattern_detects_printed_numbers(text):  # the guard above can fail
    assert NUMBER_OR_INTERVAL.search(text)
