"""Protocol rb3 (issue 38): its file as data (evaluation after every update, the per-decision
target, the tuning grid on seeds no tier scores), its runs, and the per-decision target that
separates the number of decisions from the difficulty of the joint target."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from baselines.experiments.benchmark import report, scores
from baselines.lib import protocol, protocol_runs


def test_rb3_reads_as_rb2_evaluated_after_every_update_with_a_tuning_grid():
    rb2, rb3 = protocol.load_protocol("rb2"), protocol.load_protocol("rb3")
    assert (rb2.evaluation, rb2.per_decision_target, rb2.tuning) == ("schedule", None, None)
    assert rb3.evaluation == "updates" and rb3.per_decision_target == 0.9
    assert rb3.tiers.keys() == rb2.tiers.keys()
    for name, tier in rb3.tiers.items():  # the same settings and seeds: only the reading moves
        assert tier.settings == rb2.tiers[name].settings and tier.seeds == rb2.tiers[name].seeds
        assert not set(rb3.tuning.seeds) & set(tier.seeds)
    assert rb3.hyperparameters == rb2.hyperparameters  # the default column is rb2's
    combos = rb3.tuning.combinations()
    assert len(combos) == 8 and combos[0] == {"learning_rate": 3e-4, "ent_coef": 0.0}
    assert {"learning_rate": 1e-3, "ent_coef": 0.01} in combos  # the default is in the grid


def test_references_added_after_the_release_follow_the_files_and_are_never_listed_twice(
    monkeypatch,
):
    """The 2025-26 methods became rb3 lite references after its release (issue 39): listed
    after the file's, on that tier only, and an addition that repeats a reference (or a
    merged alias) is refused rather than computed and ranked twice."""
    rb3 = protocol.load_protocol("rb3")
    files = rb3.reference_methods
    assert rb3.references_of("lite") == (*files, "empg", "spa", "asymmetric_critic", "tree_grpo")
    assert rb3.references_of("full") == files  # not computed there yet: nothing added
    assert rb3.references_of("paper") == rb3.tier("paper").reference_methods
    assert protocol.load_protocol("rb2").references_of("lite") == files  # rb2 as released
    for repeated in ("ppo", "rloo", "empg"):
        monkeypatch.setitem(protocol.ADDED_REFERENCES, "rb3", {"lite": ("empg", repeated)})
        with pytest.raises(ValueError, match="listed twice"):
            protocol.load_protocol("rb3")
    monkeypatch.setitem(protocol.ADDED_REFERENCES, "rb3", {"huge": ("empg",)})
    with pytest.raises(ValueError, match="huge"):
        protocol.load_protocol("rb3")


def _edited(tmp_path, change):
    """rb3 edited, as a draft of a new version (a released file never changes: an edited copy
    under its own version is refused for its hash before anything else is read)."""
    data = yaml.safe_load(protocol.load_protocol("rb3").path.read_text())
    data.update(version="rbx", status="draft")
    change(data)
    path = tmp_path / "rbx.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["tuning"].update(seeds=[0, 1000]), "are scoring seeds of tier"),
        (lambda d: d["tuning"]["grid"].update(gamma=[0.9]), "tuning.grid searches"),
        (lambda d: d["tuning"].update(objective="final_success"), "tuning.objective"),
        (lambda d: d.update(per_decision_target=1.5), "per_decision_target"),
        (lambda d: d.update(evaluation="schedule"), "eval_points"),
    ],
)
def test_a_malformed_rb3_is_refused_in_one_line(tmp_path, change, message):
    # unedited, the draft copy loads: only the change makes it refused
    assert protocol.load_protocol("rbx", _edited(tmp_path, lambda d: None)).version == "rbx"
    with pytest.raises(ValueError, match=message) as err:
        protocol.load_protocol("rbx", _edited(tmp_path, change))
    assert "\n" not in str(err.value)


def test_rb3_runs_are_evaluated_after_every_update_on_whole_rollouts(tmp_path):
    rb3 = protocol.load_protocol("rb3")
    runs = protocol_runs.plan(rb3, rb3.tier("lite"), "ppo", tmp_path / "a", trainer="batched")
    assert {r.evaluation for r in runs} == {"updates"}
    assert {r.eval_every for r in runs if r.env_id == "DilutedDoors-v1"} == {1024}
    assert all(r.budget % r.eval_every == 0 for r in runs)
    rb2 = protocol.load_protocol("rb2")
    rb2_runs = protocol_runs.plan(rb2, rb2.tier("lite"), "ppo", tmp_path / "b", trainer="batched")
    assert {r.evaluation for r in rb2_runs} == {"schedule"}  # rb2 as it was


def floor_runs(floors: int, per_floor_steps: float, seeds: int = 4) -> list[dict]:
    """Runs on ``floors`` independent floors whose per-floor success rises linearly from 1/3
    (three doors) to 1 at ``per_floor_steps``: joint success is its ``floors``-th power."""
    t = np.arange(0, 40_001, 100, dtype=float)
    records = []
    for seed in range(seeds):
        p = np.minimum(1.0, 1 / 3 + (2 / 3) * t / (per_floor_steps * (1 + 0.01 * seed)))
        records.append(
            {
                "seed": seed, "timesteps": t.tolist(), "success": (p**floors).tolist(),
                "budget": 40_000, "target": 0.9, "rho": 0.5, "density_value": 1,
                "setting": f'E{{"num_floors": {floors}}}', "method": "m",
                "evaluation": "updates",
            }
        )  # fmt: skip
    return records


def test_the_per_decision_target_measures_equal_per_decision_difficulty():
    # every floor learns at the same pace: the joint target costs more steps with more floors
    # (0.9 over 4 floors needs 0.974 per floor), the per-decision one the same at every count
    records = [r for f in (1, 2, 4) for r in floor_runs(f, 10_000)]
    decisions = {f'E{{"num_floors": {f}}}': f for f in (1, 2, 4)}
    joint = scores.method_scores(records)["settings"]
    fair = scores.method_scores(scores.per_decision(records, decisions, 0.9))["settings"]
    steps = {f: joint[name]["rows"][0]["steps_iqm"] for name, f in decisions.items()}
    equal = {f: fair[name]["rows"][0]["steps_iqm"] for name, f in decisions.items()}
    assert steps[1] < steps[2] < steps[4]
    assert equal[1] == equal[2] == equal[4] == steps[1]
    assert scores.per_decision(records, decisions, 0.9)[-1]["target"] == pytest.approx(0.9**4)


def test_the_leaderboard_shows_the_axis_at_both_targets():
    runs = {
        "m": [
            {**r, "density_value": v, "rho": rho, "label": "m"}
            for f in (1, 2)
            for v, rho in ((0, 1.0), (9, 0.1))
            for r in floor_runs(f, 10_000 / rho**0.3)
        ]
    }
    axis = protocol.DecisionsAxis(
        "E{}", "num_floors", {1: 'E{"num_floors": 1}', 2: 'E{"num_floors": 2}'}
    )
    text = report.leaderboard("rb3", "lite", 8, runs, decision_axes=[axis], per_decision_target=0.9)
    assert "## Number of critical decisions: E{} (num_floors 1, 2)\n" in text
    assert "## Number of critical decisions: E{} (num_floors 1, 2), per-decision target" in text
    without = report.leaderboard("rb3", "lite", 8, runs, decision_axes=[axis])
    assert "per-decision" not in without
