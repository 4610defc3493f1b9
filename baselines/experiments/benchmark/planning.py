"""``benchmark plan``: what a tier costs before it runs, for each trainer that has measured
costs, and what the estimate assumes (:mod:`~.cost` holds the cost model).

Where the per-step costs come from, per trainer:

- a measured file shipped beside the protocol
  (``baselines/protocols/<version>-<trainer>-costs.json``, :func:`~.cost.measured_costs`),
  when one ships: ``python -m baselines bench_training --costs`` writes it, so a speed-up of
  the trainer re-prices every tier with one measurement;
- else, for the references' trainer (the protocol's ``trainer``), the shipped references' own
  rows: SB3's by their wall time per step (one run per process), the batched trainer's by their CPU
  time per step (each run's share of its batch), per method and setting; the tier's own
  references when they ship (:func:`pricing_tier`: measured at its batch sizes and on its
  policy), else lite's.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import cost, manifest, report
from baselines.experiments.benchmark.reading import load_references
from baselines.lib import protocol as protocols
from baselines.lib import protocol_runs

ALL_REFERENCES = "all references"


def pricing_tier(protocol: protocols.Protocol, tier: str) -> str:
    """The tier whose shipped references price ``tier``: its own when they ship (measured at
    its batch sizes and on its policy: the paper tier's Transformer costs about 5x lite's MLP
    per step, full's batches of 30 seeds about half of lite's batches of 10), else lite."""
    return tier if tier in protocols.REFERENCE_MANIFESTS.get(protocol.version, {}) else "lite"


def plan_costs(
    args: Any, protocol: protocols.Protocol, refs: manifest.References, priced_on: str = "lite"
) -> dict[str, Any]:
    """Print (and return) what ``args.tier`` costs: per method and for all references, the runs,
    steps and CPU time, and the wall time on each of ``args.cores`` cores, for each trainer
    with measured costs (``refs``: the protocol's references of tier ``priced_on``, opened)."""
    if any(n < 1 for n in args.cores):
        raise ValueError(f"--cores must be >= 1, got {args.cores}")
    with tempfile.TemporaryDirectory() as configs:  # planning only: nothing written to --out
        return price_tier(args, protocol, refs, Path(configs), priced_on)


def trainer_rates(
    protocol: protocols.Protocol,
    shipped: dict[str, list[dict[str, Any]]],
    verified: str,
    priced_on: str = "lite",
) -> dict[str, tuple[dict[Any, float], str]]:
    """``{trainer: (per-step seconds, where they come from)}`` for every trainer with measured
    costs: each from its measured file where one ships, else the references' trainer from
    ``shipped`` (the references of tier ``priced_on`` by method)."""
    rates: dict[str, tuple[dict[Any, float], str]] = {}
    runs = sum(len(r) for r in shipped.values())
    measured = {t: cost.measured_costs(protocol.version, t) for t in ("sb3", "batched")}
    # a measured file (the bench's measurement of the trainer as it is now) wins over the
    # references' rows (trained by the trainer as it was when they were made)
    from_rows = shipped and measured[protocol.trainer] is None
    if from_rows and protocol.trainer == "sb3":
        rates["sb3"] = (
            cost.seconds_per_step(shipped),
            f"seconds per step measured in the {priced_on} references ({runs} runs of "
            f"{len(shipped)} methods, wall time of one run per process{verified})",
        )
    elif from_rows:
        rates["batched"] = (
            cost.batched_rates([r for recs in shipped.values() for r in recs]),
            f"CPU seconds per step measured in the {priced_on} references ({runs} runs of "
            f"{len(shipped)} methods, each run's share of its batch, per setting{verified})",
        )
    for trainer in ("sb3", "batched"):
        found = measured[trainer]
        if trainer not in rates and found is not None:
            rates[trainer] = (
                found[0],
                f"CPU seconds per step measured in baselines/protocols/{found[1]}",
            )
    return rates


def price_tier(
    args: Any,
    protocol: protocols.Protocol,
    refs: manifest.References,
    configs: Path,
    priced_on: str = "lite",
) -> dict[str, Any]:
    """:func:`plan_costs` planning in ``configs``. Returns ``{trainer: {sweep: SweepCost or
    why there is none}}`` (a batched sweep: priced on the fewest ``--cores``)."""
    shipped = load_references(protocol, priced_on, refs, configs)
    tier = protocol.tier(args.tier)
    references = protocol.references_of(tier)
    methods = list(dict.fromkeys([*filter(None, [args.method]), *references]))
    env_ids = args.env_id or None
    verified = "" if refs.verified else f"; {refs.status}"
    rates = trainer_rates(protocol, shipped, verified, priced_on)
    chosen_trainer = getattr(args, "trainer", None)  # --trainer: that trainer's costs only
    if chosen_trainer is not None:
        if chosen_trainer not in rates:
            raise ValueError(f"--trainer {chosen_trainer}: no measured costs ship for it")
        rates = {chosen_trainer: rates[chosen_trainer]}
    print(f"protocol {protocol.version} tier {args.tier}")
    for trainer in ("sb3", "batched") if chosen_trainer is None else (chosen_trainer,):
        where = rates[trainer][1] if trainer in rates else "no measured costs ship"
        print(f"- {trainer}: {where}")
    jobs: dict[str, dict[str, list[Any] | str]] = {t: {} for t in rates}
    for trainer in rates:
        for m in methods:
            try:
                jobs[trainer][m] = protocol_runs.plan(protocol, tier, m, configs, env_ids, trainer)
            except ValueError as err:  # a method this trainer cannot train
                jobs[trainer][m] = str(err)

    def priced(trainer: str, name: str, cores: int) -> cost.SweepCost | str:
        """The cost of ``name`` (a method or all references) on ``trainer`` and ``cores``."""
        chosen = references if name == ALL_REFERENCES else [name]
        planned = [jobs[trainer][m] for m in chosen]
        refused = [j for j in planned if isinstance(j, str)]
        if refused:
            return f"not available: {refused[0]}"
        per_step = rates[trainer][0]
        try:
            if trainer == "sb3":
                return cost.combined(
                    [cost.sweep_cost(j, m, per_step) for j, m in zip(planned, chosen, strict=True)]
                )
            return cost.batched_cost([j for js in planned for j in js], per_step, cores)
        except ValueError as err:  # no measured cost on one of the settings
            return f"not available: {err}"

    def label(trainer: str, name: str) -> str:
        """``name``, saying which of its methods have no measured rate of their own (priced at
        the median method's: :func:`~.cost.rate`)."""
        own = {method for method, _ in rates[trainer][0]}
        chosen = references if name == ALL_REFERENCES else [name]
        missing = [m for m in chosen if m not in own]
        if not missing:
            return name
        if name != ALL_REFERENCES:
            return f"{name} (not measured: the median method's rate)"
        return f"{name} ({', '.join(missing)} not measured: the median method's rate)"

    names = [*filter(None, [args.method]), ALL_REFERENCES]
    trainers = [t for t in ("sb3", "batched") if t in rates]
    result: dict[str, dict[str, Any]] = {t: {} for t in ("sb3", "batched")}
    print("\n| trainer | sweep | runs | steps | CPU | longest task |\n|---|---|---|---|---|---|")
    for name in [*methods, ALL_REFERENCES]:
        for trainer in trainers:
            c = priced(trainer, name, min(args.cores))
            result[trainer][name] = c
            if isinstance(c, str):
                print(f"| {trainer} | {name} | {c} | | | |")
                continue
            print(
                f"| {trainer} | {label(trainer, name)} | {c.runs} | {c.steps / 1e6:.2f} M | "
                f"{c.cpu_seconds / 3600:.2f} CPU-h | a {c.task} of {c.longest_steps:,} steps "
                f"({cost.duration(c.longest_seconds)}) |"
            )
    columns = [(n, t) for n in names for t in trainers if not isinstance(result[t][n], str)]
    print(
        "\n| cores | "
        + " | ".join(f"{n} ({t})" for n, t in columns)
        + " |\n|---|"
        + "---|" * len(columns)
    )
    for cores in args.cores:
        walls = [cost.wall_range(priced(t, n, cores), cores) for n, t in columns]
        print(f"| {cores} | " + " | ".join(walls) + " |")
    measure = (
        "the median of wall_time / steps_trained"
        if protocol.trainer == "sb3"
        else "cpu_time / steps_trained, summed per method and setting,"
    )
    print(
        "\n"
        + cost.assumptions(
            sum(len(r) for r in shipped.values()),
            len(shipped),
            report.hardware(),
            measure,
            priced_on,
            args.tier,
            own[1] if (own := cost.measured_costs(protocol.version, protocol.trainer)) else None,
        )
    )
    if "batched" in rates:
        print(
            "- batched (--trainer batched): the tasks are the batches the runner forms for that "
            "many workers (longest task: with the fewest cores), each on one core, priced at the "
            "CPU seconds per step named above; batches smaller than those measured "
            "cost more per step (docs/batched.md), so with many cores its times are lower bounds"
        )
    if protocol.tuning is not None and "batched" in rates:
        result["tuning"] = tuning_costs(protocol, tier, jobs["batched"], rates["batched"][0], names)
    print(load_line(min(args.cores)))
    return result


def tuning_costs(
    protocol: protocols.Protocol,
    tier: protocols.Tier,
    jobs: dict[str, list[Any] | str],
    per_step: dict[Any, float],
    names: list[str],
) -> dict[str, dict[str, float]]:
    """Print (and return, CPU-hours by sweep) what the tuned column adds under a protocol with
    ``tuning`` (:mod:`~.tuning`): the search (the grid x its seeds at each setting's extreme
    densities) and the tuned runs, at most the default runs' cost (less where a family's choice
    is the default: those runs are copied)."""
    from baselines.experiments.benchmark import tuning

    assert protocol.tuning is not None
    out: dict[str, dict[str, float]] = {}
    print(
        f"\nWith the tuned column ({len(protocol.tuning.combinations())} combinations, and a "
        "section's default where the grid lacks it, x "
        f"{len(protocol.tuning.seeds)} tuning seeds at each setting's extreme densities):\n\n"
        "| sweep | search runs | search CPU | tuned runs CPU (at most) | default + search + "
        "tuned |\n|---|---|---|---|---|"
    )
    for name in names:
        chosen = protocol.references_of(tier) if name == ALL_REFERENCES else [name]
        planned = [jobs.get(m) for m in chosen]
        if any(not isinstance(j, list) for j in planned):
            print(f"| {name} | not available | | | |")
            continue
        defaults = [run for js in planned for run in js]  # type: ignore[union-attr]
        search = [r for js in planned for r in tuning.tuning_runs(protocol, tier, js)]  # type: ignore[arg-type]
        try:
            default = cost.batched_cost(defaults, per_step, 1).cpu_seconds / 3600
            searched = cost.batched_cost(search, per_step, 1).cpu_seconds / 3600
        except ValueError as err:
            print(f"| {name} | not available: {err} | | | |")
            continue
        out[name] = {"default": default, "search": searched, "tuned": default}
        print(
            f"| {name} | {len(search)} | {searched:.2f} CPU-h | {default:.2f} CPU-h | "
            f"{2 * default + searched:.2f} CPU-h |"
        )
    return out


def load_line(cores: int) -> str:
    """What the machine's load now means for the estimate on ``cores`` runs at once: the
    one-minute load average, and the slowdown ``(load + cores) / CPUs`` when that exceeds 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this system
        return "- this machine's load: unknown (no load average here)"
    cpus = os.cpu_count() or 1
    factor = (load + cores) / cpus
    if factor <= 1:
        return (
            f"- this machine now: load average {load:.1f} on {cpus} CPUs, so {cores} runs at once "
            "each get a core: the estimate applies as it is"
        )
    return (
        f"- this machine now: load average {load:.1f} on {cpus} CPUs, so {cores} runs at once "
        f"share them with other work: expect about {factor:.1f}x the times above while it lasts"
    )
