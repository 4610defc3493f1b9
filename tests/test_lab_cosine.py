"""The lab's cosine: an estimate that can exceed 1, shown clipped to [-1, 1] with its interval
in every table, the raw estimate kept in the JSON records (issue 30); and its figures draw
every series (a scaled estimator and its base have the same SNR)."""

from __future__ import annotations

import csv
import json
import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routine_envs
from baselines.commands import settings_of
from routine_envs import credit, snr

gym.register_envs(routine_envs)


def test_bias_corrected_cosine_exceeds_one_where_the_plug_in_cannot():
    """``E g`` estimated as exactly ``grad J`` with some spread: the plug-in cosine is 1, the
    bias-corrected ``||E g||^2 = ||mean||^2 - tr Cov / n`` in the denominator makes it larger."""
    n, target = 100.0, np.array([0.3, -0.4])  # ||grad J|| = 0.5
    mean = target.copy()
    spread = 2.0  # tr Cov g
    q_all = (n - 1) * spread + n * float(mean @ mean)
    stats = snr.moment_statistics(n, n * mean, np.zeros(2), q_all, 0.0, q_all, target=target)
    signal = 0.25 - spread / n
    assert stats["signal"] == pytest.approx(signal)
    assert stats["cosine"] == pytest.approx(0.25 / math.sqrt(signal * 0.25))
    assert stats["cosine"] > 1.02


@pytest.fixture(scope="module")
def low_snr_result() -> snr.SNRResult:
    """trajectory_mc at rho 1/31 on 250 groups of 8: a low SNR, where the raw cosine is 1.03."""
    env = gym.make("DilutedDoors-v1", routine_length=30).unwrapped
    shape = (env.num_states, env.num_actions)
    policy = snr.TabularSoftmax.per_state(*shape, np.zeros(shape))
    estimators = {"trajectory_mc": credit.TrajectoryMC()}
    return snr.measure_snr(env, policy, estimators, num_groups=250, group_size=8, seed=0).results[
        "trajectory_mc"
    ]


def test_snr_result_clips_the_cosine_and_keeps_the_raw_one(low_snr_result):
    r = low_snr_result
    assert r.cosine_raw > 1.0 and r.cosine_raw_high > 1.0
    assert r.cosine == 1.0 and r.cosine_high == 1.0
    assert r.cosine_low == r.cosine_raw_low < 1.0
    for suffix in ("", "_low", "_high"):
        raw = getattr(r, f"cosine_raw{suffix}")
        assert getattr(r, f"cosine{suffix}") == min(1.0, max(-1.0, raw))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0, 3, 30]))
def test_every_cosine_is_in_range(seed, length):
    """Whatever the sample, the cosine and its interval lie in [-1, 1] and are ordered."""
    env = gym.make("DilutedDoors-v1", routine_length=length, num_floors=2).unwrapped
    shape = (env.num_states, env.num_actions)
    policy = snr.TabularSoftmax.per_state(*shape, np.zeros(shape))
    estimators = {"trajectory_mc": credit.TrajectoryMC(), "gigpo": credit.GiGPO()}
    results = snr.measure_snr(
        env, policy, estimators, num_groups=40, group_size=4, seed=seed, num_blocks=10
    ).results
    for r in results.values():
        assert -1.0 <= r.cosine_low <= r.cosine <= r.cosine_high <= 1.0
        assert r.cosine_raw_low <= r.cosine_raw <= r.cosine_raw_high


@pytest.fixture(scope="module")
def lab_run(tmp_path_factory):
    """``snr_lab measure`` at rho 1/31 with 2,000 episodes, seed 0: the raw cosine is 1.03."""
    pytest.importorskip("matplotlib")
    from baselines.experiments.snr_lab import measure

    out = tmp_path_factory.mktemp("lab")
    args = settings_of(
        "snr_lab measure",
        [
            "--routine-lengths",
            "30",
            "--estimators",
            "trajectory_mc",
            "rloo",
            "--episodes",
            "2000",
            "--workers",
            "1",
            "--out",
            str(out),
        ],
    )
    return out, args, measure


