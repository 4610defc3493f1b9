"""``routine-envs site --out DIR``: a static website of the shipped references and the
verified submissions.

Pages (every link relative; no server; readable without JavaScript, where the steps chart is
its picture):

- ``index.html``: what the suite measures, every protocol tier that ships references (verified
  against its pinned manifest, or the build stops), the paper's numbers beside ours, the
  environments;
- ``leaderboards/<version>-<tier>.html``: the tier's leaderboard (the same text as its
  ``LEADERBOARD.md``, built from the same rows), steps against rho per setting with every
  method (an interactive chart, :mod:`~baselines.experiments.site.charts`, over its picture),
  the probability-of-improvement matrix and the performance profiles as pictures;
- ``methods/<version>-<tier>-<slug>/index.html``: each reference's report card against the
  others (curves, steps against rho, the decisions axis, the lab, the drops manifest, its
  privileged fields), with its source;
- ``envs/<id>.html``: each environment: its ids, what sets rho, its docstring (what the
  observation reveals and when), a picture;
- ``submissions/<version>-<tier>-<name>/index.html``: each entry of the submissions registry,
  verified before anything is written (one that is not stops the build, naming it), shown
  apart on its tier's leaderboard page (:mod:`~baselines.experiments.site.submissions`).

The references are read through :func:`~baselines.experiments.benchmark.manifest.open_references`
(verified): a changed reference file stops the build with the file's name.
"""

from __future__ import annotations

import html
import inspect
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.experiments.benchmark.shipped import ShippedTier, shipped_tiers
from baselines.experiments.site import charts, submissions
from baselines.experiments.site import html as pages

PROFILE_GRID = tuple(i / 40 for i in range(41))
"""The performance profiles' taus on the site: every 0.025, the leaderboard's among them."""
CHART_NOTE = (
    "Hover a point: the method, rho, its steps to target and their 95% interval, how many runs "
    "reached the target; click a method in the legend to show it alone (shift-click: more)."
)
"""What the steps chart's caption says."""
NAV = (("routine-envs", "index.html"), ("Leaderboards", "index.html#leaderboards"),
       ("Environments", "index.html#environments"))  # fmt: skip


@dataclass
class SiteArgs:
    """Settings of ``site``."""

    out: Path = field(default=Path("results/site"), metadata={"help": "the site's folder"})
    protocols: list[str] = field(
        default_factory=list,
        metadata={"help": "protocol versions to show (default: every one with shipped references)"},
    )
    cards: bool = field(
        default=True,
        metadata={"help": "write a page per reference (its report card; most of the build time)"},
    )
    submissions: Path | None = field(
        default=None,
        metadata={
            "help": "the submissions registry whose entries the site shows, each verified first "
            "(default: the checkout's submissions/, none where there is none)"
        },
    )
    rerun: int = field(
        default=0,
        metadata={
            "help": "train this many runs of each submission again and compare them bit for "
            "bit, as benchmark verify-submissions --rerun does. THIS RUNS THE SUBMITTERS' CODE, "
            "in a subprocess; without it nothing of a bundle is imported or run",
            "min": 0,
        },
    )
    rerun_seed: int = field(
        default=0, metadata={"help": "the seed that chooses which runs --rerun trains"}
    )
    rerun_budget: float = field(
        default=600.0,
        metadata={"help": "the most CPU seconds a submission's --rerun runs may cost", "min": 0},
    )


