"""The HTML report: every section, one chart series per merchant, the scenario's events
marked, names escaped, and nothing fetched — checked on the page as headless Chromium
renders it, and on the HTML it is made of."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from page_reader import Node, parse
from sqlalchemy import Engine
from sqlmodel import Session, update
from typer.testing import CliRunner

from arena.cli import app
from arena.cli.printing import out
from results import leaderboard
from results.errors import NotFound
from results.presentation import chromium, views
from results.presentation.report_page import HeadToHead, ReportError
from results.recording import save_match
from results.records import ModelCallRecord, PlayedScenarios
from results.report import build_report, write_report
from results.scoring.metrics import METRICS
from results.scoring.ratings import cost_front
from results.storage.db import engine_for
from results.storage.schema import MetricRow
from results.storage.store import get_tournament, list_matches, match_detail, start_tournament
from tournaments.config import stored_tournament

SCENARIO = """\
name: corner-shop
days: 3
products:
  - {id: tea, unit_cost: 2.0, reference_price: 4.0, base_demand: 20}
  - {id: coffee, unit_cost: 3.0, reference_price: 6.0, base_demand: 10}
events:
  - {name: fair, kind: demand, start_day: 2, end_day: 3, multiplier: 1.5}
  - {name: tea tax, kind: cost, start_day: 3, end_day: 3, multiplier: 1.2, product: tea}
  - {name: coffee glut, kind: cost, start_day: 1, end_day: 2, multiplier: 0.8, product: coffee}
"""

SPRING = """\
name: spring
scenarios: [corner-shop.yaml]
contestants:
  - {name: alpha, kind: fixed_price}
  - {name: beta, kind: llm, params: {model: openai/gpt-test}}
  - {name: gamma, kind: random}
"""
SECTIONS = ["overview", "leaderboard", "head-to-head", "metrics", "usage", "matches"]


def _scenarios(engine: Engine, tournament_id: int) -> tuple[dict, list[str]]:
    """What `arena report` gives the report: the stored tournament's scenarios read again."""
    return stored_tournament(get_tournament(engine, tournament_id)).scenarios()


def _call(
    merchant: str, day: int, tokens: int, cost: float | None, contestant: str = "beta"
) -> ModelCallRecord:
    return ModelCallRecord(
        merchant=merchant,
        contestant=contestant,
        day=day,
        purpose="decide",
        model="openai/gpt-test",
        input_tokens=tokens,
        output_tokens=50,
        cached_tokens=0,
        latency=0.5,
        attempts=2,
        cost=cost,
        cached=False,
        request_hash=f"h{day}",
        prompt_version="merchant-v1",
        temperature=0.0,
        seed=7,
    )


@pytest.fixture
def stored(engine, tmp_path, make_match) -> int:
    return _store(engine, tmp_path, make_match)


def _tournament(engine, tmp_path: Path, name: str, contestants: list, planned: int) -> int:
    """A tournament of the file SPRING on corner-shop, its scenario file written beside it."""
    (tmp_path / "corner-shop.yaml").write_text(SCENARIO)
    return start_tournament(
        engine,
        name=name,
        config_path=str(tmp_path / "spring.yaml"),
        config_text=SPRING,
        config_hash="hash",
        seed=7,
        contestants=contestants,
        planned_matches=planned,
    )


def _store(engine, tmp_path: Path, make_match) -> int:
    """Three matches of alpha, beta (a language model) and gamma on corner-shop, with metrics."""
    contestants = [
        ("alpha", "fixed_price", {}),
        ("beta", "llm", {"model": "openai/gpt-test"}),
        ("gamma", "random", {}),
    ]
    tournament_id = _tournament(engine, tmp_path, "<spring & co>", contestants, 3)
    first = make_match("a", 0, {"alpha": 1, "beta": 2}).model_copy(
        update={"calls": [_call("m1", 1, 1000, 0.25), _call("m1", 2, 500, 0.5)]}
    )
    second = make_match("b", 1, {"beta": 1, "gamma": 2}).model_copy(
        update={"calls": [_call("m1", 1, 200, None, "gamma")]}
    )
    third = make_match("c", 2, {"alpha": 1, "beta": 2, "gamma": 2}, faults=[])
    ids = [save_match(engine, tournament_id, m) for m in (first, second, third)]
    with Session(engine) as session:  # known values in place of the computed ones
        session.exec(update(MetricRow).where(MetricRow.name == "price_oscillation").values(value=None))
        for match_id, value in ((ids[0], 0.25), (ids[2], 0.75)):
            session.exec(
                update(MetricRow)
                .where(
                    MetricRow.match_id == match_id,
                    MetricRow.merchant == "m0",
                    MetricRow.name == "price_oscillation",
                )
                .values(value=value)
            )
        session.commit()
    return tournament_id


