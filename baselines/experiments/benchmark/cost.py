"""What a tier costs before it runs, per trainer: CPU per run from measured seconds per
environment step, and the wall time on N cores.

SB3 (``--trainer sb3``): a run's cost is its budget (environment steps) times the seconds per
step measured in the shipped reference runs of the same method and environment (the median over
its runs of ``wall_time / steps_trained``, one run per process; a method without references
gets the median over all reference methods on that environment). A sweep of runs of costs
``t_1 .. t_R`` (total ``T``, longest ``t_max``) on ``N`` cores, each run on one core, takes
between ``max(T / N, t_max)`` (the cores always busy, or the longest run) and ``T / N + t_max``
(any greedy schedule: a core never idles while a run waits), start-up left out.

The batched trainer (``--trainer batched``): a run's cost is its budget times the CPU seconds
per step measured in batched runs (:func:`cpu_seconds_per_step`: their ``cpu_time``, each run's
share of its batch, over their steps, per method and env, shipped as :data:`MEASURED_FILE` of
the protocol; a method not measured gets the median of those measured on the env); the
tasks on the cores are the batches the runner forms for ``N`` workers
(:func:`~baselines.lib.runner.batch_sizes`), so ``t_max`` is the longest batch. The shares were
measured at the batch sizes the file states: smaller batches (many cores, few runs) cost more
per step (docs/batched.md), so the estimate is a lower bound there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.lib.runs import Run

MEASURED_FILE = "{version}-{trainer}-costs.json"
"""The measured CPU seconds per step of a trainer (not the references') for a protocol, shipped
beside it in ``baselines/protocols/`` (:func:`measured_costs`)."""


@dataclass(frozen=True)
class SweepCost:
    """The predicted cost of a set of runs (seconds of one core per run)."""

    runs: int
    steps: int
    """Environment steps, summed over the runs (their budgets)."""
    cpu_seconds: float
    longest_seconds: float
    longest_steps: int
    task: str = "run"
    """What the longest task is: a ``run`` (SB3: one per process) or a ``batch``."""

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


def cpu_seconds_per_step(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """``{method: {env_id: seconds}}``: the CPU seconds per step of ``records`` (rows of the
    batched trainer, whose ``cpu_time`` is each run's share of its batch), their ``cpu_time``
    summed over their ``steps_trained`` per method and env (so a tier's total is what its runs
    took); the ``seconds_per_step`` of :data:`MEASURED_FILE`."""
    cpu: dict[tuple[str, str], float] = defaultdict(float)
    steps: dict[tuple[str, str], int] = defaultdict(int)
    for r in records:
        cpu[(r["method"], r["env_id"])] += r["cpu_time"]
        steps[(r["method"], r["env_id"])] += r.get("steps_trained") or r["budget"]
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (method, env_id), seconds in sorted(cpu.items()):
        out[method][env_id] = seconds / steps[(method, env_id)]
    return dict(out)


def batched_rates(records: Sequence[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Per-step CPU seconds of batched runs (their ``cpu_time``, each run's share of its batch,
    over their ``steps_trained``) by ``(method, setting)`` and ``(method, env_id)``, and by
    ``("*", setting)`` and ``("*", env_id)`` over all methods (the median of the methods')."""
    out: dict[tuple[str, str], float] = {}
    for key in ("setting", "env_id"):
        cpu: dict[tuple[str, str], float] = defaultdict(float)
        steps: dict[tuple[str, str], int] = defaultdict(int)
        for r in records:
            where = r.get(key, r["env_id"])
            cpu[(r["method"], where)] += r["cpu_time"]
            steps[(r["method"], where)] += r.get("steps_trained") or r["budget"]
        by_where: dict[str, list[float]] = defaultdict(list)
        for (method, where), seconds in cpu.items():
            out[(method, where)] = seconds / steps[(method, where)]
            by_where[where].append(out[(method, where)])
        for where, values in by_where.items():
            out[("*", where)] = float(np.median(values))
    return out


def measured_batched(version: str) -> tuple[dict[tuple[str, str], float], str] | None:
    """:func:`measured_costs` of the batched trainer."""
    return measured_costs(version, "batched")


def measured_costs(version: str, trainer: str) -> tuple[dict[tuple[str, str], float], str] | None:
    """A trainer's measured CPU seconds per step for protocol ``version`` and a line saying
    where they come from, or ``None`` when none ship. The file (:data:`MEASURED_FILE`) holds
    ``{"measured": "<command, date, machine>", "batch_runs": R, "seconds_per_step": {method:
    {env_id or setting: seconds}}}``."""
    import json

    from baselines.lib import data

    path = data.PROTOCOLS / MEASURED_FILE.format(version=version, trainer=trainer)
    if not path.is_file():
        return None
    table = json.loads(path.read_text())
    per_step: dict[tuple[str, str], float] = {}
    by_env: dict[str, list[float]] = defaultdict(list)
    for method, envs in table["seconds_per_step"].items():
        for env_id, seconds in envs.items():
            per_step[(method, env_id)] = float(seconds)
            by_env[env_id].append(float(seconds))
    for env_id, values in by_env.items():
        per_step[("*", env_id)] = float(np.median(values))
    batches = f" (batches of {table['batch_runs']} runs)" if table.get("batch_runs") else ""
    where = f"{path.name}: {table['measured']}{batches}"
    return per_step, where


def rate(per_step: dict[tuple[str, str], float], method: str, run: Run, what: str) -> float:
    """The per-step cost of ``method`` on ``run``'s setting, else on its env (that method's,
    else all methods' median)."""
    env_id, setting = run.env_id, run.context.get("setting")
    for key in [(method, setting), (method, env_id), ("*", setting), ("*", env_id)]:
        if key in per_step:
            return per_step[key]
    raise ValueError(f"no {what} on {env_id} to measure its cost from")


def batched_cost(
    jobs: Sequence[Run],
    per_step: dict[tuple[str, str], float],
    cores: int,
    max_batch: int = 64,
) -> SweepCost:
    """The cost of ``jobs`` (batched benchmark runs, grouped as
    :func:`~baselines.lib.runs.batch_group` groups them) on ``cores`` workers: each
    run's budget times its method's measured rate on its env (all methods' median where its
    method has none), summed per batch, the batches as the runner forms them.

    Raises:
        ValueError: no measured cost on one of the jobs' environments, no jobs.
    """
    from baselines.lib.runner import batch_sizes
    from baselines.lib.runs import batch_group

    if not jobs:
        raise ValueError("no runs to cost")
    groups = [batch_group(job) for job in jobs]
    sizes = batch_sizes(groups, cores, max_batch)
    members: dict[str | None, list[Run]] = defaultdict(list)
    for group, job in zip(groups, jobs, strict=True):
        members[group].append(job)
    tasks: list[tuple[float, int]] = []
    for group, runs in members.items():
        size = sizes.get(group, 1)
        for lo in range(0, len(runs), size):
            chunk = runs[lo : lo + size]
            seconds = sum(
                j.budget * rate(per_step, j.method.text, j, "measured batched runs") for j in chunk
            )
            tasks.append((seconds, sum(j.budget for j in chunk)))
    longest = max(tasks)
    return SweepCost(
        runs=len(jobs),
        steps=int(sum(j.budget for j in jobs)),
        cpu_seconds=float(sum(t for t, _ in tasks)),
        longest_seconds=float(longest[0]),
        longest_steps=int(longest[1]),
        task="batch",
    )


def sweep_cost(
    jobs: Iterable[Run], method: str, per_step: dict[tuple[str, str], float]
) -> SweepCost:
    """The cost of ``jobs`` (benchmark runs) for ``method``.

    Raises:
        ValueError: no reference run on one of the jobs' environments.
    """
    seconds, budgets = [], []
    for job in jobs:
        seconds.append(job.budget * rate(per_step, method, job, "reference runs"))
        budgets.append(job.budget)
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
        task=longest.task,
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


def assumptions(
    reference_runs: int,
    methods: int,
    hardware: str,
    measure: str = "the median of wall_time / steps_trained",
    priced_on: str = "lite",
    tier: str = "lite",
    measured_file: str | None = None,
) -> str:
    """What a :func:`sweep_cost` estimate assumes, as printed by ``plan``: ``reference_runs``
    runs of ``methods`` methods of tier ``priced_on`` priced tier ``tier`` by ``measure`` per
    step, or (``measured_file``: where it comes from) the references' trainer's measured file;
    ``hardware`` describes this machine."""
    rates = (
        "its own runs' rates"
        if priced_on == tier
        else "the same rates (no references of its own ship; larger batches cost less per "
        "step, another policy more)"
    )
    return "\n".join(
        [
            "This estimate assumes:",
            "- a quiet machine: every run has a core to itself (runs are single-threaded); "
            "other busy processes slow every run, by about (busy processes + runs) / cores when "
            "that exceeds 1",
            "- N cores = N runs at once, one per core (`run --workers N`, or N Ray workers)",
            (
                f"- seconds per environment step of the references' trainer: {measured_file} "
                "(per method and setting; a setting not measured: its env's, a method not "
                "measured: the median of those that were), as measured on the machine named "
                f"there, not necessarily this one ({hardware})"
                if measured_file
                else f"- seconds per environment step = {measure} over the "
                f"shipped {priced_on} reference runs ({reference_runs} runs of {methods} "
                "methods) of the same method and setting (a method without references: the "
                "median of all of them), as measured on the machine that made them "
                f"(docs/benchmark.md, 'Measured cost'), not this one ({hardware}); tier {tier} "
                f"priced at {rates}"
            ),
            "- start-up, the lab (gradient SNR at initialization) and the report card left out "
            "(measured on the lite tiers: docs/benchmark.md, 'Measured cost')",
        ]
    )
