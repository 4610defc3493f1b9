"""Analysis of the training-cost benchmark: the table of measured rows, a pure function of the
measurements (tested on made-up numbers), and the functions that print it.

A measurement is one (trainer, method, runs R) in one round (``repeat``): its CPU seconds per
environment step (``cpu_per_step``), the same per phase (``split``: ``rollout``, ``update``,
for the batched trainer also ``setup`` and ``evaluation``) and, for the batched trainer, the
matrix FLOPs per CPU second of its updates (``update_flops``), and where measured the wall
seconds per step (``wall_per_step``: for the batched trainer the batch's, every run's steps).
The table has one row per
(trainer, method, R), in order of first measurement: CPU seconds per 10^6 steps (the median over
rounds) and their spread ((max - min) / median), each phase's share of the time, the ratio SB3 /
batched of the same method (the median of each round's own ratio, with its least and greatest),
the update's arithmetic rate against the machine's peak, and the steps per second of wall
time (the median over rounds; for the batched trainer, of all R runs together) with the wall
ratio to SB3 (the figure on a device other than the CPU, whose time CPU time does not count).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

Row = dict[str, Any]
PHASES = ("setup", "rollout", "evaluation", "update")
"""The phases a row's time is split into, in the order printed (SB3 has the middle two)."""


def trainer_label(method: str) -> str:
    """The SB3 trainer of ``method``: ``PPO`` for ``ppo``, else ``TrajectoryAdvantagePPO``."""
    return "PPO" if method == "ppo" else "TrajectoryAdvantagePPO"


def spread(values: list[float]) -> float:
    """(max - min) / median of ``values`` (0 for one value)."""
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def cost_table(measurements: Iterable[Row], peak: float) -> list[Row]:
    """One row per (trainer, method, R), in order of first measurement (see the module
    docstring); ``peak``: the machine's float32 matmul rate (FLOP/s)."""
    measurements = list(measurements)
    groups: dict[tuple[str, str, int], list[Row]] = {}
    for m in measurements:
        groups.setdefault((m["trainer"], m["method"], m["runs"]), []).append(m)
    sb3 = {(m["method"], m.get("repeat", 0)): m["cpu_per_step"] for m in measurements
           if m["trainer"] == "sb3"}  # fmt: skip
    sb3_wall = {(m["method"], m.get("repeat", 0)): m["wall_per_step"] for m in measurements
                if m["trainer"] == "sb3" and "wall_per_step" in m}  # fmt: skip
    rows = []
    for (trainer, method, runs), mine in groups.items():
        cpu = [m["cpu_per_step"] for m in mine]
        median = statistics.median(cpu)
        row: Row = {
            "trainer": f"sb3 {trainer_label(method)}" if trainer == "sb3" else "batched",
            "method": method,
            "runs": runs,
            "cpu_s_per_1e6": median * 1e6,
            "spread": spread(cpu),
        }
        for phase in PHASES:
            shares = [m["split"][phase] / m["cpu_per_step"] for m in mine if phase in m["split"]]
            if shares:
                row[f"{phase}_share"] = statistics.median(shares)
        walls = [m["wall_per_step"] for m in mine if "wall_per_step" in m]
        if len(walls) == len(mine):
            row["steps_per_s"] = 1.0 / statistics.median(walls)
        if trainer != "sb3":
            ratios = [sb3[method, m.get("repeat", 0)] / m["cpu_per_step"] for m in mine]
            rate = statistics.median(m["update_flops"] for m in mine)
            row |= {
                "x_sb3": statistics.median(ratios),
                "x_sb3_low": min(ratios),
                "x_sb3_high": max(ratios),
                "update_gflops": rate / 1e9,
                "update_of_peak": rate / peak,
            }
            if "steps_per_s" in row and all((method, m.get("repeat", 0)) in sb3_wall for m in mine):
                # one run's wall seconds per step on SB3 over the batch's per step of all runs
                row["wall_x_sb3"] = statistics.median(
                    sb3_wall[method, m.get("repeat", 0)] / m["wall_per_step"] for m in mine
                )
        rows.append(row)
    return rows


