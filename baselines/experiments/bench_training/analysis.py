"""Analysis of the training-cost benchmark: the table of measured rows, a pure function of the
measurements (tested on made-up numbers), and the functions that print it.

A measurement is one (trainer, method, runs R): the best CPU seconds per environment step
(``cpu_per_step``) and, for the batched trainer, the matrix FLOPs per CPU second it achieved
(``flops``); the table gives CPU seconds per 10^6 steps, the ratio SB3 / batched of the same
method (``x_sb3``) and the achieved rate against the machine's peak (``of_peak``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]


def trainer_label(method: str) -> str:
    """The SB3 trainer of ``method``: ``PPO`` for ``ppo``, else ``TrajectoryAdvantagePPO``."""
    return "PPO" if method == "ppo" else "TrajectoryAdvantagePPO"


def cost_table(measurements: Iterable[Row], peak: float) -> list[Row]:
    """One row per measurement, in order: SB3's (``trainer`` ``sb3 <class>``, one run) and the
    batched trainer's with its speed-up over SB3's measurement of the same method (which comes
    first), its GFLOP/s and their share of ``peak`` (FLOP/s)."""
    sb3: dict[str, float] = {}
    rows = []
    for m in measurements:
        method, cpu = m["method"], m["cpu_per_step"]
        if m["trainer"] == "sb3":
            sb3[method] = cpu
            rows.append(
                {
                    "trainer": f"sb3 {trainer_label(method)}",
                    "method": method,
                    "runs": 1,
                    "cpu_s_per_1e6": cpu * 1e6,
                }
            )
        else:
            rows.append(
                {
                    "trainer": "batched",
                    "method": method,
                    "runs": m["runs"],
                    "cpu_s_per_1e6": cpu * 1e6,
                    "x_sb3": sb3[method] / cpu,
                    "gflops": m["flops"] / 1e9,
                    "of_peak": m["flops"] / peak,
                }
            )
    return rows


def print_cost(rows: list[Row], settings: Any, peak: float) -> None:
    """Print the settings, the peak and the table of :func:`cost_table`."""
    print(
        f"{settings.env_id} {settings.env_kwargs}, {settings.steps:,} steps per run; CPU time, "
        f"one thread; float32 matmul peak {peak / 1e9:.1f} GFLOP/s ({settings.matmul_size}^2)"
    )
    print(
        f"{'trainer':<28} {'method':<14} {'R':>3} {'CPU s / 1e6 steps':>18} {'x SB3':>7} "
        f"{'GFLOP/s':>8} {'of peak':>8}"
    )
    for row in rows:
        extra = ""
        if "x_sb3" in row:
            extra = f" {row['x_sb3']:>7.1f} {row['gflops']:>8.1f} {row['of_peak']:>8.0%}"
        print(
            f"{row['trainer']:<28} {row['method']:<14} {row['runs']:>3} "
            f"{row['cpu_s_per_1e6']:>18,.1f}{extra}"
        )


def print_memory(rows: list[Row], method: str, tier: str) -> None:
    """Print the peak memory rows of :func:`~baselines.experiments.bench_training.memory.
    tier_peaks` (the measured rows are the table)."""
    print(f"peak memory of one batch per setting, {method}, tier {tier}")
    for row in rows:
        print(
            f"{row['setting']:<50} {row['runs']:>3} runs ({row['densities']} densities) "
            f"{row['peak_bytes'] / 2**20:>8,.0f} MiB"
        )
