"""Scripted competitors (market.competitors): their prices by rule, the customers they take,
what the merchants see of them, the price game with them, and their record."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from market.engine import Market
from market.equilibrium import EquilibriumError, by_seat
from market.scenario import Scenario, load_scenario

GAME = load_scenario("logit_game")  # expected demand, no stock limits, utility from price alone


def with_competitors(scenario: Scenario, *competitors: dict, **changes) -> Scenario:
    data = scenario.model_dump()
    data.update(changes)
    data["competitors"] = list(competitors)
    return Scenario.model_validate(data)


def play(scenario: Scenario, prices_by_day: list[list[float]], days: int | None = None) -> Market:
    """One match of len(prices_by_day[0]) merchants, each posting its price of the day."""
    merchants = len(prices_by_day[0])
    market = Market(scenario, [[f"m{k}" for k in range(merchants)]], days=days or len(prices_by_day))
    market.reset([7])
    product = scenario.products[0].id
    for prices in prices_by_day:
        market.advance(
            decisions={
                k: {"operations": [{"op": "set_price", "product": product, "price": price}]}
                for k, price in enumerate(prices)
            }
        )
    return market


def test_a_fixed_competitor_takes_its_logit_share_of_customers():
    """A merchant alone at price 2.2 against a shop at 0.9 * reference (1.8), quality and
    reputation not valued: shares exp(u) / (exp(-4) + exp(u_m) + exp(u_c)), u = -4 p / 2."""
    scenario = with_competitors(GAME, {"name": "shop", "price_ratio": 0.9})
    log = play(scenario, [[2.2]]).logs[0].build()
    u_m, u_c = -4 * 2.2 / 2, -4 * 1.8 / 2
    total = math.exp(-4) + math.exp(u_m) + math.exp(u_c)
    assert log.product_values("units_sold")[0, 0] == pytest.approx(100 * math.exp(u_m) / total)
    assert log.competitors.names == ("shop",)
    assert log.competitors.prices[0, 0, 0] == pytest.approx(1.8)
    assert log.competitors.units_sold[0, 0, 0] == pytest.approx(100 * math.exp(u_c) / total)


def test_customers_a_sold_out_merchant_turns_away_go_to_the_competitor_or_nowhere():
    """Expected demand, stock-limited: 100 customers choose among the merchant (price 1.6,
    5 units), a shop at 2.0 and no purchase; the merchant's takers beyond its 5 units choose
    again between the shop and no purchase in the same proportions as before."""
    scenario = with_competitors(
        GAME,
        {"name": "shop", "price_ratio": 1.0},
        demand={"mode": "expected", "stock_limited": True},
        products=[{**GAME.products[0].model_dump(), "initial_stock": 5.0}],
    )
    log = play(scenario, [[1.6]]).logs[0].build()
    e_m, e_c, e_0 = math.exp(-3.2), math.exp(-4.0), math.exp(-4.0)
    total = e_m + e_c + e_0
    overflow = 100 * e_m / total - 5
    shop = 100 * e_c / total + overflow * e_c / (e_c + e_0)
    assert log.product_values("units_sold")[0, 0] == pytest.approx(5)
    assert log.product_values("lost_sales")[0, 0] == pytest.approx(overflow)
    assert log.competitors.units_sold[0, 0, 0] == pytest.approx(shop)


def test_the_fixed_rule_with_a_sudden_cut():
    scenario = with_competitors(
        GAME,
        {"name": "shop", "price_ratio": 1.1, "cuts": [{"start_day": 3, "end_day": 4, "multiplier": 0.5}]},
    )
    log = play(scenario, [[2.0]] * 6).logs[0].build()
    assert log.competitors.prices[:, 0, 0].tolist() == pytest.approx([2.2, 2.2, 1.1, 1.1, 2.2, 2.2])


def test_the_undercut_rule_follows_the_cheapest_merchant_that_still_sells_down_to_its_floor():
    """Each morning: 0.9 times the lowest price posted the day before, never below 1.2 times
    the unit cost (1.0); day 1 reads the start prices (the reference price, 2.0)."""
    scenario = with_competitors(
        GAME, {"name": "cutter", "rule": "undercut", "undercut": 0.1, "floor_ratio": 1.2}
    )
    log = play(scenario, [[3.0, 2.5], [1.5, 2.5], [1.0, 2.5]]).logs[0].build()
    assert log.competitors.prices[:, 0, 0].tolist() == pytest.approx([1.8, 2.25, 1.35])
    market = play(scenario, [[3.0, 2.5], [1.5, 2.5], [1.0, 2.5]], days=4)
    assert market.competitor_prices[0, 0, 0] == pytest.approx(1.2)  # 0.9 * 1.0 is below the floor


def test_the_undercut_rule_ignores_bankrupt_merchants():
    scenario = with_competitors(GAME, {"name": "cutter", "rule": "undercut", "undercut": 0.5})
    market = play(scenario, [[3.0, 2.5]], days=3)
    market.closed[1] = True
    market.competitor_prices = market.competitor_prices_on(2)
    assert market.competitor_prices[0, 0, 0] == pytest.approx(1.5)
    market.closed[0] = True  # nobody left to undercut: its standing price
    assert market.competitor_prices_on(2)[0, 0, 0] == pytest.approx(2.0)


def test_merchants_see_the_competitors_prices_of_today_unless_the_scenario_hides_them():
    scenario = with_competitors(
        load_scenario("multi_product"), {"name": "shop", "price_ratio": 0.5, "products": ["grinder"]}
    )
    market = Market(scenario, [["a", "b"]])
    market.reset([1])
    seen = market.observations(market.view(), [0])[0].competitors
    reference = next(p.reference_price for p in scenario.products if p.id == "grinder")
    assert [(c.name, c.prices, c.reputation) for c in seen] == [("shop", {"grinder": 0.5 * reference}, 0.6)]
    hidden = with_competitors(
        scenario, *[c.model_dump() for c in scenario.competitors], visibility={"rival_prices": False}
    )
    market = Market(hidden, [["a", "b"]])
    market.reset([1])
    assert market.observations(market.view(), [0])[0].competitors[0].prices is None


def test_a_competitor_counts_as_the_cheapest_rival():
    scenario = with_competitors(GAME, {"name": "shop", "price_ratio": 0.7})
    market = Market(scenario, [["a", "b"], ["c", "d"]])
    market.reset([1, 2])
    assert market.view().board.cheapest_rival[:, 0].tolist() == pytest.approx([1.4] * 4)
    alone = Market(scenario, [["a"]])
    alone.reset([1])
    assert alone.view().board.cheapest_rival[0, 0] == pytest.approx(1.4)


def test_the_price_game_with_a_fixed_competitor_holds_in_the_market():
    """The benchmarks market.equilibrium finds with a shop at 1.6 are what the market itself
    pays: at Nash no seat earns more by posting another price of a grid, and no common price
    earns the two more than the joint-profit price (profits read from a day of the market)."""
    scenario = with_competitors(GAME, {"name": "shop", "price_ratio": 0.8})
    found = by_seat(scenario, 2)
    nash, monopoly = found.nash_price[:, 0].tolist(), found.monopoly_price[:, 0].tolist()

    def profits(prices: list[float]) -> np.ndarray:
        log = play(scenario, [prices]).logs[0].build()
        return log.scalar("revenue") - log.scalar("purchases")

    at_nash = profits(nash)[0]
    assert at_nash == pytest.approx(found.nash_profit[0, 0])
    for price in np.linspace(1.0, 3.0, 41).tolist():
        assert profits([price, nash[1]])[0] <= at_nash + 1e-9
    joint = profits(monopoly).sum()
    for price in np.linspace(1.0, 3.0, 41).tolist():
        assert profits([price, price]).sum() <= joint + 1e-9
    assert monopoly[0] > nash[0]
    without = by_seat(GAME, 2)
    assert nash[0] < without.nash_price[0, 0]  # a cheap shop nearby pushes the prices down


def test_a_competitor_that_reacts_leaves_no_fixed_price_game():
    scenario = with_competitors(GAME, {"name": "cutter", "rule": "undercut"})
    with pytest.raises(EquilibriumError, match="cutter"):
        by_seat(scenario, 2)


@pytest.mark.parametrize(
    ("competitor", "problem"),
    [
        ({"name": "shop", "products": ["nothing"]}, "unknown product 'nothing'"),
        ({"name": "shop", "cuts": [{"start_day": 4, "end_day": 2, "multiplier": 0.5}]}, "end_day"),
        ({"name": "shop", "price_ratio": 0}, "price_ratio"),
        ({"name": "shop", "rule": "dump"}, "rule"),
    ],
)
def test_a_competitor_that_is_wrong_is_refused(competitor, problem):
    with pytest.raises(ValidationError, match=problem):
        with_competitors(GAME, competitor)


def test_two_competitors_need_two_names():
    with pytest.raises(ValidationError, match="unique"):
        with_competitors(GAME, {"name": "shop"}, {"name": "shop"})


def test_a_market_without_competitors_records_none():
    assert play(GAME, [[2.0]]).logs[0].build().competitors is None
