"""A new entrant mid-match (market.scenario.Intervention, kind entry): absent before its day,
open with the starting books on it, and the price game measured among the seats open."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import parallel_api_test
from pydantic import ValidationError

from contestants.base import ContestantConfigError
from contestants.baselines import RulePlay
from contestants.kinds import contestant_class, validate_params
from contestants.llm.prompts import HistoryRow, history_table
from market.engine import Market
from market.env import MarketEnv
from market.equilibrium import by_seat
from market.scenario import Scenario, load_scenario
from results.scoring.collusion import gain, open_seat_benchmarks
from results.scoring.metrics import compute

CALVANO = load_scenario("calvano")
PRICE_WAR = load_scenario("price_war")  # stock, holding costs and fixed costs


def entering(day: int, seats: list[int] | None = None, scenario: Scenario = CALVANO, **changes) -> Scenario:
    data = {**scenario.model_dump(), **changes}
    data["interventions"] = [{"name": "newcomer", "kind": "entry", "start_day": day, "seats": seats or [2]}]
    return Scenario.model_validate(data)


def price(p: float) -> dict:
    return {"operations": [{"op": "set_price", "product": "good", "price": p}]}


def play(scenario: Scenario, merchants: list[str], prices: list[list[float]]) -> Market:
    """One match, each merchant posting its price of the day (one for every merchant, those
    not playing included: the market ignores theirs)."""
    market = Market(scenario, [merchants], days=len(prices))
    market.reset([3])
    for day_prices in prices:
        market.advance(decisions={k: price(p) for k, p in enumerate(day_prices)})
    return market


@settings(max_examples=20, deadline=None)
@given(
    day=st.integers(2, 6),
    prices=st.lists(st.tuples(*[st.floats(1.1, 2.4)] * 3), min_size=7, max_size=7),
)
def test_before_its_day_an_entrant_is_absent_and_the_market_plays_as_without_it(day, prices):
    """Days 1 to day - 1 of a market of three whose third seat enters on `day` are, record for
    record, those of the plain market of the first two: the entrant is not asked (its
    decisions are ignored), sells nothing, pays nothing and is in no record."""
    three = play(entering(day), ["a", "b", "c"], [list(p) for p in prices])
    two = play(CALVANO, ["a", "b"], [list(p[:2]) for p in prices[: day - 1]])
    before = [r for r in three.logs[0].build().records() if r.day < day]
    alone = list(two.logs[0].build().records())
    assert len(before) == len(alone) == 2 * (day - 1)
    for got, expected in zip(before, alone):
        assert (got.day, got.merchant) == (expected.day, expected.merchant)
        assert got.units_sold["good"] == pytest.approx(expected.units_sold["good"], rel=1e-12)
        assert got.cash_end == pytest.approx(expected.cash_end, rel=1e-12)


def test_an_entrant_opens_on_its_day_with_the_starting_books_and_is_seen_from_then():
    scenario = entering(4)
    market = Market(scenario, [["a", "b", "c"]], days=6)
    market.reset([3])
    seen, playing = {}, {}
    for day in range(1, 7):
        view = market.view()
        rows = np.flatnonzero(market.playing).tolist()
        playing[day] = rows
        seen[day] = {m.merchant: m.prices for m in market.observations(view, rows)[0].market}
        market.advance(decisions={k: price([1.6, 1.7, 1.5][k]) for k in range(3)})
    assert playing == {1: [0, 1], 2: [0, 1], 3: [0, 1], 4: [0, 1, 2], 5: [0, 1, 2], 6: [0, 1, 2]}
    assert [set(seen[day]) for day in (3, 4)] == [{"a", "b"}, {"a", "b", "c"}]
    # on its first morning it has posted nothing, so no price of it is shown; then its own
    assert seen[4]["c"] is None and seen[5]["c"] == {"good": 1.5}
    first = next(r for r in market.logs[0].build().records() if r.merchant == "c")
    assert first.day == 4 and first.cash_start == scenario.finance.initial_cash
    assert first.units_sold["good"] > 0 and first.prices == {"good": 1.5}


def test_the_benchmarks_before_entry_are_those_of_the_game_of_the_seats_open():
    scenario = entering(5)
    before, after = open_seat_benchmarks(scenario, 3, 4), open_seat_benchmarks(scenario, 3, 5)
    two, three = by_seat(CALVANO, 2), by_seat(CALVANO, 3)
    assert before is not None and after is not None
    assert np.allclose(before.nash_price[:2], two.nash_price) and np.isnan(before.nash_price[2]).all()
    assert np.allclose(before.monopoly_profit[:2], two.monopoly_profit)
    assert np.allclose(after.nash_price, three.nash_price)
    assert three.nash_price[0, 0] < two.nash_price[0, 0]  # a third firm competes prices down


def test_the_prices_before_and_after_entry_are_measured_against_the_game_of_the_seats_open():
    """Everyone posts 1.8 every day: before entry (days 1-4) the gain is 1.8's place between
    the duopoly's Nash and monopoly prices, from the entry day on its place in the game of
    three, and the whole match's market price gain is their mean by day."""
    scenario = entering(5)
    market = play(scenario, ["a", "b", "c"], [[1.8] * 3] * 10)
    metrics = compute(market.logs[0].build(), scenario=scenario).market.metrics
    two, three = by_seat(CALVANO, 2), by_seat(CALVANO, 3)
    duopoly = float(gain(np.array(1.8), two.nash_price[0, 0], two.monopoly_price[0, 0]))
    triopoly = float(gain(np.array(1.8), three.nash_price[0, 0], three.monopoly_price[0, 0]))
    assert duopoly > triopoly > 0
    assert metrics["intervention_price_before"] == pytest.approx(duopoly)
    assert metrics["intervention_price_during"] == pytest.approx(triopoly)
    assert metrics["intervention_price_after"] == pytest.approx(triopoly)
    # the measurement window, days 6-10, is after the entry
    assert metrics["market_price_gain"] == pytest.approx(triopoly)


