"""Every entry of the submissions registry (:mod:`~.registry`) verified: what ``benchmark
verify-submissions`` prints, one line per entry, and what the site shows of each.

An entry is verified when its folder is as the layout says, its bundle is a submission to its
folder's protocol and tier, no earlier entry of that tier is the same method, and
:func:`~.verification.verify` finds every part of the bundle rebuilt from its rows (as data:
nothing of the bundle is imported or run). Then, only when asked (``--rerun K``: this runs the
submitter's code, in a subprocess), K of its runs chosen by the reviewer's seed are trained
again and compared bit for bit, where that can succeed here and is cheap enough:

- the rows were made with this environment's package versions (a rerun matches only with
  them);
- the method is built in, or its bundled source is pure Python whose every import is the
  standard library or a package installed here (read with :mod:`ast`, never imported; no
  :data:`FOREIGN` module that loads compiled code by hand, no relative import of a file the
  bundle does not hold);
- the chosen runs, priced at this protocol's measured CPU seconds per step
  (:func:`~.cost.measured_costs`) times :data:`BATCH_OF_ONE`, cost at most the budget.

Otherwise the entry is still verified (as data), and its line says why no run was trained
again.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import registry, submission, verification

FOREIGN = frozenset({"ctypes", "_ctypes", "cffi", "cython", "Cython", "pyximport"})
"""Modules through which Python source loads compiled code of its own: a method importing one is
not pure Python (its rerun would run code the bundle does not show)."""
MAX_SOURCE_BYTES = 1_000_000
"""A method source larger than this is not read for its imports (no rerun)."""
BATCH_OF_ONE = 4.0
"""How much more a run costs trained alone (a rerun) than its share of a batch of the tier's
seeds, which the measured costs price, with the rerun process's start-up (docs/benchmark.md,
"The submissions registry", measured)."""


@dataclass
class Checked:
    """One registry entry as checked: ``problem`` is ``None`` when it is verified.

    Attributes:
        where: ``<protocol>/<tier>/<name>``.
        entry: its folder and ``ENTRY.json`` (``None`` when the folder is not an entry).
        problem: why it is not verified, one line (the first reason; ``problems`` all).
        verdict: what :func:`~.verification.verify` found (where it ran).
        fields: the manifest's typed fields (protocol, tier, method, trainer, ...).
        manifest: ``SUBMISSION.json`` as rebuilt and found equal (headline, runs, commit).
        members: the bundle's members; records: its valid rows.
        rerun_seed: the seed that chose the reruns; no_rerun: why no run was trained again.
    """

    where: str
    entry: registry.Entry | None = None
    problem: str | None = None
    problems: list[str] = field(default_factory=list)
    verdict: verification.Verdict | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    members: dict[str, bytes] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    rerun_seed: int | None = None
    no_rerun: str | None = None

    @property
    def verified(self) -> bool:
        return self.problem is None

    @property
    def reruns(self) -> list[str]:
        """The short ids of the runs trained again that matched their rows."""
        return list(self.verdict.reruns) if self.verdict else []

    def rerun_text(self) -> str:
        """The reruns as words: which matched (with the seed), or why there were none."""
        if self.verdict and self.reruns:
            return f"{self.verdict.rerun_text()} (seed {self.rerun_seed})"
        return f"no run trained again ({self.no_rerun})"

    def line(self) -> str:
        """The entry's one line: verified, with what and the reruns, or the reason it is not."""
        if not self.verified:
            more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return f"{self.where}: NOT verified: {self.problem}{more}"
        commit = str(self.manifest.get("git_commit", "?"))[:12]
        return (
            f"{self.where}: verified: {self.manifest.get('runs')} runs of "
            f"{self.fields['method'][:80]} on {self.fields['trainer']}, made at commit {commit}"
            f"{' (partial)' if self.fields['partial'] else ''}; {self.rerun_text()}"
        )


def imports_of(source: bytes) -> list[str] | None:
    """The top-level module names a Python source imports (``""`` for a relative import), read
    from its syntax tree without running it; ``None`` when it is larger than
    :data:`MAX_SOURCE_BYTES` or does not parse."""
    if len(source) > MAX_SOURCE_BYTES:
        return None
    try:
        tree = ast.parse(source.decode("utf-8"))
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("" if node.level else (node.module or "").split(".")[0])
    return sorted(set(names))


def not_pure_python(members: Mapping[str, bytes], method: str) -> str | None:
    """Why the bundle's method cannot be rerun here as pure Python (``None`` when it can): a
    built-in method can; an outside one needs its one source file, whose imports are each the
    standard library or installed here (never imported to find out) and none :data:`FOREIGN`."""
    from routine_envs import plugins

    if not plugins.parse_spec(method, "method").is_import_path:
        return None
    sources = [n for n in members if n.startswith("method/")]
    if len(sources) != 1:
        return "the outside method has no one source file in the bundle"
    names = imports_of(members[sources[0]])
    if names is None:
        return f"{sources[0]} is not Python source of at most {MAX_SOURCE_BYTES:,} bytes"
    if "" in names:
        return f"{sources[0]} imports a module beside it (a relative import) the bundle lacks"
    foreign = sorted(set(names) & FOREIGN)
    if foreign:
        return f"{sources[0]} loads compiled code ({foreign[0]}): not pure Python"
    missing = [
        n
        for n in names
        if n not in sys.stdlib_module_names
        and (not n.isidentifier() or importlib.util.find_spec(n) is None)
    ]
    if missing:
        return f"{sources[0]} imports {missing[0][:60]!r}, which is not installed here"
    return None


