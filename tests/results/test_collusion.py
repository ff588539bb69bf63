"""The collusion measures on hand-built day logs of the calvano market, with the expected values
worked out by hand from its Nash and monopoly figures and its profit function; those figures
computed here on their own (best responses iterated on the logit profit, and the joint profit
maximised, with scipy's scalar optimiser: not market.equilibrium's first-order conditions) and
checked against the paper's; the flagged windows on constructed price paths; the settings;
what is stored, rescored and averaged on the leaderboard. The profits a log books are not what
profit_gain reads: it reads the game's profit at the prices posted, so the logs here book
profits that are not the game's, and the expected values ignore them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import optimize
from sqlmodel import Session, update

from market.equilibrium import SeatBenchmarks
from market.scenario import Event, Scenario, load_scenario
from market.types import DayRecord
from results.leaderboard import leaderboard
from results.recording import save_match
from results.records import FinishedMatch, MarketScores, MerchantResult, PlayedScenarios, PriceWindow
from results.rescoring import rescore
from results.scoring.collusion import gain, runs, seat_benchmarks
from results.scoring.metrics import compute
from results.settings import CollusionSettings
from results.storage.schema import MetricRow
from results.storage.store import match_detail, metrics, start_tournament

CALVANO = load_scenario("calvano")


def _calvano_profit(
    own: float, other: float, cost: float = 1.0, quality: float = 2.0, rival_quality: float = 2.0
) -> float:
    """Calvano et al.'s per-period profit of a firm at price `own` against `other`: a_0 = 0,
    mu = 0.25, q_i = exp((a_i - p_i)/mu) / (sum_j exp((a_j - p_j)/mu) + 1), profit (p_i - c_i) q_i;
    the baseline has a_i = 2 (`quality`) and c_i = 1. `other` infinite: a firm alone."""
    mine, theirs = math.exp((quality - own) / 0.25), math.exp((rival_quality - other) / 0.25)
    return (own - cost) * mine / (mine + theirs + 1.0)


def _independent_benchmarks() -> tuple[float, float, float, float]:
    """(Nash price, monopoly price, Nash profit, monopoly profit) of two calvano firms."""
    price = 1.5
    for _ in range(200):  # best responses to the rival's price, to the fixed point
        price = optimize.minimize_scalar(
            lambda p, rival=price: -_calvano_profit(p, rival),
            bounds=(1.0, 3.0),
            method="bounded",
            options={"xatol": 1e-12},
        ).x
    joint = optimize.minimize_scalar(
        lambda p: -_calvano_profit(p, p), bounds=(1.0, 3.0), method="bounded", options={"xatol": 1e-12}
    ).x
    return price, joint, _calvano_profit(price, price), _calvano_profit(joint, joint)


P_N, P_M, PI_N, PI_M = _independent_benchmarks()


def test_the_independent_figures_are_the_papers():
    """Calvano et al. (2020), section II: p_N = 1.473, p_M = 1.925; profits 0.2229 and 0.3375."""
    assert (pytest.approx(1.473, abs=5e-4), pytest.approx(1.925, abs=5e-4)) == (P_N, P_M)
    assert (pytest.approx(0.2229, abs=5e-5), pytest.approx(0.3375, abs=5e-5)) == (PI_N, PI_M)


@pytest.fixture(scope="module")
def trading(day_record):
    """`trading(merchant, prices, profits)`: consecutive days from day 1 of a calvano merchant
    posting `prices` and earning `profits` (its net worth grows by each day's profit from
    1000: one unit sold at cost 1 for profit + 1)."""

    def days(merchant: str, prices: list[float], profits: list[float] | None = None) -> list[DayRecord]:
        profits = profits or [0.0] * len(prices)
        worth = 1000.0 + np.cumsum(profits)
        return [
            day_record(
                merchant=merchant,
                day=t + 1,
                products=["good"],
                prices={"good": price},
                units_sold={"good": 1.0},
                unit_cost={"good": 1.0},
                revenue=profit + 1.0,
                cash_start=1000.0,
                cash_end=1000.0,
                net_worth=float(worth[t]),
            )
            for t, (price, profit) in enumerate(zip(prices, profits))
        ]

    return days


def _together(*merchants: list[DayRecord]) -> list[DayRecord]:
    """The merchants' days in play order: day by day, seat by seat."""
    return sorted((r for days in merchants for r in days), key=lambda r: r.day)


