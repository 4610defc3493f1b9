"""The registry's submissions on the site: each verified entry apart from the references on its
protocol tier's leaderboard page, a page of its own, and a list on the home page; a registry
with an entry that is not verified stops the build (:func:`verified`).

Everything an entry says is untrusted text: escaped where it is shown, its link shown only as
the ``https://`` address :func:`~baselines.experiments.benchmark.registry.is_https` allows. The
entry's card on its page is the card rebuilt from its rows by the verification (byte for byte
the bundle's, with the verification's section), never the bundle's own files.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baselines.experiments.benchmark import registry, submission, tuned_column
from baselines.experiments.benchmark.registry_verification import Checked, check_registry
from baselines.experiments.site import html as pages


def verified(
    root: Path | None, rerun: int = 0, seed: int = 0, budget: float = 600.0
) -> list[Checked]:
    """Every entry of the registry at ``root`` (default: the checkout's, none where it has
    none), checked as ``benchmark verify-submissions`` checks it; ``ValueError`` naming the
    first entry that is not verified (the site shows verified submissions only)."""
    if root is None:
        root = registry.DEFAULT_ROOT
        if not root.is_dir():
            return []
    try:
        checked = check_registry(root, rerun, seed, budget)
    except registry.InvalidEntry as err:
        raise ValueError(str(err)) from None
    for entry in checked:
        if not entry.verified:
            raise ValueError(
                f"submissions/{entry.line()} (the site lists verified submissions only: fix or "
                "remove the entry; benchmark verify-submissions says more)"
            )
    return checked


def slug(entry: Checked) -> str:
    return entry.where.replace("/", "-")


def page_path(entry: Checked) -> str:
    """The entry's page, from the site's root."""
    return f"submissions/{slug(entry)}/index.html"


def privileged_of(entry: Checked) -> list[str]:
    """The privileged fields the entry's method read (its rebuilt manifest's)."""
    return [str(f) for f in entry.manifest.get("privileged_fields_read") or []]


def method_cell(entry: Checked, up: str) -> str:
    """The entry's method, linked to its page, marked as a submission (and privileged)."""
    reads = privileged_of(entry)
    mark = f" (privileged: {html.escape(', '.join(reads))})" if reads else ""
    return (
        f'<a href="{up}{page_path(entry)}"><code>{html.escape(entry.fields["method"])}</code></a>'
        f'{mark} <span class="badge">verified submission</span>'
    )


def iqm_against(
    entry: Checked, records: Sequence[Mapping[str, Any]], found: Mapping[str, Sequence[Any]]
) -> tuple[tuple[float, float, float], int, int] | str:
    """The IQM normalized AUC of ``records`` (one of the entry's columns) with its 95%
    stratified bootstrap interval over the tasks they share with the references' rows ``found``
    (the same column of each reference), and how many of those references score a lower IQM
    there, of how many; or why there is none."""
    from baselines.experiments.benchmark import aggregates

    key = f"submission {entry.where}"
    try:
        matrices = aggregates.score_matrices({**found, key: list(records)})
    except ValueError as err:
        return str(err)
    mine = aggregates.iqm_interval(
        matrices.scores[key], aggregates.method_seed(entry.fields["method"])
    )
    below = sum(aggregates.iqm(matrices.scores[m]) < mine[0] for m in found)
    return mine, below, len(found)


def score_cell(placed: tuple[tuple[float, float, float], int, int] | str, column: str) -> str:
    """:func:`iqm_against`'s result as a table cell."""
    if isinstance(placed, str):
        return f"n/a ({html.escape(placed[:120])})"
    (est, low, high), below, of = placed
    return f"{est:.3f} [{low:.3f}, {high:.3f}]; above {below} of the {of} references' IQM, {column}"


def tuned_rows(entry: Checked) -> list[dict[str, Any]]:
    """The entry's tuned column as verified (none where its bundle has none)."""
    if tuned_column.RUNS not in entry.members:
        return []
    return submission.rows_of(entry.members, tuned_column.RUNS)


