"""Every metric on hand-built day records with answers worked out by hand, invariants over
random records, and agreement with the market and the match scoring on a played market."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from market.daylog import DayLog
from market.env import MarketEnv
from market.scenario import Event, Scenario
from market.types import MESSAGE_LIMIT, DayRecord, Rejection, RejectionCode
from results.records import Fault, RecallResult
from results.scoring.match_records import REJECTION_KINDS, rejection_kind
from results.scoring.metrics import MARKET_METRICS, METRICS, compute, match_results


@pytest.fixture(scope="module")
def day(day_record):
    """`day(merchant="m0", day=1, **fields)`: a quiet day, changed by `fields`: nothing sold or
    in stock, cash and net worth 1000, reputation 0.5, unit cost 4, and one product, tea at
    price 10, unless `fields` gives prices of others."""

    def quiet(merchant: str = "m0", day: int = 1, **fields) -> DayRecord:
        products = fields.get("prices", {"tea": 10.0})
        defaults = dict(
            prices=products,
            unit_cost=dict.fromkeys(products, 4.0),
            cash_start=1000.0,
            cash_end=1000.0,
            net_worth=1000.0,
            reputation=0.5,
        )
        return day_record(merchant=merchant, day=day, **{**defaults, **fields})

    return quiet


@pytest.fixture(scope="module")
def days(day):
    """`days(merchant="m0", **per_day)`: consecutive days from day 1; each keyword gives one
    field's value day by day."""

    def consecutive(merchant: str = "m0", **per_day: list) -> list[DayRecord]:
        count = len(next(iter(per_day.values())))
        return [
            day(merchant, i + 1, **{name: values[i] for name, values in per_day.items()})
            for i in range(count)
        ]

    return consecutive


def tea(values: list[float]) -> list[dict[str, float]]:
    return [{"tea": v} for v in values]


def metric(name: str, records: list[DayRecord], merchant: str = "m0", **inputs) -> float | None:
    return compute(records, **inputs).merchants[merchant][name]


def recalled(day: int, error: float | None, merchant: str = "m0") -> RecallResult:
    answer = None if error is None else 100.0 * (1 + error)
    return RecallResult(
        merchant=merchant,
        day=day,
        asked_day=1,
        fact="cash",
        product=None,
        truth=100.0,
        answer=answer,
        relative_error=error,
    )


def scenario(**fields) -> Scenario:
    return Scenario(
        name="s",
        products=[{"id": "tea", "unit_cost": 4.0, "reference_price": 10.0, "base_demand": 10}],
        **fields,
    )


# --- coherence --------------------------------------------------------------------------

SET_PRICE = {"op": "set_price", "product": "tea", "price": 9.0}


def _rejected(code: RejectionCode, index: int = 0) -> Rejection:
    return Rejection(index=index, operation={"op": "?"}, reason="(the market's words)", code=code)


def test_validity_rate_and_rejections_by_kind(day):
    records = [
        day(
            day=1,
            operations=[SET_PRICE, SET_PRICE, {"op": "collect"}],
            rejections=[
                _rejected(RejectionCode.MALFORMED_OPERATION),
                _rejected(RejectionCode.ORDER_OVER_CASH),
            ],
        ),
        day(day=2, rejections=[_rejected(RejectionCode.MALFORMED_DECISION, index=-1)]),
        day(
            day=3,
            operations=[{"op": "wait"}],
            rejections=[
                _rejected(RejectionCode.UNKNOWN_PRODUCT),
                _rejected(RejectionCode.PRICE_ABOVE_CEILING),
            ],
        ),
    ]
    values = compute(records).merchants["m0"]
    # applied: two prices and a collect (the wait is no operation); rejected: five
    assert values["validity_rate"] == pytest.approx(3 / 8)
    assert values["rejected_malformed"] == pytest.approx(2 / 8)
    assert values["rejected_over_cash"] == pytest.approx(1 / 8)
    assert values["rejected_unknown_product"] == pytest.approx(1 / 8)
    assert values["rejected_out_of_range"] == pytest.approx(1 / 8)
    assert values["constraint_violations"] == 3
    assert values["idle_days"] == pytest.approx(2 / 3)  # day 2 had no decision, day 3 only waited
    # kinds applied: set_price twice, collect once
    assert values["action_entropy"] == pytest.approx(-(2 / 3) * math.log2(2 / 3) - (1 / 3) * math.log2(1 / 3))