def test_profit_and_price_gain_over_the_last_half_of_the_days(trading):
    """The game's profits at the prices posted on days 3 and 4; the profits booked (5.0, -3.0,
    ...) are not the game's and do not count."""
    a = trading("a", [1.5, 1.5, 1.70, 1.70], [5.0, -3.0, 0.30, 0.26])
    b = trading("b", [1.6, 1.6, 1.60, 1.64], [0.0, 0.0, 0.20, 0.24])
    scores = compute(_together(a, b), scenario=CALVANO)

    gap = PI_M - PI_N
    earned_a = (_calvano_profit(1.70, 1.60) + _calvano_profit(1.70, 1.64)) / 2
    earned_b = (_calvano_profit(1.60, 1.70) + _calvano_profit(1.64, 1.70)) / 2
    assert scores.merchants["a"]["profit_gain"] == pytest.approx((earned_a - PI_N) / gap, abs=1e-7)
    assert scores.merchants["b"]["profit_gain"] == pytest.approx((earned_b - PI_N) / gap, abs=1e-7)
    assert scores.merchants["a"]["price_gain"] == pytest.approx((1.70 - P_N) / (P_M - P_N), abs=1e-7)
    assert scores.merchants["b"]["price_gain"] == pytest.approx((1.62 - P_N) / (P_M - P_N), abs=1e-7)
    assert scores.market.metrics["market_profit_gain"] == pytest.approx(
        (earned_a + earned_b - 2 * PI_N) / (2 * gap), abs=1e-7
    )
    assert scores.market.metrics["market_price_gain"] == pytest.approx(
        (1.66 - P_N) / (P_M - P_N), abs=1e-7
    )  # market prices 1.65, 1.67
    assert list(scores.market.metrics) == [
        "market_profit_gain",
        "market_price_gain",
        "supra_competitive_days",
        "price_war_days",
    ]  # no intervention: none of its measures
    assert scores.notes == []  # everything applies


@pytest.mark.parametrize("window, days", [(1.0, [0, 1, 2, 3]), (0.25, [3]), (0.5, [2, 3])])
def test_the_window_setting_chooses_the_days(trading, window, days):
    prices = [1.5, 1.6, 1.7, 1.8]
    a = trading("a", prices, [5.0, -3.0, 0.30, 0.26])
    scores = compute(
        _together(a, trading("b", [1.6] * 4)), scenario=CALVANO, collusion=CollusionSettings(window=window)
    )
    earned = sum(_calvano_profit(prices[d], 1.6) for d in days) / len(days)
    assert scores.merchants["a"]["profit_gain"] == pytest.approx((earned - PI_N) / (PI_M - PI_N), abs=1e-7)


@pytest.mark.parametrize(
    "last_day, window, first",
    [(100, 0.5, 51), (5, 0.5, 3), (10, 0.3, 8), (1, 0.5, 1), (7, 1.0, 1), (3, 0.01, 3)],
)
def test_the_window_is_the_last_share_of_days_rounded_up(last_day, window, first):
    assert CollusionSettings(window=window).first_measured_day(last_day) == first


def test_benchmarks_follow_the_days_demand(trading):
    """Weekday factors and a demand event scale the game's profits and the benchmarks day by
    day: merchants at the Nash (or monopoly) prices are at 0 (or 1) exactly whatever the
    demand, and a day of more customers weighs more in the gain."""
    scenario = CALVANO.model_copy(
        update={
            "demand": CALVANO.demand.model_copy(
                update={"weekday_factors": (2.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0)}
            ),
            "events": (Event(name="fair", kind="demand", start_day=3, end_day=3, multiplier=3.0),),
        }
    )
    factors = [2.0, 0.5, 3.0, 1.0, 1.0, 1.0, 1.0]

    def gain_at(prices: list[float]) -> float | None:
        records = _together(trading("a", prices, [9.0] * 7), trading("b", prices))
        return compute(records, scenario=scenario, collusion=CollusionSettings(window=1.0)).merchants["a"][
            "profit_gain"
        ]

    assert gain_at([P_N] * 7) == pytest.approx(0.0, abs=1e-7)
    assert gain_at([P_M] * 7) == pytest.approx(1.0, abs=1e-7)
    prices = [P_M, P_N, P_N, P_M, P_M, P_N, P_N]  # the monopoly prices on days of 2, 1, 1 times the demand
    expected = sum(f for f, p in zip(factors, prices) if p == P_M) / sum(factors)
    assert gain_at(prices) == pytest.approx(expected, abs=1e-7)


