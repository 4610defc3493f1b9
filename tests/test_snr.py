"""The signal-dilution lab: the SNR estimator, the model sampler, the closed form, the lab."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from baselines.commands import settings_of
from routine_envs import credit, snr
from routine_envs.envs import DilutedDoorsV0Env
from routine_envs.sampler import ModelSampler


def test_signal_estimate_is_unbiased_on_synthetic_gradients():
    """Known mean and covariance: the corrected ||mean||^2 is unbiased, the plug-in is not."""
    rng = np.random.default_rng(0)
    mu = np.array([0.3, -0.2, 0.1])
    scale = np.array([1.0, 2.0, 0.5])
    true_signal, true_var = mu @ mu, np.sum(scale**2)
    n, reps = 30, 4000
    corrected, plug_in, variance = [], [], []
    for _ in range(reps):
        g = mu + rng.standard_normal((n, 3)) * scale
        crit = np.zeros_like(g)
        stats = snr.moment_statistics(
            n, g.sum(0), crit.sum(0), float((g**2).sum()), 0.0, float((g**2).sum())
        )
        corrected.append(stats["signal"])
        plug_in.append(np.sum(g.mean(0) ** 2))
        variance.append(stats["variance"])
    se = np.std(corrected) / math.sqrt(reps)
    assert abs(np.mean(corrected) - true_signal) < 4 * se
    assert np.mean(plug_in) - true_signal == pytest.approx(true_var / n, rel=0.1)
    assert np.mean(variance) == pytest.approx(true_var, rel=0.02)


def test_variance_split_adds_up():
    rng = np.random.default_rng(1)
    crit = rng.standard_normal((50, 4))
    rout = rng.standard_normal((50, 4)) + crit * 0.5  # correlated parts
    g = crit + rout
    stats = snr.moment_statistics(
        50,
        g.sum(0),
        crit.sum(0),
        float((g**2).sum()),
        float((crit**2).sum()),
        float((rout**2).sum()),
    )
    assert stats["critical_variance"] == pytest.approx(np.var(crit, axis=0, ddof=1).sum())
    assert stats["routine_variance"] == pytest.approx(np.var(rout, axis=0, ddof=1).sum())
    total = stats["critical_variance"] + stats["routine_variance"] + stats["cross_variance"]
    assert total == pytest.approx(stats["variance"])
    assert stats["cross_variance"] > 0


def test_model_sampler_matches_the_environment():
    env = DilutedDoorsV0Env(num_floors=2, num_doors=3, routine_length=(0, 4), reward="fraction")
    probs = np.random.default_rng(2).dirichlet(np.ones(3), size=env.num_states)
    sampler = ModelSampler(env)
    batch = sampler.sample(probs, 20_000, 1, np.random.default_rng(3))
    returns = batch.episode_returns()
    exact = float(env.model().initial @ env.oracle(probs).v)
    assert abs(returns.mean() - exact) < 4 * returns.std() / math.sqrt(len(returns))
    assert batch.lengths.mean() == pytest.approx(2 + 2 * 2.0, rel=0.02)  # E[T] = F(1 + E[L])
    assert np.all(
        batch.critical
        == np.array([env.dynamics.is_critical(env.describe_state(int(s))) for s in batch.state_ids])
    )
    starts = batch.state_ids[batch.episode_starts[:-1]]
    assert np.all(starts == 0)
    # the Monte-Carlo critic converges to the exact values
    states = np.array([0, env.dynamics.state_id(env.describe_state(0))])
    est = sampler.rollout_values(states, probs, 20_000, np.random.default_rng(4))
    np.testing.assert_allclose(est, env.oracle(probs).v[states], atol=0.01)
    assert sampler.rollout_steps == pytest.approx(2 * 20_000 * 6, rel=0.02)
    assert snr.ModelSampler is ModelSampler  # the old path still works


def test_mc_rollout_on_the_model_and_branched_agree():
    """One estimator, two rollout sources: simulated on the exact model (by state id) and
    branched from deep copies of the live env; both converge to the TD error of the exact V."""
    from routine_envs.episodes import collect_episodes

    env = DilutedDoorsV0Env(num_floors=2, num_doors=2, routine_length=1, reward="fraction")
    table = np.random.default_rng(0).dirichlet(np.ones(2), size=env.num_states)
    batch = collect_episodes(
        env,
        lambda o, i, rng: int(rng.random() < table[i["state_id"], 1]),
        2,
        2,
        seed=0,
        keep_snapshots=True,
    )
    exact = credit.td_advantages(batch, env.oracle(table).v[batch.state_ids], 1.0, 0.0)
    context = credit.EstimatorContext(policy_table=table, sampler=ModelSampler(env), seed=1)
    model = credit.build_estimator("mc_rollout", context, num_rollouts=20_000)
    assert isinstance(model.source, credit.ModelRollouts) and model.requires == {"state_ids"}
    np.testing.assert_allclose(model(batch).advantages, exact, atol=0.02)
    rng = np.random.default_rng(2)

    def policy(observations, infos):
        ids = np.array([info["state_id"] for info in infos])
        return (rng.random(len(ids)) < table[ids, 1]).astype(int)

    branched = credit.build_estimator(
        "mc_rollout", credit.EstimatorContext(rollout_policy=policy), num_rollouts=2_000
    )
    assert isinstance(branched.source, credit.BranchedRollouts)
    assert branched.requires == {"snapshots"}
    np.testing.assert_allclose(branched(batch).advantages, exact, atol=0.06)
    with pytest.raises(ValueError, match="rollout policy"):
        credit.build_estimator("mc_rollout", credit.EstimatorContext())


def test_tabular_softmax():
    policy = snr.TabularSoftmax.shared(
        np.array([0, 0, 1]), 2, logits=np.array([[0.0, 0.0], [0.0, math.log(3)]])
    )
    np.testing.assert_allclose(policy.probs(), [[0.5, 0.5], [0.5, 0.5], [0.25, 0.75]])
    with pytest.raises(ValueError, match="row_of_state"):
        snr.TabularSoftmax(np.zeros((2, 2)), np.array([0, 2]))
    with pytest.raises(ValueError, match="logits"):
        snr.TabularSoftmax(np.zeros(3), np.array([0]))


def oracle_and_trajectory(
    env: DilutedDoorsV0Env, policy: snr.TabularSoftmax, num_groups: int, seed: int
) -> snr.SNRComparison:
    """The perfect critic and the trajectory-level estimator (baseline 1/27, the uniform
    policy's success) measured on the same ``num_groups`` single episodes."""
    return snr.measure_snr(
        env,
        policy,
        {
            "oracle": lambda s, p: credit.Oracle(env, p),
            "trajectory": credit.TrajectoryMC(baseline=1 / 27),
        },
        num_groups=num_groups,
        group_size=1,
        seed=seed,
    )


@pytest.mark.parametrize("param", ["per_state", "per_floor"])
@pytest.mark.parametrize("length", [0, 4, 12])
def test_closed_form_and_measurement_agree(length, param):
    env = DilutedDoorsV0Env(routine_length=length)
    rows = snr.floor_rows(env) if param == "per_floor" else np.arange(env.num_states)
    policy = snr.TabularSoftmax.shared(rows, 3)
    theory = snr.uniform_doors_snr(3, 3, length)
    comparison = oracle_and_trajectory(env, policy, 40_000, seed=length)
    oracle, traj = comparison.results["oracle"], comparison.results["trajectory"]

    def agrees(estimate: float, low: float, high: float, truth: float) -> bool:
        # 12 settings x 3 checks: a 99.9% interval (3.3 standard errors), not the 95% one
        return abs(estimate - truth) <= 3.3 / 1.96 * (high - low) / 2

    assert agrees(oracle.snr, oracle.snr_low, oracle.snr_high, theory["snr_oracle"])
    assert agrees(traj.snr, traj.snr_low, traj.snr_high, theory["snr_trajectory"])
    assert agrees(*comparison.ratios[("oracle", "trajectory")], theory["ratio"])
    assert (traj.snr_high - traj.snr_low) / traj.snr < 0.15  # and the interval is tight
    assert oracle.routine_variance == pytest.approx(0.0, abs=1e-12)  # the critic ignores routine
    if length > 0:
        assert traj.routine_variance > traj.critical_variance  # dilution: routine noise dominates
    assert traj.critical_variance + traj.routine_variance + traj.cross_variance == pytest.approx(
        traj.variance
    )


def test_closed_form_properties():
    cf = [snr.uniform_doors_snr(3, 3, length) for length in (0, 1, 3, 10, 50)]
    ratios = [c["ratio"] for c in cf]
    assert ratios == sorted(ratios)
    slope, _, r2 = snr.fit_loglog([c["rho"] for c in cf], ratios)
    assert -0.52 < slope < -0.49 and r2 > 0.999
    # large L: the ratio grows like rho^(-1/2) exactly (ratio^2 * rho -> constant)
    far = [snr.uniform_doors_snr(3, 3, length) for length in (10_000, 40_000)]
    assert far[0]["ratio"] ** 2 * far[0]["rho"] == pytest.approx(
        far[1]["ratio"] ** 2 * far[1]["rho"], rel=1e-3
    )
    # a noisy critic plateaus at std(R)/sigma
    plateau = snr.uniform_doors_snr(3, 3, 10**7, sigma=0.1 * math.sqrt(cf[0]["return_variance"]))
    assert plateau["ratio"] == pytest.approx(10.0, rel=1e-3)


def test_fit_loglog_recovers_a_power_law():
    x = np.array([1, 0.5, 0.1, 0.02])
    slope, intercept, r2 = snr.fit_loglog(x, 3 * x**-0.5)
    assert slope == pytest.approx(-0.5) and intercept == pytest.approx(math.log(3))
    assert r2 == pytest.approx(1.0)


def test_measure_snr_validates():
    env = DilutedDoorsV0Env(routine_length=1)
    policy = snr.TabularSoftmax.per_state(env.num_states, 3)
    with pytest.raises(ValueError, match="num_groups"):
        snr.measure_snr(env, policy, {"t": credit.TrajectoryMC()}, num_groups=10)
    with pytest.raises(ValueError, match="num_rollouts"):
        credit.MCRollout(credit.ModelRollouts(ModelSampler(env), policy.probs()), num_rollouts=0)


def test_lab_rho_law_small_run_is_resumable(tmp_path):
    from baselines.experiments.snr_lab import sweep as snr_lab

    def run(argv):
        return snr_lab.main(settings_of("snr_lab", argv))

    argv = [
        "rho-law",
        "--episodes",
        "1600",
        "--routine-lengths",
        "0",
        "5",
        "20",
        "--workers",
        "1",
        "--out",
        str(tmp_path),
    ]
    one = run([*argv, "--params", "per_state"])["rho-law"]
    assert set(one["fits"]) == {"per_state"}
    results = tmp_path / "rho_law" / "results.jsonl"
    assert len(results.read_text().splitlines()) == 3
    summary = run(argv)["rho-law"]  # both parametrizations: only per_floor is new
    assert -0.7 < summary["fits"]["per_state"]["slope"] < -0.3
    assert summary["fits"]["per_state"] == one["fits"]["per_state"]
    lines = results.read_text().splitlines()
    assert len(lines) == 6
    run(argv)  # everything is already measured: nothing is appended
    assert results.read_text().splitlines() == lines
    rows = (tmp_path / "rho_law" / "rho_law.csv").read_text().splitlines()
    assert rows[0].startswith("routine_length,rho,param,snr_oracle")
    assert (tmp_path / "rho_law" / "rho_law.png").stat().st_size > 1000
    summary_file = json.loads((tmp_path / "rho_law" / "summary.json").read_text())
    assert summary_file["paper"]["slope"] == -0.5084


@pytest.mark.parametrize("length", [0, 10, 50])
def test_the_gradient_snr_matches_the_closed_form_from_few_episodes(length):
    """``gradient_snr`` (the exact gradient's norm over the measured noise) gives the closed
    form's SNRs and their ratio from 1,024 episodes at every rho, with tight intervals."""
    env = DilutedDoorsV0Env(routine_length=length)
    policy = snr.TabularSoftmax.shared(np.arange(env.num_states), 3)
    theory = snr.uniform_doors_snr(3, 3, length)
    comparison = oracle_and_trajectory(env, policy, 1024, seed=length)
    oracle, traj = comparison.results["oracle"], comparison.results["trajectory"]
    for res, truth in ((oracle, theory["snr_oracle"]), (traj, theory["snr_trajectory"])):
        assert res.gradient_snr_low <= truth <= res.gradient_snr_high, (res, truth)
        assert res.gradient_snr_high - res.gradient_snr_low < 0.35 * truth  # a tight interval
    ratio, low, high = comparison.gradient_ratios[("oracle", "trajectory")]
    assert ratio == pytest.approx(oracle.gradient_snr / traj.gradient_snr)
    assert low <= theory["ratio"] <= high and high - low < 0.35 * theory["ratio"]


def test_the_documented_noisy_critic_formula_is_the_closed_form():
    """docs/reproducing.md's ``ratio^2`` with critic noise, evaluated as written, equals
    :func:`snr.uniform_doors_snr` (the docs once lacked the ``1/F`` on the rho term: 7.59 for
    13.15 at rho 1/51, 3 floors x 3 doors, sigma 0)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "reproducing.md").read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("ratio^2 = (Var(R)"))
    formula = line.split("=", 1)[1].split(",")[0].strip().replace("^", "**").replace("2F", "2*F")
    formula = formula.replace("Var(R)", "var_r")
    formula = re.sub(r"(?<=[\w)])\s+(?=[\w(])", "*", formula)  # a space between factors
    for floors, doors, length, sigma in [(3, 3, 50, 0.0), (2, 2, 50, 0.0), (3, 3, 9, 0.05),
                                         (1, 4, 0, 0.2), (4, 2, 20, 0.01)]:  # fmt: skip
        q = 1.0 / doors
        names = {"var_r": q**floors * (1 - q**floors), "rho": 1 / (1 + length), "q": q,
                 "F": floors, "sigma": sigma}  # fmt: skip
        documented = math.sqrt(eval(formula, {"__builtins__": {}}, names))  # our own docs' text
        exact = snr.uniform_doors_snr(floors, doors, length, sigma)["ratio"]
        assert documented == pytest.approx(exact, rel=1e-12), (floors, doors, length, sigma)


def test_the_docs_table_of_layouts_against_the_paper_is_the_closed_form():
    """docs/benchmark.md's table of every small layout (ratio at rho 1/51, slopes over the paper
    tier's and the lab's routine lengths, R^2) is what :func:`snr.uniform_doors_snr` gives."""
    from pathlib import Path

    from baselines.experiments.snr_lab.sweep import ROUTINE_LENGTHS
    from baselines.lib.protocol import load_protocol

    (paper_setting,) = load_protocol("rb2").tiers["paper"].settings
    grids = (tuple(paper_setting.values), ROUTINE_LENGTHS)  # the paper tier's L, the lab's L

    def law(floors: int, doors: int, lengths: tuple[int, ...]) -> tuple[float, float, float]:
        """The closed-form ratio at the longest L, the slope on log rho and its R^2."""
        ratios = [snr.uniform_doors_snr(floors, doors, n)["ratio"] for n in lengths]
        rho = np.array([1 / (1 + n) for n in lengths])
        slope, _, r2 = snr.fit_loglog(rho, np.array(ratios))
        return ratios[-1], slope, r2

    text = (Path(__file__).resolve().parents[1] / "docs" / "benchmark.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and " x " in line[:10]]
    assert len(rows) == 11, rows
    for row in rows:
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        floors, doors = (int(x) for x in cells[0].split(" x "))
        (ratio, *paper), (_, *lab) = (law(floors, doors, lengths) for lengths in grids)
        expected = [ratio, *paper, *lab]
        shown = [f"{x:.{len(c.split('.')[1])}f}" for x, c in zip(expected, cells[1:], strict=True)]
        assert shown == cells[1:], row  # every figure as printed, to its last digit
