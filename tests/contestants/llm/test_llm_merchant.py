"""The language-model merchant's own logic, against a scripted provider: what it asks, what it
remembers, how it repairs a bad answer, what it logs. (The providers are tested on their own.)"""

from __future__ import annotations

import json
from collections import deque
from typing import ClassVar

import numpy as np
import pytest

from contestants.base import ContestantConfigError, RecallProbe, create, validate_params
from contestants.llm.merchant import LLMMerchant
from contestants.llm.providers import Provider, register_provider
from contestants.llm.types import Answer, CompletionRequest, TokenUsage
from market.env import MarketEnv
from market.types import Decision
from tournaments.config import load_scenario


class Scripted(Provider):
    """Answers from a queue of texts and remembers every request."""

    name: ClassVar[str] = "scripted"
    script: ClassVar[deque[str]] = deque()
    requests: ClassVar[list[CompletionRequest]] = []

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        Scripted.requests.append(request)
        return Answer(text=Scripted.script.popleft(), usage=TokenUsage(input_tokens=100, output_tokens=10))


register_provider("scripted", f"{__name__}:Scripted")

GOOD = json.dumps({"operations": [{"op": "set_price", "product": "widget", "price": 17.5}], "note": "hold 17.5"})


@pytest.fixture
def scenario(root):
    return load_scenario(root / "scenarios" / "price_war.yaml")


@pytest.fixture(autouse=True)
def fresh_script():
    Scripted.script.clear()
    Scripted.requests.clear()


def merchant(scenario, **params) -> LLMMerchant:
    m = create("llm", {"model": "scripted/test", "no_cache": True, **params})
    m.reset(merchant="m0", scenario=scenario, rng=np.random.default_rng(0))
    return m


def days(scenario, m: LLMMerchant, answers: list[str]):
    """Play as many days as there are answers; return the day records of m0."""
    Scripted.script.extend(answers)
    env = MarketEnv(scenario, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    records = []
    while Scripted.script:
        observations, _, _, _, infos = env.step({"m0": m.decide(observations["m0"]), "m1": None})
        records.append(infos["m0"]["record"])
    return records


def test_a_valid_answer_becomes_the_days_decision(scenario):
    m = merchant(scenario)
    [record] = days(scenario, m, [GOOD])
    assert record.prices["widget"] == 17.5 and not record.rejections
    [request] = Scripted.requests
    assert request.json_schema["properties"].keys() == Decision.model_json_schema()["properties"].keys()
    assert request.json_schema["required"] == ["operations", "note"]
    assert request.messages[0].role == "system" and "widget" in request.messages[0].content
    assert "Day 1 of 30" in request.messages[-1].content
    [call] = m.calls()
    assert (call.purpose, call.day, call.input_tokens, call.output_tokens) == ("decide", 1, 100, 10)
    assert m.usage().calls == 1 and m.usage().input_tokens == 100


def test_a_bad_answer_gets_one_repair_then_goes_to_the_market_as_garbage(scenario):
    m = merchant(scenario)
    repaired, broken = days(scenario, m, ["not json", GOOD, "still not", '{"operations": 5}'])
    assert repaired.prices["widget"] == 17.5
    assert [c.purpose for c in m.calls()] == ["decide", "repair", "decide", "repair"]
    assert "not a valid decision" in Scripted.requests[1].messages[-1].content
    assert Scripted.requests[1].messages[-2].content == "not json"  # the model sees what it said
    assert [r.index for r in broken.rejections] == [-1]  # the whole decision, recorded as malformed


def test_window_memory_keeps_the_last_k_days(scenario):
    m = merchant(scenario, memory="window", window=2)
    days(scenario, m, [GOOD] * 4)
    last = Scripted.requests[-1].messages
    assert [msg.role for msg in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "Day 2 of 30" in last[1].content and "Day 4 of 30" in last[-1].content


def test_stateless_memory_shows_only_today(scenario):
    m = merchant(scenario, memory="stateless")
    days(scenario, m, [GOOD] * 3)
    assert [msg.role for msg in Scripted.requests[-1].messages] == ["system", "user"]


def test_notes_memory_carries_the_models_own_notes(scenario):
    m = merchant(scenario, memory="notes")
    days(scenario, m, [GOOD] * 3)
    system, today = Scripted.requests[-1].messages
    assert (system.role, today.role) == ("system", "user")
    assert "day 1: hold 17.5" in today.content and "day 2: hold 17.5" in today.content
    assert today.content.index("day 2: hold") < today.content.index("Day 3 of 30")
    # the system message stays the same all match, so a provider can keep it evaluated
    assert system == Scripted.requests[0].messages[0]


def test_recall_asks_with_its_own_schema_and_reads_a_number(scenario):
    m = merchant(scenario)
    days(scenario, m, [GOOD] * 2)
    Scripted.script.extend(['{"value": 1234.5}', '{"value": null}', '{"value": "lots"}'])
    probe = RecallProbe(day=1, fact="cash")
    assert m.recall(probe) == 1234.5
    assert m.recall(probe) is None and m.recall(probe) is None
    assert "cash at the end of day 1" in Scripted.requests[-1].messages[-1].content
    assert Scripted.requests[-1].schema_name == "recall"
    assert [c.purpose for c in m.calls()][-3:] == ["recall"] * 3


def test_unknown_params_and_missing_keys_are_configuration_errors(monkeypatch):
    with pytest.raises(ContestantConfigError):
        validate_params("llm", {"model": "scripted/x", "temprature": 0.5})
    monkeypatch.delenv("ARENA_TEST_KEY", raising=False)
    params = validate_params("llm", {"model": "openai/gpt-4o-mini", "api_key_env": "ARENA_TEST_KEY"})
    with pytest.raises(ContestantConfigError, match="ARENA_TEST_KEY"):
        LLMMerchant.preflight(params)
