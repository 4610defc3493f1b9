"""``verify-submission``: a stranger's bundle checked as data, never as code.

Nothing of the bundle is imported or run: the manifest's method string is parsed, not resolved
(outside code is planned from the code fingerprint of its bundled source,
:func:`~baselines.lib.protocol_runs.plan`'s ``code``), and the verifier runs with neither the
working folder nor the bundle on ``sys.path``. Then every byte is either rebuilt or covered by a
hash that is itself checked:

- the plan: the protocol (its pinned hash), tier, trainer and env ids must be the protocol's;
  every row's method is the manifest's; the rows are exactly the planned runs (missing, extra
  and duplicate runs each counted; a missing run is allowed only where the drops manifest
  declares it failed with a reason, or the bundle says it is partial);
- the card: rebuilt from the rows, the shipped references and the card's three claims
  (:data:`~.card.CLAIMS`), every file compared byte for byte (figures included);
- the tuned column, where the bundle has one (:mod:`~.tuned_column`): the search exactly the
  planned one, the choice recomputed from its rows, the tuned rows exactly that choice's runs;
- ``SUBMISSION.json``: rebuilt from the rows and the rebuilt card and compared whole;
- with ``--rerun K`` (and only then: it runs the submitter's code), K runs chosen by the
  reviewer's seed among every column's rows (the default runs, and where the bundle has a
  tuned column the search's and the tuned runs: :func:`rerun_pool`, each row as likely) are
  trained again in a subprocess and compared with their rows bit for bit,
  but that a float may differ by rounding (:data:`RERUN_ROUNDING`, said per run): the batched
  trainer's exact evaluation of CodeFix rounds the success curve differently when it evaluates
  40 runs at once than one alone (an ulp or two, measured), so a run trained alone in a rerun
  matches its row only to rounding.

The lab rows of the card's method (gradient SNR, the advantage probe) come from running its
code: they are kept as the submitter measured them, and said so.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import (
    card,
    drops,
    manifest,
    report,
    submission,
    tuned_column,
    tuning,
)
from baselines.experiments.benchmark import lab as benchmark_lab
from baselines.lib import protocol as protocols
from baselines.lib import protocol_runs, runs, trainers
from routine_envs import plugins

Record = dict[str, Any]
TIMING = ("wall_time", "cpu_time", "config")
"""Row fields that say how a run went on its machine, not what it computed (not compared by a
rerun)."""
RERUN_ROUNDING = 1e-12
"""The largest relative difference of a rerun's float from its row's that is rounding, not
another result: a run of the batched trainer is bit-identical alone and in a batch but for
CodeFix's exact success evaluation, whose last bit depends on how many runs are evaluated
together (measured on rb3 lite: up to 3e-16 between a batch of 40 and a run alone; the evaluator's
own accuracy against the model is 1e-12). Keys, strings and integers compare exactly."""


@dataclass
class Verdict:
    """What verification found: ``checked`` (each an ``ok`` line), ``problems`` (each a reason
    the bundle is not verified) and the ``reruns`` that matched (their run keys' short ids)."""

    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    reruns: list[str] = field(default_factory=list)
    rounding: dict[str, float] = field(default_factory=dict)
    """The reruns (short ids) that matched to rounding only: their largest relative
    difference."""
    notes: list[str] = field(default_factory=list)
    """What explains a problem without being one (the bundle made at another commit)."""
    card: dict[str, bytes] = field(default_factory=dict)
    """The card rebuilt from the rows (``report/<file>``: its bytes), where it was rebuilt."""

    @property
    def verified(self) -> bool:
        return not self.problems

    def rerun_text(self) -> str:
        """The runs trained again that matched, as words (those that matched to rounding
        named with their largest relative difference)."""
        text = f"{len(self.reruns)} runs trained again matched their rows bit for bit"
        if self.rounding:
            text = (
                f"{len(self.reruns)} runs trained again matched their rows, "
                f"{len(self.reruns) - len(self.rounding)} bit for bit and {len(self.rounding)} "
                f"to rounding only (at most {max(self.rounding.values()):.1e} relative: "
                + ", ".join(self.rounding)
                + ")"
            )
        return f"{text}: {', '.join(self.reruns)}"

    def write_card(self, folder: Path, checkout: str) -> Path:
        """Write the rebuilt card of a verified bundle into ``folder``, its ``report.md``
        ending with how it was verified (by this ``checkout``'s git commit, the reruns that
        matched by id); the path of ``report.md``."""
        if not self.verified or not self.card:
            raise ValueError("only a verified bundle's card is written")
        reruns = (
            self.rerun_text()
            if self.reruns
            else "no run was trained again (verify-submission --rerun K)"
        )
        section = (
            f"\n## Verification\n\nVerified by checkout {checkout}: every part of the bundle "
            f"rebuilds from its rows; {reruns}.\n"
        )
        files = {**self.card, "report/report.md": self.card["report/report.md"] + section.encode()}
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (folder / name[len("report/") :]).write_bytes(data)
        return folder / "report.md"


def strip_working_folder() -> None:
    """Take the working folder (``''``, ``.``, its path: what ``python -m`` puts first) off
    ``sys.path``, so no module a bundle unpacked there holds is ever imported."""
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p or ".") != here]