@pytest.fixture(scope="module")
def rendered(tmp_path_factory, make_match) -> Iterator[tuple[Node, list[str], Engine, int, Path]]:
    """The report as Chromium rendered it, opened at the address of its second match
    (#match-ID), the requests the page made while loading, and the record it came from (one
    Chromium run for the module: starting it takes seconds)."""
    folder = tmp_path_factory.mktemp("rendered")
    engine = engine_for(f"sqlite:///{folder / 'arena.db'}")
    tournament_id = _store(engine, folder, make_match)
    page, net_log = folder / "report.html", folder / "net.json"
    write_report(engine, tournament_id, page, *_scenarios(engine, tournament_id))
    second = list_matches(engine, tournament_id)[1].id
    try:
        dom = chromium.dump_dom(f"{page.as_uri()}#match-{second}", net_log)
    except chromium.ChromiumMissing as exc:
        pytest.fail(str(exc))
    yield parse(dom), chromium.page_requests(net_log), engine, tournament_id, page
    engine.dispose()


def test_every_section_renders_and_the_page_makes_no_request(rendered):
    dom, requests, *_ = rendered
    assert requests == []
    for section in SECTIONS:
        assert dom.all(id=section), section
    links = [a.attrs["href"] for a in dom.one("nav").all("a")]
    assert [link.removeprefix("#") for link in links] == SECTIONS


def test_forest_plot_has_one_interval_per_contestant(rendered):
    dom, *_ = rendered
    plot = dom.one(id="leaderboard").one("svg", **{"aria-label": "Ratings with 95% intervals"})
    assert sorted(s.attrs["data-series"] for s in plot.all("g", cls="series")) == ["alpha", "beta", "gamma"]


def test_the_cost_plot_places_each_priced_contestant_and_rings_the_front(rendered):
    """beta's calls cost 0.75 USD over its 3 matches; alpha calls no model (0 a match); gamma's
    call has no price, so its cost is unknown and it is left out. The front is the table's."""
    dom, _, engine, tournament_id, _ = rendered
    rows = leaderboard.leaderboard(engine, tournament_id)
    by_name = {row.contestant: row for row in rows}
    assert by_name["beta"].cost_per_match == pytest.approx(0.25) and by_name["alpha"].cost_per_match == 0
    plot = dom.one(id="leaderboard").one("svg", **{"aria-label": "Rating against cost per match"})
    dots = {g.attrs["data-series"]: g for g in plot.all("g", cls="series")}
    assert sorted(dots) == ["alpha", "beta"]
    ringed = {name for name, g in dots.items() if "on-front" in g.attrs["class"].split()}
    assert ringed == cost_front(rows) and "alpha" in ringed  # nothing is cheaper than free
    rated_above = by_name["beta"].rating > by_name["alpha"].rating
    assert ("beta" in ringed) == rated_above


def test_each_match_has_a_price_chart_per_product_with_a_line_per_merchant_and_its_events(rendered):
    dom, _, engine, tournament_id, _ = rendered
    matches = list_matches(engine, tournament_id)
    assert len(dom.all("details", cls="match")) == len(matches) == 3
    for match in matches:
        seats = len(match_detail(engine, match.id).results)
        section = dom.one("details", id=f"match-{match.id}")
        charts = {figure.one("figcaption").content(): figure.one("svg") for figure in section.all("figure")}
        assert set(charts) == {
            "Price: tea",
            "Units sold (all products)",
            "Cash",
            "Net worth",
            "Market share (of units sold to date)",
        }
        for svg in charts.values():
            assert len(svg.all("g", cls="series")) == seats
        bands = lambda svg: sorted(b.attrs["data-band"].split(" (")[0] for b in svg.all("g", cls="band"))  # noqa: E731
        assert bands(charts["Price: tea"]) == ["fair", "tea tax"]  # not the coffee event
        assert bands(charts["Cash"]) == ["coffee glut", "fair", "tea tax"]


