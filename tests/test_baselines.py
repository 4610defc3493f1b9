"""Baselines: TrajectoryAdvantagePPO's collection and critic handling, learning, configs,
the resumable comparison runner and its analysis."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import scipy.stats
import torch as th
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.env_util import make_vec_env

from baselines.commands import settings_of
from baselines.experiments.compare import sweep as compare
from baselines.experiments.train.command import TrainArgs, main, run_of
from baselines.lib import curves as analysis
from baselines.lib import stats
from baselines.lib.config import load_hyperparameters
from baselines.lib.results import ResultsFile
from baselines.lib.sb3_trainer import build
from baselines.lib.trajectory_ppo import (
    TrajectoryAdvantageMaskablePPO,
    TrajectoryAdvantagePPO,
    policy_table,
)
from routine_envs import credit
from routine_envs.envs import DilutedDoorsV0Env
from tests import children

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(
    n_steps=32,
    batch_size=64,
    n_epochs=2,
    learning_rate=1e-3,
    gamma=1.0,
    verbose=0,
    policy_kwargs={"net_arch": [16]},
    device="cpu",
)


def collect_once(algo):
    """One rollout, as learn() would run it."""
    algo._setup_learn(1, callback=None)
    callback = CallbackList([])
    callback.init_callback(algo)
    assert algo.collect_rollouts(algo.env, callback, algo.rollout_buffer, algo.n_steps)
    return algo.rollout_buffer, algo._last_batch, algo._last_advantages


def test_critic_free_estimator_leaks_no_value_even_with_time_limit_truncation():
    """SB3's PPO bootstraps gamma * V(terminal obs) into truncated steps' rewards; here the
    stored values/returns stay 0 and advantages do not depend on the value head at all."""
    env_kwargs = {"routine_length": 6}
    buffers = []
    for perturb in (False, True):
        venv = make_vec_env(
            "DilutedDoors-v0",
            n_envs=4,
            seed=0,
            env_kwargs=env_kwargs,
            wrapper_class=gym.wrappers.TimeLimit,
            wrapper_kwargs={"max_episode_steps": 10},
        )
        algo = TrajectoryAdvantagePPO(
            "MlpPolicy", venv, estimator="trajectory_mc", seed=3, vf_coef=0.5, **SMALL
        )
        assert algo.vf_coef == 0.0
        if perturb:
            with th.no_grad():
                for p in algo.policy.value_net.parameters():
                    p.add_(100.0)
        buf, batch, result = collect_once(algo)
        assert batch.truncated.all()  # every episode was cut by the time limit
        assert np.all(buf.values == 0.0) and np.all(buf.returns == 0.0)
        np.testing.assert_array_equal(buf.advantages[:, 0], result.advantages)
        np.testing.assert_array_equal(result.advantages, credit.TrajectoryMC()(batch).advantages)
        buffers.append(buf.advantages.copy())
    np.testing.assert_array_equal(buffers[0], buffers[1])


def test_gae_estimator_trains_critic_and_bootstraps_truncated_episodes():
    venv = make_vec_env(
        "DilutedDoors-v0",
        n_envs=2,
        seed=0,
        env_kwargs={"routine_length": 6},
        wrapper_class=gym.wrappers.TimeLimit,
        wrapper_kwargs={"max_episode_steps": 10},
    )
    algo = TrajectoryAdvantagePPO("MlpPolicy", venv, estimator="gae", seed=0, **SMALL)
    assert algo.vf_coef == 0.5
    buf, batch, _ = collect_once(algo)
    assert batch.truncated.all() and np.all(batch.bootstrap_values != 0.0)
    np.testing.assert_allclose(buf.values[:, 0], batch.values, rtol=1e-6)
    expected = credit.GAE(gamma=1.0, gae_lambda=0.95)(batch)
    np.testing.assert_allclose(buf.advantages[:, 0], expected.advantages, rtol=1e-5)
    np.testing.assert_allclose(buf.returns[:, 0], expected.returns, rtol=1e-5)


def test_groups_share_initial_state_and_environment_randomness():
    venv = make_vec_env("DilutedDoors-v0", n_envs=4, seed=0, env_kwargs={"routine_length": (0, 9)})
    algo = TrajectoryAdvantagePPO("MlpPolicy", venv, estimator="gigpo", seed=0, **SMALL)
    _, batch, _ = collect_once(algo)
    assert batch.num_steps >= algo.n_steps * 4
    groups = batch.group_index()
    assert np.all(np.bincount(groups) == 4)
    first_ids = batch.state_ids[batch.episode_starts[:-1]]
    assert len(set(first_ids)) == 1
    lengths = batch.lengths.reshape(-1, 4)
    assert np.all(lengths == lengths[:, :1]), "members of a group see the same corridor draws"
    assert len(set(lengths[:, 0])) > 1, "different groups draw different corridors"


def test_buffer_holds_collected_steps_in_order():
    venv = make_vec_env("DilutedDoors-v0", n_envs=2, seed=0, env_kwargs={"routine_length": 1})
    algo = TrajectoryAdvantagePPO("MlpPolicy", venv, estimator="routine_masked", seed=0, **SMALL)
    buf, batch, result = collect_once(algo)
    assert buf.buffer_size == batch.num_steps and buf.n_envs == 1
    np.testing.assert_array_equal(buf.actions[:, 0, 0], batch.actions)
    np.testing.assert_array_equal(buf.episode_starts[batch.episode_starts[:-1], 0], 1.0)
    assert buf.episode_starts.sum() == batch.num_episodes
    # observations are those of the states: the door flag matches the critical annotation here
    doors = buf.observations[:, 0, 3] == 1.0
    np.testing.assert_array_equal(doors[batch.critical], True)
    np.testing.assert_array_equal(result.advantages[~batch.critical], 0.0)
    # log-probs are those of the stored actions under the collecting policy
    with th.no_grad():
        obs = th.as_tensor(buf.observations[:, 0])
        _, logp, _ = algo.policy.evaluate_actions(obs, th.as_tensor(batch.actions))
    np.testing.assert_allclose(buf.log_probs[:, 0], logp.numpy(), rtol=1e-5, atol=1e-6)


def test_oracle_and_mc_rollout_estimators_run_inside_training():
    for name, kwargs in (("oracle", {}), ("mc_rollout", {"num_rollouts": 1})):
        venv = make_vec_env(
            "DilutedDoors-v0", n_envs=2, seed=0, env_kwargs={"routine_length": 1, "num_floors": 2}
        )
        algo = TrajectoryAdvantagePPO(
            "MlpPolicy", venv, estimator=name, estimator_kwargs=kwargs, seed=0, **SMALL
        )
        _, batch, result = collect_once(algo)
        if name == "oracle":
            env = algo.env.envs[0]
            expected = env.unwrapped.oracle(policy_table(algo.policy, env)).advantage
            np.testing.assert_allclose(
                result.advantages, expected[batch.state_ids, batch.actions], atol=1e-6
            )
        assert np.all(result.advantages[~batch.critical] == 0.0) or name == "mc_rollout"
        algo.learn(200)


class MaskedDoors(DilutedDoorsV0Env):
    """Diluted Doors where door 0 is never allowed (for the masked variant)."""

    def action_masks(self) -> np.ndarray:
        mask = np.ones(self.num_doors, dtype=bool)
        mask[0] = False
        return mask


def test_the_algorithm_gets_its_buffer_class_and_sb3_contrib_loads_lazily():
    from baselines.lib.trajectory_ppo import EpisodeRolloutBuffer, MaskableEpisodeRolloutBuffer

    venv = make_vec_env("DilutedDoors-v0", n_envs=2, seed=0, env_kwargs={"routine_length": 1})
    algo = TrajectoryAdvantagePPO("MlpPolicy", venv, seed=0, **SMALL)
    assert algo.rollout_buffer_class is EpisodeRolloutBuffer
    assert isinstance(algo.rollout_buffer, EpisodeRolloutBuffer)
    venv = make_vec_env(lambda: MaskedDoors(routine_length=1), n_envs=2, seed=0)
    masked = TrajectoryAdvantageMaskablePPO("MlpPolicy", venv, seed=0, **SMALL)
    assert isinstance(masked.rollout_buffer, MaskableEpisodeRolloutBuffer)
    code = (
        "import sys, baselines.lib.trajectory_ppo, baselines.lib.sb3_trainer; "
        "assert 'sb3_contrib' not in sys.modules, 'sb3_contrib imported'"
    )
    children.run([sys.executable, "-c", code], cwd=ROOT, timeout=120, check=True)


def test_maskable_variant_never_samples_masked_actions():
    venv = make_vec_env(lambda: MaskedDoors(routine_length=1), n_envs=2, seed=0)
    algo = TrajectoryAdvantageMaskablePPO(
        "MlpPolicy", venv, estimator="trajectory_mc", seed=0, **SMALL
    )
    buf, batch, _ = collect_once(algo)
    assert batch.num_steps > 50 and np.all(batch.actions != 0)
    assert np.all(buf.action_masks[:, 0, 0] == 0.0) and np.all(buf.action_masks[:, 0, 1:] == 1)
    algo.learn(300)


@pytest.mark.parametrize("method", ["ppo", "trajectory_mc"])
def test_both_methods_learn_diluted_doors_well_above_random(method):
    """Fixed seeds, L = 1: from 1/27 (random) to a high success probability in 25k steps."""
    result = main(
        TrainArgs(
            method=method,
            env_kwargs={"routine_length": 1},
            seed=0,
            total_timesteps=25_000,
            eval_every=5_000,
            progress=False,
        )
    )
    assert result.success[0] == pytest.approx(1 / 27, abs=0.01)
    assert result.final_success > 0.6, result.success


# ----------------------------------------------------------------------------- bad input
def test_bad_input_fails_before_training(tmp_path):
    with pytest.raises(ValueError, match="unknown method 'ppo2'"):
        run_of(TrainArgs(method="ppo2"))
    with pytest.raises(ValueError, match="unknown environment 'Nope-v0'"):
        run_of(TrainArgs(env_id="Nope-v0"))
    with pytest.raises(ValueError, match="routine_length"):
        run_of(TrainArgs(env_kwargs={"routine_length": -2}))
    bad = tmp_path / "bad.yml"
    bad.write_text("common:\n  n_steps: 64\n  learning_rat: 0.1\n")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['learning_rat'\] in common"):
        run_of(TrainArgs(config=bad))
    bad.write_text("methods:\n  grpo: {}\n")
    with pytest.raises(ValueError, match="unknown method 'grpo'"):
        load_hyperparameters("DilutedDoors-v0", "ppo", bad)
    with pytest.raises(ValueError, match=r"--config .*missing\.yml: no hyperparameter file"):
        load_hyperparameters("DilutedDoors-v0", "ppo", tmp_path / "missing.yml")
    with pytest.raises(ValueError, match=r"needs info keys \['critical'\]"):
        TrajectoryAdvantagePPO(
            "MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), estimator="routine_masked", **SMALL
        )
    with pytest.raises(ValueError, match="unknown estimator"):
        TrajectoryAdvantagePPO(
            "MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), estimator="nope", **SMALL
        )


def test_ids_without_a_yaml_train_on_the_documented_default_config(tmp_path):
    from baselines.lib.config import CONFIG_DIR, DEFAULT_CONFIG

    assert not (CONFIG_DIR / "RoutineGridSoft-v0.yml").exists()
    for env_id in ("RoutineGridSoft-v0", "CartPole-v1"):
        assert load_hyperparameters(env_id, "ppo") == DEFAULT_CONFIG["common"]
        mc = load_hyperparameters(env_id, "mc_rollout")
        assert mc == {**DEFAULT_CONFIG["common"], "estimator_kwargs": {"num_rollouts": 2}}
    # the YAML of an id overrides the default key by key (the documented values agree)
    assert load_hyperparameters("DilutedDoors-v0", "gigpo") == DEFAULT_CONFIG["common"]
    override = tmp_path / "o.yml"
    override.write_text("common:\n  n_steps: 64\nmethods:\n  ppo: {n_epochs: 2}\n")
    merged = load_hyperparameters("RoutineGridSoft-v0", "ppo", override)
    assert merged == {**DEFAULT_CONFIG["common"], "n_steps": 64, "n_epochs": 2}
    docs = (ROOT / "docs" / "baselines.md").read_text()
    for key in DEFAULT_CONFIG["common"]:
        assert f"`{key}`" in docs, key
    run = run_of(TrainArgs(env_id="RoutineGridSoft-v0", method="trajectory_mc", progress=False))
    algo, _ = build(run)
    assert run.hyperparameters["n_envs"] == 8 and algo.n_steps == 128


def test_every_yaml_config_is_valid():
    from baselines.lib.config import CONFIG_DIR, known_methods

    for path in CONFIG_DIR.glob("*.yml"):
        for method in known_methods():
            load_hyperparameters(path.stem, method)


# ------------------------------------------------------------------------- the results
def record(key, method="ppo", seed=0, length=1, success=(0.0, 1.0)):
    return {
        "key": key,
        "method": method,
        "seed": seed,
        "routine_length": length,
        "rho": 1 / (1 + length),
        "timesteps": [0, 100][: len(success)],
        "success": list(success),
        "budget": 100,
        "target": 0.9,
    }


def test_results_file_recovers_from_partial_and_corrupt_lines(tmp_path):
    store = ResultsFile(tmp_path / "results.jsonl")
    store.append(record("a"))
    store.append(record("b"))
    with store.path.open("ab") as f:
        f.write(b'{"key": "c", "method": "ppo", "se')  # a crash mid-write
    messages = []
    good = store.load(report=messages.append)
    assert [r["key"] for r in good] == ["a", "b"]
    assert len(messages) == 1 and "partial last line 3" in messages[0]
    assert store.path.read_text().count("\n") == 2  # the file was repaired...
    kept = json.loads(store.rejected.read_text().splitlines()[0])  # ...and nothing was lost
    assert kept["line"] == 3 and kept["text"].startswith('{"key": "c"') and kept["reason"]
    # a corrupt line in the middle and a duplicate are reported too; good rows stay
    with store.path.open("ab") as f:
        f.write(b"not json\n")
    store.append(record("d"))
    store.append(record("a"))
    messages.clear()
    good = store.load(report=messages.append)
    assert [r["key"] for r in good] == ["a", "b", "d"]
    assert any("corrupt line 3" in m for m in messages)
    assert any("duplicate" in m for m in messages)
    assert store.load(report=messages.append) == good  # stable once repaired


def sweep_args(out, workers=2):
    return compare.SweepArgs(
        routine_lengths=[0, 1],
        methods=["ppo", "trajectory_mc"],
        seeds=[0, 1],
        budget_episodes=40,
        eval_points=2,
        out=out,
        workers=workers,
    )


def test_sweep_killed_halfway_finishes_the_rest_without_duplicates(tmp_path):
    out = tmp_path / "sweep"
    code = (
        "from pathlib import Path; from baselines.experiments.compare import sweep as compare; "
        "from tests import "
        f"test_baselines as t; compare.run_sweep(t.sweep_args(Path({str(out)!r})), False)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    results = out / "results.jsonl"
    start = time.monotonic()
    deadline = start + children.patience(240)
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and results.read_text().count("\n") >= 2:
            break
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, workers included
    _, stderr = proc.communicate()  # reads and closes the pipe
    first = results.read_text().count("\n")
    said = children.account("the sweep", proc.returncode, "", stderr, time.monotonic() - start)
    assert 2 <= first < 8, f"the kill should land mid-sweep; {said}"
    # the rest in this process (one worker, no second pool to start): what is resumed, the
    # runs in the file skipped and the killed runner's claims taken over, is the runner's
    records = compare.run_sweep(sweep_args(out, workers=1), progress=False)
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    assert len(records) == len(lines) == 8
    assert len({r["key"] for r in lines}) == 8
    tables = analysis.analyse(records, out)
    assert len(tables["steps_to_target"]) == 4 and len(tables["ratio_to_turn_level"]) == 2
    for name in (
        "learning_curves.png",
        "steps_to_target.png",
        "summary_scores.png",
        "learning_curves.csv",
        "summary_scores.csv",
    ):
        assert (out / name).stat().st_size > 0


def test_sweep_validates_before_running(tmp_path):
    with pytest.raises(ValueError, match="unknown method"):
        compare.plan(compare.SweepArgs(methods=["nope"], out=tmp_path))
    with pytest.raises(ValueError, match="routine_length"):
        compare.plan(compare.SweepArgs(routine_lengths=[-1], out=tmp_path))
    args = settings_of("compare", ["--sweep", "demo", "--seeds", "5"])
    assert args.seeds == [5] and args.routine_lengths == compare.SWEEPS["demo"]["routine_lengths"]


# ---------------------------------------------------------------------------- analysis
def synthetic_records():
    """Two methods x two routine lengths x 4 seeds with known steps to target."""
    rows = []
    grid = [0, 100, 200, 300, 400]
    for length, reach in ((0, {"ppo": 1, "traj": 2}), (10, {"ppo": 2, "traj": 4})):
        for method, k in reach.items():
            for seed in range(4):
                success = [0.1] * len(grid)
                for i in range(k, len(grid)):
                    success[i] = 0.95
                if length == 10 and method == "traj" and seed == 3:
                    success = [0.1] * len(grid)  # never reaches: censored at the budget
                rows.append(
                    {
                        "key": f"{length}{method}{seed}",
                        "method": method,
                        "seed": seed,
                        "routine_length": length,
                        "rho": 1 / (1 + length),
                        "timesteps": grid,
                        "success": success,
                        "budget": 400,
                        "target": 0.9,
                    }
                )
    return rows


def test_statistics():
    assert stats.iqm([1, 2, 3, 4, 100, -50, 2.5, 3.5]) == pytest.approx(np.mean([2, 2.5, 3, 3.5]))
    assert stats.iqm([1.0, 2.0, 9.0]) == pytest.approx(4.0)
    for n in (3, 4, 7, 10, 13):
        x = np.random.default_rng(n).normal(size=(n, 3))
        np.testing.assert_allclose(stats.iqm(x), scipy.stats.trim_mean(x, 0.25, axis=0))
    est, lo, hi = stats.bootstrap_ci(np.array([1.0, 2.0, 3.0, 4.0]), num_resamples=500)
    assert est == 2.5 and 1.0 <= lo < 2.5 < hi <= 4.0
    est, lo, hi = stats.bootstrap_ci(np.array([[7.0, 1.0]]))
    assert est.tolist() == lo.tolist() == hi.tolist() == [7.0, 1.0]
    curves = np.random.default_rng(0).normal(size=(10, 5)) + np.arange(5)  # seeds x timesteps
    est, lo, hi = stats.bootstrap_ci(curves, stats.iqm)
    assert est.shape == lo.shape == hi.shape == (5,)
    assert np.all(lo < est) and np.all(est < hi) and np.all(hi - lo < 2.5)
    est, lo, hi = stats.bootstrap_ci(np.full((6, 2), 3.0))  # identical seeds: no spread
    assert est.tolist() == lo.tolist() == hi.tolist() == [3.0, 3.0]


def test_analysis_tables_on_synthetic_sweep(tmp_path):
    records = synthetic_records()
    table = {(r["routine_length"], r["method"]): r for r in analysis.steps_to_target_table(records)}
    c = 100 * 0.8 / 0.85  # the crossing of 0.9 between 0.1 and 0.95, interpolated
    assert table[(0, "ppo")]["mean_steps"] == pytest.approx(c)
    assert table[(0, "traj")]["mean_steps"] == pytest.approx(100 + c)
    assert table[(10, "traj")]["censored"] == 1 and table[(10, "traj")]["reached"] == 3
    assert table[(10, "traj")]["mean_steps"] == pytest.approx((3 * (300 + c) + 400) / 4)
    assert table[(10, "traj")]["mean_steps_is"] == "lower bound"
    ratios = {r["routine_length"]: r for r in analysis.ratio_table(records)}
    assert ratios[0]["ratio"] == pytest.approx((100 + c) / c)
    assert ratios[0]["low"] == pytest.approx((100 + c) / c) and ratios[0]["ratio_is"] == "exact"
    assert ratios[10]["ratio"] == pytest.approx((3 * (300 + c) + 400) / 4 / (100 + c))
    assert ratios[10]["ratio_is"] == "lower bound"
    scores = {r["method"]: r for r in analysis.summary_scores(records)}
    assert scores["ppo"]["reached_share"] == 1.0 and scores["traj"]["reached_share"] == 7 / 8
    assert scores["ppo"]["auc"] > scores["traj"]["auc"]
    curves = analysis.learning_curves(records, "mean")
    point = next(
        r
        for r in curves
        if r["routine_length"] == 10 and r["method"] == "traj" and r["timesteps"] == 400
    )
    assert point["mean"] == pytest.approx((3 * 0.95 + 0.1) / 4)
    assert point["low"] <= point["mean"] <= point["high"]
    tables = analysis.analyse(records, tmp_path, baseline="ppo", statistic="mean")
    assert (tmp_path / "steps_to_target.png").stat().st_size > 1000
    text = (tmp_path / "ratio_to_turn_level.csv").read_text().splitlines()
    assert text[0].startswith("routine_length,rho,method,baseline,ratio")
    assert len(tables["learning_curves"]) == 4 * 5


def test_normalized_auc():
    assert analysis.normalized_auc({"timesteps": [0, 10], "success": [0.0, 1.0]}) == 0.5
    assert analysis.normalized_auc({"timesteps": [0, 5, 10], "success": [1.0, 1.0, 1.0]}) == 1.0


def test_tables_are_in_numeric_order_of_routine_length():
    records = [r for r in synthetic_records() if r["routine_length"] == 0]
    records += [{**r, "routine_length": 3, "key": r["key"] + "3"} for r in records]
    records += [{**r, "routine_length": 10, "key": r["key"] + "x"} for r in records[:8]]
    order = [r["routine_length"] for r in analysis.steps_to_target_table(records)]
    assert order == sorted(order)


# ------------------------------------------------------------------------------- the CLIs
def settings_classes():
    from baselines.experiments.bench_training.sweep import BenchArgs
    from baselines.experiments.demo.sweep import DemoArgs
    from baselines.experiments.multiagent.sweep import TeamSweepArgs
    from baselines.experiments.snr_lab.sweep import LabCommand
    from baselines.experiments.snr_network.sweep import NetworkArgs

    return [
        TrainArgs,
        compare.SweepArgs,
        TeamSweepArgs,
        LabCommand,
        NetworkArgs,
        DemoArgs,
        BenchArgs,
    ]


@pytest.mark.parametrize("cls", settings_classes(), ids=lambda c: c.__name__)
def test_every_settings_field_is_a_flag_with_its_help_text(cls):
    import dataclasses

    from baselines.lib import cli

    text = " ".join(cli.settings_parser(cls).format_help().split())
    for f in dataclasses.fields(cls):
        flag = f.name if f.metadata.get("positional") else "--" + f.name.replace("_", "-")
        assert flag in text, (cls.__name__, flag)
        assert " ".join(f.metadata["help"].split()) in text, (cls.__name__, f.name)


def test_cli_generator_types_defaults_and_missing_help():
    from dataclasses import dataclass, field

    from baselines.lib import cli

    @dataclass
    class Settings:
        """Example settings."""

        lengths: tuple[int, ...] = field(default=(1, 2), metadata={"help": "lengths"})
        kwargs: dict = field(default_factory=dict, metadata={"help": "JSON kwargs"})
        flag: bool = field(default=True, metadata={"help": "a switch"})
        out: Path | None = field(default=None, metadata={"help": "a folder"})

    parsed = cli.parse_settings(
        Settings, ["--lengths", "0", "3", "--kwargs", '{"a": 1}', "--no-flag", "--out", "x"]
    )
    assert parsed == Settings((0, 3), {"a": 1}, False, Path("x"))
    assert cli.parse_settings(Settings, []) == Settings()
    base = Settings(lengths=(7,))
    assert cli.parse_settings(Settings, ["--no-flag"], base=base) == Settings((7,), flag=False)

    @dataclass
    class NoHelp:
        """Bad."""

        x: int = 0

    with pytest.raises(ValueError, match=r"NoHelp\.x has no help text"):
        cli.settings_parser(NoHelp)


def test_documented_flags_parse():
    flags = "--method trajectory_mc --seed 0 --total-timesteps 100000 --out o --no-progress"
    args = settings_of(
        "train",
        ["--env-id", "DilutedDoors-v0", "--env-kwargs", '{"routine_length": 20}', *flags.split()],
    )
    assert args.env_kwargs == {"routine_length": 20} and args.total_timesteps == 100_000
    assert args.out == Path("o") and not args.progress and args.config is None
    args = settings_of(
        "compare",
        [
            "--env-id",
            "RoutineGrid-v0",
            "--routine-lengths",
            "2",
            "6",
            "12",
            "--methods",
            "ppo",
            "trajectory_mc",
            "gigpo",
            "--seeds",
            "0",
            "1",
            "2",
            "3",
            "--out",
            "results/compare/grid",
        ],
    )
    assert args.routine_lengths == [2, 6, 12] and args.methods[-1] == "gigpo"
    assert settings_of("compare", ["--sweep", "rho"]).out == Path("results/compare/rho")
    lab = settings_of("snr_lab", ["rho-law", "--params", "per_state", "--out", "/tmp/snrtime"])
    assert lab.experiment == "rho-law" and lab.params == ("per_state",)
    assert settings_of("snr_lab", ["all", "--routine-lengths", "0", "3"]).routine_lengths == (0, 3)
    team = settings_of(
        "multiagent",
        [
            "--env-id",
            "TeamRoutineGrid-v0",
            "--routine-lengths",
            "2",
            "6",
            "--methods",
            "ppo",
            "trajectory_mc",
            "oracle",
        ],
    )
    assert team.env_id == "TeamRoutineGrid-v0" and team.budget_episodes == 1500
    assert not settings_of("demo", ["--no-compare"]).compare
    assert settings_of("demo", ["--routine-lengths", "0", "1"]).routine_lengths == (0, 1)
    assert settings_of("snr_network", ["--net-arch", "16"]).net_arch == [16]
    assert settings_of("bench_training", ["--methods", "ppo"]).methods == ["ppo"]


def test_an_sb3_run_with_an_output_folder_leaves_no_file_open(tmp_path):
    """SB3's csv logger and the run's environments are closed when the run ends (an open
    ``progress.csv`` surfaced as a ResourceWarning in whichever test collected it), and an env
    that draws no ``rgb_array`` trains without Gymnasium's warning (SB3's ``make_vec_env``
    asks for that mode unless one is given)."""
    import gc
    import warnings

    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        main(
            TrainArgs(
                env_id="SearchOrAnswer-v0",
                env_kwargs={"num_candidates": 3, "max_searches": 3},
                method="ppo",
                total_timesteps=256,
                eval_every=128,
                eval_episodes=2,
                out=tmp_path,
                progress=False,
            )
        )
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []
    assert [str(w.message) for w in caught if "render_mode" in str(w.message)] == []
    header = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert "time/total_timesteps" in header  # the log was written, then closed
