"""Off-path questions (`off_path:` in a tournament file): on chosen days each language-model
merchant is asked what it would charge had its rival posted a given price; the answers are
stored and exported apart and never enter the market."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from common.yaml_files import ConfigError
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.llm.providers import Provider, register_provider
from market.equilibrium import by_seat
from market.scenario import Scenario, load_scenario
from results.presentation.export import export
from results.recording import save_match
from results.records import FinishedMatch
from results.scoring.collusion import seat_benchmarks
from results.settings import OffPathSettings
from results.storage.db import engine_for
from results.storage.store import match_detail, start_tournament
from tournaments.config import ContestantEntry
from tournaments.estimate import estimate
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")
ANSWER = 1.61  # every off-path answer; every decision posts DECIDED
DECIDED = 1.8


class Answering(Provider):
    """Decides to post DECIDED every day and answers every off-path question ANSWER; counts
    the questions it was asked by what they asked."""

    name = "off_path_answers"
    asked: list[str] = []

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        if request.schema_name in ("off_path", "recall"):
            Answering.asked.append(f"{request.schema_name}: {request.messages[-1].content}")
            text = json.dumps({"value": ANSWER})
        else:
            text = json.dumps({"operations": [{"op": "set_price", "product": "good", "price": DECIDED}]})
        return Answer(text=text, usage=TokenUsage(input_tokens=10, output_tokens=5))


register_provider("off_path_answers", f"{__name__}:Answering")


def played(
    off_path: OffPathSettings,
    recall_every: int = 0,
    days: int = 5,
    seats: tuple[str, ...] = ("a", "b"),
    scenario: Scenario = CALVANO,
) -> FinishedMatch:
    Answering.asked.clear()
    entries = [
        ContestantEntry(name=name, kind="llm", params={"model": "off_path_answers/test", "no_cache": True})
        for name in seats
    ]
    spec = MatchSpec(key="k", index=0, scenario="calvano", seed=1, days=days, seats=seats)
    rules = MatchRules(
        seed=7,
        recall_every=recall_every,
        off_path=off_path,
        benchmarks={"calvano": seat_benchmarks(scenario, len(seats))},
    )
    (finished,) = play_here([Match(spec, scenario, rules, plan_contestants(entries))])
    assert isinstance(finished, FinishedMatch)
    return finished


def test_each_merchant_is_asked_about_its_rival_on_the_days_given_and_the_market_never_sees_it():
    finished = played(OffPathSettings(days=[3, 5], price="nash"))
    nash = float(by_seat(CALVANO, 2).nash_price[0, 0])
    assert [(a.merchant, a.day, a.rival, a.product, a.answer) for a in finished.off_path] == [
        ("a", 3, "b", "good", ANSWER),
        ("b", 3, "a", "good", ANSWER),
        ("a", 5, "b", "good", ANSWER),
        ("b", 5, "a", "good", ANSWER),
    ]
    assert all(a.price == pytest.approx(nash) and a.posted == DECIDED for a in finished.off_path)
    # the market took the decisions alone: every price posted is the decided one
    assert {record.prices["good"] for record in finished.days_played} == {DECIDED}
    assert len(Answering.asked) == 4 and all(q.startswith("off_path: ") for q in Answering.asked)
    assert f"had posted {nash:.2f} for good yesterday (it posted 1.8)" in Answering.asked[0]


def test_the_rival_asked_about_is_the_next_one_open_at_its_nash_price_among_those_open():
    """c enters on day 4: on day 3 b's next rival is a (c is not open) at the duopoly's Nash
    price; on day 5 b's is c, and the price is Nash among the three."""
    entering = Scenario.model_validate(
        {
            **CALVANO.model_dump(),
            "interventions": [{"name": "c_opens", "kind": "entry", "start_day": 4, "seats": [2]}],
        }
    )
    finished = played(OffPathSettings(days=[3, 5], price="nash"), seats=("a", "b", "c"), scenario=entering)
    assert finished.faults == []  # the incumbents decide on the days before the entry too
    two, three = (float(by_seat(CALVANO, n).nash_price[0, 0]) for n in (2, 3))
    assert [(a.merchant, a.day, a.rival, a.price) for a in finished.off_path] == [
        ("a", 3, "b", pytest.approx(two)),
        ("b", 3, "a", pytest.approx(two)),
        ("a", 5, "b", pytest.approx(three)),
        ("b", 5, "c", pytest.approx(three)),
        ("c", 5, "a", pytest.approx(three)),
    ]