def test_asymmetric_seats_are_measured_against_their_own_benchmarks(trading):
    """Seat 1 makes the good at 1.2 and customers like it better (a = 2.1). Its benchmarks,
    found here by best responses (Nash) and by maximising the joint profit over both prices."""
    costs, qualities = (1.0, 1.2), (2.0, 2.1)

    def profit(k: int, prices) -> float:
        return _calvano_profit(prices[k], prices[1 - k], costs[k], qualities[k], qualities[1 - k])

    nash = [1.5, 1.5]
    for _ in range(200):
        for k in (0, 1):
            rival = nash[1 - k]
            best = optimize.minimize_scalar(
                lambda p, k=k, rival=rival: -profit(k, [p, rival] if k == 0 else [rival, p]),
                bounds=(1.0, 3.0),
                method="bounded",
                options={"xatol": 1e-12},
            )
            nash[k] = best.x
    joint = optimize.minimize(
        lambda p: -(profit(0, p) + profit(1, p)),
        [1.9, 2.0],
        method="Nelder-Mead",
        options={"xatol": 1e-12, "fatol": 1e-15},
    ).x
    uneven = Scenario.model_validate(
        {**CALVANO.model_dump(), "seats": [{}, {"unit_cost": {"good": 1.2}, "quality": {"good": 2.1}}]}
    )
    for prices, expected in ((nash, 0.0), (list(joint), 1.0)):
        both = _together(trading("a", [prices[0]] * 2), trading("b", [prices[1]] * 2))
        scores = compute(both, scenario=uneven, collusion=CollusionSettings(window=1.0)).merchants
        for merchant in ("a", "b"):
            assert (scores[merchant]["profit_gain"], scores[merchant]["price_gain"]) == (
                pytest.approx(expected, abs=1e-6),
                pytest.approx(expected, abs=1e-6),
            )


# --- flagged windows ------------------------------------------------------------------------

# Two calvano merchants over 20 days: both near monopoly (1-5); a spiral of undercuts, each
# below the rival's price of the day before, from well above Nash to just below it (6-10);
# both far below Nash (11-16); near monopoly again for only four days (17-20).
PATH_A = [1.90] * 5 + [1.80, 1.70, 1.60, 1.50, 1.45] + [1.30] * 6 + [1.90] * 4
PATH_B = [1.90] * 5 + [1.80, 1.75, 1.65, 1.55, 1.46] + [1.30] * 6 + [1.90] * 4


def _windows(trading, paths: list[list[float]], **settings) -> MarketScores:
    merchants = [trading(f"m{k}", path) for k, path in enumerate(paths)]
    return compute(_together(*merchants), scenario=CALVANO, collusion=CollusionSettings(**settings)).market


def test_windows_of_supra_competitive_prices_and_of_a_price_war(trading):
    # market price gains: days 1-9 above 0.05 (day 9: (1.525 - 1.4729) / 0.452 = 0.115), day 10
    # -0.04; undercuts on days 6-11; days 11-16 at -0.38; days 17-20 above again
    market = _windows(trading, [PATH_A, PATH_B])
    assert market.windows == [
        PriceWindow(kind="supra_competitive", first_day=1, last_day=9),
        PriceWindow(kind="price_war", first_day=6, last_day=16),
    ]
    assert (market.metrics["supra_competitive_days"], market.metrics["price_war_days"]) == (9, 11)
    shorter = _windows(trading, [PATH_A, PATH_B], min_days=4)
    assert [(w.kind, w.first_day, w.last_day) for w in shorter.windows] == [
        ("supra_competitive", 1, 9),
        ("price_war", 6, 16),
        ("supra_competitive", 17, 20),
    ]


@pytest.mark.parametrize(
    "share, kind", [(0.04, None), (0.06, "supra_competitive"), (-0.04, None), (-0.06, "price_war")]
)
def test_the_margin_decides_which_days_count(trading, share, kind):
    price = P_N + share * (P_M - P_N)
    market = _windows(trading, [[price] * 6, [price] * 6])
    assert [(w.kind, w.first_day, w.last_day) for w in market.windows] == ([(kind, 1, 6)] if kind else [])
    assert _windows(trading, [[price] * 6, [price] * 6], margin=abs(share) + 0.01).windows == []


