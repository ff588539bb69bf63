"""The anthropic provider through the official SDK against a loopback stand-in for today's
Messages API (tests/fakes/anthropic_api.py), which refuses what the real one refuses."""

from __future__ import annotations

import pytest

from contestants.kinds import create
from contestants.llm import ProviderConfigError, ProviderError, get_provider
from contestants.llm.catalogue import catalogue_price
from market.env import MarketEnv
from market.scenario import load_scenario
from market.types import Decision

KEY = "sk-ant-fake"


def claude(fake, model: str = "claude-haiku-4-5", monkeypatch=None, **settings):
    return get_provider(
        f"anthropic/{model}",
        {
            "base_url": fake.base_url,
            "api_key_env": "ARENA_TEST_ANTHROPIC",
            "no_cache": True,
            "backoff_initial": 0.01,
            "backoff_max": 0.05,
            **settings,
        },
    )


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", KEY)


def test_a_forced_tool_where_the_model_allows_one(fake_anthropic, decision_request):
    completion = claude(fake_anthropic).complete(decision_request.model_copy(update={"temperature": None}))
    Decision.model_validate(completion.output)
    [call] = fake_anthropic.calls
    body = call.body
    assert body["tool_choice"] == {"type": "tool", "name": "decision"}
    assert body["tools"] == [{"name": "decision", "input_schema": decision_request.json_schema}]
    assert body["system"] == [
        {"type": "text", "text": decision_request.messages[0].content, "cache_control": {"type": "ephemeral"}}
    ]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert not {"temperature", "top_p", "top_k"} & body.keys()
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert (
        completion.served_model == "claude-haiku-4-5"
        and completion.temperature is None
        and completion.seed is None
    )


def test_a_model_that_refuses_forced_tools_gets_a_structured_output(fake_anthropic, decision_request):
    """claude-sonnet-5-5 refuses tool_choice tool/any outright (the stand-in answers 400)."""
    completion = claude(fake_anthropic, "claude-sonnet-5-5").complete(
        decision_request.model_copy(update={"temperature": None})
    )
    Decision.model_validate(completion.output)
    body = fake_anthropic.calls[0].body
    assert "tools" not in body and body["output_config"]["format"]["type"] == "json_schema"
    assert body["output_config"]["format"]["schema"]["additionalProperties"] is False


@pytest.mark.parametrize("tool_use", [True, False])
def test_while_thinking_the_tool_is_offered_not_forced(fake_anthropic, decision_request, tool_use):
    """Thinking rules a forced tool out: the model is asked to use it, and its tool use or,
    failing that, its text is the answer."""
    fake_anthropic.auto_tool_use = tool_use
    provider = claude(fake_anthropic, thinking="enabled", thinking_budget=1024)
    completion = provider.complete(
        decision_request.model_copy(update={"temperature": None, "max_tokens": 2048})
    )
    Decision.model_validate(completion.output)
    body = fake_anthropic.calls[0].body
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert completion.usage.reasoning_tokens >= 0 and completion.usage.output_tokens > 0


def test_what_the_model_refuses_is_refused_at_validation(fake_anthropic, decision_request):
    with pytest.raises(ProviderConfigError) as caught:
        claude(fake_anthropic).check_request(decision_request)  # temperature 0.0: API 2026-10-21 takes none
    assert caught.value.field == "temperature"
    with pytest.raises(ProviderConfigError) as caught:
        claude(fake_anthropic, thinking="adaptive").check_request(
            decision_request.model_copy(update={"temperature": None})
        )
    assert caught.value.field == "thinking"
    with pytest.raises(ProviderConfigError) as caught:
        claude(fake_anthropic, thinking="enabled", thinking_budget=2000).check_request(
            decision_request.model_copy(update={"temperature": None})
        )
    assert caught.value.field == "max_tokens"
    with pytest.raises(ProviderConfigError) as caught:
        claude(fake_anthropic, reasoning_effort="high").check_request(
            decision_request.model_copy(update={"temperature": None})
        )
    assert caught.value.field == "reasoning_effort"
    assert fake_anthropic.calls == []


def test_a_model_that_does_not_exist_fails_at_once(fake_anthropic, decision_request):
    with pytest.raises(ProviderError) as caught:
        claude(fake_anthropic, "claude-nope").complete(
            decision_request.model_copy(update={"temperature": None})
        )
    assert (caught.value.status, caught.value.retryable, caught.value.attempts) == (404, False, 1)
    assert caught.value.detail == "HTTP 404: model: claude-nope"


def test_overloads_are_retried_and_then_given_up(fake_anthropic, decision_request):
    request = decision_request.model_copy(update={"temperature": None})
    fake_anthropic.fail(529, times=2)
    assert claude(fake_anthropic).complete(request).attempts == 3
    fake_anthropic.fail(529, times=5)
    with pytest.raises(ProviderError) as caught:
        claude(fake_anthropic, max_retries=2).complete(request)
    assert str(caught.value) == "anthropic/claude-haiku-4-5: HTTP 529: Overloaded (gave up after 3 attempts)"
    assert caught.value.retryable


def days_of(fake, memory: str, days: int):
    """The calls of a claude-opus-5 merchant (it caches prefixes from 512 tokens on) over the
    first `days` days of a price_war match."""
    scenario = load_scenario("price_war")
    settings = {
        "base_url": fake.base_url,
        "api_key_env": "ARENA_TEST_ANTHROPIC",
        "no_cache": True,
        "memory": memory,
    }
    merchant = create("llm", {"model": "anthropic/claude-opus-5", **settings})
    merchant.reset(merchant="m0", scenario=scenario, seed=1)
    env = MarketEnv(scenario, ["m0", "m1"])
    observations, _ = env.reset(seed=1)
    for _ in range(days):
        observations = env.step({"m0": merchant.decide(observations["m0"]), "m1": None})[0]
    return merchant.calls()


def test_the_second_call_of_a_match_reads_the_cached_rules(fake_anthropic):
    """Day 1 writes the rules and the tool to the prompt cache, day 2 reads them and pays for
    them at the cache-read price. Cost recomputed by hand from the catalogue's price and the
    tokens the stand-in reported."""
    first, second = days_of(fake_anthropic, "stateless", 2)
    assert first.cache_write_tokens > 512 and first.cached_tokens == 0
    assert second.cached_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    price = catalogue_price("anthropic/claude-opus-5")
    for call in (first, second):
        fresh = call.input_tokens - call.cached_tokens - call.cache_write_tokens
        by_hand = (
            fresh * price.input
            + call.cached_tokens * price.cached_input
            + call.cache_write_tokens * price.cache_write
            + call.output_tokens * price.output
        ) / 1e6
        assert call.cost == pytest.approx(by_hand)
    assert second.cost < first.cost
    reported = fake_anthropic.calls[1].reply["usage"]
    assert second.cached_tokens == reported["cache_read_input_tokens"]


def test_a_conversation_is_cached_up_to_yesterday(fake_anthropic):
    """With window memory, day 3's call reads the prefix day 2 wrote (rules, tool and day 1's
    exchange): more than the rules alone."""
    first, second, third = days_of(fake_anthropic, "window", 3)
    assert second.cached_tokens == first.cache_write_tokens  # the rules and the tool
    assert third.cached_tokens == first.cache_write_tokens + second.cache_write_tokens > second.cached_tokens
