"""Aggregates across a tier's settings, with the statistics of rliable (Agarwal et al., "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021): the
interquartile mean (IQM) over every run of every task with a stratified bootstrap interval, the
probability of improvement of every pair of methods, and performance profiles.

They are computed here with numpy and scipy, by rliable's definitions: rliable 1.2 installs but
does not import beside pandas 3 (its stratified bootstrap comes from ``arch < 8``, whose 7.x
fails on pandas 3's ``deprecate_kwarg``), so :func:`iqm` and :func:`improvement_per_task` are
tested against rliable's own ``metrics`` module (which imports: it needs scipy only) where it
is installed.

A **task** is a cell of the tier (a setting at one density value); a run's **score** is the
normalized AUC of its success curve (:func:`baselines.lib.scoring.normalized_auc`: every run
has one, censored or not; the tuning objective). Every method of a comparison must have run the
same seeds on a task, so a task enters only where they all did (the others are counted, not
silently dropped). The **stratified bootstrap** resamples the runs of each task on their own
(with replacement, ``RESAMPLES`` times, seeded), so every resample keeps every task; intervals
are its 95% percentile intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.lib.scoring import normalized_auc
from baselines.lib.stats import iqm as iqm_along

RESAMPLES = 2000
"""Bootstrap resamples of every interval."""
CONFIDENCE = 0.95
PROFILE_TAUS = (0.5, 0.6, 0.7, 0.8, 0.9)
"""The score thresholds the performance profile's table shows (the fraction of runs above)."""

Task = tuple[str, int]
"""A task: a setting's name and a density value."""


@dataclass(frozen=True)
class ScoreMatrices:
    """The runs' scores by method, aligned on tasks and seeds.

    Attributes:
        scores: method -> array ``(runs, tasks)`` (the run of seed ``seeds[i]`` in row ``i``).
        tasks: the tasks of the columns, in order.
        seeds: the seeds of the rows.
        left_out: tasks not every method ran on the same seeds (with why), not compared.
    """

    scores: dict[str, np.ndarray]
    tasks: list[Task]
    seeds: list[int]
    left_out: dict[Task, str] = field(default_factory=dict)


def setting_of(record: Mapping[str, Any]) -> str:
    """The setting a benchmark row belongs to (its ``setting`` field)."""
    return str(record["setting"])


