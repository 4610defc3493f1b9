"""Privileged reads that cannot hide: an undeclared privileged field is a sentinel that raises on
any use, naming the field and the reader (not a ``None`` that ``np.where`` turns into a
constant)."""

from __future__ import annotations

import copy
import dataclasses
import operator
import pickle
import sys
from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import credit, snr
from routine_envs.credit import RLOO, Advantages
from routine_envs.episodes import (
    PRIVILEGED_FIELDS,
    EpisodeBatch,
    UndeclaredField,
    UndeclaredFieldError,
)
from routine_envs.sampler import ModelSampler
from tests import runs_files
from tests.utils import tiny_training_run

ENV_ID, KWARGS = "DilutedDoors-v1", {"num_floors": 1, "routine_length": 2}


@pytest.fixture(scope="module")
def doors():
    """Diluted Doors v1 (2 floors, L = 2) under the uniform policy: env, sampler, the policy
    and one batch with every field (exact values included)."""
    env = gym.make(ENV_ID, num_floors=2, routine_length=2).unwrapped
    sampler = ModelSampler(env)
    table = np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)
    batch = sampler.sample(table, 12, 4, np.random.default_rng(0), observations=True)
    batch = dataclasses.replace(batch, values=env.oracle(table).v[batch.state_ids])
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions)
    return env, sampler, policy, batch


def hidden(batch: EpisodeBatch, name: str = "critical") -> UndeclaredField:
    """What a reader that declared nothing finds in ``batch.<name>``."""
    value = getattr(batch.visible_to(frozenset(), "estimator 'probe'"), name)
    assert isinstance(value, UndeclaredField)
    return value


# ---------------------------------------------------------------------------- the sentinel
OPERATIONS = {
    "truth value": bool,
    "if": lambda x: 1 if x else 0,
    "not": operator.not_,
    "len": len,
    "iteration": list,
    "index": lambda x: x[0],
    "slice": lambda x: x[1:3],
    "mask": lambda x: x[np.array([True])],
    "assignment": lambda x: x.__setitem__(0, 1),
    "membership": lambda x: 1 in x,
    "attribute": lambda x: x.astype(bool),
    "shape": lambda x: x.shape,
    "dtype": lambda x: x.dtype,
    "hasattr": lambda x: hasattr(x, "any"),
    "getattr default": lambda x: getattr(x, "sum", None),
    "set attribute": lambda x: setattr(x, "flags", 1),
    "equality": lambda x: x == 1,
    "inequality": lambda x: x != 1,
    "reflected equality": lambda x: np.int64(1) == x,
    "order": lambda x: x < 1,
    "order reflected": lambda x: np.float64(1) >= x,
    "hash": hash,
    "add": lambda x: x + 1,
    "radd": lambda x: 1.0 + x,
    "sub": lambda x: x - 1,
    "mul": lambda x: x * 2,
    "rmul": lambda x: 2 * x,
    "div": lambda x: x / 2,
    "rdiv": lambda x: 1 / x,
    "floordiv": lambda x: x // 2,
    "mod": lambda x: x % 2,
    "pow": lambda x: x**2,
    "matmul": lambda x: x @ np.ones(3),
    "and": lambda x: x & True,
    "rand": lambda x: True & x,
    "or": lambda x: x | False,
    "xor": lambda x: x ^ True,
    "invert": operator.invert,
    "neg": operator.neg,
    "abs": abs,
    "int": int,
    "float": float,
    "index protocol": operator.index,
    "round": round,
    "call": lambda x: x(),
    "np.asarray": np.asarray,
    "np.array": np.array,
    "np.where": lambda x: np.where(x, 1.0, 0.05),
    "np.where as choice": lambda x: np.where(np.ones(3, dtype=bool), x, 0.0),
    "np.sum": np.sum,
    "np.mean": np.mean,
    "np.isfinite": np.isfinite,
    "np.logical_and": lambda x: np.logical_and(x, True),
    "np.concatenate": lambda x: np.concatenate([x, x]),
    "np.unique": np.unique,
    "ndarray + sentinel": lambda x: np.zeros(3) + x,
    "ndarray * sentinel": lambda x: np.ones(3) * x,
    "ndarray indexed by it": lambda x: np.arange(3)[x],
    "np.fromiter": lambda x: np.fromiter(x, dtype=bool),
    "sorted": sorted,
    "sum": sum,
    "zip": lambda x: list(zip(x, x, strict=True)),
    "dict key": lambda x: {x: 1},
}


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(OPERATIONS)), field=st.sampled_from(sorted(PRIVILEGED_FIELDS)))
def test_any_use_of_an_undeclared_field_raises_naming_it_and_the_reader(doors, name, field):
    value = hidden(doors[-1], field)
    with pytest.raises(UndeclaredFieldError) as raised:
        OPERATIONS[name](value)
    message = str(raised.value)
    assert f"estimator 'probe' read batch.{field}" in message
    assert "did not declare in requires" in message


