"""A submission: one file that holds what a method's score was computed from, and the check that
rebuilds the score from it.

``benchmark submit --method SPEC --tier lite`` writes ``<method folder>/submission.zip``:

- ``SUBMISSION.json``: the protocol version and file hash, the tier, the method spec, its
  trainer, the privileged fields it read, the git commit and package versions of its runs, the
  drops totals, each setting's headline scores, and the SHA-256 of every other member;
- ``results.jsonl``: the method's rows that the card scored (runs of the protocol's current
  plan, nothing else);
- ``report/``: the report card as written (``report.md``, ``scores.json``, ``scores.csv``, the
  drops manifest ``drops.csv``/``drops.json``, the figures and their CSVs);
- ``method/<file>.py``: the source file of an outside method (``package.module:Name`` imported
  from a file outside this package), when there is one.
- under a protocol with ``tuning`` (rb3), where ``benchmark tune`` made it, the method's tuned
  column: ``tuning/results.jsonl`` (the search), ``tuned/TUNED.json`` (the choice) and
  ``tuned/results.jsonl`` (the tuned runs), :mod:`~.tuned_column`.

``benchmark verify-submission --bundle FILE`` (anyone, with a checkout of the same release)
reads it with :func:`read` (bounded, as untrusted input) and checks it as data
(:mod:`~.verification`).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from baselines.lib import untrusted

NAME = "submission.zip"
FORMAT = "routine-envs submission 1"
MAX_ARCHIVE_BYTES = 100_000_000
"""A bundle file larger than this is refused before it is read (the full tier's bundle of one
method is about 4 MB)."""
MAX_MEMBER_BYTES = 50_000_000
"""A member larger than this (uncompressed) is refused before it is read."""
MAX_JSON_BYTES = 20_000_000
"""``SUBMISSION.json`` and ``scores.json`` larger than this are refused before parsing."""
MAX_TOTAL_BYTES = 200_000_000
SHA256 = re.compile(r"[0-9a-f]{64}")
MAX_MEMBERS = 64
MEMBER = re.compile(
    r"(SUBMISSION\.json|results\.jsonl|report/[A-Za-z0-9_.-]+|method/[A-Za-z0-9_.-]+\.py"
    r"|tuning/results\.jsonl|tuned/results\.jsonl|tuned/TUNED\.json)"
)
"""The member names a bundle may hold (no folders of its own, no ``..``, no absolute paths)."""
REPORT_FILES = (
    "report.md",
    "scores.json",
    "scores.csv",
    "drops.csv",
    "drops.json",
    "learning_curves.png",
    "learning_curves.csv",
    "steps_vs_rho.png",
    "paper.png",
    "paper.json",
    "paper_snr.csv",
    "paper_steps.csv",
)


class InvalidSubmission(ValueError):
    """A bundle that is not a well-formed submission (the message names the member)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def method_source(method: str) -> Path | None:
    """The source file of an outside method (``package.module:Name``), or ``None`` for a
    built-in one or one whose file cannot be found."""
    import importlib
    import inspect

    from baselines.lib.specs import parse_method

    spec = parse_method(method)
    if ":" not in spec.target:
        return None
    module = importlib.import_module(spec.target.split(":", 1)[0])
    try:
        path = Path(inspect.getsourcefile(module) or "")
    except TypeError:
        return None
    package = Path(__file__).resolve().parents[3]
    if not path.is_file() or package in path.resolve().parents:
        return None
    return path


def headline(scores: Mapping[str, Any]) -> dict[str, Any]:
    """Per setting: the dilution exponent and the steps at the lowest density (with bounds)."""
    out = {}
    for setting, entry in scores["method"]["settings"].items():
        low = min(entry["rows"], key=lambda r: r["rho"])
        out[setting] = {
            "exponent": entry["exponent"]["exponent"],
            "exponent_bound": entry["exponent"]["bound"],
            "lowest_rho": low["rho"],
            "steps_iqm": low["steps_iqm"],
            "steps_bound": low["steps_bound"],
            "reached": f"{low['reached']}/{low['runs']}",
        }
    return out


def rows_bytes(records: list[dict[str, Any]]) -> bytes:
    """``results.jsonl`` of a bundle: one canonical JSON line per row, in the order given."""
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()


