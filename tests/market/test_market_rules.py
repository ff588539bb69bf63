"""The market's rules, one at a time: logit demand, stock-outs, validation, lead times and
credit, events, bankruptcy. Every match here is played through `market.run`, so the
accounting identities are checked on every day as well."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples
from scenario_params import scenarios_where

from market.demand import choice_shares
from market.env import MarketEnv
from market.scenario import PRICE_CEILING_FACTOR
from market.types import Decision, Order, SetPrice


def state_of(observation, product_id: str):
    """The observing merchant's ProductState of `product_id`."""
    return next(state for state in observation.products if state.product == product_id)


def watching(policy):
    """Wrap a policy so that the observations it was given are kept, one dict per day."""
    seen: list[dict] = []

    def wrapped(observations):
        seen.append(observations)
        return policy(observations)

    return wrapped, seen


def hand_shares(scenario, product, prices, reputations):
    """Choice docstring: u = -price_sensitivity * price / reference_price + reputation_weight *
    reputation + quality_weight * quality; share_i = exp(u_i) / (exp(u_0) + sum_j exp(u_j))."""
    c = scenario.choice
    weights = [
        math.exp(
            -c.price_sensitivity * p / product.reference_price
            + c.reputation_weight * r
            + c.quality_weight * product.quality
        )
        for p, r in zip(prices, reputations)
    ]
    total = math.exp(c.no_purchase_utility) + sum(weights)
    return [w / total for w in weights]


def hand_market_size(scenario, product, day):
    d = scenario.demand
    season = 1 + d.seasonal_amplitude * math.sin(2 * math.pi * (day - 1) / d.seasonal_period)
    events = math.prod(
        e.multiplier
        for e in scenario.events
        if e.kind == "demand" and e.start_day <= day <= e.end_day and e.product in (None, product.id)
    )
    return product.base_demand * d.weekday_factors[(day - 1) % 7] * season * events


# --- 4. expected mode: the exact logit game ---------------------------------------------------


@settings(max_examples=examples(25), deadline=None)
@given(prices=st.lists(st.floats(0.2, 8.0), min_size=1, max_size=6), days=st.integers(1, 4))
def test_expected_sales_are_market_size_times_logit_share(market, prices, days):
    scenario = market.load("logit_game")
    assert scenario.demand.mode == "expected" and not scenario.demand.stock_limited
    product = scenario.products[0]
    names = [f"m{i}" for i in range(len(prices))]
    env = MarketEnv(scenario, names, days=days)
    set_prices = market.constant_policy(
        {m: [{"op": "set_price", "product": product.id, "price": p}] for m, p in zip(names, prices)}
    )
    history = market.run(env, set_prices)

    reputations = [scenario.reputation.initial] * len(names)
    for day, records in enumerate(history, start=1):
        shares = hand_shares(scenario, product, prices, reputations)
        size = hand_market_size(scenario, product, day)
        for name, share, price in zip(names, shares, prices):
            record = records[name]
            assert record.units_sold[product.id] == pytest.approx(size * share, rel=1e-12, abs=1e-12)
            assert record.revenue == pytest.approx(size * share * price, rel=1e-12, abs=1e-12)
            assert record.purchases == pytest.approx(
                size * share * product.unit_cost, rel=1e-12, abs=1e-12
            )  # made to order
            assert record.lost_sales[product.id] == 0
        reputations = [records[name].reputation for name in names]

    first = history[0]
    for a, pa in zip(names, prices):
        for b, pb in zip(names, prices):
            if pb - pa > 1e-6:  # an ulp apart, the shares may round to equal
                assert first[a].units_sold[product.id] > first[b].units_sold[product.id], (
                    "a lower price must win a larger share"
                )


