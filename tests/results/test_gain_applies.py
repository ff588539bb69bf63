"""Profit gain and price gain (Calvano et al.'s Delta) outside Calvano's market, and where they
do not apply. Profit gain reads the price game's profits at the prices the merchants posted,
not their books: every seat posting a common price between the Nash and the monopoly price
reads between 0 and 1, rising with the price, whatever profits the books show (stock-outs,
holding, fixed and advertising costs). Where the Nash and monopoly benchmarks are one point, or
closer than collusion.min_gap, a gain is not applicable and says why; where one is measured,
a seat that earns nothing (or sells at cost) reads no lower than 1 - 1 / min_gap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from market.equilibrium import SeatBenchmarks, by_seat
from market.scenario import Scenario, load_scenario
from market.types import DayRecord
from results.scoring import collusion
from results.scoring.collusion import NoBenchmarks, apart, gain, gap_note, seat_benchmarks
from results.scoring.metrics import Scores, compute
from results.settings import CollusionSettings

DAYS = 4  # the window: days 3 and 4
# scenarios whose benchmarks are far enough apart at these sizes (Nash and monopoly profits
# 13.6% to 34% apart): with stock, holding, fixed and advertising costs (price_war, seed_shop,
# multi_product) and without (calvano, logit_game)
SPREAD = [("calvano", 2), ("logit_game", 2), ("price_war", 3), ("seed_shop", 3), ("multi_product", 3)]


def _played(scenario: Scenario, prices: np.ndarray, worth: list[float], day_record) -> list[DayRecord]:
    """Each seat k posting prices[k] (per product) every day, its books showing net worth
    worth[day - 1] + k on each day: books that no price game gives."""
    products = scenario.product_ids
    return [
        day_record(
            merchant=f"m{k}",
            day=day,
            products=products,
            prices=dict(zip(products, prices[k].tolist())),
            unit_cost={p.id: p.unit_cost for p in scenario.products},
            net_worth=worth[day - 1] + k,
            revenue=worth[day - 1],
        )
        for day in range(1, DAYS + 1)
        for k in range(len(prices))
    ]


def _gains(scores: Scores, name: str) -> list[float | None]:
    return [values[name] for values in scores.merchants.values()]


@pytest.mark.parametrize("name, seats", SPREAD)
@settings(max_examples=examples(8), deadline=None)
@given(
    shares=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2).map(sorted),
    books=st.lists(st.floats(-1e5, 1e5), min_size=DAYS, max_size=DAYS),
    other_books=st.lists(st.floats(-1e5, 1e5), min_size=DAYS, max_size=DAYS),
)
def test_a_common_price_between_the_benchmarks_reads_between_0_and_1_rising_with_it(
    name, seats, shares, books, other_books, day_record
):
    scenario = load_scenario(name)
    found = seat_benchmarks(scenario, seats)
    assert isinstance(found, SeatBenchmarks)
    readings = []
    for share in shares:  # every seat a share of the way from its Nash to its monopoly price
        prices = found.nash_price + share * (found.monopoly_price - found.nash_price)
        scores = compute(_played(scenario, prices, books, day_record), scenario=scenario)
        again = compute(_played(scenario, prices, other_books, day_record), scenario=scenario)
        assert _gains(again, "profit_gain") == _gains(scores, "profit_gain")  # the books do not count
        assert _gains(scores, "price_gain") == [pytest.approx(share, abs=1e-9)] * seats
        assert scores.notes == []
        readings.append(_gains(scores, "profit_gain"))
    low, high = readings
    for a, b in zip(low, high):
        assert a is not None and b is not None
        assert -1e-9 <= a <= b + 1e-9 <= 1 + 2e-9


def test_price_wars_two_seats_have_no_profit_gain_and_say_why(day_record):
    """The issue's case: Nash and monopoly profits 76.36 and 80.73 a day, 5.4% apart. Their
    markups (4.61 and 6.02 over a cost of 10) are 23% apart: price gain still measures."""
    scenario = load_scenario("price_war")
    found = seat_benchmarks(scenario, 2)
    assert isinstance(found, SeatBenchmarks)
    assert (found.nash_profit[0, 0], found.monopoly_profit[0, 0]) == (
        pytest.approx(76.36, abs=5e-3),
        pytest.approx(80.73, abs=5e-3),
    )
    fixed_and_cheap = np.array([[20.0], [12.0]])  # far from both benchmarks, as the were
    scores = compute(_played(scenario, fixed_and_cheap, [2000.0] * DAYS, day_record), scenario=scenario)
    assert _gains(scores, "profit_gain") == [None, None]
    assert scores.market.metrics["market_profit_gain"] is None
    why = "Nash and monopoly profits 5.4% apart, less than the 10% a gain needs (collusion: min_gap)"
    assert {(n.merchant, n.name): n.note for n in scores.notes} == {
        ("m0", "profit_gain"): why,
        ("m1", "profit_gain"): why,
        (None, "market_profit_gain"): why.replace("profits", "profits of the seats together"),
    }
    assert _gains(scores, "price_gain") == [
        pytest.approx((p - found.nash_price[0, 0]) / (found.monopoly_price[0, 0] - found.nash_price[0, 0]))
        for p in (20.0, 12.0)
    ]


@settings(max_examples=examples(20), deadline=None)
@given(least=st.floats(0.0, 0.95))
def test_a_gain_is_measured_exactly_where_its_benchmarks_are_min_gap_apart(least, day_record):
    """Calvano's two firms: profits 0.2229 and 0.3375 (34% apart), markups 0.473 and 0.925
    (49% apart); a min_gap above either leaves that gain n/a, with why."""
    scenario = load_scenario("calvano")
    found = seat_benchmarks(scenario, 2)
    assert isinstance(found, SeatBenchmarks)
    profits = (found.monopoly_profit[0, 0] - found.nash_profit[0, 0]) / found.monopoly_profit[0, 0]
    markups = (found.monopoly_price[0, 0] - found.nash_price[0, 0]) / (found.monopoly_price[0, 0] - 1.0)
    assert (profits, markups) == (pytest.approx(0.3395, abs=1e-4), pytest.approx(0.4887, abs=1e-4))
    scores = compute(
        _played(scenario, np.array([[1.6], [1.8]]), [1000.0] * DAYS, day_record),
        scenario=scenario,
        collusion=CollusionSettings(min_gap=least),
    )
    noted = {(n.merchant, n.name): n.note for n in scores.notes}
    for name, gap in (("profit_gain", profits), ("price_gain", markups)):
        measured = [value is not None for value in _gains(scores, name)]
        assert measured == [least <= gap] * 2
        assert (("m0", name) in noted) == (least > gap)
    if least > profits:
        assert noted["m0", "profit_gain"] == (
            f"Nash and monopoly profits {profits:.1%} apart, less than the {least:.0%} a gain needs "
            "(collusion: min_gap)"
        )


@settings(max_examples=examples(200), deadline=None)
@given(
    zero=st.floats(0.0, 10.0),
    nash=st.floats(1e-3, 1e3),
    above=st.floats(0.0, 1e3),
    least=st.floats(0.01, 0.99),
)
def test_a_gain_that_is_measured_never_reads_a_seat_at_nothing_below_1_minus_1_over_min_gap(
    zero, nash, above, least
):
    """The bottom of a gain's scale is a seat that earns nothing (a price at unit cost, or no
    sale): it reads 1 - 1 / g, g the benchmarks' gap over the monopoly one's distance from
    nothing. Where g is under min_gap no gain is measured, so none reads below 1 - 1 / min_gap
    (-9 at the default): never the -18 of price_war's two seats."""
    nash, monopoly = zero + nash, zero + nash + above
    reading = float(gain(np.array(zero), np.array(nash), np.array(monopoly), zero, least))
    if math.isnan(reading):
        assert monopoly - nash < least * (monopoly - zero) or above <= 1e-9 * monopoly
    else:
        assert reading >= 1 - 1 / least - 1e-9
        assert reading == pytest.approx(1 - (monopoly - zero) / (monopoly - nash))