# ------------------------------------------------------------------------ leaderboards
def leaderboard_page(
    tier: ShippedTier, out: Path, cards: dict[str, str], submitted: str = ""
) -> dict[str, Any]:
    """Write ``leaderboards/<slug>.html`` and its figures (``submitted``: the section of the
    tier's verified submissions, HTML); what the index says of it."""
    from baselines.experiments.benchmark import aggregates, command, scores
    from baselines.experiments.benchmark.figures import method_colours

    folder = out / "leaderboards"
    folder.mkdir(parents=True, exist_ok=True)
    # once per tier: the leaderboard's section (where the protocol has one) and the figure
    result = aggregates.aggregate(tier.found, tier.tuned or None, PROFILE_GRID)
    text = command.leaderboard_text(
        tier.protocol, tier.name, tier.refs, tier.found, result, tier.tuned
    )
    (folder / f"{tier.slug}.md").write_text(text)  # the numbers the page shows, as text
    colours = method_colours(tier.found)  # a reference's colour is the same on every page
    computed = {m: scores.method_scores(r) for m, r in tier.found.items()}  # once: both draw it
    picture = f"{tier.slug}-steps.png"  # the chart's picture: what a page without JS shows
    plot_steps(tier, computed, folder / picture, colours)
    chart = charts.steps_chart(charts.steps_rows(computed), colours, steps_title(tier))
    alt = "steps to target against rho, every method"
    steps = charts.embed("steps", chart, picture, alt, CHART_NOTE)
    figures = []
    if not (out / charts.SCRIPT).is_file():  # the charts' JavaScript, once per site
        charts.write_script(out)
    if len(result["profiles"]) > 1:
        figures.append((f"{tier.slug}-aggregates.png", "probability of improvement, profiles"))
        plot_aggregates(result, folder / figures[-1][0], colours)
    links = "".join(
        f'<li><a href="../{cards[m]}">{html.escape(m)}</a></li>' for m in tier.found if m in cards
    )
    body = [
        f'<p class="note">{badge(tier.refs)} The text below is the tier\'s leaderboard '
        f'(<a href="{tier.slug}.md">as Markdown</a>), built from the shipped rows.</p>',
        charts.script(1),
        steps,
        *(pages.figure(name, alt) for name, alt in figures),
        f"<h2>Each reference's card</h2><ul>{links}</ul>" if links else "",
        submitted,
        pages.markdown(text),
    ]
    title = f"Leaderboard: protocol {tier.protocol.version}, tier {tier.name}"
    (folder / f"{tier.slug}.html").write_text(pages.page(title, "\n".join(body), 1, NAV))
    runs = {m: len(r) for m, r in tier.found.items()}
    return {"path": f"leaderboards/{tier.slug}.html", "methods": len(runs), "runs": runs}


def badge(refs: Any) -> str:
    """The references' verification as a badge."""
    kind = "badge" if refs.verified else "badge unverified"
    return f'<span class="{kind}">{html.escape(refs.status)}</span>'


def steps_title(tier: ShippedTier) -> str:
    """What the steps-against-rho figure and chart of ``tier`` show."""
    return (
        f"{tier.protocol.version} {tier.name}: environment steps until success 0.9 "
        "(IQM over seeds, 95% interval; censored runs count at their budget)"
    )


def plot_steps(
    tier: ShippedTier, computed: dict[str, Any], path: Path, colours: dict[str, str]
) -> None:
    """One panel per setting: each method's IQM steps to target against rho (log-log) in its
    colour (``colours``), its 95% interval as a band; hollow markers where runs were censored
    (a lower bound). ``computed``: :func:`~baselines.experiments.benchmark.scores.method_scores`
    of each method of ``tier``."""
    from baselines.lib.plotting import plain_log_ticks, style
    from baselines.lib.tables import pyplot

    plt = pyplot()
    settings = list(dict.fromkeys(s for c in computed.values() for s in c["settings"]))
    cols = min(4, len(settings))
    rows = -(-len(settings) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows + 1.2), squeeze=False)
    for ax, setting in zip(axes.reshape(-1), settings, strict=False):
        for index, (method, comp) in enumerate(computed.items()):
            entry = comp["settings"].get(setting)
            if entry is None:
                continue
            pts = [r for r in entry["rows"] if r.get("steps_iqm") is not None]
            if not pts:
                continue
            rho = [r["rho"] for r in pts]
            colour = colours[method]
            ax.plot(rho, [r["steps_iqm"] for r in pts], label=method, color=colour,
                    **style(index), ms=4)  # fmt: skip
            ax.fill_between(rho, [r["steps_low"] for r in pts], [r["steps_high"] for r in pts],
                            color=colour, alpha=0.12)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log_ticks(ax)
        ax.set_title(setting, fontsize=8)
        ax.set_xlabel("decision density rho", fontsize=8)
        ax.set_ylabel("steps to target (IQM)", fontsize=8)
    for ax in axes.reshape(-1)[len(settings) :]:
        ax.axis("off")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, len(labels)), fontsize=8)
    fig.suptitle(steps_title(tier), fontsize=10)
    fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(labels) // 5), 1, 0.97))
    fig.savefig(path, dpi=100, bbox_inches="tight")  # rotated labels too
    plt.close(fig)


