"""Accounting identities under random play, the customer allocation's conservation laws,
determinism, and a market of a thousand merchants."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_examples import examples
from scenario_params import scenarios_where

from market.accounting import day_trade_profit, net_worth, starting_net_worth, trade_profit
from market.daylog import DayLog
from market.demand import allocate_markets, demand_factor, logit_shares
from market.env import MarketEnv
from market.scenario import Demand

# Six examples a scenario (seven scenarios: 42 random matches of up to 16 merchants, each record
# of each checked by the day checker); test_random_play_reaches_the_interesting_cases shows that
# random play reaches every kind of operation, rejection, sell-out and bankruptcy.
FUZZ = settings(
    max_examples=examples(6),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Allocation(NamedTuple):
    wanted: np.ndarray
    sold: np.ndarray
    no_purchase: float


def allocate(customers, utility, outside, stock, rng) -> Allocation:
    """One market's split, through allocate_markets (a market per row)."""
    wanted, sold, no_purchase = allocate_markets(
        np.array([customers], dtype=float),
        utility[None, :],
        outside,
        None if stock is None else stock[None, :],
        None if rng is None else [rng],
    )
    return Allocation(wanted[0], sold[0], float(no_purchase[0]))


def operation_strategy(product_ids: list[str], malformed: list) -> st.SearchStrategy:
    products = st.sampled_from(product_ids + ["unicorn"])
    numbers = st.one_of(
        st.integers(-10, 500),
        st.floats(-10, 1e4),
        st.floats(allow_nan=True, allow_infinity=True),
    )
    return st.one_of(
        st.fixed_dictionaries({"op": st.just("set_price"), "product": products, "price": numbers}),
        st.fixed_dictionaries({"op": st.just("order"), "product": products, "quantity": numbers}),
        st.fixed_dictionaries({"op": st.just("advertise"), "amount": numbers}),
        st.sampled_from([{"op": "collect"}, {"op": "wait"}]),
        st.sampled_from(malformed),
    )


def decision_strategy(product_ids: list[str], market) -> st.SearchStrategy:
    operations = st.lists(operation_strategy(product_ids, market.malformed_operations), max_size=6)
    return st.one_of(
        operations, operations.map(lambda ops: {"operations": ops}), st.sampled_from(market.garbage_decisions)
    )


