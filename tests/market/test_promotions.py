"""Promotions: `promote {product, discount, days}` lets customers pay the price less the
discount for those days, and draws those who respond to offers on promotion."""

from __future__ import annotations

import math

import pytest

from market.engine import Market
from market.scenario import Scenario
from market.types import Promote, RejectionCode

SALE = {
    "name": "sale",
    "products": [{"id": "tea", "unit_cost": 1.0, "reference_price": 2.0, "base_demand": 100}],
    "choice": {
        "price_sensitivity": 4.0,
        "reputation_weight": 0.0,
        "no_purchase_utility": -4.0,
        "promotion_response": 0.5,
    },
    "demand": {"mode": "expected", "stock_limited": False},
    "finance": {"initial_cash": 1000},
    "promotions": {"max_discount": 0.3, "max_days": 5},
}


def share(price: float, bonus: float = 0.0) -> float:
    u = math.exp(-4 * price / 2 + bonus)
    return u / (math.exp(-4) + u)


def play(data: dict, decisions: dict[int, list], days: int) -> Market:
    market = Market(Scenario.model_validate(data), [["a"]], days=days)
    market.reset([1])
    for day in range(1, days + 1):
        market.advance(decisions={0: decisions.get(day, [])})
    return market


def test_customers_pay_the_discounted_price_for_the_days_of_the_promotion():
    """Price 2.0, 25% off for 2 days from day 2: on days 2 and 3 customers pay 1.5 and gain
    the promotion's 0.5 of utility; on days 1 and 4 they pay 2.0."""
    promote = [{"op": "promote", "product": "tea", "discount": 0.25, "days": 2}]
    log = play(SALE, {2: promote}, 4).logs[0].build()
    sold = log.product_values("units_sold")[:, 0]
    assert sold.tolist() == pytest.approx(
        [100 * share(2.0), 100 * share(1.5, 0.5), 100 * share(1.5, 0.5), 100 * share(2.0)]
    )
    assert log.product_values("discount")[:, 0].tolist() == [0.0, 0.25, 0.25, 0.0]
    assert log.scalar("revenue").tolist() == pytest.approx((sold * [2.0, 1.5, 1.5, 2.0]).tolist())
    assert log.product_values("prices")[:, 0].tolist() == [2.0] * 4  # the posted price stands
    assert log[1].operations == promote


def test_the_merchant_sees_its_promotion_and_rivals_see_the_price_their_customers_paid():
    market = Market(Scenario.model_validate(SALE), [["a", "b"]], days=4)
    market.reset([1])
    market.advance(decisions={0: [{"op": "promote", "product": "tea", "discount": 0.2, "days": 3}]})
    view = market.view()
    mine, theirs = market.observations(view, [0, 1])
    assert (mine.products[0].discount, mine.products[0].discount_until) == (0.2, 3)
    assert theirs.products[0].discount == 0.0
    assert [m.prices["tea"] for m in theirs.market] == pytest.approx([1.6, 2.0])


@pytest.mark.parametrize(
    ("discount", "days"), [(0.35, 2), (0.0, 2), (0.2, 0), (0.2, 6), (-0.1, 1), (math.nan, 1)]
)
def test_a_promotion_the_market_does_not_allow_is_refused_alone(discount, days):
    decision = [
        {"op": "promote", "product": "tea", "discount": discount, "days": days},
        {"op": "set_price", "product": "tea", "price": 2.2},
    ]
    (record,) = play(SALE, {1: decision}, 1).logs[0].build()
    (rejection,) = record.rejections
    assert rejection.code == RejectionCode.PROMOTION_OUT_OF_RANGE and rejection.index == 0
    assert "up to 0.3 off for 1 to 5 days" in rejection.reason
    assert record.prices["tea"] == 2.2 and record.discount["tea"] == 0.0


def test_without_promotions_promote_is_no_operation():
    without = {**SALE, "promotions": None}
    (record,) = (
        play(without, {1: [{"op": "promote", "product": "tea", "discount": 0.1, "days": 1}]}, 1)
        .logs[0]
        .build()
    )
    assert record.rejections[0].code == RejectionCode.MALFORMED_OPERATION
    assert record.rejections[0].reason.endswith(
        "expected tags: 'set_price', 'order', 'advertise', 'collect', 'wait'"
    )
    typed = play(without, {1: [Promote(product="tea", discount=0.1, days=1)]}, 1).logs[0].build()
    assert typed[0].rejections[0].reason == "this market runs no promotions"
    assert '"promotions"' not in Scenario.model_validate(without).identity()


def test_a_promotion_of_absurdly_many_days_is_refused_not_a_crash():
    decision = [{"op": "promote", "product": "tea", "discount": 0.2, "days": 10**9}]
    (record,) = play(SALE, {1: decision}, 1).logs[0].build()
    assert [r.code for r in record.rejections] == [RejectionCode.PROMOTION_OUT_OF_RANGE]
