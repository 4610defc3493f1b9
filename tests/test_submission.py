"""A submission as a stranger sends it and a reviewer checks it: ``verify-submission`` never runs
the bundle's code (unless ``--rerun``), refuses every edit a forger can make (with every hash
fixed), reads hostile files in bounded time, and exits 0 / 1 / 2."""

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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baselines import commands
from baselines.experiments.benchmark import submission, verification

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = '''
import os

from routine_envs import credit

if os.environ.get("SUBMISSION_MARKER"):  # proves an import: a file appears
    open(os.environ["SUBMISSION_MARKER"], "w").close()


class HalfMC(credit.TrajectoryMC):
    """Half the trajectory advantage (a known scale)."""

    name = "half_mc"

    def __call__(self, batch):
        return credit.Advantages(0.5 * super().__call__(batch).advantages)
'''


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """A genuine smoke-tier bundle of an outside method (8 runs on the batched trainer)."""
    folder = tmp_path_factory.mktemp("submission")
    (folder / "sub_probe.py").write_text(OUTSIDE)
    sys.path.insert(0, str(folder))
    try:
        common = ["--protocol", "rb2", "--tier", "smoke", "--out", str(folder / "out")]
        method = ["--method", "sub_probe:HalfMC", "--no-lab"]
        commands.main(["benchmark", "run", *method, *common, "--workers", "1", "--no-progress"])
        path = commands.main(["benchmark", "submit", *method, *common])
    finally:  # the module stays imported: the method's parsed spec (cached) holds it
        sys.path.remove(str(folder))
    return path


def members_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def write_zip(path: Path, members: dict[str, bytes], rehash: bool = True) -> Path:
    """``members`` as a zip at ``path``, with ``SUBMISSION.json``'s hashes made to match (the
    strongest forger: every hash fixed)."""
    if rehash:
        manifest = json.loads(members["SUBMISSION.json"])
        manifest["files"] = {
            n: hashlib.sha256(d).hexdigest() for n, d in members.items() if n != "SUBMISSION.json"
        }
        members = {**members, "SUBMISSION.json": json.dumps(manifest).encode()}
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def rows(members):
    return [json.loads(line) for line in members["results.jsonl"].decode().splitlines()]


def set_rows(members, new_rows):
    members["results.jsonl"] = submission.rows_bytes(new_rows)


def edit_manifest(**changes):
    def change(members):
        manifest = json.loads(members["SUBMISSION.json"])
        for key, value in changes.items():
            target = manifest
            *path, last = key.split(".")
            for part in path:
                target = target[part]
            target[last] = value
        members["SUBMISSION.json"] = json.dumps(manifest).encode()

    return change


def edit_scores(change_scores):
    def change(members):
        scores = json.loads(members["report/scores.json"])
        change_scores(scores)
        members["report/scores.json"] = json.dumps(scores, indent=1).encode()

    return change


def drop_runs(n):
    def change(members):
        set_rows(members, rows(members)[n:])

    return change


def drop_setting(members):
    kept = [r for r in rows(members) if r["setting"] != rows(members)[0]["setting"]]
    set_rows(members, kept)


def duplicate_run(members):
    set_rows(members, [*rows(members), rows(members)[0]])


def relabel_method(members):
    set_rows(members, [{**r, "method": "gigpo"} for r in rows(members)])


def better_success(members):
    first, *rest = rows(members)
    first["success"] = [min(1.0, s + 0.05) for s in first["success"]]
    set_rows(members, [first, *rest])


def edit_text(name, old, new):
    def change(members):
        text = members[name].decode()
        assert old in text, (name, old)
        members[name] = text.replace(old, new, 1).encode()

    return change


