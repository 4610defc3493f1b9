"""The exact noise of the perfect critic and of the trajectory advantage
(:mod:`routine_envs.exact_noise`) against brute force: every episode enumerated with its
probability, on a deterministic env, a stochastic one, and a hand-built model with rewards on
the way and a state reached by two paths; under a random policy, shared rows and a metric that
is not the identity. At the uniform policy its ratio is the lab's closed form."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import routine_envs
from routine_envs import exact_noise, snr
from routine_envs.oracle import model_from_arrays

gym.register_envs(routine_envs)


def episodes(model, probs):
    """Every episode ``(probability, [(state, action)], return)`` of the model under
    ``probs``, by depth-first search (models whose only cycles are self-loops: episodes of
    probability below 1e-30 are left out: far below the tolerance)."""
    out = []

    def walk(s, p, steps, ret):
        for i in np.flatnonzero(model.state == s):
            q = p * probs[s, model.action[i]] * model.prob[i]
            if q < 1e-30:
                continue
            path, r = [*steps, (s, int(model.action[i]))], ret + model.reward[i]
            if model.terminated[i]:
                out.append((q, path, r))
            else:
                walk(int(model.next_state[i]), q, path, r)

    for s0 in np.flatnonzero(model.initial):
        walk(int(s0), model.initial[s0], [], 0.0)
    return out


def brute_force(model, policy, weight, metric, sigma=0.0):
    """``E[g]``, ``E[g^T M g]`` and ``E_s0[m(s0)^T M m(s0)]`` with ``g = sum_t (weight(path,
    t, return) + sigma eps_t) v_t`` (``eps_t`` independent standard normal: its part of the
    second moment is ``sigma^2 sum_t v_t^T M v_t`` in each episode) and ``m(s0)`` the mean
    from each initial state."""
    probs = policy.probs()
    num_actions = probs.shape[1]
    mean, second = np.zeros(policy.num_params), 0.0
    per_start = {}
    for p, path, ret in episodes(model, probs):
        g, noise = np.zeros(policy.num_params), 0.0
        for t, (s, a) in enumerate(path):
            v = np.zeros(policy.num_params)
            row = policy.row_of_state[s]
            v[row * num_actions : (row + 1) * num_actions] = -probs[s]
            v[row * num_actions + a] += 1.0
            g += weight(path, t, ret) * v
            noise += sigma**2 * v @ metric @ v
        mean += p * g
        second += p * (g @ metric @ g + noise)
        start = path[0][0]
        per_start[start] = per_start.get(start, 0.0) + p * g
    spread = sum(m @ metric @ m / model.initial[s] for s, m in per_start.items())
    return mean, second, spread


def hand_built():
    """0 -a0-> 1 (reward 0.5) or 2 (stochastic under a1); 1 and 2 both lead to 3; 3 ends with
    reward 1 under a0, 0 under a1 (a state reached by two paths, rewards on the way); at 2,
    a0 stays with probability 0.4 (a self-loop, paying 0.05 each time)."""
    columns = np.array(
        [  # state, action, prob, next, reward, terminated
            (0, 0, 1.0, 1, 0.5, 0),
            (0, 1, 0.3, 1, 0.0, 0),
            (0, 1, 0.7, 2, -0.2, 0),
            (1, 0, 1.0, 3, 0.0, 0),
            (1, 1, 1.0, 3, 0.1, 0),
            (2, 0, 0.4, 2, 0.05, 0),
            (2, 0, 0.6, 3, 0.0, 0),
            (2, 1, 0.5, 3, 0.0, 0),
            (2, 1, 0.5, 4, 0.0, 1),
            (3, 0, 1.0, 4, 1.0, 1),
            (3, 1, 1.0, 4, 0.0, 1),
        ]
    )
    cols = [columns[:, k] for k in range(6)]
    cols = [cols[0].astype(int), cols[1].astype(int), cols[2], cols[3].astype(int), cols[4],
            cols[5].astype(bool)]  # fmt: skip
    return model_from_arrays(5, 2, 0, cols, lambda i: i)


CASES = {
    "Doors, per state": lambda: (gym.make("DilutedDoors-v1", num_floors=2, routine_length=1), None),
    "ClueDoors (stochastic), per state": lambda: (
        gym.make("ClueDoors-v0", num_floors=2, num_doors=2, routine_length=1),
        None,
    ),
    "Doors, rows shared by floor": lambda: (
        gym.make("DilutedDoors-v1", num_floors=2, routine_length=2),
        "floors",
    ),
    "hand-built, rewards on the way": lambda: (None, None),
}


@pytest.mark.parametrize("identity", [False, True], ids=["a metric", "the identity"])
@pytest.mark.parametrize("case", list(CASES))
def test_moments_equal_every_episode_enumerated(case, identity):
    """With a metric every state carries a vector of first moments; with the identity and a
    row per state only its own row (the steps of two states never share parameters; a
    self-loop's do): both paths against brute force."""
    env, rows = CASES[case]()
    model = hand_built() if env is None else env.unwrapped.model()
    rng = np.random.default_rng(3)
    if rows == "floors":
        row_of = snr.floor_rows(env.unwrapped)
        policy = snr.TabularSoftmax.shared(row_of, model.num_actions)
        policy.logits = rng.normal(size=policy.logits.shape)
    else:
        policy = snr.TabularSoftmax.per_state(
            model.num_states, model.num_actions, rng.normal(size=(model.num_states, 2))
            if env is None else rng.normal(size=(model.num_states, model.num_actions))
        )  # fmt: skip
    basis = rng.normal(size=(policy.num_params, policy.num_params + 3))
    metric = basis @ basis.T / policy.num_params  # positive definite, not the identity
    given = None if identity else metric
    if identity:
        metric = np.eye(policy.num_params)
    advantage = rng.normal(size=(model.num_states, model.num_actions))  # any per-(s, a) weight
    baseline = 0.37

    for sigma in (0.0, 0.7):  # the perfect critic, and a noisy one
        exact = exact_noise.perfect_critic_moments(model, policy, advantage, given, sigma)
        mean, second, spread = brute_force(
            model, policy, lambda path, t, ret: advantage[path[t]], metric, sigma
        )
        np.testing.assert_allclose(exact.mean, mean, rtol=1e-10, atol=1e-12)
        assert exact.second == pytest.approx(second, rel=1e-10)
        assert exact.start_norm2 == pytest.approx(spread, rel=1e-10)

    exact = exact_noise.trajectory_moments(model, policy, baseline, given)
    mean, second, spread = brute_force(model, policy, lambda path, t, ret: ret - baseline, metric)
    np.testing.assert_allclose(exact.mean, mean, rtol=1e-10, atol=1e-12)
    assert exact.second == pytest.approx(second, rel=1e-10)
    assert exact.start_norm2 == pytest.approx(spread, rel=1e-10)
    assert exact.mean_norm2 == pytest.approx(mean @ metric @ mean, rel=1e-10)


def test_both_means_are_the_exact_gradient_and_the_uniform_ratio_is_the_closed_form():
    """With the oracle's advantage and the baseline ``J`` both estimators are unbiased; at the
    uniform policy the ratio of their SNRs is :func:`routine_envs.snr.uniform_doors_snr`'s
    (3 floors x 3 doors, and the 2 x 2 layout that gives the paper's 17.4, at rho 1/51)."""
    for floors, doors in ((3, 3), (2, 2)):
        env = gym.make("DilutedDoors-v1", num_floors=floors, num_doors=doors,
                       routine_length=50).unwrapped  # fmt: skip
        model = env.model()
        policy = snr.TabularSoftmax.per_state(env.num_states, model.num_actions)
        probs = policy.probs()
        oracle = env.oracle(probs)
        grad = snr.exact_policy_gradient(env, policy)
        critic = exact_noise.perfect_critic_moments(model, policy, oracle.advantage)
        trajectory = exact_noise.trajectory_moments(model, policy, float(model.initial @ oracle.v))
        np.testing.assert_allclose(critic.mean, grad, atol=1e-14)
        np.testing.assert_allclose(trajectory.mean, grad, atol=1e-14)
        closed = snr.uniform_doors_snr(floors, doors, 50)["ratio"]
        assert critic.snr() / trajectory.snr() == pytest.approx(closed, rel=1e-10)
        assert critic.snr(8) == pytest.approx(critic.snr() * np.sqrt(8))


def test_the_sampled_lab_agrees_with_the_exact_noise():
    """The lab's sampled SNR (20,000 groups of 8, a random policy) brackets the exact one:
    the same quantity, the group's gradient the mean of its episodes'."""
    from routine_envs import credit
    from routine_envs.sampler import ModelSampler

    env = gym.make("DilutedDoors-v1", num_floors=2, routine_length=2).unwrapped
    model = env.model()
    rng = np.random.default_rng(0)
    policy = snr.TabularSoftmax.per_state(
        env.num_states, model.num_actions, rng.normal(size=(env.num_states, model.num_actions))
    )
    probs = policy.probs()
    oracle = env.oracle(probs)
    value = float(model.initial @ oracle.v)
    sampler = ModelSampler(env)
    context = credit.EstimatorContext(env=env, policy_table=probs, gamma=1.0, sampler=sampler,
                                      seed=0)  # fmt: skip
    estimators = {
        "oracle": credit.build_estimator("oracle", context),
        "trajectory_exact": credit.TrajectoryMC(baseline=value),
    }
    measured = snr.measure_snr(env, policy, estimators, num_groups=20_000, group_size=8,
                               seed=0, sampler=sampler)  # fmt: skip
    exact = {
        "oracle": exact_noise.perfect_critic_moments(model, policy, oracle.advantage),
        "trajectory_exact": exact_noise.trajectory_moments(model, policy, value),
    }
    for name, moments in exact.items():
        result = measured.results[name]
        assert result.gradient_snr_low <= moments.snr(8) <= result.gradient_snr_high, name


LAB_CASES = {
    "Doors, a mixture policy": ["--policy", 'mixture{"eps": 0.3}', "--episodes", "4000"],
    # 48 initial states, which a group's episodes share, and action masks
    "CodeFix": ["--env-id", "CodeFix-v1", "--episodes", "20000"],
}


@pytest.mark.parametrize("case", list(LAB_CASES))
def test_the_lab_prints_the_exact_noise_beside_the_sampled_one(tmp_path, capsys, case):
    """``snr_lab measure``: the perfect critic, a noisy one and the trajectory advantage with
    the exact baseline have an exact SNR per episode inside the sampled interval (with the
    spread between initial states a group shares on CodeFix); an estimator without one has
    none, and the table says so."""
    from baselines.commands import settings_of
    from baselines.experiments.snr_lab import measure

    args = settings_of("snr_lab measure", [
        "--routine-lengths", "2" if case == "CodeFix" else "5", "--estimators",
        "trajectory_exact", "oracle", "oracle:1", "trajectory_mc", *LAB_CASES[case],
        "--workers", "1", "--out", str(tmp_path / "lab"),
    ])  # fmt: skip
    measure.main(args)
    (record,) = [json.loads(line) for line in (tmp_path / "lab" / "results.jsonl").open()]
    results = {r["estimator"]: r for r in record["results"]}
    for name in ("trajectory_exact", "oracle", "oracle:1"):
        r = results[name]
        assert r["snr_low"] <= r["snr_exact"] <= r["snr_high"], name
    assert results["trajectory_mc"]["snr_exact"] is None
    assert "SNR per episode, exact noise" in capsys.readouterr().out


def test_the_dense_solve_of_a_model_with_cycles_is_the_sweep(monkeypatch):
    """A model with cycles longer than a self-loop is solved densely, ``(I - P_pi) X = b``:
    forced on models the backward sweep solves, it gives the same moments."""
    from routine_envs.exact_noise import _Recursion

    env = gym.make("ClueDoors-v0", num_floors=2, num_doors=2, routine_length=1).unwrapped
    model = env.model()
    rng = np.random.default_rng(5)
    policy = snr.TabularSoftmax.per_state(
        env.num_states, model.num_actions, rng.normal(size=(env.num_states, model.num_actions))
    )
    advantage = rng.normal(size=(env.num_states, model.num_actions))
    swept = (exact_noise.perfect_critic_moments(model, policy, advantage, sigma=0.3),
             exact_noise.trajectory_moments(model, policy, 0.2))  # fmt: skip
    sweep = _Recursion._sweep

    def no_order(self):
        sweep(self)
        self.order = None

    monkeypatch.setattr(_Recursion, "_sweep", no_order)
    dense = (exact_noise.perfect_critic_moments(model, policy, advantage, sigma=0.3),
             exact_noise.trajectory_moments(model, policy, 0.2))  # fmt: skip
    for a, b in zip(swept, dense, strict=True):
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-10, atol=1e-13)
        assert a.second == pytest.approx(b.second, rel=1e-10)
