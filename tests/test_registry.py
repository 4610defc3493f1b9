"""The submissions registry (issue 41): ``submissions/<protocol>/<tier>/<name>/`` read as
untrusted data. A good entry verifies (with a spot rerun where asked); every hostile entry (a bad
name, an oversized bundle, a bundle for another protocol or tier than its folder, a tampered
row, a stray file, a link, a forged ENTRY.json, a method listed twice) is one line naming it,
and ``benchmark verify-submissions`` exits 1 on it."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from baselines import commands
from baselines.experiments.benchmark import registry, registry_verification, submission

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = '''
from routine_envs import credit


class HalfMC(credit.TrajectoryMC):
    """Half the trajectory advantage (a known scale)."""

    name = "half_mc"

    def __call__(self, batch):
        return credit.Advantages(0.5 * super().__call__(batch).advantages)
'''
GOOD = "rb2/smoke/half-mc"
ENTRY = {
    "format": registry.ENTRY_FORMAT,
    "submitter": "A. Tester",
    "date": "2026-12-05",
    "link": "https://example.org/half-mc",
}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> bytes:
    """A genuine smoke-tier bundle of an outside method (8 runs on the batched trainer)."""
    folder = tmp_path_factory.mktemp("registry")
    (folder / "reg_probe.py").write_text(OUTSIDE)
    sys.path.insert(0, str(folder))
    try:
        common = ["--protocol", "rb2", "--tier", "smoke", "--out", str(folder / "out")]
        method = ["--method", "reg_probe:HalfMC", "--no-lab"]
        commands.main(["benchmark", "run", *method, *common, "--workers", "1", "--no-progress"])
        path = commands.main(["benchmark", "submit", *method, *common])
    finally:  # the module stays imported: the method's parsed spec (cached) holds it
        sys.path.remove(str(folder))
    return Path(path).read_bytes()


def add(root: Path, where: str, bundle: bytes, entry: dict | bytes | None = None) -> Path:
    """An entry folder ``root/where`` with ``bundle`` and ``entry`` (``ENTRY`` by default)."""
    folder = root / where
    folder.mkdir(parents=True)
    (folder / registry.BUNDLE).write_bytes(bundle)
    data = entry if isinstance(entry, bytes) else json.dumps(entry or ENTRY).encode()
    (folder / registry.ENTRY).write_bytes(data)
    return folder


def forged(bundle: bytes, change) -> bytes:
    """``bundle`` with ``change(members)`` applied and every hash of SUBMISSION.json fixed."""
    with zipfile.ZipFile(io.BytesIO(bundle)) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    change(members)
    manifest = json.loads(members["SUBMISSION.json"])
    manifest["files"] = {
        n: hashlib.sha256(d).hexdigest() for n, d in members.items() if n != "SUBMISSION.json"
    }
    members["SUBMISSION.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def raise_a_row(members):
    rows = [json.loads(line) for line in members["results.jsonl"].decode().splitlines()]
    rows[0]["success"] = [min(1.0, s + 0.05) for s in rows[0]["success"]]
    members["results.jsonl"] = submission.rows_bytes(rows)


def hostile(name: str, root: Path, bundle: bytes) -> str:
    """Make the hostile entry ``name`` in ``root``; where it is."""
    if name == "bad name":
        add(root, "rb2/smoke/Half.MC", bundle)
        return "rb2/smoke/Half.MC"
    if name == "hidden folder":
        add(root, "rb2/smoke/.git", bundle)
        return "rb2/smoke/.git"
    if name == "unknown protocol folder":
        add(root, "rb9/smoke/x", bundle)
        return "rb9"
    if name == "a file where a tier folder goes":
        (root / "rb2").mkdir()
        (root / "rb2" / "notes").write_text("hi")
        return "rb2/notes"
    if name == "oversized bundle":
        folder = add(root, "rb2/smoke/big", bundle)
        with open(folder / registry.BUNDLE, "r+b") as handle:
            handle.truncate(registry.MAX_BUNDLE_BYTES + 1)  # sparse: costs no disk
        return "rb2/smoke/big"
    if name == "a bundle for another tier":
        add(root, "rb2/lite/half-mc", bundle)
        return "rb2/lite/half-mc"
    if name == "a bundle for another protocol":
        add(root, "rb3/smoke/half-mc", bundle)
        return "rb3/smoke/half-mc"
    if name == "a tampered row":
        add(root, "rb2/smoke/raised", forged(bundle, raise_a_row))
        return "rb2/smoke/raised"
    if name == "a stray file":
        folder = add(root, "rb2/smoke/stray", bundle)
        (folder / "notes.md").write_text("hi")
        return "rb2/smoke/stray"
    if name == "a bundle that is a link":
        folder = add(root, "rb2/smoke/linked", bundle)
        (folder / registry.BUNDLE).unlink()
        (folder / registry.BUNDLE).symlink_to("/etc/hostname")
        return "rb2/smoke/linked"
    if name == "a javascript link":
        add(root, "rb2/smoke/js", bundle, {**ENTRY, "link": "javascript:alert(1)"})
        return "rb2/smoke/js"
    if name == "an extra key":
        add(root, "rb2/smoke/extra", bundle, {**ENTRY, "verified": True})
        return "rb2/smoke/extra"
    if name == "a submitter of two lines":
        add(root, "rb2/smoke/lines", bundle, {**ENTRY, "submitter": "A\n<script>"})
        return "rb2/smoke/lines"
    if name == "a date that is not one":
        add(root, "rb2/smoke/date", bundle, {**ENTRY, "date": "2026-13-45"})
        return "rb2/smoke/date"
    if name == "ENTRY.json nested deep":
        add(root, "rb2/smoke/deep", bundle, b"[" * 2000 + b"]" * 2000)
        return "rb2/smoke/deep"
    if name == "ENTRY.json too large":
        add(root, "rb2/smoke/large", bundle, {**ENTRY, "submitter": "x" * 5000})
        return "rb2/smoke/large"
    if name == "the same method twice":
        add(root, GOOD, bundle)
        add(root, "rb2/smoke/z-again", bundle)
        return "rb2/smoke/z-again"
    raise KeyError(name)


HOSTILE = {
    "bad name": "entry name 'Half.MC' is not lowercase",
    "hidden folder": "entry name '.git' is not lowercase",
    "unknown protocol folder": "no protocol of that version",
    "a file where a tier folder goes": "not a tier folder of rb2",
    "oversized bundle": "more than the 20,000,000 a registered bundle may hold",
    "a bundle for another tier": "the bundle is a submission to rb2/smoke, not to its folder's "
    "rb2/lite",
    "a bundle for another protocol": "not to its folder's rb3/smoke",
    "a tampered row": "differs from its rebuild",
    "a stray file": "unexpected 'notes.md'",
    "a bundle that is a link": "submission.zip is not a regular file",
    "a javascript link": "link is not null or an https:// address",
    "an extra key": "'verified' differs",
    "a submitter of two lines": "submitter is not 1 to 100 characters on one line",
    "a date that is not one": "is not a day (YYYY-MM-DD)",
    "ENTRY.json nested deep": "nested 2000 levels",
    "ENTRY.json too large": "more than the 4,096 allowed",
    "the same method twice": f"the same method as {GOOD}",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_entry_is_one_line_naming_it(bundle, tmp_path, name):
    where = hostile(name, tmp_path, bundle)
    checked = registry_verification.check_registry(tmp_path)
    bad = [c for c in checked if not c.verified]
    assert [c.where for c in bad] == [where], [c.line() for c in checked]
    line = bad[0].line()
    assert line.startswith(f"{where}: NOT verified: ") and "\n" not in line and len(line) < 700
    assert HOSTILE[name] in line, line
    assert all(c.verified for c in checked if c.where != where)


def test_a_good_entry_verifies_and_its_rerun_matches(bundle, tmp_path):
    """Verified as data, then one run chosen by the seed trained again (its source is pure
    Python, the versions are this environment's, the price within the budget)."""
    add(tmp_path, GOOD, bundle)
    (tmp_path / "README.md").write_text("the registry\n")  # allowed beside the protocols
    (checked,) = registry_verification.check_registry(tmp_path, rerun=1, seed=5)
    assert checked.verified, checked.line()
    assert checked.manifest["runs"] == 8 and checked.entry.submitter == "A. Tester"
    assert len(checked.reruns) == 1 and checked.rerun_seed == 5
    line = checked.line()
    assert line.startswith(f"{GOOD}: verified: 8 runs of reg_probe:HalfMC on batched")
    assert (
        f"1 runs trained again matched their rows bit for bit: {checked.reruns[0]} (seed 5)" in line
    )
    (priced,) = registry_verification.check_registry(tmp_path, rerun=1, budget=0.0)
    assert priced.verified and not priced.reruns
    assert "CPU-s, more than the --rerun-budget of 0" in priced.no_rerun


def test_which_methods_a_rerun_can_train(bundle):
    """Pure Python (read, never imported) and this environment's package versions, or why
    not."""
    from baselines.lib.provenance import versions

    pure = registry_verification.not_pure_python
    source = "method/m.py"
    assert pure({}, "trajectory_mc") is None
    assert pure({source: b"import numpy\nfrom routine_envs import credit\n"}, "m:X") is None
    for text, why in [
        (b"import ctypes\n", "loads compiled code (ctypes)"),
        (b"import surely_not_installed_xyz\n", "'surely_not_installed_xyz', which is not"),
        (b"from . import helper\n", "a relative import"),
        (b"def (:\n", "is not Python source"),
        (b"x = [" * 200_000, "is not Python source"),
    ]:
        assert why in pure({source: text}, "m:X"), text[:30]
    assert "no one source file" in pure({}, "m:X")
    here = versions()
    assert registry_verification.other_versions([{"versions": here}]) is None
    rows = [{"versions": here}, {"versions": {**here, "torch": "0.1"}}]
    assert "torch 0.1" in registry_verification.other_versions(rows)


def test_the_command_prints_a_line_per_entry_and_exits_1_on_one_not_verified(bundle, tmp_path):
    add(tmp_path, GOOD, bundle)
    add(tmp_path, "rb2/smoke/raised", forged(bundle, raise_a_row))
    done = subprocess.run(
        [sys.executable, "-m", "baselines", "benchmark", "verify-submissions",
         "--submissions", str(tmp_path)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines[0].startswith(f"{GOOD}: verified: 8 runs")
    assert "no reruns asked" in lines[0]
    assert lines[1].startswith("rb2/smoke/raised: NOT verified: ")
    assert lines[2].startswith(f"2 entries in {tmp_path}: 1 verified, 1 NOT verified")
    assert "rb2/smoke/raised" in done.stderr and done.stderr.count("\n") == 1


def test_the_checkouts_registry_is_laid_out_as_it_says():
    """Every entry of ``submissions/`` reads (layout, ENTRY.json, a bundle for its folder's
    protocol and tier): cheap, in every test run; ``make verify-submissions`` verifies them."""
    found = registry.entry_folders(registry.DEFAULT_ROOT)
    assert found, "the registry holds at least one entry"
    for where, folder in found:
        assert not isinstance(folder, registry.InvalidEntry), folder
        entry = registry.read_entry(folder, where)
        _, fields = registry.bundle_fields(entry)
        assert (fields["version"], fields["tier"]) == (entry.protocol, entry.tier)


def test_a_rerun_matches_bit_for_bit_or_to_rounding_only():
    """The batched trainer's CodeFix success curve differs by an ulp or two between a batch of 40
    and a run alone (measured on rb3 lite): matched, to rounding, and said so; more is a
    mismatch."""
    from baselines.experiments.benchmark import verification

    row = {"key": "k", "success": json.dumps([0.1, 0.5, 0.9]), "steps_to_target": 3.0,
           "wall_time": 1.0}  # fmt: skip
    assert verification.compare_rerun({**row, "wall_time": 9.0}, row) == ([], 0.0)
    ulp = {**row, "success": json.dumps([0.1, 0.5 + 2**-53, 0.9])}
    diff, rounding = verification.compare_rerun(ulp, row)
    assert diff == [] and 1e-16 < rounding < 1e-15
    for other in [
        {**row, "success": json.dumps([0.1, 0.5 + 1e-9, 0.9])},
        {**row, "steps_to_target": 4.0},
        {**row, "key": "k2"},
    ]:
        diff, _ = verification.compare_rerun(other, row)
        assert diff and "run " in diff[0]
    verdict = verification.Verdict(reruns=["a", "b"], rounding={"b": 1.5e-16})
    assert verdict.rerun_text() == (
        "2 runs trained again matched their rows, 1 bit for bit and 1 to rounding only (at "
        "most 1.5e-16 relative: b): a, b"
    )
