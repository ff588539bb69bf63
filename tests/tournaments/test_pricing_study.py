"""A pricing study end to end: a Q-learner, the cartel rule and the embedded language model meet
in the calvano market through the real runner, the three in one match (group_size: 3),
talking (talk: true) and probed (a deviation of the first seat, the learner, on day 2). The
match is scored against the three-seat market's equilibria and measured against its deviated
path, whose days before the deviation replay (the model's from the response cache), and the
report, as headless Chromium renders it, draws the Nash and monopoly prices on the price
chart, both paths of every merchant and the cartel's messages.

One match of three rather than the round robin's three pairs: each of the three meets both
others every day all the same, and the model decides in one match instead of two (its
decisions are most of the study's CPU). The model plays in the run's worker pool
(isolate: false): where it is hosted is not the point here, and a host of its own and a match
runner per match in play would be three processes."""

from __future__ import annotations

import math
import textwrap

import pytest
from page_reader import parse

from market.equilibrium import equilibria
from market.scenario import load_scenario
from results.presentation import chromium
from results.report import write_report
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import stored_tournament
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")

DAYS = 3
DEVIATION_DAY = 2
MERCHANTS = ("q", "cartel", "smol")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("study")
    config = folder / "study.yaml"
    learning = "{beta: 2.0e-4, stable_periods: 2000, max_periods: 200000}"
    # short notes and messages, one operation: every character the model writes is a model step
    smol = (
        f"{{model: local/smollm2, memory: notes, max_string: 4, max_items: 1, cache_dir: {folder / 'cache'}}}"
    )
    config.write_text(
        textwrap.dedent(
            f"""\
            name: study
            seed: 3
            scenarios: [calvano]
            seeds: [1]
            days: {DAYS}
            group_size: 3
            recall_every: 0
            decision_timeout_s: 600
            max_concurrent_matches: 1
            talk: true
            deviation: {{day: {DEVIATION_DAY}, seat: 0, to: best_response}}
            contestants:
              - {{name: q, kind: qlearning, params: {learning}}}
              - {{name: cartel, kind: cartel}}
              - {{name: smol, kind: llm, isolate: false, params: {smol}}}
            """
        )
    )
    engine = engine_for(f"sqlite:///{folder / 'study.db'}")
    summary = run_tournament(load_tournament(config), engine)
    return engine, summary.tournament_id, folder


def test_all_three_play_every_day_without_faults_and_are_measured_against_the_equilibria(study):
    engine, tournament, _ = study
    details = [store.match_detail(engine, m.id) for m in store.list_matches(engine, tournament)]
    assert [sorted(r.contestant for r in d.results) for d in details] == [sorted(MERCHANTS)]
    by_merchant: dict[str, list[float]] = {}
    for value in store.metrics(engine, tournament):
        if value.name in ("profit_gain", "converged", "learning_periods"):
            by_merchant.setdefault(f"{value.contestant}.{value.name}", []).append(value.value)
    for detail in details:
        assert detail.faults == [] and len(detail.days) == DAYS * len(MERCHANTS)
        assert len([c for c in detail.calls if c.purpose == "decide"]) == DAYS  # the model decided every day
    # every merchant of the match has a profit gain
    assert {name: len(values) for name, values in by_merchant.items() if name.endswith("profit_gain")} == {
        f"{c}.profit_gain": 1 for c in MERCHANTS
    }
    assert all(
        math.isfinite(v)
        for name, values in by_merchant.items()
        if name.endswith("profit_gain")
        for v in values
    )
    # the learner learnt in self-play before its match and says how long it took
    assert (
        by_merchant["q.converged"] in ([0.0], [1.0]) and 0 < by_merchant["q.learning_periods"][0] <= 200_000
    )


def test_every_match_is_probed_its_prefix_replayed_and_the_cartel_talks(study):
    engine, tournament, _ = study
    for match in store.list_matches(engine, tournament):
        detail = store.match_detail(engine, match.id)
        path = detail.deviation
        assert path is not None and path.faults == [] and len(path.days_played) == DAYS * len(MERCHANTS)
        measures = {
            v.merchant: v for v in store.metrics(engine, match_id=match.id) if v.name == "prefix_replayed"
        }
        assert [m.value for m in measures.values()] == [1.0] * len(MERCHANTS)
        # the model's days before the deviation come from the cache: no new call (those of day 2
        # read day 1's messages; the deviation's own day is decided before the price is forced)
        assert [c.cached for c in path.calls if c.day <= DEVIATION_DAY] == [True] * sum(
            1 for c in detail.calls if c.day <= DEVIATION_DAY
        )
        # on path, a fresh cache: every decision asked; deviated, days 1 and 2 from the cache,
        # day 3 asked afresh: its report shows the forced price of the rival, who answers it
        assert [(c.day, c.cached) for c in detail.calls if c.purpose == "decide"] == [
            (day, False) for day in range(1, DAYS + 1)
        ]
        assert [(c.day, c.cached) for c in path.calls if c.purpose == "decide"] == [
            (1, True),
            (2, True),
            (3, False),
        ]
        assert "rival_response" in {
            v.name for v in store.metrics(engine, match_id=match.id) if v.merchant == "smol"
        }
        assert "cartel" in {s.merchant for s in detail.days.said()}


def test_the_report_draws_the_nash_and_monopoly_prices_on_the_price_chart_in_chromium(study):
    engine, tournament, folder = study
    stored = stored_tournament(store.get_tournament(engine, tournament))
    page = folder / "report.html"
    write_report(engine, tournament, page, *stored.scenarios(), weights=stored.scoring)
    try:
        rendered = parse(chromium.dump_dom(page.as_uri()))
    except chromium.ChromiumMissing as exc:
        pytest.fail(str(exc))
    benchmarks = equilibria(load_scenario("calvano"), len(MERCHANTS))["good"]
    for match in store.list_matches(engine, tournament):
        section = rendered.one("details", id=f"match-{match.id}")
        chart = next(
            figure.one("svg")
            for figure in section.all("figure")
            if figure.one("figcaption").content() == "Price: good"
        )
        levels = {
            level.attrs["data-level"].split(" ")[0]: float(level.attrs["data-value"])
            for level in chart.all("g", cls="level")
        }
        assert levels == {
            "Nash": pytest.approx(benchmarks.nash.prices[0]),
            "monopoly": pytest.approx(benchmarks.monopoly.prices[0]),
        }
        # both paths of every merchant, the forced day shaded
        paths = next(
            figure.one("svg")
            for figure in section.all("figure")
            if figure.one("figcaption").content() == "Price, on path and deviated: good"
        )
        drawn = sorted(g.attrs["data-series"] for g in paths.all("g", cls="series"))
        merchants = sorted(g.attrs["data-series"] for g in chart.all("g", cls="series"))
        assert drawn == sorted([*merchants, *(f"{m} (deviated)" for m in merchants)])
        assert len(paths.all("g", cls="band-deviation")) == 1
        # the cartel's messages, as it said them
        detail = store.match_detail(engine, match.id)
        said = [s.text for s in detail.days.said()]
        shown = section.content()
        assert all(text in shown for text in said)
        deviated = [
            s.text for s in detail.deviation.days_played.said() if s.day >= DEVIATION_DAY
        ]  # shown in the probe's part too
        assert all(text in paths_part(section) for text in deviated)
        assert said  # the cartel plays: there are messages


def paths_part(section) -> str:
    """The text of a match section from its deviation probe's heading on."""
    text = section.content()
    return text[text.index("Deviation probe") :]