def test_logit_game_by_the_numbers(market):
    """Two merchants at 1.5 and 2.5 (reference 2, sensitivity 4, outside -4, no reputation)."""
    scenario = market.load("logit_game")
    env = MarketEnv(scenario, 2, days=1)
    policy = market.constant_policy(
        {"m0": [SetPrice(product="good", price=1.5)], "m1": [SetPrice(product="good", price=2.5)]}
    )
    (day,) = market.run(env, policy)
    e0, e1, out = math.exp(-3.0), math.exp(-5.0), math.exp(-4.0)
    assert day["m0"].units_sold["good"] == pytest.approx(100 * e0 / (e0 + e1 + out), rel=1e-12)
    assert day["m1"].units_sold["good"] == pytest.approx(100 * e1 / (e0 + e1 + out), rel=1e-12)


def test_choice_shares_are_the_logit_of_the_utility_formula(market):
    """market.demand.choice_shares of several price profiles at once (one merchant's prices
    against fixed rivals), against the Choice docstring's formula: a merchant not selling is
    no option, and every customer goes somewhere."""
    scenario = market.vary(
        market.load("price_war"), **{"choice.quality_weight": 0.7, "products.quality": 0.4}
    )
    product = scenario.products[0]
    profiles = np.array([[18.0, 22.0, 15.0], [25.0, 22.0, 15.0]])
    reputation = np.array([0.7, 0.5, 0.9])
    selling = np.array([True, True, False])
    shares = choice_shares(
        scenario.choice, profiles, product.reference_price, reputation, product.quality, selling
    )
    assert shares.shape == (2, 4)
    for row, prices in zip(shares, profiles):
        assert row[:2] == pytest.approx(hand_shares(scenario, product, prices[:2], reputation[:2]), rel=1e-12)
        assert row[2] == 0 and row.sum() == pytest.approx(1, rel=1e-12)
    assert (
        shares[0, 0] > shares[1, 0] and shares[0, 1] < shares[1, 1]
    )  # dearer, it loses customers to its rival


# --- 5. stock-outs -------------------------------------------------------------------------


def _stockout_runs(market, scenario, seed=None):
    """Run A: both merchants stock 200 units on day 1. Run B: only m1 does; m0 has none."""
    both = market.constant_policy(
        lambda m, obs: [Order(product="widget", quantity=200)] if obs.day == 1 else []
    )
    one = market.constant_policy(
        lambda m, obs: [Order(product="widget", quantity=200)] if obs.day == 1 and m == "m1" else []
    )
    a = market.run(MarketEnv(scenario, 2, days=3), both, seed=seed)
    b = market.run(MarketEnv(scenario, 2, days=3), one, seed=seed)
    return a, b


def test_a_merchant_without_stock_sells_nothing_and_its_customers_partly_go_to_the_rival(market):
    scenario = market.vary(
        market.load("price_war"), **{"demand.mode": "expected", "products.initial_stock": 0}
    )
    a, b = _stockout_runs(market, scenario)
    empty, rival = b[0]["m0"], b[0]["m1"]
    assert empty.units_sold["widget"] == 0
    assert empty.first_choice["widget"] > 0
    assert empty.lost_sales["widget"] == empty.first_choice["widget"]
    assert empty.reputation < scenario.reputation.initial
    assert empty.reputation < a[0]["m0"].reputation
    assert b[1]["m0"].reputation < empty.reputation, "reputation keeps falling while out of stock"

    gain = rival.units_sold["widget"] - a[0]["m1"].units_sold["widget"]
    assert 0 < gain < empty.first_choice["widget"], "only part of the turned-away customers go to the rival"
    # By the logit's independence of irrelevant alternatives, the turned-away customers choose
    # between the rival and leaving as if the empty merchant were not there.
    product = scenario.products[0]
    (to_rival,) = hand_shares(scenario, product, [rival.prices["widget"]], [scenario.reputation.initial])
    assert gain == pytest.approx(empty.first_choice["widget"] * to_rival, rel=1e-9)


