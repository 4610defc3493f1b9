"""The benchmark's scores, from run records (each a comparison run: ``timesteps``, ``success``,
``budget``, ``target``, ``seed``, ``rho``, ``setting``, ``density_value``, ``label``), and the
one place that says how each is printed (:func:`steps_text`, :func:`ratio_text`,
:func:`exponent_text`, :func:`km_text`), so censoring is handled once for every table.

Per setting and density, over seeds (``n`` runs):

- **steps to target** ``T_i``: by the run's evaluation rule (:mod:`baselines.lib.scoring`: the
  first crossing interpolated between evaluations for rb1/rb2's schedule, the first update
  whose policy reaches the target for rb3's); a run that never reaches it is censored at its
  budget ``B``. Reported as the interquartile mean of ``min(T_i, B)`` with a percentile
  bootstrap interval over seeds (a lower bound, ``>=``, when any run is censored: a censored run
  took at least ``B``) and as the Kaplan-Meier median (``scipy.stats.ecdf`` on right-censored
  data; ``>= B`` when fewer than half the runs reach the target). A cell where no run reached
  the target is printed ``censored (0/n within budget B)``: no number, no interval.
- **normalized AUC**: the area under the success curve over the budget, in ``[0, 1]``
  (the evaluation's rule), IQM over seeds with its bootstrap interval.

Across the densities of a setting:

- **dilution exponent**: the least-squares slope of ``log IQM(steps)`` against ``log rho``
  (0: the method does not dilute; ``-1``: its steps grow like ``1 / rho``), with a bootstrap
  interval (seeds resampled within each density, ``scipy.stats.bootstrap``). Censored runs at the
  lowest densities make it an upper bound (``<=``: the true slope is steeper), censored runs
  elsewhere make it no bound at all (``~``); undefined (``None``, shown ``n/a`` with why) when
  no run reaches the target at some density (the slope would be the budget's).
- **ratio to a reference** at the lowest density: ``IQM(steps) / IQM(steps of the reference)``
  with a two-sample bootstrap interval; a bound when either side is censored
  (:func:`baselines.lib.curves.ratio_bound`), printed with the censored runs it contains; none
  (``censored (...)``) when either cell is fully censored.
- **equivalence** of two cells (trainer cross-checks): two one-sided tests (:func:`tost`);
  cells with censored runs are reported apart, never counted as equivalent.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from baselines.lib.curves import BOUND_SIGN, ratio_bound
from baselines.lib.scoring import normalized_auc, steps_to_target
from baselines.lib.stats import iqm

Record = dict[str, Any]
CONFIDENCE = 0.95
RESAMPLES = 2000


def bootstrap(
    samples: Sequence[np.ndarray], statistic: Callable[..., Any], seed: int = 0
) -> tuple[float, float, float]:
    """``(estimate, low, high)``: ``statistic(*samples)`` and its 95% percentile bootstrap
    interval (``scipy.stats.bootstrap``, each sample resampled on its own); the estimate twice
    where a sample has fewer than 2 values or every resample gives the same value.

    ``statistic(*samples, axis=-1)`` is vectorized: each sample may carry leading resample
    axes and the statistic reduces the last one (scipy then evaluates all resamples in a few
    array operations instead of 2,000 Python calls; the resamples are the same either way)."""
    estimate = float(statistic(*samples, axis=-1))
    if any(len(s) < 2 for s in samples):
        return estimate, estimate, estimate
    result = stats.bootstrap(
        tuple(np.asarray(s, dtype=np.float64) for s in samples),
        statistic,
        n_resamples=RESAMPLES,
        confidence_level=CONFIDENCE,
        method="percentile",
        vectorized=True,
        paired=False,
        rng=np.random.default_rng(seed),
    )
    low, high = result.confidence_interval
    if not (math.isfinite(low) and math.isfinite(high)):
        return estimate, estimate, estimate
    return estimate, float(low), float(high)


def kaplan_meier_median(times: np.ndarray, censored: np.ndarray) -> tuple[float, bool]:
    """The Kaplan-Meier median of ``times`` with right-censoring (``censored``: the run ended
    at its budget without reaching the target), and whether it is censored (fewer than half
    reached: the median is then at least the largest budget)."""
    if censored.all():
        return float(times.max()), True
    data = stats.CensoredData(uncensored=times[~censored], right=times[censored])
    cdf = stats.ecdf(data).cdf
    reached = np.flatnonzero(cdf.probabilities >= 0.5)
    if not len(reached):
        return float(times.max()), True
    return float(cdf.quantiles[reached[0]]), False


def iqm_statistic(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The IQM over ``axis`` (:func:`bootstrap`'s vectorized statistic)."""
    return np.asarray(iqm(x, axis=axis))