def measured_costs(
    rows: list[Row], existing: dict[str, Any] | None, header: dict[str, Any]
) -> dict[str, Any]:
    """The measured-costs file ``benchmark plan`` reads
    (:data:`~baselines.experiments.benchmark.cost.MEASURED_FILE`) with the batched trainer's
    CPU seconds per step at the largest R of ``rows`` (the median over rounds), per method and
    row's ``where`` (an env id, or a tier's setting name: then also per ``env_id``, the median
    over its settings, for settings not measured), merged into ``existing`` (the file as
    it was, when it holds the same protocol and trainer: entries of other methods and places
    stay, its ``measured`` lines are kept before ``header["measured"]``). ``header``:
    ``protocol``, ``trainer``, ``measured``."""
    batched = [r for r in rows if r["trainer"] == "batched"]
    if not batched:
        raise ValueError("no batched rows measured: nothing to write")
    largest = max(r["runs"] for r in batched)
    same = existing is not None and all(
        existing.get(k) == header[k] for k in ("protocol", "trainer")
    )
    table: dict[str, Any] = {**header, "batch_runs": largest, "seconds_per_step": {}}
    if same and existing is not None:
        table["seconds_per_step"] = {m: dict(e) for m, e in existing["seconds_per_step"].items()}
        before = existing["measured"]
        table["measured"] = "; ".join([*([before] if before else []), header["measured"]])
        if existing.get("batch_runs") not in (None, largest):
            table["batch_runs"] = min(existing["batch_runs"], largest)
    by_env: dict[tuple[str, str], list[float]] = {}
    for row in batched:
        if row["runs"] == largest:
            per_env = table["seconds_per_step"].setdefault(row["method"], {})
            per_env[row["where"]] = float(f"{row['cpu_s_per_1e6'] / 1e6:.4g}")
            if row.get("env_id", row["where"]) != row["where"]:
                by_env.setdefault((row["method"], row["env_id"]), []).append(per_env[row["where"]])
    for (method, env_id), values in by_env.items():  # settings not measured: their env's
        table["seconds_per_step"][method][env_id] = float(f"{statistics.median(values):.4g}")
    return table


def print_tier_costs(rows: list[Row], settings: Any) -> None:
    """Print the rows of the tier mode (one per method and setting) as a table."""
    print(
        f"batched trainer on tier {settings.tier} of {settings.protocol}, {settings.steps:,} "
        f"steps per run, median of {settings.repeats} rounds; CPU time, one thread"
    )
    print(f"{'method':<32} {'setting':<48} {'R':>3} {'CPU s/1e6':>10} {'spread':>7}")
    for row in rows:
        print(
            f"{row['method']:<32} {row['where']:<48} {row['runs']:>3} "
            f"{row['cpu_s_per_1e6']:>10,.2f} {row['spread']:>7.0%}"
        )


def print_cost(rows: list[Row], settings: Any, peak: float) -> None:
    """Print the settings, the peak and the table of :func:`cost_table`."""
    device = settings.device
    print(
        f"{settings.env_id} {settings.env_kwargs}, {settings.steps:,} steps per run, "
        f"{settings.repeats} rounds (SB3 and batched interleaved; medians, spread = "
        f"(max - min) / median); CPU time, one thread; float32 matmul peak "
        f"{peak / 1e9:.1f} GFLOP/s ({settings.matmul_size}^2); batched trainer on {device}"
        + ("" if device == "cpu" else " (CPU time counts the host only: read steps/s, wall)")
    )
    print(
        f"{'trainer':<28} {'method':<14} {'R':>3} {'CPU s/1e6':>10} {'spread':>7} "
        f"{'setup':>6} {'rollout':>8} {'eval':>6} {'update':>7} {'x SB3 [min, max]':>20} "
        f"{'update GFLOP/s':>15} {'of peak':>8} {'steps/s':>9} {'wall x SB3':>10}"
    )
    for row in rows:
        shares = " ".join(
            f"{row[f'{p}_share']:>{w}.0%}" if f"{p}_share" in row else f"{'-':>{w}}"
            for p, w in zip(PHASES, (6, 8, 6, 7), strict=True)
        )
        extra = f" {'':>20} {'':>15} {'':>8}"
        if "x_sb3" in row:
            ratio = f"{row['x_sb3']:.1f} [{row['x_sb3_low']:.1f}, {row['x_sb3_high']:.1f}]"
            extra = f" {ratio:>20} {row['update_gflops']:>15.1f} {row['update_of_peak']:>8.0%}"
        if "steps_per_s" in row:
            extra += f" {row['steps_per_s']:>9,.0f}"
        if "wall_x_sb3" in row:
            extra += f" {row['wall_x_sb3']:>10.1f}"
        print(
            f"{row['trainer']:<28} {row['method']:<14} {row['runs']:>3} "
            f"{row['cpu_s_per_1e6']:>10,.1f} {row['spread']:>7.0%} {shares}{extra}"
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