def test_stockouts_in_stochastic_mode(market):
    scenario = market.vary(market.load("price_war"), **{"products.initial_stock": 0})
    gained, lost = 0.0, 0.0
    for seed in range(8):
        a, b = _stockout_runs(market, scenario, seed=seed)
        for day in range(3):
            assert b[day]["m0"].units_sold["widget"] == 0
            lost += b[day]["m0"].lost_sales["widget"]
            gained += b[day]["m1"].units_sold["widget"] - a[day]["m1"].units_sold["widget"]
        assert b[-1]["m0"].reputation < a[-1]["m0"].reputation
    assert lost > 0
    assert 0 < gained < lost


# --- 6. validation -------------------------------------------------------------------------


def test_each_invalid_operation_is_rejected_with_its_reason_and_the_valid_ones_apply(market):
    scenario = market.load("price_war")  # stochastic; widget costs 10, reference price 20
    assert scenario.demand.mode == "stochastic"
    ceiling = scenario.products[0].reference_price * PRICE_CEILING_FACTOR
    decision = [
        {"op": "set_price", "product": "widget", "price": -5},
        {"op": "set_price", "product": "widget", "price": ceiling + 1},
        {"op": "order", "product": "widget", "quantity": 10_000},
        {"op": "order", "product": "gizmo", "quantity": 1},
        {"op": "order", "product": "widget", "quantity": 2.5},
        {"op": "fly"},
        {"op": "set_price", "product": "widget", "price": 18},
        {"op": "order", "product": "widget", "quantity": 3},
        {"op": "advertise", "amount": 10},
        {"op": "advertise", "amount": -1},
        {"op": "order", "product": "widget", "quantity": -2},
        {"op": "collect"},
        {"op": "set_price", "product": "widget"},
    ]
    expected = {
        0: ["price", "positive"],
        1: ["ceiling"],
        2: ["cash"],
        3: ["unknown product", "gizmo"],
        4: ["whole"],
        5: ["malformed", "fly"],
        9: ["advertising"],
        10: ["quantity", "positive"],
        12: ["malformed", "price"],
    }
    env = MarketEnv(scenario, 2, days=1)
    (day,) = market.run(env, market.constant_policy({"m0": decision}), seed=0)
    record = day["m0"]
    reasons = {r.index: r.reason for r in record.rejections}
    assert set(reasons) == set(expected)
    for index, words in expected.items():
        for word in words:
            assert word in reasons[index], (index, reasons[index])
    assert [op["op"] for op in record.operations] == ["set_price", "order", "advertise", "collect"]
    assert record.prices["widget"] == 18
    assert record.ordered["widget"] == 3
    assert record.advertising == 10
    rejected = {r.index: r.operation for r in record.rejections}
    assert rejected[3]["product"] == "gizmo" and rejected[1]["price"] == ceiling + 1


def test_operations_are_validated_in_order_against_the_cash_left(market):
    scenario = market.load("price_war")  # cash 2000, unit cost 10
    decision = [
        Order(product="widget", quantity=150),
        Order(product="widget", quantity=60),
        Order(product="widget", quantity=50),
    ]
    (day,) = market.run(MarketEnv(scenario, 1, days=1), market.constant_policy({"m0": decision}), seed=0)
    record = day["m0"]
    assert record.ordered["widget"] == 200
    assert [(r.index, "cash" in r.reason) for r in record.rejections] == [(1, True)]


def test_fractional_orders_are_fine_in_expected_mode(market):
    scenario = market.load("logit_game")
    (day,) = market.run(
        MarketEnv(scenario, 1, days=1), market.constant_policy({"m0": [Order(product="good", quantity=2.5)]})
    )
    assert day["m0"].ordered["good"] == 2.5 and not day["m0"].rejections


