"""The open benchmark API: outside estimators everywhere, the batch's new fields, the lab for any
env and policy, and the exact bias beside the SNR."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import routine_envs
from baselines.commands import settings_of
from baselines.lib import config, provenance, specs
from routine_envs import credit, plugins, snr
from routine_envs.sampler import ModelSampler
from tests import children

gym.register_envs(routine_envs)
ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- specs
def test_parse_spec_and_load_object():
    spec = plugins.parse_spec('gigpo{"omega": 0.5}')
    assert (spec.target, spec.kwargs, spec.is_import_path) == ("gigpo", {"omega": 0.5}, False)
    spec = plugins.parse_spec("routine_envs.credit:GiGPO")
    assert spec.is_import_path and plugins.load_object(spec.target) is credit.GiGPO
    with pytest.raises(ValueError, match="not valid JSON"):
        plugins.parse_spec("gigpo{omega: 1}")
    with pytest.raises(ValueError, match=r"an import path is 'package\.module:Name'"):
        plugins.parse_spec("my_module:")
    with pytest.raises(ValueError, match="cannot import module 'no_such_module_x'"):
        plugins.load_object("no_such_module_x:Thing")
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        plugins.load_object("routine_envs.credit:Nope")


def write_module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source))


OUTSIDE = """
    from dataclasses import dataclass
    from typing import ClassVar

    import numpy as np

    from routine_envs import credit


    @dataclass
    class Scaled:
        '''The exact advantage times ``scale``: its expected gradient is scale * grad J.'''

        env: object
        policy: object
        scale: float = 0.72
        name: ClassVar[str] = "scaled_oracle"
        requires: ClassVar[frozenset] = frozenset({"state_ids", "actions"})
        trains_critic: ClassVar[bool] = False
        group_independent: ClassVar[bool] = True
        context_fields: ClassVar[dict] = {"env": "env", "policy": "policy_table"}

        @classmethod
        def from_context(cls, context, **kwargs):
            return cls(context.env, context.policy_table, **kwargs)

        def __call__(self, batch):
            exact = credit.Oracle(self.env, self.policy)(batch).advantages
            return credit.Advantages(self.scale * exact)


    class BatchMean:
        '''R_i - mean(R) over the whole input: pools over every group it is given.'''

        name = "batch_mean"
        requires = frozenset()
        trains_critic = False

        def __call__(self, batch):
            returns = batch.episode_returns()
            return credit.Advantages(np.repeat(returns - returns.mean(), batch.lengths))


    class NeedsSnapshots:
        name = "needs_snapshots"
        requires = frozenset({"snapshots"})
        trains_critic = False

        def __call__(self, batch):
            raise AssertionError("never called")


    class NotAnEstimator:
        pass
