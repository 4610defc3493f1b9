"""The results file: append-only JSON lines, fsynced, with rejected lines kept aside.

A sweep killed halfway leaves at worst a partial last line: :meth:`ResultsFile.load` reports it,
moves it (and any corrupt or duplicate line) to ``<name>.rejected.jsonl`` and rewrites the file
atomically with the good records, so the run is done again and nothing is lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class ResultsFile:
    """An append-only JSON-lines file of run records that survives interruptions.

    Every record is one line with a unique ``key`` and the ``required`` fields; each append is
    flushed and fsynced before returning."""

    def __init__(self, path: Path, required: tuple[str, ...] = ("key",)) -> None:
        self.path = path
        self.required = required
        self.rejected = path.with_name(path.stem + ".rejected.jsonl")

    def load(self, report: Any = print) -> list[dict[str, Any]]:
        """The good records. Corrupt, partial or duplicate lines are reported, moved to
        ``*.rejected.jsonl`` and removed from the file (rewritten atomically)."""
        if not self.path.exists():
            return []
        good, bad, seen = [], [], set()
        lines = self.path.read_bytes().split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                missing = [k for k in self.required if k not in record]
                if missing:
                    raise ValueError(f"missing fields {missing}")
            except ValueError as err:
                last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
                kind = "partial last line" if last else "corrupt line"
                report(f"{self.path}: {kind} {number} ({err}); moved to {self.rejected.name}")
                bad.append(raw)
                continue
            if record["key"] in seen:
                report(
                    f"{self.path}: duplicate run on line {number}; moved to {self.rejected.name}"
                )
                bad.append(raw)
                continue
            seen.add(record["key"])
            good.append(record)
        if bad or (lines and lines[-1] != b""):
            with self.rejected.open("ab") as f:
                for raw in bad:
                    f.write(raw + b"\n")
            tmp = self.path.with_name(self.path.name + ".tmp")
            with tmp.open("wb") as f:
                for record in good:
                    f.write(json.dumps(record).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.path)
        return good

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line, flushed to disk before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as f:
            f.write(json.dumps(record).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