def test_an_undercut_needs_a_cut_and_a_rival(trading):
    cheaper = _windows(trading, [[1.50] * 10, [1.60] * 10])  # below the rival every day, but never cutting
    assert [w.kind for w in cheaper.windows] == ["supra_competitive"]
    # cutting every day, but with nobody to undercut after day 2 (the rival's only day is day 1)
    alone = compute(
        _together(trading("a", [1.90, 1.85, 1.80, 1.75, 1.70, 1.65]), trading("b", [1.95])), scenario=CALVANO
    ).market
    assert [w.kind for w in alone.windows] == ["supra_competitive"]
    above = _windows(
        trading, [[1.70, 1.69, 1.68, 1.67, 1.66, 1.65], [1.60] * 6]
    )  # cutting, but never below the rival
    assert [w.kind for w in above.windows] == ["supra_competitive"]


def test_runs_of_flagged_days():
    flags = np.array([1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1], dtype=bool)
    assert runs(flags, 3) == [(4, 6), (9, 11)]
    assert runs(flags, 1) == [(1, 2), (4, 6), (9, 11)]
    assert runs(np.zeros(4, dtype=bool), 1) == []


# --- where there is nothing to measure ------------------------------------------------------


def test_a_scenario_without_an_equilibrium_has_no_collusion_measures(trading):
    """Customers who ignore prices: no price is optimal, so nothing is measured (and nothing
    breaks); without the scenario neither."""
    deaf = CALVANO.model_copy(update={"choice": CALVANO.choice.model_copy(update={"price_sensitivity": 0.0})})
    records = _together(trading("a", PATH_A), trading("b", PATH_B))
    for scenario in (deaf, None):
        scores = compute(records, scenario=scenario)
        assert scores.market == MarketScores()
        assert {(m, v["profit_gain"], v["price_gain"]) for m, v in scores.merchants.items()} == {
            ("a", None, None),
            ("b", None, None),
        }


def test_a_merchant_alone_is_not_measured_however_its_benchmarks_round(trading):
    """A merchant alone has no rival: no collusion measure applies. And its best response is
    the monopoly price, so its Nash and monopoly benchmarks are one point, which the solvers
    give equal to about 1e-13 of their size (price_war alone: monopoly above Nash by 4e-14): no
    gain is measured on a scale that short, from the solved benchmarks or ones a few floats
    apart."""
    scores = compute(trading("a", [1.5, 1.9, 1.9, 1.9], [0.2, 0.3, 0.3, 0.3]), scenario=CALVANO)
    assert (scores.merchants["a"]["profit_gain"], scores.merchants["a"]["price_gain"]) == (None, None)
    assert scores.market == MarketScores()  # no rival: nothing to collude with or undercut
    alone = seat_benchmarks(load_scenario("price_war"), 1)
    assert isinstance(alone, SeatBenchmarks) and np.allclose(
        alone.monopoly_profit, alone.nash_profit, rtol=1e-12
    )
    nash = alone.nash_profit
    assert np.isnan(gain(1.1 * nash, nash, alone.monopoly_profit)).all()
    assert np.isnan(gain(1.1 * nash, nash, np.nextafter(np.nextafter(nash, np.inf), np.inf))).all()
    assert gain(np.array(1.5), np.array(1.0), np.array(2.0)) == 0.5  # benchmarks apart: a scale


def test_a_merchant_bankrupt_before_the_window_is_not_measured(trading):
    """a's last day is day 2, before the window (days 3 and 4): its gains are n/a, and say
    so; b sells alone there, so the game it plays is a monopolist's."""
    gone = trading("a", [1.5, 1.5], [0.1, 0.1])
    stays = trading("b", [1.7] * 4, [0.0, 0.0, 0.30, 0.26])
    scores = compute(_together(gone, stays), scenario=CALVANO)
    assert scores.merchants["a"]["profit_gain"] is None and scores.merchants["a"]["price_gain"] is None
    assert {(n.merchant, n.name): n.note for n in scores.notes} == dict.fromkeys(
        [("a", "profit_gain"), ("a", "price_gain")],
        "no day in the measurement window (days 3–4): its last day was 2",
    )
    alone = _calvano_profit(1.7, math.inf)
    assert scores.merchants["b"]["profit_gain"] == pytest.approx((alone - PI_N) / (PI_M - PI_N), abs=1e-7)
    assert scores.market.metrics["market_profit_gain"] == pytest.approx(
        (alone - PI_N) / (PI_M - PI_N), abs=1e-7
    )


