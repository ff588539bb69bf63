"""Provider names, settings validation, lazy SDK imports and the price table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from contestants.calls.budget import Price
from contestants.calls.types import TokenUsage
from contestants.llm import (
    ProviderConfigError,
    constrained_schema,
    cost,
    get_provider,
    provider_names,
    validate_settings,
)


def test_no_sdk_is_imported_until_a_provider_calls():
    code = (
        "import sys\n"
        "from contestants.llm import get_provider\n"
        "get_provider('openai/gpt-4o-mini')\n"
        "get_provider('anthropic/claude-haiku-4-5')\n"
        "get_provider('local/smollm2')\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'llama_cpp', 'httpx2') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_names_and_settings():
    assert {"anthropic", "local", "openai"} <= set(provider_names())
    assert get_provider("openai/gpt-4o-mini").label == "openai/gpt-4o-mini"
    with pytest.raises(ProviderConfigError, match="unknown provider 'bard'") as caught:
        get_provider("bard/pro")
    assert caught.value.field == "model"
    with pytest.raises(ProviderConfigError) as caught:
        validate_settings("openai/gpt-4o-mini", {"max_retries": -1})
    assert caught.value.field == "max_retries"
    with pytest.raises(ProviderConfigError) as caught:
        validate_settings("anthropic/claude-haiku-4-5", {"structured": "json_object"})
    assert caught.value.field == "structured"


def test_cost_from_the_catalogue():
    """(800k fresh x 0.15 + 200k cached x 0.075 + 500k output x 0.60) / 1M, by hand."""
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=500_000, cached_tokens=200_000)
    assert cost("openai/gpt-4o-mini", usage) == pytest.approx(0.8 * 0.15 + 0.2 * 0.075 + 0.5 * 0.60)
    assert cost("local/smollm2", usage) == 0.0
    assert cost("openai/my-vllm-model", usage) is None


def test_cache_writes_and_reasoning_are_priced_as_billed():
    """Anthropic bills prompt-cache writes above the input price and reads far below it;
    reasoning tokens are output tokens. claude-haiku-4-5: input 1, write 1.25, read 0.10, output 5."""
    usage = TokenUsage(
        input_tokens=2_000_000,
        cached_tokens=1_000_000,
        cache_write_tokens=500_000,
        output_tokens=100_000,
        reasoning_tokens=60_000,
    )
    assert cost("anthropic/claude-haiku-4-5", usage) == pytest.approx(
        0.5 * 1 + 1.0 * 0.10 + 0.5 * 1.25 + 0.1 * 5
    )
    assert cost("anthropic/claude-haiku-4-5-20251001", usage) == cost(
        "anthropic/claude-haiku-4-5", usage
    )  # a snapshot costs its alias


def test_user_prices_go_over_the_catalogue(stub_server, decision_request):
    prices = {
        "openai/my-vllm-model": Price(input=0, output=0),
        "openai/gpt-4o-mini": Price(input=1, output=2),
    }
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost("openai/my-vllm-model", usage, prices) == 0.0
    assert cost("openai/gpt-4o-mini", usage, prices) == 3.0
    assert cost("openai/gpt-4o", usage, prices) == 12.5
    prices = {"openai/stub-model": {"input": 1, "output": 2, "cached_input": 0.5}}
    provider = get_provider(
        "openai/stub-model",
        {"base_url": stub_server.base_url, "api_key_env": None, "no_cache": True, "prices": prices},
    )
    assert provider.complete(decision_request).cost == pytest.approx((40 * 1 + 10 * 0.5 + 12 * 2) / 1e6)


def test_usage_adds_up():
    total = TokenUsage(input_tokens=3, output_tokens=2, cached_tokens=1) + TokenUsage(
        input_tokens=4, output_tokens=5, reasoning_tokens=3, cache_write_tokens=2
    )
    assert total == TokenUsage(
        input_tokens=7, output_tokens=7, cached_tokens=1, cache_write_tokens=2, reasoning_tokens=3
    )


def test_constrained_schema_requires_every_field_and_bounds_repetition():
    from market.types import MESSAGE_LIMIT, Decision

    raw = Decision.model_json_schema()
    schema = constrained_schema(raw, max_items=5, max_length=50)
    assert schema["required"] == ["operations", "note", "plan", "message"]
    assert schema["properties"]["operations"]["maxItems"] == 5
    assert schema["properties"]["plan"]["anyOf"][0]["maxItems"] == 5
    assert schema["properties"]["note"]["anyOf"][0]["maxLength"] == 50
    assert (
        schema["properties"]["message"]["anyOf"][0]["maxLength"] == MESSAGE_LIMIT
    )  # a bound of its own is kept
    set_price = schema["$defs"]["SetPrice"]
    assert set_price["required"] == ["op", "product", "price"]
    assert "maxLength" not in set_price["properties"]["op"]  # a const needs no bound
    assert "required" not in raw["$defs"]["Wait"]  # the original is untouched