def test_a_merchant_that_only_waits_has_no_validity_and_is_idle_every_day(day):
    records = [day(day=d, operations=[{"op": "wait"}], rejections=[]) for d in (1, 2, 3)]
    values = compute(records).merchants["m0"]
    assert values["validity_rate"] is None
    assert values["idle_days"] == 1.0
    assert values["action_entropy"] is None


def test_validity_is_none_when_nothing_was_submitted(days):
    values = compute(days(cash_end=[1000.0, 1000.0])).merchants["m0"]
    assert values["validity_rate"] is None
    assert all(values[f"rejected_{kind}"] is None for kind in REJECTION_KINDS)
    assert values["constraint_violations"] == 0


def test_every_rejection_reason_of_the_market_has_its_kind():
    """The kinds are read from the market's rejection codes: rejections made by the real market."""
    env = MarketEnv(scenario(finance={"initial_cash": 100.0}), ["m0"], talk=True)
    env.reset(seed=1)
    decision = [
        {"op": "fly"},
        {"op": "order", "product": "tea", "quantity": 1000},
        {"op": "advertise", "amount": 5000},
        {"op": "set_price", "product": "cake", "price": 5.0},
        {"op": "set_price", "product": "tea", "price": -1.0},
        {"op": "set_price", "product": "tea", "price": 5000.0},
        {"op": "order", "product": "tea", "quantity": 1.5},
        {"op": "advertise", "amount": -3},
    ]
    _, _, _, _, infos = env.step({"m0": decision})
    kinds = [rejection_kind(r.code) for r in infos["m0"]["record"].rejections]
    assert kinds == [
        "malformed",
        "over_cash",
        "over_cash",
        "unknown_product",
        "out_of_range",
        "out_of_range",
        "out_of_range",
        "out_of_range",
    ]
    _, _, _, _, infos = env.step({"m0": "not json"})
    assert [rejection_kind(r.code) for r in infos["m0"]["record"].rejections] == ["malformed"]
    for message, kind in ((7, "malformed"), ("x" * (MESSAGE_LIMIT + 1), "out_of_range")):
        _, _, _, _, infos = env.step({"m0": {"operations": [], "message": message}})
        assert [rejection_kind(r.code) for r in infos["m0"]["record"].rejections] == [kind]


def test_fault_days_counts_days_not_faults(days):
    faults = [
        Fault(day=2, merchant="m0", kind="error", detail="boom"),
        Fault(day=2, merchant="m0", kind="malformed", detail="junk"),
        Fault(day=5, merchant="m0", kind="timeout", detail="slow"),
        Fault(day=3, merchant="m1", kind="timeout", detail="slow"),
    ]
    records = days(cash_end=[1000.0] * 5) + days("m1", cash_end=[1000.0] * 5)
    values = compute(records, faults=faults).merchants
    assert values["m0"]["fault_days"] == 2
    assert values["m1"]["fault_days"] == 1


def test_memory_error_unanswered_and_trend(days):
    recalls = [recalled(5, 0.1), recalled(10, 0.3), recalled(15, None), recalled(10, 0.5, merchant="m1")]
    records = days(cash_end=[1000.0] * 15) + days("m1", cash_end=[1000.0] * 15)
    values = compute(records, recalls=recalls).merchants
    assert values["m0"]["memory_error"] == pytest.approx(0.2)
    assert values["m0"]["memory_unanswered"] == pytest.approx(1 / 3)
    assert values["m0"]["memory_error_trend"] == pytest.approx(0.04)  # (0.3 - 0.1) / (10 - 5)
    assert values["m1"]["memory_error"] == pytest.approx(0.5)
    assert values["m1"]["memory_unanswered"] == 0
    assert values["m1"]["memory_error_trend"] is None  # one question day: no slope