def test_every_lab_table_shows_the_clipped_cosine_with_its_interval(lab_run, capsys):
    out, args, measure = lab_run
    measure.main(args)
    console = capsys.readouterr().out
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    results = {r["estimator"]: r for r in records[0]["results"]}
    raw = results["trajectory_mc"]
    assert raw["cosine_raw"] > 1.0 and raw["cosine"] == 1.0  # JSON: both
    low = raw["cosine_low"]
    assert low < 1.0
    # CSV: the clipped cosine and its interval, no raw column
    with (out / "measure.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert not any(k.startswith("cosine_raw") for k in rows[0])
    for row in rows:
        assert -1.0 <= float(row["cosine_low"]) <= float(row["cosine"]) <= 1.0
        assert float(row["cosine_high"]) <= 1.0
    # console and Markdown: columns that say estimate, the interval beside the cosine
    shown = f"1.0000 [{low:.4f}, 1.0000]"
    markdown = (out / "measure.md").read_text()
    for table in (console, markdown):
        assert "cosine, estimate in [-1, 1] [95% CI]" in table
        assert "relative bias, estimate [95% CI]" in table
        assert shown in table
        assert f"{raw['cosine_raw']:.4f}" not in table
        assert "cosine_raw in results.jsonl" in table
    assert markdown.count("| trajectory_mc |") == 1
    summary = json.loads((out / "summary.json").read_text())
    assert "clipped to [-1, 1]" in summary["estimates"]


def test_coinciding_series_are_all_drawn_and_named(tmp_path, monkeypatch):
    """A scaled estimator has its base's SNR exactly (as rloo has trajectory_mc's): the figure
    gives each series its own marker, dodges them sideways (by less than 10%, the values kept),
    and the legend says which series it equals."""
    pytest.importorskip("matplotlib")
    import matplotlib.axes

    from baselines.experiments.snr_lab import analysis

    rows = [
        {"estimator": name, "rho": rho, "snr": snr_, "snr_low": snr_ - 0.01,
         "snr_high": snr_ + 0.01, "relative_bias": bias, "relative_bias_low": 0.0,
         "relative_bias_high": bias + 0.1}
        for name, scale, bias in (("base", 1.0, 0.1), ("scaled", 1.0, 0.3), ("other", 2.0, 0.1))
        for rho, snr_ in ((0.05, 0.05 * scale), (0.25, 0.1 * scale), (1.0, 0.2 * scale))
    ]  # fmt: skip
    drawn = []
    original = matplotlib.axes.Axes.errorbar

    def spy(self, x, y, *a, **kw):
        drawn.append((self, kw["label"], kw["marker"], np.asarray(x), np.asarray(y)))
        return original(self, x, y, *a, **kw)

    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", spy)
    analysis.plot_measure(rows, tmp_path / "coincide.png", "test")
    assert (tmp_path / "coincide.png").stat().st_size > 0
    left = [d for d in drawn if d[0] is drawn[0][0]]
    right = [d for d in drawn if d[0] is not drawn[0][0]]
    labels = {d[1]: d for d in left}
    assert set(labels) == {"base", "other", "scaled (same values as base)"}
    assert len({d[2] for d in left}) == 3  # a marker each
    rho = np.array([0.05, 0.25, 1.0])
    xs = [d[3] for d in left]
    for x in xs:
        assert np.all(np.abs(np.log(x / rho)) < np.log(1.1))  # near its rho
    for i in range(3):
        for j in range(i):
            assert np.all(xs[i] != xs[j])  # no two series at one place
    base, scaled = labels["base"], labels["scaled (same values as base)"]
    assert np.array_equal(scaled[4], base[4])  # the values themselves unchanged
    # the bias panel: "other" equals "base" there, "scaled" does not
    assert {d[1] for d in right} == {"base", "other (same values as base)", "scaled"}
