"""Macro trends: events of shape `trend`, a slow drift of demand or unit cost that then stays."""

from __future__ import annotations

import pytest

from market.engine import Market
from market.scenario import Event, Scenario, event_factor, event_multiplier, load_scenario

GAME = load_scenario("logit_game")  # expected demand without stock limits: sales are demand x share


def downturn(**changes) -> Event:
    return Event(
        **{
            "name": "downturn",
            "kind": "demand",
            "start_day": 11,
            "end_day": 21,
            "multiplier": 0.5,
            "shape": "trend",
            **changes,
        }
    )


@pytest.mark.parametrize(
    ("day", "factor"), [(1, 1.0), (10, 1.0), (11, 1.0), (16, 0.75), (20, 0.55), (21, 0.5), (90, 0.5)]
)
def test_a_trend_drifts_in_a_straight_line_and_stays(day, factor):
    assert event_factor(downturn(), day) == pytest.approx(factor)


def test_a_trend_of_one_day_is_a_step_that_stays():
    assert [event_factor(downturn(end_day=11), d) for d in (10, 11, 30)] == [1.0, 0.5, 0.5]


def test_a_step_is_over_after_its_end_day():
    step = downturn(shape="step")
    assert [event_factor(step, d) for d in (10, 11, 21, 22)] == [1.0, 0.5, 0.5, 1.0]


def test_trends_and_steps_multiply():
    events = [downturn(), downturn(name="fair", shape="step", start_day=16, end_day=16, multiplier=2.0)]
    assert event_multiplier(events, "demand", "good", 16) == pytest.approx(1.5)
    assert event_multiplier(events, "cost", "good", 16) == 1.0


def test_the_market_sells_along_the_trend_and_merchants_are_told_of_it_until_the_end():
    scenario = GAME.model_copy(
        update={"events": (downturn(), downturn(name="dearer", kind="cost", multiplier=1.2))}
    )
    market = Market(scenario, [["a"]], days=25)
    market.reset([1])
    costs, told = [], []
    for _ in range(25):
        view = market.view()
        costs.append(float(view.unit_cost[0, 0]))
        told.append([e.name for e in view.events])
        market.advance(decisions={0: []})
    sold = market.logs[0].build().product_values("units_sold")[:, 0]
    assert sold[15] / sold[0] == pytest.approx(0.75)  # day 16, prices unchanged
    assert sold[24] / sold[0] == pytest.approx(0.5)
    assert costs[15] == pytest.approx(GAME.products[0].unit_cost * 1.1)
    assert told[0] == [] and told[10] == told[24] == ["downturn", "dearer"]


def test_a_scenario_without_trends_keeps_its_identity():
    seasonal = load_scenario("seasonal")
    assert seasonal.events and '"shape"' not in seasonal.identity()
    trending = seasonal.model_copy(update={"events": (*seasonal.events, downturn(product=None))})
    assert '"shape":"trend"' in trending.identity()


def test_a_trend_is_read_from_a_scenario_file():
    scenario = Scenario.model_validate(
        {
            **GAME.model_dump(),
            "events": [
                {
                    "name": "inflation",
                    "kind": "cost",
                    "start_day": 1,
                    "end_day": 30,
                    "multiplier": 1.3,
                    "shape": "trend",
                }
            ],
        }
    )
    assert scenario.events[0].shape == "trend"
