"""The batch an estimator or a detector gets holds only the privileged fields it declares
(:func:`routine_envs.credit.batch_for`): a read of ``batch.critical`` it did not declare gets an
:class:`~routine_envs.episodes.UndeclaredField` and fails loudly, naming the field and the
reader, in both trainers and in the lab; one it declared gets the field and is marked
privileged; every built-in estimator and detector declares all it reads."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import credit, detectors, snr
from routine_envs.credit import RLOO, Advantages
from routine_envs.episodes import (
    PRIVILEGED_FIELDS,
    EpisodeBatch,
    UndeclaredField,
    UndeclaredFieldError,
    privileged_reads,
)
from routine_envs.sampler import ModelSampler
from tests.utils import tiny_training_run

ENV_ID, KWARGS = "DilutedDoors-v1", {"num_floors": 1, "routine_length": 2}
SEEN: list[np.ndarray | UndeclaredField | None] = []
"""What the probes below found in ``batch.critical``, one entry per call."""


class UndeclaredCritical(RLOO):
    """RLOO masked by the annotations, which it reads without declaring them (a leak)."""

    name: ClassVar[str] = "undeclared_critical"
    requires: ClassVar[frozenset[str]] = frozenset()

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        SEEN.append(batch.critical)
        return Advantages(
            np.where(batch.critical.astype(bool), super().__call__(batch).advantages, 0.0)
        )


class DeclaredCritical(UndeclaredCritical):
    """The same method, declaring what it reads."""

    name: ClassVar[str] = "declared_critical"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})


@pytest.fixture(scope="module")
def doors():
    """Diluted Doors v1 (2 floors, L = 2) under the uniform policy: env, sampler, policy table,
    the exact values, a context offering everything, and one batch holding every field."""
    env = gym.make(ENV_ID, num_floors=2, routine_length=2).unwrapped
    sampler = ModelSampler(env)
    table = np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)
    values = env.oracle(table).v
    context = credit.EstimatorContext(
        env=env, policy_table=table, sampler=sampler, gamma=1.0, gae_lambda=0.95, seed=0
    )
    batch = sampler.sample(table, 24, 4, np.random.default_rng(0), observations=True)
    batch = dataclasses.replace(batch, values=values[batch.state_ids])
    return env, sampler, table, values, context, batch


# ------------------------------------------------------------------------------- batch_for
@settings(max_examples=60, deadline=None)
@given(declared=st.sets(st.sampled_from(credit.BATCH_FIELDS)))
def test_a_reader_sees_only_the_privileged_fields_it_declares(doors, declared):
    batch = doors[-1]
    reader = UndeclaredCritical()
    reader_requires = frozenset(declared)
    seen = batch.visible_to(reader_requires)
    for name in (f.name for f in dataclasses.fields(EpisodeBatch)):
        kept = name not in PRIVILEGED_FIELDS or name in reader_requires
        # kept fields are the same arrays (no copy), the others hidden behind a sentinel
        if kept:
            assert getattr(seen, name) is getattr(batch, name), name
        else:
            assert isinstance(getattr(seen, name), UndeclaredField), name
    assert isinstance(credit.batch_for(reader, batch).critical, UndeclaredField)
    if PRIVILEGED_FIELDS.keys() <= reader_requires:
        assert seen is batch  # nothing to hide: the batch itself


def test_privileged_reads_name_what_marks_a_method(doors):
    context = doors[4]
    assert privileged_reads(DeclaredCritical()) == ("critical",)
    assert privileged_reads(UndeclaredCritical()) == ()
    assert privileged_reads(credit.build_estimator("routine_masked")) == ("critical",)
    assert privileged_reads(credit.build_estimator("oracle", context)) == ("state_ids",)
    assert privileged_reads(credit.build_estimator("gae")) == ("values",)
    assert privileged_reads(credit.build_estimator("turn_credit")) == ("turn_scores",)
    for name in ("trajectory_mc", "rloo", "gigpo", "discounted_turn", "turn_index_norm"):
        assert privileged_reads(credit.build_estimator(name)) == (), name
    gigpo = credit.build_estimator('gigpo{"group_by": "state_id"}')
    assert privileged_reads(gigpo) == ("state_ids",)
    masked = credit.build_estimator('detector_masked{"detector": "entropy"}', context)
    assert privileged_reads(masked) == ()
    masked = credit.build_estimator("detector_masked", context)  # the annotations
    assert privileged_reads(masked) == ("critical",)


# -------------------------------------------------------------------------- the built-ins
def _same_advantages(build, batch: EpisodeBatch) -> None:
    """An estimator built twice alike gives the same advantages on the batch with every field
    and on the batch as it may see it: its declared fields suffice, and nothing it did not
    declare changes its numbers."""
    full, seen = build(), build()
    visible = credit.batch_for(seen, batch)
    expected = snr_advantages(full, batch)
    np.testing.assert_array_equal(snr_advantages(seen, visible), expected)


def snr_advantages(estimator, batch: EpisodeBatch) -> np.ndarray:
    """Advantages one group at a time unless the estimator is group independent (as the lab)."""
    if credit.is_group_independent(estimator):
        return estimator(batch).advantages
    return np.concatenate([estimator(g).advantages for g in batch.split_groups()])


ESTIMATOR_SPECS = [
    *sorted(credit.ESTIMATORS),
    'gigpo{"group_by": "state_id"}',
    'oracle{"sigma": 0.3}',
    'mc_rollout{"num_rollouts": 3}',
    *(f'detector_masked{{"detector": "{d}"}}' for d in sorted(detectors.DETECTORS)),
]


@pytest.mark.parametrize("spec", ESTIMATOR_SPECS)
def test_every_built_in_estimator_declares_every_field_it_reads(doors, spec):
    context, batch = doors[4], doors[-1]
    if "classifier" in spec:  # a small training set: the test is about the fields, not skill
        spec = spec[:-1] + ', "detector_kwargs": {"train_episodes": 48}}'
    if spec == "tree_grpo":  # its groups are trees: this batch's groups of 4, one tree each
        spec = 'tree_grpo{"trees": 1}'
    _same_advantages(lambda: credit.build_estimator(spec, context), batch)


@pytest.mark.parametrize("name", sorted(detectors.DETECTORS))
def test_every_built_in_detector_declares_every_field_it_reads(doors, name):
    context, batch = doors[4], doors[-1]
    kwargs = {"train_episodes": 48} if name == "classifier" else {}
    full, seen = (detectors.build_detector(name, context, **kwargs) for _ in range(2))
    expected = full(batch)
    got = seen(credit.batch_for(seen, batch))
    np.testing.assert_array_equal(got.scores, expected.scores)
    np.testing.assert_array_equal(got.labels, expected.labels)
    result = detectors.detect_batches(seen, [batch, batch], warmup=0)  # through the scorer
    assert len(result.scores) == 2 * batch.num_steps


# ---------------------------------------------------------------- the trainers and the lab
@pytest.mark.parametrize("trainer", ["sb3", "batched"])
def test_the_trainers_hide_an_undeclared_privileged_field(trainer, tmp_path):
    def run(method: str) -> None:
        tiny_training_run(f"tests.test_privileged_inputs:{method}", trainer, tmp_path / method)

    SEEN.clear()
    with pytest.raises(UndeclaredFieldError, match=r"'undeclared_critical' read batch\.critical"):
        run("UndeclaredCritical")
    # the env fills critical; the estimator got the sentinel
    assert len(SEEN) == 1 and isinstance(SEEN[0], UndeclaredField)
    SEEN.clear()
    run("DeclaredCritical")
    assert SEEN and all(s is not None and s.dtype == bool for s in SEEN)
    assert sum(len(s) for s in SEEN) >= 400 and any(s.any() for s in SEEN)


def test_the_lab_hides_an_undeclared_privileged_field(doors):
    env, sampler, *_ = doors
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions)
    SEEN.clear()
    with pytest.raises(UndeclaredFieldError, match=r"'undeclared_critical' read batch\.critical"):
        snr.measure_snr(env, policy, {"x": UndeclaredCritical()}, 40, 4, sampler=sampler)
    assert len(SEEN) == 1 and isinstance(SEEN[0], UndeclaredField)
    SEEN.clear()
    result = snr.measure_snr(env, policy, {"x": DeclaredCritical()}, 40, 4, sampler=sampler)
    assert SEEN and all(s is not None and s.dtype == bool for s in SEEN)
    assert np.isfinite(result.results["x"].snr)


def test_the_merge_probe_hides_an_undeclared_privileged_field(doors):
    from baselines.experiments.benchmark import merging

    _, sampler, table, values, _, _ = doors
    SEEN.clear()
    with pytest.raises(UndeclaredFieldError, match=r"'undeclared_critical' read batch\.critical"):
        merging.probe_advantages({"x": UndeclaredCritical()}, sampler, table, values)
    SEEN.clear()
    merging.probe_advantages({"x": DeclaredCritical(), "y": RLOO()}, sampler, table, values)
    assert SEEN and all(s is not None for s in SEEN)


# ----------------------------------------------------------------------------- leaderboard
def test_the_leaderboard_after_rb1_names_privileged_reads_and_ranks_them_apart(
    monkeypatch, tmp_path
):
    from baselines.experiments.benchmark import command, privileged, scores
    from baselines.lib import protocol

    monkeypatch.setattr(scores, "RESAMPLES", 200)
    rb1 = protocol.load_protocol("rb1")
    refs = command.manifest.open_references(rb1, "lite")
    found = command.load_references(rb1, "lite", refs, tmp_path)
    marks = privileged.privileged_of(found)
    label_free = {"ppo", "trajectory_mc", "rloo", "gigpo", 'detector_masked{"detector": "critic"}'}
    # mc_rollout's rb1 runs simulate rollouts on the exact model, keyed by state_id
    assert marks == {
        **{m: () for m in label_free},
        "mc_rollout": ("state_ids",),
        "oracle": ("state_ids",),
        "routine_masked": ("critical",),
    }
    assert "privileged" not in command.leaderboard_text(rb1, "lite", refs, found)  # as shipped
    later = dataclasses.replace(rb1, version="rb2", report=dict(protocol.REPORT))
    text = command.leaderboard_text(later, "lite", refs, found)
    combined = report_rows(command.leaderboard_text(rb1, "lite", refs, found))
    sections = [s for s in text.split("\n## ")[1:] if not s.startswith("Aggregates")]
    assert len(sections) == 3  # one per setting; the aggregates across them after
    for section in sections:
        free, priv = (report_rows(b) for b in section.split("### ")[1:])
        assert {r[0] for r in free} == label_free and all(r[1] == "none" for r in free)
        assert {(r[0], r[1]) for r in priv} == {
            ("mc_rollout", "state_ids"),
            ("oracle", "state_ids"),
            ("routine_masked", "critical"),
        }
        # each block keeps the methods' order of the one table: ranked by the same scores
        order = [r[0] for r in combined[section.split("\n")[0]]]
        for block in (free, priv):
            names = [r[0] for r in block]
            assert names == [n for n in order if n in names]


def report_rows(text: str) -> list[list[str]] | dict[str, list[list[str]]]:
    """The table rows of a leaderboard block (cells, header and rule dropped); for a whole
    leaderboard, its rows by setting."""
    if text.startswith("# Leaderboard"):
        return {s.split("\n")[0]: report_rows(s) for s in text.split("\n## ")[1:]}
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row] for row in rows[1:]]


def test_a_submissions_card_names_the_privileged_fields_it_read(tmp_path):
    from baselines import commands
    from baselines.experiments.benchmark import command

    method = "tests.test_privileged_inputs:DeclaredCritical"
    args = ["run", "--method", method, "--tier", "smoke", "--workers", "1"]
    args += ["--out", str(tmp_path), "--no-progress", "--no-lab"]
    SEEN.clear()
    folder = command.main(commands.settings_of("benchmark", args))
    card = (folder / "report.md").read_text()
    assert "- **privileged fields read**: critical\n" in card
    assert SEEN and all(s is not None for s in SEEN)
