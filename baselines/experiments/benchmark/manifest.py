"""The shipped references are read-only and verified before any command reads them.

``baselines/references/<version>/<tier>/MANIFEST.sha256`` lists the SHA-256 of every reference
file of the tier (one ``<method slug>.jsonl.gz`` per reference method, in the compact format of
:mod:`~baselines.lib.compact_runs`), in ``sha256sum`` format
(``sha256sum -c MANIFEST.sha256`` in the folder checks them by hand), and
:data:`~baselines.lib.protocol.REFERENCE_MANIFESTS` pins the manifest's own
SHA-256 beside the protocol's. :func:`open_references` checks both: a changed, added or missing
reference file (or a changed manifest) is refused with the file's name, unless the caller
accepts unverified references (``--unverified-references``, for a local experiment), and then
every table built from them says so in its header (:attr:`References.status`).

Shipping new references (a maintainer): compute them into a folder of your own
(``benchmark references --compute``), copy the ``.jsonl`` files into the tier's folder, run
``benchmark references --write-manifest`` (:func:`write_manifest`: it compacts them first, each
checked to decode to its JSON lines byte for byte) and pin the SHA-256 it prints in
``REFERENCE_MANIFESTS``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.lib import compact_runs, protocol_runs
from baselines.lib import protocol as protocols
from baselines.lib.results import write_atomic

MANIFEST_NAME = "MANIFEST.sha256"
MAX_MANIFEST_BYTES = 100_000
LINE = re.compile(r"([0-9a-f]{64}) [ *]([A-Za-z0-9_.+-]+)")
"""One manifest line: a SHA-256 and a bare file name (a tuned column's files are named
``<slug>+tuned.jsonl.gz``; no ``/``, so a line never names a file outside the folder)."""


class UnverifiedReferences(ValueError):
    """Reference files that are not the shipped ones (the message names the first file)."""


@dataclass(frozen=True)
class References:
    """Where a tier's references are read from, and whether they are the shipped ones.

    Attributes:
        folder: the folder of ``<method slug>.jsonl.gz`` files (or ``.jsonl``: computed ones).
        verified: every file matches the pinned manifest.
        status: one line for the header of every table built from them ("verified ..." or
            "UNVERIFIED REFERENCES: ...").
    """

    folder: Path
    verified: bool
    status: str

    def path(self, method: str) -> Path:
        """The reference file of ``method`` (:func:`~baselines.lib.compact_runs.runs_path`)."""
        return compact_runs.runs_path(self.folder, protocol_runs.method_slug(method))


def shipped_folder(version: str, tier: str) -> Path:
    """The folder the references of ``version``'s ``tier`` ship in."""
    return protocol_runs.REFERENCE_DIR / version / tier


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


LAB_FILE = "LAB.json"
"""The references' lab rows (:mod:`~.lab`), verified with them where they ship."""


def reference_files(folder: Path) -> dict[str, Path]:
    """The reference files in ``folder`` (every runs file, ``*.jsonl.gz`` or ``*.jsonl``: one
    per reference method of the tier and, under a protocol with tuning, one per method's tuned
    column, whatever the protocol lists, so an added file is noticed too; the tuned columns'
    choices, ``*+tuned.json``; and ``LAB.json``, their lab rows, where it is there), by file
    name."""
    paths = [
        *sorted(folder.glob(f"*{compact_runs.SUFFIX}")),
        *sorted(folder.glob("*.jsonl")),
        *sorted(folder.glob("*+tuned.json")),
    ]
    paths.append(folder / LAB_FILE)
    return {p.name: p for p in paths if p.is_file()}


def read_manifest(path: Path) -> dict[str, str]:
    """``{file name: sha256}`` of a manifest; ``UnverifiedReferences`` naming the file and line
    when it is not one."""
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise UnverifiedReferences(f"{path}: too large for a manifest")
    entries: dict[str, str] = {}
    for number, line in enumerate(path.read_bytes().decode(errors="replace").splitlines(), 1):
        match = LINE.fullmatch(line.strip())
        if not line.strip():
            continue
        if match is None or match[2] in entries:
            raise UnverifiedReferences(f"{path}: line {number} is not '<sha256>  <file name>'")
        entries[match[2]] = match[1]
    return entries


