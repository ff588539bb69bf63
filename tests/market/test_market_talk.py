"""Cheap talk: where merchants may talk (Market(..., talk=True)), a decision's message is stored
with the day and read by the match's other merchants the next morning; elsewhere the market does
not look at it. A message the market cannot deliver is refused alone: the operations beside it
still apply."""

from __future__ import annotations

import math

import numpy as np
import pytest

from market.engine import Market
from market.env import MarketEnv
from market.types import (
    MESSAGE_INDEX,
    MESSAGE_LIMIT,
    ArrayDecisions,
    Decision,
    RejectionCode,
    RivalMessage,
    SetPrice,
)

PRICE = {"op": "set_price", "product": "widget", "price": 17.0}


def said(text) -> dict:
    """A decision that sets a price and says `text`."""
    return {"operations": [PRICE], "message": text}


@pytest.fixture
def price_war(market):
    return market.load("price_war")


def test_a_message_reaches_the_other_merchants_the_next_day_in_seat_order(market, price_war):
    env = MarketEnv(price_war, ["a", "b", "c"], talk=True)
    first, _ = env.reset(seed=1)
    assert [first[m].messages for m in "abc"] == [[], [], []]  # nothing said yet
    second, _, _, _, infos = env.step(
        {
            "c": said("c here"),
            "a": Decision(operations=[SetPrice(product="widget", price=18.0)], message="a here"),
            "b": None,
        }
    )
    for merchant in "abc":
        market.check_day(None, infos[merchant]["record"], price_war)
    assert [infos[m]["record"].message for m in "abc"] == ["a here", "", "c here"]
    assert second["a"].messages == [RivalMessage("c", "c here")]  # not its own
    assert second["b"].messages == [RivalMessage("a", "a here"), RivalMessage("c", "c here")]
    assert second["c"].messages == [RivalMessage("a", "a here")]
    third, *_ = env.step({"a": [PRICE], "b": [PRICE], "c": [PRICE]})
    assert [third[m].messages for m in "abc"] == [[], [], []]  # yesterday's only: nobody spoke again


def test_without_talk_a_message_is_neither_stored_nor_shown_nor_refused(price_war):
    env = MarketEnv(price_war, ["a", "b"])
    first, _ = env.reset(seed=1)
    assert first["a"].messages is None
    second, _, _, _, infos = env.step({"a": said("hello"), "b": said("x" * (MESSAGE_LIMIT + 1))})
    assert [infos[m]["record"].message for m in "ab"] == ["", ""]
    assert [infos[m]["record"].rejections for m in "ab"] == [[], []]
    assert second["a"].messages is None and second["b"].messages is None
    assert env.market.logs[0].build().messages == ["", ""]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("x" * (MESSAGE_LIMIT + 1), RejectionCode.MESSAGE_TOO_LONG),
        (42, RejectionCode.MESSAGE_NOT_TEXT),
        (["hi"], RejectionCode.MESSAGE_NOT_TEXT),
    ],
)
def test_a_message_that_cannot_be_delivered_is_refused_and_the_operations_still_apply(
    market, price_war, message, code
):
    env = MarketEnv(price_war, ["a", "b"], talk=True)
    env.reset(seed=1)
    decision = {"operations": [PRICE, {"op": "fly"}], "message": message}
    tomorrow, _, _, _, infos = env.step({"a": decision, "b": None})
    record = infos["a"]["record"]
    market.check_day(None, record, price_war, decision=decision)
    assert record.prices["widget"] == PRICE["price"] and record.operations == [PRICE]
    assert [(r.index, r.code) for r in record.rejections] == [
        (1, RejectionCode.MALFORMED_OPERATION),
        (MESSAGE_INDEX, code),
    ]
    assert record.message == "" and tomorrow["b"].messages == []
    assert (
        env.market.logs[0].whole_rejections(1) == []
    )  # a refused message is no malformed answer: the match records no fault


def test_a_message_of_exactly_the_limit_is_delivered(price_war):
    env = MarketEnv(price_war, ["a", "b"], talk=True)
    env.reset(seed=1)
    longest = "y" * MESSAGE_LIMIT
    tomorrow, _, _, _, infos = env.step({"a": said(longest), "b": None})
    assert infos["a"]["record"].rejections == [] and tomorrow["b"].messages == [RivalMessage("a", longest)]


def test_the_rule_merchants_array_messages_are_delivered_only_where_merchants_talk(price_war):
    """ArrayDecisions.messages: one per row, "" for silence, None for a day nobody speaks."""
    rosters = [["a", "b"], ["c", "d"]]
    nothing = np.full((4, 1), math.nan), np.zeros((4, 1))
    for talk in (True, False):
        market = Market(price_war, rosters, days=3, talk=talk)
        market.reset([1, 2])
        market.advance(
            ArrayDecisions(
                np.zeros(4, bool),
                *nothing,
                np.array(["offer", "", "x" * (MESSAGE_LIMIT + 1), "deal"], dtype=object),
            )
        )
        heard = [o.messages for o in market.observations(market.view(), [0, 1, 2, 3])]
        market.advance(ArrayDecisions(np.zeros(4, bool), *nothing))
        first, second = (log.build() for log in market.logs)  # rows: day 1 by seat, then day 2
        if talk:
            assert heard == [[], [RivalMessage("a", "offer")], [RivalMessage("d", "deal")], []]
            assert first.messages == ["offer", "", "", ""] and second.messages == ["", "deal", "", ""]
            assert [r.code for r in second.rejections[0]] == [RejectionCode.MESSAGE_TOO_LONG]
            assert [(s.day, s.merchant, s.text) for s in first.said()] == [(1, "a", "offer")]
        else:
            assert heard == [None] * 4
            assert first.messages == second.messages == [""] * 4 and second.rejections == [[]] * 4