def fingerprint(data: bytes) -> str:
    """:func:`routine_envs.plugins.code_fingerprint` of a module whose file holds ``data``
    (its text as ``inspect.getsource`` gives it: universal newlines), never importing it."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return plugins.text_fingerprint(text)


def short_id(key: str) -> str:
    """A run's short id: the first 12 hex digits of its key's SHA-256."""
    return submission.sha256(key.encode())[:12]


def manifest_fields(manifest_: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The typed fields of ``SUBMISSION.json``; ``InvalidSubmission`` when one is missing or
    of the wrong type."""
    try:
        protocol = manifest_["protocol"]
        out = {
            "version": protocol["version"],
            "sha256": protocol["sha256"],
            "tier": manifest_["tier"],
            "method": manifest_["method"],
            "trainer": manifest_["trainer"],
            "env_ids": manifest_.get("env_ids"),
            "partial": manifest_.get("partial", False),
        }
    except (KeyError, TypeError):
        out = {}
    strings = ("version", "sha256", "tier", "method", "trainer")
    env_ids = out.get("env_ids")
    if (
        not out
        or not all(isinstance(out[k], str) and 0 < len(out[k]) <= 10_000 for k in strings)
        or not isinstance(out["partial"], bool)
        or not (
            env_ids is None
            or (isinstance(env_ids, list) and all(isinstance(e, str) for e in env_ids))
        )
    ):
        raise submission.InvalidSubmission(
            f"{where}: SUBMISSION.json lacks its protocol, tier, method, trainer or settings, "
            "or has one of the wrong type"
        )
    return out


def check_plan_settings(fields_: Mapping[str, Any]) -> tuple[protocols.Protocol | None, list[str]]:
    """The protocol of the bundle if its version, file hash, tier, trainer, env ids and method
    are this checkout's, else the refusals (a check is never skipped)."""
    version = fields_["version"]
    if version not in protocols.known_versions():
        return None, [f"unknown protocol {version[:40]!r} (known: {protocols.known_versions()})"]
    protocol = protocols.load_protocol(version)
    problems = []
    if fields_["sha256"] != protocol.sha256:
        problems.append(
            f"made under another file of {version} (sha256 {fields_['sha256'][:12]}, this "
            f"checkout's {protocol.sha256[:12]})"
        )
    if protocol.status != "released":
        problems.append(f"protocol {version} is a draft ({protocol.status}): nothing verifies")
    if fields_["tier"] not in protocol.tiers:
        problems.append(f"unknown tier {fields_['tier'][:40]!r} of {version}")
        return None, problems
    if fields_["trainer"] not in trainers.TRAINERS:
        problems.append(
            f"unknown trainer {fields_['trainer'][:40]!r} (known: {list(trainers.TRAINERS)})"
        )
    tier_envs = {s.env_id for s in protocol.tier(fields_["tier"]).settings}
    unknown = sorted(set(fields_["env_ids"] or []) - tier_envs)
    if unknown or fields_["env_ids"] == []:
        problems.append(f"env ids {unknown or []} are not settings of tier {fields_['tier']}")
    try:
        spec = plugins.parse_spec(fields_["method"], "method")
    except ValueError as err:
        problems.append(str(err)[:200])
    else:
        from baselines.lib.specs import known_methods

        if not spec.is_import_path and spec.target not in known_methods():
            problems.append(f"unknown method {spec.target[:60]!r}: neither built-in nor outside")
        named = [v for v in plugins.strings_in(spec.kwargs) if plugins.is_import_path(v)]
        if named:  # planning would import it (a detector named by its import path, say)
            problems.append(
                f"the method's arguments name outside code ({named[0][:60]!r}), which a "
                "verifier never imports: submit it as a method of its own module"
            )
    return (None if problems else protocol), problems


