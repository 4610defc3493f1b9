"""Training cost: ``python -m baselines bench_training``.

CPU seconds per 10^6 environment steps of one run (collection, updates and, for the batched
trainer, its exact evaluations at 0 and at the budget), measured side by side in one process
(one torch thread) on the same environment and hyperparameters (the protocol's, else
``baselines/configs/<env id>.yml``):

- SB3's ``PPO`` (``ppo``) and ``TrajectoryAdvantagePPO`` (estimator methods), one run each, by
  ``learn()``;
- the batched trainer (:mod:`baselines.lib.batched`) with R runs at once, for each R of
  ``--runs``: the batch's CPU time divided by the steps of all its runs.

CPU time (``time.process_time``), not wall time, because the machine may be shared. The
measurements are interleaved: each of ``--repeats`` rounds measures SB3 and then every R of
the batched trainer, for every method, so a change of the machine's load over the bench hits
both trainers alike; each figure is the median over the rounds with its spread (max - min over
the median), and the ratio SB3 / batched is the median of the rounds' own ratios. Each
figure is split by phase: for SB3 ``collect_rollouts`` (acting, stepping, the estimator) and
``train`` (the update); for the batched trainer its
:data:`~baselines.lib.batched.trainer.PHASES`, and the update's arithmetic rate (the FLOPs
of its matrix products per CPU second of the update) against the machine's own: a
``--matmul-size`` square float32 matrix product timed in the same run, on one thread. Not a
test: it asserts nothing. The table is a pure function of the measurements
(:mod:`baselines.experiments.bench_training.analysis`).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from baselines.experiments.bench_training import analysis
from baselines.lib import sb3_trainer
from baselines.lib.runs import Run, check, replace


def sb3_cpu_per_step(
    method: str, env_id: str, env_kwargs: dict[str, Any], steps: int, config: Any, seed: int = 0
) -> tuple[float, dict[str, float], float]:
    """CPU seconds per environment step of one SB3 ``learn(steps)`` (no evaluation), the same
    per phase: ``rollout`` (``collect_rollouts``) and ``update`` (``train``), and wall seconds
    per step."""
    run = Run.of(env_id, method, env_kwargs, seed, config=config)
    check(run)
    algo, _ = sb3_trainer.build(run)
    split = {"rollout": 0.0, "update": 0.0}

    def timed(name: str, call: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                split[name] += time.process_time() - start

        return wrapper

    # SB3's learn() calls these two by attribute: this instance's timed versions
    algo.collect_rollouts = timed("rollout", algo.collect_rollouts)
    algo.train = timed("update", algo.train)
    start, wall = time.process_time(), time.perf_counter()
    algo.learn(steps)
    steps_done = algo.num_timesteps
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    return cpu / steps_done, {k: v / steps_done for k, v in split.items()}, wall / steps_done


def batched_cpu_per_step(
    method: str,
    env_id: str,
    env_kwargs: dict[str, Any],
    steps: int,
    runs: int,
    hyper: dict[str, Any],
    seed: int = 0,
    device: str = "cpu",
) -> tuple[float, dict[str, float], float, float]:
    """CPU seconds per environment step of one run when ``runs`` train at once on ``device``,
    the same per phase (:data:`~baselines.lib.batched.trainer.PHASES`), the matrix FLOPs per
    CPU second of the updates, and wall seconds per step of the batch (every run's steps: on a
    device other than the CPU, what its time is measured in)."""
    from baselines.lib.batched import train

    specs = [
        Run.of(env_id, method, env_kwargs, seed + r, steps, steps, 0.9, "batched",
               hyperparameters=hyper, device=device)
        for r in range(runs)
    ]  # fmt: skip
    start, wall = time.process_time(), time.perf_counter()
    # one batch of all R (not split at DEFAULT_MAX_BATCH); its last evaluation reads the
    # policies back, so a device's queued work is done when it returns
    results = train(specs, max_batch=runs)
    cpu, wall = time.process_time() - start, time.perf_counter() - wall
    steps_done = sum(r.steps_trained for r in results)
    split: dict[str, float] = {}
    for result in results:
        for phase, seconds in result.cpu_split.items():
            split[phase] = split.get(phase, 0.0) + seconds / steps_done
    update = split.get("update", 0.0) * steps_done
    rate = sum(r.update_flops for r in results) / update if update > 0 else 0.0
    return cpu / steps_done, split, rate, wall / steps_done


def matmul_flops(size: int) -> float:
    """FLOP/s of a ``size x size`` float32 matrix product on one torch thread (best of 3)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        a @ b
        best = min(best, time.process_time() - start)
    return 2 * size**3 / best


