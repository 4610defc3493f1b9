"""``routine-envs site`` (issue 41): a static site of the shipped references whose every link
and picture resolves from ``file://``, whose leaderboard page shows the leaderboard's numbers,
and which a real browser renders (where Chromium is installed)."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("markdown_it")

from baselines.experiments.site import build


class Links(HTMLParser):
    """Every ``href`` and ``src`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site of rb3 lite's ppo and trajectory_mc (two references: the whole build's code
    paths in seconds)."""
    (tier,) = [t for t in build.shipped_tiers(["rb3"]) if t.name == "lite"]
    keep = ("ppo", "trajectory_mc")
    small = build.Tier(
        tier.protocol,
        tier.name,
        tier.refs,
        {m: tier.found[m] for m in keep},
        {m: tier.tuned[m] for m in keep},
    )
    out = tmp_path_factory.mktemp("site") / "site"
    original = build.shipped_tiers
    build.shipped_tiers = lambda versions: [small]
    try:
        build.main(build.SiteArgs(out=out))
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
    }
    checked = 0
    for page in pages:
        parser = Links()
        parser.feed(page.read_text())
        for target in parser.targets:
            assert not target.startswith(("http:", "https:", "/")), (page, target)  # relative
            path = target.split("#", 1)[0]
            if path:
                assert (page.parent / path).resolve().is_file(), f"{page}: {target}"
                checked += 1
    assert checked > 20


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
