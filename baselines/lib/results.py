"""The results file: append-only JSON lines, fsynced, locked, with rejected lines kept aside.

Every row is validated where it enters, when it is read and when it is written: a JSON object
with a string ``key``, the required fields of the right kinds, only finite numbers (no NaN, no
infinity anywhere), and whatever the experiment's ``check`` asks. A sweep killed halfway leaves
at worst a partial last line: :meth:`ResultsFile.load` reports it, moves it (and any malformed,
non-finite or duplicate line, whatever its kind) to ``<name>.rejected.jsonl`` with its line
number and the reason, and rewrites the file atomically with the good rows, so the run is done
again and nothing is lost. Where the folder cannot be written, nothing is moved and the report
says so; :meth:`ResultsFile.read` never writes anything (shipped references). A record that
cannot be appended (a full disk, a file made read-only meanwhile) is kept in a fallback file
whose path is reported.

Several processes may share one file (two sweeps on one ``--out``, a report read while a sweep
writes). Every append and every rewrite holds an advisory lock (``fcntl.flock`` on
``<name>.lock`` beside the file), and a rewrite re-reads the file under that lock, so it never
drops a line appended meanwhile; an append after a partial last line starts a new line. Runs
are *claimed* before they start (:meth:`ResultsFile.try_claim`: a lock per run key in
``<name>.claims/``, held while the run trains and released when its record is written, or when
the process ends however it ends), so two writers never train the same run. Without ``fcntl``
(not POSIX) there are no locks: one writer per file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from baselines.lib import compact_runs

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks
    fcntl = None  # type: ignore[assignment]

Kind = str
"""A field's kind: ``"str"``, ``"int"``, ``"number"``, ``"numbers"`` (a list of numbers),
``"list"``, ``"dict"`` or ``"any"``."""
Schema = Mapping[str, Kind]
Check = Callable[[dict[str, Any]], None]
"""An experiment's own check of a row: raises ``ValueError`` with the reason."""
Upgrade = Callable[[Any], Any]
"""A row as the current records have it, from a row as it was written (older field names):
applied when a row is read, before it is checked; the file itself is never rewritten for it."""


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


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` all or nothing: a temporary file in the same folder, fsynced,
    then renamed over ``path``; on any error the temporary file is removed and ``path`` is left
    as it was. The ``OSError`` (a full disk, no permission) names ``path``."""
    path = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte of ``data`` is written."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@contextlib.contextmanager
def _flock(path: Path, exclusive: bool, create: bool) -> Iterator[bool]:
    """Hold the advisory lock of the lock file ``path`` (exclusive or shared) for the body;
    ``True`` when held, ``False`` when it cannot be (no ``fcntl``, or the lock file cannot be
    opened: a read-only folder, or ``create`` is false and it does not exist)."""
    fd = None
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fd = os.open(path, (os.O_RDWR | os.O_CREAT) if create else os.O_RDONLY, 0o666)
    if fd is None:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield True
    finally:
        os.close(fd)  # releases the lock


class Claim:
    """This process's claim of one run (an exclusive ``flock`` on its claim file, which says
    who holds it); :meth:`release` it when the run's record is written or the run failed. The
    lock dies with the process, so a crashed run is free to be claimed again."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    def release(self, finished: bool) -> None:
        """Give the run up; ``finished``: its record is in the results file (the claim file is
        removed, while still held, so finished runs leave nothing behind)."""
        if self._fd is None:
            return
        if finished:
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self._fd)
        self._fd = None


def claim_holder(text: str) -> str:
    """Who holds a claim, from its file's text (``pid 123 on host``), bounded and printable."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = "".join(c for c in line[:120] if c.isprintable())
    return line or "another process (its pid not yet written)"


Position = tuple[int, int]
"""Where :meth:`ResultsFile.read_new` stopped: ``(inode, byte offset)``."""


class ResultsFile:
    """An append-only JSON-lines file of run records that survives interruptions and is safe to
    share between processes.

    Every record is one line with a unique string ``key`` and the ``required`` fields (names, or
    a mapping of names to :data:`Kind`), validated on read and on write (see the module
    docstring); each append is flushed and fsynced, under the file's lock, before returning."""

    def __init__(
        self,
        path: Path,
        required: tuple[str, ...] | Schema = ("key",),
        check: Check | None = None,
        upgrade: Upgrade | None = None,
    ) -> None:
        self.path = Path(path)
        self.upgrade = upgrade
        self.schema: Schema = (
            dict(required) if isinstance(required, Mapping) else dict.fromkeys(required, "any")
        )
        self.check = check
        self.rejected = self.path.with_name(self.path.stem + ".rejected.jsonl")
        self.failures = self.path.with_name(self.path.stem + ".failures.jsonl")
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.claims = self.path.with_name(self.path.name + ".claims")

    def validate(self, record: Any) -> dict[str, Any]:
        """``record`` if valid; :class:`InvalidRecord` with the reason otherwise."""
        return validate(record, self.schema, self.check)

    def lock(self) -> contextlib.AbstractContextManager[bool]:
        """The file's exclusive advisory lock, held for a ``with`` body (``True`` when held;
        ``False`` where it cannot be: a read-only folder, no ``fcntl``). Every append and rewrite
        takes it; hold it to write the file by other means. Not reentrant: never call
        :meth:`append` or :meth:`load` inside it."""
        return _flock(self.lock_path, exclusive=True, create=True)

    def check_writable(self) -> None:
        """Make sure records can be appended and runs claimed (the folder, lock file and claims
        folder created if need be), before any work; ``ValueError`` saying why not."""
        where = self.path.parent
        if compact_runs.is_compact(self.path):
            raise ValueError(f"cannot write results to {self.path}: a compact file is read only")
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
            with self.lock_path.open("ab"):
                pass
            self.claims.mkdir(exist_ok=True)
        except OSError as err:
            raise ValueError(f"cannot write results to {self.path}: {err}") from None

    def _read_row(self, raw: bytes) -> dict[str, Any]:
        """One line as a valid record (upgraded first); :class:`InvalidRecord` or a JSON error
        otherwise."""
        row = json.loads(raw)
        return self.validate(self.upgrade(row) if self.upgrade is not None else row)

    def _parse(self, data: bytes) -> tuple[list[dict[str, Any]], list[tuple[int, bytes, str]]]:
        """The good records of ``data`` and the bad lines ``(number, text, reason)``."""
        good, bad, seen = [], [], set()
        self._raw: dict[str, bytes] = {}
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = self._read_row(raw)
            except Exception as err:  # JSON errors, recursion, invalid rows: any is a reason
                last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
                kind = "partial last line" if last else "corrupt line"
                bad.append((number, raw, f"{kind} {number}: {err}"))
                continue
            if record["key"] in seen:
                bad.append((number, raw, f"line {number}: duplicate run"))
                continue
            seen.add(record["key"])
            self._raw[record["key"]] = raw.rstrip(b"\r")
            good.append(record)
        return good, bad

    def read(self, report: Callable[[str], Any] = print) -> list[dict[str, Any]]:
        """The good records, reading only: bad lines are reported and skipped, nothing is
        written (not even a lock file: for shipped or read-only files)."""
        if not self.path.exists():
            return []
        if compact_runs.is_compact(self.path):  # a shipped artefact: never written, no lock
            good, bad = self._parse(compact_runs.read_lines(self.path))
        else:
            with _flock(self.lock_path, exclusive=False, create=False):
                good, bad = self._parse(self.path.read_bytes())
        for _, _, why in bad:
            report(f"{self.path}: {why}; skipped (read only)")
        return good

    def load(self, report: Callable[[str], Any] = print) -> list[dict[str, Any]]:
        """The good records. Malformed, non-finite, partial or duplicate lines are reported and
        moved to ``*.rejected.jsonl`` (line number and reason) and the file is rewritten
        atomically, under the file's lock and from the file as it is then (so no append made
        meanwhile is lost); where the lock or the files cannot be written, nothing is moved and
        the report says so. A clean file is only read (nothing is written, no lock file), and
        so is a compact file (:mod:`~baselines.lib.compact_runs`), whatever it holds."""
        if not self.path.exists():
            return []
        if compact_runs.is_compact(self.path):
            return self.read(report)
        with _flock(self.lock_path, exclusive=False, create=False):
            data = self.path.read_bytes()
        good, bad = self._parse(data)
        if not (bad or (data and not data.endswith(b"\n"))):
            return good
        with self.lock() as held:
            data = self.path.read_bytes()  # again: appends may have come since
            good, bad = self._parse(data)
            if not (bad or (data and not data.endswith(b"\n"))):
                return good
            try:
                if not held:
                    raise OSError(f"cannot lock {self.lock_path}")
                self._reject([(n, raw.decode(errors="replace"), why) for n, raw, why in bad])
                write_atomic(  # the good lines as they were written (never upgraded)
                    self.path, b"".join(self._raw[r["key"]] + b"\n" for r in good)
                )
            except OSError as err:
                for _, _, why in bad:
                    report(f"{self.path}: {why}; left in place (cannot move it: {err})")
                return good
        for _, _, why in bad:
            report(f"{self.path}: {why}; moved to {self.rejected.name}")
        return good

    def read_new(self, since: Position | None = None) -> tuple[list[dict[str, Any]], Position]:
        """The valid records of the complete lines appended after ``since`` (a position this
        method returned; ``None``: from the start) and the new position, read under the shared
        lock. A file rewritten meanwhile (another inode, or shorter) is read from the start.
        Bad lines are skipped silently (:meth:`load` reports them)."""
        with _flock(self.lock_path, exclusive=False, create=False):
            try:
                with self.path.open("rb") as f:
                    stat = os.fstat(f.fileno())
                    offset = 0
                    if since is not None and since[0] == stat.st_ino and since[1] <= stat.st_size:
                        offset = since[1]
                    if since == (stat.st_ino, stat.st_size):
                        return [], since
                    f.seek(offset)
                    data = f.read()
            except FileNotFoundError:
                return [], (0, 0)
        complete = data[: data.rfind(b"\n") + 1]
        records = []
        for raw in complete.split(b"\n"):
            with contextlib.suppress(Exception):  # any bad line: load() reports it
                if raw.strip():
                    records.append(self._read_row(raw))
        return records, (stat.st_ino, offset + len(complete))

    def _reject(self, entries: list[tuple[int | None, str, str]]) -> None:
        """Append ``(line number, text, reason)`` entries to the rejected file (the caller holds
        the lock)."""
        if not entries:
            return
        with self.rejected.open("ab") as f:
            for number, text, why in entries:
                entry = {"file": self.path.name, "line": number, "reason": why, "text": text}
                f.write(json.dumps(entry).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def append(self, record: dict[str, Any], report: Callable[[str], Any] = print) -> bool:
        """Append one valid record as one line, under the lock, flushed to disk before
        returning; ``True`` when it is in the file. After a partial last line (a crash) the
        record starts a new line. An invalid record (a NaN success, ...) goes to the rejected
        file with its reason instead; a record that cannot be written is kept in a fallback
        file (and the file is left as it was). Both are reported; ``False`` then.
        ``ValueError`` for a compact file (read only)."""
        if compact_runs.is_compact(self.path):
            raise ValueError(f"cannot append to {self.path}: a compact file is read only")
        try:
            self.validate(record)
        except InvalidRecord as err:
            text = json.dumps(record, default=repr)  # NaN is written as NaN: it is the evidence
            try:
                with self.lock():
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
            with self.lock():
                self._append_line(line)
        except OSError as err:
            report(self._fallback(line.decode().rstrip("\n"), err.strerror or str(err)))
            return False
        return True

    def note_failure(
        self,
        key: str,
        error: str,
        report: Callable[[str], Any] = print,
        traceback: str = "",
    ) -> None:
        """Keep the failure of run ``key`` (its ``error``, one line, and its ``traceback``) in
        ``<name>.failures.jsonl``, one JSON line ``{"key", "error", "traceback", "time"}``, so
        that what became of a planned run, and where it raised, can be told later (a benchmark's
        drops manifest); a file that cannot be written is reported."""
        entry = {"key": key, "error": error, "traceback": traceback, "time": time.time()}
        line = json.dumps(entry) + "\n"
        try:
            with self.lock(), self.failures.open("a") as f:
                f.write(line)
        except OSError as err:
            report(f"{self.failures}: the failure of {key!r} not kept ({err})")

    def _append_line(self, line: bytes) -> None:
        """Append ``line`` (the caller holds the lock), after a newline if the file ends in a
        partial line; on failure the file is cut back to what it was."""
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            try:
                _write_all(fd, line)
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def try_claim(self, key: str) -> Claim | None:
        """Claim the run ``key`` for this process (a lock on its file in :attr:`claims`, which
        then says ``pid N on HOST``); ``None`` when a live process holds it (see
        :meth:`holder`). Re-read the results after claiming: the run may have been finished
        by another process just before."""
        if fcntl is None:
            return Claim(self.claim_path(key), None)
        self.claims.mkdir(parents=True, exist_ok=True)
        path = self.claim_path(key)
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False  # its holder finished and removed it as we opened it
            if not same:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
            return Claim(path, fd)

    def holder(self, key: str) -> str:
        """Who holds the claim of run ``key``, as its claim file says (``pid 123 on host``)."""
        try:
            text = self.claim_path(key).read_bytes()[:200].decode(errors="replace")
        except OSError:
            text = ""
        return claim_holder(text)

    def claim_path(self, key: str) -> Path:
        """The claim file of run ``key``."""
        return self.claims / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".claim")

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