@dataclass
class BenchArgs:
    """CPU per environment step of SB3 and of the batched trainer, side by side."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=lambda: {"num_floors": 2, "routine_length": 9},
        metadata={"help": "gym.make keyword arguments (JSON)"},
    )
    steps: int = field(default=20_000, metadata={"help": "environment steps per run", "min": 1})
    repeats: int = field(
        default=3,
        metadata={
            "help": "rounds of measurements, SB3 and batched interleaved (median and spread)",
            "min": 1,
        },
    )
    methods: list[str] = field(
        default_factory=lambda: ["ppo", "trajectory_mc"],
        metadata={"help": "methods (ppo: SB3 PPO; estimators: TrajectoryAdvantagePPO)"},
    )
    runs: list[int] = field(
        default_factory=lambda: [1, 10, 40],
        metadata={"help": "batch sizes R of the batched trainer", "min": 1},
    )
    protocol: str = field(
        default="rb1", metadata={"help": "protocol whose hyperparameters to use ('' for none)"}
    )
    matmul_size: int = field(default=2048, metadata={"help": "matrix size of the peak", "min": 64})
    device: str = field(
        default="cpu",
        metadata={
            "help": "torch device of the batched trainer's runs (e.g. cuda; SB3 stays on the "
            "CPU): compare them by the steps per second column (wall time), as CPU time does "
            "not count the device's"
        },
    )
    costs: str = field(
        default="",
        metadata={
            "help": "also write the batched trainer's CPU s/step at the largest --runs, per "
            "method on --env-id, to this JSON file (merged into it when it holds the same "
            "protocol): what `benchmark plan` reads from baselines/protocols/<version>-"
            "batched-costs.json"
        },
    )
    tier: str = field(
        default="",
        metadata={
            "help": "instead of SB3 beside the batched trainer on --env-id: the batched "
            "trainer's CPU per step on every setting of this tier of --protocol, per method, "
            "R = the largest --runs of the setting's planned runs (its densities in turn), "
            "--steps each (with --costs: what `benchmark plan` reads)"
        },
    )
    memory_tier: str = field(
        default="",
        metadata={
            "help": "instead of timing: peak memory of every batch the batched trainer forms "
            "from this tier of --protocol (e.g. full), with the first --methods"
        },
    )


def main(args: BenchArgs) -> list[dict[str, Any]]:
    """Measure and print the table; return its rows."""
    import tempfile
    from pathlib import Path

    from baselines.lib.config import load_hyperparameters

    torch.set_num_threads(1)
    if args.memory_tier:
        from baselines.experiments.bench_training.memory import tier_peaks

        rows = tier_peaks(args.protocol or "rb1", args.memory_tier, args.methods[0])
        analysis.print_memory(rows, args.methods[0], args.memory_tier)
        return rows
    config = None
    if args.protocol:
        from baselines.lib.protocol import load_protocol
        from baselines.lib.protocol_runs import write_configs

        protocol = load_protocol(args.protocol)
        folder = Path(tempfile.mkdtemp(prefix="bench_training_"))
        config = write_configs(protocol, folder).get(args.env_id)
    if args.tier:
        rows = tier_costs(args)
        analysis.print_tier_costs(rows, args)
        if args.costs:
            write_costs(Path(args.costs), rows, args)
        return rows
    peak = matmul_flops(args.matmul_size)
    hypers = {m: load_hyperparameters(args.env_id, m, config) for m in args.methods}
    measurements: list[dict[str, Any]] = []
    for k in range(args.repeats):  # rounds: SB3 and every R of each method, interleaved
        for method in args.methods:
            cpu, split, wall = sb3_cpu_per_step(
                method, args.env_id, args.env_kwargs, args.steps, config, seed=k
            )
            measurements.append(
                {"trainer": "sb3", "method": method, "runs": 1, "repeat": k,
                 "cpu_per_step": cpu, "split": split, "wall_per_step": wall}
            )  # fmt: skip
            for r in args.runs:
                cpu, split, rate, wall = batched_cpu_per_step(
                    method, args.env_id, args.env_kwargs, args.steps, r, hypers[method],
                    seed=100 * k, device=args.device,
                )  # fmt: skip
                measurements.append(
                    {"trainer": "batched", "method": method, "runs": r, "repeat": k,
                     "cpu_per_step": cpu, "split": split, "update_flops": rate,
                     "wall_per_step": wall}
                )  # fmt: skip
    rows = analysis.cost_table(measurements, peak)
    analysis.print_cost(rows, args, peak)
    if args.costs:
        write_costs(Path(args.costs), [{**r, "where": args.env_id} for r in rows], args)
    return rows


def tier_runs(runs: list[Run], size: int, steps: int) -> list[Run]:
    """``size`` of one setting's planned ``runs`` for a cost measurement: the density values in
    turn (the first seed of each, then the second, ...), each shortened to ``steps`` (its
    evaluations at the protocol's count of points)."""
    by_value: dict[Any, list[Run]] = {}
    for run in runs:
        by_value.setdefault(json.dumps(run.env_kwargs, sort_keys=True), []).append(run)
    chosen: list[Run] = []
    for k in range(max(len(v) for v in by_value.values())):
        chosen += [v[k] for v in by_value.values() if k < len(v)]
    every = max(1, steps // 20)
    return [replace(run, budget=steps, eval_every=every) for run in chosen[:size]]


def tier_costs(args: BenchArgs) -> list[dict[str, Any]]:
    """The batched trainer's CPU seconds per step of every (setting, method) of ``args.tier``
    (:func:`tier_runs` of the planned runs, one batch each): one row each, ``where`` the
    setting's name."""
    import tempfile
    from pathlib import Path

    from baselines.lib.batched import train
    from baselines.lib.protocol import load_protocol
    from baselines.lib.protocol_runs import plan

    protocol = load_protocol(args.protocol or "rb2")
    tier = protocol.tier(args.tier)
    folder = Path(tempfile.mkdtemp(prefix="bench_training_"))
    rows = []
    for method in args.methods:
        planned = plan(protocol, tier, method, folder, trainer="batched")
        settings = dict.fromkeys(run.context["setting"] for run in planned)
        for setting in settings:
            mine = [run for run in planned if run.context["setting"] == setting]
            batch = tier_runs(mine, max(args.runs), args.steps)
            cpu = []
            for _ in range(args.repeats):
                start = time.process_time()
                results = train(batch)
                steps = sum(r.steps_trained for r in results)
                cpu.append((time.process_time() - start) / steps)
            rows.append(
                {"trainer": "batched", "method": method, "runs": len(batch), "where": setting,
                 "env_id": mine[0].env_id,
                 "cpu_s_per_1e6": statistics.median(cpu) * 1e6, "spread": analysis.spread(cpu)}
            )  # fmt: skip
            print(f"{method:<32} {setting:<48} {rows[-1]['cpu_s_per_1e6']:>8.2f}", flush=True)
    return rows


def write_costs(path: Any, rows: list[dict[str, Any]], args: BenchArgs) -> None:
    """Write (merge) the measured-costs file of :func:`analysis.measured_costs`, saying what
    measured it: the command's settings, the date, the commit, the machine and its load."""
    import os
    import shlex
    from datetime import datetime, timezone
    from pathlib import Path

    from baselines.experiments.benchmark.report import git_commit, hardware
    from baselines.lib.results import write_atomic
    from routine_envs.cli import to_argv

    folder = Path(__file__).resolve().parents[3]
    command = shlex.join(["python", "-m", "baselines", "bench_training", *to_argv(args)])
    what = (
        f"tier {args.tier} of {args.protocol}"
        if args.tier
        else f"{args.env_id} {json.dumps(args.env_kwargs, sort_keys=True)}"
    )
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    header = {
        "protocol": args.protocol or "none",
        "trainer": "batched",
        "measured": f"{command} ({what}), "
        f"{when}, commit {git_commit(folder)}, {hardware()}, load average {load}; the median "
        "over rounds of the batch's CPU seconds over its runs' steps",
    }
    path = Path(path)
    existing = json.loads(path.read_text()) if path.is_file() else None
    table = analysis.measured_costs(rows, existing, header)
    write_atomic(path, json.dumps(table, indent=1) + "\n")
    print(f"wrote {path} (batches of {table['batch_runs']} runs)")
