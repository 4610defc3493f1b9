"""The equivalence study: ``python -m baselines equivalence``: the two trainers on the same runs.

The references' trainer is the protocol's (rb1: SB3; rb2: the batched one); the study trains
the same runs on the other trainer and compares steps to target per cell (batched / SB3).

rb2 (references batched): SB3 trains the reference runs of ``--methods`` (the benchmark's jobs,
``--trainer sb3``) through the runner on ``--workers`` processes into
``<out>/sb3/<method>.jsonl`` (resumable), compared with the shipped batched references.

rb1 (references SB3): the batched trainer (:mod:`baselines.lib.batched`) trains exactly the
runs of the shipped references (``baselines/references/<protocol>/<tier>/<method>.jsonl``): the same
runs as :func:`baselines.lib.protocol_runs.plan` (environment, kwargs, budget,
evaluation schedule, target, hyperparameters), with the references' seeds and optionally more.
Every finished batch is appended to ``<out>/results.jsonl`` (one JSON line per run, keyed like
the benchmark's rows, plus ``trainer: "batched"``); a rerun trains only what is missing. Then
:mod:`baselines.experiments.benchmark.equivalence_analysis` compares steps to target per cell.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from baselines.lib import cli

if TYPE_CHECKING:
    from baselines.experiments.benchmark.manifest import References

METHODS = ("ppo", "trajectory_mc", "oracle")


@dataclass
class EquivalenceArgs:
    """Settings of the equivalence study (batched trainer against the SB3 references)."""

    methods: list[str] = field(
        default_factory=lambda: list(METHODS),
        metadata={"help": "reference methods to reproduce"},
    )
    env_ids: list[str] = field(
        default_factory=list, metadata={"help": "environments (default: every one of the tier)"}
    )
    seeds: list[int] = field(
        default_factory=lambda: list(range(10)),
        metadata={"help": "seeds of the batched runs (the references have 0-9)", "min": 0},
    )
    protocol: str = field(default="rb1", metadata={"help": "protocol version"})
    tier: str = field(default="lite", metadata={"help": "protocol tier"})
    out: Path = field(default=Path("results/equivalence"), metadata={"help": "output folder"})
    max_batch: int = field(default=64, metadata={"help": "runs per batch at most", "min": 1})
    train: bool = field(default=True, metadata={"help": "train what is missing (else analyse)"})
    workers: int = field(
        default=2,
        metadata={"help": "SB3 runs in parallel (protocols with batched references)", "min": 1},
    )
    sb3_seeds: list[int] = field(
        default_factory=list,
        metadata={
            "help": "extra SB3 seeds beside the shipped references' (run like them, into "
            "<out>/sb3_results.jsonl), to narrow the SB3 side of wide intervals",
            "min": 0,
        },
    )
    unverified_references: bool = field(
        default=False,
        metadata={
            "help": "use reference files that differ from the shipped ones (their manifest "
            "refuses them otherwise); the table then says so"
        },
    )


def run_key(run: Any) -> str:
    """A batched run's identity: the benchmark's key (:func:`baselines.lib.runs.key`) plus the
    trainer."""
    from baselines.lib import runs

    return json.dumps({"benchmark": runs.key(run), "trainer": "batched"}, sort_keys=True)


def plan(args: EquivalenceArgs, seeds: list[int] | None = None) -> list[Any]:
    """The benchmark's runs of every method on ``args.seeds`` (or ``seeds``) on the batched
    trainer, validated before training."""
    from baselines.lib import protocol_runs as bench
    from baselines.lib.protocol import load_protocol

    cli.check_unique("seeds", args.seeds)
    cli.check_unique("methods", args.methods)
    protocol = load_protocol(args.protocol)
    tier = protocol.tier(args.tier)
    tier = type(tier)(tier.name, tuple(args.seeds if seeds is None else seeds), tier.settings)
    planned = []
    for method in args.methods:
        planned += bench.plan(
            protocol, tier, method, args.out / "configs", args.env_ids or None, "batched"
        )
    return planned


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a results file (a missing file: none; a torn last line is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def append_records(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for record in records:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def run(args: EquivalenceArgs, planned: list[Any]) -> list[dict[str, Any]]:
    """Train the runs not yet in ``<out>/results.jsonl``, one batch (env, method) at a time;
    return every record of ``planned``."""
    from baselines.lib import batched, runs

    path = args.out / "results.jsonl"
    done = {r["key"] for r in read_records(path)}
    todo = [run for run in planned if run_key(run) not in done]
    for group in batched.group_runs(todo, args.max_batch):
        start = time.perf_counter()
        members = [todo[i] for i in group]
        results = batched.train(members, max_batch=args.max_batch)
        records = [
            {**runs.record(run, result).row(), "key": run_key(run)}
            for run, result in zip(members, results, strict=True)
        ]
        append_records(path, records)
        first = members[0]
        print(
            f"{first.method.text} on {first.env_id}: {len(group)} runs in "
            f"{time.perf_counter() - start:.1f} s wall",
            flush=True,
        )
    keys = {run_key(run) for run in planned}
    return [r for r in read_records(path) if r["key"] in keys]


def run_sb3(args: EquivalenceArgs) -> list[dict[str, Any]]:
    """The SB3 runs of ``args.sb3_seeds`` not yet in ``<out>/sb3_results.jsonl`` (each trained
    as the references were made: :func:`baselines.lib.runs.train_record`), one after the other
    in this process; return the file's records of the plan."""
    from baselines.lib import runs

    if not args.sb3_seeds:
        return []
    overlap = sorted(set(args.sb3_seeds) & set(range(10)))
    if overlap:
        raise ValueError(f"--sb3-seeds {overlap} are the references' seeds already")
    planned = [runs.replace(run, trainer="sb3") for run in plan(args, args.sb3_seeds)]
    path = args.out / "sb3_results.jsonl"
    done = {r["key"] for r in read_records(path)}
    for run in planned:
        if runs.key(run) not in done:
            append_records(path, [runs.train_record(run).row()])
    keys = {runs.key(run) for run in planned}
    return [r for r in read_records(path) if r["key"] in keys]


