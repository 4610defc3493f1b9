"""The 2025-26 credit-assignment methods (issue 39): ``empg``, ``spa`` and ``asymmetric_critic``
pinned to batches computed by hand, their declared fields, their identities with existing
estimators where their parameters make them one, and a short batched-trainer run each."""

from __future__ import annotations

import math

import numpy as np
import pytest

from routine_envs import credit
from routine_envs.asymmetric_critic import AsymmetricCritic
from routine_envs.entropy_modulated import EMPG
from routine_envs.episodes import EpisodeBatch
from routine_envs.progress_redistribution import SPA


def batch_of(rewards, groups=None, **per_step):
    lengths = [len(r) for r in rewards]
    fields = {k: np.concatenate([np.asarray(x) for x in v]) for k, v in per_step.items()}
    return EpisodeBatch(
        rewards=np.concatenate([np.asarray(r, float) for r in rewards]),
        episode_starts=np.concatenate([[0], np.cumsum(lengths)]),
        groups=np.asarray(groups if groups is not None else [0] * len(lengths)),
        **fields,
    )


# ----------------------------------------------------------------------------------- empg
def test_empg_on_a_batch_computed_by_hand():
    # two episodes of one group, returns 1 and 0: A = +0.5, -0.5
    batch = batch_of([[0, 1], [0, 0, 0]], entropies=[[0.0, 1.0], [0.5, 1.0, 0.0]])
    h = np.array([0.0, 1.0, 0.5, 1.0, 0.0])  # min 0, max 1: already normalised
    k, k_f, zeta = 2.0, 3.0, 0.25
    w = np.exp(-k * h)
    g = w / w.mean()
    outcome = np.array([0.5, 0.5, -0.5, -0.5, -0.5])
    # f_t: the next step's entropy in the same episode; none after a last step
    f = np.array([math.exp(-k_f * 1.0), 0.0, math.exp(-k_f * 1.0), math.exp(-k_f * 0.0), 0.0])
    got = EMPG(k=k, k_f=k_f, zeta=zeta)(batch).advantages
    np.testing.assert_allclose(got, g * outcome + zeta * f)


def test_empg_min_max_normalises_over_the_batch():
    raw = [[0.2, 1.2], [0.7, 1.2, 0.2]]  # = 0.2 + the hand batch's entropies
    batch = batch_of([[0, 1], [0, 0, 0]], entropies=raw)
    shifted = batch_of([[0, 1], [0, 0, 0]], entropies=[[0.0, 1.0], [0.5, 1.0, 0.0]])
    np.testing.assert_allclose(EMPG()(batch).advantages, EMPG()(shifted).advantages)


def test_empg_without_modulation_is_the_trajectory_advantage():
    rng = np.random.default_rng(0)
    lengths = [3, 5, 2, 4]
    batch = batch_of(
        [rng.integers(0, 2, n) for n in lengths],
        groups=[0, 0, 1, 1],
        entropies=[rng.random(n) for n in lengths],
    )
    want = credit.TrajectoryMC()(batch).advantages
    np.testing.assert_allclose(EMPG(k=0.0, zeta=0.0)(batch).advantages, want)
    # equal entropies everywhere: g = 1, and the bonus is the constant zeta off the last steps
    flat = batch_of([[1, 0], [0, 0]], entropies=[[0.3, 0.3], [0.3, 0.3]])
    bonus = np.array([0.5, 0, 0.5, 0])
    trajectory = credit.TrajectoryMC()(flat).advantages
    np.testing.assert_allclose(EMPG(zeta=0.5)(flat).advantages, trajectory + bonus)


def test_empg_declares_the_entropies_and_refuses_bad_arguments():
    record = credit.declare(credit.build_estimator('empg{"k": 2}'))
    assert record.requires == {"entropies"} and not record.trains_critic
    with pytest.raises(ValueError, match="entropies"):
        EMPG()(batch_of([[1]]))
    with pytest.raises(ValueError, match="zeta"):
        EMPG(zeta=-1.0)


# ------------------------------------------------------------------------- asymmetric critic
def test_the_asymmetric_critic_is_used_before_it_is_fitted_then_learns_each_state():
    critic = AsymmetricCritic(gamma=1.0, lam=1.0, alpha=0.5)
    first = batch_of([[0, 1], [0, 0]], state_ids=[[7, 8], [7, 9]])
    # nothing fitted yet: V = 0 everywhere, so A_t = G_t (lambda 1)
    np.testing.assert_allclose(critic(first).advantages, [1, 1, 0, 0])
    # fitted on it: V(7) = mean(1, 0) = 0.5 (steps 1, then 1/2), V(8) = 1, V(9) = 0
    np.testing.assert_allclose(critic.values(np.array([7, 8, 9, 5])), [0.5, 1.0, 0.0, 0.0])
    second = batch_of([[0, 1]], state_ids=[[7, 8]])
    np.testing.assert_allclose(critic(second).advantages, [0.5, 0.0])  # G - V
    # third visit of 7 steps by alpha = 0.5 (not 1/3): 0.5 + 0.5 (1 - 0.5)
    assert critic.values(np.array([7]))[0] == pytest.approx(0.75)


