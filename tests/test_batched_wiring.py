"""The batched trainer wired into the sweeps (issue 26): ``--trainer sb3|batched`` on
``compare`` and ``benchmark run/report/plan``; the runner training a group of jobs in one call;
every row recording its trainer, batched rows keyed apart while SB3 keys stay as shipped; what
the batched trainer cannot train refused in one line naming ``--trainer``; the plan's
per-trainer costs."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines import commands
from baselines.experiments.benchmark import command, cost
from baselines.experiments.compare import sweep as compare
from baselines.lib import protocol, protocol_runs, runs, sweeps, trainers
from baselines.lib.results import ResultsFile
from baselines.lib.runner import Batching, RunFailed, batch_sizes, run_resumable
from tests import runs_files

DOORS = "DilutedDoors-v1"
CALLS: list[list[int]] = []
"""The jobs (their ``i``) of each call of the toy batch worker, in order."""


def toy_single(job: dict) -> dict:
    """The runner's ordinary worker: one job."""
    CALLS.append([job["i"]])
    return {"value": job["i"] * 10}


def toy_batch(jobs: list[dict]) -> list[dict]:
    """A batch worker: every job of a call at once (one of group ``bad`` raises)."""
    CALLS.append([job["i"] for job in jobs])
    if any(job["group"] == "bad" for job in jobs):
        raise RuntimeError("the batch broke")
    return [{"value": job["i"] * 10} for job in jobs]


TOY = Batching(lambda job: job["group"], toy_batch)


def toy_jobs(groups: list[str | None]) -> list[dict]:
    return [{"i": i, "group": g} for i, g in enumerate(groups)]


def run_toys(jobs: list[dict], path, workers: int = 1) -> list[dict]:
    return run_resumable(
        jobs,
        lambda job: f"job{job['i']}",
        toy_single,
        path,
        workers,
        required=("key", "value"),
        progress=False,
        batching=TOY,
    )


def test_the_runner_trains_a_group_in_one_call_and_writes_each_run(tmp_path):
    CALLS.clear()
    jobs = toy_jobs(["a", "b", "a", None, "a", "b"])
    records = run_toys(jobs, tmp_path / "r.jsonl")
    assert [r["value"] for r in records] == [0, 10, 20, 30, 40, 50]  # every job, in order
    assert sorted(CALLS) == [[0, 2, 4], [1, 5], [3]]  # a group in one call; None alone
    stored = ResultsFile(tmp_path / "r.jsonl", ("key", "value")).load()
    assert sorted(r["key"] for r in stored) == [f"job{i}" for i in range(6)]  # one row each
    CALLS.clear()
    assert run_toys(jobs, tmp_path / "r.jsonl") == records and CALLS == []  # resumed: nothing


def test_a_failed_batch_fails_each_of_its_runs_by_name_and_keeps_the_others(tmp_path):
    CALLS.clear()
    jobs = toy_jobs(["bad", "ok", "bad"])
    with pytest.raises(RunFailed) as failed:
        run_toys(jobs, tmp_path / "r.jsonl")
    message = str(failed.value)
    assert message.startswith("2 of 3 run(s) failed") and "the batch broke" in message
    assert "in a batch of 2 runs" in message
    stored = ResultsFile(tmp_path / "r.jsonl", ("key", "value")).load()
    assert [r["key"] for r in stored] == ["job1"]
    CALLS.clear()
    with pytest.raises(RunFailed):  # a rerun retries exactly the failed runs, together
        run_toys(jobs, tmp_path / "r.jsonl")
    assert CALLS == [[0, 2]]