def leaderboard_section(
    entries: Sequence[Checked], found: Mapping[str, Any], tuned: Mapping[str, Any] | None = None
) -> str:
    """The leaderboard page's section of its tier's verified submissions (empty without):
    each one's IQM against the references' default column (``found``) and, where the tier has
    a tuned column (``tuned``), its tuned column's against theirs."""
    if not entries:
        return ""
    rows = []
    for entry in entries:
        cells = [score_cell(iqm_against(entry, entry.records, found), "default")]
        if tuned:
            mine = tuned_rows(entry)
            cells.append(
                score_cell(iqm_against(entry, mine, tuned), "tuned")
                if mine
                else "no tuned column in the bundle"
            )
        rows.append(
            [
                method_cell(entry, "../"),
                html.escape(entry.entry.submitter if entry.entry else ""),
                html.escape(entry.entry.date if entry.entry else ""),
                *cells,
                str(entry.manifest.get("runs")) + (" (partial)" if entry.fields["partial"] else ""),
                f"<code>{html.escape(str(entry.manifest.get('git_commit'))[:12])}</code>",
                html.escape(entry.rerun_text()),
            ]
        )
    columns = ["IQM normalized AUC, default column [95% CI]"]
    if tuned:
        columns.append("IQM normalized AUC, tuned column [95% CI]")
    table = pages.table(
        ["submission", "submitted by", "date", *columns, "runs", "made at commit", "reruns"], rows
    )
    which = (
        "default column, and their tuned column against the references' tuned one where the "
        "bundle holds it"
        if tuned
        else "default column"
    )
    return (
        '<h2 id="submissions">Submissions</h2>\n<p class="note">Outside methods sent by pull '
        "request (<code>submissions/</code>), not references: each verified when this site "
        "was built (every part of its bundle rebuilt from its rows; the reruns trained again "
        "here). Their IQM is over the tasks they share with the references' "
        f"{which}; the tables below rank the references alone.</p>\n" + table
    )


def index_section(entries: Sequence[Checked]) -> str:
    """The home page's list of every verified submission."""
    if not entries:
        return (
            "<p>No outside submission is registered yet: send one as docs/benchmark.md "
            '("Submitting a result") says; it is verified before it is listed.</p>'
        )
    rows = [
        [method_cell(e, ""), html.escape(f"{e.fields['version']} {e.fields['tier']}"),
         html.escape(e.entry.submitter if e.entry else ""),
         html.escape(e.entry.date if e.entry else "")]
        for e in entries
    ]  # fmt: skip
    return (
        "<p>Outside methods sent by pull request (<code>submissions/</code>), each verified "
        "when this site was built.</p>\n"
        + pages.table(["submission", "protocol, tier", "submitted by", "date"], rows)
    )


def versions_text(found: Any) -> str:
    """The runs' package versions (a list of ``{package: version}``) as ``package version``
    words; each set apart by ``;``."""
    sets = found if isinstance(found, list) else []
    return (
        "; ".join(", ".join(f"{k} {v}" for k, v in s.items()) for s in sets if isinstance(s, dict))
        or "n/a"
    )


BOUNDS = {"upper bound": "<= ", "lower bound": ">= ", "exact": ""}
"""How the headline's bounds read in a cell (the leaderboard's marks)."""


def headline_rows(headline: Any) -> list[list[str]]:
    """A manifest's headline per setting (its ``headline`` or its tuned column's), as table
    cells (a bound marked as the leaderboard marks it: ``<=``, ``>=``)."""

    def cell(value: Any, bound: Any, text: str) -> str:
        if not isinstance(value, int | float):
            return "n/a"
        return html.escape(BOUNDS.get(str(bound), f"{str(bound)[:20]} ") + text.format(value))

    out = []
    for setting, h in (headline if isinstance(headline, dict) else {}).items():
        h = h if isinstance(h, dict) else {}
        rho = h.get("lowest_rho")
        out.append(
            [
                f"<code>{html.escape(str(setting))}</code>",
                cell(h.get("exponent"), h.get("exponent_bound"), "{:.3g}"),
                html.escape(f"1/{1 / rho:.0f}") if isinstance(rho, float) and rho > 0 else "n/a",
                cell(h.get("steps_iqm"), h.get("steps_bound"), "{:,.0f}"),
                html.escape(str(h.get("reached"))),
            ]
        )
    return out


