"""The site's and the cards' figures (issue 41): every method in a colour of its own past ten
methods, the same colour on every page; a tier's aggregates computed once for its page."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from baselines.experiments.site import build


@pytest.fixture(scope="module")
def lite():
    """rb3 lite's shipped tier, every reference (13 methods)."""
    (tier,) = [t for t in build.shipped_tiers(["rb3"]) if t.name == "lite"]
    return tier


def test_every_method_has_its_own_colour_and_the_same_one_on_the_site_and_on_a_card(
    lite, tmp_path, monkeypatch
):
    """13 references (matplotlib's cycle repeats after 10): the leaderboard's figure draws each
    in a colour of its own, and ppo's card, which draws the 12 others, draws each of them in the
    same colour as the leaderboard does."""
    import matplotlib.axes

    from baselines.experiments.benchmark import figures, scores

    drawn: dict[str, list[tuple[str, str]]] = {"site": [], "card": []}
    figure = ["site"]
    for name in ("plot", "errorbar"):
        original = getattr(matplotlib.axes.Axes, name)

        def spy(self, *args, _original=original, **kwargs):
            if kwargs.get("label") and kwargs.get("color") is not None:
                drawn[figure[0]].append((kwargs["label"], kwargs["color"]))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(matplotlib.axes.Axes, name, spy)
    assert len(lite.found) >= 12
    computed = {m: scores.method_scores(r) for m, r in lite.found.items()}
    build.plot_steps(lite, computed, tmp_path / "steps.png", figures.method_colours(lite.found))
    site = dict(drawn["site"])
    assert set(site) == set(lite.found)
    assert len(set(site.values())) == len(site)  # pairwise distinct
    figure[0] = "card"
    others = {m: c for m, c in computed.items() if m != "ppo"}
    figures.plot_against_rho("ppo", computed["ppo"], others, tmp_path / "card.png")
    card = {label.split(" (same values")[0]: colour for label, colour in drawn["card"]}
    assert card.pop("ppo") == "black"  # the card's own method
    assert set(card) == set(others)
    assert card == {m: site[m] for m in others}


def test_a_leaderboard_page_computes_the_tiers_aggregates_once(lite, tmp_path, monkeypatch):
    """The leaderboard's section and the aggregates figure come from one computation, and the
    section is the leaderboard's own (its profiles at the figure's finer taus change nothing)."""
    from baselines.experiments.benchmark import aggregates, command

    keep = ("ppo", "trajectory_mc", "oracle")
    small = build.ShippedTier(
        lite.protocol,
        lite.name,
        lite.refs,
        {m: lite.found[m] for m in keep},
        {m: lite.tuned[m] for m in keep},
    )
    calls: dict[str, int] = {}
    for name in ("aggregate", "score_matrices", "profile_interval", "improvement_from_counts"):
        original = getattr(aggregates, name)

        def counted(*args, _original=original, _name=name, **kwargs):
            calls[_name] = calls.get(_name, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(aggregates, name, counted)
    build.leaderboard_page(small, tmp_path, {})
    # one aggregate: its default and tuned columns, a profile per method, one P per pair
    assert calls == {
        "aggregate": 1,
        "score_matrices": 2,
        "profile_interval": 3,
        "improvement_from_counts": 6,
    }
    assert (tmp_path / "leaderboards" / "rb3-lite-aggregates.png").stat().st_size > 20_000
    monkeypatch.undo()
    text = command.leaderboard_text(
        small.protocol, small.name, small.refs, small.found, None, small.tuned
    )
    assert "## Aggregates across the tier's settings" in text
    assert (tmp_path / "leaderboards" / "rb3-lite.md").read_text() == text
