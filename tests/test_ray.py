"""The Ray backend: the same run keys and results as the process pool, nothing lost or
duplicated when a worker or the driver is killed, clear errors for bad backend settings.

Every test that starts Ray runs its driver inside a network namespace of its own with only the
loopback interface up (:mod:`baselines.lib.loopback`) and checks that no connection had a peer
outside 127.0.0.0/8; it skips, saying why, where no namespace can be made. A failure says how
the scenario ended, after how long, and what it printed; its timeout is a patience that grows
with the machine's load (:mod:`tests.children`).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest

from baselines import commands
from baselines.experiments.compare import sweep as compare
from baselines.experiments.demo.sweep import DemoArgs
from baselines.experiments.multiagent import sweep as multiagent
from baselines.experiments.snr_lab import sweep as snr_lab
from baselines.lib import backend, loopback
from tests import children, ray_scenarios

ROOT = Path(__file__).resolve().parents[1]
TIMING = ("seconds", "wall_time", "cpu_time")  # timings: the only fields that may differ


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_timing(rows: list[dict]) -> dict[str, dict]:
    return {r["key"]: {k: v for k, v in r.items() if k not in TIMING} for r in rows}


def in_loopback_namespace(scenario: str, out: Path, timeout: float = 240) -> loopback.Outcome:
    """Run a scenario of :mod:`tests.ray_scenarios` in a loopback-only namespace (at most
    :func:`~tests.children.patience` of ``timeout`` seconds), check that it ended well and
    connected to 127.0.0.0/8 only (and did connect: Ray ran); a failure says how it ended, after
    how long, and what it printed."""
    pytest.importorskip("ray", reason='needs the cluster extra: pip install -e ".[cluster]"')
    reason = loopback.unavailable()
    if reason:
        pytest.skip(f"Ray tests run in a loopback-only network namespace: {reason}")
    argv = [sys.executable, "-m", "tests.ray_scenarios", scenario, str(out)]
    outcome = loopback.run(argv, cwd=ROOT, timeout=children.patience(timeout))
    said = f"scenario {scenario!r}: {outcome.describe()}"
    assert outcome.returncode == 0, said
    assert outcome.interfaces == ["lo"], f"{outcome.interfaces}; {said}"
    assert outcome.peers, f"no connection seen: the watcher saw nothing; {said}"
    assert outcome.outside() == [], f"connections outside 127.0.0.0/8: {outcome.outside()}"
    return outcome


# ------------------------------------------------------------------- with Ray processes
def test_local_ray_gives_the_process_pools_keys_and_results(tmp_path):
    outcome = in_loopback_namespace("same", tmp_path / "ray")
    assert "to do on local Ray (2 CPUs)" in outcome.stdout, outcome.describe()
    pool = tmp_path / "pool"  # in this process (one worker): the same results, faster
    lab = [*ray_scenarios.TINY_LAB, "--workers", "1", "--out", str(pool / "lab")]
    snr_lab.main(commands.settings_of("snr_lab", lab))
    compare.run_sweep(ray_scenarios.tiny_compare(pool / "compare", workers=1), progress=False)
    for part in ("lab/rho_law", "compare"):
        on_ray = without_timing(records(tmp_path / "ray" / part / "results.jsonl"))
        on_pool = without_timing(records(pool / part / "results.jsonl"))
        assert len(on_pool) == (3 if part.startswith("lab") else 2)
        assert sorted(on_ray) == sorted(on_pool)  # the same run keys...
        assert on_ray == on_pool  # ...and, seed for seed, the same results


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A real local cluster, a worker killed during a run, a driver killed and run again
    (:func:`tests.ray_scenarios.cluster`): the folder and the report. A scenario that fails
    (Ray overrun by a loaded machine: it ran out of time, or its start failed twice) is run
    once more in a fresh folder; when that fails too, the first attempt's account is in the
    failure message beside the second's."""
    first: str | None = None
    for attempt in (1, 2):
        out = tmp_path_factory.mktemp(f"cluster{attempt}")
        try:
            outcome = in_loopback_namespace("cluster", out)
        except AssertionError as err:
            if first is not None:
                raise AssertionError(f"{err}\n=== the first attempt ===\n{first}") from None
            first = str(err)
            warnings.warn(f"Ray cluster scenario failed, run again: {first[:2000]}", stacklevel=1)
            continue
        assert outcome.ended > 0, outcome.describe()  # Ray's processes were left, and ended
        return out, json.loads((out / "report.json").read_text())
    raise AssertionError("unreachable")


