"""Shipped references are read-only and verified (issue 23): a manifest of SHA-256 per
reference file, its own hash pinned beside the protocol's; an edited row is refused with the
file's name, or used only when asked and then marked; reading never writes into the package;
a protocol file that is not a protocol is one line naming it. From rb2 on, every shipped row is
a run of its protocol's released file and carries that file's hash (issue 36)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from baselines import commands
from baselines.experiments.benchmark import manifest, scores
from baselines.lib import protocol, protocol_runs, runs
from tests import children, runs_files

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "baselines" / "references" / "rb1" / "lite"


PINNED = [(v, t) for v, tiers in protocol.REFERENCE_MANIFESTS.items() for t in tiers]


@pytest.mark.parametrize("version, tier", PINNED, ids=[f"{v}-{t}" for v, t in PINNED])
def test_the_shipped_references_match_their_pinned_manifest(version, tier):
    folder = ROOT / "baselines" / "references" / version / tier
    pinned = protocol.REFERENCE_MANIFESTS[version][tier]
    listing = folder / manifest.MANIFEST_NAME
    assert manifest.file_sha256(listing) == pinned
    entries = manifest.read_manifest(listing)
    loaded = protocol.load_protocol(version)
    slugs = [protocol_runs.method_slug(m) for m in loaded.references_of(tier)]
    shipped = {f"{slug}.jsonl.gz" for slug in slugs}
    if loaded.tuning is not None:  # and each method's tuned column: its runs and its choice
        shipped |= {f"{slug}+tuned.{ext}" for slug in slugs for ext in ("jsonl.gz", "json")}
    # every reference method, nothing else but (after rb1) their lab rows
    assert set(entries) - {manifest.LAB_FILE} == shipped
    assert (manifest.LAB_FILE in entries) == (version != "rb1")
    assert manifest.problems(folder, pinned) == []
    # the format is sha256sum's: the standard tool checks the same files
    check = children.run(["sha256sum", "-c", manifest.MANIFEST_NAME], cwd=folder, check=True)
    assert check.stdout.count(": OK") == len(entries), check.describe()
    refs = manifest.open_references(loaded, tier)
    assert refs.verified and refs.folder == folder and "verified" in refs.status


def test_a_manifest_written_for_a_tuned_tier_reads_back(tmp_path):
    for name in ["ppo.jsonl", "ppo+tuned.jsonl", "ppo+tuned.json", manifest.LAB_FILE]:
        (tmp_path / name).write_text('{"seed": 0}\n')
    path, _ = manifest.write_manifest(tmp_path)  # the runs files compacted first
    assert set(manifest.read_manifest(path)) == {
        "ppo.jsonl.gz",
        "ppo+tuned.jsonl.gz",
        "ppo+tuned.json",
        manifest.LAB_FILE,
    }
    path.write_text(f"{'0' * 64}  ../ppo.jsonl\n")  # a name outside the folder is not one
    with pytest.raises(manifest.UnverifiedReferences, match="line 1"):
        manifest.read_manifest(path)


ONE_FILE = [(v, t) for v, t in PINNED if v != "rb1"]
"""The tiers whose references are made under their protocol's released file only. rb1's shipped
files stay byte for byte as released (its rows carry its drafts' hashes); from rb2 on, a row
made under a draft whose settings equal the released file's is stamped with the released hash,
and a row whose settings differ is recomputed (issue 36)."""


@pytest.mark.parametrize("version, tier", ONE_FILE, ids=[f"{v}-{t}" for v, t in ONE_FILE])
def test_every_shipped_reference_row_is_a_run_of_the_released_protocol_file(
    version, tier, tmp_path
):
    """One protocol file per release: every row carries the released file's hash, and is a run
    of that file's plan (its key, every setting it depends on, is one of the plan's keys)."""
    loaded = protocol.load_protocol(version)
    assert loaded.status == "released" and loaded.sha256 == protocol.RELEASED[version]
    for method in loaded.references_of(tier):
        jobs = protocol_runs.plan(
            loaded, loaded.tier(tier), method, tmp_path, trainer=loaded.trainer
        )
        keys = {runs.key(job) for job in jobs}
        path = protocol_runs.reference_path(loaded, tier, method)
        rows = [json.loads(line) for line in runs_files.text(path).splitlines()]
        assert {json.dumps(r["protocol"]) for r in rows} == {
            json.dumps({"version": version, "sha256": protocol.RELEASED[version]})
        }, path.name
        assert sorted(r["key"] for r in rows) == sorted(keys), path.name  # each run once


RESTAMPED_FROM = "5173884"
"""The last commit whose rb2 lite and paper rows carried the drafts' hashes (592084ff...,
149b562a..., 5d17c62a...)."""


def git_show(commit: str, path: Path) -> bytes | None:
    """``path`` as of ``commit``, or ``None`` outside a git checkout that has it."""
    try:
        shown = subprocess.run(
            ["git", "show", f"{commit}:{path.relative_to(ROOT).as_posix()}"],
            cwd=ROOT,
            capture_output=True,
        )
    except OSError:
        return None
    return shown.stdout if shown.returncode == 0 else None


@pytest.mark.parametrize("tier", ["lite", "paper"])
def test_restamping_changed_nothing_but_the_protocol_hash(tier):
    """The rows re-stamped with rb2's released hash are the rows made under its drafts but for
    ``protocol.sha256`` and, since the keys were migrated to the syntax-tree fingerprint
    (tests/test_keys.py), the code fingerprint in ``estimator.code`` and in the key."""
    folder = ROOT / "baselines" / "references" / "rb2" / tier
    paths = sorted(folder.glob("*.jsonl.gz"))
    assert paths
    for path in paths:
        before = git_show(RESTAMPED_FROM, path.with_name(path.name.removesuffix(".gz")))
        if before is None:
            pytest.skip(f"not a git checkout with commit {RESTAMPED_FROM}")
        old, new = before.decode().split("\n"), runs_files.text(path).split("\n")
        assert len(old) == len(new) and old[-1] == new[-1] == "", path.name
        for was, now in zip(old[:-1], new[:-1], strict=True):
            was_row, now_row = json.loads(was), json.loads(now)
            assert was_row["protocol"]["sha256"] != now_row["protocol"]["sha256"]
            assert now_row["protocol"]["sha256"] == protocol.RELEASED["rb2"]
            code = now_row["estimator"]["code"]
            restamped = {
                **was_row,
                "protocol": now_row["protocol"],
                "estimator": {**was_row["estimator"], "code": code},
                "key": was_row["key"].replace(was_row["estimator"]["code"], code),
            }
            assert json.dumps(restamped) == now, path.name


def test_a_card_lists_one_protocol_file_for_its_runs_and_the_references(tmp_path, monkeypatch):
    """The card names the runs' protocol files only when they are more than the released one
    (``protocol files of the runs``): against rb2's shipped references it does not."""
    monkeypatch.setattr(scores, "RESAMPLES", 100)
    out = tmp_path / "out"
    mine = out / "rb2" / "lite" / "ppo" / "results.jsonl"
    mine.parent.mkdir(parents=True)
    mine.write_text(runs_files.text(manifest.shipped_folder("rb2", "lite") / "ppo.jsonl.gz"))
    argv = ["report", "--method", "ppo", "--tier", "lite", "--env-id", "CodeFix-v1"]
    card = commands.main(["benchmark", *argv, "--no-lab", "--out", str(out)])
    header = json.loads((card / "scores.json").read_text())["header"]
    assert "protocol files of the runs" not in header
    assert header["protocol"].startswith(f"rb2 (released, sha256 {protocol.RELEASED['rb2'][:12]})")
    assert "trajectory_mc (40 runs)" in header["references"]


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """A copy of the shipped references that the commands read as the shipped ones."""
    root = tmp_path / "references"
    shutil.copytree(SHIPPED, root / "rb1" / "lite")
    monkeypatch.setattr(protocol_runs, "REFERENCE_DIR", root)
    return root / "rb1" / "lite"


