"""Equivalent methods shown as one row: methods whose per-seed steps to target coincide within
float noise on every setting and density they share.

Two methods can be one algorithm under the protocol: ``rloo``'s advantage is ``G / (G - 1)``
times ``trajectory_mc``'s, and PPO's per-minibatch advantage normalisation removes any positive
constant scale, so from the same seed both train the same policy up to floating-point rounding.
Ranking them as two methods counts one algorithm twice. The report compares every pair of
methods seed by seed (:func:`coincide`): a cell (setting, density) *coincides* when every seed
both ran is censored in both or reaches the target in both at steps within :data:`RTOL` of
each other (relative); a cell where every seed is censored in both says nothing (the budget
sets its steps) and is left out. Methods that coincide on every other cell they share (at
least one) are merged: one row, the others named as its aliases, with the sentence saying why
(:func:`merged`).

Rounding differences grow during training (the policies drift apart once a near-tie in an
action's probability breaks differently), so two implementations of one algorithm can coincide
on the short runs (high densities) and differ on the long ones. Those pairs are not merged: the
report names them with the cells where they coincide and the largest difference elsewhere
(:func:`near_misses`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

RTOL = 1e-6
"""Relative tolerance on per-seed steps to target that counts as float noise."""

Scores = Mapping[str, Any]  # one method's :func:`~.scores.method_scores`


def cell_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> float | None:
    """The largest relative difference of per-seed steps between two methods' rows of one cell
    (:func:`~.scores.setting_scores`), over the seeds both ran: ``inf`` when a seed is censored
    in one and not the other; ``None`` when they share no seed or every shared seed is censored
    in both (the budget, not the method, sets those steps: no evidence either way)."""
    steps_a = dict(zip(a["seeds"], zip(a["steps"], a["censored"], strict=True), strict=True))
    steps_b = dict(zip(b["seeds"], zip(b["steps"], b["censored"], strict=True), strict=True))
    shared = sorted(set(steps_a) & set(steps_b))
    if not shared:
        return None
    if all(steps_a[seed][1] and steps_b[seed][1] for seed in shared):
        return None
    worst = 0.0
    for seed in shared:
        (ta, ca), (tb, cb) = steps_a[seed], steps_b[seed]
        if ca != cb:
            return float("inf")
        if not ca:
            worst = max(worst, abs(ta - tb) / max(abs(ta), abs(tb), 1e-300))
    return worst


def cell_differences(a: Scores, b: Scores) -> dict[tuple[str, int], float]:
    """:func:`cell_difference` on every (setting, density value) both methods ran."""
    out = {}
    for setting, entry in a["settings"].items():
        other = b["settings"].get(setting)
        if other is None:
            continue
        rows_b = {r["density_value"]: r for r in other["rows"]}
        for row in entry["rows"]:
            if row["density_value"] in rows_b:
                diff = cell_difference(row, rows_b[row["density_value"]])
                if diff is not None:
                    out[(setting, row["density_value"])] = diff
    return out


def coincide(a: Scores, b: Scores, rtol: float = RTOL) -> bool:
    """Whether two methods' per-seed steps coincide within ``rtol`` on every shared cell (and
    they share one)."""
    diffs = cell_differences(a, b)
    return bool(diffs) and all(d <= rtol for d in diffs.values())


def merged(
    methods: Mapping[str, Scores],
    rtol: float = RTOL,
    probed: Mapping[frozenset[str], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The groups of equivalent methods, each ``{"name", "aliases", "why", ...}``: ``name`` is
    the first of the group in ``methods``' order, every alias coincides with it seed by seed
    (:func:`coincide`) or is one algorithm with it by the advantage probe (``probed``,
    :func:`probe_pairs`: advantages an increasing affine function of its own on every probed
    batch, which the protocol's per-minibatch normalisation removes). Methods equivalent to no
    other are in no group."""
    probed = probed or {}
    names = list(methods)
    taken: set[str] = set()
    groups = []
    for i, name in enumerate(names):
        if name in taken:
            continue
        same = {
            other: coincide(methods[name], methods[other], rtol)
            for other in names[i + 1 :]
            if other not in taken
        }
        aliases = [o for o, c in same.items() if c or frozenset((name, o)) in probed]
        if not aliases:
            continue
        taken.update(aliases)
        seeds = sum(len(r["seeds"]) for e in methods[name]["settings"].values() for r in e["rows"])
        group: dict[str, Any] = {"name": name, "aliases": aliases, "why": ""}
        by_seed = [a for a in aliases if same[a]]
        if by_seed:
            cells = cell_differences(methods[name], methods[by_seed[0]])
            worst = max(max(cell_differences(methods[name], methods[a]).values()) for a in by_seed)
            group.update(cells=len(cells), largest_relative_difference=worst)
            group["why"] += (
                f"{' and '.join(f'`{a}`' for a in by_seed)} "
                f"{'gives' if len(by_seed) == 1 else 'give'} the same steps to target as "
                f"`{name}` for every seed on all {len(cells)} settings and densities they share "
                f"(largest relative difference {worst:.1e}, within float noise {rtol:g}): one "
                "algorithm under this protocol (e.g. advantages that differ by a positive "
                "constant, which PPO's per-minibatch advantage normalisation removes)."
            )
        for alias in aliases:
            if not same[alias]:
                group["why"] += (" " if group["why"] else "") + probe_sentence(
                    name, alias, probed[frozenset((name, alias))]
                )
        group["why"] += f" Shown as one row ({seeds} runs of `{name}` scored)."
        groups.append(group)
    return groups


