"""The customer-satisfaction index: stock-outs, returns and late deliveries lower it, and it
shifts demand."""

from __future__ import annotations

import math

import pytest

from market.engine import Market
from market.scenario import Scenario

SHOP = {
    "name": "stars",
    "products": [
        {"id": "tea", "unit_cost": 1.0, "reference_price": 2.0, "base_demand": 100, "initial_stock": 10}
    ],
    "choice": {"price_sensitivity": 4.0, "reputation_weight": 0.0, "no_purchase_utility": -4.0},
    "demand": {"mode": "expected"},
    "finance": {"initial_cash": 1000},
    "satisfaction": {"initial": 4.0, "memory": 0.8, "stockout_weight": 4.0, "demand_weight": 0.5},
}


def test_a_stock_out_lowers_satisfaction_and_satisfaction_moves_demand():
    """Day 1: customers want 100 * s(2) of the merchant, 10 are served: satisfaction moves to
    0.8 * 4 + 0.2 * clip(5 - 4 * lost share). Day 2, with 1000 units in stock: nobody is
    turned away, and utility gains 0.5 * (satisfaction - 4)."""
    market = Market(Scenario.model_validate(SHOP), [["a"]], days=2)
    market.reset([1])
    seen = [market.observations(market.view(), [0])[0].satisfaction]
    market.advance(decisions={0: [{"op": "set_price", "product": "tea", "price": 2.0}]})
    seen.append(market.observations(market.view(), [0])[0].satisfaction)
    market.advance(decisions={0: [{"op": "order", "product": "tea", "quantity": 1000}]})
    log = market.logs[0].build()
    wanted = 100 * math.exp(-4) / (math.exp(-4) + math.exp(-4))
    lost_share = (wanted - 10) / wanted
    after_one = 0.8 * 4.0 + 0.2 * min(max(5 - 4 * lost_share, 1), 5)
    assert seen == [4.0, pytest.approx(after_one)]
    assert log.scalar("satisfaction")[0] == pytest.approx(after_one)
    bonus = 0.5 * (after_one - 4.0)
    own = math.exp(-4 + bonus)
    assert log.product_values("units_sold")[1, 0] == pytest.approx(100 * own / (math.exp(-4) + own))
    assert log.scalar("satisfaction")[1] == pytest.approx(0.8 * after_one + 0.2 * 5.0)


def test_returns_and_late_deliveries_lower_it():
    data = {
        **SHOP,
        "products": [
            {
                **SHOP["products"][0],
                "initial_stock": 1000,
                "suppliers": [{"name": "slow", "unit_cost": 1.0, "lead_time": 0, "reliability": 0.5}],
            }
        ],
        "segments": [{"name": "all", "share": 1.0, "return_rate": 0.1}],
        "satisfaction": {"initial": 4.0, "memory": 0.5, "return_weight": 3.0, "late_weight": 2.0},
    }
    market = Market(Scenario.model_validate(data), [["a"]], days=1)
    market.reset([1])
    market.advance(decisions={0: [{"op": "order", "product": "tea", "quantity": 20, "supplier": "slow"}]})
    (record,) = market.logs[0].build()
    # a tenth returned, half of the goods due today late
    assert record.satisfaction == pytest.approx(0.5 * 4.0 + 0.5 * (5 - 3.0 * 0.1 - 2.0 * 0.5))


def test_a_scenario_without_it_records_none():
    data = {**SHOP, "satisfaction": None}
    market = Market(Scenario.model_validate(data), [["a"]], days=1)
    market.reset([1])
    assert market.observations(market.view(), [0])[0].satisfaction is None
    market.advance(decisions={0: []})
    assert market.logs[0].build().scalar("satisfaction").tolist() == [0.0]
    assert '"satisfaction"' not in Scenario.model_validate(data).identity()