def edit_png(members):
    data = bytearray(members["report/steps_vs_rho.png"])
    data[len(data) // 2] ^= 0xFF
    members["report/steps_vs_rho.png"] = bytes(data)


TAMPERS = {
    "method gigpo in the manifest": edit_manifest(method="gigpo"),
    "method of an installed module": edit_manifest(method="antigravity:X"),
    "a built-in whose argument imports": edit_manifest(
        method='detector_masked{"detector": "antigravity:X"}'
    ),
    "trainer xyz": edit_manifest(trainer="xyz"),
    "env_ids Nope-v0": edit_manifest(env_ids=["Nope-v0"]),
    "another protocol file": edit_manifest(**{"protocol.sha256": "0" * 64}),
    "unknown protocol": edit_manifest(**{"protocol.version": "../../etc/passwd"}),
    "tier full": edit_manifest(tier="full"),
    "headline steps 1100 -> 11": lambda m: edit_manifest(
        headline={
            k: {**v, "steps_iqm": 11.0}
            for k, v in json.loads(m["SUBMISSION.json"])["headline"].items()
        }
    )(m),
    "runs 8 -> 80": edit_manifest(runs=80),
    "drops edited": edit_manifest(drops={"planned": 8}),
    "privileged fields read []": edit_manifest(privileged_fields_read=["critical"]),
    "git commit": edit_manifest(git_commit="feedbeef"),
    "partial flag": edit_manifest(partial=True),
    "two runs dropped": drop_runs(2),
    "a whole setting dropped": drop_setting,
    "a run twice": duplicate_run,
    "rows relabelled as gigpo's": relabel_method,
    "a row's success raised": better_success,
    "report.md edited": edit_text("report/report.md", "privileged fields read**: none", "x"),
    "scores.csv edited": edit_text("report/scores.csv", "verified", "verifiet"),
    "a PNG edited": edit_png,
    "scores.json header runs": edit_scores(lambda s: s["header"].update(runs="8 of 9")),
    "scores.json privileged fields": edit_scores(
        lambda s: s["privileged_fields"].update({"x": ["critical"]})
    ),
    "scores.json drops": edit_scores(lambda s: s["drops"]["total"].update(missing=1)),
    "the method's source": edit_text("method/sub_probe.py", "0.5 *", "0.6 *"),
    "the source removed": lambda m: m.pop("method/sub_probe.py"),
    "an extra report file": lambda m: m.update({"report/extra.md": b"# hi\n"}),
}


@pytest.mark.parametrize("name", list(TAMPERS))
def test_every_edit_a_forger_can_make_is_refused(bundle, tmp_path, name):
    """The tamper table: each edit, with every hash in SUBMISSION.json fixed, is not verified
    (one or more reasons) or not readable; the genuine bundle is verified."""
    members = members_of(bundle)
    TAMPERS[name](members)
    path = write_zip(tmp_path / "forged.zip", members)
    try:
        verdict = verification.verify(path)
    except submission.InvalidSubmission as err:
        assert "\n" not in str(err)
        return
    finally:
        assert "antigravity" not in sys.modules  # a module the manifest names is never imported
    assert not verdict.verified, (name, verdict)
    assert all("\n" not in p and len(p) < 600 for p in verdict.problems)


def test_a_genuine_bundle_verifies(bundle):
    verdict = verification.verify(bundle)
    assert verdict.verified, verdict.problems
    assert any("rebuilds from the rows byte for byte" in c for c in verdict.checked)
    assert any("SUBMISSION.json" in c and "rebuilds whole" in c for c in verdict.checked)


def run_cli(args, cwd, **env):
    """``python -m baselines benchmark ARGS`` in ``cwd`` (the project on PYTHONPATH)."""
    done = subprocess.run(
        [sys.executable, "-m", "baselines", "benchmark", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    return done


def test_verifying_never_imports_the_bundle_and_exits_0_1_2(bundle, tmp_path):
    """Unzipped in the working folder, with the manifest naming its module as
    ``method.sub_probe:HalfMC`` (importable from there, as ``python -m`` puts the working
    folder on the path) or an installed module: nothing is imported. Exit status 0 verified,
    1 not verified, 2 unreadable."""
    marker = tmp_path / "imported"
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(bundle) as z:
        z.extractall(folder)
    done = run_cli(
        ["verify-submission", "--bundle", str(bundle)], folder, SUBMISSION_MARKER=str(marker)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified: every part rebuilds from the rows" in done.stdout
    members = members_of(bundle)
    edit_manifest(method="method.sub_probe:HalfMC")(members)
    forged = write_zip(folder / "forged.zip", members)
    done = run_cli(
        ["verify-submission", "--bundle", "forged.zip"], folder, SUBMISSION_MARKER=str(marker)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NOT verified" in done.stdout and done.stdout.count("PROBLEM:") >= 1
    assert not marker.exists(), "the bundle's module was imported"
    assert forged.is_file()
    done = run_cli(["verify-submission", "--bundle", "/dev/zero"], folder)
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1


def test_hostile_files_are_one_line_in_bounded_time(bundle, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.zip"
    link.symlink_to(bundle)
    for path, match in [
        (Path("/dev/zero"), "not a regular file"),
        (fifo, "FIFO"),
        (link, "symbolic link"),
        (tmp_path, "folder"),
        (tmp_path / "absent.zip", "cannot be read"),
    ]:
        with pytest.raises(submission.InvalidSubmission, match=match) as err:
            submission.read(path)
        assert "\n" not in str(err.value)
    members = members_of(bundle)
    deep = b"[" * 200_000 + b"]" * 200_000
    pretty = b"[\n" * 200_000 + b"]\n" * 200_000  # pretty-printed: newlines between levels
    for name, data in [
        ("SUBMISSION.json", deep),
        ("report/scores.json", deep),
        ("report/scores.json", pretty),
        ("results.jsonl", deep),
    ]:
        forged = dict(members)
        forged[name] = data
        path = write_zip(tmp_path / "deep.zip", forged, rehash=name != "SUBMISSION.json")
        with pytest.raises(submission.InvalidSubmission, match="nested 200000 levels"):
            verification.verify(path)
    # a member stored as a symbolic link
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if name == "report/report.md":
                info.external_attr = 0o120777 << 16  # a symlink's mode
            z.writestr(info, data)
    (tmp_path / "link_member.zip").write_bytes(buffer.getvalue())
    with pytest.raises(submission.InvalidSubmission, match="is a link or a folder"):
        submission.read(tmp_path / "link_member.zip")


def test_a_rerun_of_a_genuine_bundle_matches_bit_for_bit(bundle, tmp_path):
    """``--rerun 2``: two runs chosen by the reviewer's seed, trained again in a subprocess with
    the bundle's source, equal their rows (timings aside); a doctored row is caught by it
    even with its card rebuilt to match."""
    verdict = verification.verify(bundle, rerun=2, rerun_seed=7)
    assert verdict.verified, verdict.problems
    assert len(verdict.reruns) == 2
    chosen = verification.chosen_runs(rows(members_of(bundle)), 2, 7)
    assert verdict.reruns == [verification.short_id(r["key"]) for r in chosen]
    card = verdict.write_card(tmp_path / "verified", "abc123").read_text()
    assert card.startswith(members_of(bundle)["report/report.md"].decode())
    assert f"matched their rows bit for bit: {', '.join(verdict.reruns)}" in card


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=st.floats(0, 1, exclude_max=True), value=st.integers(0, 255))
def test_any_byte_edit_verifies_to_the_same_scores_or_is_refused(bundle, where, value):
    """Any one byte of the bundle file changed: refused (unreadable or not verified), or
    verified with the same scores as the genuine bundle (a byte of zip padding, say)."""
    data = bytearray(bundle.read_bytes())
    at = int(where * len(data))
    data[at] = value
    path = bundle.parent / "edited.zip"
    path.write_bytes(bytes(data))
    try:
        verdict = verification.verify(path)
    except submission.InvalidSubmission:
        return
    if verdict.verified:
        assert members_of(path)["report/scores.json"] == members_of(bundle)["report/scores.json"]
        assert members_of(path)["results.jsonl"] == members_of(bundle)["results.jsonl"]


def test_a_partial_submission_is_refused_unless_asked_and_then_says_so(bundle, tmp_path):
    """Runs missing (one density of one setting): ``submit`` refuses in one line; with
    ``--partial`` the bundle verifies, says it is partial, and its card fits no exponent on
    the setting's remaining density beside the references' fitted on all."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(bundle.parents[3], out)
    results = next(out.glob("rb2/smoke/sub_probe*/results.jsonl"))
    kept = [r for r in map(json.loads, results.read_text().splitlines())]
    first = kept[0]
    kept = [
        r
        for r in kept
        if not (r["setting"] == first["setting"] and r["density_value"] == first["density_value"])
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in kept))
    source = bundle.parents[4]
    sys.path.insert(0, str(source))
    try:
        common = ["--protocol", "rb2", "--tier", "smoke", "--out", str(out)]
        method = ["--method", "sub_probe:HalfMC", "--no-lab"]
        with pytest.raises(SystemExit) as exit_:
            commands.main(["benchmark", "submit", *method, *common])
        assert exit_.value.code == 2
        path = commands.main(["benchmark", "submit", *method, *common, "--partial"])
    finally:
        sys.path.remove(str(source))
    manifest = json.loads(members_of(path)["SUBMISSION.json"])
    assert manifest["partial"] is True and manifest["runs"] == 6
    verdict = verification.verify(path)
    assert verdict.verified, verdict.problems
    assert any("2 missing (a partial bundle)" in c for c in verdict.checked), verdict.checked
    card = members_of(path)["report/report.md"].decode()
    assert "n/a (runs at 1 of 2 densities: a partial setting)" in card
    # the same rows without the partial flag are refused
    members = members_of(path)
    edit_manifest(partial=False)(members)
    forged = write_zip(tmp_path / "not_partial.zip", members)
    assert not verification.verify(forged).verified


def test_a_built_in_methods_lab_rows_are_rebuilt(tmp_path):
    """A built-in method's lab rows come from this checkout's code: a forger who edits its SNR
    in scores.json and report.md alike (every hash fixed) is refused."""
    common = ["--protocol", "rb2", "--tier", "smoke", "--out", str(tmp_path / "out")]
    method = ["--method", "trajectory_mc"]
    commands.main(["benchmark", "run", *method, *common, "--workers", "1", "--no-progress"])
    path = commands.main(["benchmark", "submit", *method, *common])
    assert verification.verify(path).verified
    members = members_of(path)
    scores = json.loads(members["report/scores.json"])
    row = next(r for r in scores["lab"] if r.get("snr"))
    old, row["snr"] = row["snr"], row["snr"] * 2
    members["report/scores.json"] = json.dumps(scores, indent=1).encode()
    text = members["report/report.md"].decode()
    members["report/report.md"] = text.replace(f"{old:.3g}", f"{old * 2:.3g}", 1).encode()
    verdict = verification.verify(write_zip(tmp_path / "forged.zip", members))
    assert any("lab rows differ from their rebuild" in p for p in verdict.problems), verdict


@pytest.fixture(scope="module")
def tuned_folder(tmp_path_factory) -> Path:
    """``--out`` of a method's default and tuned columns on rb3's smoke tier (8 runs, a search
    of 96, 8 tuned runs), and its bundle submitted."""
    out = tmp_path_factory.mktemp("tuned") / "out"
    common = ["--protocol", "rb3", "--tier", "smoke", "--out", str(out), "--method",
              "trajectory_mc"]  # fmt: skip
    quiet = ["--workers", "1", "--no-progress"]
    commands.main(["benchmark", "run", *common, "--no-lab", *quiet])
    commands.main(["benchmark", "tune", *common, *quiet])
    commands.main(["benchmark", "submit", *common, "--no-lab"])
    return out


def tuned_bundle(out: Path) -> Path:
    return out / "rb3" / "smoke" / "trajectory_mc" / submission.NAME


def edit_lines(name, change_lines):
    def change(members):
        lines = members[name].decode().splitlines(keepends=True)
        members[name] = "".join(change_lines(lines)).encode()

    return change


def edit_json(name, change_value):
    def change(members):
        value = json.loads(members[name])
        change_value(value)
        members[name] = json.dumps(value).encode()

    return change


def other_choice(choice):
    for pick in choice["chosen"].values():
        pick["chosen"] = {"learning_rate": 0.01, "ent_coef": 0.0}


def other_hyperparameters(lines):
    out = []
    for line in lines:
        row = json.loads(line)
        row["hyperparameters"]["learning_rate"] = 0.01
        out.append(json.dumps(row) + "\n")
    return out


def raise_success(lines):
    row = json.loads(lines[0])
    row["success"] = [min(1.0, s + 0.2) for s in row["success"]]
    return [json.dumps(row) + "\n", *lines[1:]]


TUNED_TAMPERS = {
    "the choice edited": edit_json("tuned/TUNED.json", other_choice),
    "a search run dropped": edit_lines("tuning/results.jsonl", lambda lines: lines[1:]),
    "a search row's success raised": edit_lines("tuning/results.jsonl", raise_success),
    "a tuned run dropped": edit_lines("tuned/results.jsonl", lambda lines: lines[1:]),
    "tuned rows of another step size": edit_lines("tuned/results.jsonl", other_hyperparameters),
    "the choice removed": lambda m: m.pop("tuned/TUNED.json"),
    "the tuned headline edited": edit_manifest(**{"tuned.headline": {}}),
    "the tuned runs count edited": edit_manifest(**{"tuned.runs": 7}),
}


def test_a_bundle_with_its_tuned_column_verifies_it_whole(tuned_folder):
    """rb3 ranks on the tuned column: the bundle carries the search, the choice and the tuned
    runs, and the verifier rebuilds the choice from the search's rows."""
    path = tuned_bundle(tuned_folder)
    members = members_of(path)
    assert {"tuning/results.jsonl", "tuned/TUNED.json", "tuned/results.jsonl"} <= set(members)
    assert len(members["tuning/results.jsonl"].splitlines()) == 96
    verdict = verification.verify(path)
    assert verdict.verified, verdict.problems
    assert any("choice rebuilds from the search's 96 rows" in c for c in verdict.checked)
    tuned = json.loads(members["SUBMISSION.json"])["tuned"]
    written = json.loads(
        (tuned_folder / "rb3" / "smoke" / "trajectory_mc+tuned" / "TUNED.json").read_text()
    )
    assert tuned["chosen"] == {f: p["chosen"] for f, p in written["chosen"].items()}
    assert (tuned["runs"], tuned["planned_runs"], tuned["search_runs"]) == (8, 8, 96)


@pytest.mark.parametrize("name", list(TUNED_TAMPERS))
def test_every_edit_of_the_tuned_column_is_refused(tuned_folder, tmp_path, name):
    members = members_of(tuned_bundle(tuned_folder))
    TUNED_TAMPERS[name](members)
    path = write_zip(tmp_path / "forged.zip", members)
    verdict = verification.verify(path)
    assert not verdict.verified, (name, verdict.checked)
    assert all("\n" not in p and len(p) < 600 for p in verdict.problems)


def forge_rows(path: Path, change, keys) -> None:
    """Rewrite the results file ``path`` with ``change`` applied to the rows of ``keys``."""
    lines = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["key"] in keys:
            change(row)
        lines.append(json.dumps(row) + "\n")
    path.write_text("".join(lines))


def raise_curve(row):
    row["success"] = [min(1.0, x + 0.05) for x in row["success"]]


def test_reruns_draw_from_every_column_and_catch_an_invented_search_row(tuned_folder, tmp_path):
    """Spot reruns draw from the search's and the tuned runs' rows as from the default ones
    (each run once): a genuine bundle's rerun that draws a search run matches. A search row
    whose curve was invented, its choice recomputed by ``tune`` and bundled by ``submit``,
    passes every check of the column's structure and choice; the rerun that draws it refuses
    it."""
    import shutil

    members = members_of(tuned_bundle(tuned_folder))
    pool = verification.rerun_pool(members)
    search = {r["key"] for r in submission.rows_of(members, "tuning/results.jsonl")}
    keys = {r["key"] for r in rows(members)} | search
    keys |= {r["key"] for r in submission.rows_of(members, "tuned/results.jsonl")}
    assert sorted(r["key"] for r in pool) == sorted(keys)  # every run, once

    def drawn(pool, seed):
        return {r["key"] for r in verification.chosen_runs(pool, 1, seed)}

    seed = next(s for s in range(10_000) if drawn(pool, s) <= search)
    verdict = verification.verify(tuned_bundle(tuned_folder), rerun=1, rerun_seed=seed)
    assert verdict.verified, verdict.problems
    assert len(verdict.reruns) == 1

    out = tmp_path / "out"
    shutil.copytree(tuned_folder, out)
    forge_rows(out / "rb3" / "smoke" / "trajectory_mc+tuning" / "results.jsonl", raise_curve,
               drawn(pool, seed))  # fmt: skip
    common = ["--protocol", "rb3", "--tier", "smoke", "--out", str(out), "--method",
              "trajectory_mc"]  # fmt: skip
    commands.main(["benchmark", "tune", *common, "--workers", "1", "--no-progress"])
    commands.main(["benchmark", "submit", *common, "--no-lab"])
    forged = tuned_bundle(out)
    assert verification.verify(forged).verified  # its structure and its choice hold
    forged_pool = verification.rerun_pool(members_of(forged))
    seed = next(s for s in range(10_000) if drawn(forged_pool, s) == drawn(pool, seed))
    verdict = verification.verify(forged, rerun=1, rerun_seed=seed)
    assert not verdict.verified
    assert any(p.startswith("a rerun differs from its row") for p in verdict.problems)


def test_a_tuned_row_that_is_a_default_run_must_be_its_row(tuned_folder, tmp_path):
    """Where the choice is the default (smoke's), the tuned runs are the default runs: a tuned
    row with a default run's key and other numbers, bundled by ``submit`` (the tuned entry
    rebuilt to match), is refused."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(tuned_folder, out)
    tuned = out / "rb3" / "smoke" / "trajectory_mc+tuned" / "results.jsonl"
    first = json.loads(tuned.read_text().splitlines()[0])["key"]
    assert first in {r["key"] for r in rows(members_of(tuned_bundle(out)))}
    forge_rows(tuned, raise_curve, {first})
    commands.main(["benchmark", "submit", "--protocol", "rb3", "--tier", "smoke", "--out",
                   str(out), "--method", "trajectory_mc", "--no-lab"])  # fmt: skip
    verdict = verification.verify(tuned_bundle(out))
    assert not verdict.verified
    assert any("is a default run (its key) with other numbers" in p for p in verdict.problems)


def test_submit_refuses_a_search_with_runs_missing_or_a_stale_choice(
    tuned_folder, tmp_path, capsys
):
    import shutil

    out = tmp_path / "out"
    shutil.copytree(tuned_folder, out)
    common = ["benchmark", "submit", "--protocol", "rb3", "--tier", "smoke", "--out", str(out),
              "--method", "trajectory_mc", "--no-lab"]  # fmt: skip
    choice = out / "rb3" / "smoke" / "trajectory_mc+tuned" / "TUNED.json"
    written = json.loads(choice.read_text())
    other_choice(written)
    choice.write_text(json.dumps(written))
    with pytest.raises(SystemExit):
        commands.main(common)
    err = capsys.readouterr().err
    assert "TUNED.json is not the choice of the search's runs" in err
    assert "benchmark tune --protocol rb3 --tier smoke --method trajectory_mc" in err
    search = out / "rb3" / "smoke" / "trajectory_mc+tuning" / "results.jsonl"
    search.write_text("".join(search.read_text().splitlines(keepends=True)[5:]))
    with pytest.raises(SystemExit):
        commands.main(common)
    assert "5 of the search's 96 runs are missing" in capsys.readouterr().err


def test_the_site_shows_a_verified_tuned_column_beside_the_default(tuned_folder, tmp_path):
    """A registry entry whose bundle holds its tuned column: its page lists the chosen values
    and the tuned headline, and the leaderboard's section scores the tuned column against the
    references' tuned one (here the bundle's own columns stand in for the references)."""
    from baselines.experiments.benchmark.registry_verification import check_registry
    from baselines.experiments.site import submissions as site_submissions

    folder = tmp_path / "registry" / "rb3" / "smoke" / "tuned-example"
    folder.mkdir(parents=True)
    (folder / "submission.zip").write_bytes(tuned_bundle(tuned_folder).read_bytes())
    entry = {"format": "routine-envs registry entry 1", "submitter": "a test", "date": "2026-12-06",
             "link": None}  # fmt: skip
    (folder / "ENTRY.json").write_text(json.dumps(entry))
    (checked,) = check_registry(tmp_path / "registry")
    assert checked.verified, checked.problems
    default = checked.records
    tuned = site_submissions.tuned_rows(checked)
    assert len(tuned) == 8 and all(r["hyperparameters"] for r in tuned)
    section = site_submissions.leaderboard_section(
        [checked], {"trajectory_mc": default}, {"trajectory_mc": tuned}
    )
    assert "IQM normalized AUC, tuned column [95% CI]" in section
    assert section.count("references' IQM, tuned") == 1
    assert "tuned column [95% CI]" not in site_submissions.leaderboard_section(
        [checked], {"trajectory_mc": default}
    )
    page = site_submissions.tuned_section(checked.manifest.get("tuned"), ["setting"] * 5)
    chosen = json.loads(members_of(tuned_bundle(tuned_folder))["SUBMISSION.json"])["tuned"]
    (values,) = chosen["chosen"].values()
    assert f"learning_rate {values['learning_rate']:g}" in page
    assert "8 of 8 tuned runs, chosen by a search of 96 runs" in page
    assert "No tuned column" in site_submissions.tuned_section(None, ["setting"] * 5)