def test_batch_sizes_split_groups_to_give_every_worker_work():
    assert batch_sizes(["a"] * 6 + ["b"] * 6, 2, 64) == {None: 1, "a": 6, "b": 6}
    assert batch_sizes(["a"] * 6, 2, 64) == {None: 1, "a": 3}  # one group, two workers
    assert batch_sizes(["a"] * 40 + ["b"] * 40 + ["c"] * 40, 2, 64)["a"] == 40
    assert batch_sizes(["a"] * 100, 1, 64)["a"] == 50  # two equal calls, not 64 + 36


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 90), min_size=1, max_size=5),
    workers=st.integers(1, 40),
    max_size=st.integers(1, 70),
)
def test_batch_sizes_never_exceed_the_cap_nor_a_workers_share(counts, workers, max_size):
    groups = [f"g{k}" for k, n in enumerate(counts) for _ in range(n)]
    sizes = batch_sizes(groups, workers, max_size)
    share = math.ceil(len(groups) / workers)  # one round of calls on every worker covers all
    for k, n in enumerate(counts):
        size = sizes[f"g{k}"]
        assert 1 <= size <= min(max_size, share)
        calls = math.ceil(n / size)
        assert calls == math.ceil(n / min(max_size, share))  # no more calls than the cap needs
        assert n - (calls - 1) * size >= size - calls  # the calls of a group nearly equal


# ------------------------------------------------------------------------ keys and rows
def compare_args(tmp_path, trainer: str, **changes) -> sweeps.SweepArgs:
    values = {
        "env_id": DOORS,
        "env_kwargs": {"num_floors": 2},
        "routine_lengths": [0, 3],
        "methods": ["ppo", "trajectory_mc"],
        "seeds": [0, 1],
        "budget_episodes": 60,
        "eval_points": 3,
        "out": tmp_path / trainer,
        "workers": 1,
        "trainer": trainer,
    }
    return compare.CompareCommand(**{**values, **changes})


def test_sb3_keys_are_as_before_and_batched_keys_apart(tmp_path):
    sb3 = compare.plan(compare_args(tmp_path, "sb3"))
    batched = compare.plan(compare_args(tmp_path, "batched"))
    assert {j.trainer for j in sb3} == {"sb3"} and {j.trainer for j in batched} == {"batched"}
    for a, b in zip(sb3, batched, strict=True):
        old = json.dumps({k: a.row()[k] for k in runs.KEY_FIELDS}, sort_keys=True)
        assert runs.key(a) == old  # SB3's key: the fields it always had
        assert runs.key(b) != old and json.loads(runs.key(b)) == {
            **json.loads(old),
            "trainer": "batched",
        }
    # a row written before the field existed is an SB3 run
    first = sb3[0].row()
    row = {k: first[k] for k in ("env_id", "env_kwargs", "method", "seed", "budget", "target")}
    row |= {"density_kwarg": "routine_length", "density_value": 0, "rho": 1.0}
    record = runs.TrainingRecord.from_row({**row, "timesteps": [0], "success": [0.5]})
    assert trainers.trainer_of(record.row()) == "sb3"
    assert trainers.trainer_of({**record.row(), "trainer": "batched"}) == "batched"


def test_benchmark_keys_sb3_as_shipped_and_batched_apart(tmp_path):
    rb1 = protocol.load_protocol("rb1")
    lite = rb1.tier("lite")
    sb3 = protocol_runs.plan(rb1, lite, "ppo", tmp_path)
    batched = protocol_runs.plan(rb1, lite, "ppo", tmp_path, trainer="batched")
    shipped = runs_files.text(protocol_runs.reference_path(rb1, "lite", "ppo")).splitlines()
    assert {runs.key(j) for j in sb3} == {json.loads(r)["key"] for r in shipped}
    assert not {runs.key(j) for j in batched} & {runs.key(j) for j in sb3}
    assert all("trainer" not in json.loads(r) for r in shipped)  # old rows: no field, sb3


