"""Compact runs files: a results file's rows with the fields every row shares written once.

A compact file (``<name>.jsonl.gz``, how the references ship) is gzip-compressed JSON lines:
the first line is a header,
``{"format": "routine-envs runs 1", "fields": [...], "shared": {...}}``, with the rows' field
names in order and the fields whose value is the same in every row (hyperparameters, versions,
protocol, estimator, ...); each further line is one run's other fields (seed, success curve,
steps to target, key, ...), and a row whose fields come in another order names them in
``"#fields"``. ``zcat FILE | jq`` reads it; :func:`decode` gives back the original JSON lines
byte for byte, which :func:`compact` checks before it writes anything.

Measured on the 64 reference files shipped before this format (63.7 MB of JSON lines): gzip
alone 6.79 MB, this format 6.68 MB, Parquet (pyarrow 26, zstd level 19, the shared fields in
the schema's metadata) 6.30 MB without the keys, which this format keeps. The floats of the
success curves are what is left, and Parquet would need pyarrow (tens of MB) to read a
reference, so the references ship as gzip JSON lines that the standard library reads.

A compact file is read only (it is a shipped artefact): appends go to JSON lines files. It is
untrusted input like any file on disk: its compressed and decompressed sizes are bounded, and
it is decompressed incrementally so a small file cannot expand without limit.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from baselines.lib import untrusted

FORMAT = "routine-envs runs 1"
SUFFIX = ".jsonl.gz"
ORDER_FIELD = "#fields"
"""A row's own field order, where it differs from the header's (never a record field name)."""
MAX_FILE_BYTES = 100_000_000
MAX_DECODED_BYTES = 1_000_000_000
"""A compact file larger than this, or decompressing to more, is refused (the largest
reference file is about 5 MB as JSON lines)."""


class InvalidCompactFile(ValueError):
    """A file that is not a compact runs file (the message names it and says why)."""


def is_compact(path: Path) -> bool:
    """Whether ``path`` names a compact runs file (by its suffix)."""
    return Path(path).name.endswith(SUFFIX)


def runs_path(folder: Path, stem: str) -> Path:
    """The runs file ``stem`` in ``folder``: ``<stem>.jsonl.gz`` where it exists (shipped
    references), else ``<stem>.jsonl`` (computed runs, and where new runs are written)."""
    compact_path = Path(folder) / f"{stem}{SUFFIX}"
    return compact_path if compact_path.is_file() else Path(folder) / f"{stem}.jsonl"


def encode(data: bytes) -> bytes:
    """The compact (uncompressed) text of JSON lines ``data``: header, then each row's own
    fields. ``ValueError`` when a line is not a JSON object."""
    rows = [json.loads(line) for line in data.splitlines() if line.strip()]
    if not all(isinstance(row, dict) for row in rows):
        raise ValueError("every line must be a JSON object")
    fields = list(rows[0]) if rows else []
    shared = {
        name: rows[0][name]
        for name in fields
        if all(name in row and row[name] == rows[0][name] for row in rows)
    }
    if ORDER_FIELD in fields:
        raise ValueError(f"a row has a field named {ORDER_FIELD!r}")
    lines = [json.dumps({"format": FORMAT, "fields": fields, "shared": shared})]
    for row in rows:
        own = {name: value for name, value in row.items() if name not in shared}
        if list(row) != fields:
            own[ORDER_FIELD] = list(row)
        lines.append(json.dumps(own))
    return ("\n".join(lines) + "\n").encode()


def decode(text: bytes, where: str = "compact runs") -> bytes:
    """The JSON lines (one ``json.dumps`` of each row, in order) of compact text ``text``;
    :class:`InvalidCompactFile` naming ``where`` when it is not one."""
    lines = text.split(b"\n")
    try:
        header = json.loads(lines[0])
    except ValueError as err:
        raise InvalidCompactFile(f"{where}: its header is not JSON ({err})") from None
    if (
        not isinstance(header, dict)
        or header.get("format") != FORMAT
        or not isinstance(header.get("fields"), list)
        or not isinstance(header.get("shared"), dict)
    ):
        raise InvalidCompactFile(f"{where}: not a {FORMAT!r} file (its first line)")
    fields, shared = header["fields"], header["shared"]
    out = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            own = json.loads(line)
            order = own.pop(ORDER_FIELD, fields)
            row = {name: own[name] if name in own else shared[name] for name in order}
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise InvalidCompactFile(f"{where}: line {number} is not a row ({err!r})") from None
        out.append(json.dumps(row).encode())
    return b"".join(line + b"\n" for line in out)


def read_lines(path: Path) -> bytes:
    """The JSON lines of compact file ``path`` (bounded, as untrusted input);
    :class:`InvalidCompactFile` naming the file when it is not one."""
    compressed = untrusted.read_regular_file(Path(path), MAX_FILE_BYTES, str(path))
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip, one member
    try:
        text = inflate.decompress(compressed, MAX_DECODED_BYTES + 1)
    except zlib.error as err:
        raise InvalidCompactFile(f"{path}: not gzip data ({err})") from None
    if len(text) > MAX_DECODED_BYTES or inflate.unconsumed_tail:
        raise InvalidCompactFile(f"{path}: decompresses to more than {MAX_DECODED_BYTES} bytes")
    if not inflate.eof:
        raise InvalidCompactFile(f"{path}: truncated gzip data")
    return decode(text, str(path))


def compress(data: bytes) -> bytes:
    """``data`` compressed as one gzip member, the same bytes for the same input (no time
    stamp, level 9)."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def pack(data: bytes, where: str = "runs") -> bytes:
    """JSON lines ``data`` as a compact file's bytes, checked to decode to ``data`` exactly;
    ``ValueError`` naming ``where`` and the first line that would not come back (a partial last
    line, or a line that is not the ``json.dumps`` of its row)."""
    if data and not data.endswith(b"\n"):
        raise ValueError(f"{where}: its last line is partial")
    packed = encode(data)
    want = [line for line in data.splitlines() if line.strip()]
    back = decode(packed, where).splitlines()
    if back != want:
        first = next(
            (n for n, (a, b) in enumerate(zip(want, back, strict=False), 1) if a != b), len(want)
        )
        raise ValueError(f"{where}: line {first} is not the json.dumps of its row")
    return compress(packed)


def compact_name(path: Path) -> Path:
    """Where JSON lines file ``path`` (``<stem>.jsonl``) goes compacted: ``<stem>.jsonl.gz``."""
    return Path(path).with_name(Path(path).name.removesuffix(".jsonl") + SUFFIX)