def other_versions(records: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the rows' package versions are not this environment's (``None`` when they are)."""
    from baselines.lib.provenance import versions

    here = versions()
    for row in records:
        theirs = row.get("versions")
        if theirs != here:
            differ = sorted(
                k for k in set(here) | set(theirs or {}) if (theirs or {}).get(k) != here.get(k)
            )
            name = differ[0] if differ else "versions"
            return (
                f"the rows were made with {name} {str((theirs or {}).get(name))[:20]}, this "
                f"environment has {here.get(name)}: a rerun would not match"
            )
    return None


def price(
    fields: Mapping[str, Any], members: Mapping[str, bytes], chosen: Sequence[Mapping[str, Any]]
) -> float | str:
    """The CPU seconds the ``chosen`` rows cost trained again, or why they cannot be priced:
    each its planned budget times the protocol's measured CPU seconds per step on its setting
    (:func:`~.cost.measured_costs`, all methods' median where the method has none) times
    :data:`BATCH_OF_ONE`."""
    from baselines.experiments.benchmark import cost
    from baselines.lib import protocol as protocols

    measured = cost.measured_costs(fields["version"], fields["trainer"])
    if measured is None:
        return f"no measured costs of the {fields['trainer']} trainer ship for {fields['version']}"
    protocol = protocols.load_protocol(fields["version"])
    jobs, _ = verification.plan_of(protocol, fields, chosen, members)
    keys = {r["key"] for r in chosen}
    versions = chosen[0].get("versions") if chosen else None
    from baselines.lib import runs

    planned = [runs.replace(j, versions=versions) for j in jobs or []]
    wanted = [j for j in planned if runs.key(j) in keys]
    if len(wanted) != len(chosen):
        return "the chosen runs are not in the plan"
    try:
        seconds = sum(j.budget * cost.rate(measured[0], j.method.text, j, "measured costs")
                      for j in wanted)  # fmt: skip
    except ValueError as err:
        return str(err)[:200]
    return float(seconds * BATCH_OF_ONE)


def rerun_entry(
    checked: Checked, rerun: int, seed: int, budget: float, timeout: float | None = None
) -> None:
    """Train ``rerun`` of the verified entry's runs again (chosen by ``seed``) where that can
    succeed and costs at most ``budget`` CPU seconds (module docstring); the matches go into
    its verdict, a mismatch or failure into its problems, else why none ran into
    ``no_rerun``."""
    assert checked.verdict is not None and checked.entry is not None
    if rerun <= 0:
        checked.no_rerun = "no reruns asked: --rerun K trains K runs again, running its code"
        return
    reason = not_pure_python(checked.members, checked.fields["method"]) or other_versions(
        checked.records
    )
    chosen = verification.chosen_runs(checked.records, rerun, seed)
    cpu = price(checked.fields, checked.members, chosen) if reason is None else reason
    if isinstance(cpu, str):
        checked.no_rerun = cpu
        return
    if cpu > budget:
        checked.no_rerun = (
            f"the {len(chosen)} chosen runs are priced at {cpu:.0f} CPU-s, more than the "
            f"--rerun-budget of {budget:.0f}"
        )
        return
    checked.rerun_seed = seed
    verification.rerun_rows(
        checked.entry.bundle,
        checked.members,
        checked.fields,
        checked.records,
        rerun,
        seed,
        timeout if timeout is not None else max(300.0, 10 * cpu),
        checked.verdict,
    )
    if checked.verdict.problems:
        checked.problems = list(checked.verdict.problems)
        checked.problem = checked.problems[0]


def check_entry(where: str, folder: Path, seen: dict[tuple[str, str, str, str], str]) -> Checked:
    """The entry at ``folder`` checked as data (no rerun): layout, protocol and tier, one
    method per tier (``seen``: what the entries before it are, updated), the bundle verified."""
    checked = Checked(where)
    try:
        checked.entry = registry.read_entry(folder, where)
        checked.members, checked.fields = registry.bundle_fields(checked.entry)
        same = registry.same_method(checked.fields)
        if same in seen:
            raise registry.InvalidEntry(
                f"{where}: the same method as {seen[same]} ({checked.fields['method'][:80]} on "
                f"{same[2]}): one entry per method and tier"
            )
        seen[same] = where
        verdict = verification.verify(checked.entry.bundle)
    except (registry.InvalidEntry, submission.InvalidSubmission) as err:
        message = str(err).replace(f"--bundle {str(folder / registry.BUNDLE)[:200]}: ", "")
        checked.problems = [message.removeprefix(f"{where}: ")]
        checked.problem = checked.problems[0]
        return checked
    checked.verdict = verdict
    if not verdict.verified:
        checked.problems = list(verdict.problems)
        checked.problem = checked.problems[0]
        return checked
    checked.records = submission.rows_of(checked.members)
    checked.manifest = submission.json_member(checked.members, "SUBMISSION.json")
    return checked


def check_registry(
    root: Path, rerun: int = 0, seed: int = 0, budget: float = 600.0
) -> list[Checked]:
    """Every entry of the registry at ``root`` checked (:func:`check_entry`), then, for each
    verified one, ``rerun`` runs trained again within ``budget`` CPU seconds each
    (:func:`rerun_entry`); a folder the layout does not allow is an entry that is not
    verified. ``InvalidEntry`` for a root that is not a registry."""
    seen: dict[tuple[str, str, str, str], str] = {}
    out = []
    for where, found in registry.entry_folders(root):
        if isinstance(found, registry.InvalidEntry):
            message = str(found).removeprefix(f"{where}: ")
            out.append(Checked(where, problem=message, problems=[message]))
            continue
        checked = check_entry(where, found, seen)
        if checked.verified:
            rerun_entry(checked, rerun, seed, budget)
        out.append(checked)
    return out
