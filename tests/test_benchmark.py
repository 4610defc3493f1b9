"""The benchmark protocol: frozen data, the scores on synthetic runs (censoring, bounds, the
exponent), and the smoke tier end to end with an outside method."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from baselines import commands
from baselines.experiments.benchmark import command, cost, report, scores
from baselines.experiments.benchmark import lab as benchmark_lab
from baselines.lib import protocol, protocol_runs, runs

ROOT = Path(__file__).resolve().parents[1]


def test_protocol_is_pinned_once_released_and_complete():
    rb1 = protocol.load_protocol("rb1")
    assert rb1.status in ("draft", "released")
    if rb1.status == "released":
        assert rb1.sha256 == protocol.RELEASED["rb1"]
    lite = rb1.tier("lite")
    assert len(lite.seeds) >= 10
    assert {s.env_id for s in lite.settings} == {"DilutedDoors-v1", "RoutineGrid-v0", "CodeFix-v1"}
    assert all(4 <= len(s.values) <= 6 for s in lite.settings)
    with pytest.raises(ValueError, match="tiers"):
        rb1.tier("huge")
    with pytest.raises(ValueError, match="no such protocol"):
        protocol.load_protocol("rb0")


def test_an_edited_released_protocol_is_refused(tmp_path, monkeypatch):
    text = (
        (ROOT / "baselines/protocols/rb1.yaml")
        .read_text()
        .replace("status: draft", "status: released")
    )
    released = tmp_path / "rb1.yaml"
    released.write_text(text)
    monkeypatch.delitem(protocol.RELEASED, "rb1", raising=False)
    with pytest.raises(ValueError, match="never changes"):  # released without a pinned hash
        protocol.load_protocol("rb1", released)
    monkeypatch.setitem(protocol.RELEASED, "rb1", protocol.file_sha256(released))
    assert protocol.load_protocol("rb1", released).status == "released"
    released.write_text(text.replace("target: 0.9", "target: 0.8"))
    with pytest.raises(ValueError, match="never changes"):
        protocol.load_protocol("rb1", released)


def test_every_tier_spans_the_densities_it_promises():
    import gymnasium as gym

    import routine_envs

    gym.register_envs(routine_envs)
    rb1 = protocol.load_protocol("rb1")
    for tier in ("lite", "full"):
        for s in rb1.tier(tier).settings:
            rhos = [
                gym.make(
                    s.env_id, **{**s.env_kwargs, s.density_kwarg: v}
                ).unwrapped.decision_density
                for v in s.values
            ]
            assert min(rhos) <= 1 / 30 and max(rhos) >= 1 / 3, (tier, s.env_id, rhos)


def run_record(
    seed: int,
    crossing: float | None,
    budget: int = 1000,
    rho: float = 0.5,
    value: int = 1,
    label: str = "m",
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
        "setting": "E{}",
        "density_value": value,
        "label": label,
        "method": label,
    }


def test_censored_runs_count_at_the_budget_and_make_a_lower_bound():
    runs = [run_record(i, c) for i, c in enumerate([100, 200, 300, None])]
    row = scores.setting_scores(runs)
    assert row["reached"] == 3 and row["steps"][3] == 1000 and row["censored"] == [0, 0, 0, 1]
    assert row["steps_bound"] == "lower bound"
    # the crossing is interpolated between evaluations (every 10 steps here)
    assert row["steps"][:3] == pytest.approx([100, 200, 300])
    assert row["km_median"] == pytest.approx(200) and row["km_median_bound"] == "exact"
    most = [run_record(i, c) for i, c in enumerate([100, None, None, None])]
    assert scores.setting_scores(most)["km_median_bound"] == "lower bound"
    assert scores.shown(1000.0, "lower bound") == ">= 1e+03"


def test_dilution_exponent_recovers_a_known_power_law_and_flags_censoring():
    rows = []
    for rho in (1.0, 0.25, 1 / 16):
        steps = 100 * rho**-0.5 * np.array([0.9, 1.0, 1.1, 1.0, 0.95, 1.05])
        runs = [run_record(i, s, budget=10_000, rho=rho) for i, s in enumerate(steps)]
        rows.append({"rho": rho, **scores.setting_scores(runs)})
    fit = scores.dilution_exponent(rows)
    assert fit["exponent"] == pytest.approx(-0.5, abs=0.03) and fit["bound"] == "exact"
    assert fit["low"] <= fit["exponent"] <= fit["high"]
    # censoring at the lowest density only: the true slope is steeper, the estimate a bound
    steps = 400 * np.array([0.9, 1.0, 1.1, 1.0, 0.95, 1.05])
    some = [
        run_record(i, s if i < 4 else None, budget=430, rho=1 / 16) for i, s in enumerate(steps)
    ]
    rows[2] = {"rho": 1 / 16, **scores.setting_scores(some)}
    assert scores.dilution_exponent(rows)["bound"] == "upper bound"
    # no run reaching it there: no slope at all (it would be the budget's), and why
    censored = [run_record(i, None, budget=300, rho=1 / 16) for i in range(6)]
    rows[2] = {"rho": 1 / 16, **scores.setting_scores(censored)}
    fit = scores.dilution_exponent(rows)
    assert fit["exponent"] is None and fit["bound"] == "censored"
    assert fit["note"] == "no run reached the target at rho 0.0625 censored (0/6 within budget 300)"


def test_ratio_bounds_follow_the_censored_side():
    fast = {"steps": [100.0] * 5, "censored": [False] * 5}
    slow = {"steps": [400.0] * 4 + [1000.0], "censored": [False] * 4 + [True]}
    r = scores.ratio_to(slow, fast)
    assert r["ratio"] == pytest.approx(4.0) and r["bound"] == "lower bound"
    assert scores.ratio_to(fast, slow)["bound"] == "upper bound"


def test_leaderboard_ranks_by_lowest_density_and_gives_the_ratio_to_ppo():
    def runs(label, scale):
        return [
            run_record(i, scale * c * rho**-0.5, budget=100_000, rho=rho, value=v, label=label)
            for v, rho in enumerate((1.0, 1 / 16))
            for i, c in enumerate([0.9, 1.0, 1.1, 1.0, 0.95, 1.05])
        ]

    refs = {"ppo": runs("ppo", 1000), "trajectory_mc": runs("trajectory_mc", 2000)}
    text = report.leaderboard("rb1", "lite", 12, refs)
    rows = [line for line in text.splitlines() if line.startswith(("| ppo", "| trajectory"))]
    assert rows[0].startswith("| ppo |") and "| n/a |" in rows[0]  # faster first, no self-ratio
    ratio = float(rows[1].split(" | ")[4].split(" [")[0])
    assert ratio == pytest.approx(2.0, abs=0.05)  # twice ppo's steps at the lowest density
    assert "ppo 12/12, trajectory_mc 12/12" in text


def test_the_lab_measures_estimators_with_the_protocols_arguments():
    """Not the shipped configs' (mc_rollout has k = 2 in RoutineGrid-v0.yml, 8 in rb1)."""
    rb1 = protocol.load_protocol("rb1")
    for env_id in ("DilutedDoors-v1", "RoutineGrid-v0", "CodeFix-v1"):
        args = benchmark_lab.estimator_arguments(rb1, env_id, "mc_rollout")
        assert args == {"num_rollouts": 8, "source": "model"}, env_id
    assert benchmark_lab.estimator_arguments(
        rb1, "CodeFix-v1", 'mc_rollout{"num_rollouts": 3}'
    ) == {
        "num_rollouts": 3,
        "source": "model",
    }
    assert benchmark_lab.estimator_arguments(rb1, "CodeFix-v1", "trajectory_mc") == {}