@pytest.mark.parametrize(
    "garbage",
    [
        pytest.param(g, id=repr(g)[:30])
        for g in [
            "nonsense",
            b"\xff",
            {"operations": 3},
            {"foo": 1},
            {"price": 3},
            {"price": [5.0], "order": "lots"},
            42,
            ("wait",),
        ]
    ],
)
def test_a_malformed_decision_is_one_rejection_and_the_day_goes_on(market, garbage):
    scenario = market.load("price_war")
    (day,) = market.run(MarketEnv(scenario, 2, days=1), market.constant_policy({"m0": garbage}), seed=0)
    record = day["m0"]
    assert not record.operations
    assert len(record.rejections) == 1 and record.rejections[0].index == -1
    assert "malformed" in record.rejections[0].reason
    assert record.prices == day["m1"].prices


def test_decision_shapes_are_equivalent(market):
    scenario = market.load("price_war")
    ops = [
        {"op": "set_price", "product": "widget", "price": 17.5},
        {"op": "order", "product": "widget", "quantity": 4},
    ]
    shapes = [
        ops,
        {"operations": ops},
        {"operations": ops, "note": "cheap"},
        Decision.model_validate({"operations": ops}),
        json.dumps(ops),
        json.dumps({"operations": ops}).encode(),
    ]
    results = []
    for shape in shapes:
        (day,) = market.run(MarketEnv(scenario, 1, days=1), market.constant_policy({"m0": shape}), seed=3)
        results.append((day["m0"].prices, day["m0"].ordered, day["m0"].units_sold, day["m0"].rejections))
    assert all(r == results[0] for r in results)
    assert results[0][0] == {"widget": 17.5} and results[0][1] == {"widget": 4}


def test_a_stated_plan_is_recorded_without_its_unknown_products_and_impossible_prices(market):
    scenario = market.load("multi_product")  # coffee, grinder, filter
    ceiling = scenario.products[0].reference_price * PRICE_CEILING_FACTOR
    plan = [
        {"product": "coffee", "price": 15},
        {"product": "grinder", "price": -1},
        {"product": "filter", "price": float("nan")},
        {"product": "teapot", "price": 9},
        {"product": "coffee", "price": ceiling + 1},
        {"product": "filter"},
        "soon",
    ]
    ops = [{"op": "set_price", "product": "coffee", "price": 14}]
    shapes = {
        "dict": {"operations": ops, "plan": plan},
        "json": json.dumps({"operations": ops, "plan": plan}),
        "decision": Decision.model_validate({"operations": ops, "plan": plan[:5]}),
    }
    for name, shape in shapes.items():
        (day,) = market.run(MarketEnv(scenario, 1, days=1), market.constant_policy({"m0": shape}), seed=0)
        record = day["m0"]
        assert record.plan == {"coffee": 15}, name
        assert not record.rejections and record.prices["coffee"] == 14, name  # a plan is no operation


@pytest.mark.parametrize(
    "decision",
    [
        None,
        [],
        {"operations": []},
        {"operations": [], "plan": None},
        {"operations": [], "plan": "x"},
        {"plan": [{"product": "widget", "price": 5}]},
    ],
)
def test_no_plan_is_an_empty_plan(market, decision):
    (day,) = market.run(
        MarketEnv(market.load("price_war"), 1, days=1), market.constant_policy({"m0": decision}), seed=0
    )
    assert day["m0"].plan == {}


def test_array_actions_from_the_action_space_apply(market):
    scenario = market.load("multi_product")
    env = MarketEnv(scenario, 1, days=1)
    action = {
        "price": np.array([14.0, 40.0, 4.0], np.float32),
        "order": np.array([3.7, 0.0, 2.0], np.float32),
        "advertise": np.array([5.0], np.float32),
    }
    (day,) = market.run(env, market.constant_policy({"m0": action}), seed=0)
    record = day["m0"]
    assert record.prices == {"coffee": 14.0, "grinder": 40.0, "filter": 4.0}
    assert record.ordered == {"coffee": 3.0, "grinder": 0.0, "filter": 2.0}
    assert record.advertising == 5.0


# --- 7. lead times and credit --------------------------------------------------------------


