"""A regulator's interventions (market.scenario.Intervention): a price cap and a forced price as
the market applies them, what merchants are told, and the measures of prices around them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from contestants.base import ContestantConfigError
from contestants.kinds import contestant_class, validate_params
from market.engine import Market
from market.equilibrium import by_seat
from market.scenario import Scenario, load_scenario
from market.types import RejectionCode
from results.presentation.match_charts import intervention_bands
from results.scoring.metrics import compute

CALVANO = load_scenario("calvano")  # one product, "good"; Nash 1.47293, monopoly 1.92498 for two


def with_interventions(*acts: dict, scenario: Scenario = CALVANO) -> Scenario:
    data = scenario.model_dump()
    data["interventions"] = list(acts)
    return Scenario.model_validate(data)


def play(scenario: Scenario, prices_by_day: list[list[float | None]]) -> Market:
    """One match of two merchants, each posting its price of the day (None: no operation)."""
    market = Market(scenario, [["a", "b"]], days=len(prices_by_day))
    market.reset([5])
    for prices in prices_by_day:
        market.advance(
            decisions={
                k: {
                    "operations": []
                    if price is None
                    else [{"op": "set_price", "product": "good", "price": price}]
                }
                for k, price in enumerate(prices)
            }
        )
    return market


def posted(market: Market) -> dict[tuple[int, str], tuple[float, list[RejectionCode]]]:
    """(day, merchant) -> the price it posted that day and the codes of its rejections."""
    return {
        (r.day, r.merchant): (r.prices["good"], [x.code for x in r.rejections])
        for r in market.logs[0].build().records()
    }


@settings(max_examples=30, deadline=None)
@given(
    start=st.integers(1, 8),
    length=st.integers(1, 5),
    cap=st.floats(1.2, 1.9),
    asked=st.floats(1.05, 2.5),
)
def test_a_price_cap_binds_from_the_day_it_starts_to_the_day_it_ends(start, length, cap, asked):
    end, days = start + length - 1, start + length + 2
    scenario = with_interventions(
        {"name": "cap", "kind": "price_cap", "start_day": start, "end_day": end, "price": cap}
    )
    market = play(scenario, [[asked, None]] * days)
    shown = posted(market)
    start_price = CALVANO.products[0].start_price
    # a refused price leaves the standing one (yesterday's, or the starting price on day 1),
    # lowered to the cap
    standing = asked if start > 1 else start_price
    for day in range(1, days + 1):
        price, rejected = shown[(day, "a")]
        if start <= day <= end and asked > cap:
            assert price == min(standing, cap) and rejected == [RejectionCode.PRICE_ABOVE_CAP], day
        else:
            assert price == asked and rejected == [], day
        # b posts nothing: its starting price stands, lowered to the cap from its first day
        assert shown[(day, "b")][0] == (start_price if day < start else min(start_price, cap)), day


def test_a_price_posted_before_a_cap_is_lowered_on_its_first_day_and_stays_so_after_it():
    scenario = with_interventions(
        {"name": "cap", "kind": "price_cap", "start_day": 3, "end_day": 4, "price": 1.6}
    )
    shown = posted(play(scenario, [[1.9, 1.8], [None, None], [None, None], [None, None], [None, 1.7]]))
    assert [shown[(d, "a")][0] for d in range(1, 6)] == [1.9, 1.9, 1.6, 1.6, 1.6]
    assert [shown[(d, "b")][0] for d in range(1, 6)] == [1.8, 1.8, 1.6, 1.6, 1.7]


def test_a_forced_price_holds_its_seats_whatever_they_post_and_no_other():
    scenario = with_interventions(
        {"name": "order", "kind": "forced_price", "start_day": 2, "end_day": 3, "price": 1.5, "seats": [1]}
    )
    shown = posted(play(scenario, [[1.9, 1.9]] * 5))
    assert [shown[(d, "a")][0] for d in range(1, 6)] == [1.9] * 5
    assert [shown[(d, "b")][0] for d in range(1, 6)] == [1.9, 1.5, 1.5, 1.9, 1.9]
    assert all(rejected == [] for _, rejected in shown.values())  # its decision is taken, then overridden


def test_merchants_are_told_of_a_cap_from_its_announcement_to_its_end_and_not_of_a_seats_order():
    scenario = with_interventions(
        {
            "name": "cap",
            "kind": "price_cap",
            "start_day": 4,
            "end_day": 5,
            "price": 1.6,
            "announce_days_ahead": 2,
        },
        {"name": "order", "kind": "forced_price", "start_day": 2, "end_day": 2, "price": 1.5, "seats": [0]},
    )
    market = Market(scenario, [["a", "b"]], days=7)
    market.reset([5])
    told = []
    for _ in range(7):
        told.append([(e.kind, e.price, e.start_day, e.end_day) for e in market.view().events])
        market.advance(decisions={0: {"operations": []}, 1: {"operations": []}})
    cap = [("price_cap", 1.6, 4, 5)]
    assert told == [[], cap, cap, cap, cap, [], []]


@pytest.mark.parametrize(
    "act, words",
    [
        ({"kind": "price_cap", "start_day": 2}, "a price_cap needs a price"),
        ({"kind": "price_cap", "start_day": 2, "price": 1.5, "seats": [0]}, "a price_cap binds every seat"),
        ({"kind": "memory_reset", "start_day": 2, "price": 1.5}, "a memory_reset has no price"),
        ({"kind": "forced_price", "start_day": 5, "end_day": 4, "price": 1.5}, "end_day is before start_day"),
        (
            {"kind": "forced_price", "start_day": 5, "price": 1.5, "product": "gadget"},
            "unknown product 'gadget'",
        ),
    ],
)
def test_an_intervention_that_cannot_be_is_refused_with_the_reason(act, words):
    with pytest.raises(ValidationError, match=words):
        with_interventions({"name": "x", **act})


def test_an_intervention_on_a_seat_the_match_lacks_is_refused():
    scenario = with_interventions({"name": "x", "kind": "memory_reset", "start_day": 2, "seats": [2]})
    with pytest.raises(ValueError, match="names seat 2, but a match has seats 0 to 1"):
        scenario.check_merchants(2)


def test_the_prices_before_during_and_after_and_the_days_collusion_takes_to_return():
    """Both merchants at the monopoly price (gain 1), capped at Nash on days 4-6 (gain 0), then
    back at monopoly from day 8 (day 7: half way): before 1, during 0, after (0.5 + 1 + 1 + 1
    + 1 + 1) / 6, and collusion (gain >= 1 - margin for min_days = 5 days) back on day 8: one
    day after the cap's end (day 6) is day 7, which falls short, so 2 days."""
    game = by_seat(CALVANO, 2)
    nash, monopoly = float(game.nash_price[0, 0]), float(game.monopoly_price[0, 0])
    middle = (nash + monopoly) / 2
    scenario = with_interventions(
        {"name": "cap", "kind": "price_cap", "start_day": 4, "end_day": 6, "price": nash}
    )
    days = [[monopoly] * 2] * 6 + [[middle] * 2] + [[monopoly] * 2] * 5
    market = play(scenario, days)
    metrics = compute(market.logs[0].build().records(), scenario=scenario).market.metrics
    assert metrics["intervention_price_before"] == pytest.approx(1.0)
    assert metrics["intervention_price_during"] == pytest.approx(0.0, abs=1e-12)
    assert metrics["intervention_price_after"] == pytest.approx((0.5 + 5) / 6)
    assert metrics["collusion_return_days"] == 2


