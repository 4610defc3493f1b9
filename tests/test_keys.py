"""Run keys identify behaviour, not source text (issue 37): a docstring, comment or layout edit
keeps every key (and so every shipped reference), any edit of what the code does changes it;
the one-time migration of the shipped keys left every number as it was."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from baselines.lib import data, protocol, runs
from routine_envs import plugins
from tests import children, runs_files

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = "d151f85f875131d1b076dd412fea79fbe106cd40064c333267c222e1469cd433"
"""The digest of every shipped reference row without its key and code fingerprint
(:func:`numbers_digest`), computed on the files as they were before the keys were migrated
(main at d12f9c3): the migration rewrote keys only."""


MIGRATED = ("rb1", "rb2")
"""The protocols whose references existed when the keys were migrated; later tiers (rb3) were
computed with the new keys and are checked by their own pinned manifests."""


def numbers_digest(root: Path) -> str:
    """SHA-256 over the migrated protocols' reference rows, each without ``key`` and
    ``estimator.code``."""
    import hashlib

    digest = hashlib.sha256()
    paths = sorted(p for name in MIGRATED for p in (root / name).glob("*/*.jsonl.gz"))
    for path in paths:  # named as they were before they shipped compact: the same digest
        digest.update(str(path.relative_to(root)).removesuffix(".gz").encode())
        for line in runs_files.text(path).splitlines():
            row = json.loads(line)
            row.pop("key", None)
            (row.get("estimator") or {}).pop("code", None)
            digest.update(json.dumps(row, sort_keys=True).encode())
    return digest.hexdigest()


def test_the_key_migration_changed_no_number():
    assert numbers_digest(data.REFERENCES) == NUMBERS


def test_every_shipped_row_has_its_own_fields_key():
    """Each row's key is :func:`baselines.lib.runs.key` of its own fields (the migration
    rewrote the code fingerprint in both places alike)."""
    rows = [
        json.loads(line)
        for path in sorted(data.REFERENCES.glob("*/*/*.jsonl.gz"))
        for line in runs_files.text(path).splitlines()
    ]
    assert len(rows) > 10_000
    assert [r["key"] for r in rows if runs.key(r) != r["key"]] == []


SOURCE = '''
class Scaled:
    """Scale the trajectory advantage."""

    scale: float = 0.5
    """The factor."""

    def __call__(self, x):
        return self.scale * x  # scaled
'''


@pytest.mark.parametrize(
    "edited, same",
    [
        (SOURCE.replace("Scale the trajectory", "Multiply the trajectory"), True),
        (SOURCE.replace('    """The factor."""\n', ""), True),
        (SOURCE.replace("  # scaled", "  # a comment\n"), True),
        (SOURCE.replace("self.scale * x", "(self.scale\n                * x)"), True),
        (SOURCE.replace("x):", "x):\n        'a docstring'"), True),
        (SOURCE.replace("0.5", "0.25"), False),
        (SOURCE.replace("self.scale * x", "x * self.scale"), False),
        (SOURCE.replace("x):", "x, y=1):"), False),
        (SOURCE.replace("float", "int"), False),  # annotations matter (dataclass fields)
    ],
)
def test_a_fingerprint_ignores_docstrings_comments_and_layout_only(edited, same):
    assert edited != SOURCE
    assert (plugins.text_fingerprint(edited) == plugins.text_fingerprint(SOURCE)) is same


def test_text_that_does_not_parse_is_hashed_as_it_is():
    deep = "x = " + "(" * 100_000 + ")" * 100_000  # past the parser's nesting limit
    assert plugins.text_fingerprint(deep) != plugins.text_fingerprint(deep + " ")
    assert plugins.text_fingerprint("def (") != plugins.text_fingerprint("def  (")


def edited_copy(tmp_path: Path, old: str, new: str) -> Path:
    """The two packages copied to ``tmp_path`` with ``old`` replaced by ``new`` once in the
    trajectory_mc estimator's module."""
    for package in ("routine_envs", "baselines"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    module = tmp_path / "routine_envs" / "credit" / "group_baselines.py"
    text = module.read_text()
    assert text.count(old) == 1
    module.write_text(text.replace(old, new))
    return tmp_path


def shipped_counts(tree: Path) -> str:
    """What ``benchmark references --tier lite`` says of the shipped runs, run on ``tree``."""
    import os

    done = children.run(
        [sys.executable, "-m", "baselines", "benchmark", "references", "--tier", "lite"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        timeout=600,
        check=True,
    )
    return done.stdout


DOCSTRING = (
    "    gets ``R_i - mean_group(R)``, divided by ``std_group(R) + eps`` when ``normalize_std``."
)


def test_a_docstring_edit_keeps_the_references(tmp_path):
    """An estimator's docstring and a comment edited, its module reformatted: every reference
    run of it still loads (the key names what the code does)."""
    tree = edited_copy(
        tmp_path, DOCSTRING, DOCSTRING + "\n    A line added by a tidy-up.  # not a comment"
    )
    assert re.search(r"^trajectory_mc +280 of 280 runs$", shipped_counts(tree), re.M)


def test_a_code_edit_drops_the_references(tmp_path):
    """The other side: an edit of what the estimator does makes its references stale."""
    tree = edited_copy(
        tmp_path,
        "class TrajectoryMC(FromContext):",
        "class TrajectoryMC(FromContext):\n    changed = 1",
    )
    out = shipped_counts(tree)
    assert re.search(r"^trajectory_mc +0 of 280 runs", out, re.M)
    assert re.search(r"^ppo +280 of 280 runs$", out, re.M)


def test_protocols_say_how_their_report_reads(tmp_path):
    """What differs between rb1 and rb2 is data: the released rb1 (written before the key)
    reads plain, rb2 as the default, a new file says it under ``report:``."""
    assert protocol.load_protocol("rb1").report == {
        "leaderboard": "plain",
        "reference_lab": "none",
        "aggregates": "none",
    }
    assert protocol.load_protocol("rb2").report == protocol.REPORT
    text = protocol.PROTOCOL_DIR.joinpath("rb2.yaml").read_text()
    draft = text.replace("version: rb2", "version: rbx").replace(
        "status: released", "status: draft"
    )
    path = tmp_path / "rbx.yaml"
    path.write_text(draft + "report:\n  leaderboard: plain\n")
    assert protocol.load_protocol("rbx", path).report["leaderboard"] == "plain"
    path.write_text(draft + "report:\n  leaderboard: fancy\n")
    with pytest.raises(ValueError, match="leaderboard: 'fancy' is not one of"):
        protocol.load_protocol("rbx", path)