@pytest.mark.parametrize("order_day", [1, 4])
def test_an_order_arrives_after_its_lead_time(market, order_day):
    scenario = market.load("multi_product")
    quantities = {"coffee": 10, "grinder": 3, "filter": 7}
    leads = {p.id: p.lead_time for p in scenario.products}
    assert len(set(leads.values())) > 1 and min(leads.values()) > 0

    def policy(merchant, obs):
        return [Order(product=p, quantity=q) for p, q in quantities.items()] if obs.day == order_day else []

    policy, seen = watching(market.constant_policy(policy))
    days = order_day + max(leads.values()) + 1
    history = market.run(MarketEnv(scenario, 2, days=days), policy, seed=1)
    for pid, lead in leads.items():
        q = quantities[pid]
        for day in range(order_day, days + 1):
            record = history[day - 1]["m0"]
            in_transit_now = q if order_day <= day < order_day + lead else 0
            assert record.arrived[pid] == (q if day == order_day + lead else 0), (pid, day)
            assert record.in_transit[pid] == in_transit_now, (pid, day)
            if day > order_day:  # the observation at the start of the day
                assert state_of(seen[day - 1]["m0"], pid).in_transit == (q if day <= order_day + lead else 0)
        assert history[order_day - 1]["m0"].ordered[pid] == q
        arrival = history[order_day + lead - 1]["m0"]
        before = history[order_day + lead - 2]["m0"]
        assert arrival.inventory[pid] == before.inventory[pid] + q - arrival.units_sold[pid]


def test_zero_lead_time_stock_is_sold_the_same_day(market):
    scenario = market.vary(market.load("price_war"), **{"products.initial_stock": 0})
    (day,) = market.run(
        MarketEnv(scenario, 1, days=1),
        market.constant_policy({"m0": [Order(product="widget", quantity=30)]}),
        seed=2,
    )
    assert day["m0"].units_sold["widget"] > 0 and day["m0"].in_transit["widget"] == 0


def test_credit_sales_fall_due_after_credit_days_and_collect_takes_exactly_the_due(market):
    scenario = market.load("multi_product")
    f = scenario.finance
    assert f.credit_share > 0 and f.credit_days > 1
    collect_day = f.credit_days + 6

    def policy(merchant, obs):
        return [{"op": "collect"}, {"op": "collect"}] if obs.day == collect_day else [{"op": "wait"}]

    policy, seen = watching(market.constant_policy(policy))
    history = market.run(MarketEnv(scenario, 2, days=collect_day + 3), policy, seed=4)
    credit = [
        day["m0"].revenue - day["m0"].revenue_cash for day in history
    ]  # credit sold on day d is credit[d-1]
    assert sum(credit[:collect_day]) > 0
    for day in range(1, collect_day + 1):
        obs = seen[day - 1]["m0"]
        due = sum(credit[d - 1] for d in range(1, day) if d + f.credit_days <= day)
        pending = sum(credit[d - 1] for d in range(1, day) if d + f.credit_days > day)
        assert obs.receivables_due == pytest.approx(due, rel=1e-12, abs=1e-9), day
        assert obs.receivables_pending == pytest.approx(pending, rel=1e-12, abs=1e-9), day
        if day < collect_day:
            assert history[day - 1]["m0"].collected == 0
    collecting = history[collect_day - 1]["m0"]
    assert collecting.collected == seen[collect_day - 1]["m0"].receivables_due > 0
    assert len(collecting.operations) == 2  # the second collect is valid and takes nothing more
    after = seen[collect_day]["m0"]
    assert after.receivables_due == pytest.approx(credit[collect_day - f.credit_days], rel=1e-12)


def test_credit_with_zero_credit_days_is_due_the_next_morning(market):
    scenario = market.vary(market.load("multi_product"), **{"finance.credit_days": 0})
    policy, seen = watching(
        market.constant_policy(lambda m, obs: [{"op": "collect"}] if obs.day == 2 else [])
    )
    history = market.run(MarketEnv(scenario, 1, days=2), policy, seed=0)
    first = history[0]["m0"]
    assert first.receivables == pytest.approx(first.revenue * scenario.finance.credit_share)
    assert seen[1]["m0"].receivables_due == first.receivables and seen[1]["m0"].receivables_pending == 0
    assert history[1]["m0"].collected == first.receivables


