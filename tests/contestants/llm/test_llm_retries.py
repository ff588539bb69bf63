"""The retry policy, observed at a loopback server: what is retried, how often, and the final
error; and the waits it asks for, as it logs them before each retry (counted, not timed)."""

from __future__ import annotations

import logging
import re
import time

import pytest

from contestants.base import DeadlinePassed
from contestants.llm import ProviderError, get_provider
from contestants.llm.retry import Failure, retry_after
from market.types import Decision


def openai_at(stub, **settings):
    base = {
        "base_url": stub.base_url,
        "api_key_env": None,
        "no_cache": True,
        "backoff_initial": 0.01,
        "backoff_max": 0.05,
    }
    return get_provider("openai/stub-model", {**base, **settings})


RETRY_LOGGED = re.compile(r"^openai/stub-model: (.+); retry \d+ of \d+ in ([\d.]+) s$")


def retries(caplog) -> list[tuple[str, float]]:
    """Each retry the policy logged: why the attempt before it failed, and the seconds it
    waits first."""
    logged = [RETRY_LOGGED.match(r.getMessage()) for r in caplog.records if r.name == "contestants.llm.retry"]
    assert all(logged), [r.getMessage() for r in caplog.records]
    return [(m[1], float(m[2])) for m in logged]


def test_the_answer_is_the_forced_function_call(stub_server, decision_request):
    completion = openai_at(stub_server).complete(decision_request)
    Decision.model_validate(completion.output)
    assert completion.output["operations"][0]["price"] == 19.5
    assert (completion.attempts, completion.retries, completion.cached) == (1, 0, False)
    assert (
        completion.usage.input_tokens,
        completion.usage.output_tokens,
        completion.usage.cached_tokens,
    ) == (50, 12, 10)
    body = stub_server.requests[0]["body"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "decision"}}
    assert body["tools"][0]["function"]["parameters"] == Decision.model_json_schema()
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, 0.0, 200)


def test_json_object_mode_sends_the_schema_as_response_format(stub_server, decision_request):
    openai_at(stub_server, structured="json_object").complete(decision_request)
    body = stub_server.requests[0]["body"]
    assert body["response_format"] == {"type": "json_object", "schema": Decision.model_json_schema()}
    assert "tools" not in body


@pytest.mark.parametrize("failure", ["429", "500", "503", "408"])
def test_retryable_statuses_are_retried_until_success(stub_server, decision_request, failure):
    stub_server.script = [failure, failure]
    completion = openai_at(stub_server).complete(decision_request)
    assert len(stub_server.requests) == 3
    assert (completion.attempts, completion.retries) == (3, 2)
    Decision.model_validate(completion.output)


def test_retries_are_bounded_and_the_last_failure_is_one_line(stub_server, decision_request):
    stub_server.script = ["500"] * 10
    with pytest.raises(ProviderError) as caught:
        openai_at(stub_server, max_retries=2).complete(decision_request)
    assert len(stub_server.requests) == 3
    error = caught.value
    assert (error.kind, error.status, error.attempts) == ("status", 500, 3)
    assert str(error) == "openai/stub-model: HTTP 500: stub says 500 (gave up after 3 attempts)"
    assert error.__context__ is None and error.__cause__ is None


def test_retry_after_is_honoured(stub_server, decision_request, caplog):
    """Retry-After: 0 means no wait, even though the backoff alone would wait seconds."""
    stub_server.script = ["429", "429", "429"]
    with caplog.at_level(logging.WARNING, "contestants.llm.retry"):
        completion = openai_at(stub_server, backoff_initial=5.0, backoff_max=5.0).complete(decision_request)
    assert completion.attempts == 4
    assert retries(caplog) == [("HTTP 429: stub says 429", 0.0)] * 3


@pytest.mark.parametrize("failure", ["400", "401-echo", "nonjson", "quota"])
def test_other_failures_are_not_retried(stub_server, decision_request, failure):
    stub_server.script = [failure, "ok"]
    with pytest.raises(ProviderError) as caught:
        openai_at(stub_server).complete(decision_request)
    assert len(stub_server.requests) == 1
    assert caught.value.attempts == 1
    assert "\n" not in str(caught.value)


def test_a_hanging_server_times_out_per_attempt_and_is_retried(stub_server, decision_request, caplog):
    """A hanging request is not answered while the test runs: each attempt ends by its own
    0.5 s timeout, and is logged as one (not as the connection error of a server that hung
    up at last)."""
    stub_server.script = ["hang", "hang"]
    with caplog.at_level(logging.WARNING, "contestants.llm.retry"):
        completion = openai_at(stub_server, timeout=0.5).complete(decision_request)
    assert completion.attempts == 3
    assert len(stub_server.requests) == 3
    assert [why for why, _ in retries(caplog)] == ["request timed out"] * 2


def test_the_total_timeout_bounds_all_attempts(stub_server, decision_request):
    """Ten retries of 0.4 s attempts are allowed, but all of them together only 1 s: at most
    three attempts fit (the third gets what is left), and then the policy gives up."""
    stub_server.script = ["hang"] * 10
    with pytest.raises(ProviderError) as caught:
        openai_at(stub_server, timeout=0.4, total_timeout=1.0, max_retries=10).complete(decision_request)
    assert caught.value.kind == "timeout"
    assert len(stub_server.requests) == caught.value.attempts <= 3  # of the 11 allowed


def test_no_attempt_starts_past_the_callers_deadline(stub_server, decision_request):
    """A deadline already passed: no request is made, and the caller is told its time ran
    out (DeadlinePassed: a late turn), not that the call failed."""
    with pytest.raises(DeadlinePassed):
        openai_at(stub_server).complete(decision_request, deadline=time.monotonic())
    assert stub_server.requests == []


def test_no_retry_waits_past_the_callers_deadline(stub_server, decision_request, caplog):
    """A 429 asking for 5 s with 2 s to the deadline: the policy gives up at once with the
    failure it had, without waiting or trying again."""
    stub_server.script = ["429-wait-5", "ok"]
    with caplog.at_level(logging.WARNING, "contestants.llm.retry"), pytest.raises(ProviderError) as caught:
        openai_at(stub_server).complete(decision_request, deadline=time.monotonic() + 2)
    assert (caught.value.status, caught.value.attempts) == (429, 1)
    assert len(stub_server.requests) == 1 and retries(caplog) == []


def test_an_unreachable_server_is_a_connection_failure(decision_request):
    provider = get_provider(
        "openai/none",
        {
            "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": None,
            "no_cache": True,
            "max_retries": 1,
            "backoff_initial": 0.01,
        },
    )
    with pytest.raises(ProviderError) as caught:
        provider.complete(decision_request)
    assert (caught.value.kind, caught.value.attempts) == ("connection", 2)


def test_the_classifier():
    assert all(Failure("status", "", status).retryable for status in (408, 429, 500, 502, 503, 529))
    assert not any(Failure("status", "", status).retryable for status in (400, 401, 403, 404, 409, 422))
    assert Failure("timeout", "").retryable and Failure("connection", "").retryable
    assert not Failure(
        "status", "", 429, code="insufficient_quota"
    ).retryable  # waiting does not refill a quota
    assert not Failure("bad_response", "").retryable and not Failure("error", "").retryable


def test_retry_after_headers():
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None
