"""Run a command in a network namespace of its own with only the loopback interface up, and
record the peer of every connection made in it.

Ray connects its own processes through the machine's network-interface address, even for a
local instance (``--node-ip-address=127.0.0.1`` is ignored on Linux); in a namespace whose only
interface is ``lo`` it uses 127.0.0.1. Every Ray test and benchmark of this suite runs there and
checks that no connection had a peer outside 127.0.0.0/8.

:func:`run` makes the namespace with ``unshare -n`` (as root; else ``unshare -rn``, a user
namespace, where the kernel allows it) and runs this file inside it as a watcher: it brings
``lo`` up, runs the command, reads ``ss -tuanH`` every ``poll`` seconds while it runs and once
after, ends every process still in the namespace (Ray's daemons: the namespace dies with them)
and writes what it saw to a report file. A command still running at ``timeout`` is killed and
the watcher says so on stderr (its exit status is then ``-9``, 247 to a shell); Python children
run unbuffered, so what they printed before is kept. The watcher
(``python -m baselines.lib.loopback``, its flags from :mod:`routine_envs.cli`) refuses to start
outside a namespace :func:`run` made (:func:`own_namespace`): ending every process of its
namespace anywhere else would end every process of the machine.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
WATCHER_MARK = "ROUTINE_ENVS_LOOPBACK_WATCHER"
"""Set by :func:`run` in the watcher's environment; the watcher refuses to start without it."""
_UNSHARE_FLAGS: list[list[str]] = [["-n"], ["-rn"]]


def unavailable() -> str | None:
    """Why no loopback-only network namespace can be made here, or ``None`` when it can."""
    return _namespace_flags()[1]


