"""Protocol rb2: the file (leak-free environments only, the decisions axis, the references'
trainer, merged methods), and the second axis's scores on synthetic runs with a known answer."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines import commands
from baselines.experiments.benchmark import axes, report, scores
from baselines.lib import protocol

LEAKY = {"DilutedDoors-v0", "RoutineGrid-v0", "TeamDilutedDoors-v0", "TeamRoutineGrid-v0"}


def test_rb2_uses_leak_free_environments_and_both_axes():
    import gymnasium as gym

    import routine_envs

    gym.register_envs(routine_envs)
    rb2 = protocol.load_protocol("rb2")
    assert rb2.trainer == "batched"
    assert "rloo" not in rb2.reference_methods and rb2.merged["rloo"] == "trajectory_mc"
    for name in ("lite", "full"):
        tier = rb2.tier(name)
        assert not {s.env_id for s in tier.settings} & LEAKY
        assert len(tier.seeds) == {"lite": 10, "full": 30}[name]
        families = {a.family: sorted(a.settings) for a in tier.axes()}
        assert families == {"DilutedDoors-v1{}": [1, 2, 4], "RoutineGrid-v1{}": [1, 2, 4]}
        for s in tier.settings:
            rhos = []
            for value in s.values:
                env = gym.make(s.env_id, **{**s.env_kwargs, s.density_kwarg: value}).unwrapped
                rhos.append(env.decision_density)
                if s.decisions is not None:  # the kwarg's value is the number of decisions
                    assert env.decision_density * env.max_episode_length == pytest.approx(
                        s.decisions
                    )
            assert max(rhos) >= 1 / 3 and min(rhos) >= 1 / 51 - 1e-12, (name, s.name, rhos)
            if name == "full":
                assert min(rhos) <= 1 / 33 + 1e-12, (s.name, rhos)
    codefix = [s for s in rb2.tier("lite").settings if s.env_id == "CodeFix-v1"]
    assert [s.env_kwargs for s in codefix] == [{"signal_noise": 0.0}]  # the calibrated one
    paper = rb2.tier("paper")
    assert paper.snr is not None and paper.snr.episodes == 1024 and paper.snr.group_size == 16
    (setting,) = paper.settings
    hyper = rb2.method_hyperparameters(setting.section, "mc_rollout")
    assert hyper["policy"] == "transformer" and hyper["n_envs"] == 16
    assert hyper["estimator_kwargs"]["num_rollouts"] == 8
    assert rb2.references_of("paper") == ("ppo", "trajectory_mc", "mc_rollout", "oracle")


def test_a_protocol_file_with_a_bad_axis_or_section_is_one_line(tmp_path):
    # a draft copy under a new version: the released file itself is never edited
    text = (protocol.PROTOCOL_DIR / "rb2.yaml").read_text()
    text = text.replace("\nversion: rb2\n", "\nversion: rb2x\n")
    text = text.replace("\nstatus: released\n", "\nstatus: draft\n")
    for old, new, match in [
        ("hyperparameters: paper,", "hyperparameters: nope,", "does not define"),
        ("decisions_kwarg: num_floors, density", "decisions_kwarg: floors, density", "integer"),
        ("rloo: trajectory_mc", "rloo: nope", "must map"),
        ("trainer: batched", "trainer: jax", "trainer must be"),
    ]:
        path = tmp_path / "rb2x.yaml"
        path.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError, match=match) as err:
            protocol.load_protocol("rb2x", path)
        assert "\n" not in str(err.value)


def power_law_runs(exponents: dict[int, float], seeds: int = 6) -> dict[str, list[dict]]:
    """Runs whose steps to target are ``1000 rho^beta_F`` (a little seed noise), per floor
    count ``F`` of ``exponents``; one setting per ``F``."""
    rng = np.random.default_rng(0)
    records = []
    for floors, beta in exponents.items():
        for value, rho in ((0, 1.0), (3, 0.25), (9, 0.1), (25, 1 / 26)):
            for seed in range(seeds):
                steps = 1000 * rho**beta * (1 + 0.01 * rng.standard_normal())
                budget = 50_000  # above every crossing; evaluated every 10 steps
                t = np.linspace(0, budget, 5001)
                records.append(
                    {
                        "seed": seed,
                        "timesteps": t.tolist(),
                        "success": np.minimum(1.0, 0.9 * t / steps).tolist(),
                        "budget": budget,
                        "target": 0.9,
                        "rho": rho,
                        "setting": f'E{{"num_floors": {floors}}}',
                        "density_value": value,
                        "method": "m",
                    }
                )
    return records


def test_the_trend_recovers_a_known_change_of_the_exponent_per_doubling():
    # beta = -0.2 - 0.3 log2(F): the trend per doubling is -0.3
    records = power_law_runs({1: -0.2, 2: -0.5, 4: -0.8})
    mine = scores.method_scores(records)
    axis = protocol.DecisionsAxis(
        "E{}", "num_floors", {f: f'E{{"num_floors": {f}}}' for f in (1, 2, 4)}
    )
    entry = axes.axis_scores(mine, axis)
    assert [p["decisions"] for p in entry["points"]] == [1, 2, 4]
    assert [round(p["exponent"], 2) for p in entry["points"]] == [-0.2, -0.5, -0.8]
    trend = entry["trend"]
    assert trend["slope"] == pytest.approx(-0.3, abs=0.01) and trend["bound"] == "exact"
    assert trend["low"] <= trend["slope"] <= trend["high"] and trend["high"] - trend["low"] < 0.05


def test_a_censored_exponent_bounds_the_trend_the_way_it_pulls_it():
    # the highest number of decisions (positive weight) with an upper-bound exponent: the true
    # trend is lower still; the lowest (negative weight): higher; both: no bound
    up, no = "upper bound", "not bounded"
    assert scores.trend_bound([-1, 0, 1], ["exact", "exact", up]) == "upper bound"
    assert scores.trend_bound([-1, 0, 1], [up, "exact", "exact"]) == "lower bound"
    assert scores.trend_bound([-1, 0, 1], [up, "exact", up]) == "not bounded"
    assert scores.trend_bound([-1, 0, 1], ["exact", up, "exact"]) == "exact"  # weight 0
    assert scores.trend_bound([-1, 0, 1], ["exact", "exact", no]) == "not bounded"
    # end to end: runs at F = 4's lowest density censored at a budget below their crossing
    records = power_law_runs({1: -0.2, 2: -0.5, 4: -0.8})
    for r in records:
        if r["setting"].endswith("4}") and r["density_value"] == 25 and r["seed"] < 2:
            r["success"] = [min(s, 0.5) for s in r["success"]]
    mine = scores.method_scores(records)
    axis = protocol.DecisionsAxis(
        "E{}", "num_floors", {f: f'E{{"num_floors": {f}}}' for f in (1, 2, 4)}
    )
    entry = axes.axis_scores(mine, axis)
    assert entry["points"][2]["bound"] == "upper bound" and entry["trend"]["bound"] == "upper bound"


def test_the_card_and_leaderboard_show_the_decisions_axis(tmp_path):
    mine = power_law_runs({1: -0.2, 2: -0.5, 4: -0.8})
    ppo = [{**r, "method": "ppo"} for r in power_law_runs({1: -0.1, 2: -0.2, 4: -0.3})]
    axis = protocol.DecisionsAxis(
        "E{}", "num_floors", {f: f'E{{"num_floors": {f}}}' for f in (1, 2, 4)}
    )
    header = {"method": "m", "protocol": "rb2"}
    result = report.write_report(tmp_path, header, mine, {"ppo": ppo}, [], decision_axes=[axis])
    card = (tmp_path / "report.md").read_text()
    assert "## Number of critical decisions: E{} (num_floors 1, 2, 4)" in card
    section = card.split("## Number of critical decisions")[1].splitlines()
    row = next(line for line in section if line.startswith("| **m** |"))
    assert row.split(" | ")[1].startswith("-0.2 [") and row.split(" | ")[-1].startswith("-0.3 [")
    (entry,) = result["decisions_axes"]
    ratios = entry["methods"]["m"]["ratios"]["ppo"]
    # steps ratio to ppo at the lowest density grows with the decisions: 26^0.1, 26^0.3, 26^0.5
    assert [round(ratios[f]["ratio"], 2) for f in (1, 2, 4)] == [
        round(26**x, 2) for x in (0.1, 0.3, 0.5)
    ]
    json.loads((tmp_path / "scores.json").read_text())  # finite, serialisable
    board = report.leaderboard("rb2", "lite", 24, {"ppo": ppo, "m": mine}, decision_axes=[axis])
    assert "Number of critical decisions: E{}" in board and "| m | -0.2" in board


OUTSIDE = '''
from routine_envs import credit

class HalfMC(credit.TrajectoryMC):
    """Half the trajectory advantage (a known scale)."""
    name = "half_mc"
    def __call__(self, batch):
        return credit.Advantages(0.5 * super().__call__(batch).advantages)
'''


def rewrite(bundle, path, change):
    """A copy of ``bundle`` at ``path`` with ``change(members)`` applied to its members."""
    import zipfile

    with zipfile.ZipFile(bundle) as src:
        members = {i.filename: src.read(i) for i in src.infolist()}
    change(members)
    with zipfile.ZipFile(path, "w") as out:
        for name, data in members.items():
            out.writestr(name, data)
    return path


def test_a_submission_bundles_what_its_scores_rebuild_from(tmp_path, monkeypatch, capsys):
    import hashlib
    import sys
    import zipfile

    (tmp_path / "rb2_outside.py").write_text(OUTSIDE)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    common = ["--protocol", "rb2", "--tier", "smoke", "--out", str(out)]
    method = ["--method", "rb2_outside:HalfMC"]
    commands.main(
        ["benchmark", "run", *method, *common, "--workers", "1", "--no-lab", "--no-progress"]
    )
    bundle = commands.main(["benchmark", "submit", *method, *common, "--no-lab"])
    assert bundle.name == "submission.zip"
    assert bundle.parent.name.startswith("rb2_outside_HalfMC-")
    names = set(zipfile.ZipFile(bundle).namelist())
    assert {"SUBMISSION.json", "results.jsonl", "report/report.md", "report/drops.csv"} <= names
    assert "method/rb2_outside.py" in names  # the outside method's source travels with it
    card = (bundle.parent / "report" / "report.md").read_text()
    assert "Number of critical decisions: DilutedDoors-v1" in card  # the smoke tier's axis
    manifest_ = json.loads(zipfile.ZipFile(bundle).read("SUBMISSION.json"))
    assert manifest_["protocol"]["version"] == "rb2" and manifest_["trainer"] == "batched"
    assert manifest_["privileged_fields_read"] == [] and manifest_["runs"] == 8
    assert manifest_["drops"]["planned"] == 8
    capsys.readouterr()
    result = commands.main(["benchmark", "verify-submission", "--bundle", str(bundle)])
    assert result.problems == [], result
    assert "verified: every part rebuilds from the rows" in capsys.readouterr().out

    # a changed row without a matching hash is refused as a whole, in one line
    def change_row(members):
        rows = members["results.jsonl"].decode().splitlines()
        first = json.loads(rows[0])
        first["success"] = [min(1.0, s + 0.05) for s in first["success"]]
        members["results.jsonl"] = ("\n".join([json.dumps(first), *rows[1:]]) + "\n").encode()

    bad = rewrite(bundle, tmp_path / "bad.zip", change_row)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        commands.main(["benchmark", "verify-submission", "--bundle", str(bad)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1
    assert "member results.jsonl differs from its SHA-256 in SUBMISSION.json" in err

    # the same change with its hash updated: the rebuild finds the scores are not the card's
    def change_row_and_hash(members):
        change_row(members)
        listed = json.loads(members["SUBMISSION.json"])
        listed["files"]["results.jsonl"] = hashlib.sha256(members["results.jsonl"]).hexdigest()
        members["SUBMISSION.json"] = json.dumps(listed).encode()

    forged = rewrite(bundle, tmp_path / "forged.zip", change_row_and_hash)
    with pytest.raises(SystemExit) as exit_:
        commands.main(["benchmark", "verify-submission", "--bundle", str(forged)])
    assert "NOT verified" in str(exit_.value.code)  # exit status 1: a message, not 2
    out = capsys.readouterr().out
    assert "PROBLEM: report/report.md differs from its rebuild" in out, out
    sys.modules.pop("rb2_outside", None)


@pytest.mark.parametrize(
    "name, data, match",
    [
        ("../evil.py", b"x", "unexpected member"),
        ("report/../../x", b"x", "unexpected member"),
        ("results.jsonl", b"\0" * (60 * 10**6), "too large"),  # 60 MB of zeros: a zip bomb
    ],
)
def test_a_hostile_submission_file_is_one_line(tmp_path, name, data, match):
    import zipfile

    from baselines.experiments.benchmark import submission

    path = tmp_path / "s.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("SUBMISSION.json", json.dumps({"format": submission.FORMAT, "files": {}}))
        z.writestr(name, data)
    with pytest.raises(submission.InvalidSubmission, match=match) as err:
        submission.read(path)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300
    (tmp_path / "not.zip").write_bytes(b"PK\x03\x04 garbage")
    with pytest.raises(submission.InvalidSubmission, match="not a submission file"):
        submission.read(tmp_path / "not.zip")


def test_the_paper_fit_recovers_a_known_slope_and_the_steps_ratio_its_bounds(tmp_path):
    from baselines.experiments.benchmark import paper

    rhos = [1.0, 0.5, 0.25, 1 / 8, 1 / 16, 1 / 31, 1 / 51]
    snr = []
    for rho in rhos:
        snr.append({"setting": "E{}", "density_value": 0, "rho": rho, "estimator": "trajectory_mc",
                    "snr": 0.1, "snr_low": 0.09, "snr_high": 0.11})  # fmt: skip
        ratio = 1.8 * rho**-0.5
        snr.append({"setting": "E{}", "density_value": 0, "rho": rho, "estimator": "oracle",
                    "snr": 0.18, "snr_low": 0.17, "snr_high": 0.19, "ratio": ratio,
                    "ratio_low": 0.95 * ratio, "ratio_high": 1.05 * ratio})  # fmt: skip
    (fit,) = paper.snr_fits(snr)
    assert fit["slope"] == pytest.approx(-0.5) and fit["r2"] == pytest.approx(1.0)
    assert fit["rho_range"] == [1.0, pytest.approx(1 / 51)]
    # steps: trajectory_mc needs 2x oracle's at the lowest density, oracle censored at the highest
    traj = power_law_runs({1: -0.3})
    oracle = [{**r, "method": "oracle"} for r in power_law_runs({1: -0.1})]
    for r in oracle:
        if r["density_value"] == 0:
            r["success"] = [min(s, 0.5) for s in r["success"]]
    computed = {"trajectory_mc": scores.method_scores(traj), "oracle": scores.method_scores(oracle)}
    rows = paper.steps_rows(computed)
    lowest = next(r for r in rows if r["method"] == "oracle" and r["density_value"] == 25)
    assert lowest["trajectory_mc_over_this"] == pytest.approx(26**0.2, rel=0.02)
    highest = next(r for r in rows if r["method"] == "oracle" and r["density_value"] == 0)
    # oracle reaches the target in no run there: no ratio, and the table says why
    assert highest["ratio_bound"] == "censored" and highest["trajectory_mc_over_this"] is None
    assert highest["ratio_text"].startswith("censored (reference: 0/")
    result = paper.write(tmp_path, snr, computed)
    assert (tmp_path / "paper.png").stat().st_size > 0 and (tmp_path / "paper_snr.csv").is_file()
    text = "\n".join(paper.markdown(result))
    assert "| oracle | -0.500 [" in text and "the paper: -0.508" in text


def test_the_leaderboard_names_merged_methods_once_the_probe_confirms_them(monkeypatch):
    from baselines.experiments.benchmark import command

    rb2 = protocol.load_protocol("rb2")
    ((aliases, why),) = command.merged_not_run(rb2, "smoke", {"trajectory_mc": []}).values()
    assert aliases == ["rloo", "turn_index_norm", 'turn_index_norm{"fix": true}']
    assert "1.14286 (`rloo`), 1 (`turn_index_norm`)" in why and "each of 2 settings" in why
    # an alias that is not one algorithm with its reference is said to be so, not merged
    monkeypatch.setitem(rb2.merged, "gigpo", "trajectory_mc")
    ((aliases, why),) = command.merged_not_run(rb2, "smoke", {"trajectory_mc": []}).values()
    assert (
        "lists `gigpo` as one algorithm with `trajectory_mc`, but the advantage probe does not "
        "confirm it" in why
    )


def test_the_paper_slope_interval_propagates_each_densitys_interval():
    from baselines.experiments.benchmark import paper

    rows = []
    for rho in (1.0, 0.25, 1 / 16):
        ratio = 2 * rho**-0.5
        for estimator, extra in (
            ("trajectory_mc", {}),
            (
                "oracle",
                {
                    "ratio": ratio,
                    "ratio_low": ratio / np.e**0.196,
                    "ratio_high": ratio * np.e**0.196,
                },
            ),
        ):
            rows.append(
                {"setting": "E{}", "density_value": 0, "rho": rho, "estimator": estimator, **extra}
            )
    (fit,) = paper.snr_fits(rows)
    # se of each log ratio 0.1; x = log rho at 0, -log 4, -log 16: c_i = (x_i - mean) / Sxx
    x = np.log([1.0, 0.25, 1 / 16])
    half = 1.96 * 0.1 * np.sqrt((((x - x.mean()) / ((x - x.mean()) ** 2).sum()) ** 2).sum())
    assert fit["slope"] == pytest.approx(-0.5)
    assert fit["slope_high"] - fit["slope"] == pytest.approx(half, rel=1e-3)


def test_a_card_measures_only_the_lab_rows_the_references_do_not_ship(tmp_path, monkeypatch):
    from baselines.experiments.benchmark import lab
    from routine_envs import snr

    rb2 = protocol.load_protocol("rb2")
    smoke = rb2.tier("smoke")
    path = lab.write_reference_lab(rb2, smoke, ["trajectory_mc", "oracle"], tmp_path)
    cache = lab.read_lab(tmp_path)
    assert len(cache) == 2 * 2 * 2  # 2 settings x 2 densities x 2 methods
    measured: list[set[str]] = []
    real = snr.measure_snr

    def spy(env, policy, estimators, **kwargs):
        measured.append(set(estimators))
        return real(env, policy, estimators, **kwargs)

    monkeypatch.setattr(snr, "measure_snr", spy)
    rows = lab.lab_rows(rb2, smoke, ["rloo", "trajectory_mc", "oracle"], cache=cache)
    assert measured and all(m == {"rloo"} for m in measured)  # the references' rows are read
    fresh = lab.lab_rows(rb2, smoke, ["rloo", "trajectory_mc", "oracle"])
    assert [{k: v for k, v in r.items()} for r in rows] == fresh  # the same rows either way
    # one floor of two doors: every episode gives the oracle the same gradient, an infinite SNR
    # that is left empty with a note rather than written as a number no JSON file may hold
    one_floor = [
        r for r in fresh if r["estimator"] == "oracle" and '"num_floors": 1' in r["setting"]
    ]
    assert one_floor and all(r["snr"] is None and "no variance" in r["note"] for r in one_floor)
    json.dumps(fresh, allow_nan=False)
    # a row whose code changed is measured again, not read
    monkeypatch.setattr(lab, "lab_code", lambda: "changed")
    measured.clear()
    lab.lab_rows(rb2, smoke, ["trajectory_mc"], cache=cache)
    assert all(m == {"trajectory_mc"} for m in measured) and measured
    # a file that is not one is ignored, not trusted
    path.write_text("[1, 2")
    assert lab.read_lab(tmp_path) == {}


def test_the_paper_slope_interval_widens_with_initialisations_and_scatter():
    """rb3's paper tier measures several network initialisations: the slope's interval
    resamples them and the fit's residuals, and is never narrower than the episodes' noise."""
    from baselines.experiments.benchmark import paper

    rng = np.random.default_rng(1)
    rows = []
    rhos = (1.0, 0.5, 0.25, 1 / 8, 1 / 16, 1 / 32)
    for seed in range(5):
        tilt = rng.normal(0, 0.08)  # each initialisation its own slope: -0.5 + tilt
        for rho in rhos:
            ratio = 2 * rho ** (-0.5 + tilt) * np.exp(rng.normal(0, 0.05))
            rows.append({"setting": "E{}", "rho": rho, "estimator": "oracle", "init_seed": seed,
                         "ratio": ratio, "ratio_low": ratio / np.e**0.0196,
                         "ratio_high": ratio * np.e**0.0196})  # fmt: skip
    (fit,) = paper.snr_fits(rows)
    assert fit["initialisations"] == 5 and fit["densities"] == 6
    width = fit["slope_high"] - fit["slope_low"]
    # the initialisations' slopes scatter with sd 0.08: the mean's about 0.036, the 95%
    # interval some 0.1 wide; the episodes' noise alone (jackknife) is ten times narrower
    assert 0.05 < width < 0.4
    assert width > 5 * (fit["jackknife_high"] - fit["jackknife_low"])
    assert fit["slope_low"] < fit["slope"] < fit["slope_high"]
    with pytest.raises(ValueError, match="not every initialisation"):
        paper.snr_fits(rows[:-1])