def score_matrices(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> ScoreMatrices:
    """Each method's normalized AUC per (seed, task), on the tasks where every method ran the
    same seeds (at least 2); a ``ValueError`` when no task is shared."""
    by_method: dict[str, dict[Task, dict[int, float]]] = {}
    for method, rows in records.items():
        cells = by_method.setdefault(method, {})
        for r in rows:
            task = (setting_of(r), int(r["density_value"]))
            cells.setdefault(task, {})[int(r["seed"])] = normalized_auc(r)
    every = sorted({t for cells in by_method.values() for t in cells})
    tasks, seeds, left_out = [], None, {}
    for task in every:
        seen = [frozenset(cells.get(task, {})) for cells in by_method.values()]
        if len(set(seen)) != 1 or len(seen[0]) < 2:
            left_out[task] = "not every method ran the same seeds (at least 2) here"
            continue
        if seeds is None:
            seeds = sorted(seen[0])
        elif sorted(seen[0]) != seeds:
            left_out[task] = f"its seeds differ from the other tasks' ({len(seen[0])} runs)"
            continue
        tasks.append(task)
    if not tasks:
        raise ValueError("no task where every method ran the same seeds: nothing to aggregate")
    scores = {
        method: np.array([[cells[t][s] for t in tasks] for s in seeds])
        for method, cells in by_method.items()
    }
    return ScoreMatrices(scores, tasks, list(seeds or []), left_out)


def iqm(scores: np.ndarray) -> float:
    """The interquartile mean of every score of ``(runs, tasks)`` (rliable's
    ``aggregate_iqm``: the 25% trimmed mean)."""
    return float(iqm_along(np.asarray(scores).reshape(-1)))


def resample_indices(runs: int, tasks: int, seed: int) -> np.ndarray:
    """Stratified bootstrap: for each of ``RESAMPLES`` resamples and each task, ``runs`` run
    indices drawn with replacement from that task's runs, shape ``(RESAMPLES, runs, tasks)``."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, runs, size=(RESAMPLES, runs, tasks))


def interval(estimate: float, resampled: np.ndarray) -> tuple[float, float, float]:
    """``(estimate, low, high)``: the 95% percentile interval of ``resampled``."""
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return float(estimate), float(low), float(high)


def resampled(scores: np.ndarray, seed: int) -> np.ndarray:
    """Every score of each stratified bootstrap resample of ``scores`` ``(runs, tasks)``,
    shape ``(RESAMPLES, runs * tasks)``."""
    runs, tasks = scores.shape
    idx = resample_indices(runs, tasks, seed)
    return np.take_along_axis(scores[None], idx, axis=1).reshape(RESAMPLES, -1)


def iqm_interval(scores: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """The IQM of ``scores`` ``(runs, tasks)`` with its stratified bootstrap interval."""
    return interval(iqm(scores), iqm_along(resampled(scores, seed), axis=1))


def pairwise_wins(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per task, whether each run of x beats each run of y (1, a tie 0.5), shape
    ``(runs_x, runs_y, tasks)``."""
    return (x[:, None, :] > y[None, :, :]) + 0.5 * (x[:, None, :] == y[None, :, :])


def improvement_per_task(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``P(X > Y)`` on each task, shape ``(tasks,)``: the share of (run of x, run of y) pairs
    where x scores higher, ties counting a half (the Mann-Whitney U over ``n m``, rliable's
    ``probability_of_improvement`` before its mean over tasks)."""
    return pairwise_wins(x, y).mean(axis=(0, 1))


def improvement_interval(
    x: np.ndarray, y: np.ndarray, seed_x: int = 0, seed_y: int = 1
) -> tuple[float, float, float]:
    """``P(X > Y)`` averaged over tasks with its stratified bootstrap interval (each method's
    runs resampled per task, independently, by its own seed)."""
    return improvement_from_counts(x, y, resample_counts(x, seed_x), resample_counts(y, seed_y))


def resample_counts(scores: np.ndarray, seed: int) -> np.ndarray:
    """How often each run of ``scores`` ``(runs, tasks)`` is drawn in each resample of the
    stratified bootstrap seeded ``seed``, ``(RESAMPLES, tasks, runs)`` (computed once per
    method: every pair it is in reuses it)."""
    runs, tasks = scores.shape
    return counts(resample_indices(runs, tasks, seed), runs).transpose(0, 2, 1)


def improvement_from_counts(
    x: np.ndarray, y: np.ndarray, count_x: np.ndarray, count_y: np.ndarray
) -> tuple[float, float, float]:
    """:func:`improvement_interval` from each side's :func:`resample_counts`: a resample's
    ``P`` on a task is ``c_x^T W c_y / (n m)``, ``W`` the task's pairwise wins (one batched
    matrix product per task instead of resampling the pairs)."""
    runs_x, runs_y = x.shape[0], y.shape[0]
    wins = pairwise_wins(x, y)
    # (tasks, reps, runs_x) @ (tasks, runs_x, runs_y) -> (tasks, reps, runs_y)
    left = np.matmul(count_x.transpose(1, 0, 2), wins.transpose(2, 0, 1))
    per_task = (left * count_y.transpose(1, 0, 2)).sum(axis=-1) / (runs_x * runs_y)
    return interval(wins.mean(axis=(0, 1)).mean(), per_task.mean(axis=0))


def method_seed(method: str) -> int:
    """The bootstrap seed of a method's resamples: its name's CRC-32, so a method's interval
    does not move when another method joins the comparison."""
    import zlib

    return zlib.crc32(method.encode())


def counts(indices: np.ndarray, runs: int) -> np.ndarray:
    """How often each run is drawn per resample and task: ``(RESAMPLES, runs, tasks)``."""
    reps, _, tasks = indices.shape
    cell = np.arange(reps)[:, None, None] * tasks + np.arange(tasks)[None, None, :]
    flat = np.bincount((cell * runs + indices).reshape(-1), minlength=reps * tasks * runs)
    return flat.reshape(reps, tasks, runs).transpose(0, 2, 1).astype(np.float64)


def profile_interval(
    scores: np.ndarray, taus: Sequence[float], seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The performance profile: the fraction of runs (over every task) scoring above each of
    ``taus``, with stratified bootstrap intervals; three arrays of ``len(taus)``."""
    taus = np.asarray(taus, dtype=np.float64)
    above = (resampled(scores, seed)[:, :, None] > taus).mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(above, [tail, 100 - tail], axis=0)
    return (scores.reshape(-1)[:, None] > taus).mean(axis=0), low, high


def aggregate(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    tuned: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    taus: Sequence[float] = PROFILE_TAUS,
) -> dict[str, Any]:
    """Every aggregate of a tier's methods (``records`` by method; ``tuned``: their tuned
    columns, where a protocol has them): ``iqm`` per method (default and, where tuned,
    ``iqm_tuned``), ``improvement`` for every ordered pair of the ranked column (the tuned one
    where every method has it), ``profiles`` at ``taus`` (``profile_taus``; :func:`markdown`
    needs :data:`PROFILE_TAUS` among them: a figure's finer grid can hold them), the tasks,
    seeds and the tasks left out. Deterministic: every bootstrap is seeded, and a profile's
    value at a tau does not depend on the other taus."""
    default = score_matrices(records)
    out: dict[str, Any] = {
        "tasks": len(default.tasks),
        "seeds": default.seeds,
        "left_out": {f"{s} at {v}": why for (s, v), why in default.left_out.items()},
        "iqm": {m: iqm_interval(a, method_seed(m)) for m, a in default.scores.items()},
    }
    ranked = default
    if tuned and set(tuned) == set(records):
        ranked = score_matrices(tuned)
        out["iqm_tuned"] = {m: iqm_interval(a, method_seed(m)) for m, a in ranked.scores.items()}
        out["tuned_tasks"] = len(ranked.tasks)
        out["tuned_seeds"] = ranked.seeds
    out["ranked_column"] = "tuned" if ranked is not default else "default"
    names = list(ranked.scores)
    drawn = {m: resample_counts(ranked.scores[m], method_seed(m)) for m in names}
    out["improvement"] = {
        (x, y): improvement_from_counts(ranked.scores[x], ranked.scores[y], drawn[x], drawn[y])
        for x in names
        for y in names
        if x != y
    }
    out["profile_taus"] = [float(t) for t in taus]
    out["profiles"] = {
        m: profile_interval(a, taus, method_seed(m)) for m, a in ranked.scores.items()
    }
    return out


def markdown(result: Mapping[str, Any], label: Mapping[str, str]) -> list[str]:
    """The leaderboard's section of :func:`aggregate`'s ``result`` (``label``: each method's
    name as the tables print it, privileged marks included)."""
    tuned = "iqm_tuned" in result
    order = sorted(
        result["iqm_tuned" if tuned else "iqm"],
        key=lambda m: -result["iqm_tuned" if tuned else "iqm"][m][0],
    )

    def cell(v: Sequence[float]) -> str:
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    lines = [
        "## Aggregates across the tier's settings",
        "",
        f"rliable's statistics (Agarwal et al., NeurIPS 2021) over {result['tasks']} tasks (a "
        f"setting at one density) x {len(result['seeds'])} seeds: a run's score is the "
        "normalized AUC of its success curve (every run has one, censored or not); intervals "
        f"are 95% stratified bootstrap intervals ({RESAMPLES} resamples, the runs of each task "
        "resampled on their own); computed with numpy and scipy by rliable's definitions "
        "(`baselines/experiments/benchmark/aggregates.py` says why).",
    ]
    if result["left_out"]:
        shown = "; ".join(f"{k} ({v})" for k, v in list(result["left_out"].items())[:5])
        lines.append(f"Tasks left out ({len(result['left_out'])}): {shown}.")
    header = "| method | IQM, default |" + (" IQM, tuned |" if tuned else "")
    lines += ["", header, "|---|---|" + ("---|" if tuned else "")]
    for m in order:
        row = f"| {label.get(m, m)} | {cell(result['iqm'][m])} |"
        if tuned:
            row += f" {cell(result['iqm_tuned'][m])} |"
        lines.append(row)
    column = result["ranked_column"]
    lines += [
        "",
        f"Probability of improvement, P(row's score > column's on a task), averaged over tasks "
        f"({column} column); `*`: its 95% interval excludes 0.5:",
        "",
        "| | " + " | ".join(label.get(m, m).split(" (")[0] for m in order) + " |",
        "|---|" + "---|" * len(order),
    ]
    for x in order:
        cells = []
        for y in order:
            if x == y:
                cells.append("")
                continue
            est, low, high = result["improvement"][(x, y)]
            cells.append(f"{est:.2f}{'*' if low > 0.5 or high < 0.5 else ''}")
        lines.append(f"| {label.get(x, x)} | " + " | ".join(cells) + " |")
    taus = " | ".join(f"tau {t:g}" for t in PROFILE_TAUS)
    lines += [
        "",
        f"Performance profile ({column} column): the share of runs whose score exceeds tau "
        "[95% CI]:",
        "",
        f"| method | {taus} |",
        "|---|" + "---|" * len(PROFILE_TAUS),
    ]
    at = [result["profile_taus"].index(t) for t in PROFILE_TAUS]
    for m in order:
        est, low, high = (np.asarray(v)[at] for v in result["profiles"][m])
        cells = " | ".join(
            f"{e:.2f} [{lo:.2f}, {hi:.2f}]" for e, lo, hi in zip(est, low, high, strict=True)
        )
        lines.append(f"| {label.get(m, m)} | {cells} |")
    return lines


def versus(
    method: str,
    records: Sequence[Mapping[str, Any]],
    references: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    """A report card's aggregates (its default column): on the tasks where ``method`` and every
    one of its ``references`` ran the same seeds, the method's IQM with its stratified bootstrap
    interval (``method``), and per reference its IQM and ``P(method > reference)`` with theirs
    (``references``): the numbers :func:`aggregate` gives for the same methods, every bootstrap
    seeded by its method's name, but only the method's pairs. ``{"not computed": why}`` where no
    task is shared (:func:`score_matrices`)."""
    try:
        matrices = score_matrices({method: records, **references})
    except ValueError as err:
        return {"not computed": str(err)}
    mine = matrices.scores[method]
    drawn = resample_counts(mine, method_seed(method))
    return {
        "column": "default",
        "tasks": len(matrices.tasks),
        "seeds": matrices.seeds,
        "left_out": {f"{s} at {v}": why for (s, v), why in matrices.left_out.items()},
        "method": iqm_interval(mine, method_seed(method)),
        "references": {
            name: {
                "iqm": iqm_interval(other, method_seed(name)),
                "improvement": improvement_from_counts(
                    mine, other, drawn, resample_counts(other, method_seed(name))
                ),
            }
            for name, other in matrices.scores.items()
            if name != method
        },
    }


def versus_markdown(result: Mapping[str, Any], method: str, labels: Mapping[str, str]) -> list[str]:
    """The card's section of :func:`versus`'s ``result``: ``method`` as the card names it, then
    the references of ``labels`` (name -> how the card names it), in its order."""
    lines = ["## Aggregate across the settings", ""]
    if "not computed" in result:
        return [*lines, f"Not computed: {result['not computed']}."]

    def cell(v: Sequence[float]) -> str:
        return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    lines.append(
        f"rliable's statistics (Agarwal et al., NeurIPS 2021) over {result['tasks']} tasks (a "
        f"setting at one density) x {len(result['seeds'])} seeds, the default column: a run's "
        "score is the normalized AUC of its success curve (every run has one, censored or not); "
        f"95% stratified bootstrap intervals ({RESAMPLES} resamples, the runs of each task "
        "resampled on their own); P(improvement) is the chance that this method's score beats "
        "the reference's on a task, averaged over tasks; `*`: its interval excludes 0.5."
    )
    if result["left_out"]:
        shown = "; ".join(f"{k} ({v})" for k, v in list(result["left_out"].items())[:5])
        lines.append(f"Tasks left out ({len(result['left_out'])}): {shown}.")
    lines += [
        "",
        "| method | IQM of the score [95% CI] | P(this method > it) [95% CI] |",
        "|---|---|---|",
        f"| **{method}** (this method) | {cell(result['method'])} | |",
    ]
    for name, shown in labels.items():
        if name not in result["references"]:
            continue
        entry = result["references"][name]
        low, high = entry["improvement"][1:]
        star = "*" if low > 0.5 or high < 0.5 else ""
        lines.append(f"| {shown} | {cell(entry['iqm'])} | {cell(entry['improvement'])}{star} |")
    return lines