def _namespace_flags() -> tuple[list[str] | None, str | None]:
    if not sys.platform.startswith("linux"):
        return None, f"network namespaces need Linux (this is {sys.platform})"
    missing = [tool for tool in ("unshare", "ip", "ss") if shutil.which(tool) is None]
    if missing:
        return None, f"{', '.join(missing)} not found (util-linux, iproute2)"
    errors = []
    for flags in _UNSHARE_FLAGS:
        probe = subprocess.run(
            ["unshare", *flags, "--", "ip", "link", "set", "lo", "up"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0:
            return flags, None
        errors.append(f"unshare {' '.join(flags)}: {probe.stderr.strip() or probe.returncode}")
    return None, "cannot make a network namespace (" + "; ".join(errors) + ")"


def is_loopback(address: str) -> bool:
    """Whether ``address`` (as ``ss`` prints it, ``[::ffff:127.0.0.1]`` or ``127.0.0.1``,
    maybe with ``%lo``) is in 127.0.0.0/8, IPv4-mapped included."""
    host = address.strip("[]").split("%")[0]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip in LOOPBACK


def peers(ss_output: str) -> set[str]:
    """The peers (``host:port``) of the connections in ``ss -tuanH`` output (listening and
    unconnected sockets, whose peer port is ``*``, left out)."""
    found = set()
    for line in ss_output.splitlines():
        cols = line.split()
        if len(cols) >= 6 and not cols[5].endswith(":*"):
            found.add(cols[5])
    return found


@dataclass
class Outcome:
    """What :func:`run` saw: the command's exit status and output, the peers of its
    connections, the interfaces of the namespace and the processes left that it ended."""

    returncode: int
    stdout: str
    stderr: str
    peers: list[str] = field(default_factory=list)
    """Every distinct peer (``host:port``) seen."""
    interfaces: list[str] = field(default_factory=list)
    ended: int = 0
    seconds: float = 0.0
    """Wall time of the whole run (namespace, command and clean-up)."""
    timed_out: bool = False
    """The command ran past its timeout and was killed."""

    def outside(self) -> list[str]:
        """The peers outside 127.0.0.0/8 (the rule: none)."""
        return [p for p in self.peers if not is_loopback(p.rpartition(":")[0])]

    def describe(self, limit: int = 4000) -> str:
        """How the command ended, its wall time and the end of both output streams."""
        how = f"exit status {self.returncode}" + (
            " (killed at its timeout)" if self.timed_out else ""
        )

        def end(text: str) -> str:
            text = text.rstrip()
            return (text[-limit:] if len(text) > limit else text) or "(empty)"

        return (
            f"{how} after {self.seconds:.1f} s; {self.ended} process(es) of the namespace ended"
            f"\n--- stdout ---\n{end(self.stdout)}\n--- stderr ---\n{end(self.stderr)}"
        )


def run(
    argv: list[str],
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    poll: float = 0.2,
    capture: bool = True,
) -> Outcome:
    """Run ``argv`` in a new loopback-only network namespace (see the module docstring);
    ``RuntimeError`` with the reason when none can be made. ``timeout`` seconds at most: then
    the command and everything in the namespace are ended (exit status -9). ``capture``:
    keep its output in the outcome, else let it through to this process's."""
    flags, reason = _namespace_flags()
    if flags is None:
        raise RuntimeError(reason)
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        watcher = [sys.executable, "-m", "baselines.lib.loopback", "--report", str(report)]
        watcher += ["--timeout", str(timeout), "--poll", str(poll)]
        root = str(Path(__file__).resolve().parents[2])  # this checkout's baselines, found
        base = dict(os.environ if env is None else env)
        base["PYTHONPATH"] = os.pathsep.join(p for p in (root, base.get("PYTHONPATH")) if p)
        base[WATCHER_MARK] = "1"
        base.setdefault("PYTHONUNBUFFERED", "1")  # output printed before a kill is kept
        start = time.monotonic()
        proc = subprocess.run(
            ["unshare", *flags, "--", *watcher, "--", *argv],
            cwd=cwd,
            env=base,
            capture_output=capture,
            text=True,
            timeout=timeout + 60,
        )
        seen = json.loads(report.read_text()) if report.exists() else {}
    return Outcome(
        returncode=proc.returncode,
        stdout=proc.stdout or "",
        stderr=proc.stderr or "",
        peers=seen.get("peers", []),
        interfaces=seen.get("interfaces", []),
        ended=seen.get("ended", 0),
        seconds=time.monotonic() - start,
        timed_out=bool(seen.get("timed_out", False)),
    )


def _namespace_processes() -> list[int]:
    """The other processes in this process's network namespace."""
    mine = os.readlink("/proc/self/ns/net")
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.readlink(entry / "ns" / "net") == mine:
                pids.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            continue
    return pids


def _end_namespace() -> int:
    """SIGKILL every other process of the namespace until none is left; how many there were."""
    ended: set[int] = set()
    for _ in range(50):
        pids = _namespace_processes()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                ended.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return len(ended)


def own_namespace() -> str | None:
    """Why this process is not in a network namespace of its own (one :func:`run` made), or
    ``None`` when it is: the watcher ends every process of its namespace at the end, which
    outside one would be every process of the machine."""
    if os.environ.get(WATCHER_MARK) != "1":
        return f"{WATCHER_MARK} is not set (the watcher is started by loopback.run only)"
    try:
        mine = os.readlink("/proc/self/ns/net")
        parent = os.readlink(f"/proc/{os.getppid()}/ns/net")  # run()'s process: outside
    except OSError as err:  # no /proc: cannot tell, so refuse
        return f"cannot compare network namespaces ({err})"
    if mine == parent:
        return "this process shares its parent's network namespace"
    return None


class _Stopped(Exception):
    """The watcher was asked to stop (SIGTERM or SIGHUP, or its parent died)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signal.Signals(signum).name)


def _die_with_parent() -> None:
    """Have Linux send this process SIGTERM when the process that started it dies
    (``prctl(PR_SET_PDEATHSIG)``), so a killed test run still ends the namespace."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # no Linux libc: the timeout bounds it
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def _watch(report: Path, timeout: float, poll: float, argv: list[str]) -> int:
    """The watcher, inside the namespace: ``lo`` up, run ``argv``, collect the peers. Refuses
    (``RuntimeError``) outside a namespace of its own (:func:`own_namespace`), before it starts
    anything or ends anything. Stopped (SIGTERM, SIGHUP, its parent's death) or at
    ``timeout``, it kills the command, says so on stderr, and still ends the namespace."""
    why = own_namespace()
    if why is not None:
        raise RuntimeError(f"the loopback watcher runs only inside its own namespace: {why}")
    _die_with_parent()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    interfaces = subprocess.run(
        ["ip", "-o", "link", "show", "up"], capture_output=True, text=True
    ).stdout
    seen: set[str] = set()
    child = subprocess.Popen(argv)
    deadline = time.monotonic() + timeout
    stopped = None
    try:
        while child.poll() is None and time.monotonic() < deadline:
            seen |= peers(subprocess.run(["ss", "-tuanH"], capture_output=True, text=True).stdout)
            time.sleep(poll)
    except _Stopped as err:
        stopped = str(err)
    for signum in (signal.SIGTERM, signal.SIGHUP):  # the clean-up below runs to its end
        signal.signal(signum, signal.SIG_IGN)
    timed_out = child.poll() is None and stopped is None
    if child.poll() is None:
        child.kill()
        reason = f"the watcher got {stopped}" if stopped else f"its timeout of {timeout} s"
        # stderr may be a pipe whose reader is gone (a killed test run): clean up anyway
        with contextlib.suppress(OSError):
            print(
                f"loopback watcher: the command was still running at {reason}: killed "
                f"({' '.join(argv)[:200]})",
                file=sys.stderr,
                flush=True,
            )
    returncode = child.wait()
    seen |= peers(subprocess.run(["ss", "-tuanH"], capture_output=True, text=True).stdout)
    ended = _end_namespace()
    names = [line.split(":")[1].strip() for line in interfaces.splitlines() if ":" in line]
    report.write_text(
        json.dumps(
            {"peers": sorted(seen), "interfaces": names, "ended": ended, "timed_out": timed_out}
        )
    )
    return returncode


@dataclass
class WatchSettings:
    """The watcher inside the namespace: bring ``lo`` up, run a command, record the peers of
    its connections (what :func:`run` starts; not a command for people)."""

    report: Path = field(metadata={"help": "the JSON file the watcher writes what it saw to"})
    timeout: float = field(metadata={"help": "seconds the command may run", "min": 0})
    poll: float = field(metadata={"help": "seconds between two looks at the connections"})
    command: list[str] = field(
        default_factory=list,
        metadata={"help": "the command to run (after --)", "positional": True, "remainder": True},
    )


def watch_main(argv: list[str] | None = None) -> int:
    """``python -m baselines.lib.loopback --report R --timeout T --poll P -- COMMAND...``."""
    from routine_envs.cli import parse_settings

    args = parse_settings(WatchSettings, argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise SystemExit("error: no command to run after --")
    return _watch(args.report, args.timeout, args.poll, command)


if __name__ == "__main__":
    sys.exit(watch_main())
