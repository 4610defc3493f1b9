"""The tuned column (protocol rb3's ``tuning``, issue 38): the search's runs are the default
runs moved to the tuning seeds and the grid, at each setting's two extreme densities; the
choice maximises the objective per setting family with ties to the default; the tuned column is
the default runs with the chosen values; ``benchmark tune`` does all three, resumably."""

from __future__ import annotations

import json

import pytest

from baselines.experiments.benchmark import tuning
from baselines.lib import protocol, protocol_runs
from baselines.lib.runs import key


@pytest.fixture(scope="module")
def rb3_lite(tmp_path_factory):
    rb3 = protocol.load_protocol("rb3")
    tier = rb3.tier("lite")
    folder = tmp_path_factory.mktemp("configs")
    return rb3, tier, protocol_runs.plan(rb3, tier, "ppo", folder, trainer="batched")


def test_the_search_is_the_default_runs_on_the_tuning_seeds_and_the_grid(rb3_lite):
    rb3, tier, defaults = rb3_lite
    search = tuning.tuning_runs(rb3, tier, defaults)
    # 7 settings x 2 extreme densities x 8 combinations x 3 seeds, and CodeFix's default
    # (learning rate 3e-3, entropy 0.03: not in the grid) searched too
    assert len(search) == len(tier.settings) * 2 * 8 * 3 + 2 * 3
    assert {r.seed for r in search} == set(rb3.tuning.seeds)
    assert not {r.seed for r in search} & set(tier.seeds)
    ends = {s.name: {s.values[0], s.values[-1]} for s in tier.settings}
    assert all(r.context["density_value"] in ends[r.context["setting"]] for r in search)
    combos = {
        tuple(sorted(tuning.combination_of(r.hyperparameters, rb3.tuning).items())) for r in search
    }
    assert len(combos) == 9
    codefix = {
        tuple(sorted(tuning.combination_of(r.hyperparameters, rb3.tuning).items()))
        for r in search if r.env_id == "CodeFix-v1"
    }  # fmt: skip
    assert (("ent_coef", 0.03), ("learning_rate", 3e-3)) in codefix and len(codefix) == 9
    # everything but the seed and the searched values is the default run's
    first = defaults[0]
    twin = next(
        r for r in search
        if r.context["setting"] == first.context["setting"] and r.env_kwargs == first.env_kwargs
        and r.hyperparameters["learning_rate"] == 3e-4 and r.hyperparameters["ent_coef"] == 0.0
    )  # fmt: skip
    assert (twin.budget, twin.evaluation, twin.eval_every) == (
        first.budget, first.evaluation, first.eval_every
    )  # fmt: skip
    changed = {
        k for k in first.hyperparameters if first.hyperparameters[k] != twin.hyperparameters[k]
    }
    assert changed == {"learning_rate", "ent_coef"}
    assert len({key(r) for r in search}) == len(search)  # every run its own key


def record(setting: str, value: int, lr: float, ent: float, auc: float, seed: int) -> dict:
    """A tuning run whose step-function AUC is ``auc``."""
    return {
        "setting": setting, "density_value": value, "seed": seed, "evaluation": "updates",
        "hyperparameters": {"learning_rate": lr, "ent_coef": ent}, "timesteps": [0, 10, 20],
        "success": [auc, auc, 1.0], "target": 0.9, "budget": 20,
    }  # fmt: skip


