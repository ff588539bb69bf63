"""The shipped scenario files, and what a scenario refuses."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from market.env import MarketEnv
from market.scenario import SHIPPED_SCENARIOS, Event, Scenario, event_multiplier, load_scenario
from market.types import EventNotice


def test_shipped_scenario_is_valid_and_playable(scenario):
    assert scenario.name and scenario.description
    env = MarketEnv(scenario, 2)
    observations, _ = env.reset(seed=0)
    assert {p.product for p in observations["m0"].products} == set(scenario.product_ids)
    if scenario.target_net_worth is not None:
        start = scenario.finance.initial_cash + sum(p.initial_stock * p.unit_cost for p in scenario.products)
        assert scenario.target_net_worth > start, (
            "a target below the starting net worth is met by doing nothing"
        )


def test_shipped_scenario_names_are_unique():
    names = [load_scenario(f).name for f in SHIPPED_SCENARIOS.glob("*.yaml")]
    assert len(names) == len(set(names)) and len(names) >= 1


BASE = {"name": "t", "products": [{"id": "w", "unit_cost": 1, "reference_price": 2, "base_demand": 10}]}


@pytest.mark.parametrize(
    "change",
    [
        {
            "products": [
                {"id": "w", "unit_cost": 1, "reference_price": 2, "base_demand": 10, "initial_stock": 2.5}
            ]
        },
        {"demand": {"mode": "stochastic", "stock_limited": False}},
        {
            "events": [
                {
                    "name": "e",
                    "kind": "demand",
                    "start_day": 1,
                    "end_day": 2,
                    "multiplier": 2,
                    "product": "nope",
                }
            ]
        },
        {"events": [{"name": "e", "kind": "demand", "start_day": 3, "end_day": 2, "multiplier": 2}]},
        {"products": BASE["products"] * 2},
        {"colour": "blue"},
        {"reputation": {"minimum": 0.8, "maximum": 0.2}},
        {"demand": {"weekday_factors": [1, 1, 1, -1, 1, 1, 1]}},
    ],
    ids=[
        "fractional-stock-stochastic",
        "unlimited-stochastic",
        "event-unknown-product",
        "event-backwards",
        "duplicate-product",
        "unknown-field",
        "reputation-range",
        "negative-weekday",
    ],
)
def test_scenario_refuses(change):
    with pytest.raises(ValidationError):
        Scenario.model_validate(BASE | change)


def test_fractional_stock_is_fine_in_expected_mode():
    product = {"id": "w", "unit_cost": 1, "reference_price": 2, "base_demand": 10, "initial_stock": 2.5}
    Scenario.model_validate(BASE | {"products": [product], "demand": {"mode": "expected"}})


def test_event_multiplier_multiplies_the_events_running_that_day():
    events = [
        Event(name="rush", kind="demand", start_day=2, end_day=4, multiplier=1.5),
        Event(name="tea fad ends", kind="demand", product="tea", start_day=4, end_day=6, multiplier=0.5),
        Event(name="dear supply", kind="cost", start_day=1, end_day=9, multiplier=3.0),
    ]
    assert [event_multiplier(events, "demand", "tea", day) for day in range(1, 8)] == [
        1.0,
        1.5,
        1.5,
        0.75,
        0.5,
        0.5,
        1.0,
    ]
    assert event_multiplier(events, "demand", "cup", 4) == 1.5  # the tea event is not the cup's
    assert (
        event_multiplier(events, "cost", "cup", 9) == 3.0
        and event_multiplier(events, "cost", "cup", 10) == 1.0
    )
    notices = [
        EventNotice(e.name, e.kind, e.product, e.start_day, e.end_day, e.multiplier) for e in events
    ]  # what a merchant is told
    assert event_multiplier(notices, "demand", "tea", 4) == 0.75
