"""Customer segments (their share of customers, their own sensitivity to price) and the goods
they return: refunded, back to stock or written off."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from market.demand import _draw_without_replacement, allocate_segments
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


def test_counted_customers_arrive_and_choose_by_the_shares_on_average():
    """Poisson arrivals folded into the first choice: over 4,000 markets, each segment's
    takers of each option average customers x its logit share (within four standard errors
    of a Poisson mean), as the expected flows are."""
    markets = 4000
    customers = np.broadcast_to([[25.0, 75.0]], (markets, 1, 2))
    prices = np.array([2.0, 2.5])
    utility = np.broadcast_to(
        np.stack([-8.0 * prices / 2, -1.0 * prices / 2])[None, None], (markets, 1, 2, 2)
    )
    rngs = [np.random.default_rng(seed) for seed in range(markets)]
    wanted, sold, no_purchase = allocate_segments(customers, utility, -4.0, None, rngs)
    assert (wanted == sold).all() and all(float(x).is_integer() for x in wanted.ravel()[:100])
    for s, (n, k) in enumerate(((25, 8.0), (75, 1.0))):
        for i, (mine, theirs) in enumerate(((2.0, 2.5), (2.5, 2.0))):
            mean = n * logit(k, mine, theirs)
            assert abs(wanted[:, 0, s, i].mean() - mean) < 4 * math.sqrt(mean / markets)
        left = n * math.exp(-4) / (math.exp(-4) + math.exp(-k) + math.exp(-k * 2.5 / 2))
        assert abs(no_purchase[:, 0, s].mean() - left) < 4 * math.sqrt(left / markets)


def test_a_short_stock_serves_every_taker_alike_where_customers_are_counted():
    """A merchant with 10 units and more takers than that serves exactly 10, and which of
    its takers get them is random: over 4,000 markets each segment's share of the 10
    averages its share of the first takers (within four standard errors), never more than
    its takers; the rest choose again."""
    markets = 4000
    customers = np.broadcast_to([[25.0, 75.0]], (markets, 1, 2))
    utility = np.broadcast_to(np.array([[[-8.0 * 1.5 / 2], [-1.0 * 1.5 / 2]]])[None], (markets, 1, 2, 1))
    stock = np.full((markets, 1, 1), 10.0)
    rngs = [np.random.default_rng(seed) for seed in range(markets)]
    wanted, sold, _ = allocate_segments(customers, utility, -4.0, stock, rngs)
    assert (sold.sum(axis=2) <= 10).all() and (sold <= wanted).all()
    crowded = wanted[:, 0, :, 0].sum(axis=1) > 10  # first takers: a sold-out merchant is chosen once
    assert crowded.mean() > 0.9
    assert (sold[crowded, 0, :, 0].sum(axis=1) == 10).all()
    bargain = sold[crowded, 0, 0, 0] / 10
    expected = wanted[crowded, 0, 0, 0] / wanted[crowded, 0, :, 0].sum(axis=1)
    assert abs(bargain.mean() - expected.mean()) < 4 * bargain.std() / math.sqrt(crowded.sum())


@given(st.lists(st.integers(0, 50), min_size=1, max_size=5), st.data())
def test_a_draw_without_replacement_takes_as_many_as_asked_and_no_more_of_a_kind(counts, data):
    draws = data.draw(st.integers(0, sum(counts)))
    drawn = _draw_without_replacement(np.random.default_rng(0), counts, draws)
    assert sum(drawn) == draws and all(0 <= d <= c for d, c in zip(drawn, counts))


def test_a_draw_without_replacement_is_hypergeometric():
    """Each kind's mean and variance over 20,000 draws of 25 from counts 30, 20, 10 are the
    multivariate hypergeometric's, n c/N and n (c/N)(1 - c/N)(N - n)/(N - 1) (within 5%)."""
    rng = np.random.default_rng(3)
    counts, n = [30, 20, 10], 25
    drawn = np.array([_draw_without_replacement(rng, counts, n) for _ in range(20_000)])
    total = sum(counts)
    for k, c in enumerate(counts):
        assert drawn[:, k].mean() == pytest.approx(n * c / total, rel=0.05)
        variance = n * (c / total) * (1 - c / total) * (total - n) / (total - 1)
        assert drawn[:, k].var() == pytest.approx(variance, rel=0.05)


def test_where_customers_are_counted_returns_average_the_rate_and_the_resellable_share():
    """A fifth of the bargain hunters' purchases come back, half of those to stock: over 300
    matches of 5 days, returned / sold by the bargain hunters averages 0.2 and restocked /
    returned 0.5 (within four standard errors of a binomial share)."""
    data = {
        **BASE,
        "demand": {"mode": "stochastic"},
        "segments": [{"name": "bargain", "share": 1.0, "price_sensitivity": 8.0, "return_rate": 0.2}],
        "products": [{**BASE["products"][0], "initial_stock": 10_000, "returns_resellable": 0.5}],
    }
    scenario = Scenario.model_validate(data)
    matches = 300
    market = Market(scenario, [["a"] for _ in range(matches)], days=5)
    market.reset(list(range(matches)))
    for _ in range(5):
        market.advance(decisions={})
    logs = [lb.build() for lb in market.logs]
    sold = sum(float(log.product_values("units_sold").sum()) for log in logs)
    returned = sum(float(log.product_values("returned").sum()) for log in logs)
    restocked = sum(float(log.product_values("restocked").sum()) for log in logs)
    assert abs(returned / sold - 0.2) < 4 * math.sqrt(0.2 * 0.8 / sold)
    assert abs(restocked / returned - 0.5) < 4 * math.sqrt(0.25 / returned)
    assert all(float(x).is_integer() for log in logs for x in log.product_values("restocked").ravel())


def test_a_returned_sale_is_neither_paid_nor_owed():
    """Half of the sales on credit, a tenth of those never paid: with a fifth of the bargain
    hunters' purchases returned, the credit sales are half of revenue - refunds, the bad debt
    a tenth of that, and the cash kept the other half."""
    data = {
        **BASE,
        "demand": {"mode": "expected"},
        "products": [{**BASE["products"][0], "initial_stock": 500}],
        "finance": {"initial_cash": 1000, "credit_share": 0.5, "credit_days": 3, "bad_debt_share": 0.1},
    }
    (record,) = play(data, [2.0])
    revenue = 2.0 * (25 * logit(8.0, 2.0) + 75 * logit(1.0, 2.0))
    refunds = 2.0 * 0.2 * 25 * logit(8.0, 2.0)
    assert record.revenue == pytest.approx(revenue) and record.refunds == pytest.approx(refunds)
    assert record.bad_debt == pytest.approx(0.1 * 0.5 * (revenue - refunds))
    assert record.receivables == pytest.approx(0.9 * 0.5 * (revenue - refunds))
    assert record.cash_end - record.cash_start == pytest.approx(0.5 * (revenue - refunds))