def plan_of(
    protocol: protocols.Protocol,
    fields_: Mapping[str, Any],
    records: Sequence[Record],
    members: Mapping[str, bytes],
) -> tuple[list[Record] | None, list[str]]:
    """The planned runs of the bundle's method (as data: outside code is planned from the code
    fingerprint its rows record, which must be its bundled source's), or the refusals."""
    method = fields_["method"]
    spec = plugins.parse_spec(method, "method")
    code = None
    problems = []
    if spec.is_import_path:
        codes = {str((r.get("estimator") or {}).get("code")) for r in records}
        if len(codes) != 1:
            return None, [f"the rows record {len(codes)} code fingerprints of {method}, not one"]
        code = codes.pop()
        sources = [n for n in members if n.startswith("method/")]
        if len(sources) != 1:
            problems.append("outside code without its one source file in method/")
        elif fingerprint(members[sources[0]]) != code.split("+")[0]:
            problems.append(
                f"the rows were made by other code than the bundled {sources[0]} (fingerprint "
                f"{code.split('+')[0]}, the file's {fingerprint(members[sources[0]])})"
            )
    env_ids = fields_["env_ids"]
    try:
        with tempfile.TemporaryDirectory() as configs:
            jobs = protocol_runs.plan(
                protocol,
                protocol.tier(fields_["tier"]),
                method,
                Path(configs),
                list(env_ids) if env_ids else None,
                fields_["trainer"],
                code=code,
            )
    except ValueError as err:
        return None, [*problems, f"the plan of {method[:80]} cannot be made: {str(err)[:200]}"]
    return jobs, problems


def check_runs(
    jobs: Sequence[Record],
    records: Sequence[Record],
    fields_: Mapping[str, Any],
    declared_failed: Mapping[tuple[str, int, int], str],
) -> tuple[list[str], list[str], dict[str, str]]:
    """``(checked, problems, failed)``: whether the rows are exactly the planned runs (each
    row's method and its key, recomputed from its own fields, among the plan's; missing, extra
    and duplicate runs counted); ``failed`` (run key -> reason) for the missing runs the
    bundle's drops manifest declares failed."""
    checked, problems = [], []
    method = fields_["method"]
    wrong = sum(r.get("method") != method for r in records)
    if wrong:
        problems.append(f"{wrong} rows name another method than the manifest's {method[:60]}")
    inconsistent = 0
    for r in records:
        try:
            if runs.key(r) != r.get("key"):
                inconsistent += 1
        except (KeyError, TypeError):
            inconsistent += 1
    if inconsistent:
        problems.append(f"{inconsistent} rows have a key that is not their own fields'")
    versions = {json.dumps(r.get("versions"), sort_keys=True) for r in records}
    planned = {}
    for run in jobs:
        if len(versions) == 1:  # the submitter's package versions: a fact of their runs
            run = runs.replace(run, versions=json.loads(next(iter(versions))))
        planned[runs.key(run)] = run
    keys = Counter(r.get("key") for r in records)
    duplicates = sum(n - 1 for n in keys.values() if n > 1)
    extra = sum(1 for k in keys if k not in planned)
    missing_keys = [k for k in planned if k not in keys]
    failed = {}
    for k in missing_keys:
        run = planned[k]
        where = (run.context["setting"], int(run.context["density_value"]), int(run.seed))
        reason = declared_failed.get(where)
        if reason:
            failed[k] = reason
    undeclared = len(missing_keys) - len(failed)
    if duplicates:
        problems.append(f"{duplicates} duplicate runs (the same run key twice)")
    if extra:
        problems.append(f"{extra} rows are not runs of the plan of {method[:60]} on its trainer")
    if undeclared and not fields_["partial"]:
        problems.append(
            f"{undeclared} of {len(planned)} planned runs are missing and not declared failed "
            "(a partial bundle says so: submit --partial)"
        )
    if not (duplicates or extra or wrong or inconsistent):
        checked.append(
            f"every row is a run of the plan of {method[:60]} on {fields_['trainer']}: "
            f"{len(records)} of {len(planned)} planned"
            + (f", {len(failed)} declared failed" if failed else "")
            + (f", {undeclared} missing (a partial bundle)" if undeclared else "")
        )
    if len(versions) > 1:
        problems.append(f"the rows were made with {len(versions)} sets of package versions")
    return checked, problems, failed


