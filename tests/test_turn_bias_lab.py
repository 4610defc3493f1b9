"""The lab's closed-form column and the turn-bias experiment: the closed form the lab prints is
the exact one, and the experiment writes its table, JSON and figure with both closed forms."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from baselines import commands
from baselines.experiments.snr_lab import turn_bias
from baselines.experiments.snr_lab.measure import MeasureArgs
from baselines.experiments.snr_lab.measure import main as measure
from routine_envs import snr
from routine_envs.turn_bias import turn_index_norm_bias

KWARGS = {"num_candidates": 2, "max_searches": 2, "search_cost": 0.1}


def test_the_lab_prints_the_closed_form_beside_the_estimate(tmp_path):
    args = MeasureArgs(
        env_id="SearchOrAnswer-v0",
        env_kwargs=KWARGS,
        routine_lengths=[1],
        estimators=["rloo", "turn_index_norm", 'turn_index_norm{"fix": true}'],
        episodes=800,
        group_size=4,
        workers=1,
        out=tmp_path,
    )
    rows = {r["estimator"]: r for r in measure(args)["rows"]}
    env = gym.make("SearchOrAnswer-v0", **KWARGS, reading_length=1).unwrapped
    uniform = snr.TabularSoftmax.per_state(env.num_states, env.num_actions)
    exact = turn_index_norm_bias(env, uniform, 4)
    assert rows["turn_index_norm"]["relative_bias_closed_form"] == pytest.approx(
        exact["relative_bias"], rel=1e-9
    )
    assert rows["turn_index_norm"]["cosine_closed_form"] == pytest.approx(exact["cosine"])
    fixed = rows['turn_index_norm{"fix": true}']["relative_bias_closed_form"]
    assert fixed == pytest.approx(0.25)  # (G - 1) / G times the gradient
    assert rows["rloo"]["relative_bias_closed_form"] is None  # no closed form: "-" in tables
    assert "relative bias, closed form" in (tmp_path / "measure.md").read_text()


def test_the_trained_policy_reads_only_the_observation_and_learns():
    env = gym.make("SearchOrAnswer-v0", **KWARGS, reading_length=1).unwrapped
    probs = turn_bias.train_by_exact_ascent(env, 10, 30.0)
    anchors = env.dynamics.anchors_of(np.arange(env.num_states))
    for anchor in np.unique(anchors):
        same = probs[anchors == anchor]
        np.testing.assert_array_equal(same, np.broadcast_to(same[0], same.shape))
    uniform = np.full_like(probs, 1.0 / env.num_actions)
    start = env.model().initial
    assert start @ env.oracle(probs).v > start @ env.oracle(uniform).v + 0.05


def test_the_experiment_writes_measured_and_closed_forms(tmp_path, monkeypatch):
    monkeypatch.setattr(turn_bias, "ENV_KWARGS", {**KWARGS, "find_probability": 0.7})
    rows = commands.main(["snr_lab", "turn-bias", "--episodes", "4000", "--out", str(tmp_path)])
    assert {r["policy"] for r in rows} == {"uniform", "trained"} and len(rows) == 6
    for r in rows:
        if r["estimator"] == "rloo":
            assert r["closed_form"] == r["rfc_limit"] == 0.0
        elif "fix" in r["estimator"]:
            assert r["closed_form"] == pytest.approx(1 / 8) and r["rfc_limit"] == pytest.approx(0)
        else:
            assert r["rfc_limit"] > 0.01
    saved = json.loads((tmp_path / "turn_bias.json").read_text())
    assert saved["rows"] == rows
    assert (tmp_path / "turn_bias.png").stat().st_size > 10_000
    assert (tmp_path / "turn_bias.csv").read_text().count("\n") == 7
    with pytest.raises(SystemExit):
        commands.main(["snr_lab", "turn-bias", "--episodes", "3"])