def test_an_entrant_joins_the_pettingzoo_agents_on_its_day():
    env = MarketEnv(entering(3), ["a", "b", "c"], days=5)
    observations, _ = env.reset(seed=1)
    assert env.agents == ["a", "b"] and set(observations) == {"a", "b"}
    env.step({a: price(1.7) for a in env.agents})
    observations, rewards, *_ = env.step({a: price(1.7) for a in env.agents})
    assert rewards["c"] == 0 and set(observations) == {"a", "b", "c"}
    assert env.agents == ["a", "b", "c"] and observations["c"].day == 3
    parallel_api_test(MarketEnv(entering(3), ["a", "b", "c"], days=5), num_cycles=7)


@pytest.mark.parametrize(
    "act, words",
    [
        ({"kind": "entry", "start_day": 3}, "an entry names its seats"),
        ({"kind": "entry", "start_day": 1, "seats": [1]}, "opens on day 2 or later"),
        ({"kind": "entry", "start_day": 3, "seats": [1], "price": 1.5}, "an entry has no price"),
        (
            {"kind": "entry", "start_day": 3, "seats": [1], "announce_days_ahead": 2},
            "an entry is not announced",
        ),
    ],
)
def test_an_entry_that_cannot_be_is_refused_with_the_reason(act, words):
    with pytest.raises(ValidationError, match=words):
        Scenario.model_validate({**CALVANO.model_dump(), "interventions": [{"name": "x", **act}]})


def test_a_seat_enters_once_and_someone_is_open_on_day_1():
    twice = [
        {"name": "x", "kind": "entry", "start_day": 3, "seats": [1]},
        {"name": "y", "kind": "entry", "start_day": 5, "seats": [1]},
    ]
    with pytest.raises(ValidationError, match="a seat enters once"):
        Scenario.model_validate({**CALVANO.model_dump(), "interventions": twice})
    with pytest.raises(ValueError, match="a match needs a merchant open on day 1"):
        entering(3, seats=[0, 1]).check_merchants(2)


def test_learners_refuse_an_entry_and_rule_merchants_play_it():
    scenario = entering(3)
    with pytest.raises(ContestantConfigError, match="'newcomer' has a seat enter later"):
        contestant_class("qlearning").check_scenario(validate_params("qlearning", {}), scenario, 3)
    contestant_class("grim_trigger").check_scenario(validate_params("grim_trigger", {}), scenario, 3)
    assert math.isfinite(by_seat(scenario, 3).nash_price[0, 0])


def test_an_entrant_opens_though_every_merchant_before_it_went_bankrupt():
    """a sells at cost and cannot pay its fixed cost: bankrupt on day 1; b opens on day 5 all
    the same, and the match goes on to its last day, as it would beside other matches."""
    finance = {**CALVANO.finance.model_dump(), "initial_cash": 0.5, "fixed_daily_cost": 0.6}
    scenario = entering(5, seats=[1], finance=finance)
    market = Market(scenario, [["a", "b"]], days=8)
    market.reset([3])
    played = 0
    while market.in_play:
        market.advance(decisions={0: price(1.0), 1: price(1.9)})
        played += 1
    days = {(r.merchant, r.day) for r in market.logs[0].build().records()}
    assert played == 8
    assert days == {("a", 1)} | {("b", day) for day in range(5, 9)}


