"""Evaluation after every update (rb3's ``evaluation: updates``): both trainers evaluate every
policy they produce, exactly once, at the steps its updates consumed, without changing what they
train; its steps to target do not move with how often a run is evaluated, where the schedule's
interpolated ones do (issue 38)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from baselines.lib import scoring
from baselines.lib.protocol import load_protocol
from baselines.lib.runs import Run, key, plan, rollout_steps, train
from baselines.lib.specs import parse_method

ROLLOUT = 1024  # rb2's Doors rollout: 8 envs x 128 steps
TARGET = 0.9


def _runs(trainer: str, every: int | None) -> Run:
    hyper = load_protocol("rb2").method_hyperparameters("DilutedDoors-v1", "oracle")
    kwargs = {"num_floors": 1, "routine_length": 0}
    return Run.of(
        "DilutedDoors-v1",
        "oracle",
        kwargs,
        seed=0,
        budget=6 * ROLLOUT,
        eval_every=every or ROLLOUT,
        trainer=trainer,
        hyperparameters=hyper,
        evaluation="schedule" if every else "updates",
    )


@pytest.mark.parametrize("trainer", ["batched", "sb3"])
def test_every_policy_is_evaluated_once_at_the_steps_it_consumed(trainer):
    # the same run evaluated after every update, and on schedules 16 and 4 times finer than
    # one update: training is the same (evaluation is exact: it draws nothing), so the policy
    # in use at the first grid point after update k is the policy the update record has at k
    by_update, fine, finer = train(
        [_runs(trainer, None), _runs(trainer, ROLLOUT // 16), _runs(trainer, ROLLOUT // 4)]
    )
    assert by_update.timesteps == [k * ROLLOUT for k in range(7)]  # the start and 6 updates
    for grid, result in ((ROLLOUT // 16, fine), (ROLLOUT // 4, finer)):
        curve = dict(zip(result.timesteps, result.success, strict=True))
        in_use = [curve[t + grid] for t in by_update.timesteps[:-1]]
        assert in_use == by_update.success[:-1]  # bit for bit
    assert by_update.success[-1] > by_update.success[-2]  # the final policy is evaluated too
    # the score is the steps of the first policy reaching the target, on any grid
    first = next(
        t for t, s in zip(by_update.timesteps, by_update.success, strict=True) if s >= TARGET
    )
    assert by_update.steps_to_target == first == 3 * ROLLOUT
    # while the schedule's interpolated crossing moves with its grid (the audit's finding)
    assert fine.steps_to_target != pytest.approx(finer.steps_to_target, rel=0.01)


def test_the_two_trainers_score_the_same_update():
    (batched,) = train([_runs("batched", None)])
    (sb3,) = train([_runs("sb3", None)])
    assert batched.timesteps == sb3.timesteps
    assert batched.steps_to_target == sb3.steps_to_target


@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=12),
    st.lists(st.integers(1, 5), min_size=12, max_size=12),
    st.floats(0.05, 1),
)
def test_refining_a_step_curve_never_moves_its_score(values, extra, target):
    # a policy after each update (at 0, 100, 200, ...), evaluated also at extra points while
    # it acts: the first policy reaching the target, and the area, are the same
    updates = [100 * k for k in range(len(values))]
    t_fine, v_fine = [], []
    for k, (t, v) in enumerate(zip(updates, values, strict=True)):
        points = 1 if k == len(values) - 1 else extra[k]
        for i in range(points):
            t_fine.append(t + i * 100 / points)
            v_fine.append(v)
    assert scoring.first_reaching(t_fine, v_fine, target) == scoring.first_reaching(
        updates, values, target
    )
    assert scoring.step_auc(t_fine, v_fine) == pytest.approx(scoring.step_auc(updates, values))


def test_the_rules_by_hand():
    t, s = [0, 1000, 2000, 3000], [0.2, 0.6, 0.95, 1.0]
    assert scoring.first_reaching(t, s, 0.9) == 2000  # not interpolated
    assert scoring.first_crossing(t, s, 0.9) == pytest.approx(1000 + 0.3 / 0.35 * 1000)
    assert math.isinf(scoring.first_reaching(t, s, 1.01))
    # the policy after update k acts over (t_k, t_k+1]: (0.2 + 0.6 + 0.95) / 3
    assert scoring.step_auc(t, s) == pytest.approx(1.75 / 3)
    assert scoring.trapezoid_auc(t, s) == pytest.approx((0.4 + 0.775 + 0.975) / 3)
    row = {"timesteps": t, "success": s, "target": 0.9}
    assert scoring.steps_to_target(row) == scoring.first_crossing(t, s, 0.9)  # no field: rb2
    assert scoring.steps_to_target({**row, "evaluation": "updates"}) == 2000
    assert scoring.steps_to_target({**row, "evaluation": "updates"}, target=0.5) == 1000


def test_the_mode_is_keyed_only_when_it_is_not_the_default():
    run = _runs("batched", ROLLOUT)
    assert "evaluation" not in key(run) and "evaluation" not in run.row()
    updates = _runs("batched", None)
    assert '"evaluation": "updates"' in key(updates) and updates.row()["evaluation"] == "updates"
    with pytest.raises(ValueError, match="--evaluation"):
        Run.of("DilutedDoors-v1", "ppo", evaluation="sometimes")


def test_a_plan_evaluated_at_updates_trains_whole_rollouts():
    hyper = load_protocol("rb2").method_hyperparameters("DilutedDoors-v1", "ppo")
    (run,) = plan(
        "DilutedDoors-v1",
        {"num_floors": 1},
        "routine_length",
        [3],
        [parse_method("ppo")],
        [0],
        budget_episodes=100,
        min_budget_steps=5000,
        eval_points=20,
        target=0.9,
        trainer="batched",
        hyperparameters={"ppo": hyper},
        evaluation="updates",
    )
    assert rollout_steps(hyper) == ROLLOUT
    assert run.budget == 4 * ROLLOUT and run.eval_every == ROLLOUT  # 5000 steps: 4 rollouts
    assert run.evaluation == "updates"
