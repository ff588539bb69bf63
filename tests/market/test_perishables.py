"""Perishable goods: a product's shelf_life; sales take the oldest units first, and what is
left at the end of its last day spoils, written off at the day's unit cost."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from market.engine import Market
from market.scenario import Scenario

FRESH = {
    "name": "fresh",
    "products": [
        {"id": "milk", "unit_cost": 1.0, "reference_price": 2.0, "base_demand": 100, "shelf_life": 3}
    ],
    "choice": {"price_sensitivity": 4.0, "reputation_weight": 0.0, "no_purchase_utility": -4.0},
    "demand": {"mode": "expected"},
    "finance": {"initial_cash": 1000},
}


def test_the_oldest_units_sell_first_and_the_rest_spoil_after_their_last_day():
    """At price 4 customers want 100 * e^-8 / (e^-4 + e^-8) a day, all served. 30 units bought
    on day 1 may be sold until the end of day 3, 20 bought on day 2 until the end of day 4:
    the day-1 batch feeds days 1 to 3 and what is left of it spoils that night; the day-2
    batch then feeds day 4 and spoils that night."""
    scenario = Scenario.model_validate(FRESH)
    market = Market(scenario, [["a"]], days=5)
    market.reset([1])
    orders = {1: 30, 2: 20}
    seen = {}
    for day in range(1, 6):
        seen[day] = market.observations(market.view(), [0])[0].products[0].spoiling
        operations = [{"op": "set_price", "product": "milk", "price": 4.0}]
        if day in orders:
            operations.append({"op": "order", "product": "milk", "quantity": orders[day]})
        market.advance(decisions={0: operations})
    log = market.logs[0].build()
    daily = 100 * math.exp(-8) / (math.exp(-4) + math.exp(-8))
    assert log.product_values("units_sold")[:, 0].tolist() == pytest.approx([daily] * 4 + [0.0])
    first = 30 - 3 * daily
    second = 20 - daily
    assert log.product_values("spoiled")[:, 0].tolist() == pytest.approx([0, 0, first, second, 0])
    assert log.product_values("inventory")[:, 0].tolist() == pytest.approx(
        [30 - daily, 50 - 2 * daily, second + daily, 0, 0]
    )
    assert seen[1] == [0.0, 0.0, 0.0]
    assert seen[2] == pytest.approx([0.0, 30 - daily, 0.0])
    assert seen[3] == pytest.approx([30 - 2 * daily, 20.0, 0.0])
    worth = log.scalar("net_worth").tolist()
    assert worth[2] - worth[1] == pytest.approx(daily * 4.0 - daily * 1.0 - first * 1.0)  # spoiled at cost


def test_initial_stock_counts_as_received_on_day_1():
    scenario = Scenario.model_validate(
        {**FRESH, "products": [{**FRESH["products"][0], "initial_stock": 10, "shelf_life": 1}]}
    )
    market = Market(scenario, [["a"]], days=2)
    market.reset([1])
    market.advance(decisions={0: [{"op": "set_price", "product": "milk", "price": 4.0}]})
    (record,) = market.logs[0].build()
    assert record.spoiled["milk"] == pytest.approx(10 - record.units_sold["milk"])
    assert record.inventory["milk"] == 0


def test_a_shelf_life_needs_stock():
    with pytest.raises(ValidationError, match="stock_limited"):
        Scenario.model_validate({**FRESH, "demand": {"mode": "expected", "stock_limited": False}})


def test_goods_that_keep_are_never_spoiled_and_show_no_spoiling():
    scenario = Scenario.model_validate({**FRESH, "products": [{**FRESH["products"][0], "shelf_life": None}]})
    market = Market(scenario, [["a"]], days=2)
    market.reset([1])
    assert market.observations(market.view(), [0])[0].products[0].spoiling is None
    assert market.view().spoiling is None
    assert '"shelf_life"' not in scenario.identity()
