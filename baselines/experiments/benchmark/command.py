"""``python -m baselines benchmark {run,report,references,leaderboard,plan,submit,
verify-submission,verify-submissions,tune}``: score a credit-assignment method on a versioned
protocol against the shipped references.

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
  the shipped lite references' measured seconds per step (:mod:`~.planning`).
- ``submit --method SPEC --tier lite``: the report card, then one file bundling it with the
  scored rows, the drops manifest, the method's source and, where ``tune`` made one, its
  tuned column (:mod:`~.submission`, :mod:`~.tuned_column`);
  ``verify-submission --bundle FILE`` rebuilds the scores from such a file and says whether
  they are the card's.
- ``verify-submissions``: every entry of the submissions registry (``submissions/<protocol>/
  <tier>/<name>/``, :mod:`~.registry`) verified the same way, one line each; with
  ``--rerun K`` K runs of each trained again where that can succeed and is cheap enough
  (:mod:`~.registry_verification`).
- ``tune --method SPEC --tier lite`` (a protocol with ``tuning``, rb3): the method's tuned
  column: the search on the tuning seeds, the chosen values per setting family, then the tuned
  runs on the scoring seeds, each resumable (:mod:`~.tuning`).

Every command that reads references checks them first: a reference file that differs from the
shipped one is refused with its name (exit status 2), or, with ``--unverified-references``, used
and marked "unverified references" in the header of everything built from it.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import (
    aggregates,
    card,
    drops,
    manifest,
    merging,
    paper,
    planning,
    privileged,
    registry,
    registry_verification,
    report,
    scores,
    submission,
    tuned_column,
    tuning,
    verification,
)
from baselines.experiments.benchmark import lab as benchmark_lab
from baselines.experiments.benchmark.reading import (
    load_records,
    load_references,
    planned_records,
)
from baselines.lib import cli, compact_runs, protocol_runs, trainers
from baselines.lib import protocol as protocols
from baselines.lib.backend import BackendArgs
from baselines.lib.results import write_atomic
from routine_envs.cli import CommandFailed

COMMANDS = (
    "run",
    "report",
    "references",
    "leaderboard",
    "plan",
    "submit",
    "verify-submission",
    "verify-submissions",
    "tune",
)
__all__ = ["load_records", "load_references", "planned_records"]  # read by tests and scripts


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
    tier: str = field(
        default="lite", metadata={"help": "protocol tier: smoke, lite, paper or full"}
    )
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
    bundle: Path | None = field(
        default=None,
        metadata={"help": "verify-submission: the submission file (submission.zip) to check"},
    )
    partial: bool = field(
        default=False,
        metadata={
            "help": "submit: bundle the runs done so far although some planned runs are missing "
            "(a partial submission: its card and its check say which runs are in)"
        },
    )
    rerun: int = field(
        default=0,
        metadata={
            "help": "verify-submission(s): train this many of the bundle's runs again and "
            "compare them bit for bit (or to rounding, said per run). THIS RUNS THE SUBMITTER'S "
            "CODE (the bundle's method source), in a subprocess; without it nothing of the "
            "bundle is imported or run",
            "min": 0,
        },
    )
    rerun_seed: int = field(
        default=0,
        metadata={"help": "verify-submission(s): the seed that chooses which runs --rerun trains"},
    )
    submissions: Path | None = field(
        default=None,
        metadata={
            "help": "verify-submissions: the registry folder (default: the checkout's submissions/)"
        },
    )
    rerun_budget: float = field(
        default=600.0,
        metadata={
            "help": "verify-submissions: the most CPU seconds an entry's --rerun runs may cost, "
            "priced before they start (an entry priced above it is verified without reruns)",
            "min": 0,
        },
    )
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
            "choices": list(trainers.TRAINERS),
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


def open_references(
    args: BenchmarkArgs, protocol: protocols.Protocol, tier: str
) -> manifest.References:
    """The references of ``tier`` as ``args`` asks (verified unless
    ``--unverified-references``); a ``--references-dir`` that is not a folder is refused."""
    folder = args.references_dir
    if folder is not None and not Path(folder).is_dir():
        raise ValueError(f"--references-dir {folder}: no such folder")
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
    settings = card_settings(args, protocol)
    tier = protocol.tier(args.tier)
    jobs = protocol_runs.plan(
        protocol, tier, args.method, configs, settings.env_ids, settings.trainer
    )
    results = folder / "results.jsonl"
    records = protocol_runs.current_records(load_records(results), jobs)
    if not records:
        raise ValueError(
            f"no runs of {args.method!r} under protocol {protocol.version} tier {args.tier}'s "
            f"current settings in {folder}: run it first"
        )
    if args.lab and card.steps_counted(args.method):  # a tree method: not independent episodes
        raise ValueError(
            f"{args.method!r} samples its groups by tree rollouts, which the card's lab (the SNR "
            "lab's independent episodes) would measure as another algorithm: add --no-lab"
        )
    references = card.references_of(protocol, settings, refs, configs)
    lab = benchmark_lab.lab_rows(
        protocol,
        tier,
        card.in_lab([args.method, *references]),
        settings.env_ids,
        measure=args.lab,
        cache=benchmark_lab.read_lab(refs.folder),
    )
    card.write(
        folder / "report",
        protocol,
        settings,
        records,
        references,
        refs,
        lab,
        drops.drops_manifest(jobs, records, drops.failed_runs(results)),
        card.reads_of(args.method, records, references),
        card.claims_now(started),
        card.paper_rows(protocol, settings),
    )
    return folder / "report"


def card_settings(args: BenchmarkArgs, protocol: protocols.Protocol) -> card.CardSettings:
    """What the card of ``args`` is of."""
    env_ids = tuple(args.env_id) if args.env_id else None
    return card.CardSettings(args.method, args.tier, trainer_of(args, protocol), env_ids, args.lab)


def list_references(
    protocol: protocols.Protocol, tier: str, folder: Path, configs: Path
) -> tuple[dict[str, int], dict[str, list[dict[str, Any]]]]:
    """Print how many runs of each reference method ``folder`` holds (read only); the counts
    and the records of the methods that have runs."""
    listed, found = {}, {}
    runs = protocol.tier(tier).num_runs_per_method
    for method in protocol.references_of(tier):
        every = load_records(
            compact_runs.runs_path(folder, protocol_runs.method_slug(method)), read_only=True
        )
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
    aggregated: dict[str, Any] | None = None,
    tuned: dict[str, list[dict[str, Any]]] | None = None,
) -> str:
    """The leaderboard of ``found`` (records by method), marked when ``refs`` are unverified,
    laid out as the protocol's ``report: leaderboard`` says (:data:`LEADERBOARD_COLUMNS`), with
    the tuned column where ``refs`` hold one (``tuned``, read from ``refs`` when ``None``:
    :func:`~.tuning.load_tuned_references`). ``aggregated``: :func:`~.aggregates.aggregate` of
    ``found`` and that tuned column where the caller computed it already (the site, which draws
    it too); computed here otherwise."""
    if tuned is None:
        with tempfile.TemporaryDirectory() as configs:
            tuned = tuning.load_tuned_references(protocol, tier, refs, Path(configs))
    privileged_fields = LEADERBOARD_COLUMNS[protocol.report["leaderboard"]](found)
    text = report.leaderboard(
        protocol.version,
        tier,
        protocol.tier(tier).num_runs_per_method,
        found,
        unverified=None if refs.verified else refs.status,
        privileged=privileged_fields,
        decision_axes=protocol.tier(tier).axes(),
        not_run=merged_not_run(protocol, tier, found),
        per_decision_target=protocol.per_decision_target,
        tuned=tuned or None,
    )
    if protocol.report["aggregates"] == "none" or not found:
        return text
    labels = privileged.method_labels(found, privileged_fields)
    if aggregated is None:
        aggregated = aggregates.aggregate(found, tuned or None)
    section = aggregates.markdown(aggregated, labels)
    return text + "\n" + "\n".join(section) + "\n"


def no_column(found: dict[str, list[dict[str, Any]]]) -> None:
    """A plain leaderboard: no privileged column, every method ranked in one list."""
    return None


LEADERBOARD_COLUMNS = {"plain": no_column, "privileged_column": privileged.privileged_of}
"""The leaderboard layouts a protocol's ``report: leaderboard`` selects: the privileged
fields per method (``privileged_column``), or none (``plain``)."""


def merged_not_run(
    protocol: protocols.Protocol, tier: str, found: dict[str, Any]
) -> dict[str, tuple[list[str], str]]:
    """The protocol's ``merged`` methods (not run) as aliases of the references in ``found``,
    with the advantage probe's sentence on the tier's settings (and, for an alias the probe no
    longer finds one algorithm with its reference, a sentence saying so):
    ``{reference: (aliases, why)}``."""
    wanted = {a: m for a, m in protocol.merged.items() if m in found}
    if not wanted:
        return {}
    methods = list(dict.fromkeys([*wanted.values(), *wanted]))
    rows = benchmark_lab.lab_rows(protocol, protocol.tier(tier), methods, measure=False)
    probed = merging.probe_pairs(rows)
    out: dict[str, tuple[list[str], str]] = {}
    for method in dict.fromkeys(wanted.values()):
        aliases = [a for a, m in wanted.items() if m == method]
        confirmed = [
            (a, probed[frozenset((a, method))]) for a in aliases if frozenset((a, method)) in probed
        ]
        denied = [a for a in aliases if frozenset((a, method)) not in probed]
        why = [merging.probe_sentences(method, confirmed)] if confirmed else []
        why += [
            f"protocol {protocol.version} lists `{a}` as one algorithm with `{method}`, but the "
            "advantage probe does not confirm it on every setting of this tier: read "
            f"`{method}`'s row as `{method}`'s only."
            for a in denied
        ]
        out[method] = (aliases, " ".join(why))
    return out


def reference_methods(protocol: protocols.Protocol, tier: str, methods: list[str]) -> list[str]:
    """The references of ``tier`` that ``methods`` name (all when empty), spelled as the protocol
    spells them (so their files are the shipped files' names), whatever the spacing of their
    JSON arguments; a ``ValueError`` naming ``--methods`` for a method that is not one (it would
    be computed into the references folder under another file name, unseen by every table)."""
    from baselines.lib.specs import parse_method

    listed = list(protocol.references_of(tier))
    if not methods:
        return listed

    def canonical(text: str) -> tuple[str, str]:
        spec = parse_method(text)
        return spec.target, json.dumps(spec.kwargs, sort_keys=True)

    by_canonical = {canonical(m): m for m in listed}
    found = [(m, by_canonical.get(canonical(m))) for m in methods]
    others = [m for m, reference in found if reference is None]
    if others:
        raise ValueError(
            f"--methods {others}: not a reference of {protocol.version} tier {tier} (its "
            f"references: {', '.join(listed)}); score another method with `run --method`"
        )
    return [reference for _, reference in found]


def references(args: BenchmarkArgs, protocol: protocols.Protocol) -> dict[str, Any]:
    """List the references of the tier and print their leaderboard (writing nothing); with
    ``--compute`` run them into a folder of your own first; with ``--write-manifest`` write
    the manifest of a references folder."""
    if args.write_manifest:
        folder = args.references_dir or manifest.shipped_folder(protocol.version, args.tier)
        if protocol.report["reference_lab"] == "at_initialisation":
            lab_path = benchmark_lab.write_reference_lab(
                protocol,
                protocol.tier(args.tier),
                card.in_lab(protocol.references_of(args.tier)),
                folder,
            )
            print(f"wrote {lab_path} (the references' lab at initialisation)")
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
        for method in reference_methods(protocol, args.tier, args.methods):
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
            f"`python -m baselines benchmark references --write-manifest --tier {args.tier}` "
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
            "to write it to a file: python -m baselines benchmark leaderboard "
            f"--tier {args.tier} --out DIR"
        )
    return listed


def write_leaderboard(args: BenchmarkArgs, protocol: protocols.Protocol) -> Path:
    """Write the leaderboard of the tier's references to
    ``<out>/<version>/<tier>/LEADERBOARD.md``; its path."""
    refs = open_references(args, protocol, args.tier)
    cli.check_output_folder(args.out)  # --out itself: '' or / refused before a subfolder
    folder = args.out / protocol.version / args.tier
    cli.check_output_folder(folder)
    with tempfile.TemporaryDirectory() as configs:
        found = load_references(protocol, args.tier, refs, Path(configs))
    if not found:
        raise ValueError(f"no reference runs of tier {args.tier} in {refs.folder}")
    path = folder / "LEADERBOARD.md"
    text = leaderboard_text(protocol, args.tier, refs, found)
    tier = protocol.tier(args.tier)
    if tier.snr is not None:  # the paper tier: its figure and numbers beside the leaderboard
        computed = {name: scores.method_scores(recs) for name, recs in found.items()}
        result = paper.write(folder, paper.snr_rows(protocol, tier), computed)
        text += "\n" + "\n".join(paper.markdown(result)) + "\n"
    write_atomic(path, text)
    print(f"wrote {path} (references: {refs.status})")
    return path


def main(args: BenchmarkArgs) -> Any:
    started = time.perf_counter()
    protocol = protocols.load_protocol(args.protocol)
    tier = protocol.tier(args.tier)
    if args.command in ("run", "report", "submit", "tune") and not args.method:
        raise ValueError(f"{args.command} needs --method")
    from baselines.lib.specs import parse_method

    # every method spec is checked first: a bad one is refused before any folder is made
    for method in [args.method] if args.method else []:
        parse_method(method)
    if args.command == "references" and args.compute:
        reference_methods(protocol, args.tier, args.methods)  # each checked, each a reference
    if args.command in ("run", "report", "submit"):
        open_references(args, protocol, args.tier)  # refused before any folder is made
        with tempfile.TemporaryDirectory() as configs:  # --env-id, --trainer: checked likewise
            protocol_runs.plan(
                protocol,
                tier,
                args.method,
                Path(configs),
                args.env_id or None,
                trainer_of(args, protocol),
            )
    if args.command == "tune" and protocol.tuning is None:
        raise ValueError(f"tune: protocol {protocol.version} has no tuning (try --protocol rb3)")
    if args.command in ("run", "report", "submit", "tune") or (
        args.command == "references" and args.compute
    ):
        cli.check_output_folder(args.out)  # before any config or result is written
    if args.command == "references":
        return references(args, protocol)
    if args.command == "verify-submission":
        return verify_submission(args)
    if args.command == "verify-submissions":
        return verify_submissions(args)
    if args.command == "tune":
        return tune(args, protocol)
    if args.command == "leaderboard":
        return write_leaderboard(args, protocol)
    if args.command == "plan":
        priced_on = planning.pricing_tier(protocol, args.tier)
        refs = open_references(args, protocol, priced_on)
        return planning.plan_costs(args, protocol, refs, priced_on)
    refs = open_references(args, protocol, args.tier)  # refused before any training
    if args.command == "run":
        folder = method_folder(args, args.method, protocol)
        jobs = method_runs(args, protocol)
        protocol_runs.run_method(
            jobs, folder / "results.jsonl", args.workers, args.progress, backend=args
        )
    path = make_report(args, protocol, started, refs)
    print(f"report card: {path / 'report.md'}")
    if args.command == "submit":
        return submit(args, protocol, path)
    return path


def method_runs(args: BenchmarkArgs, protocol: protocols.Protocol) -> list[Any]:
    """Every run of ``--method`` in ``--tier`` (only ``--env-id``'s settings where given) on
    its trainer, with its config files in ``<out>/configs``."""
    return protocol_runs.plan(
        protocol,
        protocol.tier(args.tier),
        args.method,
        args.out / "configs",
        args.env_id or None,
        trainer_of(args, protocol),
    )


def tune(args: BenchmarkArgs, protocol: protocols.Protocol) -> Path:
    """The tuned column of ``--method`` (:mod:`~.tuning`): the search into
    ``<method folder>+tuning/results.jsonl``, the chosen values per family into
    ``<method folder>+tuned/TUNED.json`` (and ``TUNED.md``), then the tuned runs on the scoring
    seeds into ``<method folder>+tuned/results.jsonl`` (with ``--references-dir``: the runs
    and the choice into that folder's ``<slug>+tuned.jsonl`` and ``<slug>+tuned.json``, where
    the leaderboard reads them); each step resumable. The folder."""
    tier = protocol.tier(args.tier)
    folder = method_folder(args, args.method, protocol)
    defaults = method_runs(args, protocol)
    search = tuning.tuning_runs(protocol, tier, defaults)
    searched = folder.with_name(folder.name + "+tuning") / "results.jsonl"
    print(f"tuning {args.method}: {len(search)} runs into {searched}")
    protocol_runs.run_method(search, searched, args.workers, args.progress, backend=args)
    assert protocol.tuning is not None  # main refuses a protocol without it
    records = protocol_runs.current_records(load_records(searched), search)
    found = tuning.objectives(records, protocol.tuning, tier)
    chosen = tuning.choose(found, tuning.default_combinations(protocol, tier, defaults))
    tuned = folder.with_name(folder.name + "+tuned")
    cli.check_output_folder(tuned)
    choice = {"method": args.method, "chosen": chosen, "searched": found}
    write_atomic(tuned / "TUNED.json", json.dumps(choice, indent=1))
    text = [f"# Tuned hyperparameters: {args.method}, {protocol.version} {args.tier}", ""]
    write_atomic(tuned / "TUNED.md", "\n".join(text + tuning.markdown(chosen, found)))
    for family, pick in chosen.items():
        print(f"{family}: {pick['chosen']} (default {pick['default']})")
    results, default_results = tuned / "results.jsonl", folder / "results.jsonl"
    if args.references_dir is not None:  # a maintainer computing the tuned references
        cli.check_output_folder(args.references_dir, "--references-dir")
        results, choice_path = tuning.tuned_paths(args.references_dir, args.method)
        default_results = compact_runs.runs_path(
            args.references_dir, protocol_runs.method_slug(args.method)
        )
        write_atomic(choice_path, json.dumps(choice, indent=1))
    runs = tuning.tuned_runs(defaults, chosen, tier)
    reused = tuning.reuse_defaults(runs, default_results, results)
    if reused:
        print(
            f"{reused} tuned runs are default runs (chosen = default): copied from "
            f"{default_results}"
        )
    protocol_runs.run_method(runs, results, args.workers, args.progress, backend=args)
    print(f"tuned column: {results}; values: {tuned / 'TUNED.md'}")
    return tuned


def submit(args: BenchmarkArgs, protocol: protocols.Protocol, card_folder: Path) -> Path:
    """Bundle the card just written with the rows it scored, the drops manifest, the method's
    source and, where ``tune`` made one, its tuned column (:mod:`~.tuned_column`) into
    ``<method folder>/submission.zip`` (:mod:`~.submission`); its path.
    A bundle with planned runs missing (neither finished nor failed) is refused unless
    ``--partial``."""
    scores_ = json.loads((card_folder / "scores.json").read_text())
    total = scores_["drops"]["total"]
    if total["missing"] and not args.partial:
        raise ValueError(
            f"--method {args.method}: {total['missing']} of {total['planned']} planned runs are "
            "missing (run resumes them); --partial bundles the runs done so far as a partial "
            "submission"
        )
    settings = card_settings(args, protocol)
    jobs = protocol_runs.plan(
        protocol,
        protocol.tier(args.tier),
        args.method,
        args.out / "configs",
        list(settings.env_ids) if settings.env_ids else None,
        settings.trainer,
    )
    records = protocol_runs.current_records(
        load_records(card_folder.parent / "results.jsonl"), jobs
    )
    summary = submission.summary_fields(
        protocol,
        args.tier,
        settings.trainer,
        list(settings.env_ids) if settings.env_ids else None,
        tuple(scores_["privileged_fields"].get(args.method, [])),
        records,
        scores_["claims"],
        complete=not total["missing"],
    )
    tuned = tuned_column.collect(
        card_folder.parent, protocol, args.tier, args.method, jobs, args.partial
    )
    path = submission.build(card_folder.parent, records, summary, args.method, tuned)
    print(
        f"submission: {path} ({len(records)} runs"
        + (f", a partial one: {total['missing']} planned runs missing" if total["missing"] else "")
        + (
            f", the tuned column ({tuned[1]['runs']} runs, its search's {tuned[1]['search_runs']})"
            if tuned
            else ""
        )
        + ", the card, the drops manifest"
        + (", the method's source" if submission.method_source(args.method) else "")
        + "); anyone can check it with: python -m baselines benchmark "
        f"verify-submission --bundle {path}"
    )
    return path


def verify_submission(args: BenchmarkArgs) -> verification.Verdict:
    """Verify ``--bundle`` as data (:mod:`~.verification`), print one line per finding and the
    verdict. Exit status: 0 verified, 1 not verified (:class:`~routine_envs.cli.CommandFailed`),
    2 bad usage or a bundle that cannot be read (``ValueError``)."""
    if args.bundle is None or not str(args.bundle):
        raise ValueError("verify-submission needs --bundle FILE (a submission.zip)")
    verification.strip_working_folder()  # nothing a bundle unpacked here holds is importable
    verdict = verification.verify(args.bundle, args.rerun, args.rerun_seed)
    for line in verdict.checked:
        print(f"ok: {line}")
    for line in verdict.problems:
        print(f"PROBLEM: {line}")
    for line in verdict.notes:
        print(f"note: {line}")
    if not verdict.verified:
        print("NOT verified")
        raise CommandFailed(
            f"--bundle {args.bundle}: NOT verified ({len(verdict.problems)} problems)"
        )
    reruns = f"; reruns matched: {', '.join(verdict.reruns)}" if verdict.reruns else ""
    print(f"verified: every part rebuilds from the rows{reruns}")
    if args.out is not None and str(args.out):
        folder = args.out / "verified" / Path(args.bundle).resolve().parent.name
        cli.check_output_folder(folder)
        path = verdict.write_card(folder, report.git_commit(Path(__file__).parent))
        print(f"the verified card: {path}")
    return verdict


def verify_submissions(args: BenchmarkArgs) -> list[registry_verification.Checked]:
    """Verify every entry of the registry (``--submissions``, default the checkout's) as
    :func:`verify_submission` verifies one bundle, with ``--rerun K`` reruns of each where it
    can and within ``--rerun-budget``; print one line per entry and a total. Exit status: 0
    every entry verified, 1 not (:class:`~routine_envs.cli.CommandFailed`), 2 a root that is
    not a registry."""
    root = args.submissions or registry.DEFAULT_ROOT
    verification.strip_working_folder()  # nothing a bundle unpacked here holds is importable
    started = time.perf_counter()
    try:
        checked = registry_verification.check_registry(
            root, args.rerun, args.rerun_seed, args.rerun_budget
        )
    except registry.InvalidEntry as err:
        raise ValueError(str(err)) from None
    for entry in checked:
        print(entry.line(), flush=True)
    failed = [c.where for c in checked if not c.verified]
    print(
        f"{len(checked)} entries in {root}: {len(checked) - len(failed)} verified"
        + (f", {len(failed)} NOT verified" if failed else "")
        + f" ({time.perf_counter() - started:.0f} s)"
    )
    if failed:
        raise CommandFailed(f"--submissions {root}: NOT verified: {', '.join(failed)[:300]}")
    return checked