def test_the_choice_maximises_the_mean_auc_per_family_with_ties_to_the_default(rb3_lite):
    rb3, tier, defaults = rb3_lite
    one, two = tier.settings[0].name, tier.settings[1].name  # Doors 1 and 2 floors: one family
    grid = rb3.tuning.combinations()
    records = []
    for c in grid:
        lr, ent = c["learning_rate"], c["ent_coef"]
        # lr 3e-3 best at 1 floor, 3e-4 at 2 floors; the mean picks 3e-3 (0.9 + 0.5 vs 0.6 + 0.7)
        auc1 = {1e-2: 0.2, 3e-3: 0.9, 1e-3: 0.6, 3e-4: 0.6}[lr]
        auc2 = {1e-2: 0.2, 3e-3: 0.5, 1e-3: 0.6, 3e-4: 0.7}[lr]
        for seed in rb3.tuning.seeds:
            for v in (0, 25):
                records.append(record(one, v, lr, ent, auc1, seed))
                records.append(record(two, v, lr, ent, auc2, seed))
    found = tuning.objectives(records, rb3.tuning, tier)
    (family,) = found
    assert family == tier.settings[0].family and len(found[family]) == 8
    default = tuning.default_combinations(rb3, tier, defaults)
    chosen = tuning.choose(found, default)[family]
    # ent_coef does nothing here: a tie between two, which goes to the grid's first
    assert chosen["chosen"] == {"learning_rate": 3e-3, "ent_coef": 0.0}
    assert chosen["auc"] == pytest.approx(0.7) and chosen["default_auc"] == pytest.approx(0.6)
    # every combination equal: the default wins the tie
    flat = [{**r, "success": [0.5, 0.5, 1.0]} for r in records]
    tie = tuning.choose(tuning.objectives(flat, rb3.tuning, tier), default)[family]
    assert tie["chosen"] == {"learning_rate": 1e-3, "ent_coef": 0.01} == tie["default"]
    tuned = tuning.tuned_runs(
        defaults, {f: chosen for f in {s.family for s in tier.settings}}, tier
    )
    assert [r.seed for r in tuned] == [r.seed for r in defaults]
    assert {r.hyperparameters["learning_rate"] for r in tuned} == {3e-3}
    with pytest.raises(ValueError, match="no tuned values"):
        tuning.tuned_runs(defaults, {family: chosen}, tier)  # Grid and CodeFix not tuned


def test_a_default_off_the_grid_is_a_candidate_and_can_be_chosen(rb3_lite):
    # CodeFix's section default (3e-3, entropy 0.03) is not in rb3's grid: a search that never
    # tried it could choose a combination worse than the default column it is shown beside
    rb3, tier, defaults = rb3_lite
    codefix = next(s for s in tier.settings if s.env_id == "CodeFix-v1")
    default = tuning.default_combinations(rb3, tier, defaults)
    assert default[codefix.family] not in rb3.tuning.combinations()
    records = [
        record(codefix.name, v, c["learning_rate"], c["ent_coef"], auc, seed)
        for c, auc in [*((c, 0.5) for c in rb3.tuning.combinations()),
                       (default[codefix.family], 0.8)]
        for seed in rb3.tuning.seeds for v in (codefix.values[0], codefix.values[-1])
    ]  # fmt: skip
    found = tuning.objectives(records, rb3.tuning, tier)[codefix.family]
    assert len(found) == 9 and found[-1]["values"] == default[codefix.family]
    chosen = tuning.choose({codefix.family: found}, default)[codefix.family]
    assert chosen["chosen"] == chosen["default"] == {"learning_rate": 3e-3, "ent_coef": 0.03}
    assert chosen["default_auc"] == pytest.approx(0.8)


def test_benchmark_tune_searches_chooses_and_trains_the_tuned_column(tmp_path):
    from baselines.commands import main

    out = tmp_path / "out"
    argv = ["benchmark", "tune", "--protocol", "rb3", "--tier", "smoke", "--method", "oracle",
            "--out", str(out), "--workers", "1", "--no-progress"]  # fmt: skip
    main(argv)
    folder = out / "rb3" / "smoke"
    searched = (folder / "oracle+tuning" / "results.jsonl").read_text().splitlines()
    assert len(searched) == 2 * 2 * 8 * 3  # 2 settings x 2 densities x 8 combinations x 3 seeds
    written = json.loads((folder / "oracle+tuned" / "TUNED.json").read_text())
    (pick,) = written["chosen"].values()
    tuned = [json.loads(line) for line in (folder / "oracle+tuned" / "results.jsonl").open()]
    assert len(tuned) == 2 * 2 * 2  # 2 settings x 2 densities x the 2 scoring seeds
    assert all(
        r["hyperparameters"]["learning_rate"] == pick["chosen"]["learning_rate"] for r in tuned
    )
    assert "| learning_rate | ent_coef |" in (folder / "oracle+tuned" / "TUNED.md").read_text()
    main(argv)  # resumes: nothing left to train, the same choice
    assert json.loads((folder / "oracle+tuned" / "TUNED.json").read_text()) == written


def test_tune_refuses_a_protocol_without_tuning(capsys):
    from baselines.commands import main

    with pytest.raises(SystemExit) as err:
        main(["benchmark", "tune", "--protocol", "rb2", "--tier", "smoke", "--method", "ppo"])
    assert err.value.code == 2 and "has no tuning" in capsys.readouterr().err


