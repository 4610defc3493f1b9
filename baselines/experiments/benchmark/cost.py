"""What a tier costs before it runs: CPU per run from the shipped references' measured seconds
per environment step, and the wall time on N cores.

A run's cost is its budget (environment steps) times the seconds per step measured in the
reference runs of the same method and environment (the median over its runs of ``wall_time /
steps_trained``; a method without references gets the median over all reference methods on
that environment). A sweep of runs of costs ``t_1 .. t_R`` (total ``T``, longest ``t_max``)
on ``N`` cores, each run on one core, takes between ``max(T / N, t_max)`` (the cores always
busy, or the longest run) and ``T / N + t_max`` (any greedy schedule: a core never idles while
a run waits), start-up left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SweepCost:
    """The predicted cost of a set of runs (seconds of one core per run)."""

    runs: int
    steps: int
    """Environment steps, summed over the runs (their budgets)."""
    cpu_seconds: float
    longest_seconds: float
    longest_steps: int

    def wall_seconds(self, cores: int) -> tuple[float, float]:
        """``(lower, upper)`` bound of the wall time on ``cores`` cores, in seconds."""
        if cores < 1:
            raise ValueError(f"cores must be >= 1, got {cores}")
        spread = self.cpu_seconds / cores
        return max(spread, self.longest_seconds), spread + self.longest_seconds


def seconds_per_step(
    references: dict[str, Sequence[dict[str, Any]]],
) -> dict[tuple[str, str], float]:
    """Median ``wall_time / steps_trained`` by ``(method, env_id)`` over the reference runs, and
    by ``("*", env_id)`` over all methods."""
    by_key: dict[tuple[str, str], list[float]] = defaultdict(list)
    for method, records in references.items():
        for r in records:
            steps = r.get("steps_trained") or r["budget"]
            per_step = r["wall_time"] / steps
            by_key[(method, r["env_id"])].append(per_step)
            by_key[("*", r["env_id"])].append(per_step)
    return {key: float(np.median(values)) for key, values in by_key.items()}


def sweep_cost(
    jobs: Iterable[dict[str, Any]], method: str, per_step: dict[tuple[str, str], float]
) -> SweepCost:
    """The cost of ``jobs`` (benchmark jobs: ``env_id``, ``budget``) for ``method``.

    Raises:
        ValueError: no reference run on one of the jobs' environments.
    """
    seconds, budgets = [], []
    for job in jobs:
        env_id = job["env_id"]
        rate = per_step.get((method, env_id), per_step.get(("*", env_id)))
        if rate is None:
            raise ValueError(f"no reference runs on {env_id} to measure its cost from")
        seconds.append(job["budget"] * rate)
        budgets.append(job["budget"])
    if not seconds:
        raise ValueError("no runs to cost")
    longest = int(np.argmax(seconds))
    return SweepCost(
        runs=len(seconds),
        steps=int(sum(budgets)),
        cpu_seconds=float(sum(seconds)),
        longest_seconds=float(seconds[longest]),
        longest_steps=int(budgets[longest]),
    )


def combined(costs: Sequence[SweepCost]) -> SweepCost:
    """The cost of several sweeps run as one (the references of a tier)."""
    longest = max(costs, key=lambda c: c.longest_seconds)
    return SweepCost(
        runs=sum(c.runs for c in costs),
        steps=sum(c.steps for c in costs),
        cpu_seconds=sum(c.cpu_seconds for c in costs),
        longest_seconds=longest.longest_seconds,
        longest_steps=longest.longest_steps,
    )


def duration(seconds: float) -> str:
    """``seconds`` as s, min or h, three significant figures at most."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def wall_range(cost: SweepCost, cores: int) -> str:
    low, high = cost.wall_seconds(cores)
    low_text, high_text = duration(low), duration(high)
    return low_text if low_text == high_text else f"{low_text} .. {high_text}"


def assumptions(reference_runs: int, methods: int, hardware: str) -> str:
    """What a :func:`sweep_cost` estimate assumes, as printed by ``plan``: ``reference_runs``
    runs of ``methods`` methods priced it; ``hardware`` describes this machine."""
    return "\n".join(
        [
            "This estimate assumes:",
            "- a quiet machine: every run has a core to itself (runs are single-threaded); "
            "other busy processes slow every run, by about (busy processes + runs) / cores when "
            "that exceeds 1",
            "- N cores = N runs at once, one per core (`run --workers N`, or N Ray workers)",
            "- seconds per environment step = the median of wall_time / steps_trained over the "
            f"shipped lite reference runs ({reference_runs} runs of {methods} methods) of the same "
            "method and environment (a method without references: the median of all of them), "
            "as measured on the machine that made them (docs/benchmark.md, 'Measured cost'), "
            f"not this one ({hardware}); other tiers' budgets priced at the same rates",
            "- start-up, the lab (gradient SNR at initialization) and the report card left out",
        ]
    )