def test_bad_debt_is_written_off_as_credit_is_sold_and_costs_net_worth_what_it_writes_off(market):
    """A quarter of credit sales never paid: day 1's credit sales less that quarter are the
    receivables, the quarter is the day's bad debt, and net worth ends lower than in the same
    match with every sale paid by exactly the bad debt (nothing else differs: customers
    choose by price and reputation, not by how they pay)."""
    paying = market.vary(market.load("multi_product"), **{"finance.credit_days": 0})
    defaulting = market.vary(paying, **{"finance.bad_debt_share": 0.25})
    policy = market.constant_policy(lambda m, obs: [])
    paid, unpaid = (market.run(MarketEnv(s, 1, days=2), policy, seed=0) for s in (paying, defaulting))
    first, lost = paid[0]["m0"], unpaid[0]["m0"]
    on_credit = first.revenue * paying.finance.credit_share
    assert on_credit > 0 and lost.revenue == first.revenue
    assert lost.bad_debt == pytest.approx(0.25 * on_credit) and first.bad_debt == 0
    assert lost.receivables == pytest.approx(0.75 * on_credit)
    assert first.net_worth - lost.net_worth == pytest.approx(lost.bad_debt)


# --- 8. events -----------------------------------------------------------------------------


@scenarios_where(lambda s: any(e.kind == "demand" for e in s.events))
def test_a_demand_event_multiplies_the_market_size(market, scenario):
    plenty = {
        "demand.mode": "expected",
        "products.initial_stock": 1e6,
        "products.holding_cost": 0,
        "finance.fixed_daily_cost": 0,
    }
    with_events = market.vary(scenario, **plenty)
    without = market.vary(scenario, events=[], **plenty)
    runs = [market.run(MarketEnv(s, 2), market.constant_policy({})) for s in (with_events, without)]
    moved = 0
    for day, (a, b) in enumerate(zip(*runs), start=1):
        for product in scenario.products:
            multiplier = math.prod(
                (  # a step in force, or a trend: a straight line from 1 to its multiplier, then level
                    e.multiplier
                    if e.shape == "step"
                    else 1
                    + (e.multiplier - 1) * min(1.0, (day - e.start_day) / max(1, e.end_day - e.start_day))
                )
                for e in scenario.events
                if e.kind == "demand"
                and e.start_day <= day
                and (day <= e.end_day or e.shape == "trend")
                and e.product in (None, product.id)
            )
            ratio = sum(r.first_choice[product.id] for r in a.values()) / sum(
                r.first_choice[product.id] for r in b.values()
            )
            assert ratio == pytest.approx(multiplier, rel=1e-9), (day, product.id)
            moved += multiplier != 1
    assert moved > 0


@scenarios_where(lambda s: any(e.kind == "cost" for e in s.events))
def test_a_cost_event_changes_unit_cost_on_its_days(market, scenario):
    policy, seen = watching(
        market.constant_policy(lambda m, obs: [Order(product=p.id, quantity=1) for p in scenario.products])
    )
    history = market.run(MarketEnv(scenario, 1), policy, seed=0)
    assert len(history) == scenario.days
    changed = 0
    for day, observations in enumerate(seen, start=1):
        obs = observations["m0"]
        for product in scenario.products:
            cost = market.expected_unit_cost(scenario, product.id, day)
            assert state_of(obs, product.id).unit_cost == pytest.approx(cost, rel=1e-12)
            changed += cost != product.unit_cost
            assert history[day - 1]["m0"].unit_cost[product.id] == pytest.approx(
                cost, rel=1e-12
            )  # what orders cost
    assert changed > 0