def check_tuned_column(
    protocol: protocols.Protocol,
    fields_: Mapping[str, Any],
    defaults: Sequence[Any],
    members: Mapping[str, bytes],
) -> tuple[list[str], list[str], dict[str, Any] | None]:
    """``(checked, problems, summary)`` of the bundle's tuned column (:mod:`~.tuned_column`):
    the search exactly the planned one, ``TUNED.json`` its choice, the tuned rows exactly that
    choice's runs; ``summary`` (:func:`~.tuned_column.summary`, rebuilt) is ``None`` where the
    bundle has none or it fails."""
    present = [name for name in tuned_column.MEMBERS if name in members]
    if not present:
        return [], [], None
    if len(present) < len(tuned_column.MEMBERS):
        absent = sorted(set(tuned_column.MEMBERS) - set(present))
        return [], [f"a tuned column without {', '.join(absent)}"], None
    if protocol.tuning is None:
        return [], [f"a tuned column under {protocol.version}, which has no tuning"], None
    tier, method = fields_["tier"], fields_["method"]
    chosen_tier = protocol.tier(tier)
    search = submission.rows_of(members, tuned_column.SEARCH)
    planned_search = tuning.tuning_runs(protocol, chosen_tier, defaults)
    checked, problems, _ = check_runs(planned_search, search, {**fields_, "partial": False}, {})
    checked = [f"{tuned_column.SEARCH}: {line}" for line in checked]
    problems = [f"{tuned_column.SEARCH}: {line}" for line in problems]
    if problems:
        return checked, problems, None
    choice = tuned_column.choice_of(protocol, tier, method, defaults, search)
    differs = submission.compare(
        choice, submission.json_member(members, tuned_column.CHOICE), "TUNED.json"
    )
    if differs:
        return (
            checked,
            [f"{tuned_column.CHOICE} is not the choice of the search's rows: {differs[0]}"],
            None,
        )
    checked.append(
        f"{tuned_column.CHOICE}: the choice rebuilds from the search's {len(search)} rows"
    )
    runs = submission.rows_of(members, tuned_column.RUNS)
    planned = tuning.tuned_runs(defaults, choice["chosen"], chosen_tier)
    found, problems, _ = check_runs(planned, runs, fields_, {})
    checked += [f"{tuned_column.RUNS}: {line}" for line in found]
    if problems:
        return checked, [f"{tuned_column.RUNS}: {line}" for line in problems], None
    problems = shared_runs_agree(submission.rows_of(members), runs)
    if problems:
        return checked, [f"{tuned_column.RUNS}: {line}" for line in problems], None
    return checked, [], tuned_column.summary(protocol, tier, choice, len(search), runs, planned)


def shared_runs_agree(defaults: Sequence[Record], tuned: Sequence[Record]) -> list[str]:
    """Where a family's choice is the default, its tuned runs are the default runs (their
    keys): each such tuned row must be its default row (timings aside). Problems, one line
    each (at most 3)."""
    by_key = {row["key"]: row for row in defaults}
    problems = []
    for row in tuned:
        default = by_key.get(row["key"])
        if default is None:
            continue
        mine = {k: v for k, v in row.items() if k not in TIMING}
        theirs = {k: v for k, v in default.items() if k not in TIMING}
        if submission.compare(mine, theirs):
            problems.append(
                f"run {short_id(row['key'])} is a default run (its key) with other numbers"
            )
    return problems[:3]


