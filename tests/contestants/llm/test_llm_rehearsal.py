"""The rehearsal behind `arena validate --estimate`: a merchant whose provider answers itself
makes, every day, the operations the best response makes from the same observation, so it
stays in business to the last day of a match in which a merchant that makes none goes bankrupt
(tests/thin_price_war.py); an agent's rehearsed day is one step (its operations and end_day)
or every step it has."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from thin_price_war import THIN_PRICE_WAR

from contestants.base import RecallQuestion, RunOptions
from contestants.kinds import create
from contestants.llm.merchant import LLMMerchant
from contestants.llm.rehearsal import RECALLED
from market.engine import Market

DAYS = 40


def rehearsed(day: Any, **params: Any) -> LLMMerchant:
    merchant = create(
        "llm",
        {"model": "openai/gpt-4.1-mini", "api_key_env": "ARENA_REHEARSAL_KEY", **params},
        RunOptions(rehearse=day, no_cache=True),
    )
    assert isinstance(merchant, LLMMerchant)
    merchant.reset(merchant="m", scenario=THIN_PRICE_WAR, seed=1)
    return merchant


def played(merchant: LLMMerchant | None) -> tuple[Market, list[list[dict[str, Any]]]]:
    """A match of DAYS days for `merchant` (None: a merchant that makes no operation) against a
    rival that makes none, and the operations each day's decision of `merchant` made, beside
    those the best response makes from the same observation."""
    market = Market(THIN_PRICE_WAR, [["m", "rival"]], days=DAYS)
    market.reset([7])
    best = create("best_response", {})
    best.reset(merchant="m", scenario=THIN_PRICE_WAR, seed=1)
    differ = []
    while market.playing.any():
        observation = market.observations(market.view(), [0])[0]
        decision = None
        if merchant is not None:
            decision = merchant.decide(observation)
            made = decision["operations"] if isinstance(decision, dict) else decision.operations
            made = [op if isinstance(op, dict) else op.model_dump(exclude_none=True) for op in made]
            expected = [op.model_dump(exclude_none=True) for op in best.decide(observation)]  # type: ignore[union-attr]
            if made != expected:
                differ.append([made, expected])
        market.advance(decisions={0: decision, 1: None})
    return market, differ


def test_a_merchant_that_makes_no_operation_goes_bankrupt_before_the_last_day():
    market, _ = played(None)
    assert market.closed[0]  # what the rehearsal's merchants did before they made the best response's


@pytest.mark.parametrize("mode", ["decision", "agent"])
def test_a_rehearsed_merchant_makes_the_best_responses_operations_to_the_last_day(mode):
    merchant = rehearsed("fewest", mode=mode)
    market, differ = played(merchant)
    assert not market.closed[0] and differ == []
    purposes = Counter((c.purpose, c.day) for c in merchant.calls())
    wanted = "step" if mode == "agent" else "decide"
    assert purposes == {(wanted, day): 1 for day in range(1, DAYS + 1)}  # a call every day, one
    if mode == "agent":
        assert merchant.reported_metrics()["step_limit_days"] == 0  # each day ended by end_day


def test_a_rehearsed_agents_longest_day_takes_every_step_and_makes_its_operations_first():
    merchant = rehearsed("longest", mode="agent", max_steps=5)
    market = Market(THIN_PRICE_WAR, [["m", "rival"]], days=3)
    market.reset([7])
    while market.playing.any():
        observation = market.observations(market.view(), [0])[0]
        market.advance(decisions={0: merchant.decide(observation), 1: None})
    steps = merchant.transcript()
    assert [(s.day, s.step) for s in steps] == [(d, k) for d in (1, 2, 3) for k in range(1, 6)]
    for step in steps:
        called = [call.name for call in step.answer.tool_calls]
        if step.step == 1:
            assert called[0] == "read_books" and set(called[1:]) <= {"set_price", "order", "collect"}
        else:
            assert called == ["calculator"]
    assert merchant.reported_metrics()["step_limit_days"] == 3
    assert merchant.recall(RecallQuestion(day=2, fact="cash")) == RECALLED  # with the answer tool
    assert merchant.transcript()[-1].answer.tool_calls[0].name == "answer"
