"""Customer segments (their share of customers, their own sensitivity to price) and the goods
they return: refunded, back to stock or written off."""

from __future__ import annotations

import math

import pytest

from market.engine import Market
from market.equilibrium import EquilibriumError, by_seat
from market.scenario import Scenario

BASE = {
    "name": "two_crowds",
    "products": [{"id": "tea", "unit_cost": 1.0, "reference_price": 2.0, "base_demand": 100}],
    "choice": {"price_sensitivity": 4.0, "reputation_weight": 0.0, "no_purchase_utility": -4.0},
    "demand": {"mode": "expected", "stock_limited": False},
    "finance": {"initial_cash": 1000},
    "segments": [
        {"name": "bargain", "share": 0.25, "price_sensitivity": 8.0, "return_rate": 0.2},
        {"name": "loyal", "share": 0.75, "price_sensitivity": 1.0},
    ],
}


def logit(sensitivity: float, price: float, *others: float) -> float:
    """A merchant's share at `price` among those at `others`, no purchase at -4, reference 2."""
    u = [math.exp(-sensitivity * p / 2) for p in (price, *others)]
    return u[0] / (math.exp(-4) + sum(u))


def play(data: dict, prices: list[float], stock: float | None = None):
    scenario = Scenario.model_validate(data)
    market = Market(scenario, [[f"m{k}" for k in range(len(prices))]], days=1)
    market.reset([1])
    market.advance(
        decisions={k: [{"op": "set_price", "product": "tea", "price": p}] for k, p in enumerate(prices)}
    )
    return market.logs[0].build()


def test_each_segment_chooses_by_its_own_sensitivity():
    log = play(BASE, [2.0, 2.5])
    sold = log.product_values("units_sold")[:, 0]
    for k, (mine, theirs) in enumerate(((2.0, 2.5), (2.5, 2.0))):
        expected = 25 * logit(8.0, mine, theirs) + 75 * logit(1.0, mine, theirs)
        assert sold[k] == pytest.approx(expected)


def test_a_segment_returns_its_share_refunded_and_back_to_stock_or_written_off():
    """A quarter of the customers return a fifth of what they buy: refunded at the price paid;
    with returns_resellable 0.5 half of it is back in stock, the other half written off at cost."""
    data = {
        **BASE,
        "demand": {"mode": "expected"},
        "products": [{**BASE["products"][0], "initial_stock": 500, "returns_resellable": 0.5}],
    }
    log = play(data, [2.0])
    bargain = 25 * logit(8.0, 2.0)
    (record,) = log
    assert record.returned["tea"] == pytest.approx(0.2 * bargain)
    assert record.restocked["tea"] == pytest.approx(0.1 * bargain)
    assert record.refunds == pytest.approx(2.0 * 0.2 * bargain)
    sold = record.units_sold["tea"]
    assert record.inventory["tea"] == pytest.approx(500 - sold + 0.1 * bargain)
    assert record.cash_end == pytest.approx(1000 + 2.0 * sold - 2.0 * 0.2 * bargain)
    written_off = 0.1 * bargain
    assert record.net_worth - (1000 + 500) == pytest.approx(2.0 * sold - 0.4 * bargain - sold + 0.1 * bargain)
    assert written_off > 0


def test_a_short_stock_serves_each_segment_in_proportion_and_the_rest_choose_again():
    """One merchant with 10 units at price 1.5 and a shop at 2.0 (never sold out); expected
    flows: each segment's takers of the merchant get 10 x their share of its takers, the rest
    choose again between the shop and no purchase by their own sensitivity."""
    data = {
        **BASE,
        "demand": {"mode": "expected"},
        "products": [{**BASE["products"][0], "initial_stock": 10}],
        "competitors": [{"name": "shop", "price_ratio": 1.0}],
    }
    log = play(data, [1.5])
    takers = {s: n * logit(k, 1.5, 2.0) for s, n, k in (("bargain", 25, 8.0), ("loyal", 75, 1.0))}
    total = sum(takers.values())
    assert total > 10
    shop = 0.0
    for wanted, n, k in zip(takers.values(), (25, 75), (8.0, 1.0)):
        turned_away = wanted - 10 * wanted / total
        first = n * math.exp(-k * 2.0 / 2) / (math.exp(-4) + math.exp(-k * 1.5 / 2) + math.exp(-k * 2.0 / 2))
        shop += first + turned_away * math.exp(-k) / (math.exp(-k) + math.exp(-4))
    assert log.product_values("units_sold")[0, 0] == pytest.approx(10)
    assert log.competitors.units_sold[0, 0, 0] == pytest.approx(shop)


def test_where_customers_are_counted_returns_are_whole_and_never_more_than_sold():
    data = {
        **BASE,
        "demand": {"mode": "stochastic"},
        "products": [{**BASE["products"][0], "initial_stock": 40}],
    }
    scenario = Scenario.model_validate(data)
    market = Market(scenario, [["a", "b"]], days=20)
    market.reset([5])
    for _ in range(20):
        market.advance(decisions={0: [{"op": "order", "product": "tea", "quantity": 30}], 1: []})
    log = market.logs[0].build()
    returned, sold = log.product_values("returned")[:, 0], log.product_values("units_sold")[:, 0]
    assert all(float(x).is_integer() for x in returned) and (returned <= sold).all()
    assert returned.sum() > 0


def test_segments_leave_no_price_game_to_solve():
    with pytest.raises(EquilibriumError, match="segments"):
        by_seat(Scenario.model_validate(BASE), 2)


def test_shares_must_add_up_to_one():
    with pytest.raises(ValueError, match="add up to 1"):
        Scenario.model_validate({**BASE, "segments": [{"name": "a", "share": 0.5}]})