def test_an_off_path_day_takes_the_place_of_that_days_recall_question():
    finished = played(OffPathSettings(days=[3], price=1.5), recall_every=3)
    assert [(a.day, a.price) for a in finished.off_path] == [(3, 1.5), (3, 1.5)]
    assert 3 not in {r.day for r in finished.recalls}  # day 3 asked off path, not recall
    assert sum(q.startswith("recall: ") for q in Answering.asked) == 0  # day 6 would be the next


def test_the_answers_are_stored_and_exported_apart(tmp_path):
    finished = played(OffPathSettings(days=[4], price=2.0))
    engine = engine_for(f"sqlite:///{tmp_path}/arena.db")
    tournament = start_tournament(engine, "t", "t.yaml", "", "h", 0, [("a", "llm", {}), ("b", "llm", {})], 1)
    match_id = save_match(engine, tournament, finished, scenario=CALVANO)
    assert match_detail(engine, match_id).off_path == finished.off_path
    export(engine, tournament, tmp_path / "out", "csv")
    table = pd.read_csv(tmp_path / "out" / "off_path.csv")
    assert table[["merchant", "contestant", "day", "rival", "price", "posted", "answer"]].values.tolist() == [
        ["a", "a", 4, "b", 2.0, DECIDED, ANSWER],
        ["b", "b", 4, "a", 2.0, DECIDED, ANSWER],
    ]


@pytest.mark.parametrize(
    "section, field, words",
    [
        ("{days: [4], price: 1.5}\nformat: solo", "off_path", "a merchant alone has none"),
        ("{days: [40], price: 1.5}", "off_path.days", "day 40 is after the last"),
        ("{days: [1], price: 1.5}", "off_path.days", "the days start at 2"),
        ("{days: [3], price: -1}", "off_path.price", "must be nash, monopoly or a price above 0"),
        (
            "{days: [3], price: nahs}",
            "off_path.price",
            "must be nash, monopoly or a price above 0 and at most 1e+12, not 'nahs'",
        ),
        ("{days: [3], price: 5000}", "off_path.price", "5000 is above scenarios[0]"),
    ],
)
def test_questions_that_cannot_be_asked_are_one_line(tmp_path, section, field, words):
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: asked
            scenarios: [calvano]
            days: 10
            contestants:
              - {name: a, kind: fixed_price}
              - {name: b, kind: cost_plus}
            off_path: """
        )
        + section
        + "\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    assert raised.value.field == field and words in raised.value.message


def test_the_estimate_counts_the_off_path_calls(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: asked
            scenarios: [calvano]
            days: 6
            recall_every: 0
            off_path: {days: [2, 4, 6], price: monopoly}
            contestants:
              - {name: a, kind: llm, params: {model: local/smollm2}}
              - {name: b, kind: fixed_price}
            """
        )
    )
    (a, total) = estimate(load_tournament(path)).contestants
    assert (a.contestant, a.by_purpose) == ("a", {"decide": (6, 6), "off_path": (3, 3), "repair": (0, 6)})
    assert total.by_purpose == a.by_purpose and total.calls == (9, 15)


def test_an_off_path_day_leaves_the_later_recall_questions_as_they_were():
    """The recall question of an off-path day is drawn and not asked: day 6 asks what it asks
    in the same match without off-path questions."""
    with_off_path = played(OffPathSettings(days=[3], price=1.5), recall_every=3, days=7)
    without = played(OffPathSettings(days=[2], price=1.5), recall_every=3, days=7)  # day 2: no recall day
    later = lambda match: [(r.day, r.asked_day, r.fact) for r in match.recalls if r.day > 3]  # noqa: E731
    assert later(with_off_path) == later(without) != []
