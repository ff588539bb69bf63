"""The openai provider through the official SDK against a loopback stand-in for today's OpenAI
API (tests/fakes/openai_api.py), which refuses what the real one refuses with its real error
bodies: what each model family is sent, both APIs, the answer modes, strict schemas, and what
is recorded of a call."""

from __future__ import annotations

import pytest

from contestants.llm import ProviderConfigError, ProviderError, get_provider
from contestants.llm.catalogue import catalogue_price
from contestants.llm.decision_mode import decision_schema
from contestants.llm.schema import for_catalog
from market.types import Decision

KEY = "sk-fake-openai"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ARENA_TEST_OPENAI", KEY)


@pytest.fixture
def request_(decision_request):
    """The decision request as a merchant makes it: the tightened schema, no sampling set."""
    schema = for_catalog(decision_schema(think=False, plan=True), ["widget"], True)
    return decision_request.model_copy(update={"json_schema": schema, "temperature": None})


def openai(fake, model: str, **settings):
    """A provider of an OpenAI model at the stand-in (its family applies wherever it is served)."""
    return get_provider(
        f"openai/{model}",
        {
            "base_url": fake.base_url,
            "api_key_env": "ARENA_TEST_OPENAI",
            "no_cache": True,
            "backoff_initial": 0.01,
            **settings,
        },
    )