def plot_aggregates(result: dict[str, Any], path: Path, colours: dict[str, str]) -> None:
    """Left: the probability-of-improvement matrix; right: the performance profiles with
    their 95% stratified bootstrap bands, each method in its colour (``colours``); ``result``:
    :func:`~baselines.experiments.benchmark.aggregates.aggregate`'s, its profiles at
    :data:`PROFILE_GRID`."""
    from baselines.lib.tables import pyplot

    plt = pyplot()
    tuned = result["ranked_column"] == "tuned"
    ranked = result["iqm_tuned" if tuned else "iqm"]
    names = sorted(result["profiles"], key=lambda m: -ranked[m][0])
    n = len(names)
    poi = np.full((n, n), np.nan)
    for i, x in enumerate(names):
        for j, y in enumerate(names):
            if i != j:
                poi[i, j] = result["improvement"][(x, y)][0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8 + 0.45 * n, 5.4 + 0.15 * n))
    image = left.imshow(poi, cmap="RdBu", vmin=0, vmax=1)
    left.set_xticks(range(n), names, rotation=60, ha="right", fontsize=7)
    left.set_yticks(range(n), names, fontsize=7)
    for i in range(n):
        for j in range(n):
            if i != j:
                left.text(j, i, f"{poi[i, j]:.2f}", ha="center", va="center", fontsize=6)
    left.set_title("P(row beats column on a task)", fontsize=9)
    fig.colorbar(image, ax=left, fraction=0.046)
    taus = result["profile_taus"]
    for name in names:
        est, low, high = result["profiles"][name]
        right.plot(taus, est, label=name, lw=1.2, color=colours[name])
        right.fill_between(taus, low, high, alpha=0.15, color=colours[name])
    right.set_xlabel("normalized AUC threshold tau", fontsize=8)
    right.set_ylabel("share of runs scoring above tau", fontsize=8)
    right.set_title("performance profiles (95% stratified bootstrap bands)", fontsize=9)
    right.legend(fontsize=6, loc="lower left")
    tasks, seeds = (result[k] for k in (("tuned_tasks", "tuned_seeds") if tuned else
                                        ("tasks", "seeds")))  # fmt: skip
    fig.suptitle(
        f"Aggregates over {tasks} tasks x {len(seeds)} seeds ({result['ranked_column']} column)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")  # rotated labels too
    plt.close(fig)


# ------------------------------------------------------------------------ method pages
def method_pages(tier: ShippedTier, out: Path, started: float) -> dict[str, str]:
    """Each reference's report card against the others, as a page; ``{method: path}``."""
    import tempfile

    from baselines.experiments.benchmark import card, drops
    from baselines.experiments.benchmark import lab as benchmark_lab
    from baselines.lib import protocol_runs

    written = {}
    tier_obj = tier.protocol.tier(tier.name)
    measured = tier.protocol.report["reference_lab"] != "none"
    cache = benchmark_lab.read_lab(tier.refs.folder)
    for method, records in tier.found.items():
        slug = f"{tier.slug}-{protocol_runs.method_slug(method)}"
        folder = out / "methods" / slug
        others = {m: r for m, r in tier.found.items() if m != method}
        in_lab = bool(card.in_lab([method]))
        settings = card.CardSettings(method, tier.name, tier.protocol.trainer, None, measured)
        with tempfile.TemporaryDirectory() as configs:
            jobs = protocol_runs.plan(
                tier.protocol, tier_obj, method, Path(configs), trainer=tier.protocol.trainer
            )
        lab = benchmark_lab.lab_rows(
            tier.protocol,
            tier_obj,
            card.in_lab([method, *others]),
            measure=measured and in_lab,
            cache=cache,
        )
        card.write(
            folder,
            tier.protocol,
            settings,
            records,
            others,
            tier.refs,
            lab,
            drops.drops_manifest(jobs, records, {}),
            card.reads_of(method, records, others),
            card.claims_now(started),
            None,
        )
        report = (folder / "report.md").read_text()
        source = source_line(method)
        figures = "".join(
            pages.figure(p.name, p.stem.replace("_", " ")) for p in sorted(folder.glob("*.png"))
        )
        body = (
            f'<p class="note">{badge(tier.refs)} {source} This reference\'s report card '
            f'against the tier\'s other references (<a href="report.md">as Markdown</a>, '
            f'<a href="scores.json">scores.json</a>).</p>\n{figures}\n{pages.markdown(report)}'
        )
        title = f"{method} on {tier.protocol.version} {tier.name}"
        (folder / "index.html").write_text(pages.page(title, body, 2, NAV))
        written[method] = f"methods/{slug}/index.html"
    return written


