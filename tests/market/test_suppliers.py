"""Suppliers: a product's listed suppliers besides its usual one, each with its own unit cost,
lead time and reliability (a share of its orders arrives late)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from market.engine import Market
from market.scenario import Scenario
from market.types import ArrayDecisions, RejectionCode

MILK = {
    "id": "milk",
    "unit_cost": 1.0,
    "reference_price": 2.0,
    "base_demand": 0,  # nobody buys: stock moves only by orders
    "lead_time": 1,
    "suppliers": [
        {"name": "farm", "unit_cost": 0.8, "lead_time": 3},
        {"name": "coop", "unit_cost": 1.1, "lead_time": 0, "reliability": 0.75, "late_days": 2},
    ],
}


def scenario(mode: str = "expected", **changes) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "dairy",
            "products": [{**MILK, **changes}],
            "demand": {"mode": mode},
            "finance": {"initial_cash": 1000},
        }
    )


def play(market_scenario: Scenario, orders_by_day: dict[int, list[dict]], days: int):
    market = Market(market_scenario, [["a"]], days=days)
    market.reset([2])
    for day in range(1, days + 1):
        market.advance(decisions={0: orders_by_day.get(day, [])})
    return market.logs[0].build()


def order(units: float, supplier: str | None = None) -> dict:
    return {
        "op": "order",
        "product": "milk",
        "quantity": units,
        **({"supplier": supplier} if supplier else {}),
    }


def test_a_listed_supplier_charges_its_cost_and_takes_its_lead_time():
    """10 units from the farm (0.8, three days) and 10 from the usual supplier (1.0, one day)
    on day 1: 18 paid, 10 arrive on day 2 and 10 on day 4; the farm's are worth 1.0 each in
    stock, so net worth gains 10 x 0.2 on day 1."""
    log = play(scenario(), {1: [order(10, "farm"), order(10)]}, 5)
    assert log.scalar("purchases").tolist() == pytest.approx([18.0, 0, 0, 0, 0])
    assert log.product_values("arrived")[:, 0].tolist() == pytest.approx([0, 10, 0, 10, 0])
    assert log.scalar("purchase_savings").tolist() == pytest.approx([2.0, 0, 0, 0, 0])
    assert log.scalar("net_worth")[0] == pytest.approx(1000 + 2.0)
    assert log[0].operations == [order(10.0, "farm"), order(10.0)]


def test_a_cost_event_changes_a_listed_suppliers_cost_too():
    dear = scenario().model_dump()
    dear["events"] = [{"name": "drought", "kind": "cost", "start_day": 1, "end_day": 1, "multiplier": 1.5}]
    log = play(Scenario.model_validate(dear), {1: [order(10, "farm")]}, 1)
    assert log.scalar("purchases")[0] == pytest.approx(10 * 0.8 * 1.5)
    assert log.scalar("purchase_savings")[0] == pytest.approx(10 * (1.5 - 1.2))


def test_an_unreliable_supplier_delivers_a_share_late_where_flows_are_expected():
    """The coop (no lead time, 75% on time): of 20 units ordered on day 2, 15 are in stock at
    once and 5, due that day, come two days later."""
    log = play(scenario(), {2: [order(20, "coop")]}, 5)
    assert log.product_values("inventory")[:, 0].tolist() == pytest.approx([0, 15, 15, 20, 20])
    assert log.product_values("late")[:, 0].tolist() == pytest.approx([0, 5, 0, 0, 0])
    assert log.product_values("arrived")[:, 0].tolist() == pytest.approx([0, 0, 0, 5, 0])


def test_where_units_are_whole_a_late_order_is_late_whole():
    never = scenario(
        "stochastic", suppliers=[{"name": "coop", "unit_cost": 1.0, "lead_time": 1, "reliability": 0.0}]
    )
    log = play(never, {1: [order(7, "coop")]}, 5)
    assert log.product_values("late")[:, 0].tolist() == [0, 7, 0, 0, 0]  # due day 2
    assert log.product_values("arrived")[:, 0].tolist() == [0, 0, 0, 7, 0]
    half = scenario(
        "stochastic", suppliers=[{"name": "coop", "unit_cost": 1.0, "lead_time": 1, "reliability": 0.5}]
    )
    log = play(half, {day: [order(3, "coop")] for day in range(1, 41)}, 44)
    late = log.product_values("late")[:, 0]
    assert set(late.tolist()) <= {0.0, 3.0}  # orders are late whole or not at all
    assert 0 < (late > 0).sum() < 40


def test_an_order_from_a_supplier_the_product_does_not_list_is_refused_alone():
    log = play(scenario(), {1: [order(5, "nobody"), order(5)]}, 1)
    (rejection,) = log[0].rejections
    assert rejection.code == RejectionCode.UNKNOWN_SUPPLIER and rejection.index == 0
    assert rejection.operation == order(5, "nobody")
    assert log[0].operations == [order(5.0)]


def test_rule_merchants_name_suppliers_by_number():
    market = Market(scenario(), [["a", "b"]], days=1)
    market.reset([1])
    decisions = ArrayDecisions(
        collect=np.zeros(2, bool),
        prices=np.full((2, 1), np.nan),
        orders=np.array([[4.0], [6.0]]),
        suppliers=np.array([[1], [0]]),
    )
    market.advance(decisions)
    log = market.logs[0].build()
    assert [r.operations for r in log] == [[order(4.0, "farm")], [order(6.0)]]
    assert log.scalar("purchases").tolist() == pytest.approx([3.2, 6.0])


def test_scale_multiplies_a_suppliers_cost():
    scaled = Scenario.model_validate({**scenario().model_dump(), "scale": 100})
    assert [x.unit_cost for x in scaled.products[0].suppliers] == pytest.approx([80.0, 110.0])


def test_supplier_names_are_unique_per_product():
    with pytest.raises(ValidationError, match="unique"):
        scenario(suppliers=[{"name": "farm", "unit_cost": 1.0}, {"name": "farm", "unit_cost": 2.0}])


def test_a_scenario_without_suppliers_keeps_its_identity():
    plain = scenario(suppliers=[])
    assert '"suppliers"' not in plain.identity() and '"suppliers"' in scenario().identity()