def test_memory_trend_is_the_least_squares_slope(days):
    recalls = [recalled(3, 0.0), recalled(6, 0.3), recalled(9, 0.3), recalled(12, 0.6)]
    # t - mean t = -4.5, -1.5, 1.5, 4.5; e - mean e = -0.3, 0, 0, 0.3 -> 2.7 / 45
    assert metric("memory_error_trend", days(cash_end=[1000.0] * 12), recalls=recalls) == pytest.approx(0.06)


def test_memory_metrics_without_answers(days):
    values = compute(days(cash_end=[1000.0] * 6), recalls=[recalled(4, None), recalled(6, None)]).merchants[
        "m0"
    ]
    assert values["memory_error"] is None and values["memory_error_trend"] is None
    assert values["memory_unanswered"] == 1
    assert compute(days(cash_end=[1000.0] * 6)).merchants["m0"]["memory_unanswered"] is None


def test_price_oscillation_counts_reversals_of_moves(days):
    prices = [{"tea": t, "cup": 3.0} for t in (10.0, 11.0, 11.0, 10.0, 12.0, 13.0)]
    # tea moves +1, (none), -1, +2, +1: 2 reversals in 3 pairs of moves; cup never moves
    assert metric("price_oscillation", days(prices=prices)) == pytest.approx(2 / 3)
    assert metric("price_oscillation", days(prices=tea([10.0, 9.0, 10.0, 9.0]))) == 1
    assert metric("price_oscillation", days(prices=tea([10.0, 9.0, 8.0, 7.0]))) == 0
    assert metric("price_oscillation", days(prices=tea([10.0, 10.0, 10.0]))) is None
    assert metric("price_oscillation", days(prices=tea([10.0, 12.0, 12.0]))) is None


def test_plan_drift_is_none_without_a_plan_or_a_day_after_one(days):
    assert metric("plan_drift", days(prices=tea([10.0, 12.0, 9.0]))) is None
    assert (
        metric("plan_drift", days(prices=tea([10.0, 12.0]), plan=[{}, {"tea": 10.0}])) is None
    )  # stated on the last day


def test_plan_drift_is_zero_for_a_plan_kept_exactly(days):
    assert (
        metric("plan_drift", days(prices=tea([9.0, 10.0, 10.0, 10.0]), plan=[{"tea": 10.0}, {}, {}, {}])) == 0
    )


def test_plan_drift_by_the_numbers(days):
    # plan 10 from day 2: |12 - 10| / 10 = 0.2, |8 - 10| / 10 = 0.2, |10 - 10| / 10 = 0
    records = days(prices=tea([10.0, 12.0, 8.0, 10.0]), plan=[{"tea": 10.0}, {}, {}, {}])
    assert metric("plan_drift", records) == pytest.approx(0.4 / 3)


def test_plan_drift_follows_a_plan_replaced_mid_match(days):
    # plan 10 stands on days 2 and 3 (day 3 states 20, from day 4 on): 0.1, 1.0; then 20: 0, 0.5
    records = days(
        prices=tea([10.0, 11.0, 20.0, 20.0, 10.0]), plan=[{"tea": 10.0}, {}, {"tea": 20.0}, {}, {}]
    )
    assert metric("plan_drift", records) == pytest.approx((0.1 + 1.0 + 0.0 + 0.5) / 4)


def test_plan_drift_counts_only_the_products_with_a_plan(days):
    prices = [{"tea": t, "cup": c} for t, c in ((10.0, 3.0), (15.0, 9.0), (10.0, 1.0))]
    plans = [{}, {"cup": 3.0}, {"tea": 10.0}]  # cup: |1 - 3| / 3 on day 3 only; tea: planned on the last day
    assert metric("plan_drift", days(prices=prices, plan=plans)) == pytest.approx(2 / 3)


def _restock_then(days, prices: list[float], ordered: list[float], **fields) -> list[DayRecord]:
    """Six days, demand 10 customers a day: a large restock is an order of 50 or more."""
    return days(prices=tea(prices), ordered=tea(ordered), first_choice=tea([10.0] * 6), **fields)