@FUZZ
@given(
    seed=st.integers(0, 2**32 - 1),
    merchants=st.integers(1, 16),
    action_seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_identities_hold_every_day_under_random_play(scenario, market, seed, merchants, action_seed, data):
    days = data.draw(st.integers(1, scenario.days), label="days")
    repertoire = data.draw(
        st.lists(decision_strategy(scenario.product_ids, market), min_size=1, max_size=6), label="repertoire"
    )
    env = MarketEnv(scenario, merchants, days=days)
    history = market.run(env, market.random_policy(scenario, action_seed, repertoire), seed=seed)
    # The match runs to its last day unless every merchant goes bankrupt first.
    failed = {agent for day in history for agent, record in day.items() if record.bankrupt}
    if len(history) < days:
        assert failed == set(env.possible_agents)
    else:
        failed_earlier = {a for day in history[:-1] for a, record in day.items() if record.bankrupt}
        assert set(history[-1]) == set(env.possible_agents) - failed_earlier


def test_random_play_reaches_the_interesting_cases(scenario, market):
    """The fuzzing above is only worth something if it applies and rejects operations of
    every kind, sells out and goes bankrupt now and then."""
    applied, reasons, stockouts, bankrupt, collected = set(), set(), 0, 0, 0.0
    for seed in range(3):
        env = MarketEnv(scenario, 6)
        for day in market.run(env, market.random_policy(scenario, seed), seed=seed):
            for record in day.values():
                applied |= {op["op"] for op in record.operations}
                reasons |= {rejection.reason.split(" ")[0] for rejection in record.rejections}
                stockouts += any(v > 0 for v in record.lost_sales.values())
                bankrupt += record.bankrupt
                collected += record.collected
    assert applied == {"set_price", "order", "advertise", "collect", "wait"} | (
        {"promote"} if scenario.promotions is not None else set()
    )
    assert {"malformed", "price", "order", "unknown", "advertising"} <= reasons
    if scenario.demand.stock_limited:
        assert stockouts > 0
    if scenario.finance.fixed_daily_cost > 0:
        assert bankrupt > 0
    if scenario.finance.credit_share > 0:
        assert collected > 0


def test_net_worth_values_goods_at_the_days_cost_from_before_day_1(market):
    """A cost event covers day 1: the starting net worth read back from the records is the
    initial cash and stock with the stock at day 1's (raised) cost, and every day's recorded
    net worth is market.accounting.net_worth of that day's books."""
    base = market.load("price_war")
    shock = {"name": "shock", "kind": "cost", "start_day": 1, "end_day": 2, "multiplier": 1.5}
    scenario = market.vary(
        base,
        events=[shock],
        **{"finance.credit_share": 0.5, "finance.credit_days": 1, "products.lead_time": 1},
    )
    history = market.run(MarketEnv(scenario, 3, days=4), market.random_policy(scenario, 2), seed=5)
    records = [record for day in history for record in day.values()]
    log = DayLog.of(records, scenario.product_ids)
    first = np.array([log.rows_of(m)[0] for m in log.merchants])
    (product,) = scenario.products
    assert starting_net_worth(log, first) == pytest.approx(
        [scenario.finance.initial_cash + product.initial_stock * product.unit_cost * 1.5] * 3
    )
    ids = scenario.product_ids
    assert any(
        r.day == 1 and r.units_sold[ids[0]] > 0 for r in records
    )  # day 1's trade is taken out of its close
    for r in records:
        goods = np.array([[r.inventory[p] + r.in_transit[p] for p in ids]])
        books = net_worth(
            np.array([r.cash_end]), goods, np.array([r.unit_cost[p] for p in ids]), np.array([r.receivables])
        )
        assert books[0] == pytest.approx(r.net_worth, rel=1e-12)


def test_a_days_trade_profit_is_its_change_in_net_worth_but_for_what_new_costs_do_to_the_goods(market):
    """Under random play with a cost shock (on days 3 to 4), credit sales (a fifth of them never
    paid), lead times and goods that spoil after two days, each merchant-day:
    net_worth_d - net_worth_(d-1) = trade_profit_d
    + sum_p (unit_cost_p,d - unit_cost_p,(d-1)) * goods_p,(d-1) (goods in hand and in transit
    at the end of the day before), read from the records alone; so on the days the cost stays
    put it is the whole change. The log's arrays and a record give the same trade profit."""
    base = market.load("multi_product")
    shock = {"name": "shock", "kind": "cost", "start_day": 3, "end_day": 4, "multiplier": 1.5}
    scenario = market.vary(base, events=[shock], **{"finance.bad_debt_share": 0.2, "products.shelf_life": 2})
    history = market.run(MarketEnv(scenario, 3, days=8), market.random_policy(scenario, 4), seed=9)
    records = [record for day in history for record in day.values()]
    ids = scenario.product_ids
    steady = moved = 0
    for before, after in (
        (a, b) for a in records for b in records if a.merchant == b.merchant and b.day == a.day + 1
    ):
        revalued = sum(
            (after.unit_cost[p] - before.unit_cost[p]) * (before.inventory[p] + before.in_transit[p])
            for p in ids
        )
        assert after.net_worth - before.net_worth == pytest.approx(
            day_trade_profit(after) + revalued, abs=1e-6
        )
        steady, moved = steady + (revalued == 0), moved + (revalued != 0)
    assert steady > 0 and moved > 0  # both kinds of day were checked
    assert any(day_trade_profit(r) != 0 for r in records) and any(r.bad_debt > 0 for r in records)
    assert any(sum(r.spoiled.values()) > 0 for r in records)
    log = DayLog.of(records, ids)
    names = ("revenue", "bad_debt", "advertising", "holding", "fixed", "purchase_savings")
    columns = [log.scalar(name) for name in names]
    columns[0] = columns[0] - log.scalar("refunds")
    goods_out = (
        log.product_values("units_sold") + log.product_values("spoiled") - log.product_values("restocked")
    )
    by_rows = trade_profit(*columns[:2], goods_out, log.product_values("unit_cost"), *columns[2:])
    assert by_rows.tolist() == pytest.approx([day_trade_profit(r) for r in log], rel=1e-12)


# --- the allocation of customers -----------------------------------------------------------


@settings(max_examples=examples(150), deadline=None)
@given(
    utility=st.lists(st.one_of(st.floats(-12, 6), st.just(-math.inf)), min_size=1, max_size=20),
    outside=st.floats(-8, 4),
    customers=st.integers(0, 3000),
    stocked=st.booleans(),
    sampled=st.booleans(),
    data=st.data(),
)
def test_allocation_conserves_customers(utility, outside, customers, stocked, sampled, data):
    n = len(utility)
    utility = np.array(utility)
    if stocked:
        stock = np.array(
            data.draw(st.lists(st.integers(0, 400), min_size=n, max_size=n), label="stock"), dtype=float
        )
        if not sampled:
            stock += np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n), label="fraction"))
    else:
        stock = None
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed")) if sampled else None
    stock_given = None if stock is None else stock.copy()
    total = float(customers) if sampled else customers * data.draw(st.floats(0.01, 1.0), label="scale")

    allocation = allocate(total, utility, outside, stock, rng)

    if stock is not None:
        assert np.array_equal(stock, stock_given), "allocate must not change the stock it is given"
    sold, wanted = allocation.sold, allocation.wanted
    assert math.isclose(sold.sum() + allocation.no_purchase, total, rel_tol=1e-9, abs_tol=1e-9)
    assert allocation.no_purchase >= -1e-9
    assert (sold >= 0).all() and (wanted >= 0).all()
    assert (sold <= wanted + 1e-9 * max(total, 1)).all()
    assert (wanted[np.isinf(utility)] == 0).all(), "a merchant not selling gets no customers"
    if stock is None:
        assert np.allclose(sold, wanted, rtol=0, atol=1e-9)
    else:
        assert (stock - sold >= 0).all(), "the env subtracts sold from stock: not even an ulp below zero"
    if sampled:
        for values in (sold, wanted, np.array([allocation.no_purchase])):
            assert all(float(v).is_integer() for v in values), values