def tuned_section(tuned: Any, columns: list[str]) -> str:
    """The tuned column's values and headline (``SUBMISSION.json``'s ``tuned``, as verified),
    or a line saying the bundle has none."""
    if not isinstance(tuned, dict):
        return (
            '<p class="note">No tuned column: this bundle holds the default hyperparameters\' '
            "runs only (its protocol ranks on the tuned column where it has one).</p>\n"
        )
    chosen = tuned.get("chosen") if isinstance(tuned.get("chosen"), dict) else {}
    values = [
        [f"<code>{html.escape(str(family))}</code>",
         html.escape(", ".join(f"{k} {v:g}" for k, v in pick.items()
                               if isinstance(v, int | float)) if isinstance(pick, dict) else "")]
        for family, pick in chosen.items()
    ]  # fmt: skip
    counts = (
        f"{tuned.get('runs')} of {tuned.get('planned_runs')} tuned runs, chosen by a search of "
        f"{tuned.get('search_runs')} runs on the tuning seeds"
    )
    return (
        f"<h2>Tuned column</h2>\n<p>{html.escape(counts)}; the verification recomputed the "
        "choice from the search's rows.</p>\n"
        f"{pages.table(['setting family', 'chosen values'], values)}\n"
        f"{pages.table(columns, headline_rows(tuned.get('headline')))}\n"
    )


def write_page(entry: Checked, out: Path, checkout: str, nav: Sequence[tuple[str, str]]) -> str:
    """Write the entry's page (its facts, headline, source and the verified card, the bundle
    beside it for download) under ``out``; its path from the site's root."""
    assert entry.verdict is not None and entry.entry is not None
    folder = out / "submissions" / slug(entry)
    report = entry.verdict.write_card(folder, checkout).read_text()
    shutil.copyfile(entry.entry.bundle, folder / registry.BUNDLE)
    link = entry.entry.link
    source = [(n, d) for n, d in entry.members.items() if n.startswith("method/")]
    facts = [
        ["entry", f"<code>submissions/{html.escape(entry.where)}/</code>"],
        ["submitted by", html.escape(entry.entry.submitter)],
        ["date", html.escape(entry.entry.date)],
        ["described at", f'<a href="{html.escape(link, quote=True)}" rel="external nofollow '
         f'noopener">{html.escape(link)}</a>' if link else "not given"],
        ["method", f"<code>{html.escape(entry.fields['method'])}</code>"],
        ["trainer", html.escape(entry.fields["trainer"])],
        ["runs", html.escape(str(entry.manifest.get("runs")))
         + (" (a partial submission)" if entry.fields["partial"] else "")],
        ["privileged fields read", html.escape(", ".join(privileged_of(entry)) or "none")],
        ["made at commit", f"<code>{html.escape(str(entry.manifest.get('git_commit')))}</code>"],
        ["package versions", html.escape(versions_text(entry.manifest.get("package_versions")))],
        ["verified", f'<span class="badge">verified</span> by checkout <code>'
         f"{html.escape(checkout)}</code>: every part of the bundle rebuilds from its rows"],
        ["reruns", html.escape(entry.rerun_text())],
        ["bundle", f'<a href="{registry.BUNDLE}">{registry.BUNDLE}</a> '
         f"({entry.entry.bundle.stat().st_size:,} bytes)"],
    ]  # fmt: skip
    columns = ["setting", "dilution exponent", "lowest rho", "steps to target there (IQM)",
               "reached"]  # fmt: skip
    headline = pages.table(columns, headline_rows(entry.manifest.get("headline")))
    tuned = tuned_section(entry.manifest.get("tuned"), columns)
    code = "".join(
        f"<h2>Its source: <code>{html.escape(name)}</code></h2>\n<pre><code>"
        f"{html.escape(data.decode('utf-8', errors='replace'))}</code></pre>\n"
        for name, data in source
    )
    figures = "".join(
        pages.figure(p.name, p.stem.replace("_", " ")) for p in sorted(folder.glob("*.png"))
    )
    board = f"leaderboards/{entry.fields['version']}-{entry.fields['tier']}.html"
    back = (
        f'<p class="note">On <a href="../../{board}">its tier\'s leaderboard</a>.</p>'
        if (out / board).is_file()
        else ""
    )
    body = (
        f"{back}\n{pages.table(['', 'this submission'], facts)}\n"
        f"<h2>Headline</h2>\n{headline}\n{tuned}{code}"
        f'<h2>Its report card</h2>\n<p class="note">Rebuilt from the bundle\'s rows by the '
        f'verification (<a href="report.md">as Markdown</a>, <a href="scores.json">'
        f"scores.json</a>).</p>\n{figures}\n{pages.markdown(report)}"
    )
    title = f"Submission {entry.fields['method'][:80]} on {entry.where.rsplit('/', 1)[0]}"
    body = f"<h1>{html.escape(title)}</h1>\n{body}"
    (folder / "index.html").write_text(pages.page(title, body, 2, nav))
    return page_path(entry)
