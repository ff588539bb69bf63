"""judge_day: how the market will take one merchant's operations at the close of its day,
asked before the close (an agent's tools ask it). The market's own record of the day is the
reference."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from market.engine import Market
from market.operations import OperationRules, judge_day
from market.scenario import Scenario, load_scenario

RETAIL = load_scenario("retail_quarter")


def operations(scenario: Scenario) -> st.SearchStrategy[list[Any]]:
    """Lists of operations a model might write: good ones, bad numbers, unknown products and
    suppliers, whole and fractional quantities, and items that are no operation at all."""
    products = st.sampled_from([*scenario.product_ids, "tea"])
    number = st.one_of(
        st.floats(-5, 2_000, allow_nan=False), st.integers(-3, 400).map(float), st.just(float("nan"))
    )
    suppliers = st.sampled_from([None, "nobody", *{s for names in scenario.supplier_names for s in names}])
    one = st.one_of(
        st.fixed_dictionaries({"op": st.just("set_price"), "product": products, "price": number}),
        st.fixed_dictionaries(
            {"op": st.just("order"), "product": products, "quantity": number, "supplier": suppliers}
        ),
        st.fixed_dictionaries({"op": st.just("advertise"), "amount": number}),
        st.just({"op": "collect"}),
        st.just({"op": "wait"}),
        st.fixed_dictionaries(
            {
                "op": st.just("promote"),
                "product": products,
                "discount": st.floats(-0.1, 0.6),
                "days": st.integers(-1, 12),
            }
        ),
        st.just({"op": "dance"}),
        st.just({"op": "set_price", "product": "coffee"}),  # no price
    )
    return st.lists(one, max_size=8)


def morning(scenario: Scenario, days_before: int) -> Market:
    """A market of two merchants on the morning of day days_before + 1, after days in which
    `a` ordered and sold on credit (so receivables fall due)."""
    market = Market(scenario, [["a", "b"]], days=scenario.days)
    market.reset([7])
    for _ in range(days_before):
        market.advance(decisions={0: [{"op": "order", "product": scenario.product_ids[0], "quantity": 20}]})
    return market


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations(RETAIL), st.integers(0, 9))
def test_the_market_refuses_at_the_close_exactly_what_it_was_said_it_would(
    given_operations: list[Any], days_before: int
) -> None:
    market = morning(RETAIL, days_before)
    observation = market.observations(market.view(), [0])[0]
    judged = judge_day(OperationRules(RETAIL), observation, given_operations)
    market.advance(decisions={0: {"operations": given_operations}})
    log = market.logs[0].build()
    (record,) = log.records(log.rows_of("a")[-1:])  # a's record of the day
    assert record.day == days_before + 1
    # repr: an operation with a NaN is equal to itself only as text
    said = {r.index: repr((r.code, r.reason, r.operation)) for r in judged.rejections if r is not None}
    done = {r.index: repr((r.code, r.reason, r.operation)) for r in record.rejections}
    assert said == done
    assert len(record.operations) == len(given_operations) - len(said)


def test_cash_left_counts_the_accepted_spending_and_the_receivables_collected() -> None:
    """Cash 100, receivables due 30, unit cost 2: an order of 40 (80) is accepted, a second of
    20 (40) finds 20 and is refused, collect brings in 30 (cash 50), an order of 20 (40) is then
    accepted and advertising 10 too: 0 left, nothing due."""
    scenario = Scenario.model_validate(
        {
            "name": "shop",
            "products": [{"id": "tea", "unit_cost": 2.0, "reference_price": 4.0, "base_demand": 10}],
            "finance": {"initial_cash": 100},
            "demand": {"mode": "stochastic"},
        }
    )
    market = Market(scenario, [["a"]])
    market.reset([1])
    observation = market.observations(market.view(), [0])[0]
    observation.receivables_due = 30.0  # as on a day that credit sales fall due
    ops = [
        {"op": "order", "product": "tea", "quantity": 40},
        {"op": "order", "product": "tea", "quantity": 20},
        {"op": "collect"},
        {"op": "order", "product": "tea", "quantity": 20},
        {"op": "advertise", "amount": 10},
        {"op": "order", "product": "tea", "quantity": 2.5},
    ]
    judged = judge_day(OperationRules(scenario), observation, ops)
    refused = [(k, r.code.value) for k, r in enumerate(judged.rejections) if r is not None]
    assert refused == [(1, "order_over_cash"), (5, "fractional_quantity")]
    assert judged.rejections[1] is not None
    assert judged.rejections[1].reason == "order costs 40.00, more than cash 20.00"
    assert (judged.cash, judged.due) == pytest.approx((0.0, 0.0))