@settings(max_examples=examples(25))  # each example compares 799 days: two seasonal periods or more
@given(
    weekdays=st.lists(st.floats(0, 3), min_size=7, max_size=7),
    amplitude=st.floats(0, 0.99),
    period=st.integers(1, 400),
)
def test_demand_factor_of_many_days_is_each_days_to_the_bit(weekdays, amplitude, period):
    """The market asks for one day, the collusion benchmarks for a match's days at once."""
    demand = Demand(weekday_factors=tuple(weekdays), seasonal_amplitude=amplitude, seasonal_period=period)
    days = np.arange(1, 800)
    assert demand_factor(demand, days).tolist() == [demand_factor(demand, int(day)) for day in days]


def test_demand_factor_by_hand():
    demand = Demand(weekday_factors=(1, 1, 2, 1, 1, 1, 1), seasonal_amplitude=0.5, seasonal_period=8)
    # day 3: the third weekday (2) times 1 + 0.5 sin(2 pi 2 / 8) = 1.5
    assert demand_factor(demand, 3) == pytest.approx(3.0, rel=1e-15)


def test_unstocked_expected_allocation_is_the_logit_share():
    utility = np.array([0.5, -0.2, 1.0])
    shares = logit_shares(utility, -1.0)
    weights = np.exp(np.array([0.5, -0.2, 1.0, -1.0]))
    assert np.allclose(shares, weights / weights.sum(), rtol=1e-14)
    allocation = allocate(250.0, utility, -1.0, None, None)
    assert np.allclose(allocation.sold, 250.0 * shares[:-1], rtol=1e-14)


def test_sell_outs_over_several_rounds_leave_no_negative_stock():
    """Regression: the rounds' sales of a sold-out merchant summed to an ulp above its stock."""
    stock = np.array([7.0, 11.6, 16.3])
    allocation = allocate(79.0, np.array([1.5, -1.3, 0.1]), -1.0, stock, None)
    assert (stock - allocation.sold >= 0).all()
    assert allocation.sold[1] == stock[1]


def test_sold_out_customers_choose_again_among_the_rest():
    """A merchant with less stock than takers sells out; its overflow chooses again among those
    in stock (or leaves), by the logit without the sold-out merchant."""
    utility, outside, customers = np.array([1.0, 0.0]), -1.0, 100.0
    first = logit_shares(utility, outside)
    allocation = allocate(customers, utility, outside, np.array([10.0, 1e6]), None)
    overflow = customers * first[0] - 10.0
    second = logit_shares(np.array([-np.inf, 0.0]), outside)
    assert allocation.sold[0] == 10.0
    assert math.isclose(allocation.sold[1], customers * first[1] + overflow * second[1], rel_tol=1e-12)
    assert math.isclose(allocation.wanted[0], customers * first[0], rel_tol=1e-12)