def probe_pairs(rows: list[dict[str, Any]]) -> dict[frozenset[str], dict[str, Any]]:
    """The pairs of methods that the advantage probe finds to be one algorithm under the
    protocol, from :func:`~.lab.lab_rows`: on every probe batch where both were built (at least
    one), each one's advantages are an increasing affine function of the other's, the protocol
    normalises both per minibatch and neither trains a critic (whose training the probe at
    initialisation cannot see). ``{frozenset({a, b}): {"batches": n, "scales": [c, ...],
    "settings": [...]}}`` with ``b = c a + d`` for the first of the pair in row order."""
    by_batch: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_batch.setdefault((r["setting"], r["density_value"]), {})[r["estimator"]] = r
    names = list(dict.fromkeys(r["estimator"] for r in rows))
    out: dict[frozenset[str], dict[str, Any]] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = [batch for batch in by_batch.values() if a in batch and b in batch]
            if not shared or not all(
                b in batch[a]["advantages_affine_to"]
                and batch[a].get("normalize_advantage")
                and batch[b].get("normalize_advantage")
                and not batch[a].get("trains_critic")
                and not batch[b].get("trains_critic")
                for batch in shared
            ):
                continue
            out[frozenset((a, b))] = {
                "first": a,
                "batches": len(shared),
                "scales": sorted(
                    {round(batch[a]["advantages_affine_to"][b][0], 6) for batch in shared}
                ),
                "settings": sorted({batch[a]["setting"] for batch in shared}),
            }
    return out


def probe_sentence(name: str, alias: str, evidence: Mapping[str, Any]) -> str:
    """Why ``alias`` is shown as ``name`` by the advantage probe (``evidence``: an entry of
    :func:`probe_pairs`)."""
    return probe_sentences(name, [(alias, evidence)])