def test_np_where_on_an_undeclared_field_raises_instead_of_a_constant(doors):
    batch = doors[-1]
    with pytest.raises(UndeclaredFieldError, match=r"batch\.critical"):
        np.where(hidden(batch), 1.0, 0.05)


def test_a_hidden_batch_still_slices_splits_checks_copies_and_pickles(doors):
    batch = doors[-1]
    seen = batch.visible_to(frozenset({"state_ids"}), "estimator 'probe'")
    assert seen.state_ids is batch.state_ids and seen.rewards is batch.rewards
    for part in (seen.episodes(1, 3), *seen.split_groups()):
        for name in PRIVILEGED_FIELDS:
            kept = getattr(part, name)
            assert isinstance(kept, UndeclaredField) == (name != "state_ids"), name
    one = seen.split_groups()[0]
    np.testing.assert_array_equal(one.state_ids, batch.split_groups()[0].state_ids)

    class Reader:
        name, requires = "r", frozenset({"state_ids", "actions"})

    credit.check_batch(Reader(), seen)  # ``is None`` checks: the sentinel is not None
    assert "batch.critical" in repr(seen.critical)
    for twin in (copy.copy(seen), copy.deepcopy(seen), pickle.loads(pickle.dumps(seen))):
        assert isinstance(twin.critical, UndeclaredField)
        with pytest.raises(UndeclaredFieldError, match="estimator 'probe'"):
            bool(twin.critical)
    # the same reader again: nothing more to hide, the batch itself
    assert seen.visible_to(frozenset({"state_ids"}), "estimator 'probe'") is seen
    # a field the source lacks stays None
    lacking = dataclasses.replace(batch, turn_scores=None)
    assert lacking.visible_to(frozenset(), "estimator 'probe'").turn_scores is None


def test_batch_for_names_the_reader(doors):
    batch = doors[-1]
    seen = credit.batch_for(RLOO(), batch)
    with pytest.raises(UndeclaredFieldError, match=r"estimator 'rloo' read batch\.state_ids"):
        seen.state_ids.max()


class QuietConstant(RLOO):
    """RLOO weighted by the annotations it does not declare: with ``None`` for them, ``np.where``
    made every weight the constant 0.05 and the method ran without a sound."""

    name: ClassVar[str] = "quiet_constant"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        weights = np.where(batch.critical, 1.0, 0.05)
        return Advantages(weights * super().__call__(batch).advantages)


def test_the_lab_refuses_a_silent_constant_from_an_undeclared_field(doors):
    env, sampler, policy, _ = doors
    with pytest.raises(UndeclaredFieldError, match=r"'quiet_constant' read batch\.critical"):
        snr.measure_snr(env, policy, {"x": QuietConstant()}, 40, 4, sampler=sampler)


# ------------------------------------------------------------------ requires read only once
GOT: list[bool] = []
"""Whether each call of the probes below was given the annotations."""


def given_labels(batch: EpisodeBatch) -> bool:
    """Whether ``batch`` gives its reader the annotations (not ``None``, not hidden)."""
    return batch.critical is not None and not isinstance(batch.critical, UndeclaredField)


