"""rliable's aggregates across a tier's settings (issue 41), by rliable's definitions: the IQM
over every run and task, P(X > Y) per task as the Mann-Whitney U over n m, the stratified
bootstrap resampling each task's runs on their own; checked against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from baselines.experiments.benchmark import aggregates


def test_iqm_is_the_quarter_trimmed_mean_of_every_run_of_every_task():
    scores = np.arange(40, dtype=float).reshape(8, 5)
    assert aggregates.iqm(scores) == pytest.approx(np.sort(scores.reshape(-1))[10:30].mean())


def test_improvement_per_task_is_the_mann_whitney_share_with_ties_a_half():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(7, 3)).astype(float)  # many ties
    y = rng.integers(0, 4, size=(5, 3)).astype(float)
    got = aggregates.improvement_per_task(x, y)
    for t in range(3):
        u = stats.mannwhitneyu(x[:, t], y[:, t], alternative="greater").statistic
        assert got[t] == pytest.approx(u / (7 * 5))
    back = aggregates.improvement_per_task(y, x)
    assert np.allclose(got + back, 1.0)  # P(X > Y) + P(Y > X) = 1 with ties split


def test_the_bootstrap_resamples_each_tasks_runs_on_their_own(monkeypatch):
    """The counts path (one matrix product per task) gives the P of explicitly resampled runs,
    resample by resample; a task whose runs all score alike keeps its value in every resample
    (every resample holds every task)."""
    monkeypatch.setattr(aggregates, "RESAMPLES", 40)
    rng = np.random.default_rng(1)
    x, y = rng.random((6, 4)), rng.random((5, 4))
    cx, cy = aggregates.resample_counts(x, 3), aggregates.resample_counts(y, 4)
    ix = aggregates.resample_indices(6, 4, 3)
    iy = aggregates.resample_indices(5, 4, 4)
    brute = [
        aggregates.improvement_per_task(
            np.take_along_axis(x, ix[r], axis=0), np.take_along_axis(y, iy[r], axis=0)
        ).mean()
        for r in range(40)
    ]
    tail = 2.5
    est, low, high = aggregates.improvement_from_counts(x, y, cx, cy)
    assert est == pytest.approx(aggregates.improvement_per_task(x, y).mean())
    assert (low, high) == pytest.approx(tuple(np.percentile(brute, [tail, 100 - tail])))
    flat = np.tile(np.array([0.2, 0.4, 0.6, 0.8]), (6, 1))  # every run of a task alike
    assert aggregates.iqm_interval(flat)[1:] == pytest.approx((0.5, 0.5))


def test_a_task_enters_only_where_every_method_ran_the_same_seeds():
    def rows(method, cells):
        return [
            {"setting": s, "density_value": v, "seed": seed, "method": method,
             "timesteps": [0, 100], "success": [0.0, auc], "budget": 100}
            for (s, v), seeds in cells.items() for seed, auc in seeds.items()
        ]  # fmt: skip

    both = {0: 0.5, 1: 0.7}
    records = {
        "a": rows("a", {("S", 0): both, ("S", 5): both, ("T", 0): both}),
        "b": rows("b", {("S", 0): both, ("S", 5): {0: 0.1}, ("T", 0): both}),
    }
    matrices = aggregates.score_matrices(records)
    assert matrices.tasks == [("S", 0), ("T", 0)] and matrices.seeds == [0, 1]
    assert list(matrices.left_out) == [("S", 5)]
    assert matrices.scores["a"].shape == (2, 2)
    with pytest.raises(ValueError, match="nothing to aggregate"):
        aggregates.score_matrices({"a": records["a"][:1], "b": records["b"][2:3]})


def test_the_rb3_lite_leaderboard_ends_with_the_aggregates_and_rb1_does_not():
    """The report option: rb1's shipped leaderboard stays byte for byte (no aggregates); rb3
    lite's shipped one ranks every reference in them."""
    from pathlib import Path

    from baselines.lib import protocol

    rb3 = protocol.load_protocol("rb3")
    assert protocol.load_protocol("rb1").report["aggregates"] == "none"
    assert rb3.report["aggregates"] == "stratified_bootstrap"
    root = Path(__file__).resolve().parents[1] / "baselines" / "references"
    rb1 = (root / "rb1" / "lite" / "LEADERBOARD.md").read_text()
    assert "## Aggregates" not in rb1
    board = (root / "rb3" / "lite" / "LEADERBOARD.md").read_text()
    section = board.split("## Aggregates across the tier's settings", 1)[1]
    table = section.split("| method | IQM, default | IQM, tuned |", 1)[1].split("\n\n", 1)[0]
    for method in rb3.references_of("lite"):
        assert f"| {method}" in table, method


def test_a_card_shows_its_aggregate_against_each_reference_as_the_leaderboard_computes_it(
    tmp_path,
):
    """ppo's rb3 lite card beside trajectory_mc and oracle: its IQM and each P(ppo > reference)
    are :func:`aggregate`'s of the same three methods (the leaderboard's computation), in its
    scores.json and as a section of report.md; a protocol whose report has no aggregates (rb1)
    writes neither."""
    import dataclasses
    import json
    import tempfile
    from pathlib import Path

    from baselines.experiments.benchmark import card, drops, manifest
    from baselines.experiments.benchmark.reading import load_references
    from baselines.lib import protocol, protocol_runs

    rb3 = protocol.load_protocol("rb3")
    refs = manifest.open_references(rb3, "lite")
    with tempfile.TemporaryDirectory() as configs:
        found = load_references(rb3, "lite", refs, Path(configs))
        jobs = protocol_runs.plan(rb3, rb3.tier("lite"), "ppo", Path(configs), trainer=rb3.trainer)
    three = {m: found[m] for m in ("ppo", "trajectory_mc", "oracle")}
    others = {m: r for m, r in three.items() if m != "ppo"}
    settings = card.CardSettings("ppo", "lite", rb3.trainer, None, lab=False)
    claims = {"git commit": "abc", "hardware": "test", "command seconds": 1}

    def write(proto, folder):
        card.write(folder, proto, settings, three["ppo"], others, refs, [],
                   drops.drops_manifest(jobs, three["ppo"], {}),
                   card.reads_of("ppo", three["ppo"], others), claims, None)  # fmt: skip
        return json.loads((folder / "scores.json").read_text()), (folder / "report.md").read_text()

    scores, text = write(rb3, tmp_path / "rb3")
    expected = aggregates.aggregate(three)
    got = scores["aggregates"]
    assert got["method"] == list(expected["iqm"]["ppo"])
    assert got["tasks"] == expected["tasks"] == 28
    for name in others:
        assert got["references"][name]["iqm"] == list(expected["iqm"][name])
        assert got["references"][name]["improvement"] == list(expected["improvement"]["ppo", name])
    section = text.split("## Aggregate across the settings", 1)[1].split("\n## ", 1)[0]
    est, low, high = expected["iqm"]["ppo"]
    assert f"| **ppo** (this method) | {est:.3f} [{low:.3f}, {high:.3f}] | |" in section
    est, low, high = expected["improvement"]["ppo", "oracle"]
    assert high < 0.5  # oracle reads the annotations: ppo loses to it on almost every task
    assert f"{est:.3f} [{low:.3f}, {high:.3f}]* |" in section
    assert text.index("## Aggregate across the settings") < text.index("\n## CodeFix")

    plain = dataclasses.replace(rb3, report={**rb3.report, "aggregates": "none"})
    scores, text = write(plain, tmp_path / "plain")
    assert "aggregates" not in scores and "## Aggregate" not in text