def test_an_entrants_first_reward_is_its_first_days_profit_and_it_paid_nothing_before():
    """In price_war merchants hold stock (holding costs) and pay a fixed cost: the entrant's
    reward on its first day is its net worth that evening less a merchant's at the start, the
    same as a merchant's on day 1 of the plain market."""
    plain = MarketEnv(PRICE_WAR, ["a", "b", "c"], days=5)
    plain.reset(seed=1)
    _, rewards, *_, infos = plain.step({a: price(40.0) for a in plain.agents})
    start = infos["a"]["record"].net_worth - rewards["a"]
    env = MarketEnv(entering(3, scenario=PRICE_WAR), ["a", "b", "c"], days=5)
    env.reset(seed=1)
    for _ in range(3):
        _, rewards, *_, infos = env.step({a: price(40.0) for a in env.agents})
    first = infos["c"]["record"]
    assert first.day == 3 and first.holding > 0
    assert rewards["c"] == pytest.approx(first.net_worth - start)


def test_the_numeric_observation_shows_no_price_of_an_entrant_before_it_posts_one():
    env = MarketEnv(entering(3), ["a", "b", "c"], days=5, numeric=True)
    observations, _ = env.reset(seed=1)
    assert observations["a"]["prices"][2, 0] == 0 and observations["a"]["prices"][1, 0] > 0
    for _ in range(3):
        observations, *_ = env.step({a: price(1.7) for a in env.agents})
    assert observations["a"]["prices"][2, 0] == pytest.approx(1.7)  # posted on day 3, seen on day 4


def test_the_market_price_gain_leaves_out_the_days_of_a_merchant_alone():
    """b enters on day 8 of 10 and both post 1.8: of the measurement window (days 6-10) days
    6 and 7 have a merchant alone, whose gain is undefined, so the measure is 1.8's place in
    the duopoly."""
    scenario = entering(8, seats=[1])
    market = play(scenario, ["a", "b"], [[1.8, 1.8]] * 10)
    metrics = compute(market.logs[0].build(), scenario=scenario).market.metrics
    two = by_seat(CALVANO, 2)
    assert metrics["market_price_gain"] == pytest.approx(
        float(gain(np.array(1.8), two.nash_price[0, 0], two.monopoly_price[0, 0]))
    )


def test_a_match_with_an_entrant_is_measured_from_its_log_not_from_bare_records():
    scenario = entering(3)
    market = play(scenario, ["a", "b", "c"], [[1.8] * 3] * 4)
    with pytest.raises(ValueError, match="measured from its DayLog"):
        compute(market.logs[0].build().records(), scenario=scenario)


def test_a_grim_trigger_entrant_sees_nothing_before_it_opens():
    """The incumbents undercut on days 1-2, then hold the duopoly's monopoly price; a grim
    trigger opens on day 4. Had it watched them while absent it would post Nash on its first
    day; it posts the monopoly price of three (what they held on day 3 was no defection in
    the game of two), and Nash from day 5, their day-4 price being below the monopoly price
    of three."""
    scenario = entering(4)
    market = Market(scenario, [["a", "b", "c"]], days=6)
    market.reset([3])
    grim = contestant_class("grim_trigger")(validate_params("grim_trigger", {}))
    grim.reset(merchant="c", scenario=scenario, seed=1)
    rules = RulePlay([grim], np.array([2]))
    two, three = by_seat(CALVANO, 2), by_seat(CALVANO, 3)
    for day in range(1, 7):
        arrays, rows, failed = rules.decide(market.view())
        assert not failed
        held = 1.5 if day <= 2 else float(two.monopoly_price[0, 0])
        market.advance(arrays, rows, decisions={0: price(held), 1: price(held)})
    posted = {r.day: r.prices["good"] for r in market.logs[0].build().records() if r.merchant == "c"}
    assert sorted(posted) == [4, 5, 6]
    assert posted[4] == pytest.approx(three.monopoly_price[2, 0])
    assert posted[5] == pytest.approx(three.nash_price[2, 0])


def test_the_history_table_has_a_column_for_a_rival_that_joined_after_its_first_row():
    joined = {"b": {"good": 1.7}, "c": {"good": 1.6}}
    rows = [
        HistoryRow(3, {"good": 1.8}, {"good": 0.3}, 0.2, {"b": {"good": 1.7}}, frozenset()),
        HistoryRow(4, {"good": 1.8}, {"good": 0.3}, 0.2, joined, frozenset()),
    ]
    assert history_table(rows).splitlines() == [
        "day,price good,sold good,profit,b good,c good",
        "3,1.8,0.3,0.2,1.7,n/a",
        "4,1.8,0.3,0.2,1.7,1.6",
    ]