class LyingRequires(RLOO):
    """Declares ``critical`` only when ``batch_for`` reads ``requires`` (a property, read again
    at each use): it got the labels in training while the card said it read none."""

    name: ClassVar[str] = "lying_requires"

    @property
    def requires(self) -> frozenset[str]:
        asked_by = sys._getframe(1).f_code.co_name
        return frozenset({"critical"}) if asked_by == "batch_for" else frozenset()

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        GOT.append(given_labels(batch))
        return super().__call__(batch)


def train(method: str, trainer: str, tmp_path, **more):
    """A tiny training run of ``tests.test_privileged_reads:<method>`` on ``trainer``."""
    return tiny_training_run(
        f"tests.test_privileged_reads:{method}", trainer, tmp_path / method, **more
    )


class FlickeringRequires(RLOO):
    """Declares ``critical`` at every other read of ``requires``."""

    name: ClassVar[str] = "flickering_requires"
    reads: ClassVar[list[int]] = [0]

    @property
    def requires(self) -> frozenset[str]:
        self.reads[0] += 1
        return frozenset({"critical"}) if self.reads[0] % 2 else frozenset()

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        GOT.append(given_labels(batch))
        return super().__call__(batch)


@pytest.mark.parametrize("trainer", ["sb3", "batched"])
def test_a_requires_that_lies_to_batch_for_gets_no_undeclared_field(trainer, tmp_path):
    GOT.clear()
    result = train("LyingRequires", trainer, tmp_path)
    assert GOT and not any(GOT)  # read once when built (no critical): never given the labels
    assert result.privileged_fields == ()  # and the run records what it was given


@pytest.mark.parametrize("trainer", ["sb3", "batched"])
@pytest.mark.parametrize("first_read", [0, 1])
def test_a_run_records_the_privileged_fields_it_was_given(trainer, first_read, tmp_path):
    FlickeringRequires.reads[0] = first_read
    GOT.clear()
    result = train("FlickeringRequires", trainer, tmp_path)
    assert GOT and len(set(GOT)) == 1  # every batch alike, whatever requires says later
    assert result.privileged_fields == (("critical",) if GOT[0] else ())


@pytest.mark.parametrize("trainer", ["sb3", "batched"])
def test_training_rows_record_the_privileged_fields_and_the_card_reads_them(trainer, tmp_path):
    from baselines.experiments.benchmark import privileged
    from baselines.lib import runs

    methods = [f"tests.test_privileged_reads:{m}" for m in ("LyingRequires", "DeclaredCritical")]
    jobs = training_jobs(methods, trainer)
    if trainer == "sb3":
        rows = [runs.train_record(job).row() for job in jobs]
    else:
        rows = [r.row() for r in runs.train_batch(jobs[:1])]
        rows += [r.row() for r in runs.train_batch(jobs[1:])]
    assert [r["privileged_fields"] for r in rows] == [[], ["critical"]]
    by_method = {r["method"]: [r] for r in rows}
    assert list(privileged.privileged_of(by_method).values()) == [(), ("critical",)]


class DeclaredCritical(RLOO):
    """RLOO that declares the annotations it reads."""

    name: ClassVar[str] = "declared_critical"
    requires: ClassVar[frozenset[str]] = frozenset({"critical"})

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        return Advantages(np.where(batch.critical, super().__call__(batch).advantages, 0.0))


def training_jobs(methods: list[str], trainer: str) -> list:
    """One tiny training run per method (Diluted Doors v1, one floor, L = 2)."""
    from baselines.lib import runs
    from baselines.lib.specs import parse_method

    return runs.plan(
        ENV_ID,
        {"num_floors": 1},
        "routine_length",
        [2],
        [parse_method(m) for m in methods],
        [0],
        budget_episodes=40,
        min_budget_steps=0,
        eval_points=2,
        target=0.9,
        trainer=trainer,
    )


