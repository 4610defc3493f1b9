"""The site's interactive charts: Vega-Lite specifications written by Altair, drawn in the page
by Vega-Embed from a copy of its JavaScript at the site's root (``vega-embed.js``, the bundle of
Vega, Vega-Lite and Vega-Embed that ``vl-convert-python`` ships), so they work from ``file://``
and offline. Each chart is an enhancement of a PNG that the page shows without JavaScript: the
script hides the picture only once the chart is drawn.

Altair and vl-convert-python are the ``site`` extra (``pip install 'routine-envs[site]'``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCRIPT = "vega-embed.js"
"""The bundle's file name at the site's root."""


def altair() -> Any:
    """The ``altair`` module, or an ``ImportError`` that says which extra installs it."""
    try:
        import altair as alt
    except ImportError as err:
        raise ImportError(
            "routine-envs site draws its interactive charts with altair and vl-convert-python: "
            "pip install 'routine-envs[site]'"
        ) from err
    return alt


def write_script(out: Path) -> str:
    """Write the Vega-Embed bundle (Vega, Vega-Lite at Altair's version, Vega-Embed; all
    BSD-3-Clause) to ``out / SCRIPT``; what it holds, as words."""
    alt = altair()
    try:
        import vl_convert
    except ImportError as err:
        raise ImportError(
            "routine-envs site ships the charts' JavaScript from vl-convert-python: "
            "pip install 'routine-envs[site]'"
        ) from err
    wanted = alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]  # "v6.4.1" -> "6.4"
    if wanted not in vl_convert.get_vegalite_versions():
        raise ImportError(
            f"vl-convert-python {vl_convert.__version__} has no Vega-Lite {wanted} "
            f"(altair {alt.__version__} writes it): upgrade vl-convert-python"
        )
    what = (
        f"Vega {vl_convert.get_vega_version()}, Vega-Lite {wanted}, Vega-Embed "
        f"{vl_convert.get_vega_embed_version()} (BSD-3-Clause), bundled by vl-convert-python "
        f"{vl_convert.__version__}"
    )
    bundle = vl_convert.javascript_bundle(vl_version=wanted)
    (out / SCRIPT).write_text(f"/* {what} */\n{bundle}\n")
    return what


def steps_rows(
    computed: Mapping[str, Mapping[str, Any]], labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """One row per method, setting and density where the method has steps to target: what the
    chart draws and its tooltip says (``computed``: :func:`~.scores.method_scores` per method;
    ``labels``: how to name each method, its key by default)."""
    out = []
    for method, comp in computed.items():
        for setting, entry in comp["settings"].items():
            for r in entry["rows"]:
                if r.get("steps_iqm") is None:
                    continue
                censored = r["steps_bound"] != "exact"
                out.append(
                    {
                        "method": (labels or {}).get(method, method),
                        "setting": setting,
                        "rho": float(r["rho"]),
                        "density": r["density_value"],
                        "steps": float(r["steps_iqm"]),
                        "low": float(r["steps_low"]),
                        "high": float(r["steps_high"]),
                        "interval": f"{r['steps_low']:,.0f} to {r['steps_high']:,.0f}",
                        "reached": f"{r['reached']} of {r['runs']} runs",
                        "bound": "lower bound (censored runs)" if censored else "exact",
                    }
                )
    return out


def ticks(rows: list[dict[str, Any]], low: str, high: str) -> list[float]:
    """Log-axis ticks at 1, 2, 3 and 5 times a power of ten, from the lowest ``low`` to the
    highest ``high`` of ``rows`` (a panel shows those inside its span, dropping any that would
    overlap: ``labelOverlap``)."""
    import math

    lo = min(r[low] for r in rows)
    hi = max(r[high] for r in rows)
    return [
        m * 10.0**e
        for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        for m in (1, 2, 3, 5)
        if lo / 2.5 <= m * 10.0**e <= hi * 2.5
    ]


def steps_chart(rows: list[dict[str, Any]], colours: Mapping[str, str], title: str) -> dict:
    """Steps to target against rho (log-log), one panel per setting with every method in its
    colour (``colours``), its 95% interval as a bar; hovering a point shows the method, rho,
    the steps and their interval, clicking a legend entry singles a method out. The Vega-Lite
    specification, as a dict."""
    alt = altair()
    names = list(dict.fromkeys(r["method"] for r in rows))
    picked = alt.selection_point(fields=["method"], bind="legend")
    seen = alt.condition(picked, alt.value(1.0), alt.value(0.08))
    log = alt.Scale(type="log", nice=False, padding=8)  # each panel its data's span
    rho_axis = alt.Axis(values=ticks(rows, "rho", "rho"), labelOverlap="greedy")
    x = alt.X("rho:Q", scale=log, axis=rho_axis, title="decision density rho")
    steps_axis = alt.Axis(values=ticks(rows, "low", "high"), format="~s", labelOverlap="greedy")
    y = alt.Y("steps:Q", scale=log, axis=steps_axis, title="steps to target (IQM)")
    colour = alt.Color(
        "method:N",
        scale=alt.Scale(domain=names, range=[colours[n] for n in names]),
        legend=alt.Legend(
            title="method (click: only it; shift-click: more)",
            orient="bottom",
            columns=4,
            labelLimit=300,
            titleLimit=400,
            symbolOpacity=1,
        ),
    )
    shape = alt.Shape(
        "bound:N",
        scale=alt.Scale(
            domain=["exact", "lower bound (censored runs)"], range=["circle", "triangle-up"]
        ),
        legend=alt.Legend(title="steps", orient="bottom"),
    )
    tooltip = [
        alt.Tooltip("method:N"),
        alt.Tooltip("setting:N"),
        alt.Tooltip("rho:Q", format=".3g"),
        alt.Tooltip("density:Q", title="density value"),
        alt.Tooltip("steps:Q", format=",.0f", title="steps to target (IQM)"),
        alt.Tooltip("interval:N", title="95% interval"),
        alt.Tooltip("reached:N", title="reached the target"),
        alt.Tooltip("bound:N", title="the steps are"),
    ]
    base = alt.Chart().encode(x=x, y=y, color=colour, opacity=seen)
    faint = alt.condition(picked, alt.value(0.5), alt.value(0.04))
    low = alt.Y("low:Q", scale=log, axis=steps_axis, title="steps to target (IQM)")
    bars = base.mark_rule(strokeWidth=1).encode(y=low, y2="high:Q", opacity=faint)
    lines = base.mark_line(strokeWidth=1.5)
    points = base.mark_point(filled=True, size=45).encode(shape=shape, tooltip=tooltip)
    chart = (
        alt.layer(bars, lines, points, data=alt.Data(values=rows))
        .add_params(picked)
        .properties(width=230, height=170)
        .facet(facet=alt.Facet("setting:N", title=None), columns=4)
        .resolve_scale(x="independent", y="independent")
        .properties(title=title)
    )
    return chart.to_dict()


def script(depth: int) -> str:
    """The tag that loads the bundle on a page ``depth`` folders below the root (once per page,
    before its charts)."""
    return f'<script src="{"../" * depth}{SCRIPT}"></script>'


def embed(name: str, spec: dict, picture: str, alt_text: str, note: str = "") -> str:
    """HTML of a chart: the PNG ``picture`` (what a reader without JavaScript sees), the chart's
    place, and the script that draws ``spec`` there with the bundle (:func:`script`, earlier on
    the page) and then hides the picture and shows ``note`` (HTML: how to use the chart);
    ``name``: the chart's id on its page (letters and dashes)."""
    data = json.dumps(spec, sort_keys=True).replace("<", "\\u003c")  # never ends the script
    path = html.escape(picture, quote=True)
    drawn = (
        f"document.getElementById('{name}-picture').hidden = true; "
        f"document.getElementById('{name}-note').hidden = false;"
    )
    return (
        f'<figure class="chart">\n<div id="{name}" class="vega"></div>\n'
        f'<p id="{name}-picture"><img src="{path}" alt="{html.escape(alt_text)}"></p>\n'
        f'<figcaption class="note"><span id="{name}-note" hidden>{note} </span>'
        f'(<a href="{path}">as a picture</a>)</figcaption>\n'
        f"</figure>\n<script>\nvegaEmbed('#{name}', {data}, "
        '{"actions": false, "renderer": "svg"})\n'
        f"  .then(function () {{ {drawn} }})\n"
        "  .catch(console.error);\n</script>"
    )
