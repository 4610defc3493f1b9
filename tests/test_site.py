"""``routine-envs site`` (issue 41): a static site of the shipped references and the verified
submissions whose every link and picture resolves from ``file://``, whose leaderboard page shows
the leaderboard's numbers and the tier's submissions apart, which refuses to build over a
submission that does not verify, and which a real browser renders (where Chromium is
installed)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("markdown_it")

from baselines.experiments.benchmark import registry
from baselines.experiments.site import build

ENTRY = "rb3/lite/entropy-weighted-mc"
LINK = "https://example.org/entropy-weighted-mc?x=1&y=2"


class Links(HTMLParser):
    """Every ``href`` and ``src`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if "external" in (found.get("rel") or "").split():
            self.external.append(found["href"])  # a submitter's own page, said to be outside
            return
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def registry_copy(root, change=None):
    """The checkout's registry entry ``ENTRY`` copied under ``root`` with a link in its
    ENTRY.json, its bundle passed through ``change(bytes) -> bytes``."""
    source = registry.DEFAULT_ROOT / ENTRY
    folder = root / ENTRY
    folder.mkdir(parents=True)
    data = (source / registry.BUNDLE).read_bytes()
    (folder / registry.BUNDLE).write_bytes(change(data) if change else data)
    entry = json.loads((source / registry.ENTRY).read_text())
    (folder / registry.ENTRY).write_text(json.dumps({**entry, "link": LINK}))
    return root


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site of rb3 lite's ppo and trajectory_mc (two references: the whole build's code
    paths in seconds) and the registered submission, one of its runs trained again."""
    (tier,) = [t for t in build.shipped_tiers(["rb3"]) if t.name == "lite"]
    keep = ("ppo", "trajectory_mc")
    small = build.ShippedTier(
        tier.protocol,
        tier.name,
        tier.refs,
        {m: tier.found[m] for m in keep},
        {m: tier.tuned[m] for m in keep},
    )
    out = tmp_path_factory.mktemp("site") / "site"
    root = registry_copy(tmp_path_factory.mktemp("registry"))
    original = build.shipped_tiers
    build.shipped_tiers = lambda versions: [small]
    try:
        build.main(build.SiteArgs(out=out, submissions=root, rerun=1, rerun_seed=1))
    finally:
        build.shipped_tiers = original
    return out, small


def test_every_link_and_picture_of_every_page_resolves(site):
    out, _ = site
    pages = sorted(out.rglob("*.html"))
    assert {p.relative_to(out).as_posix() for p in pages} >= {
        "index.html",
        "leaderboards/rb3-lite.html",
        "methods/rb3-lite-ppo/index.html",
        "envs/DilutedDoors-v1.html",
        "submissions/rb3-lite-entropy-weighted-mc/index.html",
    }
    checked = 0
    external = []
    for page in pages:
        parser = Links()
        parser.feed(page.read_text())
        external += parser.external
        for target in parser.targets:
            assert not target.startswith(("http:", "https:", "/")), (page, target)  # relative
            path = target.split("#", 1)[0]
            if path:
                assert (page.parent / path).resolve().is_file(), f"{page}: {target}"
                checked += 1
    assert checked > 20
    assert external == [LINK]  # the entry's own link, on its page only


def test_the_leaderboard_page_shows_the_leaderboards_numbers(site):
    from baselines.experiments.benchmark import command

    out, tier = site
    text = command.leaderboard_text(
        tier.protocol, tier.name, tier.refs, tier.found, None, tier.tuned
    )
    page = (out / "leaderboards" / "rb3-lite.html").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ppo |")]
    assert rows
    for row in rows:  # every cell of ppo's rows, as the page's table cells
        for cell in row.strip("|").split("|"):
            assert f"<td>{cell.strip().replace('>', '&gt;').replace('<', '&lt;')}" in page


def test_the_leaderboard_shows_the_verified_submission_apart_with_its_page(site):
    from baselines.experiments.benchmark import aggregates, submission

    out, tier = site
    page = (out / "leaderboards" / "rb3-lite.html").read_text()
    section = page[page.index('<h2 id="submissions">') : page.index("<h1>Leaderboard")]
    bundle = registry.DEFAULT_ROOT / ENTRY / registry.BUNDLE
    members = submission.read(bundle)
    manifest = json.loads(members["SUBMISSION.json"])
    rows = submission.rows_of(members)
    scores = aggregates.score_matrices({**tier.found, "sub": rows}).scores
    iqm = aggregates.iqm_interval(scores["sub"], aggregates.method_seed(manifest["method"]))
    for text in [
        'href="../submissions/rb3-lite-entropy-weighted-mc/index.html"',
        "my_estimators:EntropyWeightedMC{&quot;power&quot;: 1.0}",
        '<span class="badge">verified submission</span>',
        json.loads((registry.DEFAULT_ROOT / ENTRY / registry.ENTRY).read_text())["date"],
        f"{iqm[0]:.3f} [{iqm[1]:.3f}, {iqm[2]:.3f}]",
        manifest["git_commit"][:12],
        "1 runs trained again matched their rows",
        "(seed 1)",
    ]:
        assert text in section, text
    own = (out / "submissions" / "rb3-lite-entropy-weighted-mc" / "index.html").read_text()
    assert "Verified by checkout" in own and "every part of the bundle rebuilds" in own
    assert 'href="https://example.org/entropy-weighted-mc?x=1&amp;y=2"' in own
    assert "class EntropyWeightedMC" in own  # its source, escaped text
    rebuilt = (out / "submissions" / "rb3-lite-entropy-weighted-mc" / "scores.json").read_bytes()
    assert rebuilt == members["report/scores.json"]  # the verified card is the bundle's


def test_a_submission_that_does_not_verify_stops_the_build(tmp_path):
    """A row of the registered bundle edited (its hashes fixed): the build refuses in one line
    naming the entry, before anything is written."""

    def edit_a_row(data):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = {i.filename: z.read(i) for i in z.infolist()}
        lines = members["results.jsonl"].decode().splitlines()
        row = json.loads(lines[0])
        row["seed"] += 1
        members["results.jsonl"] = "\n".join([json.dumps(row), *lines[1:], ""]).encode()
        manifest = json.loads(members["SUBMISSION.json"])
        manifest["files"] = {
            n: hashlib.sha256(d).hexdigest() for n, d in members.items() if n != "SUBMISSION.json"
        }
        members["SUBMISSION.json"] = json.dumps(manifest).encode()
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as z:
            for name, member in members.items():
                z.writestr(name, member)
        return buffer.getvalue()

    root = registry_copy(tmp_path / "registry", edit_a_row)
    original = build.shipped_tiers
    build.shipped_tiers = lambda versions: []
    try:
        with pytest.raises(ValueError) as refused:
            build.main(build.SiteArgs(out=tmp_path / "site", submissions=root))
    finally:
        build.shipped_tiers = original
    message = str(refused.value)
    assert message.startswith(f"submissions/{ENTRY}: NOT verified: ") and "\n" not in message
    assert "not their own fields'" in message
    assert not (tmp_path / "site").exists()


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium: apt install chromium")
def test_a_browser_renders_the_leaderboard(site, tmp_path):
    """Headless Chromium opens the page from file:// (the interactive chart's JavaScript from
    the site itself, offline): the chart is drawn and replaces its picture, the page logs
    nothing to the console (no error, no warning), and a screenshot is written."""
    from baselines.experiments.benchmark import scores
    from baselines.experiments.site import charts

    out, tier = site
    shot = tmp_path / "leaderboard.png"
    page = (out / "leaderboards" / "rb3-lite.html").as_uri()
    browser = ["chromium", "--headless", "--no-sandbox", "--disable-gpu",
               "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000"]  # fmt: skip
    runs = [
        subprocess.run([*browser, *args, page], capture_output=True, text=True, timeout=180)
        for args in ([f"--screenshot={shot}", "--window-size=1300,1600"], ["--dump-dom"])
    ]
    for done in runs:
        assert done.returncode == 0, done.stderr[-2000:]
        console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
        assert not console, console  # e.g. an Uncaught error, a Vega warning
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    dom = runs[1].stdout
    chart = dom[dom.index('<div id="steps"') : dom.index('id="steps-picture"')]
    rows = charts.steps_rows({m: scores.method_scores(r) for m, r in tier.found.items()})
    assert chart.count('aria-roledescription="point"') == len(rows) == 2 * 28  # every point
    assert '<p id="steps-picture" hidden=""' in dom  # the picture gives way to the chart
    assert '<span id="steps-note">' in dom  # and how to use it is said (not without JS)
    assert '<span id="steps-note" hidden>' in (out / "leaderboards" / "rb3-lite.html").read_text()
