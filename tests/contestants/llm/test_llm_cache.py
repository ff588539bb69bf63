"""The response cache: a repeated request is answered from disk; a changed one is not."""

from __future__ import annotations

from contestants.llm import get_provider


def provider(stub, cache_dir, **settings):
    return get_provider(
        "openai/stub-model",
        {"base_url": stub.base_url, "api_key_env": None, "cache_dir": str(cache_dir), **settings},
    )


def test_a_repeated_request_makes_no_call_and_returns_the_same_completion(
    stub_server, decision_request, tmp_path
):
    first = provider(stub_server, tmp_path).complete(decision_request)
    second = provider(stub_server, tmp_path).complete(
        decision_request
    )  # a new instance: the cache is on disk
    assert len(stub_server.requests) == 1
    assert (first.cached, second.cached) == (False, True)
    assert second.attempts == 0 and second.cost == first.cost  # the answer's price; not paid again
    assert second.output == first.output and second.text == first.text and second.usage == first.usage
    assert second.request_hash == first.request_hash


def test_a_changed_temperature_misses(stub_server, decision_request, tmp_path):
    provider(stub_server, tmp_path).complete(decision_request)
    warmer = decision_request.model_copy(update={"temperature": 0.7})
    completion = provider(stub_server, tmp_path).complete(warmer)
    assert len(stub_server.requests) == 2
    assert not completion.cached


def test_what_changes_the_answer_changes_the_key(stub_server, decision_request, tmp_path):
    base = provider(stub_server, tmp_path).complete(decision_request).request_hash
    changed = [
        provider(stub_server, tmp_path).complete(decision_request.model_copy(update={"seed": 8})),
        provider(stub_server, tmp_path).complete(decision_request.model_copy(update={"max_tokens": 99})),
        provider(stub_server, tmp_path, structured="json_object").complete(decision_request),
    ]
    assert len({base, *(c.request_hash for c in changed)}) == 4
    assert len(stub_server.requests) == 4


def test_timeouts_and_retries_do_not_change_the_key(stub_server, decision_request, tmp_path):
    provider(stub_server, tmp_path).complete(decision_request)
    again = provider(stub_server, tmp_path, timeout=5, max_retries=0).complete(decision_request)
    assert again.cached and len(stub_server.requests) == 1


def test_no_cache_bypasses_it(stub_server, decision_request, tmp_path):
    provider(stub_server, tmp_path).complete(decision_request)
    completion = provider(stub_server, tmp_path, no_cache=True).complete(decision_request)
    assert not completion.cached and len(stub_server.requests) == 2


def test_a_corrupt_entry_is_a_miss(stub_server, decision_request, tmp_path):
    key = provider(stub_server, tmp_path).complete(decision_request).request_hash
    (tmp_path / key[:2] / f"{key}.json").write_text("{not json")
    completion = provider(stub_server, tmp_path).complete(decision_request)
    assert not completion.cached and len(stub_server.requests) == 2