@pytest.mark.parametrize("model", ["gpt-6-astra", "gpt-6-luna", "gpt-5-mini", "gpt-4.1-mini"])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_every_family_is_sent_what_it_accepts(fake_openai, request_, model, api):
    """The stand-in refuses max_tokens, a temperature or a function tool where the real API
    does; a request that gets through it parses as a decision."""
    completion = openai(fake_openai, model, api=api).complete(request_)
    Decision.model_validate(completion.output)
    [call] = fake_openai.calls
    body = call.body
    assert "max_tokens" not in body and "temperature" not in body
    assert (body["max_output_tokens"] if api == "responses" else body["max_completion_tokens"]) == 200
    if api == "chat":
        assert (
            body["response_format"]["type"] == "json_schema"
            and body["response_format"]["json_schema"]["strict"] is True
        )
        assert body["messages"][0]["role"] == ("system" if model == "gpt-4.1-mini" else "developer")
        assert body["seed"] == 7 and completion.seed == 7
    else:
        assert (
            body["text"]["format"]["type"] == "json_schema" and "seed" not in body and completion.seed is None
        )
        assert body["instructions"] == request_.messages[0].content
    assert completion.served_model == {
        "gpt-5-mini": "gpt-5-mini-2025-08-07",
        "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    }.get(model, model)


def test_reasoning_tokens_and_the_resolved_model_are_recorded(fake_openai, request_):
    completion = openai(fake_openai, "gpt-5-mini", reasoning_effort="high").complete(request_)
    usage = completion.usage
    assert usage.reasoning_tokens > 0 and usage.output_tokens > usage.reasoning_tokens
    assert completion.served_model == "gpt-5-mini-2025-08-07"
    assert completion.fingerprint is not None and completion.fingerprint.startswith("fp_")
    price = catalogue_price("openai/gpt-5-mini")  # reasoning tokens are billed as output
    assert completion.cost == pytest.approx(
        (usage.input_tokens * price.input + usage.output_tokens * price.output) / 1e6
    )
    assert fake_openai.calls[0].body["reasoning_effort"] == "high"


def test_a_long_prompt_is_cached_by_the_api_and_priced_as_such(fake_openai, request_):
    long = request_.model_copy(
        update={
            "messages": (
                request_.messages[0].model_copy(update={"content": "rules " * 1200}),
                *request_.messages[1:],
            )
        }
    )
    provider = openai(fake_openai, "gpt-4.1-mini")
    first, second = provider.complete(long), provider.complete(long)
    assert first.usage.cached_tokens == 0 and second.usage.cached_tokens >= 1024
    assert second.cost < first.cost


@pytest.mark.parametrize("structured", ["tool", "json_object"])
def test_the_other_answer_modes(fake_openai, request_, structured):
    """A forced function call (gpt-5-mini takes tools on Chat Completions) and JSON mode, whose
    prompt must say "json" (the merchant's rules do)."""
    messages = (
        *request_.messages[:-1],
        request_.messages[-1].model_copy(
            update={"content": request_.messages[-1].content + " Answer in JSON."}
        ),
    )
    completion = openai(fake_openai, "gpt-5-mini", structured=structured).complete(
        request_.model_copy(update={"messages": messages})
    )
    assert completion.output is not None
    body = fake_openai.calls[0].body
    if structured == "tool":
        assert body["tool_choice"] == {"type": "function", "function": {"name": "decision"}}
        assert body["tools"][0]["function"]["strict"] is True
    else:
        assert body["response_format"] == {"type": "json_object"}


def test_auto_avoids_what_the_model_refuses(fake_openai, request_):
    """gpt-6-astra refuses function tools on Chat Completions: auto answers by json_schema there,
    and a forced tool through the Responses API."""
    chat = openai(fake_openai, "gpt-6-astra")
    assert chat.mode == "json_schema"
    forced = openai(fake_openai, "gpt-6-astra", api="responses", structured="tool")
    Decision.model_validate(forced.complete(request_).output)
    assert fake_openai.calls[-1].body["tool_choice"] == {"type": "function", "name": "decision"}


def test_what_a_model_refuses_is_a_validation_error_naming_the_setting(fake_openai, request_):
    cases = [
        ("gpt-5-mini", {}, {"temperature": 0.0}, "temperature"),
        ("gpt-6-astra", {}, {"top_p": 0.9}, "top_p"),
        ("gpt-6-luna", {"reasoning_effort": "low"}, {"temperature": 0.2}, "temperature"),
        ("gpt-6-astra", {"reasoning_effort": "none"}, {}, "reasoning_effort"),
        ("gpt-6-astra", {"reasoning_effort": "max"}, {}, "reasoning_effort"),  # Responses only
        ("gpt-4.1-mini", {"reasoning_effort": "low"}, {}, "reasoning_effort"),
        ("gpt-6-astra", {"structured": "tool"}, {}, "structured"),
    ]
    for model, settings, request_fields, field in cases:
        with pytest.raises(ProviderConfigError) as caught:
            openai(fake_openai, model, **settings).check_request(request_.model_copy(update=request_fields))
        assert caught.value.field == field, (model, settings)
    openai(fake_openai, "gpt-6-luna", reasoning_effort="none").check_request(
        request_.model_copy(update={"temperature": 0.2})
    )
    openai(fake_openai, "gpt-6-astra", reasoning_effort="max", api="responses").check_request(request_)
    assert fake_openai.calls == []


def test_the_real_refusals_come_back_as_one_line_without_retries(fake_openai, request_):
    """Sent anyway (a request: map overriding the token field), the stand-in answers with the
    real 400; an unknown model with the real 404. Neither is retried."""
    provider = openai(fake_openai, "gpt-5-mini", request={"max_tokens": 100})
    with pytest.raises(ProviderError) as caught:
        provider.complete(request_)
    assert (caught.value.status, caught.value.retryable, caught.value.attempts) == (400, False, 1)
    assert "Unsupported parameter: 'max_tokens' is not supported with this model" in caught.value.detail
    with pytest.raises(ProviderError) as caught:
        openai(fake_openai, "gpt-nope").complete(request_)
    assert caught.value.status == 404 and "does not exist or you do not have access to it" in str(
        caught.value
    )
    assert len(fake_openai.calls) == 2


def test_extra_request_fields_pass_through_and_key_the_cache(fake_openai, request_, tmp_path):
    settings = {"cache_dir": str(tmp_path), "no_cache": False}
    plain = openai(fake_openai, "gpt-4.1-mini", **settings).complete(request_)
    tagged = openai(fake_openai, "gpt-4.1-mini", request={"service_tier": "flex"}, **settings).complete(
        request_
    )
    again = openai(fake_openai, "gpt-4.1-mini", request={"service_tier": "flex"}, **settings).complete(
        request_
    )
    assert plain.request_hash != tagged.request_hash == again.request_hash and again.cached
    assert fake_openai.calls[1].body["service_tier"] == "flex" and len(fake_openai.calls) == 2


def test_a_request_map_must_be_json(fake_openai):
    with pytest.raises(ProviderConfigError) as caught:
        openai(fake_openai, "gpt-4.1-mini", request={"x": float("nan")})
    assert caught.value.field == "request"