def test_method_slug_never_shares_a_file():
    assert protocol_runs.method_slug("ppo") == "ppo"
    a, b = protocol_runs.method_slug('m:E{"a": 1}'), protocol_runs.method_slug('m:E{"a": 2}')
    assert a != b and "/" not in a


def test_runs_are_keyed_by_their_settings_and_stale_rows_are_never_scored(tmp_path):
    """A draft's edit redoes exactly the runs whose settings it changes: the file hash is
    recorded, not keyed; a row of an earlier setting (another budget) is not a current run."""
    rb1 = protocol.load_protocol("rb1")
    jobs = protocol_runs.plan(rb1, rb1.tier("smoke"), "trajectory_mc", tmp_path)
    job = jobs[0]
    assert job.context["protocol"] == {"version": "rb1", "sha256": rb1.sha256}
    edited = runs.replace(job, context={"protocol": {"version": "rb1", "sha256": "0" * 64}})
    assert runs.key(edited) == runs.key(job)
    for changed in (
        {"budget": job.budget * 2},
        {"context": {"protocol": {"version": "rb2", "sha256": rb1.sha256}}},
        {"context": {"tier": "lite"}},
        {"hyperparameters": {**job.hyperparameters, "n_steps": 7}},
    ):
        assert runs.key(runs.replace(job, **changed)) != runs.key(job), changed
    stale = {"key": runs.key(runs.replace(job, budget=job.budget * 2))}
    current = {"key": runs.key(job)}
    assert protocol_runs.current_records([stale, current, {"no": "key"}], jobs) == [current]