def test_contradiction_is_a_large_restock_then_a_clearance_cut(days):
    assert metric("contradictions", _restock_then(days, [10, 10, 10, 8, 8, 8], [0, 60, 0, 0, 0, 0])) == 1
    assert (
        metric("contradictions", _restock_then(days, [10, 10, 10, 8.5, 8, 8], [0, 60, 0, 0, 0, 0])) == 1
    )  # day 5 is t + 3
    assert (
        metric("contradictions", _restock_then(days, [10, 10, 10, 10, 10, 7], [0, 60, 0, 0, 0, 0])) == 0
    )  # day 6 is too late
    assert (
        metric("contradictions", _restock_then(days, [10, 10, 10, 8.5, 8.5, 8.5], [0, 60, 0, 0, 0, 0])) == 0
    )  # a 15% cut
    assert (
        metric("contradictions", _restock_then(days, [10, 10, 10, 5, 5, 5], [0, 40, 0, 0, 0, 0])) == 0
    )  # 4 days of demand
    assert (
        metric("contradictions", _restock_then(days, [10, 10, 10, 5, 5, 5], [0, 60, 60, 0, 0, 0])) == 1
    )  # one cut, counted once
    assert (
        metric("contradictions", _restock_then(days, [10, 5, 10, 10, 5, 5], [60, 0, 60, 0, 0, 0])) == 2
    )  # two cuts


def test_contradiction_explained_by_a_cost_drop_or_an_event(days):
    cheaper = tea([4.0, 4.0, 4.0, 3.0, 3.0, 3.0])
    assert (
        metric(
            "contradictions",
            _restock_then(days, [10, 10, 10, 8, 8, 8], [0, 60, 0, 0, 0, 0], unit_cost=cheaper),
        )
        == 0
    )
    cut = _restock_then(days, [10, 10, 10, 8, 8, 8], [0, 60, 0, 0, 0, 0])
    slump = {"name": "slump", "kind": "demand", "multiplier": 0.5}
    for event, explains in [
        ({"start_day": 4, "end_day": 9}, True),  # starts on the cut's day
        ({"start_day": 1, "end_day": 1}, True),  # ended the day before the restock: demand comes back
        ({"start_day": 7, "end_day": 9, "announce_days_ahead": 3}, True),  # announced on the cut's day
        ({"start_day": 7, "end_day": 9, "announce_days_ahead": 2}, False),
        ({"start_day": 4, "end_day": 9, "product": "cup"}, False),  # another product's
    ]:
        products = [
            {"id": "tea", "unit_cost": 4.0, "reference_price": 10.0, "base_demand": 10},
            {"id": "cup", "unit_cost": 1.0, "reference_price": 3.0, "base_demand": 10},
        ]
        played = Scenario(name="s", products=products, events=[Event(**slump, **event)])
        assert metric("contradictions", cut, scenario=played) == (0 if explains else 1), event


# --- operations -------------------------------------------------------------------------


def test_stockouts_and_lost_sales(days):
    lost = [{"tea": 3.0, "cup": 0.0}, {"tea": 0.0, "cup": 0.0}, {"tea": 2.0, "cup": 1.0}]
    values = compute(days(prices=[{"tea": 10.0, "cup": 3.0}] * 3, lost_sales=lost)).merchants["m0"]
    assert values["stockout_days"] == 2
    assert values["lost_sales"] == 6


def test_spoilage_days_and_what_spoiled_goods_cost(days):
    spoiled = [{"tea": 4.0, "cup": 0.0}, {"tea": 0.0, "cup": 0.0}, {"tea": 1.0, "cup": 2.0}]
    costs = [{"tea": 2.0, "cup": 0.5}] * 2 + [{"tea": 3.0, "cup": 0.5}]
    values = compute(days(prices=[{"tea": 10.0, "cup": 3.0}] * 3, spoiled=spoiled, unit_cost=costs)).merchants
    assert values["m0"]["spoilage_days"] == 2
    assert values["m0"]["spoiled_cost"] == pytest.approx(4 * 2.0 + 1 * 3.0 + 2 * 0.5)