def test_the_leaderboard_ranks_on_the_tuned_column_with_the_default_beside_it(tmp_path, capsys):
    from baselines.commands import main

    refs, out = tmp_path / "refs", tmp_path / "out"
    common = ["--protocol", "rb3", "--tier", "smoke", "--out", str(out), "--workers", "1",
              "--no-progress"]  # fmt: skip
    main(["benchmark", "references", "--compute", "--methods", "ppo", "trajectory_mc",
          "--references-dir", str(refs), *common])  # fmt: skip
    for method in ("ppo", "trajectory_mc"):
        main(["benchmark", "tune", "--method", method, "--references-dir", str(refs), *common])
    # smoke's one-rollout budgets tie every combination: the default is chosen, and its tuned
    # runs are the default runs, copied, not trained again
    assert "8 tuned runs are default runs" in capsys.readouterr().out
    default = [json.loads(x) for x in (refs / "ppo.jsonl").read_text().splitlines()]
    tuned = [json.loads(x) for x in (refs / "ppo+tuned.jsonl").read_text().splitlines()]
    assert sorted(r["key"] for r in tuned) == sorted(r["key"] for r in default)
    assert {p.name for p in refs.iterdir() if p.name.endswith(("+tuned.json", "+tuned.jsonl"))} == {
        "ppo+tuned.jsonl", "ppo+tuned.json", "trajectory_mc+tuned.jsonl",
        "trajectory_mc+tuned.json",
    }  # fmt: skip
    main(["benchmark", "leaderboard", "--references-dir", str(refs), "--unverified-references",
          *common[:6]])  # fmt: skip
    text = (out / "rb3" / "smoke" / "LEADERBOARD.md").read_text()
    assert "tuned: steps / ppo's" in text and "Tuned runs: ppo 8/8, trajectory_mc 8/8" in text
    header = next(line for line in text.splitlines() if line.startswith("| method |"))
    assert header.count("|") - 1 == 10  # 7 default columns (privileged too) + 3 tuned
    # a method's card under rb3 shows its decisions axis at both targets
    main(["benchmark", "run", "--method", "gigpo", "--references-dir", str(refs),
          "--unverified-references", "--no-lab", *common])  # fmt: skip
    card = out / "rb3" / "smoke" / "gigpo" / "report"
    text = (card / "report.md").read_text()
    assert "(num_floors 1, 2), per-decision target (success^(1/F) >= 0.9)" in text
    assert json.loads((card / "scores.json").read_text())["decisions_axes_per_decision"]
    # the choices are reference files: a manifest covers them, so an edited one is refused
    from baselines.experiments.benchmark import manifest

    listed = manifest.reference_files(refs)
    assert {"ppo+tuned.json", "ppo+tuned.jsonl", "ppo.jsonl"} <= set(listed)


def test_plan_prices_the_tuned_column_beside_the_default_one(capsys, monkeypatch, tmp_path):
    """Under a protocol with tuning, plan adds the search and the tuned runs to each sweep's
    cost (priced here on rb2's measured per-step costs: rb3 runs rb2's settings)."""
    from baselines.commands import main
    from baselines.experiments.benchmark import cost

    rb2_costs = cost.measured_costs("rb2", "batched")
    monkeypatch.setattr(cost, "measured_costs", lambda version, trainer: rb2_costs
                        if trainer == "batched" else None)  # fmt: skip
    result = main(["benchmark", "plan", "--protocol", "rb3", "--tier", "lite", "--method", "ppo",
                   "--cores", "1"])  # fmt: skip
    text = capsys.readouterr().out
    assert "With the tuned column (8 combinations, and a section's default where the grid " in text
    rb3 = protocol.load_protocol("rb3")
    tier = rb3.tier("lite")
    defaults = protocol_runs.plan(rb3, tier, "ppo", tmp_path, trainer="batched")
    search = tuning.tuning_runs(rb3, tier, defaults)
    expected = cost.batched_cost(search, rb2_costs[0], 1).cpu_seconds / 3600
    priced = result["tuning"]["ppo"]
    assert priced["search"] == pytest.approx(expected)
    assert (
        priced["tuned"]
        == priced["default"]
        == pytest.approx(result["batched"]["ppo"].cpu_seconds / 3600)
    )
    assert f"| ppo | {len(search)} | {expected:.2f} CPU-h |" in text
    assert "all references" in result["tuning"]
