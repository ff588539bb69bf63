"""The form of a human seat's day read into a decision: each field into the operation it names,
each bad input refused whole with the reason the market gives a model's answer, and a decision
written as a form reading back as itself."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contestants.human.form import DayForm, Refusal, day_form
from market.scenario import Finance, Product, Promotions, Scenario, Supplier
from market.types import (
    MESSAGE_LIMIT,
    Advertise,
    Collect,
    Decision,
    Order,
    Promote,
    SetPrice,
    Wait,
    parse_decision,
)
from tests.property_examples import examples

# widget: ceiling 20 * 100 = 2000, usual unit cost 10, also from acme at 8; gadget: ceiling 900,
# unit cost 5. A share of sales on credit (so collecting is an operation), promotions of up to
# 0.5 off for 1 to 7 days; stochastic demand, so orders are in whole units.
SCENARIO = Scenario(
    name="form",
    products=(
        Product(
            id="widget",
            unit_cost=10.0,
            reference_price=20.0,
            base_demand=50.0,
            lead_time=2,
            suppliers=(Supplier(name="acme", unit_cost=8.0, lead_time=3),),
        ),
        Product(id="gadget", unit_cost=5.0, reference_price=9.0, base_demand=30.0),
    ),
    finance=Finance(credit_share=0.3, credit_days=2),
    promotions=Promotions(max_discount=0.5, max_days=7),
)
TALKING = day_form(SCENARIO, talk=True)
SILENT = day_form(SCENARIO, talk=False)


@pytest.fixture
def morning(observe):
    """Day 1 with cash 10,000 and 150 of receivables due."""
    return observe(SCENARIO, cash=10_000.0, receivables_due=150.0)


def test_the_form_has_a_field_for_each_operation_in_the_decisions_order():
    assert [f.name for f in TALKING.fields] == [
        "collect",
        "price.widget",
        "price.gadget",
        "order.widget",
        "order.widget.acme",
        "order.gadget",
        "advertise",
        "promote.widget.discount",
        "promote.widget.days",
        "promote.gadget.discount",
        "promote.gadget.days",
        "message",
        "note",
    ]
    labels = {f.name: f.label for f in TALKING.fields}
    assert labels["price.widget"] == "price of widget"
    assert labels["order.widget.acme"] == "units of widget to order from acme"
    assert labels["promote.gadget.days"] == "days of the promotion of gadget"
    # where merchants do not talk, no message: the same fields but that one
    assert [f.name for f in SILENT.fields] == [f.name for f in TALKING.fields if f.name != "message"]


def test_a_market_without_credit_or_promotions_asks_for_neither():
    plain = day_form(Scenario(name="plain", products=SCENARIO.products[1:]), talk=False)
    assert [f.name for f in plain.fields] == ["price.gadget", "order.gadget", "advertise", "note"]


@pytest.mark.parametrize(
    ("submitted", "operation"),
    [
        ({"collect": "on"}, Collect()),
        ({"price.widget": "21.5"}, SetPrice(product="widget", price=21.5)),
        ({"price.gadget": " 7 "}, SetPrice(product="gadget", price=7.0)),
        ({"order.widget": "12"}, Order(product="widget", quantity=12.0)),
        ({"order.widget.acme": "12"}, Order(product="widget", quantity=12.0, supplier="acme")),
        ({"order.gadget": "3"}, Order(product="gadget", quantity=3.0)),
        ({"advertise": "40.25"}, Advertise(amount=40.25)),
        (
            {"promote.gadget.discount": "0.25", "promote.gadget.days": "3"},
            Promote(product="gadget", discount=0.25, days=3),
        ),
    ],
)
def test_each_field_reads_into_the_operation_it_names(morning, submitted, operation):
    assert TALKING.read(submitted, morning) == Decision(operations=[operation])


def test_a_whole_form_reads_in_the_decisions_order(morning):
    submitted = {
        "note": "hold 25",
        "promote.widget.days": "2",
        "promote.widget.discount": "0.1",
        "advertise": "5",
        "order.gadget": "4",
        "order.widget": "6",
        "price.gadget": "8",
        "price.widget": "25",
        "collect": "on",
        "message": "25 and no lower?\r\nreply tomorrow",  # a browser's line break: CR LF
    }
    assert TALKING.read(submitted, morning) == Decision(
        operations=[
            Collect(),
            SetPrice(product="widget", price=25.0),
            SetPrice(product="gadget", price=8.0),
            Order(product="widget", quantity=6.0),
            Order(product="gadget", quantity=4.0),
            Advertise(amount=5.0),
            Promote(product="widget", discount=0.1, days=2),
        ],
        message="25 and no lower?\nreply tomorrow",
        note="hold 25",
    )


def test_empty_fields_make_no_operation(morning):
    # an empty price keeps the price posted: no set_price, as a model that posts none
    everything_empty = {f.name: "" for f in TALKING.fields} | {"price.widget": "   "}
    assert TALKING.read(everything_empty, morning) == Decision()
    assert TALKING.read({}, morning) == Decision()


def test_names_not_of_the_form_are_not_read(morning):
    assert SILENT.read({"message": "hello", "price.teapot": "3", "wait": "on"}, morning) == Decision()


def _model_reason(operation: dict[str, Any]) -> str:
    """What the market tells a model that sent `operation` with its number as text."""
    return parse_decision({"operations": [operation]}).rejections[0].reason


@pytest.mark.parametrize(
    ("submitted", "fields", "message"),
    [
        (
            {"price.widget": "twelve"},
            ("price.widget",),
            "price of widget: 'twelve' is not a number",  # worded for a person, not the market's JSON
        ),
        # a decimal comma, as a keyboard of some languages types it
        (
            {"price.widget": "12,5"},
            ("price.widget",),
            "price of widget: '12,5' is not a number (use a point for decimals)",
        ),
        ({"price.widget": "-3"}, ("price.widget",), "price of widget: price must be a positive number"),
        # the ceiling: reference price 20 times 100
        (
            {"price.widget": "2000.5"},
            ("price.widget",),
            "price of widget: price 2000.50 is above the ceiling 2000.00",
        ),
        (
            {"order.widget": "2.5"},
            ("order.widget",),
            "units of widget to order from the usual supplier: "
            "order quantity must be a whole number of units",
        ),
        (
            {"order.gadget": "0"},
            ("order.gadget",),
            "units of gadget to order from the usual supplier: order quantity must be a positive number",
        ),
        # 1,300 units from acme at 8 cost 10,400, more than the 10,000 in cash
        (
            {"order.widget.acme": "1300"},
            ("order.widget.acme",),
            "units of widget to order from acme: order costs 10400.00, more than cash 10000.00",
        ),
        (
            {"advertise": "-1"},
            ("advertise",),
            "amount to spend on advertising: advertising amount must be a non-negative number",
        ),
        (
            {"promote.gadget.discount": "0.6", "promote.gadget.days": "3"},
            ("promote.gadget.discount", "promote.gadget.days"),
            "promotion of gadget: a promotion of 0.6 off for 3 days is not allowed "
            "(it allows up to 0.5 off for 1 to 7 days)",
        ),
        (
            {"promote.gadget.discount": "0.2", "promote.gadget.days": "8"},
            ("promote.gadget.discount", "promote.gadget.days"),
            "promotion of gadget: a promotion of 0.2 off for 8 days is not allowed "
            "(it allows up to 0.5 off for 1 to 7 days)",
        ),
        (
            {"promote.gadget.discount": "0.2", "promote.gadget.days": "2.5"},
            ("promote.gadget.discount", "promote.gadget.days"),
            "promotion of gadget: "
            + _model_reason({"op": "promote", "product": "gadget", "discount": "0.2", "days": "2.5"}),
        ),
        (
            {"promote.gadget.discount": "0.2"},
            ("promote.gadget.discount", "promote.gadget.days"),
            "promotion of gadget: give discount on gadget and days of the promotion of gadget, or neither",
        ),
        (
            {"message": "x" * (MESSAGE_LIMIT + 1)},
            ("message",),
            "message to your rivals: message of 281 characters is longer than 280: not delivered",
        ),
    ],
)
def test_a_bad_field_is_refused_with_the_markets_reason(morning, submitted, fields, message):
    assert TALKING.read(submitted, morning) == Refusal(fields, message)


def test_one_bad_field_refuses_the_whole_form(morning):
    # a good price and note beside a fractional order: nothing of it is taken
    submitted = {"price.widget": "25", "order.widget": "2.5", "note": "keep"}
    assert isinstance(TALKING.read(submitted, morning), Refusal)
    # the first field refused is the one named, in the decision's order
    refused = TALKING.read({"price.gadget": "-1", "price.widget": "0"}, morning)
    assert isinstance(refused, Refusal) and refused.fields == ("price.widget",)
    # a promotion half filled comes after a price the market refuses
    refused = TALKING.read({"promote.widget.days": "2", "price.gadget": "-1"}, morning)
    assert isinstance(refused, Refusal) and refused.fields == ("price.gadget",)


def test_cash_is_judged_in_the_decisions_order(observe):
    morning = observe(SCENARIO, cash=100.0, receivables_due=150.0)
    # 20 units at 10 cost 200: more than 100 in cash, but not once the 150 due are collected
    short = TALKING.read({"order.widget": "20"}, morning)
    assert short == Refusal(
        ("order.widget",),
        "units of widget to order from the usual supplier: order costs 200.00, more than cash 100.00",
    )
    taken = TALKING.read({"order.widget": "20", "collect": "on"}, morning)
    assert isinstance(taken, Decision) and taken.operations[0] == Collect()
    # the order takes all 100 in cash; advertising, after it, finds none left
    assert TALKING.read({"order.widget": "10", "advertise": "1"}, morning) == Refusal(
        ("advertise",), "amount to spend on advertising: advertising 1.00 exceeds cash 0.00"
    )


@pytest.mark.parametrize(
    ("form", "decision"),
    [
        (TALKING, Decision(operations=[Wait()])),
        (
            TALKING,
            Decision(
                operations=[SetPrice(product="widget", price=20.0), SetPrice(product="widget", price=21.0)]
            ),
        ),
        (TALKING, Decision(operations=[Order(product="gadget", quantity=1.0, supplier="acme")])),
        (TALKING, Decision(plan=[{"product": "widget", "price": 20.0}])),
        (SILENT, Decision(message="hello")),
    ],
)
def test_a_decision_the_form_cannot_say_is_not_written(form: DayForm, decision):
    with pytest.raises(ValueError):
        form.fill(decision)


_TEXT = st.text(min_size=1, max_size=MESSAGE_LIMIT).filter(lambda text: "\r" not in text)


@st.composite
def _decisions(draw: st.DrawFn) -> Decision:
    """A decision the market takes from 10,000 in cash (orders cost at most 50 * (10 + 8 + 5) =
    1,150, advertising at most 1,000), each operation the form has a field for, or not."""
    chosen = [
        Collect() if draw(st.booleans()) else None,
        *(SetPrice(product=p, price=draw(st.floats(0.01, 900.0))) for p in ("widget", "gadget")),
        *(
            Order(product=p, quantity=float(draw(st.integers(1, 50))), supplier=s)
            for p, s in (("widget", None), ("widget", "acme"), ("gadget", None))
        ),
        Advertise(amount=draw(st.floats(0.0, 1_000.0))),
        *(
            Promote(
                product=p,
                discount=draw(st.floats(0.0, 0.5, exclude_min=True)),
                days=draw(st.integers(1, 7)),
            )
            for p in ("widget", "gadget")
        ),
    ]
    kept = [op for op in chosen if op is not None and draw(st.booleans())]
    return Decision(operations=kept, message=draw(st.none() | _TEXT), note=draw(st.none() | _TEXT))


# `observe` is a builder, the same for every example: nothing of one example reaches the next
@settings(
    max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(decision=_decisions())
def test_a_decision_written_as_a_form_reads_back_as_itself(observe, decision):
    assert TALKING.read(TALKING.fill(decision), observe(SCENARIO, cash=10_000.0)) == decision