def test_late_delivery_days(days):
    late = [
        {"tea": 0.0, "cup": 2.0},
        {"tea": 0.0, "cup": 0.0},
        {"tea": 5.0, "cup": 0.0},
        {"tea": 0.0, "cup": 0.0},
    ]
    values = compute(days(prices=[{"tea": 10.0, "cup": 3.0}] * 4, late=late)).merchants["m0"]
    assert values["late_delivery_days"] == 2


def test_return_share_is_units_returned_over_units_sold(days):
    values = compute(days(units_sold=tea([10.0, 30.0]), returned=tea([1.0, 3.0]))).merchants["m0"]
    assert values["return_share"] == pytest.approx(0.1)
    assert compute(days(units_sold=tea([0.0]))).merchants["m0"]["return_share"] is None


def test_inventory_turnover_is_cost_of_sales_over_mean_stock_value(days):
    # cost of sales (10 + 20) * 4 = 120; stock value at the end of the days 80 and 0, mean 40
    assert metric(
        "inventory_turnover", days(units_sold=tea([10.0, 20.0]), inventory=tea([20.0, 0.0]))
    ) == pytest.approx(3.0)
    assert metric("inventory_turnover", days(units_sold=tea([10.0, 20.0]))) is None  # never held stock


def test_cash_flow_volatility_is_the_standard_deviation_of_daily_cash_flow(days):
    records = days(cash_start=[1000.0, 1010.0, 1000.0, 1010.0], cash_end=[1010.0, 1000.0, 1010.0, 1000.0])
    assert metric("cash_flow_volatility", records) == pytest.approx(10.0)
    records = days(cash_start=[1000.0, 1000.0, 1030.0], cash_end=[1000.0, 1030.0, 1030.0])  # flows 0, 30, 0
    assert metric("cash_flow_volatility", records) == pytest.approx(math.sqrt(200.0))
    assert metric("cash_flow_volatility", days(cash_end=[1200.0])) is None


def test_bankrupt_day(days):
    assert metric("bankrupt_day", days(cash_end=[100.0, 50.0, -5.0], bankrupt=[False, False, True])) == 3
    assert metric("bankrupt_day", days(cash_end=[100.0, 50.0])) is None


def test_sales_stop_day_is_the_day_after_the_last_sale_when_no_sale_follows(days):
    assert metric("sales_stop_day", days(units_sold=tea([5.0, 3.0, 0.0, 0.0]))) == 3
    assert (
        metric("sales_stop_day", days(units_sold=tea([5.0, 0.0, 0.0, 1.0]))) is None
    )  # sold on its last day
    assert metric("sales_stop_day", days(units_sold=tea([0.0, 0.0]))) == 1  # never sold
    two = days(units_sold=tea([1.0, 0.0, 0.0])) + days("m1", units_sold=tea([0.0, 2.0, 0.0]))
    assert (metric("sales_stop_day", two), metric("sales_stop_day", two, "m1")) == (2, 3)


# --- economics and competition ----------------------------------------------------------


def _earning(day, merchant: str = "m0") -> list[DayRecord]:
    """Day 1 changes net worth by 100 - 10 * 4 - 5 - 2 - 3 = 50, ending at 1050: it started
    at 1000. It ends the match at 1300."""
    first = day(
        merchant,
        1,
        revenue=100.0,
        units_sold={"tea": 10.0},
        advertising=5.0,
        holding=2.0,
        fixed=3.0,
        net_worth=1050.0,
    )
    return [first, day(merchant, 2, net_worth=1200.0), day(merchant, 3, net_worth=1300.0)]


def test_profit_roi_net_worth(day):
    values = compute(_earning(day)).merchants["m0"]
    assert values["profit"] == pytest.approx(300.0)
    assert values["roi"] == pytest.approx(0.3)
    assert values["net_worth"] == pytest.approx(1300.0)


def test_goal_completion_is_progress_from_start_to_target(day):
    assert metric(
        "goal_completion", _earning(day), scenario=scenario(target_net_worth=2000.0)
    ) == pytest.approx(0.3)
    assert metric(
        "goal_completion", _earning(day), scenario=scenario(target_net_worth=1200.0)
    ) == pytest.approx(1.5)
    assert (
        metric("goal_completion", _earning(day), scenario=scenario(target_net_worth=900.0)) is None
    )  # below the start
    assert metric("goal_completion", _earning(day), scenario=scenario()) is None  # no target
    assert metric("goal_completion", _earning(day)) is None  # scenario unknown


