"""Both trainers give an estimator that declares ``turn_scores`` the score of the state each
step reached (the next step's state; the episode's last state at its end), read from the envs'
infos, and the turn-level methods train by name on the env where the agent decides when to
stop."""

from __future__ import annotations

import csv
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

from routine_envs.credit import RLOO, Advantages
from routine_envs.episodes import EpisodeBatch
from tests.utils import run_spec

ENV_ID, KWARGS = "SearchOrAnswer-v0", {"num_candidates": 3, "max_searches": 3}
SEEN: list[int] = []


class ScoreProbe(RLOO):
    """RLOO that checks every batch's ``turn_scores`` against the dynamics' table."""

    name: ClassVar[str] = "score_probe"
    requires: ClassVar[frozenset[str]] = frozenset({"turn_scores", "state_ids"})

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        dynamics = gym.make(ENV_ID, **KWARGS).unwrapped.dynamics
        table = dynamics.turn_score_table()
        ends = batch.episode_starts[1:] - 1
        inner = np.setdiff1d(np.arange(batch.num_steps), ends)
        np.testing.assert_array_equal(batch.turn_scores[inner], table[batch.state_ids[inner + 1]])
        # an episode ends in a terminal state: scored 1 for a right answer, else 0
        searched = np.add.reduceat(batch.rewards < 0, batch.episode_starts[:-1])
        right = batch.episode_returns() + dynamics.search_cost * searched > 0.5
        np.testing.assert_array_equal(batch.turn_scores[ends], right.astype(float))
        SEEN.append(batch.num_steps)
        return super().__call__(batch)


@pytest.mark.parametrize("trainer", ["sb3", "batched"])
def test_trainers_fill_turn_scores_of_the_state_reached(trainer, tmp_path):
    from baselines.experiments.train.command import TrainArgs, main

    SEEN.clear()
    args = TrainArgs(
        env_id=ENV_ID,
        env_kwargs=KWARGS,
        method="tests.test_turn_score_trainers:ScoreProbe",
        total_timesteps=600,
        eval_every=300,
        out=tmp_path,
        progress=False,
        trainer=trainer,
    )
    main(args)
    assert sum(SEEN) >= 600


@pytest.mark.parametrize(
    "method",
    ['discounted_turn{"gamma": 0.9}', 'turn_index_norm{"fix": true}', "turn_credit"],
)
def test_the_turn_level_methods_train_by_name_with_the_batched_trainer(method):
    from baselines.lib.batched import train as train_runs
    from tests.test_batched import HYPER

    spec = run_spec(ENV_ID, KWARGS, method, 0, 800, 200, hyperparameters=HYPER)
    (result,) = train_runs([spec])
    assert len(result.success) == 5 and all(0 <= s <= 1 for s in result.success)
    assert len(set(result.success)) > 1  # the policy was updated


def test_tables_mark_a_method_that_reads_a_privileged_field():
    from baselines.lib.specs import parse_method

    assert parse_method("turn_credit").label() == "turn_credit (privileged: turn_score)"
    spec = 'turn_credit{"gamma": 0.5}'
    assert parse_method(spec).label() == spec + " (privileged: turn_score)"
    spec = 'gigpo{"group_by": "state_id"}'
    assert parse_method(spec).label() == spec + " (privileged: state_id)"
    for spec in ('turn_index_norm{"fix": true}', 'discounted_turn{"gamma": 0.9}', "rloo"):
        assert "privileged" not in parse_method(spec).label()


def test_the_turn_methods_sweep_writes_runs_and_summary(tmp_path, monkeypatch):
    from baselines import commands
    from baselines.experiments.compare import turn_methods

    monkeypatch.setattr(turn_methods, "SETTINGS", (("DilutedDoors-v1", {"num_floors": 1}, 480),))
    monkeypatch.setattr(turn_methods, "METHODS", ("trajectory_mc", "turn_index_norm"))
    summary = commands.main(["turn_methods", "--seeds", "0", "1", "--out", str(tmp_path)])
    assert [r["method"] for r in summary] == ["trajectory_mc", "turn_index_norm"]
    with (tmp_path / "runs.csv").open() as f:
        runs = list(csv.DictReader(f))
    assert len(runs) == 4  # 2 methods x 2 seeds
    # rewards only at the end: turn_index_norm is trajectory_mc, run for run
    for seed in ("0", "1"):
        mc, tin = (
            next(r for r in runs if r["method"] == m and r["seed"] == seed)
            for m in ("trajectory_mc", "turn_index_norm")
        )
        assert mc["final_success"] == tin["final_success"]
        assert mc["steps_to_target"] == tin["steps_to_target"]
