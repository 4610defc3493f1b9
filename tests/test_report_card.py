"""The benchmark's report card (issue 28): Kaplan-Meier median and AUC in the card, a drops
manifest beside every score, equivalent methods merged into one row, undefined exponents shown
as n/a, the command's true wall time, ``--env-id`` limiting every section, learning curves whose
panels say what they show, and ``plan`` printing its assumptions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from baselines import commands
from baselines.experiments.benchmark import command, drops, figures, merging, report, scores
from baselines.experiments.benchmark import lab as benchmark_lab
from baselines.lib import protocol, protocol_runs
from baselines.lib.results import ResultsFile
from baselines.lib.runner import RunFailed, run_resumable
from baselines.lib.runs import Run
from baselines.lib.runs import key as run_key
from tests import runs_files

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "baselines" / "references" / "rb1" / "lite"


@pytest.fixture(autouse=True)
def few_resamples(monkeypatch):
    monkeypatch.setattr(scores, "RESAMPLES", 100)


def record(
    seed: int,
    crossing: float | None,
    budget: int = 1000,
    rho: float = 0.5,
    value: int = 1,
    label: str = "m",
    setting: str = 'E-v0{"floors": 2}',
) -> dict:
    """A synthetic run whose success crosses 0.9 at ``crossing`` (never: ``None``)."""
    t = np.linspace(0, budget, 101)
    s = np.full(101, 0.5) if crossing is None else np.minimum(1.0, 0.9 * t / crossing)
    return {
        "seed": seed,
        "timesteps": t.tolist(),
        "success": s.tolist(),
        "budget": budget,
        "target": 0.9,
        "rho": rho,
        "setting": setting,
        "density_value": value,
        "density_kwarg": "routine_length",
        "label": label,
        "method": label,
        "wall_time": 1.5,
    }


def runs(label: str, steps: dict[int, list[float | None]], budget: int = 10_000) -> list[dict]:
    """Runs of ``label`` per density value ``v`` (rho ``1 / (v + 1)``): one per listed crossing."""
    return [
        record(i, c, budget=budget, rho=1 / (v + 1), value=v, label=label)
        for v, crossings in steps.items()
        for i, c in enumerate(crossings)
    ]


BASE = {0: [1000.0, 1100.0, 1200.0, 1300.0], 9: [3000.0, 3300.0, 3600.0, None]}


# ----------------------------------------------------------------------- scores in the card
def test_an_exponent_with_every_run_censored_is_undefined_not_zero():
    censored = runs("m", {0: [None] * 4, 9: [None] * 4})
    entry = scores.method_scores(censored)["settings"]['E-v0{"floors": 2}']
    assert entry["exponent"]["exponent"] is None  # was 0: the slope of the budgets
    assert scores.exponent_text(entry["exponent"]).startswith("n/a (no run reached")
    card = report.markdown(
        {"method": "m", "protocol": "rb1"}, scores.method_scores(censored), {}, {}, []
    )
    assert "~ 0 [0.000, 0.000]" not in card and "| **m** | n/a (no run reached" in card
    # one density reached, none at the other: still no exponent (the slope to a budget)
    some = runs("m", {0: [1000.0] * 4, 9: [None] * 4})
    fit = scores.method_scores(some)["settings"]['E-v0{"floors": 2}']["exponent"]
    assert fit["exponent"] is None and fit["note"].startswith("no run reached the target at rho")
    # some runs censored at the lowest density: an upper bound
    part = runs("m", {0: [1000.0] * 4, 9: [4000.0, 4200.0, None, None]})
    fit = scores.method_scores(part)["settings"]['E-v0{"floors": 2}']["exponent"]
    assert fit["exponent"] is not None and fit["bound"] == "upper bound"


def test_the_card_shows_the_kaplan_meier_median_and_the_auc_per_density():
    mine = scores.method_scores(runs("m", BASE))
    rows = {r["density_value"]: r for r in mine["settings"]['E-v0{"floors": 2}']["rows"]}
    card = report.markdown({"method": "m", "protocol": "rb1"}, mine, {}, {}, [])
    km = card.split("Kaplan-Meier median")[1].split("\n\n")[1].splitlines()
    assert km[0] == "| method | 0 (rho 1) | 9 (rho 0.1) |"
    # KM median of 1000..1300: the second crossing; of 3000, 3300, 3600, censored: 3300
    assert rows[0]["km_median"] == pytest.approx(1100) and rows[9]["km_median"] == 3300
    assert km[2] == "| **m** | 1.1e+03 | 3.3e+03 |"
    auc = card.split("Normalized AUC")[1].split("\n\n")[1].splitlines()[2]
    assert auc.startswith(f"| **m** | {rows[0]['auc_iqm']:.3f} [") and auc.count("[") == 2


# ------------------------------------------------------------------------ learning curves
def test_learning_curve_panels_say_what_they_show_with_one_legend_that_fits(monkeypatch, tmp_path):
    seen = {}

    def inspect(fig, path):
        fig.canvas.draw()
        box = fig.bbox
        texts = [ax.yaxis.label for ax in fig.axes] + [ax.title for ax in fig.axes]
        texts += [t for legend in fig.legends for t in legend.get_texts()]
        seen["outside"] = [
            t.get_text()
            for t in texts
            if t.get_text()
            and not (
                box.x0 - 1 <= t.get_window_extent().x0
                and t.get_window_extent().x1 <= box.x1 + 1
                and box.y0 - 1 <= t.get_window_extent().y0
                and t.get_window_extent().y1 <= box.y1 + 1
            )
        ]
        seen["titles"] = [ax.get_title() for ax in fig.axes if ax.axison]
        seen["legends"] = [[t.get_text() for t in lg.get_texts()] for lg in fig.legends]
        seen["panel legends"] = [ax.get_legend() for ax in fig.axes if ax.get_legend()]

    monkeypatch.setattr(figures, "save_figure", inspect)
    mine = runs("mine", BASE)
    refs = {name: runs(name, BASE) for name in ("ppo", "rloo", "oracle")}
    refs["oracle"] = refs["oracle"][:4]  # only at density 0: the legend still names it
    figures.plot_curves("mine", mine, refs, tmp_path / "c.png")
    assert seen["titles"] == [
        'E-v0 {"floors": 2}\nroutine_length = 0, rho = 1',
        'E-v0 {"floors": 2}\nroutine_length = 9, rho = 0.1',
    ]
    assert seen["outside"] == []  # no label, title or legend entry cut off
    assert seen["panel legends"] == []
    assert seen["legends"] == [["mine (this method)", "ppo", "rloo", "oracle"]]


# -------------------------------------------------------------------------- drops manifest
def fail_on_seed_one(job: dict) -> dict:
    """A worker whose run of seed 1 raises (the others return a record)."""
    if job["seed"] == 1:
        raise RuntimeError("CUDA out of memory (made up)")
    return {"key": job["key"], "value": 1.0}


def test_a_run_that_raises_is_kept_in_the_failures_file(tmp_path):
    path = tmp_path / "results.jsonl"
    jobs = [{"key": f"k{s}", "seed": s} for s in range(3)]
    with pytest.raises(RunFailed):
        run_resumable(jobs, lambda j: j["key"], fail_on_seed_one, path, 1, progress=False)
    assert drops.failed_runs(path) == {
        "k1": "the run raised: seed 1: RuntimeError: CUDA out of memory (made up)"
    }


@pytest.fixture
def lite_doors_jobs(tmp_path):
    rb1 = protocol.load_protocol("rb1")
    return protocol_runs.plan(
        rb1, rb1.tier("lite"), "trajectory_mc", tmp_path / "configs", ["DilutedDoors-v1"]
    )


def job_record(job: Run, crossing: float | None, success: float | None = None) -> dict:
    rec = record(
        job.seed,
        crossing,
        budget=job.budget,
        rho=job.context["rho"],
        value=job.context["density_value"],
        label="trajectory_mc",
        setting=job.context["setting"],
    )
    if success is not None:
        rec["success"] = [success] * len(rec["success"])
    return {**rec, "key": run_key(job)}


def test_the_drops_manifest_names_every_failed_censored_and_missing_run(lite_doors_jobs, tmp_path):
    """A results file with one run that reached the target, one censored, one whose record was
    refused (a NaN success) and one that raised; the other 36 planned runs never ran."""
    jobs = lite_doors_jobs
    assert len(jobs) == 40
    path = tmp_path / "results.jsonl"
    store = ResultsFile(path)
    assert store.append(job_record(jobs[0], 5000.0), report=lambda _: None)
    assert store.append(job_record(jobs[1], None), report=lambda _: None)
    assert not store.append(job_record(jobs[2], 5000.0, success=float("nan")), lambda _: None)
    store.note_failure(run_key(jobs[3]), "RuntimeError: diverged")
    records = store.load()
    manifest = drops.drops_manifest(jobs, records, drops.failed_runs(path))
    assert manifest["total"] == {
        "planned": 40,
        "finished": 2,
        "reached": 1,
        "censored": 1,
        "failed": 2,
        "missing": 36,
    }
    by_seed = {(r["density_value"], r["seed"]): r for r in manifest["runs"]}
    first = jobs[0].context["density_value"]
    assert by_seed[(first, 0)]["status"] == "reached" and by_seed[(first, 0)]["reason"] == ""
    censored = by_seed[(first, 1)]
    budget = f"{jobs[1].budget:,}"
    assert censored["status"] == "censored"
    assert censored["reason"].startswith(f"success stayed below 0.9 within its budget of {budget}")
    assert "highest 0.500" in censored["reason"]
    refused, raised = by_seed[(first, 2)], by_seed[(first, 3)]
    assert refused["status"] == "failed" and "record refused" in refused["reason"]
    assert "not finite" in refused["reason"]
    assert raised == {
        **raised,
        "status": "failed",
        "reason": "the run raised: RuntimeError: diverged",
    }
    cell = manifest["cells"][0]
    assert (cell["planned"], cell["reached"], cell["censored"], cell["failed"]) == (10, 1, 1, 2)
    # in the card, beside the scores, and as CSV and JSON
    header = {"method": "trajectory_mc", "protocol": "rb1"}
    folder = tmp_path / "report"
    report.write_report(folder, header, records, {}, [], manifest)
    card = (folder / "report.md").read_text()
    assert "**runs**: 40 planned: 2 finished (1 reached the target, 1 censored), 2 failed, " in card
    section = card.split(f"## {jobs[0].context['setting']}")[1]
    assert "| 0 | 1 | 10 | 2 | 1 | 1 | 2 | 6 |" in section
    assert "seed 3: failed: the run raised: RuntimeError: diverged" in section
    assert "seed 1: censored: success stayed below 0.9" in section
    curves = (folder / "learning_curves.csv").read_text().splitlines()
    assert (
        curves[0] == "method,setting,density_value,timestep,success_iqm" and len(curves) == 1 + 101
    )
    csv_rows = (folder / "drops.csv").read_text().splitlines()
    assert csv_rows[0] == "setting,density_value,rho,seed,status,reason" and len(csv_rows) == 41
    saved = json.loads((folder / "drops.json").read_text())
    assert saved["total"] == manifest["total"]
    assert json.loads((folder / "scores.json").read_text())["drops"]["total"]["failed"] == 2


# ------------------------------------------------------------------- equivalent methods
def test_methods_equal_within_float_noise_are_one_row_with_aliases():
    a = runs("a", BASE)
    b = [{**r, "label": "b", "success": (np.array(r["success"]) * (1 - 1e-12)).tolist()} for r in a]
    c_steps = {0: BASE[0], 9: [3000.0, 3300.0, 3780.0, None]}  # one seed 5% slower at rho 0.1
    methods = {
        "a": scores.method_scores(a),
        "b": scores.method_scores(b),
        "c": scores.method_scores(runs("c", c_steps)),
    }
    groups = merging.merged(methods)
    assert [(g["name"], g["aliases"], g["cells"]) for g in groups] == [("a", ["b"], 2)]
    assert groups[0]["largest_relative_difference"] < 1e-9
    assert "same steps to target as `a` for every seed on all 2 settings" in groups[0]["why"]
    near = merging.near_misses(methods)
    assert [n["methods"] for n in near] == [["a", "c"], ["b", "c"]]
    assert "on 1 of the 2 settings" in near[0]["why"] and "difference 0.048" in near[0]["why"]
    # a cell where every seed is censored in both is no evidence: never merges on its own
    never = {0: [None] * 4}
    assert (
        merging.merged(
            {
                "x": scores.method_scores(runs("x", never)),
                "y": scores.method_scores(runs("y", never)),
            }
        )
        == []
    )
    # the card: one row "m (= b)", the alias's row gone, the sentence said
    header = {"method": "m", "protocol": "rb1"}
    mine = scores.method_scores([{**r, "label": "m"} for r in a])
    refs = {"b": methods["b"], "c": methods["c"]}
    card = report.markdown(header, mine, refs, {}, [], None, merging.merged({"m": mine, **refs}))
    assert "| **m (= b)** |" in card and "| b |" not in card and "| c |" in card
    assert "## Equivalent methods (one row each)" in card
    near_card = merging.near_misses({"m": mine, **refs})
    card = report.markdown(header, mine, refs, {}, [], None, [], near_card)
    kept = card.split("## Methods that coincide on some settings only (kept apart)")[1]
    assert "- `m` and `c` give the same steps to target for every seed" in kept
    board = report.leaderboard("rb1", "lite", 8, {"a": a, "b": b, "c": runs("c", c_steps)})
    assert "| a (= b) |" in board and "| b |" not in board and "- **a** = b:" in board


def test_the_cards_pairs_that_coincide_on_the_same_cells_are_one_line():
    """At one decision and rho 1 several references take the card's method's updates: one
    bullet names them all (the rb2 card listed four alike), other pairs keep theirs."""
    slower = {0: BASE[0], 9: [3000.0, 3300.0, 3780.0, None]}
    faster = {0: BASE[0], 9: [2900.0, 3300.0, 3600.0, None]}
    mine = scores.method_scores(runs("m", BASE))
    refs = {
        "c": scores.method_scores(runs("c", slower)),
        "d": scores.method_scores(runs("d", faster)),
        "e": scores.method_scores(runs("e", {0: [900.0, 1100.0, 1200.0, 1300.0], 9: BASE[9]})),
    }
    near = merging.near_misses({"m": mine, **refs})
    assert len([n for n in near if "m" in n["methods"]]) == 3
    lines = report.near_lines("m", near)
    mine_lines = [line for line in lines if line.startswith("- `m` ")]
    assert mine_lines[0] == (
        "- `m` gives the same steps to target as `c`, `d` for every seed (within 1e-06) only on "
        'E-v0{"floors": 2} at 0, and differs from each of them on the 1 other settings and '
        "densities they share: kept as separate rows."
    )
    assert len(mine_lines) == 2 and mine_lines[1].startswith("- `m` and `e` give the same steps")
    assert any(line.startswith("- `c` and `d` give the same") for line in lines)


def test_no_shipped_rb1_reference_merges_and_rloo_matches_trajectory_mc_only_where_short(
    tmp_path,
):
    """rloo = 8/7 trajectory_mc, removed by PPO's per-minibatch normalisation: from one seed
    they train alike until rounding differences grow. On the shipped rb1 lite references their
    per-seed steps agree within 1e-6 at Diluted Doors rho 1 and 1/4 only, so nothing merges."""
    rb1 = protocol.load_protocol("rb1")
    refs = command.load_references(
        rb1, "lite", command.manifest.open_references(rb1, "lite"), tmp_path
    )
    computed = {name: scores.method_scores(recs) for name, recs in refs.items()}
    assert merging.merged(computed) == []
    near = {tuple(n["methods"]): n for n in merging.near_misses(computed)}
    assert list(near) == [("trajectory_mc", "rloo")]
    doors = 'DilutedDoors-v1{"num_floors": 2}'
    assert near[("trajectory_mc", "rloo")]["coinciding"] == [[doors, 0], [doors, 3]]
    diffs = merging.cell_differences(computed["trajectory_mc"], computed["rloo"])
    # the figures docs/benchmark.md quotes: rounding grows with the length of training
    quoted = {0: 2.4e-8, 3: 1.3e-7, 9: 1.2e-4, 29: 0.23}
    for value, diff in quoted.items():
        assert diffs[(doors, value)] == pytest.approx(diff, rel=0.05), value
    grid = "RoutineGrid-v0{}"
    assert [round(diffs[(grid, v)], 4) for v in (4, 8)] == [0.004, 0.0976]
    assert diffs[(grid, 2)] == pytest.approx(1.7e-6, rel=0.05) and np.isinf(diffs[(grid, 30)])
    assert diffs[("CodeFix-v1{}", 2)] == pytest.approx(0.22, rel=0.05)
    assert ("CodeFix-v1{}", 64) not in diffs  # every run of both censored: no evidence


# ------------------------------------------------------------- the command: env id, wall
def test_env_id_limits_every_section_and_the_wall_time_is_the_commands(tmp_path, monkeypatch):
    monkeypatch.setattr(protocol, "REFERENCE_METHODS", ("ppo", "rloo"))
    out = tmp_path / "out"
    folder = out / "rb1" / "lite" / "rloo"
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text(runs_files.text(SHIPPED / "rloo.jsonl.gz"))
    age_before = report.command_seconds(0.0)
    argv = ["report", "--method", "rloo", "--protocol", "rb1", "--tier", "lite"]
    argv += ["--env-id", "DilutedDoors-v1"]
    path = commands.main(["benchmark", *argv, "--out", str(out)])
    data = json.loads((path / "scores.json").read_text())
    doors = ['DilutedDoors-v1{"num_floors": 2}']
    assert list(data["method"]["settings"]) == doors
    assert (
        list(data["references"]) == ["ppo"] and list(data["references"]["ppo"]["settings"]) == doors
    )
    assert data["lab"] and {r["setting"] for r in data["lab"]} == set(doors)
    assert data["drops"]["total"]["planned"] == 40 and data["drops"]["total"]["reached"] == 40
    card = (path / "report.md").read_text()
    assert "CodeFix" not in card and "RoutineGrid" not in card
    assert "Reference runs here (of the same plan): ppo 40/40 finished, 0 censored." in card
    wall = re.search(r"\*\*wall time\*\*: (\d+) s for this command \(from its start", card)
    assert wall and int(wall.group(1)) >= int(age_before)  # counted from the process start


def test_plan_prints_the_assumptions_of_its_estimate(capsys):
    commands.main(["benchmark", "plan", "--protocol", "rb1", "--tier", "lite", "--cores", "2"])
    out = capsys.readouterr().out
    assert "This estimate assumes:" in out and "a quiet machine" in out
    assert (
        "median of wall_time / steps_trained over the shipped lite reference runs (960 runs" in out
    )
    assert report.hardware() in out and "start-up, the lab" in out


# ---------------------------------------------------------------------------------- docs
def test_the_docs_define_the_bound_signs_and_name_the_results_folder():
    text = (ROOT / "docs" / "benchmark.md").read_text()
    section = text.split("### Bounds and undefined values")[1].split("\n### ")[0]
    for sign in ("`>=` on steps, exponents and ratios", "`<=` on steps, exponents and ratios"):
        assert f"- {sign}: " in section, sign
    assert "- `~` on exponents and ratios: " in section and "- `n/a` on an exponent: " in section
    spec = 'my_estimators:EntropyWeightedMC{"power": 1.0}'
    folder = f"results/benchmark/rb2/lite/{protocol_runs.method_slug(spec)}/"
    assert folder in text  # the folder a reader's run lands in, spelled out
    assert "`submissions/<protocol>/<tier>/<name>/`" in text  # where a submission is sent


def test_the_rb1_leaderboard_is_what_the_report_prints_from_its_rows(monkeypatch, tmp_path):
    """rb1's shipped leaderboard is the report of its shipped rows, byte for byte (no shipped
    pair merges; censored cells printed as rb3's rules print them: its numbers unchanged)."""
    monkeypatch.setattr(scores, "RESAMPLES", 2000)
    rb1 = protocol.load_protocol("rb1")
    refs = command.manifest.open_references(rb1, "lite")
    found = command.load_references(rb1, "lite", refs, tmp_path)
    text = command.leaderboard_text(rb1, "lite", refs, found)
    assert text == (SHIPPED / "LEADERBOARD.md").read_text()