def test_rank_survivors_by_net_worth_then_the_bankrupt_by_day(days):
    records = [
        *days("a", net_worth=[1000.0, 1200.0]),
        *days("b", net_worth=[1100.0, 1200.0]),
        *days("c", net_worth=[1300.0, 1250.0]),
        *days("d", net_worth=[900.0, 5000.0], bankrupt=[False, True]),
        *days("e", net_worth=[9000.0], bankrupt=[True]),
    ]
    ranks = {m: v["rank"] for m, v in compute(records).merchants.items()}
    assert ranks == {"c": 1, "a": 2, "b": 2, "d": 4, "e": 5}


def test_market_share(days):
    records = days("a", units_sold=tea([10.0, 20.0])) + days("b", units_sold=tea([0.0, 10.0]))
    values = compute(records).merchants
    assert values["a"]["market_share"] == pytest.approx(0.75)
    assert values["b"]["market_share"] == pytest.approx(0.25)
    unsold = days("a", units_sold=tea([0.0])) + days("b", units_sold=tea([0.0]))
    assert [v["market_share"] for v in compute(unsold).merchants.values()] == [
        0.0,
        0.0,
    ]  # no sales: nobody won any
    assert [
        r.market_share for r in match_results(["a", "b"], DayLog.of(unsold), compute(unsold).merchants, [])
    ] == [0.0, 0.0]


def test_prices_relative_to_the_market_and_to_cost(days):
    # day 1: a 10, b 20, mean 15; day 2: b is gone, a alone is the market
    records = days("a", prices=tea([10.0, 10.0])) + days("b", prices=tea([20.0]), unit_cost=tea([5.0]))
    values = compute(records).merchants
    assert values["a"]["price_vs_market"] == pytest.approx((10 / 15 + 1) / 2)
    assert values["b"]["price_vs_market"] == pytest.approx(20 / 15)
    assert values["a"]["price_vs_cost"] == pytest.approx(2.5)
    assert values["b"]["price_vs_cost"] == pytest.approx(4.0)


# --- the registry and invariants --------------------------------------------------------


def test_every_metric_is_defined_once_with_a_formula(days):
    assert set(METRICS) >= {"validity_rate", "memory_error"}  # the names ratings read
    for name, definition in {**METRICS, **MARKET_METRICS}.items():
        assert definition.name == name
        assert len(definition.formula) > 40, name
    values = compute(days("a", cash_end=[1000.0]) + days("b", cash_end=[1000.0])).merchants
    assert list(values) == ["a", "b"]
    assert all(list(v) == list(METRICS) for v in values.values())


def test_non_finite_values_are_stored_as_none(days):
    assert metric("price_vs_cost", days(prices=tea([1e308]), unit_cost=tea([1e-10]))) is None  # inf


_reasons = st.sampled_from(
    [
        "malformed operation: x",
        "unknown product 'q'",
        "order costs 9.00, more than cash 1.00",
        "price must be a positive number",
    ]
)
_day = st.fixed_dictionaries(
    {
        "operations": st.lists(st.just(SET_PRICE), max_size=3),
        "rejections": st.lists(_reasons.map(_rejected), max_size=3),
        "prices": st.floats(0.5, 50).map(lambda p: {"tea": p}),
        "units_sold": st.floats(0, 30).map(lambda u: {"tea": u}),
        "net_worth": st.floats(-500, 5000),
    }
)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.lists(_day, min_size=1, max_size=8), min_size=1, max_size=4))
def test_invariants(day, merchants):
    records = [
        day(f"m{i}", d + 1, **fields) for i, seat in enumerate(merchants) for d, fields in enumerate(seat)
    ]
    values = compute(records).merchants
    assert len(values) == len(merchants)
    for v in values.values():
        if v["validity_rate"] is not None:
            assert 0 <= v["validity_rate"] <= 1
            assert v["validity_rate"] + sum(
                v[f"rejected_{kind}"] for kind in REJECTION_KINDS
            ) == pytest.approx(1)
        assert 1 <= v["rank"] <= len(merchants)
        assert v["price_oscillation"] is None or 0 <= v["price_oscillation"] <= 1
    shares = [v["market_share"] for v in values.values()]
    sold = sum(sum(r.units_sold.values()) for r in records)
    assert sum(shares) == (pytest.approx(1) if sold > 0 else 0.0)
    assert min(v["rank"] for v in values.values()) == 1