def source_line(method: str) -> str:
    """Where a built-in method's estimator is defined (its module), as words."""
    from routine_envs import credit

    target = method.split("{", 1)[0].strip()
    if target == "ppo":
        return "Source: stable-baselines3's PPO with its learned critic (GAE)."
    if target not in credit.ESTIMATORS:
        return ""
    cls = credit.estimator_class(target)
    return f"Source: <code>{html.escape(cls.__module__)}.{html.escape(cls.__qualname__)}</code>."


# ------------------------------------------------------------------------ environments
def env_pages(out: Path) -> list[dict[str, str]]:
    """A page per environment class (its ids, what sets rho, its docstring, a picture)."""
    import gymnasium as gym

    import routine_envs
    from routine_envs.envs.base import env_class
    from routine_envs.registration import ENVIRONMENTS

    gym.register_envs(routine_envs)
    folder = out / "envs"
    folder.mkdir(parents=True, exist_ok=True)
    by_class: dict[type, list[Any]] = {}
    for entry in ENVIRONMENTS:
        if entry.dynamics is not None:
            by_class.setdefault(env_class(entry.dynamics), []).append(entry)
    index = []
    for cls, entries in by_class.items():
        name = entries[0].id
        rows = [
            [f"<code>{html.escape(e.id)}</code>", html.escape(e.rho_rule or "n/a"),
             f"<code>{html.escape(str(e.density_kwarg))}</code>"]
            for e in entries
        ]  # fmt: skip
        with warnings.catch_warnings():  # every version has a page, the old ones too
            warnings.filterwarnings("ignore", message=".*out of date.*")
            picture = env_picture(name, folder / f"{name}.png")
        doc = docstring_html(inspect.cleandoc(cls.__doc__ or ""), folder)
        body = [
            pages.table(["id", "rho", "density keyword"], rows),
            pages.figure(f"{name}.png", f"{name} after reset") if picture else "",
            doc,
        ]
        (folder / f"{name}.html").write_text(pages.page(name, "\n".join(body), 1, NAV))
        index.append({"id": name, "path": f"envs/{name}.html", "rho": entries[0].rho_rule})
    return index


DOCS_PICTURES = Path(__file__).resolve().parents[3] / "docs" / "envs"
"""Where an environment docstring's pictures live in a checkout (``docs/envs/``)."""


def docstring_html(doc: str, folder: Path) -> str:
    """An environment's docstring as HTML, the pictures it shows copied beside its page from
    ``docs/envs/`` (a checkout); one that is not there (an installed package has no docs)
    becomes its alternative text."""
    import re

    body = pages.markdown(doc)
    for match in re.finditer(r'<img src="([^"/]+)" alt="([^"]*)"', body):
        source = DOCS_PICTURES / match[1]
        if source.is_file():
            shutil.copyfile(source, folder / match[1])
        else:
            body = body.replace(match[0] + " />", f"<em>({match[2] or match[1]})</em>")
            body = body.replace(match[0] + ">", f"<em>({match[2] or match[1]})</em>")
    return body


