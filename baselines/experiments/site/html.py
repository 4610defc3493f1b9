"""HTML of the site's pages: one template, Markdown rendered by markdown-it-py (CommonMark with
tables), every link relative, so the site works from ``file://`` and any static host, without
JavaScript."""

from __future__ import annotations

import html
from collections.abc import Sequence

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
header { background: #1f3b5b; color: #fff; padding: 0.6em 1.2em; }
header a { color: #fff; margin-right: 1.2em; text-decoration: none; font-weight: 600; }
main { max-width: 1200px; margin: 0 auto; padding: 1em 1.2em 3em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 1.6em; } h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 13px; display: block;
        overflow-x: auto; max-width: 100%; }
th, td { border: 1px solid #d0d4da; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #eef1f5; position: sticky; top: 0; }
tr:nth-child(even) td { background: #f8f9fb; }
code { background: #f1f3f5; padding: 0 3px; border-radius: 3px; font-size: 0.92em; }
pre { background: #f6f8fa; padding: 0.8em; overflow-x: auto; }
img { max-width: 100%; height: auto; border: 1px solid #e3e6ea; margin: 0.4em 0; }
.note { color: #555; font-size: 0.92em; }
figure.chart { margin: 0.8em 0; } .vega { overflow-x: auto; max-width: 100%; }
.badge { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 0.85em;
         background: #d7f0dc; color: #175c2a; }
.badge.unverified { background: #fde2e1; color: #8a1c17; }
"""
"""The one style sheet (written as ``style.css``)."""


def markdown(text: str) -> str:
    """``text`` (CommonMark with GitHub tables) as HTML; raw HTML in it is escaped, never
    passed through (the Markdown comes from shipped files and docstrings, still data)."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    return renderer.render(text)


def page(title: str, body: str, depth: int, nav: Sequence[tuple[str, str]]) -> str:
    """A whole page: ``title``, the ``nav`` links (``(text, path from the site's root)``),
    ``body`` (HTML); ``depth``: how many folders below the root the page sits (its links to
    the root and the style sheet are relative)."""
    up = "../" * depth
    links = " ".join(
        f'<a href="{html.escape(up + path, quote=True)}">{html.escape(text)}</a>'
        for text, path in nav
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)} - routine-envs</title>\n"
        f'<link rel="stylesheet" href="{up}style.css">\n</head>\n<body>\n'
        f"<header>{links}</header>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def figure(path: str, alt: str) -> str:
    """An image (``path`` relative to the page) with its alternative text."""
    return f'<p><img src="{html.escape(path, quote=True)}" alt="{html.escape(alt)}"></p>'


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An HTML table of already-escaped cell HTML."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
