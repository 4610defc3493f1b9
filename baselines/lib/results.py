"""The results file: append-only JSON lines, fsynced, with rejected lines kept aside.

Every row is validated where it enters, when it is read and when it is written: a JSON object
with a string ``key``, the required fields of the right kinds, only finite numbers (no NaN, no
infinity anywhere), and whatever the experiment's ``check`` asks. A sweep killed halfway leaves
at worst a partial last line: :meth:`ResultsFile.load` reports it, moves it (and any malformed,
non-finite or duplicate line, whatever its kind) to ``<name>.rejected.jsonl`` with its line
number and the reason, and rewrites the file atomically with the good rows, so the run is done
again and nothing is lost. Where the folder cannot be written, nothing is moved and the report
says so. A record that cannot be appended (a full disk, a file made read-only meanwhile) is
kept in a fallback file whose path is reported.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Kind = str
"""A field's kind: ``"str"``, ``"int"``, ``"number"``, ``"numbers"`` (a list of numbers),
``"list"``, ``"dict"`` or ``"any"``."""
Schema = Mapping[str, Kind]
Check = Callable[[dict[str, Any]], None]
"""An experiment's own check of a row: raises ``ValueError`` with the reason."""


class InvalidRecord(ValueError):
    """A row that is not a valid record (the message is the reason)."""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


KINDS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "numbers": lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def non_finite(value: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinite number inside ``value`` (``"success[3]"``), or
    ``None`` when every number is finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "value"
    if isinstance(value, dict):
        for k, v in value.items():
            found = non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = non_finite(v, f"{where}[{i}]")
            if found:
                return found
    return None


def validate(record: Any, schema: Schema, check: Check | None = None) -> dict[str, Any]:
    """``record`` if it is a valid row, else :class:`InvalidRecord` with the reason."""
    if not isinstance(record, dict):
        raise InvalidRecord(f"not a JSON object (a {type(record).__name__})")
    for name, kind in {"key": "str", **schema}.items():
        if name not in record:
            raise InvalidRecord(f"missing field {name!r}")
        if not KINDS[kind](record[name]):
            raise InvalidRecord(f"field {name!r} must be {kind}, got {record[name]!r:.60}")
    where = non_finite(record)
    if where:
        raise InvalidRecord(f"number at {where} is not finite")
    if check is not None:
        try:
            check(record)
        except Exception as err:  # an experiment's check: any failure is a reason
            raise InvalidRecord(str(err) or type(err).__name__) from None
    return record


class ResultsFile:
    """An append-only JSON-lines file of run records that survives interruptions.

    Every record is one line with a unique string ``key`` and the ``required`` fields (names, or
    a mapping of names to :data:`Kind`), validated on read and on write (see the module
    docstring); each append is flushed and fsynced before returning."""

    def __init__(
        self,
        path: Path,
        required: tuple[str, ...] | Schema = ("key",),
        check: Check | None = None,
    ) -> None:
        self.path = Path(path)
        self.schema: Schema = (
            dict(required) if isinstance(required, Mapping) else dict.fromkeys(required, "any")
        )
        self.check = check
        self.rejected = self.path.with_name(self.path.stem + ".rejected.jsonl")

    def validate(self, record: Any) -> dict[str, Any]:
        """``record`` if valid; :class:`InvalidRecord` with the reason otherwise."""
        return validate(record, self.schema, self.check)

    def check_writable(self) -> None:
        """Make sure records can be appended (the folder created if need be), before any work;
        ``ValueError`` saying why not."""
        where = self.path.parent
        try:
            where.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ValueError(f"cannot write results into {where}: a file is in the way") from None
        except OSError as err:
            raise ValueError(f"cannot create the results folder {where}: {err}") from None
        if self.path.is_dir():
            raise ValueError(f"cannot write results to {self.path}: it is a directory")
        try:
            with self.path.open("ab"):
                pass
        except OSError as err:
            raise ValueError(f"cannot write results to {self.path}: {err}") from None

    def load(self, report: Callable[[str], Any] = print) -> list[dict[str, Any]]:
        """The good records. Malformed, non-finite, partial or duplicate lines are reported and
        moved to ``*.rejected.jsonl`` (line number and reason) and the file is rewritten
        atomically; where that cannot be written, nothing is moved and the report says so."""
        if not self.path.exists():
            return []
        good, bad, seen = [], [], set()
        lines = self.path.read_bytes().split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = self.validate(json.loads(raw))
            except Exception as err:  # JSON errors, recursion, invalid rows: any is a reason
                last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
                kind = "partial last line" if last else "corrupt line"
                bad.append((number, raw, f"{kind} {number}: {err}"))
                continue
            if record["key"] in seen:
                bad.append((number, raw, f"line {number}: duplicate run"))
                continue
            seen.add(record["key"])
            good.append(record)
        if bad or (lines and lines[-1] != b""):
            try:
                self._reject([(n, raw.decode(errors="replace"), why) for n, raw, why in bad])
                tmp = self.path.with_name(self.path.name + ".tmp")
                with tmp.open("wb") as f:
                    for record in good:
                        f.write(json.dumps(record, allow_nan=False).encode() + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                tmp.replace(self.path)
            except OSError as err:
                for _, _, why in bad:
                    report(f"{self.path}: {why}; left in place (cannot move it: {err})")
                return good
            for _, _, why in bad:
                report(f"{self.path}: {why}; moved to {self.rejected.name}")
        return good

    def _reject(self, entries: list[tuple[int | None, str, str]]) -> None:
        """Append ``(line number, text, reason)`` entries to the rejected file."""
        if not entries:
            return
        with self.rejected.open("ab") as f:
            for number, text, why in entries:
                entry = {"file": self.path.name, "line": number, "reason": why, "text": text}
                f.write(json.dumps(entry).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def append(self, record: dict[str, Any], report: Callable[[str], Any] = print) -> bool:
        """Append one valid record as one line, flushed to disk before returning; ``True`` when
        it is in the file. An invalid record (a NaN success, ...) goes to the rejected file
        with its reason instead; a record that cannot be written is kept in a fallback file.
        Both are reported; ``False`` then."""
        try:
            self.validate(record)
        except InvalidRecord as err:
            text = json.dumps(record, default=repr)  # NaN is written as NaN: it is the evidence
            try:
                self._reject([(None, text, f"not written: {err}")])
                report(
                    f"{self.path}: record {record.get('key')!r} not written ({err}); kept in "
                    f"{self.rejected}"
                )
            except OSError as io_err:
                report(self._fallback(text, f"{err}; the rejected file failed too: {io_err}"))
            return False
        line = json.dumps(record, allow_nan=False).encode() + b"\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            report(self._fallback(line.decode().rstrip("\n"), str(err)))
            return False
        return True

    def _fallback(self, text: str, why: str) -> str:
        """Keep ``text`` in ``<name>.unsaved.jsonl`` beside the file, else in the temporary
        folder; the message saying where (or that it could not be kept at all)."""
        candidates = [
            self.path.with_name(self.path.stem + ".unsaved.jsonl"),
            Path(tempfile.gettempdir()) / f"{self.path.stem}.{os.getpid()}.unsaved.jsonl",
        ]
        for place in candidates:
            try:
                with place.open("ab") as f:
                    f.write(text.encode() + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                continue
            return f"cannot write {self.path} ({why}); the record was kept in {place}"
        return f"cannot write {self.path} ({why}) nor a fallback file; the record: {text}"
