"""Child processes of the tests that say why they failed: every helper here keeps the child's
output, exit status and elapsed time, and a failed check or a timeout reports all of them
(never a bare ``CalledProcessError`` or an empty ``assert``).

Timeouts are a patience, not a measurement: :func:`patience` scales a time that is ample on an
idle machine by how loaded this one is now (the 1-minute load average over the CPUs this process
may use, at least 1) and by ``ROUTINE_ENVS_TEST_PATIENCE`` (a factor, default 1), so that a
suite run at load 20 on 2 cores waits ten times longer instead of failing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.lib.runner import usable_cpus

PATIENCE_VARIABLE = "ROUTINE_ENVS_TEST_PATIENCE"
"""A factor on every timeout of the tests' children (e.g. 3 on a slow machine)."""
SHOWN_CHARS = 4000
"""The end of each output stream shown in a failure message."""


def load_factor() -> float:
    """How many times over the CPUs are busy now (the 1-minute load average per usable CPU),
    at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        return 1.0
    return max(1.0, load / usable_cpus())


def patience(seconds: float) -> float:
    """``seconds`` (ample on an idle machine) scaled by :func:`load_factor` and
    :data:`PATIENCE_VARIABLE`."""
    try:
        factor = float(os.environ.get(PATIENCE_VARIABLE, "1"))
    except ValueError:
        factor = 1.0
    return seconds * max(factor, 1e-3) * load_factor()


def tail(text: str | bytes | None, limit: int = SHOWN_CHARS) -> str:
    """The last ``limit`` characters of a stream (``(empty)`` when there is nothing)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    text = (text or "").rstrip()
    if not text:
        return "(empty)"
    return text if len(text) <= limit else f"[{len(text) - limit} characters cut]\n{text[-limit:]}"


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def exit_status(returncode: int | None) -> str:
    """``exit status 1``; ``killed by SIGKILL`` for a negative code; for 129 to 255 the signal
    it may stand for (a shell's 128 + N, or a process that passed on a child's ``-N``: 247 is
    a SIGKILL); ``still running``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        return f"killed by {_signal_name(-returncode) or f'signal {-returncode}'}"
    if returncode > 128:
        for number in (returncode - 128, 256 - returncode):
            name = _signal_name(number) if 0 < number < 32 else None
            if name:
                return f"exit status {returncode} (a {name} passed on, it seems)"
    return f"exit status {returncode}"


def account(
    what: str,
    returncode: int | None,
    stdout: str | bytes | None,
    stderr: str | bytes | None,
    seconds: float,
    note: str = "",
) -> str:
    """A failure message: the command, how it ended, its elapsed time and load, both streams."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{what}: {exit_status(returncode)} after {seconds:.1f} s (load {load} on "
        f"{usable_cpus()} CPUs){f'; {note}' if note else ''}\n"
        f"--- stdout ---\n{tail(stdout)}\n--- stderr ---\n{tail(stderr)}"
    )


@dataclass
class Child:
    """A finished child process: its command, exit status, output and elapsed time."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def args(self) -> list[str]:
        """The command (as ``subprocess.CompletedProcess.args``)."""
        return self.argv

    def describe(self, note: str = "") -> str:
        """What became of it, for a failure message (:func:`account`)."""
        return account(
            _shown(self.argv), self.returncode, self.stdout, self.stderr, self.seconds, note
        )

    def check(self, note: str = "") -> Child:
        """This child, if it exited with status 0; else ``AssertionError`` saying all."""
        assert self.returncode == 0, self.describe(note)
        return self


class ChildTimedOut(AssertionError):
    """A child ran past its (already generous) timeout; the message has what it printed."""


def run(
    argv: Sequence[str | Path],
    timeout: float = 300,
    check: bool = False,
    **options: Any,
) -> Child:
    """Run ``argv`` to the end (text output captured), at most :func:`patience` of ``timeout``
    seconds; ``check``: its exit status must be 0. A timeout is :class:`ChildTimedOut` with the
    output so far; a failed check an ``AssertionError`` with everything (:func:`account`)."""
    argv = [str(a) for a in argv]
    options.setdefault("text", True)
    limit = patience(timeout)
    start = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, timeout=limit, **options)
    except subprocess.TimeoutExpired as err:
        raise ChildTimedOut(
            account(
                _shown(argv),
                None,
                err.stdout,
                err.stderr,
                time.monotonic() - start,
                f"timed out after {limit:.1f} s (patience for {timeout:g} s)",
            )
        ) from None
    child = Child(
        argv, done.returncode, done.stdout or "", done.stderr or "", time.monotonic() - start
    )
    return child.check() if check else child


def communicate(
    proc: subprocess.Popen, timeout: float = 300, what: str = "", started: float | None = None
) -> Child:
    """Wait for a started child (its output piped) at most :func:`patience` of ``timeout``
    seconds; on a timeout kill it and raise :class:`ChildTimedOut` with what it printed.
    ``started``: its ``time.monotonic()`` at start, for the elapsed time (default: now)."""
    argv = [str(a) for a in proc.args] if isinstance(proc.args, (list, tuple)) else [str(proc.args)]
    start = time.monotonic() if started is None else started
    limit = patience(timeout)
    try:
        stdout, stderr = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise ChildTimedOut(
            account(
                what or _shown(argv),
                None,
                stdout,
                stderr,
                time.monotonic() - start,
                f"timed out after {limit:.1f} s (patience for {timeout:g} s); killed",
            )
        ) from None
    return Child(argv, proc.returncode, _text(stdout), _text(stderr), time.monotonic() - start)


def _text(stream: str | bytes | None) -> str:
    return stream.decode(errors="replace") if isinstance(stream, bytes) else (stream or "")


def _shown(argv: Sequence[str]) -> str:
    """A command line for a message (long inline code cut)."""
    words = [w if len(w) <= 120 else w[:117] + "..." for w in argv]
    return " ".join(words)