def edit_one_success(folder: Path) -> None:
    """The issue's reproducer: one ppo.jsonl.gz row's success set to 1.0."""
    path = folder / "ppo.jsonl.gz"
    rows = runs_files.text(path).splitlines()
    row = json.loads(rows[0])
    row["success"] = [1.0] * len(row["success"])
    rows[0] = json.dumps(row)
    runs_files.write(path, "\n".join(rows) + "\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["references", "--protocol", "rb1", "--tier", "lite"],
        ["leaderboard", "--protocol", "rb1", "--tier", "lite"],
        ["plan", "--protocol", "rb1", "--tier", "lite"],
        ["report", "--method", "trajectory_mc", "--protocol", "rb1", "--tier", "lite"],
        ["run", "--method", "trajectory_mc", "--protocol", "rb1", "--tier", "lite"],
    ],
    ids=lambda a: a[0],
)
def test_an_edited_reference_row_is_refused_naming_the_file(argv, shipped_copy, tmp_path, capsys):
    edit_one_success(shipped_copy)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as end:
        commands.main(["benchmark", *argv, "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2, err
    assert len(err.splitlines()) == 1 and str(shipped_copy / "ppo.jsonl.gz") in err
    assert "changed" in err and "--unverified-references" in err
    assert not (out / "rb1").exists()  # refused before any run, report or leaderboard


@pytest.mark.parametrize(
    "damage",
    ["add a row", "delete a file", "add a file", "edit the manifest", "re-list the manifest"],
)
def test_every_change_to_the_shipped_files_is_caught(damage, shipped_copy):
    ppo = shipped_copy / "ppo.jsonl.gz"
    if damage == "add a row":
        lines = runs_files.text(ppo)
        runs_files.write(ppo, lines + lines.splitlines()[0] + "\n")
    elif damage == "delete a file":
        ppo.unlink()
    elif damage == "add a file":  # and a plain JSON lines copy is a file too
        (shipped_copy / "spare.jsonl").write_text(runs_files.text(ppo))
        (shipped_copy / manifest.MANIFEST_NAME).write_text(
            manifest.manifest_text(shipped_copy).replace("spare.jsonl", "nothing.jsonl")
        )
    elif damage == "edit the manifest":
        listing = shipped_copy / manifest.MANIFEST_NAME
        listing.write_text(listing.read_text().replace("ppo.jsonl.gz", "ppo2.jsonl.gz"))
    else:  # the edit, and a manifest regenerated to match it: the pin still catches it
        edit_one_success(shipped_copy)
        manifest.write_manifest(shipped_copy)
    with pytest.raises(manifest.UnverifiedReferences, match="--unverified-references"):
        manifest.open_references(protocol.load_protocol("rb1"), "lite")


def test_unverified_references_are_used_only_when_asked_and_every_output_says_so(
    shipped_copy, tmp_path, monkeypatch
):
    """With --unverified-references the edited row is used (the ppo interval changes) and the
    leaderboard, the report card, its scores.json and scores.csv all say so."""
    monkeypatch.setattr(protocol, "REFERENCE_METHODS", ("ppo",))  # one method: fast
    monkeypatch.setattr(scores, "RESAMPLES", 200)
    out = tmp_path / "out"
    clean = commands.main(
        [
            "benchmark",
            "leaderboard",
            "--protocol",
            "rb1",
            "--tier",
            "lite",
            "--out",
            str(tmp_path / "clean"),
        ]
    )
    assert "unverified" not in clean.read_text()
    edit_one_success(shipped_copy)
    flag = ["--unverified-references", "--out", str(out)]
    board = commands.main(
        ["benchmark", "leaderboard", "--protocol", "rb1", "--tier", "lite", *flag]
    )
    text = board.read_text()
    assert board == out / "rb1" / "lite" / "LEADERBOARD.md"
    assert text.splitlines()[0].endswith("(unverified references)")
    assert "**Unverified references**" in text and "ppo.jsonl.gz: changed" in text
    assert text.split("\n", 3)[3] != clean.read_text().split("\n", 1)[1]  # the edit counts
    # a report card against them: the method's own runs are a copy of trajectory_mc's refs
    mine = out / "rb1" / "lite" / "trajectory_mc" / "results.jsonl"
    mine.parent.mkdir(parents=True)
    mine.write_text(runs_files.text(shipped_copy / "trajectory_mc.jsonl.gz"))
    card = commands.main(
        ["benchmark", "report", "--method", "trajectory_mc", "--protocol", "rb1", "--no-lab", *flag]
    )
    report_md = (card / "report.md").read_text()
    assert report_md.splitlines()[0].endswith("(unverified references)")
    assert "**unverified references**: UNVERIFIED REFERENCES" in report_md
    assert (
        "ppo.jsonl.gz: changed"
        in json.loads((card / "scores.json").read_text())["header"]["unverified references"]
    )
    rows = (card / "scores.csv").read_text().splitlines()
    assert rows[0].split(",")[-1] == "references"
    assert {r.split(",")[-1] for r in rows[1:]} == {"unverified"}


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_reading_the_references_writes_nothing_into_the_package(
    shipped_copy, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(protocol, "REFERENCE_METHODS", ("ppo", "oracle"))
    monkeypatch.setattr(scores, "RESAMPLES", 100)
    monkeypatch.chdir(tmp_path)
    before = snapshot(shipped_copy)
    listed = commands.main(["benchmark", "references", "--protocol", "rb1", "--tier", "lite"])
    assert listed == {"ppo": 120, "oracle": 120}
    printed = capsys.readouterr().out
    assert "# Leaderboard: protocol rb1, tier lite" in printed and "| oracle |" in printed
    commands.main(["benchmark", "plan", "--protocol", "rb1", "--tier", "lite"])
    assert snapshot(shipped_copy) == before  # LEADERBOARD.md included: nothing rewritten
    assert list(tmp_path.glob("results")) == []  # nor anything in the working folder
    path = commands.main(
        [
            "benchmark",
            "leaderboard",
            "--protocol",
            "rb1",
            "--tier",
            "lite",
            "--out",
            str(tmp_path / "board"),
        ]
    )
    assert path.parent == tmp_path / "board" / "rb1" / "lite" and snapshot(shipped_copy) == before


def test_the_manifest_a_maintainer_writes_is_the_shipped_one(shipped_copy, capsys):
    (shipped_copy / manifest.MANIFEST_NAME).unlink()
    result = commands.main(
        ["benchmark", "references", "--write-manifest", "--protocol", "rb1", "--tier", "lite"]
    )
    assert result["sha256"] == protocol.REFERENCE_MANIFESTS["rb1"]["lite"]
    assert result["manifest"].read_bytes() == (SHIPPED / manifest.MANIFEST_NAME).read_bytes()
    assert result["sha256"] in capsys.readouterr().out  # the value to pin, printed


def fake_run(job):
    """A stand-in for a training run: the job (a run's row) plus a flat success curve (no
    training)."""
    job = job.row() if hasattr(job, "row") else job
    points = job["budget"] // job["eval_every"] + 1
    return {
        **job,
        "timesteps": [i * job["eval_every"] for i in range(points)],
        "success": [0.5] * points,
        "steps_to_target": None,
        "steps_trained": job["budget"],
        "wall_time": 0.0,
    }


def test_computed_references_go_to_a_folder_you_name_not_the_package(
    shipped_copy, tmp_path, monkeypatch, capsys
):
    from baselines.experiments.compare import sweep as compare

    monkeypatch.setattr(compare, "run_job", fake_run)
    out = tmp_path / "out"
    argv = ["references", "--compute", "--protocol", "rb1", "--tier", "smoke"]
    argv += ["--methods", "ppo", "--workers", "1"]
    commands.main(["benchmark", *argv, "--out", str(out), "--no-progress"])
    computed = out / "references" / "rb1" / "smoke" / "ppo.jsonl"
    assert (
        len(computed.read_text().splitlines())
        == protocol.load_protocol("rb1").tier("smoke").num_runs_per_method
    )
    assert not (shipped_copy.parent / "smoke").exists()
    assert "--write-manifest" in capsys.readouterr().out  # how to ship them
    named = tmp_path / "mine"
    commands.main(
        ["benchmark", *argv, "--out", str(out), "--references-dir", str(named), "--no-progress"]
    )
    assert (named / "ppo.jsonl").exists()
    with pytest.raises(SystemExit) as end:  # reading them back is a local experiment
        commands.main(
            [
                "benchmark",
                "references",
                "--protocol",
                "rb1",
                "--tier",
                "smoke",
                "--references-dir",
                str(named),
            ]
        )
    assert end.value.code == 2 and "not the shipped references" in capsys.readouterr().err


# ------------------------------------------------------------------------ protocol files
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("- a\n- b\n", "a YAML mapping .* got a list"),
        ("just a string\n", "a YAML mapping .* got a str"),
        ("version: [unclosed\n", "not valid YAML"),
        ("version: rbx\nstatus: draft\n", "missing entry 'hyperparameters'"),
        (
            "version: rbx\nstatus: draft\nhyperparameters: {}\ntiers: [1]\ntarget: 0.9\n"
            "eval_points: 2\n",
            "not a well-formed protocol",
        ),
    ],
)
def test_a_protocol_file_that_is_not_a_protocol_is_one_line_naming_it(
    text, match, tmp_path, monkeypatch, capsys
):
    path = tmp_path / "rbx.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        protocol.load_protocol("rbx", path)
    assert str(path) in str(err.value)
    monkeypatch.setattr(protocol, "PROTOCOL_DIR", tmp_path)
    with pytest.raises(SystemExit) as end:
        commands.main(["benchmark", "plan", "--protocol", "rbx"])
    line = capsys.readouterr().err.strip()
    assert end.value.code == 2 and len(line.splitlines()) == 1 and str(path) in line


def test_a_released_protocol_is_checked_against_its_pin_before_it_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "rb1.yaml"
    path.write_text("- an edited released file that is not even a mapping\n")
    with pytest.raises(ValueError, match="never changes"):
        protocol.load_protocol("rb1", path)


@pytest.mark.parametrize("version, tier", ONE_FILE, ids=[f"{v}-{t}" for v, t in ONE_FILE])
def test_the_shipped_lab_is_the_current_codes(version, tier):
    """Every reference's lab row is found in the shipped ``LAB.json`` under the key the current
    code computes: an edit of the lab's code (its key fingerprints it) that leaves the file
    stale makes every card measure the references again, silently, for minutes."""
    from baselines.experiments.benchmark import card, lab

    loaded = protocol.load_protocol(version)
    cache = lab.read_lab(manifest.shipped_folder(version, tier))
    methods = [m for m in card.in_lab(loaded.references_of(tier)) if m != "ppo"]
    missing = [
        (setting.name, value, method)
        for setting in loaded.tier(tier).settings
        for value in sorted({min(setting.values), max(setting.values)})
        for method in methods
        if lab.lab_key(loaded, setting, value, method) not in cache
    ]
    assert not missing, f"{len(missing)} lab rows not shipped, e.g. {missing[0]}: rerun " + (
        f"python -m baselines benchmark references --write-manifest --tier {tier}"
    )


def test_the_equivalence_study_reads_the_references_through_the_manifest(
    shipped_copy, tmp_path, capsys
):
    """Issue 36: ``equivalence --protocol rb1 --no-train`` parsed the rb1 references without
    checking them (a one-byte edit gave ``Expecting value``); now the edited file is named."""
    from baselines import commands

    ppo = shipped_copy / "ppo.jsonl.gz"
    data = ppo.read_bytes()
    ppo.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])  # one byte
    argv = ["equivalence", "--protocol", "rb1", "--tier", "lite", "--methods", "ppo"]
    with pytest.raises(SystemExit) as end:
        commands.main([*argv, "--no-train", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert end.value.code == 2, err
    assert len(err.splitlines()) == 1 and f"{ppo}: changed" in err, err
    assert "Expecting value" not in err
    # the analysis reads the references it is handed, checked, and nothing else
    from baselines.experiments.benchmark import equivalence_analysis as analysis

    with pytest.raises(manifest.UnverifiedReferences, match=r"ppo\.jsonl\.gz: changed"):
        analysis.load_references("rb1", "lite", ["ppo"])
