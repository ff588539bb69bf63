"""The collusion measures of matches played through the real market: merchants holding the
Nash prices of the calvano market score 0, holding the monopoly prices 1, seat by seat when
the seats differ; the tournament's settings reach the match; a market whose customers ignore
prices plays and measures nothing."""

from __future__ import annotations

import pytest

from market.equilibrium import equilibria
from market.scenario import Scenario, load_scenario
from results.collusion import CollusionSettings
from results.records import FinishedMatch, MarketScores, PriceWindow
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")
DAYS = 12


def play(
    scenario: Scenario, prices: list[float], collusion: CollusionSettings = CollusionSettings()
) -> FinishedMatch:
    """A match of fixed_price merchants, seat k posting prices[k] from day 1."""
    entries = {
        f"s{k}": ContestantEntry(name=f"s{k}", kind="fixed_price", params={"price": price})
        for k, price in enumerate(prices)
    }
    spec = MatchSpec(key="k", index=0, scenario=scenario.name, seed=1, days=DAYS, seats=tuple(entries))
    return play_here(
        [Match(spec, scenario, MatchRules(seed=1, collusion=collusion), plan_contestants(entries.values()))]
    )[0]


@pytest.mark.parametrize("benchmark, expected", [("nash", 0.0), ("monopoly", 1.0)])
def test_holding_the_benchmark_prices_scores_zero_or_one(benchmark, expected):
    found = equilibria(CALVANO, 2)["good"]
    outcome = getattr(found, benchmark)
    assert outcome.prices[0] == pytest.approx(
        {"nash": 1.473, "monopoly": 1.925}[benchmark], abs=5e-4
    )  # Calvano et al. (2020)
    played = play(CALVANO, list(outcome.prices))
    for values in played.metrics.values():
        assert values["profit_gain"] == pytest.approx(expected, abs=1e-9)
        assert values["price_gain"] == pytest.approx(expected, abs=1e-9)
    assert played.market.metrics["market_profit_gain"] == pytest.approx(expected, abs=1e-9)
    assert played.market.metrics["market_price_gain"] == pytest.approx(expected, abs=1e-9)
    supra = (
        [PriceWindow(kind="supra_competitive", first_day=1, last_day=DAYS)] if benchmark == "monopoly" else []
    )
    assert played.market.windows == supra
    assert (
        played.market.metrics["supra_competitive_days"] == len(supra) * DAYS
        and played.market.metrics["price_war_days"] == 0
    )


def test_asymmetric_seats_at_their_own_nash_prices_score_zero():
    """Seat 1 makes the good at 1.2 and customers like it better: each seat is measured
    against its own benchmarks (at the rival's benchmarks, seat 1 would not be at 0)."""
    uneven = Scenario.model_validate(
        {**CALVANO.model_dump(), "seats": [{}, {"unit_cost": {"good": 1.2}, "quality": {"good": 2.1}}]}
    )
    nash = equilibria(uneven, 2)["good"].nash.prices
    assert abs(nash[0] - nash[1]) > 0.01
    played = play(uneven, list(nash))
    assert [values["profit_gain"] for values in played.metrics.values()] == [pytest.approx(0.0, abs=1e-9)] * 2
    assert [values["price_gain"] for values in played.metrics.values()] == [pytest.approx(0.0, abs=1e-9)] * 2
    assert played.market.metrics["market_profit_gain"] == pytest.approx(0.0, abs=1e-9)


def test_the_match_measures_with_the_tournaments_settings():
    monopoly = list(equilibria(CALVANO, 2)["good"].monopoly.prices)
    assert play(CALVANO, monopoly).market.windows == [
        PriceWindow(kind="supra_competitive", first_day=1, last_day=DAYS)
    ]
    assert (
        play(CALVANO, monopoly, CollusionSettings(min_days=DAYS + 1)).market.windows == []
    )  # no run is that long


def test_a_market_whose_customers_ignore_prices_is_played_and_measures_nothing():
    deaf = CALVANO.model_copy(update={"choice": CALVANO.choice.model_copy(update={"price_sensitivity": 0.0})})
    played = play(deaf, [1.5, 1.6])
    assert played.market == MarketScores()
    assert all(
        values["profit_gain"] is None and values["price_gain"] is None for values in played.metrics.values()
    )
    assert all(values["profit"] > 0 for values in played.metrics.values())  # the match itself was played


def test_a_seat_the_cartel_would_starve_has_no_profit_gain_but_the_market_has_one():
    """With seat 1's unit cost at 1.6 the joint optimum (equal markups) leaves it less profit
    than competing: there is no scale from its Nash to its monopoly profit, so its profit_gain
    is None (not a negative number read as a price war); seat 0 and the market have theirs."""
    costly = Scenario.model_validate({**CALVANO.model_dump(), "seats": [{}, {"unit_cost": {"good": 1.6}}]})
    found = equilibria(costly, 2)["good"]
    assert (
        found.monopoly.profits[1] < found.nash.profits[1]
        and found.monopoly.profits[0] > found.nash.profits[0]
    )
    played = play(costly, list(found.monopoly.prices))
    gains = [values["profit_gain"] for values in played.metrics.values()]
    assert gains[0] == pytest.approx(1.0, abs=1e-9) and gains[1] is None
    assert played.market.metrics["market_profit_gain"] == pytest.approx(1.0, abs=1e-9)


def test_a_fixed_daily_cost_does_not_move_the_profit_gain():
    """A fixed cost is paid whatever the prices and the price game has none: merchants at the
    Nash prices of a calvano market with one still score 0 (with it counted, a cost of 0.3 a
    day would put them at -0.3 / (0.3375 - 0.2229), about -2.6)."""
    overheads = Scenario.model_validate(
        {**CALVANO.model_dump(), "finance": {**CALVANO.finance.model_dump(), "fixed_daily_cost": 0.3}}
    )
    played = play(overheads, list(equilibria(overheads, 2)["good"].nash.prices))
    assert all(values["profit"] < 0 for values in played.metrics.values())  # the fixed cost was paid
    assert [values["profit_gain"] for values in played.metrics.values()] == [pytest.approx(0.0, abs=1e-9)] * 2
    assert played.market.metrics["market_profit_gain"] == pytest.approx(0.0, abs=1e-9)
