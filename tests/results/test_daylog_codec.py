"""The day log's stored form (results.storage.daylog_codec): numbers and applied operations as arrays,
the rest as JSON."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from market.daylog import DayLog, OperationDicts
from market.engine import Market
from market.scenario import Scenario, load_scenario
from market.types import DayRecord, Rejection, RejectionCode
from results.storage.daylog_codec import decode, encode_columns, encode_text

DATA = Path(__file__).parent / "data"

PRODUCTS = ("tea", "cake")
OPERATION = st.one_of(
    st.builds(
        lambda p, v: {"op": "set_price", "product": p, "price": v},
        st.sampled_from(PRODUCTS),
        st.floats(0.01, 1e6),
    ),
    st.builds(
        lambda p, v: {"op": "order", "product": p, "quantity": float(v)},
        st.sampled_from(PRODUCTS),
        st.integers(1, 10**6),
    ),
    st.builds(lambda v: {"op": "advertise", "amount": v}, st.floats(0, 1e4)),
    st.just({"op": "collect"}),
    st.just({"op": "wait"}),
)


def record(day_record, merchant: str, day: int, operations: list[dict]) -> DayRecord:
    """Every per-product number 1 and every other number the day; a rejection on odd days; a
    message (with quotes, a newline and letters beyond ASCII) every third day."""
    rejections = (
        [
            Rejection(
                index=len(operations),
                operation={"op": "fly"},
                reason="malformed operation",
                code=RejectionCode.MALFORMED_OPERATION,
            )
        ]
        if day % 2
        else []
    )
    message = f'{merchant} on day {day}: "tea at 2.50", d\u2019accord?\nça va' if day % 3 == 0 else ""
    return day_record(
        merchant=merchant,
        day=day,
        products=PRODUCTS,
        tables=1.0,
        numbers=float(day),
        operations=operations,
        rejections=rejections,
        plan={"tea": 2.5} if day == 1 else {},
        message=message,
    )


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.lists(OPERATION, max_size=5), min_size=1, max_size=12))
def test_operations_of_every_kind_are_stored_as_arrays_and_read_back(day_record, days):
    records = [record(day_record, f"m{i % 2}", 1 + i // 2, ops) for i, ops in enumerate(days)]
    log = DayLog.of(records, PRODUCTS)
    as_dicts = OperationDicts(log.applied, np.arange(len(log)), PRODUCTS)
    assert [as_dicts[k] for k in range(len(log))] == days
    stored = decode(encode_columns(log), encode_text(log))
    assert list(stored) == records
    assert "operations" not in json.loads(encode_text(log))  # they are arrays: op_row, op_kind, ...
    assert np.load(io.BytesIO(encode_columns(log)))["op_row"].tolist() == [
        r for r, ops in enumerate(days) for _ in ops
    ]


def test_logs_stored_before_operations_were_arrays_still_read(day_record):
    records = [
        record(
            day_record, "m0", 1, [{"op": "set_price", "product": "cake", "price": 3.0}, {"op": "collect"}]
        ),
        record(day_record, "m0", 2, []),
    ]
    log = DayLog.of(records, PRODUCTS)
    arrays = np.load(io.BytesIO(encode_columns(log)))
    old_columns = io.BytesIO()
    np.savez(
        old_columns, **{name: arrays[name] for name in ("seat", "day", "bankrupt", "scalars", "per_product")}
    )
    old_text = {**json.loads(encode_text(log)), "operations": [r.operations for r in records]}
    del old_text["operation_kinds"]
    assert list(decode(old_columns.getvalue(), json.dumps(old_text))) == records


def test_logs_stored_before_messages_still_read_as_the_market_plays_them_now():
    """tests/results/data/daylog_before_messages.*: a log stored by arena before decisions had
    messages (commit 256045a), of the decisions below; read back, it is the log the market
    plays of them today, every message empty."""
    market = Market(load_scenario("price_war"), [["a", "b"]], days=3)
    market.reset([5])
    for day in range(3):
        market.advance(
            decisions={
                0: {
                    "operations": [
                        {"op": "set_price", "product": "widget", "price": 18.0 + day},
                        {"op": "fly"},
                    ],
                    "plan": [{"product": "widget", "price": 19.0}],
                },
                1: [{"op": "order", "product": "widget", "quantity": 5}],
            }
        )
    stored = decode(
        (DATA / "daylog_before_messages.npz").read_bytes(), (DATA / "daylog_before_messages.json").read_text()
    )
    assert "messages" not in json.loads((DATA / "daylog_before_messages.json").read_text())
    assert stored.messages == [""] * 6
    assert list(stored) == list(market.logs[0].build())


def test_a_log_in_which_nobody_spoke_is_stored_as_before_messages(day_record):
    records = [record(day_record, "m0", 1, []), record(day_record, "m0", 2, [])]
    assert "messages" not in json.loads(encode_text(DayLog.of(records, PRODUCTS)))
    spoken = [*records, record(day_record, "m0", 3, [])]
    assert json.loads(encode_text(DayLog.of(spoken, PRODUCTS)))["messages"] == ["", "", spoken[2].message]


def test_logs_stored_before_rejections_had_codes_get_them_from_their_words():
    """Every code the market gave before codes were stored, read back from a log that kept
    only the reason (messages, suppliers and promotions, and their codes, came later: they are
    always stored with one)."""
    scenario = Scenario(
        name="s",
        products=[{"id": "tea", "unit_cost": 4.0, "reference_price": 10.0, "base_demand": 10}],
        finance={"initial_cash": 100.0},
    )
    market = Market(scenario, [["m0"]])
    market.reset([1])
    decision = [
        {"op": "fly"},
        {"op": "order", "product": "tea", "quantity": 1000},
        {"op": "advertise", "amount": 5000},
        {"op": "set_price", "product": "cake", "price": 5.0},
        {"op": "set_price", "product": "tea", "price": -1.0},
        {"op": "set_price", "product": "tea", "price": 5000.0},
        {"op": "order", "product": "tea", "quantity": 1.5},
        {"op": "order", "product": "tea", "quantity": -2},
        {"op": "advertise", "amount": -3},
    ]
    market.advance(decisions={0: decision})
    market.advance(decisions={0: "not json"})
    log = market.logs[0].build()
    given = [r for row in log.rejections for r in row]
    assert {r.code for r in given} == set(RejectionCode) - {
        RejectionCode.MESSAGE_NOT_TEXT,
        RejectionCode.MESSAGE_TOO_LONG,
        RejectionCode.UNKNOWN_SUPPLIER,
        RejectionCode.PROMOTION_OUT_OF_RANGE,
        RejectionCode.PRICE_ABOVE_CAP,
    }
    text = json.loads(encode_text(log))
    text["rejections"] = [[r[:3] for r in row] for row in text["rejections"]]
    assert [r for row in decode(encode_columns(log), json.dumps(text)).rejections for r in row] == given


@pytest.mark.parametrize(
    "bad",
    [{"op": "order", "product": "ghost", "quantity": 1.0}, {"op": "teleport"}, {"op": "wait", "why": "no"}],
)
def test_an_operation_the_market_does_not_apply_is_refused_by_name(day_record, bad):
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        DayLog.of([record(day_record, "m0", 1, [bad])], PRODUCTS)


def test_what_scripted_competitors_did_is_stored_and_read_back():
    data = load_scenario("price_war").model_dump()
    data["competitors"] = [{"name": "shop", "price_ratio": 0.9}, {"name": "cutter", "rule": "undercut"}]
    market = Market(Scenario.model_validate(data), [["a", "b"]], days=4)
    market.reset([3])
    for _ in range(4):
        market.advance(decisions={0: [{"op": "set_price", "product": "widget", "price": 15.0}]})
    log = market.logs[0].build()
    back = decode(encode_columns(log), encode_text(log))
    assert back.competitors.names == ("shop", "cutter")
    assert back.competitors.prices.shape == (4, 2, 1)
    assert np.array_equal(back.competitors.prices, log.competitors.prices)
    assert np.array_equal(back.competitors.units_sold, log.competitors.units_sold)
    assert log.competitors.units_sold.sum() > 0
    assert list(back) == list(log)
    plain = DayLog.of(list(log), ["widget"])
    assert decode(encode_columns(plain), encode_text(plain)).competitors is None


def test_orders_from_listed_suppliers_are_stored_and_read_back():
    data = load_scenario("price_war").model_dump()
    data["products"][0]["suppliers"] = [{"name": "farm", "unit_cost": 8.0, "lead_time": 2}]
    market = Market(Scenario.model_validate(data), [["a", "b"]], days=2)
    market.reset([3])
    market.advance(
        decisions={0: [{"op": "order", "product": "widget", "quantity": 5, "supplier": "farm"}], 1: []}
    )
    market.advance(decisions={1: [{"op": "order", "product": "widget", "quantity": 2}]})
    log = market.logs[0].build()
    back = decode(encode_columns(log), encode_text(log))
    assert back.suppliers == (("farm",),)
    assert back[0].operations == [{"op": "order", "product": "widget", "quantity": 5.0, "supplier": "farm"}]
    assert list(back) == list(log)
    assert "suppliers" not in json.loads(encode_text(DayLog.of(list(log)[3:], ["widget"])))