def test_a_killed_worker_is_retried_and_a_dying_run_is_reported(cluster):
    out, report = cluster[0] / "worker", cluster[1]["worker"]
    said = report["account"]
    assert "to do on the Ray cluster at 127.0.0.1:" in report["stdout"], said
    killed = report["killed"]
    assert killed is not None, f"no worker was seen running; {said}"
    assert sum(m.startswith(f"{killed}-") for m in report["marks"]) >= 2, said  # started again
    # the run whose worker always dies: reported with its settings after its retries
    assert report["returncode"] == 1, said
    failure = report["stdout"].split("RunFailed: ", 1)[1]
    assert failure.startswith(f"2 of {ray_scenarios.CLUSTER_JOBS + 2} run(s) failed")
    assert "and 1 more run(s) failed" in failure and "tracebacks in" in failure
    assert report["stdout"].count("Traceback (most recent call last)") <= 1  # the first, whole
    kept = {e["key"]: e for e in records(out / "results.failures.jsonl")}
    dying = kept[f"seed {ray_scenarios.DYING_SEED}"]
    assert "died 2 time(s)" in dying["error"] and dying["traceback"]  # Ray's account
    raising = kept[f"seed {ray_scenarios.RAISING_SEED}"]  # raised inside a Ray worker
    assert raising["error"].endswith("ZeroDivisionError: division by zero")
    assert 'ray_scenarios.py", line' in raising["traceback"]
    # every other run exactly once, nothing rejected
    keys = [r["key"] for r in records(out / "results.jsonl")]
    assert sorted(keys) == sorted(f"seed {s}" for s in range(ray_scenarios.CLUSTER_JOBS))
    assert not (out / "results.rejected.jsonl").exists()


def test_a_driver_killed_with_sigkill_resumes(cluster):
    out, report = cluster[0] / "driver", cluster[1]["driver"]
    assert report["returncode"] == 0, report["account"]
    first = report["first"].split("\n")[:-1]  # the complete lines when it was killed
    total = len(ray_scenarios.LONG_LENGTHS)
    assert 1 <= len(first) < total, f"the kill should land mid-sweep; {report['account']}"
    assert f"{total} settings, {len(first)} already in" in report["rerun"]
    final = (out / "lab" / "rho_law" / "results.jsonl").read_text().splitlines()
    assert final[: len(first)] == first  # the runs done before the kill are kept as they were
    assert len(final) == total and len({json.loads(x)["key"] for x in final}) == total


# --------------------------------------------------------------- without Ray processes
def test_every_sweep_has_the_backend_settings():
    from baselines.experiments.benchmark.command import BenchmarkArgs
    from baselines.experiments.snr_lab.measure import MeasureArgs

    sweeps = (compare.SweepArgs, multiagent.TeamSweepArgs, snr_lab.LabArgs, DemoArgs)
    for settings in (*sweeps, MeasureArgs, BenchmarkArgs):
        assert issubclass(settings, backend.BackendArgs)


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--routine-lengths", "1", "--seeds", "0"],
        ["multiagent", "--routine-lengths", "1", "--seeds", "0"],
        ["snr_lab", "rho-law", "--episodes", "320", "--routine-lengths", "0"],
    ],
    ids=["compare", "multiagent", "snr_lab"],
)
def test_address_without_the_ray_backend_is_refused_before_any_work(tmp_path, capsys, argv):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_status:
        commands.main([*argv, "--address", "127.0.0.1:1", "--out", str(out)])
    assert exit_status.value.code == 2
    error = capsys.readouterr().err
    assert "--address 127.0.0.1:1" in error and "--backend ray" in error
    assert not any(out.rglob("*.jsonl"))  # nothing was run or written


def test_an_unknown_backend_is_refused():
    proc = children.run(
        [sys.executable, "-m", "baselines", "compare", "--backend", "dask"], cwd=ROOT
    )
    said = proc.describe()
    assert proc.returncode == 2 and "--backend" in proc.stderr and "dask" in proc.stderr, said
    with pytest.raises(ValueError, match="--backend must be one of"):
        backend.check_backend(backend.BackendArgs(backend="dask"))


def test_without_ray_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    from baselines.lib.runner import run_resumable

    with pytest.raises(ValueError, match=r"\[cluster\]"):
        run_resumable(
            [{"seed": 0}], str, ray_scenarios.slow_job, tmp_path / "r.jsonl", 1,
            backend=backend.BackendArgs(backend="ray"),
        )  # fmt: skip
    assert not (tmp_path / "r.jsonl").exists()


def test_importing_the_suite_and_the_runner_does_not_import_ray():
    code = (
        "import sys, routine_envs, baselines.lib.runner, baselines.commands, "
        "baselines.experiments.compare.sweep, baselines.experiments.snr_lab.sweep, "
        "baselines.experiments.multiagent.sweep\n"
        "baselines.commands.tree()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ray'))"
    )
    proc = children.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    assert proc.stdout.strip() == "[]", proc.describe()


def test_the_code_digest_sees_every_change(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason='needs the cluster extra: pip install -e ".[cluster]"')
    from baselines.lib import ray_backend

    package = tmp_path / "pkg_digest_probe"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "hyper.yml").write_text("lr: 1")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("pkg_digest_probe",)
    first = ray_backend.code_digest(names)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.pyc").write_bytes(b"cache")
    ray_backend.code_digest.cache_clear()
    assert ray_backend.code_digest(names) == first  # caches do not count
    (package / "sub" / "hyper.yml").write_text("lr: 2")
    ray_backend.code_digest.cache_clear()
    assert ray_backend.code_digest(names) != first  # a changed setting file does