def test_compare_batched_trains_each_method_in_one_call_bit_identical_to_runs_alone(
    tmp_path, monkeypatch
):
    """Every run of a method goes to one batched call (workers 1: in this process), and each
    record equals the same job trained alone (R = 1): batching never changes a result."""
    from baselines.lib import batched

    calls = []
    real = batched.train

    def counting(planned, *args, **kwargs):
        calls.append(
            sorted({(r.method.text, r.seed, r.env_kwargs["routine_length"]) for r in planned})
        )
        return real(planned, *args, **kwargs)

    monkeypatch.setattr(batched, "train", counting)
    args = compare_args(tmp_path, "batched")
    records = compare.run_sweep(args, progress=False)
    assert len(records) == 8 and {r["trainer"] for r in records} == {"batched"}
    assert [len(c) for c in calls] == [4, 4]  # ppo's 4 runs together, trajectory_mc's
    assert {c[0][0] for c in calls} == {"ppo", "trajectory_mc"}
    jobs = {runs.key(j): j for j in compare.plan(args)}
    for record in records[::3]:
        alone = runs.train_record(jobs[record["key"]]).row()
        assert alone["success"] == record["success"]
        assert alone["steps_to_target"] == record["steps_to_target"]
    # the same schema as SB3's rows (fields and their kinds), timings included
    sb3 = runs.train_record(compare.plan(compare_args(tmp_path, "sb3"))[0]).row()
    assert set(sb3) == set(record)
    assert sb3["cpu_time"] > 0 and record["cpu_time"] > 0


# -------------------------------------------------------------------------- refusals
def write_config(tmp_path, text: str):
    path = tmp_path / "c.yml"
    path.write_text(text)
    return str(path)


REFUSED = [
    (
        ["compare", "--env-id", "CodeFix-v1", "--env-kwargs", '{"obs_mode": "text"}'],
        "--trainer batched needs a flat Box observation space",
    ),
    (
        ["compare", "--env-id", "CodeFix-v1", "--methods", "ppo", 'mc_rollout{"source": "branch"}'],
        "--trainer batched cannot train mc_rollout",
    ),
    (
        ["compare", "--config", "CONFIG:common: {target_kl: 0.02}"],
        "target_kl is not supported by --trainer batched",
    ),
    (
        [
            "benchmark",
            "run",
            "--tier",
            "smoke",
            "--method",
            'mc_rollout{"source": "branch"}',
            "--no-progress",
        ],
        "--trainer batched cannot train mc_rollout",
    ),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=["obs", "branch", "key", "bench"])
