"""API keys: read only from the named variable, never shown in reprs, errors or logs."""

from __future__ import annotations

import logging
import pickle
import traceback

import pytest

from contestants.llm import MissingCredentialsError, ProviderError, get_provider

SENTINEL = "sk-SENTINEL-9f8e7d6c5b4a"
VARIABLE = "ARENA_TEST_KEY"


def test_the_key_appears_in_no_error_repr_or_log(stub_server, decision_request, monkeypatch, caplog):
    monkeypatch.setenv(VARIABLE, SENTINEL)
    caplog.set_level(logging.DEBUG)
    provider = get_provider(
        "openai/stub-model",
        {
            "base_url": stub_server.base_url,
            "api_key_env": VARIABLE,
            "no_cache": True,
            "max_retries": 1,
            "backoff_initial": 0.01,
        },
    )
    provider.complete(decision_request)  # a success, with retries logged below
    stub_server.script = ["500", "401-echo"]
    with pytest.raises(ProviderError) as caught:
        provider.complete(decision_request)

    assert stub_server.requests[-1]["headers"]["authorization"] == f"Bearer {SENTINEL}"  # it was sent...
    error = caught.value
    shown = [
        str(error),
        repr(error),
        "".join(traceback.format_exception(error)),
        repr(provider),
        str(vars(provider)),
        caplog.text,
        *(record.getMessage() for record in caplog.records),
    ]
    assert not [text for text in shown if SENTINEL in text]  # ...and shown nowhere
    assert "***" in str(error) and "\n" not in str(error)
    assert SENTINEL.encode() not in pickle.dumps(provider)


def test_a_missing_variable_is_a_one_line_error_naming_it(monkeypatch, decision_request):
    monkeypatch.delenv(VARIABLE, raising=False)
    for model in ("openai/gpt-4o-mini", "anthropic/claude-3-5-haiku-latest"):
        provider = get_provider(model, {"api_key_env": VARIABLE, "no_cache": True})
        with pytest.raises(MissingCredentialsError) as caught:
            provider.check_credentials()
        assert VARIABLE in str(caught.value) and "\n" not in str(caught.value)
        assert caught.value.variable == VARIABLE
        with pytest.raises(MissingCredentialsError):
            provider.complete(decision_request)  # and no call is attempted


def test_an_empty_variable_counts_as_missing(monkeypatch):
    monkeypatch.setenv(VARIABLE, "")
    with pytest.raises(MissingCredentialsError):
        get_provider("openai/gpt-4o-mini", {"api_key_env": VARIABLE}).check_credentials()


def test_default_variables_and_keyless_servers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match="OPENAI_API_KEY"):
        get_provider("openai/gpt-4o-mini").check_credentials()
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        get_provider("anthropic/claude-3-5-haiku-latest").check_credentials()
    get_provider(
        "openai/llama", {"base_url": "http://127.0.0.1:1/v1", "api_key_env": None}
    ).check_credentials()
    get_provider("local/smollm2").check_credentials()
