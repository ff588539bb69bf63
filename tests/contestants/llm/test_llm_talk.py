"""The language-model merchant where merchants talk: its decision may carry a message, the rules
say who reads it, and the report shows what rivals said yesterday. (Where they do not talk its
requests are exactly what they were before: test_llm_prompts_unchanged.py.)"""

from __future__ import annotations

import json
from collections import deque
from typing import ClassVar

import pytest

from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.kinds import create
from contestants.llm.merchant import LLMMerchant
from contestants.llm.providers import Provider, register_provider
from market.env import MarketEnv
from market.scenario import load_scenario
from market.types import MESSAGE_LIMIT, RivalMessage

PRICE = {"op": "set_price", "product": "widget", "price": 17.5}


class Talking(Provider):
    """Answers from a queue of texts (a price and a note when it runs dry) and remembers every request."""

    name = "talking"
    script: ClassVar[deque[str]] = deque()
    requests: ClassVar[list[CompletionRequest]] = []

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        Talking.requests.append(request)
        text = (
            Talking.script.popleft()
            if Talking.script
            else json.dumps({"operations": [PRICE], "note": "hold 17.5"})
        )
        return Answer(
            text=text,
            usage=TokenUsage(input_tokens=1, output_tokens=1),
            temperature=request.temperature,
            seed=request.seed,
        )


register_provider("talking", f"{__name__}:Talking")


@pytest.fixture(autouse=True)
def fresh_script():
    Talking.script.clear()
    Talking.requests.clear()


def merchant(scenario, **params) -> LLMMerchant:
    m = create("llm", {"model": "talking/test", "no_cache": True, **params})
    m.reset(merchant="m0", scenario=scenario, seed=0)
    return m


def test_with_talk_the_model_is_asked_for_a_message_and_reads_its_rivals():
    scenario = load_scenario("price_war")
    m = merchant(scenario)
    env = MarketEnv(scenario, ["m0", "m1"], talk=True)
    observations, _ = env.reset(seed=3)
    offer = "Let us both hold 20; I will not go lower if you do not."
    Talking.script.append(
        json.dumps({"operations": [PRICE], "note": "n", "message": "I hold 17.5, do the same"})
    )
    observations, _, _, _, infos = env.step(
        {"m0": m.decide(observations["m0"]), "m1": {"operations": [], "message": offer}}
    )
    assert infos["m0"]["record"].message == "I hold 17.5, do the same"
    assert observations["m1"].messages == [
        RivalMessage("m0", "I hold 17.5, do the same")
    ]  # its message reached the rival
    m.decide(observations["m0"])
    first, second = Talking.requests
    schema = first.json_schema
    assert schema["required"] == ["operations", "note", "message"]
    assert {"type": "string", "maxLength": MESSAGE_LIMIT} in schema["properties"]["message"][
        "anyOf"
    ]  # the bound a grammar decodes under
    system = first.messages[0].content
    assert '"message"' in system and f"at most {MESSAGE_LIMIT} characters" in system and "tomorrow" in system
    assert "Messages from rivals" not in first.messages[-1].content  # day 1: nobody has said anything
    assert f'- m1: "{offer}"' in second.messages[-1].content.split("Messages from rivals yesterday:")[1]
    assert [c.prompt_version for c in m.calls()] == ["merchant-v2+talk-v1"] * 2


def test_a_message_too_long_is_refused_and_the_model_is_told_why():
    scenario = load_scenario("price_war")
    m = merchant(scenario)
    env = MarketEnv(scenario, ["m0", "m1"], talk=True)
    observations, _ = env.reset(seed=3)
    Talking.script.append(
        json.dumps({"operations": [PRICE], "note": "n", "message": "z" * (MESSAGE_LIMIT + 20)})
    )
    observations, _, _, _, infos = env.step({"m0": m.decide(observations["m0"]), "m1": None})
    record = infos["m0"]["record"]
    assert record.prices["widget"] == 17.5 and record.message == "" and observations["m1"].messages == []
    m.decide(observations["m0"])
    assert (
        f"longer than {MESSAGE_LIMIT}" in Talking.requests[-1].messages[-1].content
    )  # "Rejected yesterday: ..."