def cross_check_sb3(args: EquivalenceArgs, refs: References) -> list[dict[str, Any]]:
    """Protocols whose references are the batched trainer's: SB3 trains the references' runs
    of ``args.methods`` on ``args.seeds`` (resumable, ``--workers`` processes; with
    ``--no-train``, the runs done so far), compared with the shipped references ``refs``
    (opened: :func:`~.manifest.open_references`)."""
    from baselines.experiments.benchmark import equivalence_analysis as analysis
    from baselines.experiments.benchmark.reading import load_references
    from baselines.lib import protocol_runs
    from baselines.lib.protocol import load_protocol

    cli.check_unique("seeds", args.seeds)
    cli.check_unique("methods", args.methods)
    protocol = load_protocol(args.protocol)
    tier = protocol.tier(args.tier)
    tier = type(tier)(tier.name, tuple(args.seeds), tier.settings)
    shipped = load_references(protocol, args.tier, refs, args.out / "configs")
    missing = [m for m in args.methods if m not in shipped]
    if missing:
        raise ValueError(
            f"--methods {missing}: no shipped references of {protocol.version} {tier.name}"
        )
    sb3 = []
    for method in args.methods:
        planned = protocol_runs.plan(
            protocol, tier, method, args.out / "configs", args.env_ids or None, "sb3"
        )
        path = args.out / "sb3" / f"{protocol_runs.method_slug(method)}.jsonl"
        if args.train:
            protocol_runs.run_method(planned, path, args.workers, progress=False)
        from baselines.experiments.benchmark.reading import load_records

        sb3 += protocol_runs.current_records(load_records(path), planned)
    keys = {(r["setting"], r["density_value"], r["seed"], r["method"]) for r in sb3}
    batched = [
        r
        for m in args.methods
        for r in shipped[m]
        if (r["setting"], r["density_value"], r["seed"], r["method"]) in keys
    ]
    return analysis.analyse_records(batched, sb3, args.out)


def main(args: EquivalenceArgs) -> list[dict[str, Any]]:
    from baselines.experiments.benchmark import equivalence_analysis as analysis
    from baselines.experiments.benchmark import manifest
    from baselines.lib.protocol import load_protocol

    protocol = load_protocol(args.protocol)
    # the references checked against their manifest before any training or reading
    refs = manifest.open_references(protocol, args.tier, unverified=args.unverified_references)
    if not refs.verified:
        print(refs.status)
    if protocol.trainer == "batched":
        rows = cross_check_sb3(args, refs)
        print(analysis.markdown_table(rows))
        return rows
    planned = plan(args)
    keys = {run_key(run) for run in planned}
    records = (
        run(args, planned)
        if args.train
        else [r for r in read_records(args.out / "results.jsonl") if r["key"] in keys]
    )
    extra = (
        run_sb3(args)
        if args.train
        else [r for r in read_records(args.out / "sb3_results.jsonl") if r.get("trainer") == "sb3"]
    )
    rows = analysis.analyse(
        records, args.out, args.protocol, args.tier, args.methods, extra, refs=refs
    )
    print(analysis.markdown_table(rows))
    return rows