def env_picture(env_id: str, path: Path) -> bool:
    """Save the environment's picture after a few steps of a seeded random policy, where it
    renders one (``rgb_array``); whether it did."""
    import gymnasium as gym

    from baselines.lib.tables import pyplot

    if "rgb_array" not in (gym.make(env_id).metadata.get("render_modes") or ()):
        return False
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(3):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    frame = env.render()
    if not isinstance(frame, np.ndarray):
        return False
    pyplot().imsave(path, np.kron(frame, np.ones((3, 3, 1), dtype=frame.dtype)))
    return True


# ------------------------------------------------------------------------ the index
def index_page(
    boards: list[tuple[ShippedTier, dict[str, Any]]], envs: list[dict[str, str]], submitted: str
) -> str:
    """The home page: what the suite measures, the leaderboards, the paper's numbers, the
    verified submissions (``submitted``: their section, HTML), envs."""
    rows = [
        [f'<a href="{b["path"]}">{html.escape(t.protocol.version)} {html.escape(t.name)}</a>',
         html.escape(t.protocol.status), str(b["methods"]),
         str(max(b["runs"].values(), default=0)), badge(t.refs)]
        for t, b in boards
    ]  # fmt: skip
    from baselines.lib.lab import PAPER

    with_snr = [b for t, b in boards if t.protocol.tier(t.name).snr is not None]
    paper = (
        f"<p>The paper's own numbers (slope {PAPER['slope']}, R^2 {PAPER['r2']}, about 17.4x "
        "at rho 1/51, trajectory-level training needing about 2x the steps) beside ours: "
        f'<a href="{with_snr[-1]["path"]}">the latest paper tier\'s leaderboard</a>, section '
        '"The paper\'s quantities".</p>'
        if with_snr
        else ""
    )
    env_rows = [
        [f'<a href="{e["path"]}">{html.escape(e["id"])}</a>', html.escape(e["rho"] or "")]
        for e in envs
    ]
    body = f"""<h1>routine-envs: credit assignment under routine</h1>
<p>Multi-turn agents spend most steps on <em>routine</em> actions whose choice does not change
the outcome and a few on <em>critical</em> ones that decide it. The decision density rho
(critical states over episode length) sets how much a trajectory-level advantage is diluted.
Every environment here annotates its critical states; the benchmark scores credit-assignment
methods by a versioned protocol against shipped, verified references.</p>
<h2 id="leaderboards">Leaderboards</h2>
{pages.table(["protocol, tier", "status", "methods", "runs per method", "references"], rows)}
{paper}
<h2 id="submissions">Submissions</h2>
{submitted}
<h2 id="environments">Environments</h2>
{pages.table(["environment", "what sets rho"], env_rows)}
"""
    return pages.page("routine-envs", body, 0, NAV)


def main(args: SiteArgs) -> dict[str, Any]:
    """Build the site into ``args.out`` (replacing what a previous build wrote there)."""
    from baselines.experiments.benchmark import report

    started = time.perf_counter()
    tiers = shipped_tiers(list(args.protocols))  # verified before anything is written
    entries = submissions.verified(  # likewise: an entry not verified stops the build
        args.submissions, args.rerun, args.rerun_seed, args.rerun_budget
    )
    if args.out.exists():
        if not (args.out / "index.html").is_file() and any(args.out.iterdir()):
            raise ValueError(f"--out {args.out}: not empty and not a site; give a new folder")
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    (args.out / "style.css").write_text(pages.STYLE)
    boards = []
    for tier in tiers:
        cards = method_pages(tier, args.out, started) if args.cards else {}
        mine = [e for e in entries if e.where.startswith(f"{tier.protocol.version}/{tier.name}/")]
        section = submissions.leaderboard_section(mine, tier.found, tier.tuned)
        boards.append((tier, leaderboard_page(tier, args.out, cards, section)))
    checkout = report.git_commit(Path(__file__).parent)
    for entry in entries:
        submissions.write_page(entry, args.out, checkout, NAV)
    envs = env_pages(args.out)
    (args.out / "index.html").write_text(
        index_page(boards, envs, submissions.index_section(entries))
    )
    files = [p for p in args.out.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    seconds = time.perf_counter() - started
    print(f"wrote {args.out}/index.html: {len(files)} files, {size / 1e6:.1f} MB, {seconds:.0f} s")
    return {"files": len(files), "bytes": size, "seconds": seconds}
