"""What happened in a match, found from its days: the expected incidents are worked out by
hand from the prices, sales and faults each test sets."""

from __future__ import annotations

from market.daylog import DayLog
from results.presentation.incidents import incidents
from results.records import Fault, GoalResult


def log(day_record, prices: dict[str, list[float]], **per_day: dict[str, list[float]]) -> DayLog:
    """Days of merchants whose tea prices are `prices` (0: not selling), with other per-product
    fields (`lost_sales`, `spoiled`) day by day."""
    days = len(next(iter(prices.values())))
    return DayLog.of(
        [
            day_record(
                merchant=m,
                day=d + 1,
                prices={"tea": prices[m][d]},
                **{field: {"tea": values[m][d]} for field, values in per_day.items()},
            )
            for d in range(days)
            for m in prices
        ]
    )


def test_a_sharp_cut_against_the_rivals_is_found_on_its_day(day_record):
    # b: 10 -> 8 on day 3 while a holds 10: 20% against a. On day 4 both cut by 20%: the
    # relative price holds, no cut. a's 5% cut on day 5 is under the tenth.
    days = log(day_record, {"a": [10, 10, 10, 8, 7.6], "b": [10, 10, 8, 6.4, 6.4]})
    found = incidents(days, [], [])
    assert [(i.first, i.merchant, i.kind) for i in found] == [(3, "b", "price cut")]
    assert found[0].text == "cut tea from 10 to 8 (-20%; -20% against its rivals' mean, 10)"


def test_a_rival_that_stops_selling_is_no_cut(day_record):
    # c stops selling tea on day 3 (price 0): the rivals' mean would jump, which is no cut by b
    days = log(day_record, {"a": [10, 10, 10], "b": [10, 10, 10], "c": [2, 2, 0]})
    assert incidents(days, [], []) == []


def test_stock_outs_spoilage_and_faults_are_runs_of_days(day_record):
    zeros = [0.0] * 6
    days = log(
        day_record,
        {"a": [10.0] * 6, "b": [10.0] * 6},
        lost_sales={"a": [0, 3, 4, 0, 5, 0], "b": zeros},
        spoiled={"a": zeros, "b": [0, 0, 0, 0, 2, 1]},
    )
    faults = [Fault(day=d, merchant="b", kind="timeout", detail=f"no answer on {d}") for d in (1, 2, 4)]
    goal = GoalResult(
        merchant="a", goal="profit ≥ 100", metric="profit", at_least=True, bound=100, value=40, met=False
    )
    found = [(i.first, i.last, i.merchant, i.kind, i.text) for i in incidents(days, faults, [goal])]
    assert found == [
        (1, 2, "b", "fault", "timeout: no answer on 1 (and 1 more day)"),
        (2, 3, "a", "stock-out", "7 customers of tea turned away: out of stock"),
        (4, 4, "b", "fault", "timeout: no answer on 4"),
        (5, 5, "a", "stock-out", "5 customers of tea turned away: out of stock"),
        (5, 6, "b", "spoiled", "3 units of tea spoiled"),
        (6, 6, "a", "goal missed", "profit ≥ 100: reached 40"),
    ]