def test_advantages_related_by_a_positive_affine_map_are_found():
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    c, d = merging.affine_relation(a, 8 / 7 * a + 0.3)
    assert (c, d) == (pytest.approx(8 / 7), pytest.approx(0.3))
    assert merging.affine_relation(a, -a) is None  # a negative scale flips the update
    assert merging.affine_relation(a, a + 1e-6 * rng.normal(size=200)) is None  # not exact
    assert merging.affine_relation(a, np.ones(200)) is None
    assert merging.advantage_relations({"x": a, "y": 2 * a, "z": a**2}) == {
        "x": {"y": [pytest.approx(2.0), pytest.approx(0.0, abs=1e-12)]},
        "y": {"x": [pytest.approx(0.5), pytest.approx(0.0, abs=1e-12)]},
        "z": {},
    }


def test_the_lab_probes_rloo_as_eight_sevenths_of_trajectory_mc_and_the_card_merges_them(tmp_path):
    rb1 = protocol.load_protocol("rb1")
    methods = ["trajectory_mc", "rloo", "gigpo"]
    lab = benchmark_lab.lab_rows(rb1, rb1.tier("lite"), methods, ["DilutedDoors-v1"])
    by = {(r["estimator"], r["density_value"]): r for r in lab}
    for value in (0, 29):
        c, d = by[("trajectory_mc", value)]["advantages_affine_to"]["rloo"]
        assert c == pytest.approx(8 / 7, rel=1e-9) and abs(d) < 1e-12  # G / (G - 1), G = 8
        assert by[("gigpo", value)]["advantages_affine_to"] == {}
        assert by[("rloo", value)]["normalize_advantage"] is True
    said = merging.advantage_evidence(lab, "trajectory_mc", "rloo")
    assert (
        "`rloo`'s advantages are 1.14286 times `trajectory_mc`'s plus a constant at all 2" in said
    )
    assert "per-minibatch advantage normalisation removes" in said
    assert "not an increasing affine function" in merging.advantage_evidence(lab, "rloo", "gigpo")
    probed = merging.probe_pairs(lab)
    assert set(probed) == {frozenset(("trajectory_mc", "rloo"))}
    assert probed[frozenset(("trajectory_mc", "rloo"))]["scales"] == [1.142857]
    # without per-minibatch normalisation the scale changes the step size: not one algorithm
    unnormalised = [{**r, "normalize_advantage": r["estimator"] != "rloo"} for r in lab]
    assert merging.probe_pairs(unnormalised) == {}
    # in the card: one row, even where their steps differ (rounding grown during training)
    doors = 'DilutedDoors-v1{"num_floors": 2}'
    a = [{**r, "setting": doors} for r in runs("trajectory_mc", BASE)]
    b = [{**r, "label": "rloo"} for r in a[:4]] + [
        {**r, "label": "rloo"} for r in runs("rloo", {9: [3000.0, 3400.0, 3600.0, None]})
    ]
    b[4:] = [{**r, "setting": doors} for r in b[4:]]
    header = {"method": "trajectory_mc", "protocol": "rb1"}
    result = report.write_report(tmp_path, header, a, {"rloo": b}, lab)
    assert result["near_equivalent_methods"] == []
    (group,) = result["equivalent_methods"]
    assert group["name"] == "trajectory_mc" and group["aliases"] == ["rloo"]
    assert "`rloo` is one algorithm with `trajectory_mc`" in group["why"]
    assert "its advantages are 1.14286 times `trajectory_mc`'s" in group["why"]
    card = (tmp_path / "report.md").read_text()
    assert "| **trajectory_mc (= rloo)** |" in card
    assert not any(line.startswith("| rloo |") for line in card.splitlines())
