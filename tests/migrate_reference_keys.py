"""Rewrite the shipped references' run keys once, when the code fingerprint changes meaning
(from a hash of the source text to a hash of its syntax tree without docstrings:
:func:`routine_envs.plugins.text_fingerprint`). Numbers are untouched: only each row's
``estimator.code`` and the same field inside its ``key`` change, and only where the row's code
is this checkout's code (each part of the old fingerprint equals the text hash,
:func:`routine_envs.plugins.source_hash`, of the object it names now); any other row is left as
it is and listed.

    python tests/migrate_reference_keys.py            # rewrite baselines/references/**.jsonl.gz
    python tests/migrate_reference_keys.py --check    # exit 1 if a row would change

Then write each tier's manifest again and pin it (docs/benchmark.md).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from baselines.lib import compact_runs, data
from baselines.lib.specs import parse_method
from routine_envs import plugins


def parts_of(method: str, kwargs: dict[str, Any]) -> list[Any]:
    """The objects a method's code fingerprint covers, in order (its class, then what its
    ``code_dependencies`` name)."""
    spec = parse_method(method)
    obj = spec.estimator
    found = [obj]
    dependencies = getattr(obj, "code_dependencies", None)
    if dependencies is not None:
        found += list(dependencies(dict(kwargs)))
    return found


def migrated(row: dict[str, Any]) -> dict[str, Any] | None:
    """``row`` with its code fingerprint in the new meaning (``None``: nothing to change, or
    code that is not this checkout's)."""
    estimator = row.get("estimator") or {}
    code = estimator.get("code")
    if not code or code == "stable_baselines3":
        return None
    objects = parts_of(row["method"], estimator.get("kwargs") or {})
    old = code.split("+")
    if len(old) != len(objects) or any(
        plugins.source_hash(o) != part for o, part in zip(objects, old, strict=True)
    ):
        return None
    new = "+".join(plugins.code_fingerprint(o) for o in objects)
    if new == code:
        return None
    key = json.loads(row["key"])
    assert key["estimator"]["code"] == code
    key["estimator"]["code"] = new
    return {**row, "estimator": {**estimator, "code": new}, "key": json.dumps(key, sort_keys=True)}


def main(check: bool) -> int:
    changed, foreign = 0, 0
    for path in sorted(data.REFERENCES.glob(f"*/*/*{compact_runs.SUFFIX}")):
        lines = compact_runs.read_lines(path).decode().splitlines()
        out = []
        for line in lines:
            row = json.loads(line)
            new = migrated(row)
            if new is None:
                code = (row.get("estimator") or {}).get("code")
                foreign += code not in (None, "stable_baselines3") and not check
                out.append(line)
                continue
            changed += 1
            out.append(json.dumps(new))
        if not check and out != lines:
            text = "".join(f"{line}\n" for line in out).encode()
            path.write_bytes(compact_runs.pack(text, str(path)))
    print(f"{changed} rows {'to change' if check else 'changed'}; {foreign} left as they were")
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