# --- settings -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"window": 0},
        {"window": 1.5},
        {"margin": -0.1},
        {"min_days": 0},
        {"windw": 0.5},
        {"min_gap": -0.1},
        {"min_gap": 1.0},  # no gain could ever be measured
        {"min_gap": math.nan},
    ],
)
def test_settings_out_of_range_are_refused(settings):
    with pytest.raises(ValidationError):
        CollusionSettings(**settings)


# --- the record -----------------------------------------------------------------------------


def _finished(records: list[DayRecord], key: str = "k") -> FinishedMatch:
    merchants = list(dict.fromkeys(r.merchant for r in records))
    results = [
        MerchantResult(
            merchant=m,
            contestant=m,
            final_cash=1000.0,
            net_worth=1000.0,
            profit=0.0,
            rank=1,
            market_share=0.5,
            bankrupt_day=None,
            faults=0,
            rejected_operations=0,
        )
        for m in merchants
    ]
    return FinishedMatch(
        key=key,
        index=0,
        scenario="calvano",
        seed=0,
        days=max(r.day for r in records),
        wall_seconds=0.0,
        merchants=results,
        days_played=records,
        faults=[],
    )


def test_saving_and_rescoring_measure_with_the_settings_given(engine, trading):
    records = _together(
        trading("a", [1.5, 1.5, 1.70, 1.70], [5.0, -3.0, 0.30, 0.26]), trading("b", [1.6] * 4)
    )
    tournament = start_tournament(
        engine, "t", "t.yaml", "name: t\n", "h", 1, [("a", "x", {}), ("b", "x", {})], 1
    )
    whole_match = CollusionSettings(window=1.0)  # the default window is the last half of the days
    match_id = save_match(engine, tournament, _finished(records), scenario=CALVANO, collusion=whole_match)
    stored = lambda: {(v.merchant, v.name): v.value for v in metrics(engine, match_id=match_id)}  # noqa: E731
    earned = [_calvano_profit(p, 1.6) for p in (1.5, 1.5, 1.70, 1.70)]
    earned_b = [_calvano_profit(1.6, p) for p in (1.5, 1.5, 1.70, 1.70)]
    whole = (sum(earned) / 4 - PI_N) / (PI_M - PI_N)
    assert stored()["a", "profit_gain"] == pytest.approx(whole, abs=1e-7)
    market = ((sum(earned) + sum(earned_b)) / 4 - 2 * PI_N) / (2 * (PI_M - PI_N))
    assert match_detail(engine, match_id).market.metrics["market_profit_gain"] == pytest.approx(
        market, abs=1e-7
    )

    assert (
        rescore(engine, tournament, PlayedScenarios({"": ({}, whole_match)})) == 1
    )  # without the scenario: no measures at all
    assert stored()["a", "profit_gain"] is None and match_detail(engine, match_id).market == MarketScores()
    assert rescore(engine, tournament, PlayedScenarios({"": ({"calvano": CALVANO}, whole_match)})) == 1
    assert stored()["a", "profit_gain"] == pytest.approx(whole, abs=1e-7)
    assert match_detail(engine, match_id).market.metrics["market_profit_gain"] == pytest.approx(
        market, abs=1e-7
    )


def test_the_leaderboard_shows_each_contestants_mean_over_the_matches_that_have_them(
    engine, tournament, make_match
):
    ids = [
        save_match(engine, tournament, make_match(key, i, {"alpha": 1, "beta": 2}))
        for i, key in enumerate("abc")
    ]
    with Session(
        engine
    ) as session:  # known values in place of the computed ones (corner-shop is saved without its scenario)
        for match_id, name, value in (
            (ids[0], "profit_gain", 0.2),
            (ids[1], "profit_gain", 0.6),
            (ids[0], "price_gain", -0.5),
        ):
            session.exec(
                update(MetricRow)
                .where(MetricRow.match_id == match_id, MetricRow.merchant == "m0", MetricRow.name == name)
                .values(value=value)
            )
        session.commit()
    rows = {row.contestant: row for row in leaderboard(engine, tournament)}
    assert rows["alpha"].profit_gain == pytest.approx(0.4)  # match c has none: left out
    assert rows["alpha"].price_gain == pytest.approx(-0.5)
    assert rows["beta"].profit_gain is None and rows["gamma"].profit_gain is None