@scenarios_where(lambda s: bool(s.events))
def test_events_are_announced_ahead_and_unannounced_ones_never_shown(market, scenario):
    policy, seen = watching(market.constant_policy({}))
    market.run(MarketEnv(scenario, 1), policy, seed=0)
    shown_days: dict[str, list[int]] = {e.name: [] for e in scenario.events}
    for day, observations in enumerate(seen, start=1):
        for notice in observations["m0"].events:
            shown_days[notice.name].append(day)
            event = next(e for e in scenario.events if e.name == notice.name)
            assert (notice.kind, notice.start_day, notice.end_day, notice.multiplier, notice.product) == (
                event.kind,
                event.start_day,
                event.end_day,
                event.multiplier,
                event.product,
            )
    for event in scenario.events:
        if not event.announced:
            assert shown_days[event.name] == [], f"{event.name} is unannounced but was shown"
        else:
            first = max(event.start_day - event.announce_days_ahead, 1)
            assert shown_days[event.name] == list(range(first, min(event.end_day, scenario.days) + 1)), (
                event.name
            )


def test_seasonal_scenario_announces_and_hides_as_documented(market):
    scenario = market.load("seasonal")
    policy, seen = watching(market.constant_policy({}))
    market.run(MarketEnv(scenario, 1), policy, seed=0)
    names = {day: {n.name for n in obs["m0"].events} for day, obs in enumerate(seen, start=1)}
    peak = next(e for e in scenario.events if e.name == "holiday peak")
    assert peak.announce_days_ahead > 0
    assert "holiday peak" not in names[peak.start_day - peak.announce_days_ahead - 1]
    assert "holiday peak" in names[peak.start_day - peak.announce_days_ahead]
    assert not any("wool shortage" in shown for shown in names.values())
    shortage = next(e for e in scenario.events if e.name == "wool shortage")
    assert state_of(seen[shortage.start_day - 1]["m0"], "scarf").unit_cost == pytest.approx(12.0 * 1.6)
    assert state_of(seen[shortage.start_day - 2]["m0"], "scarf").unit_cost == 12.0


# --- 9. bankruptcy -------------------------------------------------------------------------


def test_a_merchant_whose_cash_goes_negative_is_terminated_and_the_rest_play_on(market):
    scenario = market.load("price_war")
    product = scenario.products[0]
    ceiling = product.reference_price * PRICE_CEILING_FACTOR

    def policy(merchant, obs):
        if merchant == "m0":  # spend every penny on stock nobody will buy at the ceiling price
            return [
                SetPrice(product=product.id, price=ceiling),
                Order(product=product.id, quantity=math.floor(obs.cash / product.unit_cost)),
            ]
        return [Order(product=product.id, quantity=5)]

    env = MarketEnv(scenario, 3)
    observations, _ = env.reset(seed=0)
    observations, rewards, terminations, truncations, infos = env.step(
        market.constant_policy(policy)(observations)
    )
    first = infos["m0"]["record"]
    assert first.cash_end < 0 and first.bankrupt and terminations["m0"]
    assert not truncations["m0"]
    assert env.agents == ["m1", "m2"]

    history = market.run(env, market.constant_policy(policy), seed=0)  # replays day 1 with full checks
    assert history[0]["m0"].bankrupt
    assert all(set(day) == {"m1", "m2"} for day in history[1:])
    assert len(history) == scenario.days
    assert "m0" not in env.agents

    # the bankrupt merchant's late decisions are ignored, it shows as bankrupt, the last day truncates
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(market.constant_policy(policy)(obs))
    for _ in range(scenario.days - 1):
        actions = {a: [] for a in env.agents} | {
            "m0": [{"op": "order", "product": product.id, "quantity": 1}]
        }
        obs, rewards, terminations, truncations, infos = env.step(actions)
        assert "m0" not in infos and "m0" not in obs
        board = {m.merchant: m for m in obs["m1"].market}
        assert board["m0"].bankrupt and not board["m1"].bankrupt
    assert truncations == {"m1": True, "m2": True}
    assert env.agents == []
