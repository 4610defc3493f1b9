"""``python -m baselines.benchmark {run,report,references,leaderboard,plan}``: score a
credit-assignment method on a versioned protocol against the shipped references.

- ``run --method SPEC --tier lite``: every run of the tier for the method (a built-in name or
  ``package.module:Name``, either with JSON arguments), resumable through its results file,
  then its report card.
- ``report --method SPEC --tier lite``: the report card from the runs done so far.
- ``references --tier lite``: what ships (verified against its manifest) and its leaderboard,
  printed; writes nothing. With ``--compute``, run the reference methods into a folder of
  your own (``--references-dir``, default ``<out>/references/<version>/<tier>/``; resumable);
  with ``--write-manifest``, write the manifest of a references folder (a maintainer shipping
  new references: :mod:`~.manifest`).
- ``leaderboard --tier lite``: write the references' leaderboard to
  ``<out>/<version>/<tier>/LEADERBOARD.md``.
- ``plan --tier full --cores 2 8 32``: what the tier costs (runs, steps, CPU time) for the
  method and for all the references, and the expected wall time on each number of cores, from
  the shipped lite references' measured seconds per step (:mod:`~.cost`).

Every command that reads references checks them first: a reference file that differs from the
shipped one is refused with its name (exit status 2), or, with ``--unverified-references``, used
and marked "unverified references" in the header of everything built from it.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import cost, drops, manifest, merging, privileged, report
from baselines.experiments.benchmark import lab as benchmark_lab
from baselines.lib import cli, protocol_runs, training_runs
from baselines.lib import protocol as protocols
from baselines.lib.backend import BackendArgs
from baselines.lib.results import ResultsFile, write_atomic
from baselines.lib.specs import parse_method

COMMANDS = ("run", "report", "references", "leaderboard", "plan")


@dataclass
class BenchmarkArgs(BackendArgs):
    """Score a credit-assignment method on the benchmark protocol against the references (where
    its runs run: :class:`~baselines.lib.backend.BackendArgs`)."""

    command: str = field(
        default="run",
        metadata={"help": "what to do", "choices": list(COMMANDS), "positional": True},
    )
    method: str = field(
        default="",
        metadata={
            "help": "the method: 'ppo', an estimator name or an import path "
            "'package.module:Name' of your own, optionally with JSON arguments"
        },
    )
    tier: str = field(default="lite", metadata={"help": "protocol tier: smoke, lite or full"})
    protocol: str = field(default=protocols.DEFAULT_VERSION, metadata={"help": "protocol version"})
    env_id: list[str] = field(
        default_factory=list,
        metadata={"help": "only the tier's settings on these env ids (default: all)"},
    )
    workers: int = field(default=2, metadata={"help": "runs in parallel (processes)", "min": 1})
    out: Path = field(
        default=Path("results/benchmark"),
        metadata={"help": "folder of results (<out>/<version>/<tier>/<method>/)"},
    )
    lab: bool = field(
        default=True,
        metadata={"help": "add the gradient SNR and exact bias at initialization (estimators)"},
    )
    compute: bool = field(
        default=False,
        metadata={"help": "references: run the reference methods (resumable)"},
    )
    methods: list[str] = field(
        default_factory=list,
        metadata={"help": "references: which reference methods to compute (default: the tier's)"},
    )
    references_dir: Path | None = field(
        default=None,
        metadata={
            "help": "the folder of reference results: read (default: the shipped ones, "
            "verified), written by references --compute (default: "
            "<out>/references/<version>/<tier>) or listed by references --write-manifest "
            "(default: the shipped folder); reading any other than the shipped folder needs "
            "--unverified-references"
        },
    )
    unverified_references: bool = field(
        default=False,
        metadata={
            "help": "use reference files that differ from the shipped ones (a local "
            "experiment); every report, table and leaderboard built from them says "
            "'unverified references'"
        },
    )
    write_manifest: bool = field(
        default=False,
        metadata={
            "help": "references: write MANIFEST.sha256 of the references folder and print the "
            "SHA-256 to pin in protocol.REFERENCE_MANIFESTS (shipping new references)"
        },
    )
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    cores: list[int] = field(
        default_factory=lambda: [2, 8, 32, 128],
        metadata={"help": "plan: numbers of cores to give the expected wall time for"},
    )
    trainer: str | None = field(
        default=None,
        metadata={
            "help": "what trains the method's runs: 'sb3' (SB3, one process per run) or "
            "'batched' (baselines.lib.batched, the runs of a setting together in one process, "
            "docs/batched.md); default: the protocol's, the references' trainer (rb1: sb3, rb2: "
            "batched). Recorded in every row and part of its key; runs on the other trainer go "
            "to <out>/<version>/<tier>/<method>+<trainer>/",
            "choices": list(training_runs.TRAINERS),
        },
    )


def trainer_of(args: BenchmarkArgs, protocol: protocols.Protocol) -> str:
    """The trainer of ``args``' runs: ``--trainer``, else the protocol's (its references')."""
    return args.trainer or protocol.trainer


def method_folder(args: BenchmarkArgs, method: str, protocol: protocols.Protocol) -> Path:
    """``<out>/<version>/<tier>/<method slug>``, with ``+<trainer>`` when the runs' trainer is
    not the protocol's (so the two trainers' results and report cards never mix)."""
    slug = protocol_runs.method_slug(method)
    if trainer_of(args, protocol) != protocol.trainer:
        slug = f"{slug}+{trainer_of(args, protocol)}"
    return args.out / args.protocol / args.tier / slug


def load_records(path: Path, read_only: bool = False) -> list[dict[str, Any]]:
    """The valid records of a results file (none when it does not exist); ``read_only``: never
    write anything (references: bad lines are skipped, not moved)."""
    if not path.exists():
        return []
    from baselines.lib import training_runs
    from baselines.lib.records import upgrade

    store = ResultsFile(path, training_runs.SCHEMA, training_runs.TrainingRecord.check, upgrade)
    return store.read() if read_only else store.load()


def planned_records(
    protocol: protocols.Protocol,
    tier: str,
    method: str,
    path: Path,
    config_folder: Path,
    read_only: bool = False,
    trainer: str | None = None,
) -> list[dict[str, Any]]:
    """The records of ``path`` that are runs of ``method`` on ``trainer`` (default: the
    protocol's) in the protocol's ``tier`` as it is now (by run key): rows of an earlier draft's
    settings, of another tier or of the other trainer are left out."""
    jobs = protocol_runs.plan(
        protocol, protocol.tier(tier), method, config_folder, trainer=trainer or protocol.trainer
    )
    return protocol_runs.current_records(load_records(path, read_only), jobs)


def load_references(
    protocol: protocols.Protocol,
    tier: str,
    refs: manifest.References,
    config_folder: Path,
    skip: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The reference records of ``tier`` by method (without ``skip``) from ``refs`` (opened,
    so verified or accepted as unverified: :func:`~.manifest.open_references`), read only:
    only runs of the protocol's current settings (:func:`planned_records`)."""
    out = {}
    for method in protocol.references_of(tier):
        if method == skip:
            continue
        records = planned_records(
            protocol, tier, method, refs.path(method), config_folder, read_only=True
        )
        if records:
            out[method] = records
    return out


def open_references(
    args: BenchmarkArgs, protocol: protocols.Protocol, tier: str
) -> manifest.References:
    """The references of ``tier`` as ``args`` asks (verified unless
    ``--unverified-references``)."""
    return manifest.open_references(
        protocol, tier, args.references_dir, unverified=args.unverified_references
    )


def make_report(
    args: BenchmarkArgs,
    protocol: protocols.Protocol,
    started: float,
    refs: manifest.References,
) -> Path:
    """Write the report card of ``args.method`` from its runs so far against ``refs`` (only
    the settings on ``args.env_id`` when given, in every section); its folder. ``started``:
    ``time.perf_counter()`` when the command started."""
    folder = method_folder(args, args.method, protocol)
    configs = args.out / "configs"
    env_ids = args.env_id or None
    trainer = trainer_of(args, protocol)
    tier = protocol.tier(args.tier)
    jobs = protocol_runs.plan(protocol, tier, args.method, configs, env_ids, trainer)
    results = folder / "results.jsonl"
    records = protocol_runs.current_records(load_records(results), jobs)
    if not records:
        raise ValueError(
            f"no runs of {args.method!r} under protocol {protocol.version} tier {args.tier}'s "
            f"current settings in {folder}: run it first"
        )
    references = {
        name: kept
        for name, recs in load_references(
            protocol, args.tier, refs, configs, skip=args.method
        ).items()
        if (kept := [r for r in recs if env_ids is None or r["env_id"] in env_ids])
    }
    lab = benchmark_lab.lab_rows(
        protocol, tier, [args.method, *references], env_ids, measure=args.lab
    )
    versions = report.versions_of(records)
    ref_versions = [v for recs in references.values() for v in report.versions_of(recs)]
    header = {
        "method": parse_method(args.method).label(),  # a privileged method says so
        "privileged fields read": privileged.privileged_text(
            privileged.privileged_of({args.method: records})[args.method]
        ),
        "protocol": f"{protocol.version} ({protocol.status}, sha256 {protocol.sha256[:12]}), "
        f"tier {args.tier}",
        "runs": f"{len(records)} of {tier.num_runs_per_method}",
        "trainer": trainer
        + (
            f"; the references: {protocol.trainer} (the trainers' equivalence: docs/batched.md)"
            if trainer != protocol.trainer
            else ""
        ),
        "seeds": ", ".join(map(str, tier.seeds)),
        "package versions": json.dumps(versions),
        "references": ", ".join(f"{n} ({len(r)} runs)" for n, r in references.items()) or "none",
        "reference files": refs.status,
        "git commit": report.git_commit(Path(__file__).parent),
        "hardware": report.hardware(),
    }
    if not refs.verified:
        header = {"unverified references": refs.status, **header}
    if any(v not in versions for v in ref_versions):
        header["note"] = "some references were made with other package versions: " + json.dumps(
            [v for v in ref_versions if v not in versions]
        )
    files = Counter(
        r["protocol"]["sha256"][:12] for recs in references.values() for r in recs
    ) + Counter(r["protocol"]["sha256"][:12] for r in records)
    if set(files) != {protocol.sha256[:12]}:
        header["protocol files of the runs"] = (
            ", ".join(f"sha256 {sha} ({n} runs)" for sha, n in sorted(files.items()))
            + f": files of {protocol.version} the runs were made under (this one is "
            f"{protocol.sha256[:12]}); every run read here has this file's settings (runs are "
            "keyed by their settings, not by the file hash)"
        )
    drops_manifest = drops.drops_manifest(jobs, records, drops.failed_runs(results))
    report.write_report(
        folder / "report",
        header,
        records,
        references,
        lab,
        drops_manifest,
        started,
        decision_axes=tier.axes(),
    )
    return folder / "report"


def list_references(
    protocol: protocols.Protocol, tier: str, folder: Path, configs: Path
) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Print how many runs of each reference method ``folder`` holds (read only); the counts
    and the records of the methods that have runs."""
    listed, found = {}, {}
    runs = protocol.tier(tier).num_runs_per_method
    for method in protocol.references_of(tier):
        every = load_records(folder / f"{protocol_runs.method_slug(method)}.jsonl", read_only=True)
        jobs = protocol_runs.plan(
            protocol, protocol.tier(tier), method, configs, trainer=protocol.trainer
        )
        records = protocol_runs.current_records(every, jobs)  # each file read and planned once
        listed[method] = len(records)
        if records:
            found[method] = records
        stale = len(every) - len(records)
        note = f" ({stale} rows of other settings ignored)" if stale else ""
        print(f"{method:<16} {len(records):>4} of {runs} runs{note}")
    return listed, found


def leaderboard_text(
    protocol: protocols.Protocol,
    tier: str,
    refs: manifest.References,
    found: dict[str, list[dict[str, Any]]],
) -> str:
    """The leaderboard of ``found`` (records by method), marked when ``refs`` are unverified;
    after rb1, with the privileged column and label-free methods ranked apart (rb1's shipped
    leaderboard stays byte for byte as released)."""
    return report.leaderboard(
        protocol.version,
        tier,
        protocol.tier(tier).num_runs_per_method,
        found,
        unverified=None if refs.verified else refs.status,
        privileged=None if protocol.version == "rb1" else privileged.privileged_of(found),
        decision_axes=protocol.tier(tier).axes(),
        not_run=merged_not_run(protocol, tier, found),
    )


def merged_not_run(
    protocol: protocols.Protocol, tier: str, found: dict[str, Any]
) -> dict[str, list[tuple[str, str]]]:
    """The protocol's ``merged`` methods (not run) as aliases of the references in ``found``,
    each with the advantage probe's sentence on the tier's settings, or, where the probe no
    longer finds them one algorithm, a sentence saying so: ``{reference: [(alias, why)]}``."""
    wanted = {a: m for a, m in protocol.merged.items() if m in found}
    if not wanted:
        return {}
    methods = list(dict.fromkeys([*wanted.values(), *wanted]))
    rows = benchmark_lab.lab_rows(protocol, protocol.tier(tier), methods, measure=False)
    probed = merging.probe_pairs(rows)
    out: dict[str, list[tuple[str, str]]] = {}
    for alias, method in wanted.items():
        evidence = probed.get(frozenset((alias, method)))
        why = (
            merging.probe_sentence(method, alias, evidence)
            if evidence
            else f"protocol {protocol.version} lists `{alias}` as one algorithm with `{method}`, "
            "but the advantage probe does not confirm it on every setting of this tier: read "
            f"`{method}`'s row as `{method}`'s only."
        )
        out.setdefault(method, []).append((alias, why))
    return out


def references(args: BenchmarkArgs, protocol: protocols.Protocol) -> dict[str, Any]:
    """List the references of the tier and print their leaderboard (writing nothing); with
    ``--compute`` run them into a folder of your own first; with ``--write-manifest`` write
    the manifest of a references folder."""
    if args.write_manifest:
        folder = args.references_dir or manifest.shipped_folder(protocol.version, args.tier)
        path, digest = manifest.write_manifest(folder)
        print(
            f"wrote {path} ({len(manifest.reference_files(folder))} files); to ship them, pin "
            f"REFERENCE_MANIFESTS[{protocol.version!r}][{args.tier!r}] = {digest!r} in "
            "baselines/lib/protocol.py"
        )
        return {"manifest": path, "sha256": digest}
    tier = protocol.tier(args.tier)
    if args.compute:
        folder = args.references_dir or args.out / "references" / protocol.version / args.tier
        cli.check_output_folder(folder, "--references-dir")
        for method in args.methods or protocol.references_of(tier):
            jobs = protocol_runs.plan(
                protocol,
                tier,
                method,
                args.out / "configs",
                args.env_id or None,
                trainer_of(args, protocol),
            )
            path = folder / f"{protocol_runs.method_slug(method)}.jsonl"
            protocol_runs.run_method(jobs, path, args.workers, args.progress, backend=args)
        listed, _ = list_references(protocol, args.tier, folder, args.out / "configs")
        print(
            f"\ncomputed references in {folder} (not shipped). To ship them: copy its .jsonl "
            f"files into {manifest.shipped_folder(protocol.version, args.tier)}, run "
            f"`python -m baselines.benchmark references --write-manifest --tier {args.tier}` "
            "and pin the SHA-256 it prints (docs/benchmark.md)"
        )
        return listed
    refs = open_references(args, protocol, args.tier)
    with tempfile.TemporaryDirectory() as configs:  # planning only: nothing written to --out
        listed, found = list_references(protocol, args.tier, refs.folder, Path(configs))
    print(f"references in {refs.folder}: {refs.status}")
    if found:
        print(f"\n{leaderboard_text(protocol, args.tier, refs, found)}")
        print(
            "to write it to a file: python -m baselines.benchmark leaderboard "
            f"--tier {args.tier} --out DIR"
        )
    return listed


def write_leaderboard(args: BenchmarkArgs, protocol: protocols.Protocol) -> Path:
    """Write the leaderboard of the tier's references to
    ``<out>/<version>/<tier>/LEADERBOARD.md``; its path."""
    refs = open_references(args, protocol, args.tier)
    folder = args.out / protocol.version / args.tier
    cli.check_output_folder(folder)
    with tempfile.TemporaryDirectory() as configs:
        found = load_references(protocol, args.tier, refs, Path(configs))
    if not found:
        raise ValueError(f"no reference runs of tier {args.tier} in {refs.folder}")
    path = folder / "LEADERBOARD.md"
    write_atomic(path, leaderboard_text(protocol, args.tier, refs, found))
    print(f"wrote {path} (references: {refs.status})")
    return path


def plan_costs(args: BenchmarkArgs, protocol: protocols.Protocol) -> dict[str, Any]:
    """Print (and return) what the tier costs: per method and for all references, the runs,
    steps and CPU time, and the wall time on each of ``args.cores`` cores."""
    if any(n < 1 for n in args.cores):
        raise ValueError(f"--cores must be >= 1, got {args.cores}")
    refs = open_references(args, protocol, "lite")
    with tempfile.TemporaryDirectory() as configs:  # planning only: nothing written to --out
        return price_tier(args, protocol, refs, Path(configs))


ALL_REFERENCES = "all references"


def price_tier(
    args: BenchmarkArgs, protocol: protocols.Protocol, refs: manifest.References, configs: Path
) -> dict[str, Any]:
    """:func:`plan_costs` with the lite references ``refs``, planning in ``configs``, for each
    trainer: SB3's from the references' wall time per step, the batched trainer's from its
    shipped measurement (:func:`~.cost.measured_batched`; a method it cannot train is shown
    with the reason). Returns ``{trainer: {sweep: SweepCost}}`` (batched: on the fewest
    ``--cores``)."""
    shipped = load_references(protocol, "lite", refs, configs)
    tier = protocol.tier(args.tier)
    methods = list(dict.fromkeys([*filter(None, [args.method]), *protocols.REFERENCE_METHODS]))
    env_ids = args.env_id or None
    sb3_rate = cost.seconds_per_step(shipped)
    sb3 = {
        m: cost.sweep_cost(protocol_runs.plan(protocol, tier, m, configs, env_ids), m, sb3_rate)
        for m in methods
    }
    sb3[ALL_REFERENCES] = cost.combined([sb3[m] for m in protocols.REFERENCE_METHODS])
    print(
        f"protocol {protocol.version} tier {args.tier}\n"
        "- sb3: seconds per step measured in the lite references "
        f"({sum(len(r) for r in shipped.values())} runs of {len(shipped)} methods, wall time of "
        "one run per process" + ("" if refs.verified else f"; {refs.status}") + ")"
    )
    measured = cost.measured_batched(protocol.version)
    batched_jobs: dict[str, list[dict[str, Any]] | str] = {}
    if measured is None:
        print(f"- batched: no measured costs ship for protocol {protocol.version}")
    else:
        print(
            f"- batched: CPU seconds per step measured in baselines/protocols/{measured[1]}, each "
            "run's share of its batch; a method not measured: the median of those measured on "
            "the env"
        )
        for m in methods:
            try:
                batched_jobs[m] = protocol_runs.plan(protocol, tier, m, configs, env_ids, "batched")
            except ValueError as err:  # a method the batched trainer cannot train
                batched_jobs[m] = str(err)

    def batched(name: str, cores: int) -> cost.SweepCost | str:
        """The batched cost of ``name`` (a method or all references) on ``cores`` workers, or
        why there is none."""
        chosen = protocols.REFERENCE_METHODS if name == ALL_REFERENCES else [name]
        jobs = [batched_jobs[m] for m in chosen]
        refused = [j for j in jobs if isinstance(j, str)]
        if refused:
            return f"not available: {refused[0]}"
        return cost.batched_cost([j for js in jobs for j in js], measured[0], cores)

    names = [*filter(None, [args.method]), ALL_REFERENCES]
    trainers = ["sb3", *(["batched"] if measured is not None else [])]
    result: dict[str, dict[str, Any]] = {"sb3": sb3, "batched": {}}
    print("\n| trainer | sweep | runs | steps | CPU | longest task |\n|---|---|---|---|---|---|")
    for name in [*methods, ALL_REFERENCES]:
        for trainer in trainers:
            c = sb3[name] if trainer == "sb3" else batched(name, min(args.cores))
            result[trainer][name] = c
            if isinstance(c, str):
                print(f"| {trainer} | {name} | {c} | | | |")
                continue
            print(
                f"| {trainer} | {name} | {c.runs} | {c.steps / 1e6:.2f} M | "
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
        walls = [
            cost.wall_range(sb3[n] if t == "sb3" else batched(n, cores), cores) for n, t in columns
        ]
        print(f"| {cores} | " + " | ".join(walls) + " |")
    print(
        "\n"
        + cost.assumptions(sum(len(r) for r in shipped.values()), len(shipped), report.hardware())
    )
    if measured is not None:
        print(
            "- batched (--trainer batched): the tasks are the batches the runner forms for that "
            "many workers (longest task: with the fewest cores), each on one core, priced at the "
            "CPU seconds per step of the file named above; batches smaller than those measured "
            "cost more per step (docs/batched.md), so with many cores its times are lower bounds"
        )
    return result


def main(args: BenchmarkArgs) -> Any:
    started = time.perf_counter()
    protocol = protocols.load_protocol(args.protocol)
    tier = protocol.tier(args.tier)
    if args.command in ("run", "report") and not args.method:
        raise ValueError(f"{args.command} needs --method")
    from baselines.lib.config import check_method

    # every method spec is checked first: a bad one is refused before any folder is made
    for method in [args.method] if args.method else []:
        check_method(method)
    if args.command == "references" and args.compute:
        for method in args.methods or protocol.references_of(tier):
            check_method(method)
    if args.command in ("run", "report") or (args.command == "references" and args.compute):
        cli.check_output_folder(args.out)  # before any config or result is written
    if args.command == "references":
        return references(args, protocol)
    if args.command == "leaderboard":
        return write_leaderboard(args, protocol)
    if args.command == "plan":
        return plan_costs(args, protocol)
    refs = open_references(args, protocol, args.tier)  # refused before any training
    if args.command == "run":
        folder = method_folder(args, args.method, protocol)
        jobs = protocol_runs.plan(
            protocol,
            tier,
            args.method,
            args.out / "configs",
            args.env_id or None,
            trainer_of(args, protocol),
        )
        protocol_runs.run_method(
            jobs, folder / "results.jsonl", args.workers, args.progress, backend=args
        )
    path = make_report(args, protocol, started, refs)
    print(f"report card: {path / 'report.md'}")
    return path


def parse_args(argv: list[str] | None = None) -> BenchmarkArgs:
    """The settings of ``benchmark COMMAND ...`` (``argv[0]`` is the command)."""
    from baselines.commands import settings_of

    return settings_of("benchmark", argv)


def cli_main(argv: list[str] | None = None) -> Any:
    """``python -m baselines.benchmark``: bad settings are one line on stderr, exit status 2."""
    from baselines.commands import script

    return script("benchmark")(argv)