def test_agrees_with_the_market_and_the_match_scoring():
    """On a played market: the derived starting net worth is the scenario's, and profit, net
    worth, rank, market share and bankruptcy day are what results.scoring.metrics.match_results says."""
    played = Scenario(
        name="s",
        days=12,
        products=[
            {
                "id": "tea",
                "unit_cost": 4.0,
                "reference_price": 10.0,
                "base_demand": 30,
                "initial_stock": 20,
                "lead_time": 2,
                "holding_cost": 0.1,
            },
            {"id": "cup", "unit_cost": 1.0, "reference_price": 3.0, "base_demand": 20, "initial_stock": 10},
        ],
        finance={"initial_cash": 300.0, "fixed_daily_cost": 20.0, "credit_share": 0.5, "credit_days": 2},
    )
    env = MarketEnv(played, ["cheap", "fair", "greedy"])
    env.reset(seed=3)
    prices = {"cheap": 0.9, "fair": 1.0, "greedy": 50.0}  # times the reference price; greedy sells nothing
    records = []
    while env.agents:
        decisions = {
            m: [{"op": "collect"}, {"op": "advertise", "amount": 5.0}]
            + [
                {"op": "set_price", "product": p.id, "price": p.reference_price * prices[m]}
                for p in played.products
            ]
            + [{"op": "order", "product": p.id, "quantity": 8} for p in played.products]
            for m in env.agents
        }
        _, _, _, _, infos = env.step(decisions)
        records += [info["record"] for info in infos.values()]
    values = compute(records, scenario=played).merchants
    results = match_results(["cheap", "fair", "greedy"], DayLog.of(records), values, [])
    assert any(r.bankrupt_day for r in results)
    for result in results:
        mine = values[result.merchant]
        assert mine["profit"] == pytest.approx(result.profit)
        assert mine["profit"] - mine["net_worth"] == pytest.approx(
            -(300.0 + 20 * 4.0 + 10 * 1.0)
        )  # initial cash and stock
        assert mine["net_worth"] == pytest.approx(result.net_worth)
        assert mine["rank"] == result.rank
        assert mine["market_share"] == pytest.approx(result.market_share)
        assert mine["bankrupt_day"] == result.bankrupt_day


def test_market_share_counts_what_scripted_competitors_sold():
    """A solo merchant against a shop: its share is its units over its units plus the shop's,
    and the report's share chart ends at the same value."""
    from market.engine import Market
    from results.presentation.match_charts import share_series

    data = Scenario.model_validate(
        {
            "name": "shop_next_door",
            "products": [
                {"id": "tea", "unit_cost": 1, "reference_price": 2, "base_demand": 50, "initial_stock": 500}
            ],
            "competitors": [{"name": "shop", "price_ratio": 1.0}],
        }
    )
    market = Market(data, [["a"]], days=5)
    market.reset([11])
    for _ in range(5):
        market.advance(decisions={0: [{"op": "set_price", "product": "tea", "price": 1.8}]})
    log = market.logs[0].build()
    mine, theirs = log.product_values("units_sold").sum(), log.competitors.units_sold.sum()
    assert mine > 0 and theirs > 0
    share = compute(log, scenario=data).merchants["a"]["market_share"]
    assert share == pytest.approx(mine / (mine + theirs))
    (line,) = share_series(log, {"a": ("a", "#000", False)})
    assert line.points[-1] == (5, pytest.approx(share))


def test_satisfaction_is_the_index_at_the_end_of_the_last_day(days):
    values = compute(days(satisfaction=[4.0, 3.5, 3.75])).merchants["m0"]
    assert values["satisfaction"] == 3.75
    assert compute(days(satisfaction=[0.0, 0.0])).merchants["m0"]["satisfaction"] is None