"""


@pytest.fixture
def outside(tmp_path, monkeypatch):
    write_module(tmp_path, "outside_estimators", OUTSIDE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("outside_estimators", None)


def test_outside_estimator_builds_from_spec_with_arguments(outside):
    env = gym.make("DilutedDoors-v1", num_floors=2, num_doors=2, routine_length=1).unwrapped
    table = np.full((env.num_states, 2), 0.5)
    context = credit.EstimatorContext(env=env, policy_table=table)
    est = credit.build_estimator('outside_estimators:Scaled{"scale": 0.5}', context)
    assert est.scale == 0.5 and est.env is env
    with pytest.raises(ValueError, match="is not an advantage estimator: it lacks"):
        credit.build_estimator("outside_estimators:NotAnEstimator", context)
    with pytest.raises(ValueError, match="cannot import module 'outside_estimatorz'"):
        credit.build_estimator("outside_estimatorz:Scaled", context)
    # methods and run keys: the spec resolves, the code fingerprint covers the whole module
    assert specs.parse_method('outside_estimators:Scaled{"scale": 0.5}').kwargs == {"scale": 0.5}
    identity = provenance.estimator_identity("outside_estimators:Scaled", {"scale": 0.3})
    assert identity["kwargs"] == {"scale": 0.3} and len(identity["code"]) == 16
    before = identity["code"]
    (outside / "outside_estimators.py").write_text(
        (outside / "outside_estimators.py").read_text() + "\nHELPER = 1\n"
    )
    sys.modules.pop("outside_estimators")
    assert provenance.estimator_identity("outside_estimators:Scaled")["code"] != before
    assert provenance.method_label('gigpo{"omega": 0.5}') == 'gigpo{"omega": 0.5}'
    hyper = config.load_hyperparameters("DilutedDoors-v1", 'mc_rollout{"num_rollouts": 3}')
    assert hyper["estimator_kwargs"]["num_rollouts"] == 3


def test_unknown_method_and_source_that_cannot_provide(outside):
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        specs.parse_method("nope")
    env = gym.make("DilutedDoors-v1", num_floors=2, num_doors=2, routine_length=1).unwrapped
    policy = snr.TabularSoftmax.per_state(env.num_states, 2)
    est = credit.build_estimator("outside_estimators:NeedsSnapshots")
    with pytest.raises(ValueError, match=r"requires batch fields \['snapshots'\], which the SNR"):
        snr.measure_snr(env, policy, {"x": est}, num_groups=40, group_size=2)


# ----------------------------------------------------------------------- batch fields
def test_sampler_batch_has_log_probs_entropies_and_observations():
    env = gym.make("CodeFix-v1", routine_length=3).unwrapped
    rng = np.random.default_rng(0)
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions)
    logits = policy.logits + rng.normal(size=policy.logits.shape)
    probs = snr.TabularSoftmax.per_state(env.num_states, env.num_actions, logits).probs()
    batch = ModelSampler(env).sample(probs, 20, 2, rng, observations=True)
    np.testing.assert_allclose(np.exp(batch.log_probs), probs[batch.state_ids, batch.actions])
    expected = -(probs * np.log(probs)).sum(axis=1)[batch.state_ids]
    np.testing.assert_allclose(batch.entropies, expected)
    for i in (0, batch.num_steps // 2, batch.num_steps - 1):
        state = env.dynamics.state_from_id(int(batch.state_ids[i]))
        np.testing.assert_array_equal(batch.observations[i], env.dynamics.observe(state))
    groups = batch.split_groups()
    assert len(groups) == 20 and sum(g.num_steps for g in groups) == batch.num_steps
    np.testing.assert_array_equal(np.concatenate([g.log_probs for g in groups]), batch.log_probs)


def test_trainer_gives_entropies_and_observations_to_its_estimator():
    from stable_baselines3.common.env_util import make_vec_env

    from baselines.lib.trajectory_ppo import TrajectoryAdvantagePPO

    seen = {}

    class Probe:
        name = "probe"
        requires = frozenset({"entropies", "log_probs", "observations"})
        trains_critic = False

        def __call__(self, batch):
            seen["batch"] = batch
            return credit.TrajectoryMC()(batch)

    venv = make_vec_env("DilutedDoors-v1", n_envs=4, env_kwargs={"routine_length": 1})
    model = TrajectoryAdvantagePPO(
        "MlpPolicy", venv, estimator=Probe(), n_steps=16, batch_size=32, seed=0, device="cpu"
    )
    model.learn(64)
    batch = seen["batch"]
    assert batch.observations.shape == (batch.num_steps, *venv.observation_space.shape)
    assert np.all(batch.log_probs <= 0) and np.all(batch.entropies > 0)
    assert np.all(batch.entropies <= np.log(3) + 1e-6)  # 3 doors


# ---------------------------------------------------------------------- bias and SNR
@pytest.fixture(scope="module")
def doors_lab():
    env = gym.make("DilutedDoors-v1", num_floors=2, num_doors=3, routine_length=2).unwrapped
    policy = snr.TabularSoftmax.per_state(env.num_states, 3)
    probs = policy.probs()
    sampler = ModelSampler(env)
    values = env.oracle(probs)
    context = credit.EstimatorContext(
        env=env, policy_table=probs, sampler=sampler, gamma=1.0, gae_lambda=0.95, seed=1
    )
    return env, policy, probs, sampler, values, context


def test_exact_policy_gradient_matches_finite_differences(doors_lab):
    env, policy, *_ = doors_lab
    rng = np.random.default_rng(4)
    logits = rng.normal(size=policy.logits.shape)
    pol = snr.TabularSoftmax.per_state(env.num_states, 3, logits)
    grad = snr.exact_policy_gradient(env, pol)
    model = env.model()

    def value(x: np.ndarray) -> float:
        p = snr.TabularSoftmax.per_state(env.num_states, 3, x.reshape(logits.shape)).probs()
        return float(model.initial @ env.oracle(p).v)

    for k in rng.choice(logits.size, 6, replace=False):
        step = np.zeros(logits.size)
        step[k] = 1e-5
        numeric = (value(logits.ravel() + step) - value(logits.ravel() - step)) / 2e-5
        assert abs(numeric - grad[k]) < 1e-7


def test_bias_reads_zero_for_unbiased_estimators_and_the_scale_for_scaled(doors_lab, outside):
    env, policy, _, sampler, values, context = doors_lab
    j = float(env.model().initial @ values.v)
    group_size = 4
    estimators = {
        "rloo": credit.build_estimator("rloo", context),
        "oracle": credit.build_estimator("oracle", context),
        "gae": credit.build_estimator("gae", context),
        "trajectory_exact": credit.TrajectoryMC(baseline=j),
        "trajectory_mc": credit.build_estimator("trajectory_mc", context),
        "scaled": credit.build_estimator('outside_estimators:Scaled{"scale": 0.72}', context),
    }
    result = snr.measure_snr(
        env,
        policy,
        estimators,
        num_groups=6000,
        group_size=group_size,
        seed=3,
        sampler=sampler,
        values=values.v,
    ).results
    for name in ("rloo", "oracle", "gae", "trajectory_exact"):
        r = result[name]
        assert r.relative_bias_low == 0.0 and r.relative_bias < 0.08, (name, r)
        assert r.cosine_low <= 1.0 <= r.cosine_high + 1e-9, (name, r)
    # the group mean includes the episode itself: E g = (G - 1) / G grad J
    r = result["trajectory_mc"]
    assert r.relative_bias_low <= 1 / group_size <= r.relative_bias_high, r
    assert r.relative_bias_low > 0.1
    r = result["scaled"]
    assert r.relative_bias_low <= 0.28 <= r.relative_bias_high, r
    assert abs(r.cosine - 1) < 1e-3  # a scaled exact gradient points the right way
    # the perfect critic has the smallest error
    assert result["oracle"].mse < min(result[n].mse for n in ("rloo", "trajectory_exact", "gae"))


@pytest.mark.parametrize("chunk", [7, 4096])
def test_a_pooled_estimator_gets_its_one_group_snr_whatever_the_chunk(doors_lab, outside, chunk):
    env, policy, _, sampler, _, _ = doors_lab
    pooled = credit.build_estimator("outside_estimators:BatchMean")
    comparison = snr.measure_snr(
        env,
        policy,
        {"pooled": pooled, "trajectory_mc": credit.TrajectoryMC()},
        num_groups=400,
        group_size=4,
        seed=0,
        sampler=sampler,
        chunk_groups=chunk,
    )
    # on one group the batch mean is the group mean: the same advantages, the same SNR
    a, b = comparison.results["pooled"], comparison.results["trajectory_mc"]
    assert a.snr == pytest.approx(b.snr, rel=1e-12)
    assert a.relative_bias == pytest.approx(b.relative_bias, rel=1e-9, abs=1e-12)


# --------------------------------------------------------------------------- the lab CLI
def run(args: list[str], cwd: Path, extra_path: Path | None = None, timeout: int = 600):
    env = dict(os.environ)
    paths = [str(p) for p in (extra_path, ROOT) if p is not None]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    return children.run([sys.executable, *args], cwd=cwd, env=env, timeout=timeout)


def test_lab_measures_an_outside_estimator_on_codefix_under_a_saved_policy(tmp_path, outside):
    env = gym.make("CodeFix-v1", routine_length=2).unwrapped
    table = env.masked_uniform_policy()
    np.save(tmp_path / "policy.npy", table)
    out = tmp_path / "lab"
    proc = run(
        [
            "-m",
            "baselines",
            "snr_lab",
            "measure",
            "--env-id",
            "CodeFix-v1",
            "--routine-lengths",
            "2",
            "--estimators",
            "rloo",
            "outside_estimators:BatchMean",
            "--policy",
            str(tmp_path / "policy.npy"),
            "--episodes",
            "640",
            "--workers",
            "1",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        extra_path=outside,
    )
    assert proc.returncode == 0, proc.describe()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["density_value"] for r in records] == [2]
    assert records[0]["policy"]["sha256"]
    names = {r["estimator"] for rec in records for r in rec["results"]}
    assert names == {"rloo", "outside_estimators:BatchMean"}
    assert (out / "measure.png").stat().st_size > 0 and (out / "measure.csv").exists()
    # a rerun does nothing; a bad policy is one line naming --policy, exit status 2
    again = run(
        ["-m", "baselines", "snr_lab", "measure", *proc.args[5:]], cwd=tmp_path, extra_path=outside
    )
    assert "1 already in" in again.stdout
    # a table fits one size of the env: refused before any work where it does not
    other = run(
        ["-m", "baselines", "snr_lab", "measure", *proc.args[5:], "--routine-lengths", "2", "4"],
        cwd=tmp_path,
        extra_path=outside,
    )
    assert other.returncode == 2 and "a table of shape" in other.stderr, other.describe()
    bad = run(
        ["-m", "baselines", "snr_lab", "measure", "--policy", "nope.txt", "--out", str(out)],
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "--policy" in bad.stderr, bad.describe()


def test_outside_estimator_trains_through_compare_from_the_docs_example(tmp_path):
    """docs/estimators.md's module and command, as written, with a short budget."""
    text = (ROOT / "docs" / "estimators.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    module = next(b for b in blocks if b.startswith("# my_estimators.py"))
    (tmp_path / "my_estimators.py").write_text(module)
    commands = [b.split("```", 1)[0] for b in text.split("```bash\n")[1:]]
    compare = next(line for b in commands for line in b.splitlines() if "baselines compare" in line)
    import shlex

    words = shlex.split(compare)
    assert words[0] == "PYTHONPATH=." and words[1] == "python"
    args = [*words[2:], "--budget-episodes", "40", "--min-budget-steps", "1100"]
    args += ["--eval-points", "2", "--workers", "2"]
    proc = run(args, cwd=tmp_path, extra_path=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.describe()
    records = [
        json.loads(line)
        for line in (tmp_path / "results/compare/mine/results.jsonl").read_text().splitlines()
    ]
    mine = [r for r in records if r["method"].startswith("my_estimators:")]
    assert len(mine) == 2 and {r["seed"] for r in mine} == {0, 1}
    assert mine[0]["estimator"]["name"] == "my_estimators:EntropyWeightedMC"
    assert mine[0]["estimator"]["kwargs"] == {"power": 1.0}
    assert all(r["steps_trained"] >= 1024 for r in mine)  # at least one update ran


def test_lab_measures_a_saved_sb3_policy_through_its_jacobian(tmp_path):
    from stable_baselines3 import PPO

    from baselines.experiments.snr_lab import measure

    env_kwargs = {"num_floors": 2, "num_doors": 2}
    model = PPO(
        "MlpPolicy",
        gym.make("DilutedDoors-v1", routine_length=1, **env_kwargs),
        policy_kwargs={"net_arch": [8]},
        seed=0,
        device="cpu",
    )
    model.save(tmp_path / "policy.zip")
    args = settings_of(
        "snr_lab measure",
        [
            "--env-kwargs",
            json.dumps(env_kwargs),
            "--routine-lengths",
            "1",
            "--estimators",
            "oracle",
            "trajectory_exact",
            "--policy",
            str(tmp_path / "policy.zip"),
            "--episodes",
            "640",
            "--workers",
            "1",
            "--out",
            str(tmp_path / "out"),
        ],
    )
    rows = measure.main(args)["rows"]
    assert {r["estimator"] for r in rows} == {"oracle", "trajectory_exact"}
    oracle = next(r for r in rows if r["estimator"] == "oracle")
    assert oracle["relative_bias_low"] == 0.0 and oracle["snr"] > 0
    # the network's policy is not the uniform one: its J differs from the uniform policy's
    (record,) = [json.loads(x) for x in (tmp_path / "out/results.jsonl").read_text().splitlines()]
    uniform = gym.make("DilutedDoors-v1", routine_length=1, **env_kwargs).unwrapped
    j_uniform = float(uniform.model().initial @ uniform.oracle(uniform.masked_uniform_policy()).v)
    assert record["J"] != pytest.approx(j_uniform, abs=1e-6)
    assert record["policy"]["sha256"]
