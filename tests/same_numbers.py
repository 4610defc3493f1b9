"""Same numbers before and after a refactoring: run ``make demo``'s job, a small SNR-lab
measurement, a small rho-law and a small detector score from one source tree, then compare the
files two such runs wrote, byte for byte.

    python tests/same_numbers.py run SOURCE_TREE OUT [RUN...]  # a checkout of main, then yours
    python tests/same_numbers.py compare OUT_A OUT_B      # exit status 1 when a file differs

Every command is run as ``python -m baselines COMMAND`` with the source tree first on the path
and as the working folder, so each run uses that tree's code. Compared: every CSV, Markdown,
PNG and ``summary.json`` (the tables, figures and summaries); the JSON-lines records are
compared after dropping what measures time (``wall_time``, ``seconds``) and what names the
code (``key``, ``code``: fingerprints and run keys change when the code moves, by design), and
so is a CSV with a time column (the detectors' ``seconds``), without it; any other CSV, every
Markdown table, figure and summary byte for byte.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

RUNS = {
    "demo": ["baselines", "demo", "--workers", "2"],
    "measure": [
        "baselines", "snr_lab", "measure", "--env-id", "CodeFix-v1", "--routine-lengths",
        "2", "6", "--estimators", "trajectory_mc", "rloo", "gigpo", "oracle", "gae",
        "trajectory_exact", "--policy", 'mixture{"eps": 0.3}', "--episodes", "4000",
        "--workers", "2",
    ],
    "rho_law": [
        "baselines", "snr_lab", "rho-law", "--routine-lengths", "0", "3", "10", "--episodes",
        "4000", "--workers", "2",
    ],
    "detectors": [
        "baselines", "detectors", "score", "--routine-lengths", "3", "--detectors", "annotations",
        "random", "entropy", "group_variance", "mc_spread", "--groups", "16", "--batches", "2",
        "--resamples", "50", "--workers", "1",
    ],
}  # fmt: skip
"""Each run's command (its ``--out`` is added)."""
VOLATILE = {"wall_time", "cpu_time", "seconds", "key", "code", "source"}


def run(source: Path, out: Path, names: list[str]) -> None:
    """The runs ``names`` of :data:`RUNS` (default: every one) from ``source`` into
    ``out/<name>``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    for name, argv in RUNS.items():
        if names and name not in names:
            continue
        folder = out / name
        print(f"== {name}: {' '.join(argv)}", flush=True)
        with (out / f"{name}.log").open("w") as log:
            done = subprocess.run(
                [sys.executable, "-m", *argv, "--out", str(folder)],
                cwd=source,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if done.returncode != 0:
            raise SystemExit(f"{name} failed (exit {done.returncode}): see {out}/{name}.log")


def stable(path: Path) -> bytes:
    """What is compared of a file: its bytes, or, for JSON lines, each record without the
    :data:`VOLATILE` fields (sorted by the rest, as runs finish in any order)."""
    if path.suffix == ".csv":  # a time column (the detectors' seconds) is never the same
        lines = path.read_text().splitlines(keepends=True)
        header = next(csv.reader(lines[:1]), [])
        if not VOLATILE & set(header):
            return path.read_bytes()
        keep = [i for i, name in enumerate(header) if name not in VOLATILE]
        rows = [[row[i] for i in keep] for row in csv.reader(lines)]
        return json.dumps(rows).encode()
    if path.suffix != ".jsonl":
        return path.read_bytes()
    rows = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        rows.append(json.dumps(strip(record), sort_keys=True))  # records: dicts at the top
    return "\n".join(sorted(rows)).encode()


def strip(value: object, top: bool = True) -> object:
    """``value`` without the :data:`VOLATILE` fields; at the top of a record, an old
    ``routine_length`` named as records name the density now (``density_kwarg``,
    ``density_value``), and a detector record's configured ``rho`` (added with those fields)
    left out."""
    if not isinstance(value, dict):
        return [strip(v, False) for v in value] if isinstance(value, list) else value
    if top and "routine_length" in value and "density_value" not in value:
        value = {
            **value,
            "density_kwarg": "routine_length",
            "density_value": value["routine_length"],
        }
        del value["routine_length"]
    if top and "detectors" in value:
        value = {k: v for k, v in value.items() if k != "rho"}
    return {k: strip(v, False) for k, v in value.items() if k not in VOLATILE}


def compared(out: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every compared file under ``out``."""
    found = {}
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.suffix in (".csv", ".md", ".png", ".json", ".jsonl"):
            if ".rejected" in path.name or ".unsaved" in path.name:
                continue
            found[path.relative_to(out).as_posix()] = hashlib.sha256(stable(path)).hexdigest()
    return found


def compare(a: Path, b: Path) -> int:
    """Print every file that differs or exists on one side only; 0 when none does."""
    left, right = compared(a), compared(b)
    differ = sorted(k for k in set(left) & set(right) if left[k] != right[k])
    only = sorted(set(left) ^ set(right))
    for name in sorted(set(left) | set(right)):
        state = "DIFFERS" if name in differ else "ONE SIDE" if name in only else "same"
        print(f"{state:<8}  {name}")
    print(f"\n{len(set(left) & set(right)) - len(differ)} files identical, {len(differ)} differ, "
          f"{len(only)} on one side only")  # fmt: skip
    return 1 if differ or only else 0


if __name__ == "__main__":
    command, first, second = sys.argv[1:4]
    if command == "run":
        run(Path(first).resolve(), Path(second).resolve(), sys.argv[4:])
    else:
        sys.exit(compare(Path(first), Path(second)))
