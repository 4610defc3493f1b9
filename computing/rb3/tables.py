"""The tables docs/benchmark.md quotes from a tier's computed rb3 references (Markdown on stdout).

    python computing/rb3/tables.py doors baselines/references/rb3/lite
    python computing/rb3/tables.py tuned baselines/references/rb3/lite
    python computing/rb3/tables.py cost baselines/references/rb3/lite SEARCH_OUT lite

- ``doors``: Diluted Doors at the tier's lowest density, per number of floors: trajectory_mc
  over oracle and over ppo, and the dilution exponents at the joint and per-decision targets,
  default and tuned columns (``scores.ratio_to``, ``scores.dilution_exponent``: the
  leaderboard's functions).
- ``tuned``: per method and setting family, the chosen values and their objective against the
  default's (from ``<method>+tuned.json``).
- ``cost``: the rows' own CPU per method: default column, search (``SEARCH_OUT``, the ``--out``
  of ``benchmark tune``), tuned column (a tuned run copied from a default one costs nothing).

Methods reading privileged fields are marked with them in every table.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import scores
from baselines.lib import compact_runs

FAMILIES = {
    "DilutedDoors-v1{}": "Diluted Doors",
    "RoutineGrid-v1{}": "Routine Grid",
    'CodeFix-v1{"signal_noise": 0.0}': "CodeFix",
}


def rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results file ``X.jsonl``, or of its compact form ``X.jsonl.gz`` where only
    that is there (a shipped folder); none when neither is."""
    packed = path.with_name(path.name + ".gz")
    if path.exists():
        text = path.read_bytes()
    elif packed.exists():
        text = compact_runs.read_lines(packed)
    else:
        return []
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def mark(path: Path) -> str:
    """The method of a references file, with the privileged fields its rows read."""
    first = rows(path)[0]
    fields = first["privileged_fields"]
    return f"`{first['method']}`" + (f" (privileged: {', '.join(fields)})" if fields else "")


def defaults(refs: Path) -> list[Path]:
    """The default-column files of a references folder (``X.jsonl``, for ``X.jsonl.gz`` too)."""
    names = {p.name.removesuffix(".gz") for p in [*refs.glob("*.jsonl"), *refs.glob("*.jsonl.gz")]}
    return sorted(refs / n for n in names if not n.endswith("+tuned.jsonl"))


def doors(refs: Path) -> None:
    for column, suffix in (("default", ".jsonl"), ("tuned", "+tuned.jsonl")):
        runs = {
            m: [r for r in rows(refs / f"{m}{suffix}") if r["env_id"] == "DilutedDoors-v1"]
            for m in ("ppo", "trajectory_mc", "oracle")
        }
        scored = {m: scores.method_scores(r)["settings"] for m, r in runs.items()}
        for floors in (1, 2, 4):
            setting = f'DilutedDoors-v1{{"num_floors": {floors}}}'
            lowest = {m: s[setting]["rows"][-1] for m, s in scored.items() if setting in s}
            line = {"rho": lowest["trajectory_mc"]["rho"]}
            for ref in ("oracle", "ppo"):
                ratio = scores.ratio_to(lowest["trajectory_mc"], lowest[ref])
                line[f"trajectory_mc / {ref}"] = scores.ratio_text(ratio)
            for m in ("trajectory_mc", "oracle"):
                joint = scored[m][setting]["exponent"]
                decision = scores.method_scores(
                    scores.per_decision(runs[m], {setting: floors}, 0.9)
                )["settings"][setting]["exponent"]
                line[f"exponent {m}"] = (
                    f"{scores.exponent_text(joint, why=False)} / "
                    f"{scores.exponent_text(decision, why=False)}"
                )
            print(column, floors, json.dumps(line))


def tuned(refs: Path) -> None:
    print("| method | " + " | ".join(FAMILIES.values()) + " |")
    print("|---" * (len(FAMILIES) + 1) + "|")
    for path in sorted(refs.glob("*+tuned.json")):
        chosen = json.loads(path.read_text())["chosen"]
        cells = []
        for family in FAMILIES:
            pick = chosen[family]
            v = pick["chosen"]
            tag = " (default)" if v == pick["default"] else ""
            cells.append(
                f"{v['learning_rate']:g}, {v['ent_coef']:g}{tag}: "
                f"{pick['auc']:.3f} vs {pick['default_auc']:.3f}"
            )
        method = mark(refs / (path.name.removesuffix("+tuned.json") + ".jsonl"))
        print(f"| {method} | " + " | ".join(cells) + " |")


def cost(refs: Path, out: Path, tier: str) -> None:
    total = {"default": 0.0, "search": 0.0, "tuned": 0.0}
    print("| method | default | search | tuned | runs (default / search / tuned, copied) |")
    print("|---|---|---|---|---|")
    missing = []
    for path in defaults(refs):
        slug = path.name.removesuffix(".jsonl")
        default = rows(path)
        keys = {r["key"] for r in default}
        search_file = out / "rb3" / tier / f"{slug}+tuning" / "results.jsonl"
        search = rows(search_file) if search_file.is_file() else None
        tuned_ = rows(refs / f"{slug}+tuned.jsonl")
        copied = sum(r["key"] in keys for r in tuned_)
        parts = (
            sum(r["cpu_time"] for r in default),
            None if search is None else sum(r["cpu_time"] for r in search),
            sum(r["cpu_time"] for r in tuned_ if r["key"] not in keys),
        )
        for name, seconds in zip(total, parts, strict=True):
            total[name] += seconds or 0.0
        if search is None:  # not kept: never printed as 0
            missing.append(mark(path))
        minutes = " | ".join("not kept" if p is None else f"{p / 60:.1f} min" for p in parts)
        searched = "-" if search is None else len(search)
        counts = f"{len(default)} / {searched} / {len(tuned_)}, {copied}"
        print(f"| {mark(path)} | {minutes} | {counts} |")
    hours = {k: round(v / 3600, 3) for k, v in total.items()}
    print(f"\nCPU-hours: {hours}; in all {sum(total.values()) / 3600:.2f}")
    if missing:
        print(f"(search not kept for {len(missing)} methods, left out of the search total: "
              f"{', '.join(missing)})")  # fmt: skip


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"doors": doors, "tuned": tuned, "cost": cost}[command](
        *(Path(a) if i < 2 else a for i, a in enumerate(args))
    )
