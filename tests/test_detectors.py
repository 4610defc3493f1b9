"""Criticality detectors scored against the annotations, and the label-free masked estimator."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

import routine_envs
from baselines.commands import settings_of
from routine_envs import credit, detectors
from routine_envs.episodes import EpisodeBatch, collect_episodes
from routine_envs.sampler import ModelSampler

gym.register_envs(routine_envs)


@pytest.fixture(scope="module")
def doors():
    """Diluted Doors v1 (L = 3) under the uniform policy: env, sampler, table, context."""
    env = gym.make("DilutedDoors-v1", routine_length=3).unwrapped
    sampler = ModelSampler(env)
    table = detectors.uniform_policy(env)
    context = credit.EstimatorContext(env=env, policy_table=table, sampler=sampler, seed=0)
    return env, sampler, table, context


def batches(sampler: ModelSampler, table: np.ndarray, count: int, seed: int = 0, groups: int = 32):
    rng = np.random.default_rng(seed)
    return [sampler.sample(table, groups, 8, rng) for _ in range(count)]


# ----------------------------------------------------------------------------- scoring
def test_perfect_detector_scores_one_and_implies_the_annotated_rho(doors):
    _, sampler, table, context = doors
    result = detectors.score_detector(
        detectors.build_detector("annotations", context),
        batches(sampler, table, 2),
        warmup=0,
        num_resamples=50,
    )
    assert result.auc == 1.0 and result.auc_low == 1.0 and result.auc_high == 1.0
    assert result.ap == 1.0
    assert result.rho_implied == result.rho and result.rho_error == 0.0
    assert 0 < result.rho < 1


def test_random_detector_is_at_chance_within_its_interval(doors):
    _, sampler, table, context = doors
    random = detectors.build_detector('random{"rate": 0.3}', context)
    result = detectors.score_detector(
        random, batches(sampler, table, 2, seed=1), warmup=0, num_resamples=200
    )
    assert result.auc_low < 0.5 < result.auc_high
    assert result.auc_high - result.auc_low < 0.1  # an interval, not everything
    assert result.rho_implied == pytest.approx(0.3, abs=0.03)


def test_auc_is_sklearns_and_intervals_contain_the_estimate():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 9, size=60)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    critical = rng.random(starts[-1]) < 0.3
    scores = np.round(critical + rng.normal(0, 0.8, starts[-1]), 1)  # ties included
    result = detectors.score_detection(scores, scores > 0.5, critical, starts, num_resamples=100)
    assert result.auc == pytest.approx(roc_auc_score(critical, scores), abs=1e-12)
    assert result.auc_low <= result.auc <= result.auc_high
    assert result.ap_low <= result.ap <= result.ap_high
    with pytest.raises(ValueError, match="one class"):
        detectors.score_detection(scores, scores > 0, np.zeros_like(critical), starts)
    with pytest.raises(ValueError, match="one shape"):
        detectors.score_detection(scores[:-1], scores[:-1] > 0, critical, starts)


# ------------------------------------------------------------------------ outside code
OUTSIDE = """
    from dataclasses import dataclass
    from typing import ClassVar

    from routine_envs.detectors import Detection


    @dataclass
    class FirstStep:
        '''Critical at the first step of every episode.'''

        weight: float = 1.0
        name: ClassVar[str] = "first_step"
        requires: ClassVar[frozenset] = frozenset()

        def __call__(self, batch):
            first = batch.step_index == 0
            return Detection(self.weight * first, first)
