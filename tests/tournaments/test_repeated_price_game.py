"""The rule merchants of the repeated price game, played through the real market on the
exact logit games (market/scenarios/calvano.yaml, logit_game.yaml): best responses converge
to the Nash prices, tit for tat copies, grim triggers collude until someone cheats.

Expected prices come from market.equilibrium where the rule is defined by them (a grim
trigger's monopoly and Nash prices); profits, bounds and the days things happen on are
derived here by hand."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import pytest
from pydantic import Field

from contestants.base import Params
from contestants.baselines import FixedPrice, FixedPriceParams
from market.equilibrium import equilibria
from market.scenario import load_scenario
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")


def play(scenario, seats: list[tuple[str, dict]], days: int | None = None):
    """One match of `seats` (kind, params) in seat order, merchants named m0, m1, ...;
    its day records by merchant, in day order."""
    entries = {
        f"m{i}": ContestantEntry(name=f"m{i}", kind=kind, params=params)
        for i, (kind, params) in enumerate(seats)
    }
    spec = MatchSpec(
        key=f"game-{scenario.name}",
        index=0,
        scenario=scenario.name,
        seed=1,
        days=days or scenario.days,
        seats=tuple(entries),
    )
    played = play_here([Match(spec, scenario, MatchRules(seed=2), plan_contestants(entries.values()))])[0]
    assert played.faults == []
    return {name: [r for r in played.days_played if r.merchant == name] for name in entries}


def prices(records) -> list[float]:
    return [r.prices["good"] for r in records]


def calvano_profit(price: float, rivals: list[float]) -> float:
    """(p - c) q in Calvano et al.'s notation: q = exp((a - p)/mu) / (sum_j exp((a - p_j)/mu) + exp(a_0/mu)),
    a = 2, a_0 = 0, mu = 1/4, c = 1, one customer a day."""

    def weight(p: float) -> float:
        return math.exp((2.0 - p) / 0.25)

    return (price - 1.0) * weight(price) / (weight(price) + sum(weight(p) for p in rivals) + 1.0)


# ---- best response ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["calvano", "logit_game"])
@pytest.mark.parametrize("merchants", [2, 3])
def test_best_responses_converge_to_the_nash_prices_within_the_grid_resolution(name, merchants):
    """Iterated best responses p_{t+1} = BR(p_t) on a grid of step h: the grid's best price
    is one of the two grid points around the exact best response (profit is unimodal in one's
    own price), so it is off by less than h. The exact map is a contraction: by the implicit
    function theorem on the first-order condition b (p_i - c) (1 - s_i) = 1, with
    ds_i/dp_i = -b s_i (1 - s_i) and ds_i/dp_j = b s_i s_j, dBR_i/dp_j = s_i s_j / (1 - s_i),
    so in the sup norm its modulus is L = s_i (sum over rivals of s_j) / (1 - s_i), at the
    symmetric Nash point s (n - 1) s / (1 - s). The distance d_t to the Nash prices then
    obeys d_{t+1} <= L d_t + h, so it ends within h / (1 - L)."""
    scenario = load_scenario(name)
    product = scenario.products[0]
    grid_points, factor = 2000, 3.0
    params = {"grid_points": grid_points, "max_price_factor": factor}
    played = play(scenario, [("best_response", params)] * merchants)

    nash = np.array(equilibria(scenario, merchants)["good"].nash.prices)
    high = max(product.reference_price * factor, 2 * product.unit_cost)
    assert product.unit_cost < nash.min() and nash.max() < high  # the grid covers the Nash prices
    step = (high - product.unit_cost) / (grid_points - 1)
    utility = (
        -scenario.choice.price_sensitivity * nash / product.reference_price
        + scenario.choice.quality_weight * product.quality
    )
    share = np.exp(utility) / (np.exp(utility).sum() + math.exp(scenario.choice.no_purchase_utility))
    s = float(share[0])
    modulus = s * (merchants - 1) * s / (1 - s)
    assert modulus < 1
    bound = step / (1 - modulus)

    by_day = np.array([prices(records) for records in played.values()]).T  # [day, merchant]
    distance = np.abs(by_day - nash).max(axis=1)
    assert distance[0] > 10 * bound  # they start far from it
    assert (distance[-10:] <= bound).all(), (distance[-10:], bound)  # and end, and stay, within it


# ---- tit for tat -----------------------------------------------------------------------------


def test_tit_for_tat_copies_a_fixed_rivals_price_the_day_after():
    played = play(CALVANO, [("tit_for_tat", {}), ("fixed_price", {"price": 1.8})], days=6)
    assert prices(played["m1"]) == [1.8] * 6
    assert (
        prices(played["m0"]) == [CALVANO.products[0].start_price] + [1.8] * 5
    )  # day 1: the start price, 1.7


def test_tit_for_tat_copies_the_cheapest_rival_and_opens_at_its_opening_price():
    seats = [
        ("random", {"min_markup": 0.3, "max_markup": 1.2}),
        ("tit_for_tat", {"opening_price": 2.1}),
        ("fixed_price", {"price": 1.9}),
    ]
    played = play(CALVANO, seats, days=30)
    rivals = np.array([prices(played["m0"]), prices(played["m2"])])
    copied = prices(played["m1"])
    assert copied[0] == 2.1
    assert copied[1:] == rivals.min(axis=0)[:-1].tolist()  # yesterday's cheapest rival, day by day
    assert 0 < sum(rivals[0] < 1.9) < 30  # the cheapest was sometimes one, sometimes the other


# ---- grim trigger ----------------------------------------------------------------------------


class UndercutOnceParams(FixedPriceParams):
    undercut_day: int = Field(ge=1)
    undercut_price: float = Field(gt=0)


class UndercutOnce(FixedPrice):
    """A fixed price, except on day `undercut_day`, when it posts `undercut_price`."""

    kind: ClassVar[str] = "undercut_once_for_tests"
    params_model: ClassVar[type[Params]] = UndercutOnceParams

    @classmethod
    def rule(cls, team, view):
        price, wanted = super().rule(team, view)
        return np.where(view.day == team.column("undercut_day"), team.column("undercut_price"), price), wanted


UNDERCUT_ONCE = f"{__name__}:UndercutOnce"  # a kind of the tests' own, named by where it is


def test_two_grim_triggers_hold_the_monopoly_price_and_earn_the_monopoly_profit():
    played = play(CALVANO, [("grim_trigger", {})] * 2)
    monopoly = equilibria(CALVANO, 2)["good"].monopoly.prices[0]
    # by hand: the symmetric price that maximises the two merchants' joint profit
    fine = np.linspace(1.0, 3.0, 200_001)
    assert monopoly == pytest.approx(fine[np.argmax([calvano_profit(p, [p]) for p in fine])], abs=2e-5)
    for records in played.values():
        assert prices(records) == [monopoly] * CALVANO.days
        assert [r.cash_end - r.cash_start for r in records] == pytest.approx(
            [calvano_profit(monopoly, [monopoly])] * CALVANO.days, rel=1e-12
        )


@pytest.mark.parametrize("seats", [2, 3])
def test_grim_trigger_turns_to_nash_the_day_after_an_undercut_and_stays_there(seats):
    benchmarks = equilibria(CALVANO, seats)["good"]
    monopoly = benchmarks.monopoly.prices[0]
    cheat = {
        "price": monopoly,
        "undercut_day": 10,
        "undercut_price": monopoly * 0.95,
    }  # back to the monopoly price on day 11
    played = play(CALVANO, [(UNDERCUT_ONCE, cheat)] + [("grim_trigger", {})] * (seats - 1), days=30)
    assert prices(played["m0"]) == [monopoly] * 9 + [monopoly * 0.95] + [monopoly] * 20
    for grim in list(played)[1:]:
        assert prices(played[grim]) == [monopoly] * 10 + [benchmarks.nash.prices[0]] * 20


@pytest.mark.parametrize(("cut", "triggered"), [(0.005, False), (0.02, True)])
def test_grim_trigger_forgives_a_cut_within_its_tolerance(cut, triggered):
    monopoly = equilibria(CALVANO, 2)["good"].monopoly.prices[0]
    cheat = {"price": monopoly, "undercut_day": 3, "undercut_price": monopoly * (1 - cut)}
    played = play(CALVANO, [("grim_trigger", {"tolerance": 0.01}), (UNDERCUT_ONCE, cheat)], days=6)
    nash = equilibria(CALVANO, 2)["good"].nash.prices[0]
    assert prices(played["m0"]) == [monopoly] * 3 + [nash if triggered else monopoly] * 3