PINNED = [(v, t) for v, tiers in protocol.REFERENCE_MANIFESTS.items() for t in tiers]


@pytest.mark.parametrize("version, tier_name", PINNED, ids=[f"{v}-{t}" for v, t in PINNED])
def test_shipped_references_are_runs_of_the_current_protocol(tmp_path, version, tier_name):
    """Every shipped row is a run of the protocol's current settings on its trainer (none
    stale, none twice, every reference method of the tier complete), and it names the version
    and tier it was made for."""
    loaded = protocol.load_protocol(version)
    tier = loaded.tier(tier_name)
    for method in loaded.references_of(tier):
        path = protocol_runs.reference_path(loaded, tier_name, method)
        records = command.load_records(path)
        jobs = protocol_runs.plan(loaded, tier, method, tmp_path, trainer=loaded.trainer)
        keys = {runs.key(job) for job in jobs}
        assert len(keys) == tier.num_runs_per_method
        assert [r["key"] for r in records if r["key"] not in keys] == [], method
        assert len({r["key"] for r in records}) == len(records) == len(keys), method
        assert {(r["protocol"]["version"], r["tier"]) for r in records} == {(version, tier_name)}


def test_plan_costs_runs_from_measured_seconds_per_step():
    refs = {
        "a": [
            {"env_id": "E", "budget": 100, "steps_trained": 100, "wall_time": 1.0},
            {"env_id": "E", "budget": 100, "steps_trained": 200, "wall_time": 4.0},
            {"env_id": "E", "budget": 100, "steps_trained": 100, "wall_time": 3.0},
        ],
        "b": [{"env_id": "F", "budget": 10, "steps_trained": 10, "wall_time": 5.0}],
    }
    per_step = cost.seconds_per_step(refs)
    assert per_step[("a", "E")] == pytest.approx(0.02)  # median of 0.01, 0.02, 0.03
    assert per_step[("*", "F")] == pytest.approx(0.5)
    from baselines.lib.specs import parse_method

    def run(env_id: str, budget: int) -> runs.Run:
        return runs.Run(env_id, {}, parse_method("ppo"), 0, budget, budget, 0.9, {})

    jobs = [run("E", 1000)] * 3 + [run("F", 100)]
    c = cost.sweep_cost(jobs, "new_method", per_step)  # no runs of its own: all methods' median
    assert (c.runs, c.steps) == (4, 3100)
    assert c.cpu_seconds == pytest.approx(3 * 20.0 + 50.0)
    assert (c.longest_seconds, c.longest_steps) == (pytest.approx(50.0), 100)
    assert c.wall_seconds(1) == pytest.approx((110.0, 160.0))
    assert c.wall_seconds(100) == pytest.approx((50.0, 51.1))  # the longest run bounds it
    with pytest.raises(ValueError, match="no reference runs on G"):
        cost.sweep_cost([run("G", 1)], "a", per_step)
    with pytest.raises(ValueError, match="cores"):
        c.wall_seconds(0)
    assert cost.combined([c, c]).cpu_seconds == pytest.approx(2 * c.cpu_seconds)