def manifest_of(
    members: Mapping[str, bytes],
    summary: Mapping[str, Any],
    method: str,
    tuned: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``SUBMISSION.json`` of a bundle of ``members`` (every other member): ``summary``
    (:func:`summary_fields`), the method, the card's headline and drops totals, the tuned
    column's summary where the bundle has one (:func:`~.tuned_column.summary`), and the SHA-256
    of every member. The verifier rebuilds it the same way and compares it whole."""
    scores = json.loads(members["report/scores.json"])
    return {
        "format": FORMAT,
        **summary,
        "method": method,
        "headline": headline(scores),
        "drops": scores.get("drops", {}).get("total"),
        **({} if tuned is None else {"tuned": dict(tuned)}),
        "files": {name: sha256(data) for name, data in sorted(members.items())},
    }


def build(
    folder: Path,
    records: list[dict[str, Any]],
    summary: dict[str, Any],
    method: str,
    tuned: tuple[dict[str, bytes], dict[str, Any]] | None = None,
) -> Path:
    """Write ``folder / submission.zip`` from the card in ``folder / "report"``, the scored
    ``records``, ``summary`` (protocol, tier, method, trainer, ...: the caller's) and the tuned
    column's members and summary where there is one (:mod:`~.tuned_column`), with fixed
    timestamps (the same inputs give the same bytes); its path.

    Raises:
        ValueError: the card is missing (run ``report`` first).
    """
    from baselines.lib.results import write_atomic

    report = folder / "report"
    missing = [f for f in ("report.md", "scores.json") if not (report / f).is_file()]
    if missing:
        raise ValueError(
            f"{report}: no report card ({', '.join(missing)} missing): run report first"
        )
    members: dict[str, bytes] = {"results.jsonl": rows_bytes(records)}
    if tuned is not None:
        members.update(tuned[0])
    for name in REPORT_FILES:
        if (report / name).is_file():
            members[f"report/{name}"] = (report / name).read_bytes()
    source = method_source(method)
    if source is not None:
        members[f"method/{source.name}"] = source.read_bytes()
    manifest = manifest_of(members, summary, method, None if tuned is None else tuned[1])
    members["SUBMISSION.json"] = json.dumps(manifest, indent=1, sort_keys=True).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name in ["SUBMISSION.json", *sorted(n for n in members if n != "SUBMISSION.json")]:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, members[name])
    path = folder / NAME
    write_atomic(path, buffer.getvalue())
    return path


def is_link_or_special(info: zipfile.ZipInfo) -> bool:
    """Whether a zip member is stored as a symbolic link, a folder or any file type but a
    regular file (its Unix mode, where the archive records one)."""
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    return info.is_dir() or (kind != 0 and kind != stat.S_IFREG)


def read(path: Path) -> dict[str, bytes]:
    """The members of a bundle, checked as untrusted input before anything is parsed: a regular
    file (no device, FIFO or symbolic link: checked before opening) of at most
    :data:`MAX_ARCHIVE_BYTES`, a zip archive of at most :data:`MAX_MEMBERS` regular members
    named as :data:`MEMBER` allows (so none outside its root), none larger than
    :data:`MAX_MEMBER_BYTES` uncompressed (checked while reading, whatever the header says),
    :data:`MAX_TOTAL_BYTES` in all; ``SUBMISSION.json`` at most :data:`MAX_JSON_BYTES` and
    nested at most :data:`~baselines.lib.untrusted.MAX_JSON_DEPTH` levels; every other member
    listed there with its SHA-256.

    Raises:
        InvalidSubmission: one line naming the member or the file and the limit.
    """
    where = f"--bundle {str(path)[:200]}"
    try:
        data = untrusted.read_regular_file(Path(path), MAX_ARCHIVE_BYTES, where)
    except untrusted.Refused as err:
        raise InvalidSubmission(str(err)) from None
    try:
        bundle = zipfile.ZipFile(io.BytesIO(data))
    except (OSError, zipfile.BadZipFile, ValueError) as err:
        raise InvalidSubmission(f"{where}: not a submission file ({str(err)[:120]})") from None
    members: dict[str, bytes] = {}
    total = 0
    with bundle:
        infos = bundle.infolist()
        if len(infos) > MAX_MEMBERS:
            raise InvalidSubmission(
                f"{where}: {len(infos)} members, more than the {MAX_MEMBERS} a submission holds"
            )
        for info in infos:
            name = info.filename
            if not MEMBER.fullmatch(name) or name in members:
                raise InvalidSubmission(f"{where}: unexpected member {name[:80]!r}")
            if is_link_or_special(info):
                raise InvalidSubmission(
                    f"{where}: member {name} is a link or a folder, not a regular file"
                )
            if info.file_size > MAX_MEMBER_BYTES:
                raise InvalidSubmission(
                    f"{where}: member {name} is too large ({info.file_size:,} bytes, at most "
                    f"{MAX_MEMBER_BYTES:,})"
                )
            try:
                with bundle.open(info) as handle:
                    content = handle.read(MAX_MEMBER_BYTES + 1)
            except (
                OSError,
                zipfile.BadZipFile,
                RuntimeError,
                ValueError,
                EOFError,
                zlib.error,
            ) as err:
                raise InvalidSubmission(
                    f"{where}: member {name} cannot be read ({str(err)[:120]})"
                ) from None
            if len(content) > MAX_MEMBER_BYTES:
                raise InvalidSubmission(
                    f"{where}: member {name} is too large (more than {MAX_MEMBER_BYTES:,} bytes)"
                )
            total += len(content)
            if total > MAX_TOTAL_BYTES:
                raise InvalidSubmission(
                    f"{where}: more than the {MAX_TOTAL_BYTES:,} bytes a submission holds"
                )
            members[name] = content
    if "SUBMISSION.json" not in members:
        raise InvalidSubmission(f"{where}: no SUBMISSION.json")
    manifest = json_member(members, "SUBMISSION.json", where)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidSubmission(f"{where}: SUBMISSION.json is not a {FORMAT!r} manifest")
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(v, str) and SHA256.fullmatch(v) for v in files.values()
    ):
        raise InvalidSubmission(f"{where}: SUBMISSION.json lists no files with their SHA-256")
    for name in members:
        if name == "SUBMISSION.json":
            continue
        want = files.get(name)
        if not isinstance(want, str):
            raise InvalidSubmission(f"{where}: member {name} is not listed in SUBMISSION.json")
        if sha256(members[name]) != want:
            raise InvalidSubmission(
                f"{where}: member {name} differs from its SHA-256 in SUBMISSION.json"
            )
    absent = sorted(set(files) - set(members))
    if absent:
        raise InvalidSubmission(f"{where}: listed member {str(absent[0])[:80]} is missing")
    for needed in ("results.jsonl", "report/scores.json"):
        if needed not in members:
            raise InvalidSubmission(f"{where}: no {needed}")
    json_member(members, "report/scores.json", where)  # refused here if too deep or too large
    return members


def json_member(members: Mapping[str, bytes], name: str, where: str = "the bundle") -> Any:
    """The JSON value of member ``name``, read as untrusted (at most :data:`MAX_JSON_BYTES`,
    nested at most :data:`~baselines.lib.untrusted.MAX_JSON_DEPTH` levels)."""
    try:
        return untrusted.loads(members[name], f"{where}: member {name}", MAX_JSON_BYTES)
    except untrusted.Refused as err:
        raise InvalidSubmission(str(err)) from None


def rows_of(members: Mapping[str, bytes], name: str = "results.jsonl") -> list[dict[str, Any]]:
    """The valid training records of the bundle's member ``name`` (``results.jsonl``, or a
    tuned column's runs; read as any results file: an invalid line is refused, one line naming
    it)."""
    from baselines.lib import runs
    from baselines.lib.records import upgrade
    from baselines.lib.results import ResultsFile

    try:
        untrusted.check_json_text(members[name], f"member {name}", MAX_MEMBER_BYTES, lines=True)
    except untrusted.Refused as err:
        raise InvalidSubmission(str(err)) from None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.jsonl"
        path.write_bytes(members[name])
        messages: list[str] = []
        store = ResultsFile(path, runs.SCHEMA, runs.TrainingRecord.check, upgrade)
        records = store.read(report=messages.append)
    if messages:
        raise InvalidSubmission(f"{name}: {messages[0][:300]}")
    return records


def compare(mine: Mapping[str, Any], shipped: Mapping[str, Any], where: str = "") -> list[str]:
    """Where two JSON values differ (a path each, at most 20), floats compared exactly."""
    out: list[str] = []
    if isinstance(mine, Mapping) and isinstance(shipped, Mapping):
        for key in sorted(set(mine) | set(shipped), key=str):
            if key not in mine or key not in shipped:
                out.append(
                    f"{where}.{key}: only in {'the bundle' if key in shipped else 'the rebuild'}"
                )
            else:
                out += compare(mine[key], shipped[key], f"{where}.{key}")
            if len(out) >= 20:
                break
    elif isinstance(mine, list) and isinstance(shipped, list) and len(mine) == len(shipped):
        for i, (a, b) in enumerate(zip(mine, shipped, strict=True)):
            out += compare(a, b, f"{where}[{i}]")
    elif mine != shipped:
        out.append(f"{where}: rebuilt {str(mine)[:40]}, bundled {str(shipped)[:40]}")
    return out[:20]


def summary_fields(
    protocol: Any,
    tier: str,
    trainer: str,
    env_ids: list[str] | None,
    privileged: tuple[str, ...],
    records: list[dict[str, Any]],
    claims: Mapping[str, Any],
    complete: bool,
) -> dict[str, Any]:
    """What ``SUBMISSION.json`` says of the runs beside the files: each part a function of the
    rows and the card's ``claims`` (its git commit), so the verifier rebuilds it. ``complete``:
    whether every planned run of the chosen settings finished or is declared failed (else the
    bundle is a partial one)."""
    from baselines.experiments.benchmark import report

    return {
        "protocol": {"version": protocol.version, "sha256": protocol.sha256},
        "tier": tier,
        "trainer": trainer,
        "env_ids": env_ids,
        "partial": not complete,
        "privileged_fields_read": list(privileged),
        "runs": len(records),
        "git_commit": claims["git commit"],
        "package_versions": report.versions_of(records),
    }