def manifest_text(folder: Path) -> str:
    """The manifest of the reference files in ``folder`` (``sha256sum`` format, sorted)."""
    files = reference_files(folder)
    return "".join(f"{file_sha256(files[name])}  {name}\n" for name in sorted(files))


def compact_references(folder: Path, report: Callable[[str], Any] = print) -> None:
    """Rewrite every ``*.jsonl`` runs file in ``folder`` as ``*.jsonl.gz``
    (:func:`~baselines.lib.compact_runs.pack`: checked to decode to the same bytes), removing
    the JSON lines file; ``ValueError`` naming the first file that would not come back (it and
    the later ones are left as they were), or that would overwrite a different compact file."""
    for source in sorted(folder.glob("*.jsonl")):
        data = source.read_bytes()
        payload = compact_runs.pack(data, str(source))
        target = compact_runs.compact_name(source)
        if target.is_file() and target.read_bytes() != payload:
            raise ValueError(f"{source}: {target.name} exists with other runs; remove one")
        write_atomic(target, payload)
        source.unlink()
        report(f"compacted {source.name}: {len(data):,} -> {len(payload):,} bytes")


def write_manifest(folder: Path, report: Callable[[str], Any] = print) -> tuple[Path, str]:
    """Compact ``folder``'s runs files (:func:`compact_references`) and write its manifest
    (atomically); its path and its SHA-256, the value to pin in
    :data:`~baselines.lib.protocol.REFERENCE_MANIFESTS`."""
    if not reference_files(folder):
        raise ValueError(f"--references-dir {folder}: no reference files to list")
    compact_references(folder, report)
    path = folder / MANIFEST_NAME
    write_atomic(path, manifest_text(folder))
    return path, file_sha256(path)


def problems(folder: Path, pinned: str | None) -> list[str]:
    """What differs from the shipped references in ``folder`` (each names its file), given the
    manifest's pinned SHA-256 (``None``: no references ship for this tier)."""
    files = reference_files(folder)
    manifest = folder / MANIFEST_NAME
    if pinned is None:
        return [
            f"{p}: no references ship for this tier (no pinned manifest)" for p in files.values()
        ]
    if not manifest.is_file():
        return [f"{manifest}: missing (the shipped references' manifest)"]
    digest = file_sha256(manifest)
    if digest != pinned:
        return [f"{manifest}: changed (sha256 {digest[:12]}..., pinned {pinned[:12]}...)"]
    listed = read_manifest(manifest)
    found = []
    for name, want in listed.items():
        path = folder / name
        if not path.is_file():
            found.append(f"{path}: missing (listed in {MANIFEST_NAME})")
        elif (got := file_sha256(path)) != want:
            found.append(f"{path}: changed (sha256 {got[:12]}..., shipped {want[:12]}...)")
    found += [
        f"{path}: not a shipped reference file (not in {MANIFEST_NAME})"
        for name, path in files.items()
        if name not in listed
    ]
    return found


def open_references(
    protocol: protocols.Protocol,
    tier: str,
    folder: Path | None = None,
    unverified: bool = False,
) -> References:
    """The references of ``protocol``'s ``tier``: the shipped folder (or ``folder``), verified
    against the pinned manifest.

    Raises:
        UnverifiedReferences: a file differs from the shipped ones (or ``folder`` is not the
            shipped folder), naming it, unless ``unverified``: then the references are used
            and :attr:`References.status` says they are unverified.
    """
    shipped = shipped_folder(protocol.version, tier)
    folder = shipped if folder is None else Path(folder)
    pinned = protocols.REFERENCE_MANIFESTS.get(protocol.version, {}).get(tier)
    if folder.resolve() != shipped.resolve():
        found = [f"{folder}: not the shipped references of {protocol.version} tier {tier}"]
    else:
        found = problems(folder, pinned)
    if not found:
        count = len(reference_files(folder))
        status = (
            f"verified: {count} files match {MANIFEST_NAME} (sha256 {pinned[:12]}, pinned)"
            if pinned
            else "none ship for this tier"
        )
        return References(folder, True, status)
    if not unverified:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UnverifiedReferences(
            f"{found[0]}{more}: shipped references are read-only; pass --unverified-references "
            "to use these in a local experiment (every table built from them says so)"
        )
    return References(folder, False, "UNVERIFIED REFERENCES: " + "; ".join(found)[:500])