def test_what_the_batched_trainer_cannot_train_is_one_line_naming_trainer(
    argv, message, tmp_path, capsys
):
    from baselines.commands import main

    argv = [
        write_config(tmp_path, a.removeprefix("CONFIG:")) if a.startswith("CONFIG:") else a
        for a in argv
    ]
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as end:
        main([*argv, "--trainer", "batched", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2, err
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (out / "rb1").exists() and not (out / "results.jsonl").exists()


def test_team_envs_and_unknown_trainers_are_refused_naming_trainer(tmp_path, capsys):
    pytest.importorskip("pettingzoo")
    from baselines.commands import main

    for argv, message in [
        (["multiagent", "--trainer", "batched"], "--trainer batched needs an environment"),
        (["compare", "--trainer", "jax"], "--trainer"),
        (["benchmark", "run", "--method", "ppo", "--trainer", "jax"], "--trainer"),
    ]:
        with pytest.raises(SystemExit) as end:
            main([*argv, "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err.strip()
        assert end.value.code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_sb3_refuses_the_transformer_policy_when_the_sweep_is_planned(tmp_path):
    config = tmp_path / "c.yml"
    config.write_text("common: {policy: transformer}\n")
    with pytest.raises(ValueError, match="--trainer sb3 trains the MLP policy only"):
        compare.plan(compare_args(tmp_path, "sb3", config=config))
    assert compare.plan(compare_args(tmp_path, "batched", config=config))  # batched trains it


# ------------------------------------------------------------------------- benchmark
def test_benchmark_run_and_report_with_the_batched_trainer(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["--method", "trajectory_mc", "--protocol", "rb1", "--tier", "smoke", "--out", str(out)]
    argv += ["--no-lab"]
    folder = commands.main(["benchmark", "run", *argv, "--trainer", "batched", "--workers", "1"])
    assert folder == out / "rb1" / "smoke" / "trajectory_mc+batched" / "report"
    card = (folder / "report.md").read_text()
    assert "**trainer**: batched; the references: sb3" in card
    rows = [json.loads(x) for x in (folder.parent / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["trainer"] for r in rows} == {"batched"}
    assert all(json.loads(r["key"])["trainer"] == "batched" for r in rows)
    capsys.readouterr()
    commands.main(["benchmark", "report", *argv, "--trainer", "batched"])
    with pytest.raises(SystemExit):  # SB3's report reads SB3's runs only: none here
        commands.main(["benchmark", "report", *argv])
    assert "no runs of 'trajectory_mc'" in capsys.readouterr().err


def test_cpu_seconds_per_step_is_the_runs_cpu_over_their_steps():
    rows = [
        {"method": "a", "env_id": "E", "cpu_time": 1.0, "steps_trained": 100, "budget": 90},
        {"method": "a", "env_id": "E", "cpu_time": 5.0, "steps_trained": 300, "budget": 290},
        {"method": "b", "env_id": "E", "cpu_time": 2.0, "budget": 1000},
    ]
    assert cost.cpu_seconds_per_step(rows) == {
        "a": {"E": pytest.approx(6.0 / 400)},
        "b": {"E": pytest.approx(0.002)},
    }


def test_the_shipped_batched_costs_are_the_measured_runs_cpu_per_step():
    per_step, where = cost.measured_batched("rb1")
    assert where.startswith("rb1-batched-costs.json: python -m baselines benchmark run")
    assert {m for m, _ in per_step} == {"ppo", "trajectory_mc", "oracle", "*"}
    assert {e for _, e in per_step} == {"DilutedDoors-v1", "RoutineGrid-v0", "CodeFix-v1"}
    assert all(1e-6 < s < 1e-3 for s in per_step.values())  # microseconds, not SB3's 0.2 ms
    assert cost.measured_batched("rb0") is None


def test_batched_cost_sums_runs_per_batch_as_the_runner_forms_them():
    from baselines.lib.specs import MethodSpec

    jobs = [
        runs.Run(e, {}, MethodSpec(m, text=m), 0, 1000, 100, 0.9, {}, "batched")
        for m in ("a", "b")
        for e in ("E", "F")
        for _ in range(4)
    ]
    rate = {("a", "E"): 1e-3, ("a", "F"): 2e-3, ("*", "E"): 3e-3, ("*", "F"): 4e-3}
    one = cost.batched_cost(jobs, rate, cores=1)
    # b has no rate of its own: the env's median over methods; 4 batches of 4 runs
    assert one.cpu_seconds == pytest.approx(4 * (1 + 2 + 3 + 4))
    assert (one.runs, one.steps, one.task) == (16, 16_000, "batch")
    assert (one.longest_seconds, one.longest_steps) == (pytest.approx(16.0), 4000)
    many = cost.batched_cost(jobs, rate, cores=8)  # batches of 2: 8 tasks
    assert many.cpu_seconds == pytest.approx(one.cpu_seconds)
    assert many.longest_seconds == pytest.approx(8.0)
    assert many.wall_seconds(8) == pytest.approx((8.0, 13.0))
    with pytest.raises(ValueError, match="no measured batched runs on G"):
        cost.batched_cost([runs.replace(jobs[0], env_id="G")], rate, 1)


def test_plan_prices_the_references_trainer_from_its_measured_file_when_one_ships(capsys, tmp_path):
    """rb2's references were trained by the batched trainer as it was; the bench's measured
    file (bench_training --tier --costs) prices every tier at the trainer as it is now."""
    per_step, where = cost.measured_batched("rb2")
    assert where.startswith("rb2-batched-costs.json: python -m baselines bench_training")
    assert ("ppo", 'DilutedDoors-v1{"num_floors": 2}') in per_step  # per setting
    assert ("ppo", "CodeFix-v1") in per_step  # and per env, for settings not measured
    result = commands.main(
        ["benchmark", "plan", "--protocol", "rb2", "--tier", "full", "--cores", "1"]
    )
    text = capsys.readouterr().out
    assert "- batched: CPU seconds per step measured in baselines/protocols/rb2-batched-costs" in (
        text
    )
    assert "over the shipped full reference runs" not in text  # the assumptions name the file
    assert "seconds per environment step of the references' trainer: rb2-batched-costs" in text
    full = result["batched"]["all references"]
    assert full.runs == 11340
    rb2 = protocol.load_protocol("rb2")
    expected = sum(
        run.budget * cost.rate(per_step, method, run, "")
        for method in ("ppo", "trajectory_mc")
        for run in protocol_runs.plan(rb2, rb2.tier("full"), method, tmp_path, trainer="batched")
    )
    assert result["batched"]["ppo"].cpu_seconds + result["batched"][
        "trajectory_mc"
    ].cpu_seconds == pytest.approx(expected)


def test_plan_says_which_methods_it_priced_without_a_rate_of_their_own(capsys):
    """A method the measured file does not hold is priced at the median method's rate: the row
    says so, and a row of measured methods does not (the 2025-26 methods once read as
    measured at ppo's rate on rb3)."""
    method = 'discounted_turn{"gamma": 0.5}'  # the file measured gamma 0.9 only
    commands.main(["benchmark", "plan", "--protocol", "rb2", "--tier", "lite", "--method",
                   method, "--cores", "1", "--trainer", "batched"])  # fmt: skip
    text = capsys.readouterr().out
    assert f"| batched | {method} (not measured: the median method's rate) | 280 |" in text
    assert "| batched | ppo | 280 |" in text
    assert "| batched | all references | " in text  # every reference measured


def test_plan_prints_the_cost_of_each_trainer_and_where_it_was_measured(capsys):
    method = 'mc_rollout{"source": "branch"}'
    result = commands.main(
        [
            "benchmark",
            "plan",
            "--protocol",
            "rb1",
            "--tier",
            "lite",
            "--method",
            method,
            "--cores",
            "2",
        ]
    )
    text = capsys.readouterr().out
    assert "sb3: seconds per step measured in the lite references" in text
    assert (
        "batched: CPU seconds per step measured in baselines/protocols/rb1-batched-costs.json"
        in text
    )
    assert "| batched | ppo | 120 |" in text and "| sb3 | ppo | 120 |" in text
    assert '| batched | mc_rollout{"source": "branch"} | not available: --trainer batched' in text
    header = (
        '| cores | mc_rollout{"source": "branch"} (sb3) | all references (sb3) | all references'
    )
    assert f"{header} (batched) |" in text  # no batched column for a method it cannot train
    sb3, batched = result["sb3"]["all references"], result["batched"]["all references"]
    assert batched.runs == sb3.runs == 960 and batched.steps == sb3.steps
    assert 0 < batched.cpu_seconds < sb3.cpu_seconds / 5  # measured, not assumed


def test_plan_prices_a_tier_from_its_own_references_when_they_ship(capsys, monkeypatch):
    """Without a measured file (rb2 ships one: the test above), the references' rows price a
    tier. The paper tier's Transformer costs about 5x lite's MLP per step: priced at lite's
    rates its references came to 0.24 CPU-h where they took 1.29. A tier with references of
    its own is priced from them (so its total is what they took); one without, from lite's,
    and says so."""
    shipped = cost.measured_costs
    monkeypatch.setattr(
        cost,
        "measured_costs",
        lambda version, trainer: None if version == "rb2" else shipped(version, trainer),
    )
    loaded = protocol.load_protocol("rb2")
    result = commands.main(
        ["benchmark", "plan", "--protocol", "rb2", "--tier", "paper", "--cores", "2"]
    )
    text = capsys.readouterr().out
    assert "batched: CPU seconds per step measured in the paper references (280 runs" in text
    assert "tier paper priced at its own runs' rates" in text
    took = sum(
        r["cpu_time"]
        for method in loaded.references_of(loaded.tier("paper"))
        for r in command.load_records(protocol_runs.reference_path(loaded, "paper", method))
    )
    # plan prices the budgets; runs train to the end of their last rollout, about 1% more
    assert result["batched"]["all references"].cpu_seconds == pytest.approx(took, rel=0.02)
    assert took > 3600  # 77.5 CPU-min measured (docs/benchmark.md)
    assert "smoke" not in protocol.REFERENCE_MANIFESTS["rb2"]  # a tier with none of its own
    commands.main(["benchmark", "plan", "--protocol", "rb2", "--tier", "smoke", "--cores", "2"])
    text = capsys.readouterr().out
    assert "measured in the lite references (2520 runs" in text
    assert "tier smoke priced at the same rates (no references of its own ship" in text