def test_smoke_tier_end_to_end_with_an_outside_method(tmp_path, monkeypatch):
    (tmp_path / "bench_outside.py").write_text(
        textwrap.dedent("""
        from routine_envs import credit

        class HalfMC(credit.TrajectoryMC):
            '''Half the trajectory advantage (a known scale).'''
            name = "half_mc"
            def __call__(self, batch):
                return credit.Advantages(0.5 * super().__call__(batch).advantages)
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    args = commands.settings_of(
        "benchmark",
        [
            "run",
            "--method",
            "bench_outside:HalfMC",
            "--protocol",
            "rb1",
            "--tier",
            "smoke",
            "--workers",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ],
    )
    folder = command.main(args)
    card = (folder / "report.md").read_text()
    assert "bench_outside:HalfMC" in card and "rb1" in card and "seeds**: 0, 1" in card
    assert "- **privileged fields read**: none\n" in card  # it declares none, and read none
    assert (folder / "learning_curves.png").stat().st_size > 0
    assert (folder / "steps_vs_rho.png").stat().st_size > 0
    data = json.loads((folder / "scores.json").read_text())
    (setting,) = data["method"]["settings"]
    assert [r["runs"] for r in data["method"]["settings"][setting]["rows"]] == [2, 2]
    lab = {(r["estimator"], r["density_value"]) for r in data["lab"]}
    assert ("bench_outside:HalfMC", 0) in lab
    half = next(r for r in data["lab"] if r["estimator"] == "bench_outside:HalfMC")
    assert half["relative_bias"] > 0.3  # E g = 0.5 (G-1)/G grad J: the lab sees the scale
    # resumable: a rerun plans the same keys and trains nothing
    records = (folder.parent / "results.jsonl").read_text().splitlines()
    command.main(args)
    assert (folder.parent / "results.jsonl").read_text().splitlines() == records
    sys.modules.pop("bench_outside", None)


def test_bad_method_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        command.main(
            commands.settings_of(
                "benchmark", ["run", "--method", "nope", "--tier", "smoke", "--out", str(tmp_path)]
            )
        )
    with pytest.raises(ValueError, match="needs --method"):
        command.main(
            commands.settings_of("benchmark", ["report", "--tier", "smoke", "--out", str(tmp_path)])
        )


def test_references_compute_takes_only_the_tiers_references(tmp_path, capsys):
    """``--methods discounted_turn`` (the protocol's reference is ``discounted_turn{"gamma":
    0.9}``) once computed another method into the references folder under a file no table
    reads; it is refused before anything is written, and a reference spelled with other
    spacing is found under the protocol's spelling (its file is the shipped file's name)."""
    out = tmp_path / "out"
    base = ["references", "--compute", "--protocol", "rb2", "--tier", "smoke", "--out", str(out)]
    with pytest.raises(SystemExit):
        commands.main(["benchmark", *base, "--methods", "ppo", "discounted_turn"])
    err = capsys.readouterr().err
    assert "--methods ['discounted_turn']: not a reference of rb2 tier smoke" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    loaded = protocol.load_protocol("rb2")
    assert command.reference_methods(loaded, "full", ['discounted_turn{"gamma":0.9}']) == [
        'discounted_turn{"gamma": 0.9}'
    ]
    assert command.reference_methods(loaded, "full", []) == list(loaded.references_of("full"))


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--env-id", "Nope-v9"], "--env-id ['Nope-v9'] not in tier smoke"),
        (["--references-dir", "{tmp}/missing"], "--references-dir {tmp}/missing: no such folder"),
        (
            ["--references-dir", "{tmp}/missing", "--unverified-references"],
            "--references-dir {tmp}/missing: no such folder",
        ),
    ],
)
@pytest.mark.parametrize("verb", ["run", "report", "submit"])
def test_a_refused_benchmark_command_creates_nothing(tmp_path, capsys, verb, flags, message):
    """Each refusal is one line naming the flag, exit status 2, and no --out folder appears
    (``run --env-id Nope-v9`` and a missing ``--references-dir`` made it before refusing)."""
    out = tmp_path / "out"
    flags = [f.format(tmp=tmp_path) for f in flags]
    args = [verb, "--method", "ppo", "--tier", "smoke", "--out", str(out), *flags]
    with pytest.raises(SystemExit) as exit_:
        commands.main(["benchmark", *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1, err
    assert message.format(tmp=tmp_path) in err
    assert not out.exists()


def test_references_refuses_a_missing_folder_even_unverified(tmp_path, capsys):
    """``references --references-dir /nonexistent --unverified-references`` listed nine
    methods with 0 runs and exited 0."""
    with pytest.raises(SystemExit) as exit_:
        folder = str(tmp_path / "nope")
        commands.main(
            [
                "benchmark",
                "references",
                "--tier",
                "lite",
                "--references-dir",
                folder,
                "--unverified-references",
            ]
        )
    assert exit_.value.code == 2
    assert "no such folder" in capsys.readouterr().err


def test_plan_takes_the_trainer_run_and_submit_take(capsys):
    """``plan --trainer batched`` was refused while ``run`` and ``submit`` take it; it prices that
    trainer alone, and one without measured costs is one line naming ``--trainer``."""
    result = commands.main(
        ["benchmark", "plan", "--protocol", "rb2", "--tier", "smoke", "--trainer", "batched"]
    )
    assert result["batched"] and not result["sb3"]
    assert "- batched:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        commands.main(
            ["benchmark", "plan", "--protocol", "rb2", "--tier", "smoke", "--trainer", "sb3"]
        )
    assert "--trainer sb3: no measured costs ship for it" in capsys.readouterr().err
