"""Named OpenAI-compatible services ("openrouter/...", "mistral/...", "ollama/..."): each fills in
its base_url and key variable, a contestant may override both, and requests follow what the
service accepts (seen at a loopback server that records them)."""

from __future__ import annotations

import logging
import traceback

import pytest

from contestants.llm import MissingCredentialsError, ProviderError, get_provider
from contestants.llm.catalogue import catalogue

SENTINEL = "sk-SENTINEL-preset-31b7"


@pytest.mark.parametrize("preset", sorted(catalogue().presets))
def test_every_preset_names_its_service_and_key(preset, monkeypatch):
    entry = catalogue().presets[preset]
    provider = get_provider(f"{preset}/vendor/some-model")
    assert provider.label == f"{preset}/vendor/some-model"
    assert (provider.settings.base_url, provider.settings.api_key_env) == (entry.base_url, entry.api_key_env)
    if entry.api_key_env is not None:
        monkeypatch.delenv(entry.api_key_env, raising=False)
        with pytest.raises(MissingCredentialsError, match=entry.api_key_env):
            provider.check_credentials()
    overridden = get_provider(f"{preset}/m", {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "MY_KEY"})
    assert (overridden.settings.base_url, overridden.settings.api_key_env) == (
        "http://127.0.0.1:9/v1",
        "MY_KEY",
    )


def at(stub, preset: str, **settings):
    return get_provider(
        f"{preset}/m", {"base_url": stub.base_url, "api_key_env": None, "no_cache": True, **settings}
    )


@pytest.mark.parametrize(
    "preset, token_field, seed_field, mode",
    [
        ("mistral", "max_tokens", "random_seed", "json_schema"),  # it refuses max_completion_tokens and seed
        ("gemini", "max_completion_tokens", None, "json_schema"),  # it refuses seed
        ("deepseek", "max_tokens", None, "json_object"),  # no json_schema
        ("ollama", "max_tokens", "seed", "json_schema"),  # it ignores tool_choice and max_completion_tokens
        ("openrouter", "max_completion_tokens", "seed", "json_schema"),
    ],
)
def test_each_service_is_sent_what_it_accepts(
    stub_server, decision_request, preset, token_field, seed_field, mode
):
    at(stub_server, preset).complete(decision_request)
    body = stub_server.requests[0]["body"]
    assert body[token_field] == 200 and ({"max_tokens", "max_completion_tokens"} - {token_field}).isdisjoint(
        body
    )
    assert ({seed_field: 7} if seed_field else {}).items() <= body.items() and not (
        {"seed", "random_seed"} - {seed_field}
    ) & body.keys()
    assert body["messages"][0]["role"] == "system"  # the developer role is OpenAI's own
    if mode == "json_schema":
        assert body["response_format"]["type"] == "json_schema" and "tools" not in body
    else:
        assert body["response_format"] == {"type": "json_object"}


def test_a_presets_key_is_never_shown(stub_server, decision_request, monkeypatch, caplog):
    monkeypatch.setenv("OPENROUTER_API_KEY", SENTINEL)
    caplog.set_level(logging.DEBUG)
    provider = get_provider(
        "openrouter/openai/gpt-6-luna", {"base_url": stub_server.base_url, "no_cache": True, "max_retries": 0}
    )
    stub_server.script = ["401-echo"]
    with pytest.raises(ProviderError) as caught:
        provider.complete(decision_request)
    assert stub_server.requests[0]["headers"]["authorization"] == f"Bearer {SENTINEL}"
    shown = [
        str(caught.value),
        "".join(traceback.format_exception(caught.value)),
        repr(provider),
        caplog.text,
    ]
    assert not [text for text in shown if SENTINEL in text] and "***" in str(caught.value)
