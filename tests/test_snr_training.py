"""SNR along training (issue 38): the batched trainer's observer reads the policies of a run
without changing it, the checkpoints span the learning part of the run, and ``snr_lab
training`` measures the SNR ratio at those policies beside the runs' steps ratio."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.experiments.snr_lab import training
from baselines.lib.batched import train


@pytest.fixture(scope="module")
def runs():
    settings = training.TrainingSnrSettings(
        protocol="rb3", tier="lite", floors=1, routine_lengths=[9], seeds=[0, 1]
    )
    return training.plan_runs(settings)


def test_observing_every_update_changes_nothing_of_the_runs(runs):
    seen = []

    def observe(trainer, active):
        for j in active.tolist():
            seen.append((j, trainer.state[j].steps, trainer.policy_tables(np.array([j]))[0]))

    plain = train(runs)
    observed = train(runs, observe=observe)
    for a, b in zip(plain, observed, strict=True):
        assert a.timesteps == b.timesteps and a.success == b.success  # bit for bit
    per_run = len(seen) // len(runs)
    assert len(seen) == len(runs) * per_run == len(runs) * len(plain[0].success)
    assert [s for j, s, _ in seen if j == 0][:2] == [0, plain[0].timesteps[1]]
    table = seen[0][2]
    assert np.allclose(table[table.sum(axis=1) > 0].sum(axis=1), 1.0)


def test_checkpoints_run_from_the_start_to_the_first_policy_reaching_the_target():
    success = [0.3, 0.5, 0.7, 0.85, 0.92, 0.97, 0.99]
    assert training.checkpoint_updates(success, 0.9, 3) == [0, 2, 4]
    assert training.checkpoint_updates(success, 0.9, 5) == [0, 1, 2, 3, 4]
    assert training.checkpoint_updates([0.3, 0.4, 0.5], 0.9, 2) == [0, 2]  # never: to the end


def test_the_command_measures_the_ratio_along_training_beside_the_steps(tmp_path):
    settings = training.TrainingSnrSettings(
        protocol="rb3", tier="lite", floors=1, routine_lengths=[0, 9], seeds=[0],
        checkpoints=3, episodes=640, out=tmp_path,
    )  # fmt: skip
    summary = training.run(settings)
    rows = [r for r in summary["snr"] if r["estimator"] == "oracle"]
    assert {r["method"] for r in rows} == {"trajectory_mc", "oracle"}
    first = [r for r in rows if r["update"] == 0]
    assert len(first) == 4 and all(r["ratio"] > 0 for r in first)
    # the same initial policy (seed 0) for both methods: the same measurement
    at9 = [r["ratio"] for r in first if r["routine_length"] == 9]
    assert at9[0] == at9[1]
    # diluted at L = 9: the perfect critic's SNR is several times the trajectory advantage's
    assert at9[0] > 2 > next(r["ratio"] for r in first if r["routine_length"] == 0)
    steps = {(r["routine_length"], r["method"]): r for r in summary["steps"]}
    assert steps[(9, "oracle")]["trajectory_mc_over_this"] >= 1
    # the perfect critic reads state_ids: named privileged as a method and as an estimator
    assert summary["labels"] == {
        "oracle": "oracle (privileged: state_ids)",
        "trajectory_mc": "trajectory_mc",
    }
    assert {r["method_label"] for r in rows} == set(summary["labels"].values())
    assert {r["estimator_label"] for r in summary["snr"]} == set(summary["labels"].values())
    assert steps[(9, "oracle")]["label"] == "oracle (privileged: state_ids)"
    for name in ("training_snr.csv", "training_steps.csv", "training_snr.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "training_snr.json").read_text())["steps"]
