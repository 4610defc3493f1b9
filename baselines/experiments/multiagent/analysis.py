"""Analysis of the team sweep: the comparison's learning-curve tables
(:mod:`baselines.lib.curves`) and the team's decision density per density value, as pure
functions of the records (tested on small hand-written tables); :func:`write` writes and
prints them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from baselines.lib import curves

Row = dict[str, Any]


def team_rows(records: Iterable[Row]) -> list[Row]:
    """Per density value (sorted): the number of agents, the mean per-agent decision density
    (``rho``) and the team's (``team_rho``)."""
    records = curves.current(records)
    column = curves.density_column(records)
    first = {}
    for r in records:
        first.setdefault(r["density_value"], r)
    return [
        {
            column: value,
            "num_agents": r["num_agents"],
            "rho": r["rho"],
            "team_rho": r["team_rho"],
        }
        for value, r in sorted(first.items())
    ]


def tables(records: Iterable[Row], settings: Any) -> dict[str, list[Row]]:
    """The comparison's tables (:func:`baselines.lib.curves.sweep_tables`, with the sweep's
    ``baseline`` and ``statistic``) and ``team`` (:func:`team_rows`)."""
    records = curves.current(records)
    return {
        **curves.sweep_tables(records, settings.baseline, settings.statistic),
        "team": team_rows(records),
    }


def write(tables: dict[str, list[Row]], records: list[Row], settings: Any) -> None:
    """Write the comparison's tables and plots into ``settings.out`` and print them, after the
    team's decision densities."""
    curves.write_tables(tables, settings.out, settings.statistic)
    team = tables["team"]
    if team:
        column = curves.density_column(curves.current(records))
        print(
            f"\nteam: {team[0]['num_agents']} agents, parameter-shared policy (turn-based "
            "adapter); rho below = mean per-agent decision density, team rho = "
            + ", ".join(sorted(f"L={r[column]}: {r['team_rho']:.4g}" for r in team))
        )
    curves.report_written(tables, records, settings.out)


def analyse(records: list[Row], settings: Any) -> dict[str, list[Row]]:
    """:func:`tables`, written and printed (:func:`write`); the tables."""
    result = tables(records, settings)
    write(result, records, settings)
    return result