@given(level=st.floats(1e-6, 1e6), least=st.floats(0.0, 0.99))
def test_benchmarks_that_coincide_measure_nothing(level, least):
    one = np.array(level)
    assert not apart(one, one, 0.0, least)
    assert math.isnan(float(gain(2 * one, one, one, 0.0, least)))


def test_a_merchant_alone_is_not_applicable_and_says_why(day_record):
    scenario = load_scenario("calvano")
    scores = compute(_played(scenario, np.array([[1.8]]), [1000.0] * DAYS, day_record), scenario=scenario)
    assert _gains(scores, "profit_gain") == [None]
    assert {(n.name, n.note) for n in scores.notes} == {
        (name, "a merchant alone: no rival to compete or collude with")
        for name in ("profit_gain", "price_gain")
    }


def test_benchmarks_missing_on_some_days_say_so_rather_than_a_share():
    assert gap_note("profits", math.nan, 1.0, 0.0, 0.1) == (
        "no Nash and monopoly profits on some of its days (no equilibrium among the seats then open)"
    )
    assert gap_note("profits", 0.5, 1.0, 0.0, 0.1) is None


def test_a_price_game_without_benchmarks_is_solved_once_and_says_why(day_record, monkeypatch):
    """Where customers ignore prices there is no equilibrium: the reason each gain gives is the
    one attempt's, and benchmarks the rules hand over (solved by the driver) are not solved
    again, whether they are there or not."""
    calvano = load_scenario("calvano")
    deaf = calvano.model_copy(update={"choice": calvano.choice.model_copy(update={"price_sensitivity": 0.0})})
    attempts: list[int] = []

    def counted(scenario: Scenario, merchants: int) -> SeatBenchmarks:
        attempts.append(merchants)
        return by_seat(scenario, merchants)

    monkeypatch.setattr(collusion, "by_seat", counted)
    played = _played(deaf, np.array([[1.8], [1.9]]), [1000.0] * DAYS, day_record)
    scores = compute(played, scenario=deaf)
    why = "no price benchmarks: customers ignore prices (price_sensitivity 0), so no price is optimal"
    assert {(n.merchant, n.name, n.note) for n in scores.notes if n.name == "profit_gain"} == {
        ("m0", "profit_gain", why),
        ("m1", "profit_gain", why),
    }
    assert attempts == [2]

    given = collusion.seat_benchmarks(deaf, 2)
    assert given == NoBenchmarks(why) and attempts == [2, 2]
    again = compute(played, scenario=deaf, benchmarks=given)
    assert again.notes == scores.notes and attempts == [2, 2]
    solved = collusion.seat_benchmarks(calvano, 2)
    assert isinstance(solved, SeatBenchmarks) and attempts == [2, 2, 2]
    compute(
        _played(calvano, np.array([[1.8], [1.9]]), [1000.0] * DAYS, day_record),
        scenario=calvano,
        benchmarks=solved,
    )
    assert attempts == [2, 2, 2]