def probe_sentences(name: str, found: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Why each alias of ``found`` (``(alias, evidence)``, :func:`probe_pairs` entries) is shown
    as ``name``: one sentence for all of them."""

    def scale(alias: str, evidence: Mapping[str, Any]) -> str:
        scales = (
            evidence["scales"] if evidence["first"] == name else [1 / c for c in evidence["scales"]]
        )
        return " / ".join(f"{c:.6g}" for c in scales)

    aliases = [f"`{alias}`" for alias, _ in found]
    listed = aliases[0] if len(aliases) == 1 else f"{', '.join(aliases[:-1])} and {aliases[-1]}"
    batches = sorted({e["batches"] for _, e in found})
    settings = sorted({len(e["settings"]) for _, e in found})
    return (
        f"{listed} {'is' if len(found) == 1 else 'are'} one algorithm with `{name}` under this "
        f"protocol: on the advantage probe's batch at each of the {'/'.join(map(str, batches))} "
        "settings and densities probed (the lowest and highest density of each of "
        f"{'/'.join(map(str, settings))} settings, uniform policy), "
        + ("its" if len(found) == 1 else "their")
        + " advantages are "
        + ", ".join(f"{scale(a, e)} (`{a}`)" if len(found) > 1 else scale(a, e) for a, e in found)
        + f" times `{name}`'s plus a constant at every step, which PPO's per-minibatch advantage "
        "normalisation removes: the same policy update, so the differences between their runs "
        "are rounding grown during training."
    )


def near_misses(methods: Mapping[str, Scores], rtol: float = RTOL) -> list[dict[str, Any]]:
    """Pairs that coincide on some shared cells but not all (not merged): ``{"methods",
    "coinciding", "differing", "largest_relative_difference", "where", "why"}``."""
    names = list(methods)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            diffs = cell_differences(methods[a], methods[b])
            same = [cell for cell, d in diffs.items() if d <= rtol]
            if not same or len(same) == len(diffs):
                continue
            where, worst = max(
                ((cell, d) for cell, d in diffs.items() if d > rtol), key=lambda cd: cd[1]
            )
            shown = (
                "largest difference: a seed reaches the target in one and not the other"
                if np.isinf(worst)
                else f"largest relative difference {worst:.2g}"
            )
            cells = ", ".join(f"{s} at {v}" for s, v in same)
            out.append(
                {
                    "methods": [a, b],
                    "coinciding": [list(c) for c in same],
                    "differing": len(diffs) - len(same),
                    "largest_relative_difference": None if np.isinf(worst) else worst,
                    "where": list(where),
                    "why": f"`{a}` and `{b}` give the same steps to target for every seed "
                    f"(within {rtol:g}) on {len(same)} of the {len(diffs)} settings and "
                    f"densities they share ({cells}) and differ on {len(diffs) - len(same)} "
                    f"({shown}, {where[0]} at {where[1]}): kept as "
                    "two rows.",
                }
            )
    return out


def aliases_of(groups: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``{name: aliases}`` of the merged groups."""
    return {g["name"]: g["aliases"] for g in groups}


def hidden(groups: list[dict[str, Any]]) -> set[str]:
    """The methods shown only as another's alias."""
    return {a for g in groups for a in g["aliases"]}


AFFINE_RTOL = 1e-9
"""Relative tolerance (of the advantages' spread) on ``b = c a + d`` that counts as exact."""
PROBE_GROUPS = 16
"""Groups of episodes in the advantage probe (:func:`probe_advantages`)."""


def affine_relation(
    a: np.ndarray, b: np.ndarray, rtol: float = AFFINE_RTOL
) -> tuple[float, float] | None:
    """``(c, d)`` with ``b = c a + d`` and ``c > 0`` (a per-minibatch normalisation of the
    advantages, ``(x - mean) / std``, then makes them equal) when that holds within ``rtol`` of
    ``b``'s spread at every step; ``None`` otherwise (or when either is constant).

    Args:
        a, b: two methods' advantages on the same batch, shape ``(steps,)``.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.std() == 0 or b.std() == 0:
        return None
    c, d = np.polyfit(a, b, 1)
    if c <= 0 or np.max(np.abs(b - (c * a + d))) > rtol * b.std():
        return None
    return float(c), float(d)


def advantage_relations(advantages: Mapping[str, np.ndarray]) -> dict[str, dict[str, list[float]]]:
    """``{name: {other: [c, d]}}`` for every ordered pair whose advantages on one batch are
    related by :func:`affine_relation` (``other = c name + d``)."""
    out: dict[str, dict[str, list[float]]] = {name: {} for name in advantages}
    for name, adv in advantages.items():
        for other, adv_other in advantages.items():
            if other != name and (rel := affine_relation(adv, adv_other)) is not None:
                out[name][other] = list(rel)
    return out


def probe_advantages(
    estimators: Mapping[str, Any],
    sampler: Any,
    probs: np.ndarray,
    values: np.ndarray,
    group_size: int = 8,
    seed: int = 1,
) -> dict[str, dict[str, list[float]]]:
    """:func:`advantage_relations` of ``estimators`` (name -> a built
    :class:`~routine_envs.credit.AdvantageEstimator`) on one batch of :data:`PROBE_GROUPS`
    groups of ``group_size`` episodes sampled from ``sampler`` (a
    :class:`~routine_envs.sampler.ModelSampler`) under the policy table ``probs``, with
    ``values`` (one per state id) as the batch's values; each estimator sees one group at a
    time unless it declares itself group independent, as in the lab."""
    import dataclasses

    from routine_envs import credit

    declared = {name: credit.declare(est) for name, est in estimators.items()}  # read once
    observations = any("observations" in est.requires for est in declared.values())
    rng = np.random.default_rng(seed)
    batch = sampler.sample(probs, PROBE_GROUPS, group_size, rng, observations=observations)
    batch = dataclasses.replace(batch, values=np.asarray(values)[batch.state_ids])
    seen = {name: credit.batch_for(est, batch) for name, est in declared.items()}
    advantages = {
        name: (
            est(seen[name]).advantages
            if est.group_independent
            else np.concatenate([est(group).advantages for group in seen[name].split_groups()])
        )
        for name, est in declared.items()
    }
    return advantage_relations(advantages)


def advantage_evidence(lab: list[dict[str, Any]], a: str, b: str) -> str:
    """The card's sentence on whether ``b``'s advantages were an increasing affine function of
    ``a``'s on the lab's probe batch at every density probed (lab rows with
    ``advantages_affine_to``, :func:`probe_advantages`); empty when the lab did not probe both."""
    rows = {(r["setting"], r["density_value"]): r for r in lab if r["estimator"] == a}
    shared = [
        (key, row)
        for key, row in rows.items()
        if "advantages_affine_to" in row
        and any(r["estimator"] == b and (r["setting"], r["density_value"]) == key for r in lab)
    ]
    if not shared:
        return ""
    related = [
        row["advantages_affine_to"][b] for _, row in shared if b in row["advantages_affine_to"]
    ]
    normalised = all(row.get("normalize_advantage") for _, row in shared)
    if len(related) < len(shared):
        return (
            f" Their advantages on the lab's probe batch are not an increasing affine function of "
            f"each other at {len(shared) - len(related)} of the {len(shared)} densities probed."
        )
    slopes = sorted({round(c, 6) for c, _ in related})
    return (
        f" On the lab's probe batch (uniform policy, groups of 8) `{b}`'s advantages are "
        f"{' / '.join(f'{c:.6g}' for c in slopes)} times `{a}`'s plus a constant at all "
        f"{len(shared)} densities probed"
        + (
            ", which the protocol's per-minibatch advantage normalisation removes: the same "
            "policy update, so their differences are rounding grown during training."
            if normalised
            else "."
        )
    )