def test_a_link_to_a_match_opens_it(rendered):
    """The page's script ran: a #match-ID address opens that match's section, and only it
    (the page as written opens none)."""
    dom, _, engine, tournament_id, page = rendered
    assert not any("open" in m.attrs for m in parse(page.read_text()).all("details", cls="match"))
    target = list_matches(engine, tournament_id)[1].id
    assert [m.attrs["id"] for m in dom.all("details", cls="match") if "open" in m.attrs] == [
        f"match-{target}"
    ]


def test_head_to_head_matrix_counts_wins_losses_and_ties(rendered):
    dom, *_ = rendered
    rows = {
        row.one("th").content(): [cell.content() for cell in row.all("td")]
        for row in dom.one(id="head-to-head").one("tbody").all("tr")
    }
    # columns in leaderboard order: alpha (2 wins), beta, gamma
    assert rows["alpha"] == ["", "2–0", "1–0"]
    assert rows["beta"] == ["0–2", "", "1–0–1"]
    assert rows["gamma"] == ["0–1", "0–1–1", ""]


def test_metrics_are_averaged_over_the_matches_where_they_apply(rendered):
    dom, *_ = rendered
    table = dom.one(id="metrics").one("table")
    header = [th.content() for th in table.one("thead").all("th")]
    rows = [dict(zip(header, [td.content() for td in tr.all("td")])) for tr in table.one("tbody").all("tr")]
    assert {"metric": "price oscillation", "alpha": "0.500", "beta": "—", "gamma": "—"} in rows
    assert len(rows) == len(METRICS)


def test_usage_sums_tokens_and_cost_per_contestant(rendered):
    dom, *_ = rendered
    table = dom.one(id="usage").one("table")
    header = [th.content() for th in table.one("thead").all("th")]
    rows = [dict(zip(header, [td.content() for td in tr.all("td")])) for tr in table.one("tbody").all("tr")]
    beta, gamma = (next(r for r in rows if r["contestant"] == name) for name in ("beta", "gamma"))
    assert (beta["calls"], beta["input tokens"], beta["output tokens"], beta["retries"], beta["cost $"]) == (
        "2",
        "1,500",
        "100",
        "2",
        "0.7500",
    )
    assert (gamma["calls"], gamma["cost $"]) == (
        "1",
        "—",
    )  # a call without a price: the cost is unknown, not 0


def test_the_page_is_self_contained_and_escapes_what_it_shows(engine, stored):
    html = build_report(engine, stored, *_scenarios(engine, stored))
    assert not re.search(r"https?://", html)
    assert not re.search(r"\ssrc\s*=", html)
    assert not re.search(r"url\(|@import", html)
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', html))
    assert "&lt;spring &amp; co&gt;" in html and "<spring" not in html


def test_a_match_lists_its_messages_by_day_escaped(engine, tmp_path, make_match):
    tournament_id = _store(engine, tmp_path, make_match)
    said = {(1, "m1"): "<b>hold</b> & see", (3, "m0"): "no"}
    match = make_match("talk", 3, {"alpha": 1, "beta": 2})
    days = [dataclasses.replace(d, message=said.get((d.day, d.merchant), "")) for d in match.days_played]
    match_id = save_match(engine, tournament_id, match.model_copy(update={"days_played": days}))
    html = build_report(engine, tournament_id, *_scenarios(engine, tournament_id))
    body = parse(html).one("details", id=f"match-{match_id}").one("div", cls="match-body")
    heading = next(node for node in body.children if node.tag == "h4" and node.content() == "Messages")
    table = body.children[body.children.index(heading) + 1]  # under the charts
    assert body.children.index(heading) > body.children.index(body.one("div", cls="charts"))
    rows = [[cell.content() for cell in row.all("td")] for row in table.all("tr") if row.all("td")]
    assert rows == [["1", "m1", "<b>hold</b> & see"], ["3", "m0", "no"]]  # the table `arena show` prints
    assert "&lt;b&gt;hold&lt;/b&gt; &amp; see" in html and "<b>hold" not in html
    assert html.count("<h4>Messages</h4>") == 1  # the matches where nobody spoke list none