def test_old_rows_read_with_their_built_in_methods_privileged_fields(tmp_path):
    """The shipped references (written before runs recorded the field) read with it, from
    their method specs, the files untouched; a row of outside code is left without, never
    imported, and the card builds its estimator as before."""
    import hashlib
    import json
    from pathlib import Path

    from baselines.experiments.benchmark import privileged
    from baselines.lib import records, runs
    from baselines.lib.results import ResultsFile

    folder = Path(__file__).resolve().parents[1] / "baselines" / "references" / "rb1" / "lite"
    expected = {
        "ppo": [],
        "trajectory_mc": [],
        "rloo": [],
        "gigpo": [],
        "mc_rollout": ["state_ids"],  # rb1's rollouts are simulated on the model, by state id
        "oracle": ["state_ids"],
        "routine_masked": ["critical"],
        'detector_masked{"detector": "critic"}': [],
    }
    found = {}
    for path in sorted(folder.glob("*.jsonl.gz")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check, records.upgrade)
        rows = store.read()
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        lines = runs_files.text(path).splitlines()
        assert all("privileged_fields" not in json.loads(line) for line in lines)
        for row in rows:
            found.setdefault(row["method"], set()).add(tuple(row["privileged_fields"]))
            assert runs.TrainingRecord.from_row(row).row() == row
    assert found == {m: {tuple(f)} for m, f in expected.items()}

    outside = {
        "env_id": ENV_ID,
        "env_kwargs": {"num_floors": 1, "routine_length": 2},
        "method": "nowhere_pkg.estimators:Masked",
        "estimator": {"name": "nowhere_pkg.estimators:Masked", "kwargs": {}},
        "timesteps": [0, 1],
        "success": [0.0, 0.0],
    }
    assert "privileged_fields" not in records.upgrade(outside)  # never imported here
    with pytest.raises(ValueError, match="nowhere_pkg"):
        privileged.privileged_of({"m": [outside]})  # built again: it cannot be
    recorded = {**outside, "privileged_fields": ["critical"]}
    assert privileged.privileged_of({"m": [recorded, recorded]}) == {"m": ("critical",)}
    with pytest.raises(ValueError, match="privileged_fields"):
        runs.TrainingRecord.check({**recorded, "privileged_fields": ["labels"]})


def test_the_lab_and_the_probe_read_requires_once(doors):
    from baselines.experiments.benchmark import merging

    env, sampler, policy, batch = doors
    GOT.clear()
    snr.measure_snr(env, policy, {"x": LyingRequires()}, 40, 4, sampler=sampler)
    assert GOT and not any(GOT)
    GOT.clear()
    probs = policy.probs()
    merging.probe_advantages({"x": LyingRequires()}, sampler, probs, env.oracle(probs).v)
    assert GOT and not any(GOT)
    declared = credit.declare(LyingRequires())
    assert declared.requires == frozenset() and declared.privileged == ()
    assert credit.declare(declared) is declared
    GOT.clear()
    declared(batch)
    assert GOT == [False]


# ------------------------------------------------------------ advantages checked finite
class NaNAt(RLOO):
    """RLOO with the advantage of step 3 of every batch not a number."""

    name: ClassVar[str] = "nan_at"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        adv = super().__call__(batch).advantages.copy()
        adv[3] = np.nan
        return Advantages(adv)


class InfiniteReturns(RLOO):
    """RLOO with finite advantages but an infinite return target at step 5."""

    name: ClassVar[str] = "infinite_returns"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        adv = super().__call__(batch).advantages
        returns = np.zeros_like(adv)
        returns[5] = np.inf
        return Advantages(adv, returns)


NAN = r"estimator 'nan_at' returned non-finite advantages: nan at step 3 "
INF = r"estimator 'infinite_returns' returned non-finite returns: inf at step 5 "


@pytest.mark.parametrize("trainer", ["sb3", "batched"])
@pytest.mark.parametrize(("method", "message"), [("NaNAt", NAN), ("InfiniteReturns", INF)])
def test_the_trainers_refuse_non_finite_advantages_where_the_estimator_returns(
    trainer, method, message, tmp_path
):
    with pytest.raises(ValueError, match=message):
        train(method, trainer, tmp_path)