def setting_scores(records: Sequence[Record]) -> dict[str, Any]:
    """Scores of one method at one (setting, density) over its seeds (see the module docstring)."""
    records = sorted(records, key=lambda r: r["seed"])
    budgets = np.array([r["budget"] for r in records], dtype=np.float64)
    crossing = np.array([steps_to_target(r) for r in records])
    censored = ~np.isfinite(crossing)
    steps = np.where(censored, budgets, crossing)
    est, low, high = bootstrap([steps], iqm_statistic)
    median, median_censored = kaplan_meier_median(steps, censored)
    auc = np.array([normalized_auc(r) for r in records])
    a_est, a_low, a_high = bootstrap([auc], iqm_statistic)
    return {
        "seeds": [r["seed"] for r in records],
        "runs": len(records),
        "reached": int((~censored).sum()),
        "steps": steps.tolist(),
        "censored": censored.tolist(),
        "steps_iqm": est,
        "steps_low": low,
        "steps_high": high,
        "steps_bound": "lower bound" if censored.any() else "exact",
        "km_median": median,
        "km_median_bound": "lower bound" if median_censored else "exact",
        "auc_iqm": a_est,
        "auc_low": a_low,
        "auc_high": a_high,
        "budget": float(budgets.max()),
    }


def slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def slopes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of ``log y`` against ``log x`` along ``y``'s last axis (``y``:
    ``(..., len(x))``): :func:`slope` of every leading index at once."""
    lx = np.log(np.asarray(x, dtype=np.float64))
    ly = np.log(np.asarray(y, dtype=np.float64))
    dx = lx - lx.mean()
    return ((ly - ly.mean(axis=-1, keepdims=True)) * dx).sum(axis=-1) / (dx**2).sum()


def dilution_exponent(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The dilution exponent of one method on one setting from its per-density ``rows``
    (:func:`setting_scores` plus ``rho``), with its bootstrap interval and bound."""
    rows = sorted(rows, key=lambda r: r["rho"])
    rho = np.array([r["rho"] for r in rows])
    if len(set(rho.tolist())) < 2:
        return {
            "exponent": None,
            "low": None,
            "high": None,
            "bound": "exact",
            "note": "needs two densities",
        }
    if all(all(r["censored"]) for r in rows):
        return {
            "exponent": None,
            "low": None,
            "high": None,
            "bound": "exact",
            "note": "no run reached the target at any density: the slope would be that of the "
            "budgets",
        }
    empty = [r for r in rows if fully_censored(r)]
    if empty:  # a slope through a budget measures the budget
        where = ", ".join(f"rho {r['rho']:.3g} {censored_text(r)}" for r in empty)
        return {
            "exponent": None,
            "low": None,
            "high": None,
            "bound": "censored",
            "note": f"no run reached the target at {where}",
        }
    samples = [np.asarray(r["steps"], dtype=np.float64) for r in rows]

    def statistic(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
        return slopes(rho, np.stack([np.asarray(iqm(x, axis=axis)) for x in xs], axis=-1))

    est, low, high = bootstrap(samples, statistic)
    censored = [any(r["censored"]) for r in rows]
    below = rho <= np.median(rho)
    if not any(censored):
        bound = "exact"
    elif all(b for b, c in zip(below, censored, strict=True) if c):
        bound = "upper bound"  # steps at low rho are underestimated: the true slope is steeper
    else:
        bound = "not bounded"
    return {"exponent": est, "low": low, "high": high, "bound": bound}


def fully_censored(row: Mapping[str, Any]) -> bool:
    """Whether no run of a cell (:func:`setting_scores`) reached the target: its steps are then
    the budget for every run, a number that measures the budget and nothing else."""
    return all(row["censored"])


def within_budget(row: Mapping[str, Any]) -> str:
    """What a fully censored cell is: ``0/30 within budget 4.59e+04``."""
    return f"0/{len(row['censored'])} within budget {row['budget']:.3g}"


def censored_text(row: Mapping[str, Any]) -> str:
    """How a fully censored cell is shown: ``censored (0/30 within budget 4.59e+04)``."""
    return f"censored ({within_budget(row)})"


def iqm_ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """``IQM(x) / IQM(y)`` over ``axis`` (:func:`bootstrap`'s vectorized two-sample
    statistic)."""
    return np.asarray(iqm(x, axis=axis)) / iqm(y, axis=axis)


def ratio_to(method_row: dict[str, Any], reference_row: dict[str, Any]) -> dict[str, Any]:
    """``IQM(steps) / IQM(reference steps)`` with its two-sample bootstrap interval and bound
    (:func:`~baselines.lib.curves.ratio_bound`); the censored runs on each side
    (``censored``: ``[method's, reference's]``); ``equal``: every run of each side has the
    same steps (so the interval has no width, and says why). Where either cell is fully
    censored there is no ratio: ``ratio``, ``low`` and ``high`` are ``None``, ``bound`` is
    ``"censored"`` and ``note`` says which side reached nothing within which budget."""
    counts = [int(sum(method_row["censored"])), int(sum(reference_row["censored"]))]
    empty = [
        f"{side}: {within_budget(row)}"
        for side, row in (("method", method_row), ("reference", reference_row))
        if fully_censored(row)
    ]
    if empty:
        note = "; ".join(empty)
        return {
            "ratio": None, "low": None, "high": None, "bound": "censored", "censored": counts,
            "note": note,
        }  # fmt: skip
    a = np.asarray(method_row["steps"], dtype=np.float64)
    b = np.asarray(reference_row["steps"], dtype=np.float64)
    est, low, high = bootstrap([a, b], iqm_ratio)
    bound = ratio_bound(counts[0] > 0, counts[1] > 0)
    equal = every_run_equal(a) and every_run_equal(b)
    return {
        "ratio": est, "low": low, "high": high, "bound": bound, "censored": counts,
        "equal": equal,
    }  # fmt: skip


EQUIVALENCE_MARGIN = (0.85, 1.18)
"""The band a ratio of steps must lie inside for two trainers (or two implementations) of one
method to count as equivalent: about +-16% on the log scale."""
EQUIVALENCE_ALPHA = 0.05
"""The level of each of the two one-sided tests of :func:`tost`."""


def tost(
    method_row: Mapping[str, Any],
    reference_row: Mapping[str, Any],
    margin: tuple[float, float] = EQUIVALENCE_MARGIN,
    alpha: float = EQUIVALENCE_ALPHA,
) -> dict[str, Any]:
    """Equivalence of two cells by two one-sided tests (TOST) on ``IQM(steps) / IQM(reference
    steps)``: H0 ``ratio <= margin[0]`` and H0 ``ratio >= margin[1]``, each rejected at level
    ``alpha`` by the two-sample percentile bootstrap (its p-value: the share of resampled ratios
    on H0's side). ``verdict``: ``equivalent`` (both rejected: ``p = max`` of the two below
    ``alpha``, i.e. the ``1 - 2 alpha`` interval ``[low, high]`` inside the margin), ``not shown
    equivalent``, or ``censored`` (a run of either cell did not reach the target: its steps are
    a bound, not a value, so the cell is reported apart with ``note`` and never counted)."""
    counts = [int(sum(method_row["censored"])), int(sum(reference_row["censored"]))]
    if any(counts):
        note = "; ".join(
            f"{side} {n}/{row['runs']} censored at budget {row['budget']:.3g}"
            for n, side, row in zip(
                counts, ("method", "reference"), (method_row, reference_row), strict=True
            )
            if n
        )
        return {"verdict": "censored", "p": None, "low": None, "high": None, "note": note}
    a = np.asarray(method_row["steps"], dtype=np.float64)
    b = np.asarray(reference_row["steps"], dtype=np.float64)
    if len(a) < 2 or len(b) < 2:
        return {"verdict": "not shown equivalent", "p": 1.0, "low": None, "high": None,
                "note": "fewer than 2 runs a side"}  # fmt: skip
    result = stats.bootstrap(
        (a, b), iqm_ratio, n_resamples=RESAMPLES, confidence_level=1 - 2 * alpha,
        method="percentile", vectorized=True, paired=False, rng=np.random.default_rng(0),
    )  # fmt: skip
    dist = np.asarray(result.bootstrap_distribution)
    p = max(float(np.mean(dist <= margin[0])), float(np.mean(dist >= margin[1])))
    low, high = (float(v) for v in result.confidence_interval)
    verdict = "equivalent" if p < alpha else "not shown equivalent"
    return {"verdict": verdict, "p": p, "low": low, "high": high, "note": ""}


def shown(value: float | None, bound: str = "exact", digits: int = 3) -> str:
    """A value as tables show it: ``0.41``, ``>= 2e+04`` (lower bound), ``<= -0.3``."""
    if value is None:
        return "n/a"
    return f"{BOUND_SIGN[bound]}{value:.{digits}g}"


def interval_text(
    value: float,
    low: float,
    high: float,
    bound: str,
    digits: int = 3,
    equal: bool = False,
    fixed: bool = False,
) -> str:
    """``value [low, high]`` with ``value``'s bound sign (the interval's ends with ``digits``
    significant digits, or decimals where ``fixed``); an interval of width zero is printed only
    with its reason (``equal``: every value of the sample is the same), else as
    ``(no interval)``."""
    head = shown(value, bound, digits)
    if low == high:
        return f"{head} ({'every run equal' if equal else 'no interval'})"
    # (one run, or a statistic every resample leaves unchanged: no spread to show)
    form = f".{digits}{'f' if fixed else 'g'}"
    return f"{head} [{low:{form}}, {high:{form}}]"


def every_run_equal(steps: Sequence[float] | np.ndarray) -> bool:
    """Whether a cell has several runs and all of them the same steps (an interval of no
    width then has its reason)."""
    return len(steps) > 1 and len(set(np.asarray(steps).tolist())) == 1


def steps_text(row: Mapping[str, Any], digits: int = 3, also: str = "") -> str:
    """A cell's steps to target as every table shows them (:func:`setting_scores`' row): the
    IQM with its interval and ``reached/runs``, a lower bound (``>=``) when runs are censored;
    ``censored (0/N within budget B)`` and no number when none reached the target. ``also``:
    more words for the closing parenthesis (``(10/10, rho 0.5)``)."""
    more = f", {also}" if also else ""
    if fully_censored(row):
        return f"censored ({within_budget(row)}{more})"
    equal = every_run_equal(row["steps"])
    body = interval_text(
        row["steps_iqm"], row["steps_low"], row["steps_high"], row["steps_bound"], digits, equal
    )
    return f"{body} ({row['reached']}/{row['runs']}{more})"


def km_text(row: Mapping[str, Any], digits: int = 3) -> str:
    """A cell's Kaplan-Meier median (``>=`` when fewer than half reached the target;
    ``censored (...)`` when none did)."""
    if fully_censored(row):
        return censored_text(row)
    return shown(row["km_median"], row["km_median_bound"], digits)


def ratio_text(ratio: Mapping[str, Any] | None, digits: int = 3) -> str:
    """A ratio (:func:`ratio_to`) as every table shows it: ``2.4 [2.3, 2.6]``, a bound with
    the censored runs named (``>= 1.8 [1.3, 3.2] (censored: 4 of the method's runs)``), or
    ``censored (...)`` and no number; ``n/a`` for no ratio."""
    if ratio is None:
        return "n/a"
    if ratio["bound"] == "censored":
        return f"censored ({ratio['note']})"
    text = interval_text(
        ratio["ratio"], ratio["low"], ratio["high"], ratio["bound"], digits,
        equal=bool(ratio.get("equal")),
    )  # fmt: skip
    counts = ratio.get("censored") or [0, 0]
    named = [
        f"{n} of the {side}'s runs"
        for n, side in zip(counts, ("method", "reference"), strict=True)
        if n
    ]
    return f"{text} (censored: {', '.join(named)})" if named else text


def exponent_text(x: Mapping[str, Any], why: bool = True) -> str:
    """A dilution exponent or trend (``exponent`` or ``slope``) with its interval and bound
    (``-0.577 [-0.613, -0.559]``, ``<= ...``); ``n/a`` when it is not defined, with why (its
    ``note``) unless ``why`` is false (a table cell)."""
    value = x.get("exponent", x.get("slope"))
    if value is None:
        return "n/a" + (f" ({x['note']})" if why and x.get("note") else "")
    return interval_text(round(value, 3), x["low"], x["high"], x["bound"], 3, fixed=True)


def per_decision(
    records: Iterable[Record], decisions: Mapping[str, int], target: float
) -> list[Record]:
    """The records of the settings in ``decisions`` (setting name -> F, its critical decisions
    per episode) with the per-decision target: success^(1/F) reaching ``target``, i.e. the
    joint success reaching ``target ** F`` (read from the same curves, no new runs), so the
    decisions axis compares equal per-decision difficulty (0.9 over 4 independent floors
    needs 0.974 per floor; 0.9 per floor is 0.656 jointly)."""
    return [
        {**r, "target": target ** decisions[r["setting"]]}
        for r in records
        if r["setting"] in decisions
    ]


def per_decision_label(target: float) -> str:
    """How tables name the per-decision target (:func:`per_decision`)."""
    return f"per-decision target (success^(1/F) >= {target:g})"


def group_records(records: Iterable[Record]) -> dict[tuple[str, str, int], list[Record]]:
    """Runs by ``(label, setting, density_value)``."""
    groups: dict[tuple[str, str, int], list[Record]] = defaultdict(list)
    for r in records:
        groups[(r.get("label") or r["method"], r["setting"], int(r["density_value"]))].append(r)
    return dict(groups)


def method_scores(
    records: Iterable[Record], planned: Mapping[str, int] | None = None
) -> dict[str, Any]:
    """Every score of one method: ``{"settings": {setting: {"rows": [...], "exponent": ...}}}``
    (rows per density, sorted by rho descending). ``planned``: the number of densities the plan
    has per setting; where the runs cover fewer (a partial submission), no exponent is fitted:
    one fitted on some densities is not comparable with the references' fitted on all."""
    out: dict[str, Any] = {}
    for (_, setting, value), runs in sorted(group_records(records).items()):
        row = {"density_value": value, "rho": float(runs[0]["rho"]), **setting_scores(runs)}
        out.setdefault(setting, {"rows": []})["rows"].append(row)
    for setting, entry in out.items():
        entry["rows"].sort(key=lambda r: -r["rho"])
        wanted = (planned or {}).get(setting, 0)
        if len(entry["rows"]) < wanted:
            entry["exponent"] = {
                "exponent": None,
                "low": None,
                "high": None,
                "bound": "exact",
                "note": f"runs at {len(entry['rows'])} of {wanted} densities: a partial setting",
            }
        else:
            entry["exponent"] = dilution_exponent(entry["rows"])
    return {"settings": out}


def compare_to_references(
    method: dict[str, Any], references: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``{setting: {reference: ratio at the lowest density}}`` for the settings both have."""
    out: dict[str, dict[str, Any]] = {}
    for setting, entry in method["settings"].items():
        lowest = min(entry["rows"], key=lambda r: r["rho"])
        for name, ref in references.items():
            ref_entry = ref["settings"].get(setting)
            if ref_entry is None:
                continue
            match = [r for r in ref_entry["rows"] if r["density_value"] == lowest["density_value"]]
            if match:
                out.setdefault(setting, {})[name] = {
                    "density_value": lowest["density_value"],
                    "rho": lowest["rho"],
                    **ratio_to(lowest, match[0]),
                }
    return out


def trend_bound(weights: Sequence[float], bounds: Sequence[str]) -> str:
    """The bound of a least-squares slope through points whose values carry ``bounds``
    (``exact``, ``upper bound``, ``lower bound``, ``not bounded``), ``weights`` being each
    point's weight in the slope (``x_i - mean(x)``): a point's upper bound pulls the slope down
    where its weight is positive and up where it is negative, so the slope is a bound only when
    every bounded point pulls it the same way."""
    pulls = set()
    for w, b in zip(weights, bounds, strict=True):
        if b == "exact" or w == 0:
            continue
        if b == "not bounded":
            return "not bounded"
        pulls.add((b == "upper bound") == (w > 0))  # True: the true slope is lower
    if not pulls:
        return "exact"
    if len(pulls) > 1:
        return "not bounded"
    return "upper bound" if pulls.pop() else "lower bound"


def decisions_axis(entries: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """How one method's dilution exponent moves with the number of critical decisions.

    ``entries``: the method's scores on the settings of one family (:func:`method_scores`'
    ``settings[name]``), by number of decisions. Returns ``{"points": [{"decisions", "exponent",
    "low", "high", "bound"}, ...], "trend": {...}}``, the trend being the least-squares slope of
    the exponent against ``log2(decisions)`` (the change of the exponent per doubling of the
    decisions; 0: dilution does not depend on them) with a bootstrap interval that resamples
    seeds within every (setting, density) cell, and its bound (:func:`trend_bound`); ``None``
    with a note where fewer than two numbers of decisions have an exponent."""
    points = [{"decisions": d, **entries[d]["exponent"]} for d in sorted(entries)]
    usable = [p for p in points if p["exponent"] is not None]
    if len(usable) < 2:
        note = "needs exponents at two numbers of decisions"
        return {"points": points, "trend": _undefined(note)}
    x = np.log2([p["decisions"] for p in usable])
    weights = x - x.mean()
    cells = []  # (decisions index, rho, steps)
    for i, p in enumerate(usable):
        for row in entries[p["decisions"]]["rows"]:
            cells.append((i, row["rho"], np.asarray(row["steps"], dtype=np.float64)))
    rhos = [np.array([rho for j, rho, _ in cells if j == i]) for i in range(len(usable))]

    def statistic(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        means = [np.asarray(iqm(s, axis=axis)) for s in samples]
        exps = []
        for i in range(len(usable)):
            ys = np.stack([m for (j, _, _), m in zip(cells, means, strict=True) if j == i], -1)
            exps.append(slopes(rhos[i], ys))
        e = np.stack(exps, axis=-1)
        return ((e - e.mean(axis=-1, keepdims=True)) * weights).sum(axis=-1) / (weights**2).sum()

    est, low, high = bootstrap([c[2] for c in cells], statistic)
    bound = trend_bound(weights.tolist(), [p["bound"] for p in usable])
    return {
        "points": points,
        "trend": {"slope": est, "low": low, "high": high, "bound": bound, "per": "doubling"},
    }


def _undefined(note: str) -> dict[str, Any]:
    return {"slope": None, "low": None, "high": None, "bound": "exact", "note": note}