def declared_failures(members: Mapping[str, bytes]) -> dict[tuple[str, int, int], str]:
    """``(setting, density value, seed) -> reason`` of the runs the bundle's drops manifest
    declares failed."""
    if "report/drops.json" not in members:
        return {}
    data = submission.json_member(members, "report/drops.json")
    out = {}
    for run in data.get("runs", []) if isinstance(data, dict) else []:
        try:
            if run["status"] == "failed" and str(run["reason"]).strip():
                out[(str(run["setting"]), int(run["density_value"]), int(run["seed"]))] = str(
                    run["reason"]
                )
        except (KeyError, TypeError, ValueError):
            continue
    return out


def claims_of(bundled: Any) -> dict[str, Any]:
    """The card's claims (:data:`~.card.CLAIMS`) from its ``scores.json``;
    ``InvalidSubmission`` where they are missing."""
    claims = bundled.get("claims") if isinstance(bundled, dict) else None
    if not (
        isinstance(claims, dict)
        and set(claims) == set(card.CLAIMS)
        and isinstance(claims["git commit"], str)
        and isinstance(claims["hardware"], str)
        and isinstance(claims["command seconds"], int)
    ):
        raise submission.InvalidSubmission(
            "report/scores.json: no claims (git commit, hardware, command seconds) of the card"
        )
    return claims


def difference(name: str, rebuilt: bytes, bundled: bytes) -> str:
    """One line saying where ``rebuilt`` and ``bundled`` (member ``name``) first differ."""
    if name.endswith((".md", ".csv", ".json")):
        mine, theirs = rebuilt.decode().splitlines(), bundled.decode(errors="replace").splitlines()
        for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
            if a != b:
                at = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), 0)
                at = max(0, min(at, len(a), len(b)) - 20)
                return (
                    f"{name} differs from its rebuild at line {i + 1}: rebuilt "
                    f"{a[at : at + 70]!r}, bundled {b[at : at + 70]!r}"
                )
        return f"{name} differs from its rebuild: {len(mine)} lines rebuilt, {len(theirs)} bundled"
    return f"{name} differs from its rebuild ({len(rebuilt):,} bytes rebuilt, {len(bundled):,})"