def test_without_an_intervention_there_are_no_measures_of_one():
    market = play(CALVANO, [[1.8, 1.8]] * 6)
    metrics = compute(market.logs[0].build().records(), scenario=CALVANO).market.metrics
    assert "market_price_gain" in metrics
    assert not any(
        name in metrics
        for name in (
            "intervention_price_before",
            "intervention_price_during",
            "intervention_price_after",
            "collusion_return_days",
        )
    )


def test_a_memory_reset_is_refused_for_language_models_and_harmless_to_rules():
    scenario = with_interventions({"name": "wipe", "kind": "memory_reset", "start_day": 3})
    llm = contestant_class("llm")
    with pytest.raises(ContestantConfigError, match="'wipe' is a memory_reset"):
        llm.check_scenario(validate_params("llm", {"model": "local/smollm2"}), scenario, 2)
    contestant_class("fixed_price").check_scenario(validate_params("fixed_price", {}), scenario, 2)


def test_a_scenario_in_another_currency_scales_its_interventions_prices():
    data = CALVANO.model_dump()
    data["interventions"] = [{"name": "cap", "kind": "price_cap", "start_day": 2, "price": 1.5}]
    scaled = Scenario.model_validate({**data, "scale": 100})
    assert scaled.interventions[0].price == pytest.approx(150.0)


def test_a_deviation_probe_deviates_in_the_market_as_the_regulator_left_it():
    """Day 2: the rival posted 1.9, the cap lowers it to 1.5; a probe forcing seat 0 to 1.8
    sees the capped rival and is held to the cap too."""
    scenario = with_interventions(
        {"name": "cap", "kind": "price_cap", "start_day": 2, "end_day": 3, "price": 1.5}
    )
    market = Market(scenario, [["a", "b"]], days=3)
    market.reset([5])
    seen = []

    def probe(posted):
        seen.append(posted[:, 0].tolist())
        return np.array([1.8])

    rival = {"operations": [{"op": "set_price", "product": "good", "price": 1.9}]}
    market.advance(decisions={0: {"operations": []}, 1: rival})
    market.advance(decisions={0: {"operations": []}, 1: {"operations": []}}, forced={0: probe})
    assert seen == [[1.5, 1.5]] and market.prices[:, 0].tolist() == [1.5, 1.5]


def test_the_charts_shade_the_days_of_each_act_within_the_match():
    scenario = with_interventions(
        {"name": "cap", "kind": "price_cap", "start_day": 3, "end_day": 5, "price": 1.5},
        {"name": "order", "kind": "forced_price", "start_day": 5, "end_day": 9, "price": 1.6},
        {"name": "wipe", "kind": "memory_reset", "start_day": 8},
    )
    bands = intervention_bands(scenario, days=6)
    assert [(b.start, b.end, b.label, b.kind) for b in bands] == [
        (2.5, 5.5, "cap (price cap 1.5)", "intervention"),
        (4.5, 6.5, "order (forced price 1.6)", "intervention"),  # cut at the match's last day
    ]
