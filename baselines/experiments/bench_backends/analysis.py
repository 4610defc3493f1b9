"""Analysis of the backend benchmark: the overhead ratios, the speed-ups and whether the
records agree, a pure function of the measured rows (one per backend and worker count:
``wall`` seconds and the ``records`` without timings; tested on made-up numbers), and the
function that prints them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Row = dict[str, Any]


def summary(rows: Sequence[Row], backends: Sequence[str], workers: Sequence[int]) -> Row:
    """``overhead``: the wall time of each backend over the first's (the reference), per
    worker count (``"ray/process x2"``); ``speedup``: per backend, the fewest workers' wall
    time over each other count's (``"ray x2"``); ``same_records``: whether every row has the
    same records."""
    wall = {(r["backend"], r["workers"]): r["wall"] for r in rows}
    ref = backends[0]
    result: Row = {"overhead": {}, "speedup": {}}
    for backend in backends[1:]:
        for count in workers:
            result["overhead"][f"{backend}/{ref} x{count}"] = (
                wall[backend, count] / wall[ref, count]
            )
    low = min(workers)
    for backend in backends:
        for count in workers:
            if count != low:
                result["speedup"][f"{backend} x{count}"] = wall[backend, low] / wall[backend, count]
    result["same_records"] = len({tuple(r["records"]) for r in rows}) == 1
    return result


def print_summary(result: Row, settings: Any) -> None:
    """Print the sweep's settings and :func:`summary`'s ratios."""
    ref = settings.backends[0]
    print(
        f"\n{settings.runs} runs of PPO on DilutedDoors-v1 (L={settings.routine_length}, "
        f"{settings.budget_steps} steps each)"
    )
    for backend in settings.backends[1:]:
        for count in settings.workers:
            ratio = result["overhead"][f"{backend}/{ref} x{count}"]
            print(f"overhead {backend} / {ref}, {count} worker(s): {ratio:.3f}x")
    low = min(settings.workers)
    for backend in settings.backends:
        for count in settings.workers:
            if count != low:
                speedup = result["speedup"][f"{backend} x{count}"]
                print(f"speed-up {backend}, {count} over {low} worker(s): {speedup:.2f}x")
    same = result["same_records"]
    print(f"same records on every backend and worker count: {'yes' if same else 'NO'}")