def test_the_lab_refuses_non_finite_advantages_naming_estimator_field_and_step(doors):
    env, sampler, policy, batch = doors
    with pytest.raises(ValueError, match=NAN):
        snr.measure_snr(env, policy, {"x": NaNAt()}, 40, 4, sampler=sampler)
    with pytest.raises(ValueError, match=INF):
        credit.declare(InfiniteReturns())(batch)
    credit.check_advantages(RLOO()(batch), "rloo")  # finite: nothing to say


# ------------------------------------------------------- the mark wherever a method is named
def test_a_method_is_named_with_its_privileged_mark_once():
    from baselines.experiments.benchmark.privileged import method_label, method_labels

    assert method_label("oracle", ("state_ids",)) == "oracle (privileged: state_ids)"
    assert method_label("rloo", ()) == "rloo" and method_label("rloo", None) == "rloo"
    two = method_label("x:Both", ("critical", "state_ids"))
    assert two == "x:Both (privileged: critical, state_ids)"
    # a label that carries its own mark is not marked twice; cutting keeps the mark whole
    own = "gigpo (privileged: state_id)"
    assert method_label(own, ("state_ids",)) == own
    assert method_label(own, ("state_ids",), width=3) == "gig (privileged: state_id)"
    long = "tests.test_privileged_inputs:DeclaredCritical"
    assert method_label(long, ["critical"], 10) == "tests.test (privileged: critical)"
    labels = method_labels(["oracle", "rloo"], {"oracle": ("state_ids",)})
    assert labels == {"oracle": "oracle (privileged: state_ids)", "rloo": "rloo"}


def test_the_lab_rows_name_each_estimator_with_its_mark():
    from baselines.experiments.benchmark import lab
    from baselines.lib import protocol

    rb2 = protocol.load_protocol("rb2")
    methods = ["rloo", "oracle", "routine_masked", "mc_rollout", "turn_credit"]
    rows = lab.lab_rows(rb2, rb2.tier("smoke"), methods, measure=False)
    marks = {r["estimator"]: (r["privileged"], r["label"]) for r in rows}
    assert marks == {
        "rloo": ([], "rloo"),
        "oracle": (["state_ids"], "oracle (privileged: state_ids)"),
        "routine_masked": (["critical"], "routine_masked (privileged: critical)"),
        "mc_rollout": (["state_ids"], "mc_rollout (privileged: state_ids)"),
        "turn_credit": (["turn_scores"], "turn_credit (privileged: turn_scores)"),
    }


def test_the_figures_legends_carry_the_privileged_marks(monkeypatch, tmp_path):
    from baselines.experiments.benchmark import figures, scores
    from tests.test_report_card import BASE, runs

    legends: list[list[str]] = []

    def keep_legends(fig, path):
        for holder in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
            if holder is not None:
                legends.append([t.get_text() for t in holder.get_texts()])

    monkeypatch.setattr(figures, "save_figure", keep_legends)
    monkeypatch.setattr(scores, "RESAMPLES", 200)
    outside = "mine.pkg:Masked"
    refs = {name: runs(name, BASE) for name in ("ppo", "oracle", "routine_masked")}
    reads = {"oracle": ("state_ids",), "routine_masked": ("critical",), outside: ("critical",)}
    figures.plot_curves(outside, runs(outside, BASE), refs, tmp_path / "c.png", reads)
    ref_scores = {n: scores.method_scores(r) for n, r in refs.items()}
    mine = scores.method_scores(runs(outside, {0: [500.0] * 4, 9: [900.0] * 4}))
    figures.plot_against_rho(outside, mine, ref_scores, tmp_path / "r.png", reads)
    curves, rho = legends
    assert curves == [
        "mine.pkg:Masked (privileged: critical) (this method)",
        "ppo",
        "oracle (privileged: state_ids)",
        "routine_masked (privileged: critical)",
    ]
    assert rho == [
        "ppo",
        "oracle (privileged: state_ids) (same values as ppo)",
        "routine_masked (privileged: critical) (same values as ppo)",
        "mine.pkg:Masked (privileged: critical)",
    ]
