"""The anthropic provider through the official SDK, its HTTP transport replaced by canned
responses in the shape of the Messages API (a tool-use answer, an overload, a server error)."""

from __future__ import annotations

import json

import httpx2
import pytest

from contestants.llm import ProviderError, get_provider
from market.types import Decision

KEY = "sk-ant-test-0000"
TOOL_USE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-3-5-haiku-20241022",
    "content": [
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "decision",
            "input": {"operations": [{"op": "order", "product": "widget", "quantity": 30}], "note": "restock"},
        }
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 812, "output_tokens": 64, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 0},
}
OVERLOADED = (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
SERVER_ERROR = (500, {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})
BAD_REQUEST = (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}})


def anthropic_with(responses, monkeypatch, **settings):
    """A provider whose every request gets the next (status, body) of `responses`; the
    requests sent are appended to the returned list."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    sent: list[httpx2.Request] = []
    queue = list(responses)

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        status, body = queue.pop(0)
        return httpx2.Response(status, json=body)

    provider = get_provider(
        "anthropic/claude-3-5-haiku-latest",
        {"no_cache": True, "backoff_initial": 0.01, "backoff_max": 0.05, **settings},
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return provider, sent


def test_a_tool_use_decision(monkeypatch, decision_request):
    provider, sent = anthropic_with([(200, TOOL_USE)], monkeypatch)
    completion = provider.complete(decision_request)

    decision = Decision.model_validate(completion.output)
    assert decision.operations[0].quantity == 30
    assert (completion.usage.input_tokens, completion.usage.output_tokens, completion.usage.cached_tokens) == (1012, 64, 200)
    assert completion.cost == pytest.approx((812 * 0.80 + 200 * 0.08 + 64 * 4.00) / 1e6)
    assert completion.attempts == 1

    (request,) = sent
    assert request.url.path == "/v1/messages"
    assert KEY in (request.headers.get("x-api-key"), request.headers.get("authorization", "").removeprefix("Bearer "))
    body = json.loads(request.content)
    assert body["tool_choice"] == {"type": "tool", "name": "decision"}
    assert body["tools"] == [{"name": "decision", "input_schema": Decision.model_json_schema()}]
    assert body["system"] == decision_request.messages[0].content
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert (body["model"], body["max_tokens"]) == ("claude-3-5-haiku-latest", 200)


def test_overload_and_server_error_are_retried_then_succeed(monkeypatch, decision_request):
    provider, sent = anthropic_with([OVERLOADED, SERVER_ERROR, (200, TOOL_USE)], monkeypatch)
    completion = provider.complete(decision_request)
    assert len(sent) == 3
    assert (completion.attempts, completion.retries) == (3, 2)
    Decision.model_validate(completion.output)


def test_exhausted_retries_raise_one_line(monkeypatch, decision_request):
    provider, sent = anthropic_with([OVERLOADED] * 5, monkeypatch, max_retries=2)
    with pytest.raises(ProviderError) as caught:
        provider.complete(decision_request)
    assert len(sent) == 3
    assert str(caught.value) == "anthropic/claude-3-5-haiku-latest: HTTP 529: Overloaded (gave up after 3 attempts)"


def test_a_bad_request_is_not_retried(monkeypatch, decision_request):
    provider, sent = anthropic_with([BAD_REQUEST, (200, TOOL_USE)], monkeypatch)
    with pytest.raises(ProviderError) as caught:
        provider.complete(decision_request)
    assert len(sent) == 1
    assert (caught.value.status, caught.value.kind) == (400, "status")
