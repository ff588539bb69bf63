"""The collusion measures of matches played through the real market: merchants holding the
Nash prices of the calvano market score 0, holding the monopoly prices 1, seat by seat when
the seats differ; on Calvano's markets (calvano, logit_game), where a day's profit is the price
game's, profit gain is what the merchants' own profits give, as it was before it was read from
the game; the tournament's settings reach the match; a market whose customers ignore prices
plays and measures nothing."""

from __future__ import annotations

import pytest

from market.daylog import DayLog
from market.equilibrium import by_seat, equilibria
from market.scenario import Event, Scenario, load_scenario
from results.records import FinishedMatch, MarketScores, PriceWindow
from results.scoring.collusion import demand_scale
from results.settings import CollusionSettings
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
    return play_kinds(scenario, [("fixed_price", {"price": price}) for price in prices], collusion=collusion)


def play_kinds(
    scenario: Scenario,
    kinds: list[tuple[str, dict]],
    seed: int = 1,
    collusion: CollusionSettings = CollusionSettings(),
) -> FinishedMatch:
    """A match of rule merchants, seat k of kind kinds[k] with its parameters."""
    entries = {
        f"s{k}": ContestantEntry(name=f"s{k}", kind=kind, params=params)
        for k, (kind, params) in enumerate(kinds)
    }
    spec = MatchSpec(key="k", index=0, scenario=scenario.name, seed=seed, days=DAYS, seats=tuple(entries))
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


CALVANO_WEEK = CALVANO.model_copy(
    update={
        "name": "calvano_week",
        "demand": CALVANO.demand.model_copy(update={"weekday_factors": (1.6, 0.7, 1.0, 1.2, 0.8, 1.0, 0.7)}),
        "events": (Event(name="fair", kind="demand", start_day=9, end_day=10, multiplier=2.5),),
    }
)
MOVING = [  # prices that move: random draws, answers to them, undercuts and the best response
    [("random", {"min_markup": 0.3, "max_markup": 1.2}), ("tit_for_tat", {})],
    [("undercut", {}), ("best_response", {})],
    [("random", {"min_markup": 0.2, "max_markup": 1.5}), ("undercut", {}), ("tit_for_tat", {})],
]


@pytest.mark.parametrize("kinds", MOVING)
@pytest.mark.parametrize("scenario", [CALVANO, load_scenario("logit_game"), CALVANO_WEEK])
def test_on_calvanos_markets_profit_gain_is_what_the_merchants_own_profits_give(scenario, kinds):
    """The realised Delta, worked out here from the day log: each merchant's profit over its
    days in the window (the change in its net worth, plus the fixed costs it paid: none here)
    against the sums of its Nash and monopoly profits, each day's at that day's demand. It
    is the figure every stored match of these markets had, and the replication packs read."""
    played = play_kinds(scenario, kinds, seed=len(kinds))
    log = DayLog.of(played.days_played)
    first = CollusionSettings().first_measured_day(DAYS)
    found = by_seat(scenario, len(kinds))
    scale = demand_scale(scenario, DAYS)[:, 0]
    window = range(first - 1, DAYS)  # day - 1 of the window's days
    earned, nash, monopoly = [], [], []
    for k, merchant in enumerate(played.metrics):
        worth = {r.day: r.net_worth for r in log if r.merchant == merchant}
        paid = sum(r.fixed for r in log if r.merchant == merchant and r.day >= first)
        earned.append(worth[DAYS] - worth[first - 1] + paid)
        nash.append(sum(found.nash_profit[k, 0] * scale[d] for d in window))
        monopoly.append(sum(found.monopoly_profit[k, 0] * scale[d] for d in window))
        assert played.metrics[merchant]["profit_gain"] == pytest.approx(
            (earned[k] - nash[k]) / (monopoly[k] - nash[k]), abs=1e-9
        )
    assert played.market.metrics["market_profit_gain"] == pytest.approx(
        (sum(earned) - sum(nash)) / (sum(monopoly) - sum(nash)), abs=1e-9
    )
    posted = {r.prices[scenario.product_ids[0]] for r in log if r.day >= first}
    assert len(posted) > 1  # the seats' prices differ: the comparison is not of one point
    assert played.notes == []


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
