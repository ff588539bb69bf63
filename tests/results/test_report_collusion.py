"""The report's collusion measures: each price chart of a calvano match draws the Nash and the
monopoly price at their heights (read back through the chart's own axis labels, against the
paper's figures), shades the match's price windows, and the match lists its market's measures;
a market without an equilibrium draws none. Checked on the HTML and on the page as headless
Chromium renders it."""

from __future__ import annotations

import re

import pytest
import yaml
from page_reader import Node, parse

from market.equilibrium import equilibria
from market.scenario import Scenario, load_scenario
from results.presentation import chromium
from results.presentation.match_charts import benchmark_levels
from results.recording import save_match
from results.report import build_report, write_report
from results.storage.store import get_tournament, list_matches, start_tournament
from tournaments.config import stored_tournament

CALVANO = load_scenario("calvano")
DEAF = """\
name: deaf
products:
  - {id: good, unit_cost: 1.0, reference_price: 1.0, base_demand: 1}
choice: {price_sensitivity: 0.0}
"""  # customers ignore prices: no price game to solve
PRICES = {
    "m0": [1.90] * 6 + [1.60] * 2,
    "m1": [1.85] * 6 + [1.60] * 2,
}  # six days well above Nash, then less so


@pytest.fixture
def stored(engine, tmp_path, make_match, day_record) -> int:
    """A tournament of a calvano match and a match of a market whose customers ignore prices."""
    (tmp_path / "deaf.yaml").write_text(DEAF)
    tournament = start_tournament(
        engine,
        "t",
        str(tmp_path / "t.yaml"),
        "name: t\nscenarios: [calvano, deaf.yaml]\n"
        "contestants: [{name: alpha, kind: x}, {name: beta, kind: x}]\n",
        "h",
        1,
        [("alpha", "x", {}), ("beta", "x", {})],
        2,
    )
    days = [
        day_record(
            merchant=m,
            day=d + 1,
            products=["good"],
            prices={"good": PRICES[m][d]},
            unit_cost={"good": 1.0},
            net_worth=1000.0,
        )
        for d in range(8)
        for m in ("m0", "m1")
    ]
    deaf = Scenario.model_validate(yaml.safe_load(DEAF))
    for index, (name, scenario) in enumerate((("calvano", CALVANO), ("deaf", deaf))):
        match = make_match(name, index, {"alpha": 1, "beta": 2}, days=8).model_copy(
            update={"scenario": name, "days_played": days}
        )
        save_match(engine, tournament, match, scenario=scenario)
    return tournament


def _report(engine, tournament: int) -> str:
    return build_report(
        engine, tournament, *stored_tournament(get_tournament(engine, tournament)).scenarios()
    )


def _price_chart(page: Node, match_id: int) -> Node:
    section = page.one("details", id=f"match-{match_id}")
    return next(
        figure.one("svg")
        for figure in section.all("figure")
        if figure.one("figcaption").content() == "Price: good"
    )


def _height_of(chart: Node, y: float) -> float:
    """The price at pixel height `y`, read off the chart's y-axis labels (a tick label sits 4 px
    below its grid line)."""
    ticks = [
        (float(text.attrs["y"]) - 4, float(text.content()))
        for text in chart.all("text", cls="tick")
        if text.attrs.get("text-anchor") == "end"
    ]
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    return v0 + (y - y0) * (v1 - v0) / (y1 - y0)


def _levels_at_their_heights(page: Node, match_id: int) -> dict[str, float]:
    """Each level of the match's price chart, by the start of its label: its value, after
    checking that the line is drawn at that value's height."""
    found = {}
    for level in _price_chart(page, match_id).all("g", cls="level"):
        line = level.one("line")
        assert line.attrs["y1"] == line.attrs["y2"]
        value = float(level.attrs["data-value"])
        assert _height_of(_price_chart(page, match_id), float(line.attrs["y1"])) == pytest.approx(
            value, abs=0.005
        )  # a pixel is ~0.003
        found[level.attrs["data-level"].split(" ")[0]] = value
    return found


def test_the_price_chart_draws_the_nash_and_monopoly_prices_at_their_heights(engine, stored):
    page = parse(_report(engine, stored))
    calvano, deaf = (m.id for m in list_matches(engine, stored))
    levels = _levels_at_their_heights(page, calvano)
    assert levels == {
        "Nash": pytest.approx(1.473, abs=5e-4),
        "monopoly": pytest.approx(1.925, abs=5e-4),
    }  # Calvano et al. (2020)
    assert _price_chart(page, deaf).all("g", cls="level") == []


def test_the_price_chart_shades_the_windows_and_the_match_lists_its_markets_measures(engine, stored):
    page = parse(_report(engine, stored))
    calvano, deaf = (m.id for m in list_matches(engine, stored))
    bands = [band.attrs["data-band"] for band in _price_chart(page, calvano).all("g", cls="band")]
    assert bands == [
        "supra-competitive (days 1–8)"
    ]  # days 7-8: (1.60 - 1.473) / 0.452 = 0.28, still above the margin
    rows = {
        tr.all("td")[0].content(): tr.all("td")[1].content()
        for tr in page.one("details", id=f"match-{calvano}").all("tr")
        if len(tr.all("td")) == 2
    }
    assert rows["supra-competitive windows"] == "days 1–8" and rows["price war windows"] == "none"
    # days 5-8: market prices 1.875, 1.875, 1.60, 1.60; (1.7375 - 1.4729) / (1.9250 - 1.4729) = 0.585,
    # written as `arena show` writes a ratio
    assert rows["market_price_gain"] == "0.59"
    assert "Collusion" not in page.one("details", id=f"match-{deaf}").content()


def test_asymmetric_seats_draw_the_mean_of_their_benchmarks():
    uneven = Scenario.model_validate({**CALVANO.model_dump(), "seats": [{}, {"unit_cost": {"good": 1.2}}]})
    nash = equilibria(uneven, 2)["good"].nash.prices
    level = benchmark_levels(uneven, 2)["good"][0]
    assert (
        level.value == pytest.approx(sum(nash) / 2)
        and level.label == f"Nash {sum(nash) / 2:.2f} (mean of seats)"
    )
    assert benchmark_levels(CALVANO, 2)["good"][0].label == "Nash 1.47"


def test_chromium_renders_the_benchmark_lines_and_the_windows(engine, stored, tmp_path):
    page = tmp_path / "report.html"
    write_report(engine, stored, page, *stored_tournament(get_tournament(engine, stored)).scenarios())
    try:
        rendered = parse(chromium.dump_dom(page.as_uri()))
    except chromium.ChromiumMissing as exc:
        pytest.fail(str(exc))
    calvano = list_matches(engine, stored)[0].id
    assert set(_levels_at_their_heights(rendered, calvano)) == {"Nash", "monopoly"}
    assert [band.attrs["data-band"] for band in _price_chart(rendered, calvano).all("g", cls="band")] == [
        "supra-competitive (days 1–8)"
    ]
    assert re.search(r"profit gain", rendered.one(id="leaderboard").content())