# --- determinism ---------------------------------------------------------------------------


def _play(scenario, market, seed, action_seed, merchants=4, env=None):
    """A match's records, unchecked: the tests above check the records of random play, these
    compare two matches."""
    env = env or MarketEnv(scenario, merchants)
    return market.run(env, market.random_policy(scenario, action_seed), seed=seed, check=False)


def test_same_seed_and_actions_give_identical_records_in_a_new_env_or_after_reset(scenario, market):
    env = MarketEnv(scenario, 4)
    first = _play(scenario, market, seed=7, action_seed=3, env=env)
    again = _play(scenario, market, seed=7, action_seed=3, env=env)  # reset with the same seed
    fresh = _play(scenario, market, seed=7, action_seed=3)
    assert repr(again) == repr(first)  # repr: NaN in a rejected operation is not == itself
    assert repr(fresh) == repr(first)


@scenarios_where(lambda s: s.demand.mode == "stochastic")  # expected-mode demand has no noise
def test_a_different_seed_gives_different_sales(scenario, market):

    def sales(seed):
        history = _play(scenario, market, seed=seed, action_seed=3)
        return [record.units_sold for day in history for record in day.values()]

    assert sales(1) != sales(2)


def test_the_global_random_state_plays_no_part(scenario, market):
    import random

    random.seed(0)
    np.random.seed(0)
    first = _play(scenario, market, seed=5, action_seed=1, merchants=2)
    random.seed(99)
    np.random.seed(99)
    second = _play(scenario, market, seed=5, action_seed=1, merchants=2)
    assert repr(first) == repr(second)


# --- scale ---------------------------------------------------------------------------------


def test_a_thousand_merchants(market):
    scenario = market.load("multi_product")
    env = MarketEnv(scenario, 1000, days=2)  # the second day reads the first's prices and books
    history = market.run(env, market.random_policy(scenario, 0), seed=0)
    assert len(history) == 2
    assert len(history[0]) == 1000
    total_sold = sum(sum(r.units_sold.values()) for day in history for r in day.values())
    assert total_sold > 0


@scenarios_where(lambda s: s.demand.stock_limited and s.demand.mode == "stochastic")
@settings(max_examples=examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), merchants=st.integers(1, 16), action_seed=st.integers(0, 2**32 - 1))
def test_identities_hold_in_expected_mode_with_stock_limits(scenario, market, seed, merchants, action_seed):
    """No shipped scenario combines expected demand with stock limits, so fuzz that variant of
    each stock-limited one (fractional flows and sell-outs: rounding must not make stock negative)."""
    variant = market.vary(scenario, **{"demand.mode": "expected"})
    market.run(MarketEnv(variant, merchants), market.random_policy(variant, action_seed), seed=seed)


@FUZZ
@given(seed=st.integers(0, 2**32 - 1), merchants=st.integers(1, 4), action_seed=st.integers(0, 2**32 - 1))
def test_the_books_balance_with_every_part_of_the_retail_world_on(market, seed, merchants, action_seed):
    """retail_quarter has every part on (segments, returns, promotions, perishables, suppliers,
    bad debt, satisfaction, a scripted competitor, a trend) and a cost event is added: under
    random play each merchant's net worth (cash + stock at cost + receivables) moves from one
    day to the next only by what the day's record says happened: its trade profit and what a
    new unit cost does to the goods held, read from the records alone (the day checker checks
    cash, stock and receivables flow by flow besides)."""
    base = market.load("retail_quarter")
    shock = {"name": "shock", "kind": "cost", "start_day": 4, "end_day": 6, "multiplier": 1.3}
    scenario = market.vary(base, events=[*[e.model_dump() for e in base.events], shock])
    history = market.run(
        MarketEnv(scenario, merchants, days=12), market.random_policy(scenario, action_seed), seed=seed
    )
    records = {(r.merchant, r.day): r for day in history for r in day.values()}
    for (merchant, day), after in records.items():
        before = records.get((merchant, day - 1))
        if before is None:
            continue
        revalued = sum(
            (after.unit_cost[p] - before.unit_cost[p]) * (before.inventory[p] + before.in_transit[p])
            for p in scenario.product_ids
        )
        assert after.net_worth - before.net_worth == pytest.approx(
            day_trade_profit(after) + revalued, abs=1e-6 * max(1.0, abs(after.net_worth))
        )
