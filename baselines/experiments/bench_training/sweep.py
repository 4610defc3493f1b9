"""Training cost: ``python -m baselines bench_training``.

CPU seconds per 10^6 environment steps of one run (collection, updates and, for the batched
trainer, its exact evaluations at 0 and at the budget), measured side by side in one process
(one torch thread) on the same environment and hyperparameters (the protocol's, else
``baselines/configs/<env id>.yml``):

- SB3's ``PPO`` (``ppo``) and ``TrajectoryAdvantagePPO`` (estimator methods), one run each, by
  ``learn()``;
- the batched trainer (:mod:`baselines.lib.batched`) with R runs at once, for each R of
  ``--runs``: the batch's CPU time divided by the steps of all its runs.

CPU time (``time.process_time``), not wall time, because the machine may be shared; each
figure is the best of ``--repeats``. Then the ratio SB3 / batched per method, and the batched
trainer's achieved arithmetic rate (the FLOPs of its matrix products per CPU second) against
the machine's own: a ``--matmul-size`` square float32 matrix product timed in the same run, on
one thread. Not a test: it asserts nothing. The table is a pure function of the measurements
(:mod:`baselines.experiments.bench_training.analysis`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from baselines.experiments.bench_training import analysis
from baselines.lib import sb3_trainer
from baselines.lib.runs import Run


def sb3_cpu_per_step(
    method: str, env_id: str, env_kwargs: dict[str, Any], steps: int, config: Any, seed: int = 0
) -> float:
    """CPU seconds per environment step of one SB3 ``learn(steps)`` (no evaluation)."""
    algo, _ = sb3_trainer.build(Run.of(env_id, method, env_kwargs, seed, config=config))
    start = time.process_time()
    algo.learn(steps)
    return (time.process_time() - start) / algo.num_timesteps


def batched_cpu_per_step(
    method: str,
    env_id: str,
    env_kwargs: dict[str, Any],
    steps: int,
    runs: int,
    hyper: dict[str, Any],
    seed: int = 0,
) -> tuple[float, float]:
    """CPU seconds per environment step of one run when ``runs`` train at once, and the matrix
    FLOPs per CPU second the batch achieved."""
    from baselines.lib.batched import train
    from baselines.lib.batched.mlp import FLOPS

    specs = [
        Run.of(env_id, method, env_kwargs, seed + r, steps, steps, 0.9, "batched",
               hyperparameters=hyper)
        for r in range(runs)
    ]  # fmt: skip
    flops = FLOPS.count
    start = time.process_time()
    results = train(specs)
    cpu = time.process_time() - start
    return cpu / sum(r.steps_trained for r in results), (FLOPS.count - flops) / cpu


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
    repeats: int = field(default=2, metadata={"help": "measurements (best kept)", "min": 1})
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
    peak = matmul_flops(args.matmul_size)
    measurements: list[dict[str, Any]] = []
    for method in args.methods:
        hyper = load_hyperparameters(args.env_id, method, config)
        sb3 = min(
            sb3_cpu_per_step(method, args.env_id, args.env_kwargs, args.steps, config, seed=k)
            for k in range(args.repeats)
        )
        measurements.append({"trainer": "sb3", "method": method, "runs": 1, "cpu_per_step": sb3})
        for r in args.runs:
            best, rate = float("inf"), 0.0
            for k in range(args.repeats):
                cpu, flops = batched_cpu_per_step(
                    method, args.env_id, args.env_kwargs, args.steps, r, hyper, seed=100 * k
                )
                if cpu < best:
                    best, rate = cpu, flops
            measurements.append(
                {
                    "trainer": "batched",
                    "method": method,
                    "runs": r,
                    "cpu_per_step": best,
                    "flops": rate,
                }
            )
    rows = analysis.cost_table(measurements, peak)
    analysis.print_cost(rows, args, peak)
    return rows
