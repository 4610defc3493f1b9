"""The honest statistics of the LM experiments: success as the model samples (scripted
policies whose answers are known by hand), the exact binomial interval, bootstrap intervals
of medians and ratios, censored cells printed as bounds, the curve's band over seeds."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from baselines.experiments.lm import analysis  # noqa: E402
from baselines.lib.lm.policy import Generated  # noqa: E402
from baselines.lib.lm.rollout import binomial_interval, sampled_success  # noqa: E402
from routine_envs.text import make_text_env  # noqa: E402
from tests.test_lm_analysis import run_row  # noqa: E402


class Scripted:
    """A stand-in for :class:`LMPolicy` that writes the replies of ``script`` in turn (turn
    ``k`` of every episode gets ``script[k]``; the prompt is the turn index)."""

    def __init__(self, script: Sequence[str]) -> None:
        self.script = list(script)

    def prompt(self, messages: Sequence[dict]) -> list[int]:
        return [sum(m["role"] == "assistant" for m in messages)]

    def generate(self, prompts, max_new_tokens, generator, temperature=1.0) -> list[Generated]:
        texts = [self.script[min(p[0], len(self.script) - 1)] for p in prompts]
        return [Generated([7], t, [0.0]) for t in texts]


def factory(**kwargs: int):
    def make():
        return make_text_env("DilutedDoors-v1", max_turns=4, num_floors=1, routine_length=1)

    return make


def test_binomial_interval_is_clopper_pearson() -> None:
    """0 of 10: [0, 1 - 0.025^(1/10)]; 10 of 10: [0.025^(1/10), 1] (hand formulas)."""
    low, high = binomial_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 10))
    low, high = binomial_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 10))
    with pytest.raises(ValueError):
        binomial_interval(3, 2)


def test_sampled_success_counts_replies_as_the_env_reads_them() -> None:
    """One floor, L = 1, 4 turns at most: a policy that never writes an action succeeds never
    (every turn invalid); one whose first reply is garbage and then walks every door in turn
    still acts (the invalid turn costs a turn, not the episode)."""
    none = sampled_success(Scripted(["hello"]), factory(), 20, 0, 8)
    assert none["sampled_success"] == 0.0 and none["sampled_invalid_fraction"] == 1.0
    assert none["sampled_episodes"] == 20.0 and none["sampled_success_high"] < 0.2
    wins = []
    for door in range(3):
        got = sampled_success(Scripted([f"open_door {door}", "walk"]), factory(), 10, 1, 8)
        assert got["sampled_invalid_fraction"] == 0.0
        wins.append(got["sampled_success"])
    assert sorted(wins) == [0.0, 0.0, 1.0]  # one door is right in every episode
    right = int(np.argmax(wins))
    # a malformed first reply, then the bare index (not canonical, read as the door), then walk
    late = sampled_success(Scripted(["xyz", f" {right}", "walk"]), factory(), 10, 2, 8)
    assert late["sampled_success"] == 1.0
    assert late["sampled_invalid_fraction"] == pytest.approx(1 / 3)


def test_bootstrap_interval_contains_the_median_and_is_reproducible() -> None:
    values = [11, 12, 12, 13, 14, 15, 15, 16, 20, 30]
    median, low, high = analysis.bootstrap_interval(np.median, values)
    assert median == 14.5 and low <= median <= high and low >= 11 and high <= 30
    assert analysis.bootstrap_interval(np.median, values) == (median, low, high)
    assert analysis.bootstrap_interval(np.median, [5, 5, 5]) == (5.0, 5.0, 5.0)
    ratio, rlow, rhigh = analysis.bootstrap_interval(analysis.median_ratio, values, [10] * 5)
    assert ratio == 1.45 and rlow <= ratio <= rhigh


def test_censored_cells_print_as_bounds() -> None:
    """All censored: "censored"; a minority reached: ">= median"; most reached but some
    censored: the interval's top is ">= budget"; the ratio to a censored oracle is censored."""
    never = analysis.steps_cell([run_row(seed=s, reached=None, steps=50) for s in range(10)])
    assert never["display"] == "censored (0/10 reached in 50)" and never["failed"] == 10
    few = analysis.steps_cell(
        [run_row(seed=s, reached=5 if s < 3 else None, steps=50) for s in range(10)]
    )
    assert few["display"] == ">= 50 (3/10 reached)"
    most = analysis.steps_cell(
        [run_row(seed=s, reached=10 + s if s < 7 else None, steps=50) for s in range(10)]
    )
    assert not most["median_is_lower_bound"] and most["failed"] == 3
    assert most["display"].startswith("14.5 (") and most["display"].endswith(">= 50; 7/10)")
    rows = []
    for s in range(10):
        rows.append(run_row("oracle", 1, s, None, steps=50))
        rows.append(run_row("trajectory_mc", 1, s, 20, steps=50))
        rows.append(run_row("oracle", 3, s, 10, steps=50))
        rows.append(run_row("trajectory_mc", 3, s, 20 if s < 5 else None, steps=50))
    table = {(r["estimator"], r["routine_length"]): r for r in analysis.dilution_table(rows)}
    assert table[("trajectory_mc", 1)]["ratio_display"] == "censored"  # the oracle censored
    assert table[("oracle", 3)]["ratio_display"] == "1.00 (1.00-1.00)"
    assert table[("trajectory_mc", 3)]["ratio_display"] == ">= 3.50"  # median 35 bounds


def test_curve_band_carries_a_stopped_run_forward() -> None:
    rows = [
        {"seed": 0, "step": 0, "x": 0.2},
        {"seed": 0, "step": 1, "x": 0.9},  # stopped: reached
        {"seed": 1, "step": 0, "x": 0.4},
        {"seed": 1, "step": 1, "x": 0.5},
        {"seed": 1, "step": 2, "x": 0.7},
    ]
    band = analysis.curve_band(rows, "x")
    assert [b["step"] for b in band] == [0, 1, 2]
    assert band[2]["mean"] == pytest.approx(0.8) and band[2]["runs"] == 2
    assert all(b["low"] <= b["mean"] <= b["high"] for b in band)


def test_snr_rows_say_the_noise_is_sampled() -> None:
    from tests.test_lm_analysis import snr_row

    rows = analysis.snr_rows([snr_row(n, 2.0, 2.0) for n in (0, 1)])
    episodes = snr_row(0, 2.0, 2.0)["episodes"]
    assert {r["noise"] for r in rows} == {f"sampled ({episodes} episodes)"}
    assert (
        "ratio_exact"
        not in analysis.snr_table([snr_row(n, 2.0, 2.0) for n in (0, 1)], ["oracle"])[0]
    )  # records made before the exact noise: no such column


def test_snr_rows_carry_the_exact_noise_where_measured() -> None:
    from tests.test_lm_analysis import snr_row

    exact = {"ratio_exact": 1.5, "snr_oracle_exact": 3.0, "snr_trajectory_exact_exact": 2.0}
    records = [{**snr_row(n, 2.0, 2.0), **exact} for n in (0, 1)]
    rows = analysis.snr_rows(records)
    assert all(r["noise"].endswith("; oracle and trajectory_exact also exact") for r in rows)
    assert all(r["ratio_exact"] == 1.5 and r["snr_oracle_exact"] == 3.0 for r in rows)
    assert analysis.snr_table(records, ["oracle"])[0]["ratio_exact"] == 1.5