def test_a_page_that_fetches_something_is_caught(tmp_path):
    """The check of the network log finds a page's requests (else the test above proves nothing)."""
    page, net_log = tmp_path / "fetching.html", tmp_path / "net.json"
    page.write_text(
        '<!DOCTYPE html><img src="https://example.invalid/a.png"><p style="background:url(http://127.0.0.1:9/b.png)">x</p>'
    )
    try:
        chromium.dump_dom(page.as_uri(), net_log)
    except chromium.ChromiumMissing as exc:
        pytest.fail(str(exc))
    assert sorted(chromium.page_requests(net_log)) == [
        "http://127.0.0.1:9/b.png",
        "https://example.invalid/a.png",
    ]


def test_head_to_head_skips_two_seats_of_one_contestant():
    tally = HeadToHead()
    tally.add([("alpha", 1), ("beta", 2)])
    tally.add([("alpha", 1), ("alpha", 3)])
    assert tally.record("alpha", "beta") == (1, 0, 0)
    assert tally.record("alpha", "alpha") is None


def test_solo_matches_meet_in_the_head_to_head_as_the_leaderboard_ranks_them(engine, tmp_path, make_match):
    """Each alone against the market: alpha behind beta on seed 1, ahead on seed 2."""
    tournament_id = _tournament(
        engine, tmp_path, "solo", [("alpha", "fixed_price", {}), ("beta", "random", {})], 4
    )
    for index, (name, seed, worth) in enumerate(
        [("alpha", 1, 1100.0), ("beta", 1, 1200.0), ("alpha", 2, 1300.0), ("beta", 2, 1250.0)]
    ):
        match = make_match(f"k{index}", index, {name: 1})
        match.seed, match.merchants[0].net_worth = seed, worth
        save_match(engine, tournament_id, match)
    html = build_report(engine, tournament_id, *_scenarios(engine, tournament_id))
    assert "alpha vs beta: 1 won, 1 lost, 0 tied" in html and "beta vs alpha: 1 won, 1 lost, 0 tied" in html
    assert "won by" not in html  # nobody wins a match alone


def test_events_are_left_out_with_a_note_when_the_scenario_file_is_gone(engine, stored, tmp_path):
    (tmp_path / "corner-shop.yaml").unlink()
    html = build_report(engine, stored, *_scenarios(engine, stored))
    assert "events of scenario &#39;corner-shop.yaml&#39; are not shown" in html
    assert 'class="band ' not in html


def test_write_report_leaves_nothing_behind_on_a_bad_path(engine, stored, tmp_path):
    with pytest.raises(ReportError, match="does not exist"):
        write_report(engine, stored, tmp_path / "missing" / "r.html", PlayedScenarios({}), [])
    with pytest.raises(ReportError, match="is a folder"):
        write_report(engine, stored, tmp_path, PlayedScenarios({}), [])
    with pytest.raises(NotFound):
        write_report(engine, 999, tmp_path / "r.html", PlayedScenarios({}), [])
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize(
    "args, needle",
    [(["999"], "no tournament with id 999"), (["{id}", "--out", "{tmp}/no/such/r.html"], "does not exist")],
    ids=["unknown-tournament", "missing-folder"],
)
def test_cli_mistakes_are_one_line_and_exit_2(engine, stored, tmp_path, args, needle):
    url = str(engine.url)
    args = [a.format(id=stored, tmp=tmp_path) for a in args]
    result = CliRunner().invoke(app, ["report", *args, "--db", url])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output