"""


def test_outside_detector_loads_by_import_path_and_scores(doors, tmp_path, monkeypatch):
    _, sampler, table, context = doors
    (tmp_path / "my_detectors.py").write_text(textwrap.dedent(OUTSIDE))
    monkeypatch.syspath_prepend(str(tmp_path))
    detector = detectors.build_detector('my_detectors:FirstStep{"weight": 2.0}', context)
    assert detector.weight == 2.0
    result = detectors.score_detector(
        detector, batches(sampler, table, 1), warmup=0, num_resamples=20
    )
    assert 0.5 < result.auc <= 1.0  # the first door is always critical
    masked = credit.build_estimator('detector_masked{"detector": "my_detectors:FirstStep"}')
    assert masked.detector.name == "first_step"
    with pytest.raises(ValueError, match="unknown detector 'nope'"):
        detectors.build_detector("nope")
    with pytest.raises(ValueError, match="has no attribute 'Missing'"):
        detectors.build_detector("my_detectors:Missing")
    with pytest.raises(ValueError, match="bad arguments for detector 'entropy'"):
        detectors.build_detector('entropy{"no_such": 1}')
    sys.modules.pop("my_detectors", None)


# ------------------------------------------------------------------ requirements, fitting
def test_detector_needing_a_field_the_source_lacks_is_refused(doors):
    env, _, table, context = doors
    collected = collect_episodes(env, lambda o, i, rng: int(rng.integers(3)), 4, 2)
    entropy = detectors.build_detector("entropy", context)
    with pytest.raises(ValueError, match=r"needs batch fields \['entropies'\]"):
        detectors.score_detector(entropy, [collected], warmup=0)
    with pytest.raises(ValueError, match=r"requires batch fields \['entropies'\]"):
        detectors.check_detector_provides(entropy, frozenset({"actions"}), "collect_episodes")
    # model rollouts need a sampler: a trainer's context (env, a callable table) is refused
    trainer = credit.EstimatorContext(env=env, policy_table=lambda: table, gamma=1.0, seed=0)
    for name in ("branching", "mc_spread"):
        with pytest.raises(ValueError, match="needs sampler"):
            credit.build_estimator(f'detector_masked{{"detector": "{name}"}}', trainer)


@dataclass
class Spy:
    """Records the order of calls and fits (identities of the batches' reward arrays: the batch
    a detector sees is a view of the batch it is given, its arrays shared, not copied)."""

    name: ClassVar[str] = "spy"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})
    events: list[tuple[str, int]] = field(default_factory=list)

    def __call__(self, batch: EpisodeBatch) -> detectors.Detection:
        self.events.append(("detect", id(batch.rewards)))
        return detectors.Detection(batch.critical.astype(float), batch.critical)

    def fit(self, batch: EpisodeBatch) -> None:
        self.events.append(("fit", id(batch.rewards)))


def test_detectors_are_fitted_on_earlier_batches_only(doors):
    _, sampler, table, context = doors
    data = batches(sampler, table, 3)
    spy = Spy()
    detectors.detect_batches(spy, data, warmup=1)
    ids = [id(b.rewards) for b in data]
    assert spy.events == [(kind, i) for i in ids for kind in ("detect", "fit")]
    spy = Spy()
    masked = detectors.DetectorMasked(spy)
    for batch in data[:2]:
        masked(batch)
    assert spy.events == [(kind, i) for i in ids[:2] for kind in ("detect", "fit")]
    # the learned critic knows nothing before its first fit, and something after it
    critic = detectors.build_detector("critic", context)
    found = detectors.detect_batches(critic, data, warmup=0)
    first = data[0].num_steps
    assert not found.scores[:first].any() and found.scores[first:].any()
    assert critic.num_fitted == sum(b.num_steps for b in data)


# ------------------------------------------------------------------- the masked estimator
def test_masked_estimator_with_the_perfect_detector_is_routine_masked(doors):
    _, sampler, table, context = doors
    for batch in batches(sampler, table, 2, seed=3):
        for kwargs in ({}, {"normalize_std": True}):
            expected = credit.build_estimator("routine_masked", context, **kwargs)(batch)
            masked = credit.build_estimator(
                "detector_masked", context, detector="annotations", **kwargs
            )(batch)
            assert masked.advantages.tobytes() == expected.advantages.tobytes()
            soft = credit.build_estimator(
                "detector_masked", context, detector="annotations", soft=True, **kwargs
            )(batch)
            np.testing.assert_array_equal(soft.advantages, expected.advantages)
    estimator = credit.build_estimator('detector_masked{"detector": "annotations"}', context)
    assert estimator.requires == frozenset({"critical"}) and estimator.group_independent
    with pytest.raises(ValueError, match="threshold or soft"):
        credit.build_estimator("detector_masked", detector="random", soft=True, threshold=0.5)


def test_masked_estimator_in_the_snr_lab_against_the_exact_gradient(doors):
    from routine_envs import snr

    env, sampler, _, context = doors
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions)
    estimators = {
        "routine_masked": credit.build_estimator("routine_masked", context),
        "perfect": credit.build_estimator("detector_masked", context, detector="annotations"),
        "half_random": credit.build_estimator(
            "detector_masked", context, detector='random{"rate": 0.5, "seed": 1}'
        ),
    }
    out = snr.measure_snr(env, policy, estimators, num_groups=800, group_size=4, sampler=sampler)
    assert out.results["perfect"].snr == out.results["routine_masked"].snr
    assert out.results["perfect"].relative_bias == out.results["routine_masked"].relative_bias
    # masking half the critical steps at random halves E g: biased (routine_masked: ~1/4)
    assert out.results["half_random"].relative_bias > 0.45


# ------------------------------------------------------------------------- the pieces
def test_branch_returns_with_common_random_numbers(doors):
    env, sampler, table, _ = doors
    critical = np.flatnonzero(sampler.critical)[:3]
    routine = np.flatnonzero(~sampler.critical & ~env.model().terminal)[:3]
    rng = np.random.default_rng(0)
    same = sampler.branch_returns(routine, table, 8, rng)
    assert same.shape == (3, env.num_actions, 8)
    assert (same == same[:, :1]).all()  # an action that changes nothing: the same return
    before = sampler.rollout_steps
    independent = sampler.branch_returns(critical, table, 8, rng, common=False)
    assert sampler.rollout_steps > before and independent.shape == (3, env.num_actions, 8)


def test_mixture_policy(doors):
    env, *_ = doors
    uniform = detectors.mixture_policy(env, 1.0)
    np.testing.assert_allclose(uniform, detectors.uniform_policy(env))
    half = detectors.mixture_policy(env, 0.5)
    np.testing.assert_allclose(half.sum(axis=1), 1.0)
    assert env.success_probability(half) > env.success_probability(uniform)
    with pytest.raises(ValueError, match="eps must be in"):
        detectors.mixture_policy(env, 1.5)


def test_entropy_detector_sees_nothing_under_the_uniform_policy(doors):
    _, sampler, table, context = doors
    result = detectors.score_detector(
        detectors.build_detector("entropy", context),
        batches(sampler, table, 1),
        warmup=0,
        num_resamples=20,
    )
    assert result.auc == 0.5 and result.rho_implied == 1.0  # equal entropies: all tied


def test_core_import_does_not_pull_the_extras():
    from tests import children

    code = (
        "import sys, routine_envs.detectors, routine_envs.credit;"
        "routine_envs.credit.estimator_class('detector_masked');"
        "print(any(m in sys.modules for m in ('sklearn', 'scipy', 'torch')))"
    )
    out = children.run(
        [sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], check=True
    )
    assert out.stdout.strip() == "False", out.describe()


# ------------------------------------------------------------------------ the command
def test_score_command_runs_resumes_and_refuses_bad_settings(tmp_path):
    from baselines.experiments.detectors import score

    argv = [
        "--env-id", "DilutedDoors-v1", "--routine-lengths", "2", "--groups", "6",
        "--group-size", "4", "--batches", "2", "--resamples", "20",
        "--detectors", "annotations", "random", "critic",
        "--policies", "uniform", 'mixture{"eps": 0.5}', "--out", str(tmp_path),
    ]  # fmt: skip
    out = score.main(settings_of("detectors score", argv))
    rows = {(r["policy"], r["detector"]): r for r in out["rows"]}
    assert len(rows) == 6 and rows[("uniform", "annotations")]["auc"] == 1.0
    assert (tmp_path / "detectors.md").read_text().count("\n") == 8
    again = score.main(settings_of("detectors score", argv))  # resumed: nothing re-run
    assert again["rows"] == out["rows"]
    keys = {score.setting_key(s) for s in score.plan(settings_of("detectors score", argv))}
    other = score.plan(
        settings_of("detectors score", [*argv, "--env-kwargs", '{"observation": "position"}'])
    )
    assert keys.isdisjoint(score.setting_key(s) for s in other)
    for bad, match in (
        (["--detectors", "nope"], "unknown detector"),
        (["--policies", 'mixture{"eps": 2}'], "a mixture is"),
        (["--warmup", "2"], "--warmup"),
        (["--env-kwargs", '{"routine_length": 3}'], "which --routine-lengths sweeps"),
    ):
        with pytest.raises(ValueError, match=match):
            score.plan(settings_of("detectors score", [*argv, *bad]))


def test_docs_example_runs(capsys):
    """docs/detectors.md's detector of your own is scored as written."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "detectors.md").read_text()
    (block,) = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]][1:]
    namespace: dict = {}
    exec(compile(block, "<docs/detectors.md>", "exec", dont_inherit=True), namespace)
    score = namespace["score"]
    assert 0.5 < score.auc <= 1.0 and score.rho_implied < score.rho
    assert "AUC" in capsys.readouterr().out


def test_policy_command_saves_a_table_the_scorer_accepts(tmp_path):
    from baselines.experiments.detectors import score, trained_policy

    out = tmp_path / "ppo.npy"
    about = trained_policy.main(
        settings_of(
            "detectors policy",
            ["--env-kwargs", '{"routine_length": 1}', "--total-timesteps", "1", "--out", str(out)],
        )
    )
    env = gym.make("DilutedDoors-v1", routine_length=1).unwrapped
    table = np.load(out)
    assert table.shape == (env.num_states, env.num_actions)
    assert about["success_probability"] == pytest.approx(env.success_probability(table))
    np.testing.assert_allclose(score.policy_table(env, str(out)), table, atol=1e-12)
    with pytest.raises(ValueError, match=r"must end in \.npy"):
        trained_policy.main(settings_of("detectors policy", ["--out", str(tmp_path / "x.zip")]))