def test_the_asymmetric_critic_at_lambda_0_gives_one_step_td_errors():
    critic = AsymmetricCritic(gamma=1.0, lam=0.0, alpha=1.0)
    critic(batch_of([[0, 0, 1]], state_ids=[[1, 2, 3]]))  # V(1) = V(2) = V(3) = 1
    got = critic(batch_of([[0, 0, 0]], state_ids=[[1, 2, 3]])).advantages
    # delta_t = r_t + V(s_{t+1}) - V(s_t): 0, 0, then 0 + 0 - 1 at the end
    np.testing.assert_allclose(got, [0.0, 0.0, -1.0])


def test_the_asymmetric_critic_declares_its_privileged_field():
    record = credit.declare(credit.build_estimator("asymmetric_critic"))
    assert record.requires == {"state_ids"}
    with pytest.raises(ValueError, match="lam"):
        AsymmetricCritic(lam=2.0)


# ------------------------------------------------------------------------------------- spa
def test_spa_redistributes_each_return_over_its_pairs_by_ridge_regression():
    # pairs: (anchor, action). Episode 1 visits (1,0) then (2,1), return 1; episode 2 visits
    # (1,0) then (2,0), return 0. Least squares with three unknowns and two equations plus a
    # tiny ridge: the minimum-norm solution c = (1/3, 2/3, -1/3) for ((1,0), (2,1), (2,0)).
    batch = batch_of(
        [[0, 1], [0, 0]],
        anchors=[[1, 2], [1, 2]],
        actions=[[0, 1], [0, 0]],
        values=[[0.0, 0.0], [0.0, 0.0]],
    )
    spa = SPA(gamma=1.0, gae_lambda=1.0, ridge=1e-9)
    result = spa(batch)
    c = spa.contributions(batch)
    np.testing.assert_allclose(c, [1 / 3, 2 / 3, 1 / 3, -1 / 3], atol=1e-6)
    # each episode's contributions sum to its return
    np.testing.assert_allclose(np.add.reduceat(c, [0, 2]), [1.0, 0.0], atol=1e-6)
    # values 0, lambda 1: A_t = the redistributed return-to-go; returns = A + V
    np.testing.assert_allclose(result.advantages, [1.0, 2 / 3, 0.0, -1 / 3], atol=1e-6)
    np.testing.assert_allclose(result.returns, result.advantages)


def test_spa_steps_from_its_previous_model_and_names_a_pair_never_seen_zero():
    # one pair, ridge 1: c1 = argmin (c - 1)^2 + (c - 0)^2 = 1/2, then after a batch of return 0
    # c2 = argmin (c - 0)^2 + (c - 1/2)^2 = 1/4
    spa = SPA(ridge=1.0)
    one = batch_of([[1]], anchors=[[4]], actions=[[0]], values=[[0.0]])
    zero = batch_of([[0]], anchors=[[4]], actions=[[0]], values=[[0.0]])
    spa(one)
    assert spa.contributions(one)[0] == pytest.approx(1 / 2, abs=1e-9)
    spa(zero)
    assert spa.contributions(one)[0] == pytest.approx(1 / 4, abs=1e-9)
    # the batch's error is a mean over its episodes: two episodes of return 0 pull as one does
    spa(batch_of([[0], [0]], anchors=[[4], [4]], actions=[[0], [0]], values=[[0.0], [0.0]]))
    # argmin (1/2)(2 c^2) + (c - 1/4)^2 = argmin c^2 + (c - 1/4)^2: c = 1/8
    assert spa.contributions(one)[0] == pytest.approx(1 / 8, abs=1e-9)
    other = batch_of([[0]], anchors=[[5]], actions=[[0]], values=[[0.0]])
    assert spa.contributions(other)[0] == 0.0


def test_spa_refuses_more_pairs_than_it_holds():
    spa = SPA(max_pairs=2)
    batch = batch_of([[0, 0, 1]], anchors=[[1, 2, 3]], actions=[[0, 0, 0]], values=[[0, 0, 0]])
    with pytest.raises(ValueError, match="max_pairs=2"):
        spa(batch)
    record = credit.declare(credit.build_estimator("spa"))
    assert record.requires == {"anchors", "actions", "values"} and record.trains_critic


def test_a_training_run_of_spa_reads_no_privileged_field_and_the_asymmetric_critic_does():
    """A trainer fills ``values`` with the learner's predictions (privileged only where exact,
    as in the lab): spa's runs are label-free; the asymmetric critic reads the state ids."""
    from baselines.lib.privileged import build_privileged
    from baselines.lib.trainers import training_privileged

    def row(name):
        return {
            "method": name,
            "estimator": {"name": name, "kwargs": {}},
            "env_id": "DilutedDoors-v1",
            "trainer": "batched",
            "hyperparameters": {"gamma": 1.0, "gae_lambda": 0.95},
        }

    assert build_privileged(row("spa")) == ()
    assert build_privileged(row("asymmetric_critic")) == ("state_ids",)
    spa = credit.declare(credit.build_estimator("spa"))
    assert spa.privileged == ("values",)  # what the lab, whose values are exact, marks
    assert training_privileged(spa) == ()