def test_cli_writes_the_report(engine, stored, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(stored), "--out", str(out), "--db", str(engine.url)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert Path(out).stat().st_mode & 0o044 == 0o044  # readable by others, unlike a temporary file


def test_names_and_messages_that_look_like_markup_are_shown_as_text(engine, tmp_path, make_match):
    """A tournament, contestant, message, model and fault detail holding `<script>` or `&`
    reach the page as text: in tables, chips, charts, attributes and the tournament file."""
    (tmp_path / "corner-shop.yaml").write_text(SCENARIO)
    hostile = {
        "tournament": '<script>alert("t")</script> & co',
        "contestant": "<script>c</script>&amp;",
        "message": "<script>m()</script> & see",
        "model": "openai/<script>x</script>",
        "fault": "<script>f()</script> & timeout",
    }
    tournament_id = start_tournament(
        engine,
        name=hostile["tournament"],
        config_path=str(tmp_path / "t.yaml"),
        config_text=SPRING.replace("name: spring", f"name: '{hostile['tournament']}'"),
        config_hash="hash",
        seed=7,
        contestants=[(hostile["contestant"], "fixed_price", {}), ("beta", "random", {})],
        planned_matches=1,
    )
    match = make_match("k", 0, {hostile["contestant"]: 1, "beta": 2})
    days = [
        dataclasses.replace(d, message=hostile["message"] if d.merchant == "m0" and d.day == 1 else "")
        for d in match.days_played
    ]
    fault = match.faults[0].model_copy(update={"detail": hostile["fault"]})
    call = _call("m0", 1, 10, 0.1, hostile["contestant"]).model_copy(update={"model": hostile["model"]})
    save_match(
        engine,
        tournament_id,
        match.model_copy(update={"days_played": days, "faults": [fault], "calls": [call]}),
    )
    html = build_report(engine, tournament_id, *_scenarios(engine, tournament_id))
    assert html.count("<script") == 1  # the page's own
    text = parse(html).content()
    for value in hostile.values():
        assert value in text, value  # shown as written
    assert "&lt;script&gt;c&lt;/script&gt;&amp;amp;" in html  # escaped once, `&` included
    page = parse(html)
    lineup = " ".join(sorted([hostile["contestant"], "beta"]))
    assert page.one("details", cls="match").attrs["data-contestants"] == lineup
    assert hostile["contestant"] in [g.attrs["data-series"] for g in page.all("g", cls="series")]


def test_the_report_shows_the_leaderboard_arena_prints(engine, stored, monkeypatch):
    """One table model (results.presentation.views): the page's leaderboard has the headers and, row by
    row, the cells `arena leaderboard` prints for the same tournament."""
    monkeypatch.setattr(out, "width", 250)  # every column in one piece
    page = parse(build_report(engine, stored, *_scenarios(engine, stored)))
    shown = page.one("section", id="leaderboard").one("table")
    headers = [th.content().strip() for th in shown.one("thead").all("th")]
    rows = [[td.content().strip() for td in tr.all("td")] for tr in shown.one("tbody").all("tr")]
    printed = CliRunner().invoke(app, ["leaderboard", "--tournament", str(stored), "--db", str(engine.url)])
    assert printed.exit_code == 0, printed.output
    lines = [
        [cell.strip() for cell in line.split(bar)[1:-1]]
        for bar in "┃│"
        for line in printed.stdout.splitlines()
        if line.startswith(bar)
    ]
    assert lines == [headers, *rows]
    assert len(rows) == 3 and "composite" in headers


@given(
    noted=st.lists(
        st.tuples(st.sampled_from(["calvano", "price_war", "a: b"]), st.text(min_size=1, max_size=12)),
        max_size=8,
    ),
    seed=st.randoms(use_true_random=False),
)
def test_the_reasons_of_a_mean_read_the_same_in_any_order(noted, seed):
    """The one text a leaderboard's gain note, its --json and the report's table of means give
    (views.reasons): each seat's "scenario: reason" once, sorted, whatever order and however
    often the seats give them; None where no seat is left out."""
    shuffled = noted * 2
    seed.shuffle(shuffled)
    text = views.reasons(shuffled)
    assert text == views.reasons(noted)
    expected = sorted({f"{scenario}: {reason}" for scenario, reason in noted})
    assert text == ("; ".join(expected) if noted else None)