def claimed_paper_rows(members: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """The paper tier's SNR rows the bundle's ``paper.json`` holds (none where it has none)."""
    if "report/paper.json" not in members:
        return []
    data = submission.json_member(members, "report/paper.json")
    rows = data.get("snr") if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def rebuild_card(
    protocol: protocols.Protocol,
    fields_: Mapping[str, Any],
    records: list[Record],
    jobs: Sequence[Record],
    failed: dict[str, str],
    members: Mapping[str, bytes],
) -> tuple[dict[str, bytes], list[str], list[str]]:
    """The card rebuilt from the rows, the shipped references and the bundle's claims and lab
    rows: ``(rebuilt members, checked, problems)``."""
    bundled = submission.json_member(members, "report/scores.json")
    claims = claims_of(bundled)
    lab = bundled.get("lab")
    if not isinstance(lab, list) or not all(isinstance(r, dict) for r in lab):
        raise submission.InvalidSubmission("report/scores.json: its lab rows are not a list")
    env_ids = tuple(fields_["env_ids"]) if fields_["env_ids"] else None
    measured = any("snr" in r for r in lab)
    settings = card.CardSettings(
        fields_["method"], fields_["tier"], fields_["trainer"], env_ids, lab=measured
    )
    refs = manifest.open_references(protocol, settings.tier)
    with tempfile.TemporaryDirectory() as configs:
        references = card.references_of(protocol, settings, refs, Path(configs))
    claimed = (bundled.get("privileged_fields") or {}).get(fields_["method"])
    try:
        reads = card.reads_of(fields_["method"], records, references, claimed, resolve=False)
    except ValueError as err:
        return {}, [], [str(err)[:200]]
    checked, problems = check_lab(protocol, fields_["method"], settings, references, refs, lab)
    with tempfile.TemporaryDirectory() as folder:
        card.write(
            Path(folder),
            protocol,
            settings,
            records,
            references,
            refs,
            lab,
            drops.drops_manifest(jobs, records, failed),
            reads,
            claims,
            card.paper_rows(protocol, settings, claimed_paper_rows(members)),
        )
        rebuilt = {f"report/{p.name}": p.read_bytes() for p in sorted(Path(folder).iterdir())}
    bundled_report = {n: d for n, d in members.items() if n.startswith("report/")}
    for name in sorted(set(rebuilt) | set(bundled_report)):
        if name not in bundled_report:
            problems.append(f"{name} is missing from the bundle")
        elif name not in rebuilt:
            problems.append(f"{name} is not part of the card rebuilt from the rows")
        elif rebuilt[name] != bundled_report[name]:
            problems.append(difference(name, rebuilt[name], bundled_report[name]))
    if not any(p.startswith("report/") for p in problems):
        checked.append(
            f"the card ({len(rebuilt)} files: {', '.join(n[7:] for n in rebuilt)}) rebuilds "
            "from the rows byte for byte"
        )
    return rebuilt, checked, problems


def same_numbers(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Whether two JSON values are equal, floats within ``rel`` of each other: a measurement
    rebuilt on another machine may differ in its last digits (BLAS kernels), never more."""
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float)
            and isinstance(b, int | float)
            and math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y, rel) for x, y in zip(a, b, strict=True))
    return a == b


def check_lab(
    protocol: protocols.Protocol,
    method: str,
    settings: card.CardSettings,
    references: Mapping[str, Sequence[Record]],
    refs: manifest.References,
    lab: Sequence[Record],
) -> tuple[list[str], list[str]]:
    """``(checked, problems)`` of the card's lab rows, rebuilt with this checkout's code only
    (the shipped ``LAB.json``, the advantage probe, the SNR measurement) and compared with the
    bundle's: every row of a built-in method; for outside code, the references' rows but for
    their relations to it, as its own rows come from running its code (the submitter's
    measurement)."""
    outside = plugins.parse_spec(method, "method").is_import_path
    rebuilt = benchmark_lab.lab_rows(
        protocol,
        protocol.tier(settings.tier),
        card.in_lab([*([] if outside else [method]), *references]),
        list(settings.env_ids) if settings.env_ids else None,
        measure=settings.lab,
        cache=benchmark_lab.read_lab(refs.folder),
    )

    def cell(row: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        return row.get("setting"), row.get("density_value"), row.get("estimator")

    def without_method(row: Mapping[str, Any]) -> dict[str, Any]:
        related = row.get("advantages_affine_to")
        if outside and isinstance(related, dict):
            related = {k: v for k, v in related.items() if k != method}
        return {**row, "advantages_affine_to": related}

    bundled = {cell(r): r for r in lab if not outside or r.get("estimator") != method}
    mine = {cell(r): r for r in rebuilt}
    problems = []
    if set(bundled) != set(mine):
        problems.append(
            f"the card's lab has {len(bundled)} reference rows where the references have "
            f"{len(mine)} (e.g. {sorted(set(bundled) ^ set(mine), key=str)[:1]})"
        )
    else:
        differ = [
            c for c in mine if not same_numbers(without_method(mine[c]), without_method(bundled[c]))
        ]
        if differ:
            problems.append(
                f"{len(differ)} lab rows differ from their rebuild with this checkout's code "
                f"(e.g. {differ[0]})"
            )
    own = sum(r.get("estimator") == method for r in lab)
    checked = (
        []
        if problems
        else [
            f"lab: {len(mine)} rows rebuilt"
            + (
                f" (the references'); the method's {own} rows are the submitter's measurement "
                "(the lab runs outside code)"
                if outside
                else ", the method's included"
            )
        ]
    )
    return checked, problems


def verify(
    bundle: Path, rerun: int = 0, rerun_seed: int = 0, rerun_timeout: float = 3600.0
) -> Verdict:
    """Verify ``bundle`` (module docstring). ``InvalidSubmission`` for a bundle that cannot be
    read (one line); else the :class:`Verdict`. The command takes the working folder off
    ``sys.path`` first (:func:`strip_working_folder`)."""
    where = f"--bundle {str(bundle)[:200]}"
    members = submission.read(bundle)
    fields_ = manifest_fields(submission.json_member(members, "SUBMISSION.json"), where)
    verdict = Verdict(checked=[f"{len(members)} members match their SHA-256 in SUBMISSION.json"])
    protocol, problems = check_plan_settings(fields_)
    verdict.problems += problems
    if protocol is None:
        return verdict
    records = submission.rows_of(members)
    verdict.checked.append(f"results.jsonl: {len(records)} valid rows")
    if not records:
        verdict.problems.append("results.jsonl holds no runs")
        return verdict
    jobs, problems = plan_of(protocol, fields_, records, members)
    verdict.problems += problems
    if jobs is None:
        return verdict
    checked, problems, failed = check_runs(jobs, records, fields_, declared_failures(members))
    verdict.checked += checked
    verdict.problems += problems
    if problems:
        return verdict
    checked, problems, tuned = check_tuned_column(protocol, fields_, jobs, members)
    verdict.checked += checked
    verdict.problems += problems
    if problems:
        return verdict
    made_at = str(submission.json_member(members, "SUBMISSION.json").get("git_commit"))
    here = report.git_commit(Path(__file__).parent)
    if made_at.removesuffix("+dirty") != here.removesuffix("+dirty"):
        verdict.notes.append(
            f"made at commit {made_at[:50]}, checked at {here}: a card rebuilds byte for byte "
            "with the release it was made with"
        )
    rebuilt, checked, problems = rebuild_card(protocol, fields_, records, jobs, failed, members)
    verdict.checked += checked
    verdict.problems += problems
    verdict.card = dict(rebuilt)
    if rebuilt and not problems:
        check_manifest(protocol, fields_, records, members, rebuilt, verdict, tuned)
    if rerun and verdict.verified:
        pool = rerun_pool(members)
        rerun_rows(bundle, members, fields_, pool, rerun, rerun_seed, rerun_timeout, verdict)
    return verdict


def rerun_pool(members: Mapping[str, bytes]) -> list[Record]:
    """The rows spot reruns draw from, each run once: the default column's and, where the
    bundle has a tuned column, the search's and the tuned runs' (a forger could invent any of
    them; the choice is rebuilt from the search's rows, but only a rerun tests a row's
    numbers)."""
    pool = {row["key"]: row for row in submission.rows_of(members)}
    if all(name in members for name in tuned_column.MEMBERS):
        for name in (tuned_column.SEARCH, tuned_column.RUNS):  # a tuned run that is a default
            for row in submission.rows_of(members, name):  # run is its row: once in the pool
                pool.setdefault(row["key"], row)
    return list(pool.values())


def check_manifest(
    protocol: protocols.Protocol,
    fields_: Mapping[str, Any],
    records: list[Record],
    members: Mapping[str, bytes],
    rebuilt: Mapping[str, bytes],
    verdict: Verdict,
    tuned: Mapping[str, Any] | None = None,
) -> None:
    """Rebuild ``SUBMISSION.json`` from the rows, the rebuilt card and the tuned column's
    rebuilt summary (``tuned``, where the bundle has one) and compare it whole."""
    bundled_manifest = submission.json_member(members, "SUBMISSION.json")
    scores = json.loads(rebuilt["report/scores.json"])
    method = fields_["method"]
    total = scores["drops"]["total"]
    summary = submission.summary_fields(
        protocol,
        fields_["tier"],
        fields_["trainer"],
        fields_["env_ids"],
        tuple(scores["privileged_fields"].get(method, [])),
        records,
        scores["claims"],
        complete=total["missing"] == 0,
    )
    others = {n: d for n, d in members.items() if not n.startswith("report/")}
    mine = submission.manifest_of(
        {**{n: d for n, d in others.items() if n != "SUBMISSION.json"}, **rebuilt},
        summary,
        method,
        tuned,
    )
    found = submission.compare(mine, bundled_manifest, "SUBMISSION.json")
    if found:
        verdict.problems.append(
            "SUBMISSION.json differs from its rebuild from the rows: " + "; ".join(found[:3])
        )
    else:
        verdict.checked.append(
            "SUBMISSION.json (headline, runs, drops, privileged fields, hashes) rebuilds whole"
        )


def chosen_runs(records: Sequence[Record], k: int, seed: int) -> list[Record]:
    """``k`` rows chosen by the reviewer's ``seed`` (a seeded sample of the rows in key order,
    so the submitter cannot know which)."""
    ordered = sorted(records, key=lambda r: r["key"])
    return random.Random(seed).sample(ordered, min(k, len(ordered)))


def module_path(target: str, source: str) -> Path:
    """Where the bundled source of ``package.module:Name`` goes for Python to import it."""
    parts = target.split(":", 1)[0].split(".")
    if source == "__init__.py":
        return Path(*parts, "__init__.py")
    return Path(*parts[:-1], f"{parts[-1]}.py")


def rerun_rows(
    bundle: Path,
    members: Mapping[str, bytes],
    fields_: Mapping[str, Any],
    records: Sequence[Record],
    k: int,
    seed: int,
    timeout: float,
    verdict: Verdict,
) -> None:
    """Train ``k`` runs chosen among ``records`` again, in a subprocess with the bundle's method
    source on its path, and compare each row with the bundle's bit for bit (but
    :data:`TIMING`)."""
    chosen = chosen_runs(records, k, seed)
    spec = plugins.parse_spec(fields_["method"], "method")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path_entries = []
        sources = [n for n in members if n.startswith("method/")]
        if spec.is_import_path and sources:
            source_root = root / "code"
            target = source_root / module_path(spec.target, sources[0][len("method/") :])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(members[sources[0]])
            path_entries.append(str(source_root))
        jobs_file = root / "runs.json"
        job: dict[str, Any] = {"fields": dict(fields_), "keys": [r["key"] for r in chosen]}
        if tuned_column.CHOICE in members:  # checked to be the search's choice by now
            job["chosen"] = submission.json_member(members, tuned_column.CHOICE)["chosen"]
        jobs_file.write_text(json.dumps(job))
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = os.pathsep.join([*path_entries, package_root])
        program = (
            f"from baselines.experiments.benchmark.rerun import main; main({str(jobs_file)!r})"
        )
        command = [sys.executable, "-c", program]
        try:
            done = subprocess.run(
                command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            verdict.problems.append(f"the reruns took more than {timeout:.0f} s")
            return
        if done.returncode != 0:
            tail = " ".join(done.stderr.strip().splitlines()[-3:])[:400]
            verdict.problems.append(f"the reruns failed (exit status {done.returncode}): {tail}")
            return
        rerun = {r["key"]: r for r in json.loads((root / "rows.json").read_text())}
    for row in chosen:
        again = rerun.get(row["key"])
        if again is None:
            verdict.problems.append(f"run {short_id(row['key'])} was not rerun")
            continue
        diff, rounding = compare_rerun(again, row)
        if diff:
            verdict.problems.append("a rerun differs from its row: " + "; ".join(diff[:3]))
            continue
        verdict.reruns.append(short_id(row["key"]))
        if rounding:
            verdict.rounding[short_id(row["key"])] = rounding
    if len(verdict.reruns) == len(chosen):
        verdict.checked.append(f"{verdict.rerun_text()} (seed {seed})")


def compare_rerun(again: Record, row: Record) -> tuple[list[str], float]:
    """Where a rerun's row differs from the bundle's (but :data:`TIMING`; at most 20 paths),
    none when every value is equal or a float differs by at most :data:`RERUN_ROUNDING`
    relative; and the largest relative difference of the floats (0 when bit for bit)."""
    mine = {k: v for k, v in again.items() if k not in TIMING}
    theirs = {k: v for k, v in row.items() if k not in TIMING}
    diff = submission.compare(mine, theirs, f"run {short_id(str(row.get('key')))}")
    if not diff:
        return [], 0.0
    if not same_numbers(curves(mine), curves(theirs), RERUN_ROUNDING):
        return diff, 0.0
    return [], largest_difference(curves(mine), curves(theirs))


def curves(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its success curve read as numbers (a results row stores it as JSON text)."""
    from baselines.lib import untrusted

    success = row.get("success")
    if isinstance(success, str):
        with contextlib.suppress(ValueError):  # else compared as the text it is
            success = untrusted.loads(success.encode(), "success", submission.MAX_JSON_BYTES)
    return {**row, "success": success}


def largest_difference(a: Any, b: Any) -> float:
    """The largest relative difference of the floats of two JSON values of one shape."""
    if isinstance(a, dict) and isinstance(b, dict):
        return max((largest_difference(a[k], b[k]) for k in a if k in b), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return max((largest_difference(x, y) for x, y in zip(a, b, strict=False)), default=0.0)
    if isinstance(a, float) and isinstance(b, float) and a != b:
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0
