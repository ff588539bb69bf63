"""The tests' stand-ins for slow and fragile contestants (tests/doubles.py), named as a kind of
one's own is: by where the class is."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from contestants.kinds import create
from market.scenario import Scenario
from market.types import SetPrice, _Op, parse_decision
from tests import doubles
from tests.doubles import CHAOS, LATENCY


def started(kind: str, scenario: Scenario, **params):
    merchant = create(kind, params)
    merchant.reset(merchant="me", scenario=scenario, seed=7)
    return merchant


def whole(decision) -> list:
    """The operations of a decision the market takes whole."""
    operations, rejections, *_ = parse_decision(decision)
    assert rejections == []
    return [op for _, op in operations]


def test_latency_sleeps_then_answers_like_fixed_price(scenario, observe, monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(
        doubles, "time", SimpleNamespace(sleep=slept.append)
    )  # the sleeps it asks for, not taken
    merchant = started(LATENCY, scenario, latency_s=0.02, markup=0.5)
    decision = merchant.decide(observe(scenario))
    assert slept == [0.02]
    assert {op.product: op.price for op in whole(decision) if isinstance(op, SetPrice)} == {"widget": 15.0}


def test_chaos_raise(scenario, observe):
    merchant = started(CHAOS, scenario, fault="raise")
    with pytest.raises(RuntimeError):
        merchant.decide(observe(scenario))


def test_chaos_garbage_is_not_a_decision_and_the_market_rejects_it(scenario, observe):
    merchant = started(CHAOS, scenario, fault="garbage")
    for day in (1, 2):
        answer = merchant.decide(observe(scenario, day=day))
        assert not isinstance(answer, list) or not all(isinstance(op, _Op) for op in answer)
        operations, rejections, *_ = parse_decision(answer)
        assert operations == [] and rejections


def test_chaos_behaves_between_faults(scenario, observe):
    merchant = started(CHAOS, scenario, fault="raise", every=3)
    for day in (1, 2, 4, 5):
        whole(merchant.decide(observe(scenario, day=day)))
    with pytest.raises(RuntimeError):
        merchant.decide(observe(scenario, day=6))
