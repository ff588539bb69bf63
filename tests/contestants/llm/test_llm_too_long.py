"""A request refused as longer than the model's window: the refusal recognised in each server's
words (real bodies), refused by the stand-ins with their own bodies and their own counts through
the official SDKs, learnt by the provider's one count of its requests, and survived by a
decision-mode merchant and by an agent whose summary was written to the looser count; a
conversation that cannot fit at its smallest stops the run with one line, and so does a refused
request made again unchanged; the refusals are in the transcript and in the match's stored
results, shown and exported."""

from __future__ import annotations

import csv
import json
import math
import re
from typing import Any

import pytest
from fakes.agents import agent, day_of
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples
from typer.testing import CliRunner

from arena.cli import app, printing
from contestants.base import RunOptions
from contestants.calls.coordinator import CallCoordinatorCore, CallsStopped, LocalCallCoordinator
from contestants.calls.types import CompletionRequest, Message
from contestants.kinds import create
from contestants.llm.errors import ProviderError
from contestants.llm.merchant import LLMMerchant
from contestants.llm.providers import GROWTH, MARGIN, Counting, get_provider, written
from contestants.llm.retry import error_in
from contestants.llm.too_long import TooLong, too_long
from market.env import MarketEnv
from market.scenario import Scenario
from results import recording
from results.records import FinishedMatch, StoppedMatch
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

KEY = "ARENA_TEST_TOO_LONG"

# (status, message, code, error fields besides these) -> what the refusal says: (window, prompt, at_least)
REFUSALS = {
    "openai, the messages alone": (
        400,
        "This model's maximum context length is 8000 tokens. However, your messages resulted in 8213 "
        "tokens. Please reduce the length of the messages.",
        "context_length_exceeded",
        {},
        (8000, 8213, False),
    ),
    "openai, with the completion": (
        400,
        "This model's maximum context length is 128000 tokens. However, you requested 131500 tokens "
        "(131000 in the messages, 500 in the completion). Please reduce the length of the messages or "
        "completion.",
        "context_length_exceeded",
        {},
        (128000, 131000, False),
    ),
    "openai responses": (
        400,
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "context_length_exceeded",
        {},
        (None, None, False),
    ),
    "deepseek": (
        400,
        "This model's maximum context length is 65536 tokens. However, you requested 70123 tokens (70123 "
        "in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
        "invalid_request_error",
        {},
        (65536, 70123, False),
    ),
    "anthropic, the prompt": (
        400,
        "prompt is too long: 208310 tokens > 200000 maximum",
        "invalid_request_error",
        {},
        (200000, 208310, False),
    ),
    "anthropic, with max_tokens": (
        400,
        "input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, decrease input "
        "length or `max_tokens` and try again",
        "invalid_request_error",
        {},
        (204648, 189136, False),
    ),
    "vllm, input tokens": (
        400,
        "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. "
        "Please reduce the length of the input messages.",
        None,
        {"type": "BadRequestError", "param": "input_tokens", "code": 400},
        (4096, 5000, False),
    ),
    "vllm, max_tokens": (
        400,
        "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is "
        "4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).",
        None,
        {"type": "BadRequestError", "param": "max_tokens", "code": 400},
        (4096, 3500, False),
    ),
    "vllm, you passed": (
        400,
        "You passed 3097 input tokens and requested 1000 output tokens. However, the model's context "
        "length is only 4096 tokens, resulting in a maximum input length of 3096 tokens. Please reduce "
        "the length of the input prompt.",
        None,
        {"type": "BadRequestError", "param": "input_tokens", "code": 400},
        (4096, 3097, False),
    ),
    "vllm, characters": (
        400,
        "You passed 20000 input characters and requested 1000 output tokens. However, the model's context "
        "length is only 4096 tokens, resulting in a maximum input length of 3096 tokens (at most 12384 "
        "characters). Please reduce the length of the input prompt.",
        None,
        {"type": "BadRequestError", "param": "input_text", "code": 400},
        (4096, None, False),
    ),
    "vllm, at least": (
        400,
        "This model's maximum context length is 32768 tokens. However, you requested 1000 output tokens "
        "and your prompt contains at least 31769 input tokens, for a total of at least 32769 tokens. "
        "Please reduce the length of the input prompt or the number of requested output tokens. "
        "(parameter=input_tokens, value=31769)",
        None,
        {"type": "BadRequestError", "param": "input_tokens", "code": 400},
        (32768, 31769, True),
    ),
    "vllm, decoder prompt": (
        400,
        "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
        None,
        {"type": "BadRequestError", "code": 400},
        (4096, 5000, False),
    ),
    "llama.cpp": (
        400,
        "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
        "exceed_context_size_error",
        {"code": 400, "n_prompt_tokens": 9412, "n_ctx": 8192},
        (8192, 9412, False),
    ),
    "llama.cpp, counts in the fields alone": (
        400,
        "the request exceeds the available context size, try increasing it",
        "exceed_context_size_error",
        {"code": 400, "n_prompt_tokens": 9412, "n_ctx": 8192},
        (8192, 9412, False),
    ),
    "llama.cpp, input": (
        400,
        "input (9412 tokens) is larger than the max context size (8192 tokens). skipping",
        "exceed_context_size_error",
        {"code": 400},
        (8192, 9412, False),
    ),
    "openrouter": (
        400,
        "This endpoint's maximum context length is 32768 tokens. However, you requested about 42832 tokens "
        '(42832 of text input). Please reduce the length of either one, or use the "middle-out" transform '
        "to compress your prompt automatically.",
        None,
        {"code": 400},
        (32768, 42832, False),
    ),
    "mistral": (
        400,
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context "
        "length",
        "invalid_request_message_error",
        {},
        (32768, 40000, False),
    ),
    "gemini": (
        400,
        "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
        "INVALID_ARGUMENT",
        {},
        (1048576, 1048577, False),
    ),
    "xai": (
        400,
        "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
        None,
        {},
        (131072, 150000, False),
    ),
    "bedrock": (400, "Input is too long for requested model.", None, {}, (None, None, False)),
    "text generation inference": (
        422,
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` "
        "tokens and 1000 `max_new_tokens`",
        None,
        {},
        (4096, 4000, False),
    ),
    "text generation inference, the input": (
        422,
        "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000",
        None,
        {},
        (4096, 5000, False),
    ),
    "a maximum length exceeded": (
        400,
        "Input exceeds the maximum sequence length",
        None,
        {},
        (None, None, False),
    ),
}
NOT_TOO_LONG = {
    "a rate limit on tokens": (
        429,
        "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, "
        "Requested 45000. Please try again in 30s.",
        "rate_limit_exceeded",
    ),
    "a name too long": (
        400,
        "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, "
        "but got a string with length 70 instead.",
        "string_above_max_length",
    ),
    "an answer limit too high": (
        400,
        "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you "
        "provided 100000.",
        "invalid_value",
    ),
    "anthropic's answer ceiling": (
        400,
        "max_tokens: 200000 > 128000, which is the maximum allowed number of output tokens for claude-opus-5",
        "invalid_request_error",
    ),
    "a server error": (500, "context length computation failed", None),
    "an answer limit too high for text generation inference": (
        422,
        "Input validation error: `max_new_tokens` must be <= 2048. Given: 4000",
        None,
    ),
}


@pytest.mark.parametrize("status, message, code, fields, said", REFUSALS.values(), ids=list(REFUSALS))
def test_each_servers_refusal_for_length_is_recognised_with_its_numbers(status, message, code, fields, said):
    error = {"message": message, **({"code": code} if code else {}), **fields}
    assert too_long(status, message, code, error) == TooLong(*said)


@pytest.mark.parametrize("status, message, code", NOT_TOO_LONG.values(), ids=list(NOT_TOO_LONG))
def test_other_refusals_are_not_taken_for_length(status, message, code):
    assert too_long(status, message, code, {"message": message}) is None


# --- the stand-ins' refusals through the official SDKs -------------------------------------------

RULES = Message(role="system", content="You run a tea shop. Answer with today's decision.")
LONG_DAY = Message(role="user", content="Day 3: sold 3 tea at 4.5, rival at 4.4; " * 60)
ANSWER = {
    "type": "object",
    "properties": {"note": {"type": "string"}},
    "required": ["note"],
    "additionalProperties": False,
}


def asked(max_tokens: int = 300) -> CompletionRequest:
    return CompletionRequest(
        messages=(RULES, LONG_DAY), json_schema=ANSWER, schema_name="decision", max_tokens=max_tokens
    )


def provider_at(fake: Any, model: str, coordinator: LocalCallCoordinator, **settings: Any) -> Any:
    kind = "anthropic" if model.startswith("claude") else "openai"
    return get_provider(
        f"{kind}/{model}",
        {"base_url": fake.base_url, "api_key_env": KEY, "no_cache": True, **settings},
        coordinator=coordinator,
        contestant="long",
    )


def refusal_of(provider: Any, request: CompletionRequest) -> ProviderError:
    with pytest.raises(ProviderError) as refused:
        provider.complete(request)
    assert refused.value.too_long is not None and not refused.value.retryable
    return refused.value


OPENAI_WORDS = {
    # server, api, window, max_tokens -> the refusal's window, whether it counts, whether "at least"
    "openai chat": ("openai", "chat", 300, 100),
    "openai responses": ("openai", "responses", 300, 100),
    "vllm": ("vllm", "chat", 300, 100),
    "llama.cpp": ("llama.cpp", "chat", 300, 100),
}


@pytest.mark.parametrize("server, api, window, max_tokens", OPENAI_WORDS.values(), ids=list(OPENAI_WORDS))
def test_the_openai_stand_in_refuses_in_each_servers_words_by_its_own_count(
    fake_openai, monkeypatch, server, api, window, max_tokens
):
    """The same request, refused by a stand-in that counts 4 characters a token, then 2: each
    refusal is one request (never retried), in the server's words, with the stand-in's own
    count where the words give one (twice as many tokens at 2 characters a token; vLLM's stops
    one past what the window leaves, llama.cpp's counts the prompt alone); none of them counts
    toward the contestant's failures in a row, which would stop it at the first."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"], fake_openai.refuses_as = window, server
    coordinator = LocalCallCoordinator(CallCoordinatorCore(stop_after=1))
    provider = provider_at(fake_openai, "gpt-4.1-mini", coordinator, api=api)
    said = {}
    for chars in (4, 2):
        fake_openai.chars_per_token = chars
        said[chars] = refusal_of(provider, asked(max_tokens)).too_long
    assert len(fake_openai.calls) == 2 and coordinator.status().stopped is None
    if api == "responses":
        assert said[4] == said[2] == TooLong()
        return
    assert said[4].window == said[2].window == window
    if server == "vllm":
        assert said[4] == said[2] == TooLong(window, window - max_tokens + 1, at_least=True)
        return
    assert said[2].prompt is not None and said[4].prompt is not None and said[4].prompt > window - max_tokens
    assert said[2].prompt in (2 * said[4].prompt, 2 * said[4].prompt + 1)


@pytest.mark.parametrize("server", ["openai", "vllm", "llama.cpp", "anthropic"])
def test_a_stand_ins_record_tells_refusals_for_length_from_other_refusals(
    fake_openai, fake_anthropic, monkeypatch, server
):
    """A stand-in's recorded answers read as arena reads the SDK's errors (error_in, then
    too_long; benchmarks/agent_year.py counts its refusals for length so): a refusal for length
    says what the provider was told, and another 400 is no refusal for length."""
    fake = fake_anthropic if server == "anthropic" else fake_openai
    model = "claude-haiku-4-5" if server == "anthropic" else "gpt-4.1-mini"
    monkeypatch.setenv(KEY, fake.api_key)
    if fake is fake_openai:
        fake_openai.refuses_as = server
    fake.contexts[model] = 300
    provider = provider_at(fake, model, LocalCallCoordinator())
    told = refusal_of(provider, asked(100)).too_long
    refused = asked(100)
    if fake is fake_anthropic:
        fake.fail(400)  # Anthropic's own 400 for a request it cannot read
    else:  # OpenAI's scripted 400 is its refusal for length: a temperature out of range instead
        refused = refused.model_copy(update={"temperature": 3.0})
    with pytest.raises(ProviderError) as other:
        provider.complete(refused)
    assert other.value.status == 400 and other.value.too_long is None
    read = []
    for call in fake.calls:
        said = error_in(call.reply)
        assert said is not None
        read.append(too_long(call.status, *said))
    assert read == [told, None] and told is not None


def test_the_anthropic_stand_in_refuses_the_prompt_and_the_prompt_with_max_tokens(
    fake_anthropic, monkeypatch
):
    monkeypatch.setenv(KEY, fake_anthropic.api_key)
    coordinator = LocalCallCoordinator(CallCoordinatorCore(stop_after=1))
    provider = provider_at(fake_anthropic, "claude-haiku-4-5", coordinator)
    fake_anthropic.contexts["claude-haiku-4-5"] = 300
    alone = refusal_of(provider, asked()).too_long
    assert alone is not None and alone.window == 300 and alone.prompt is not None and alone.prompt > 300
    fake_anthropic.contexts["claude-haiku-4-5"] = alone.prompt + 100  # room for the prompt, not the answer
    with_answer = refusal_of(provider, asked(max_tokens=300))
    assert with_answer.too_long == TooLong(alone.prompt + 100, alone.prompt)
    assert f"{alone.prompt} + 300 > {alone.prompt + 100}" in with_answer.detail
    assert coordinator.status().stopped is None


# --- what a refusal teaches the count ------------------------------------------------------------


@given(
    counted=st.integers(10, 50_000),
    max_tokens=st.integers(1, 4_000),
    room=st.integers(-2_000, 2_000),
    scale=st.floats(1.0, 3.0),
    said=st.tuples(
        st.one_of(st.none(), st.integers(500, 60_000)),
        st.one_of(st.none(), st.integers(1, 200_000)),
        st.booleans(),
    ),
    known=st.booleans(),
)
@settings(max_examples=examples(300))
def test_a_refused_request_never_fits_again_as_counted_after(counted, max_tokens, room, scale, said, known):
    """Whatever the server said, the refused request does not fit the window as counted after
    the refusal (the window `learn` returns: the least of the one known before and those the
    refusals named), so a request made again to fit it is another one; the count only
    tightens."""
    counting = Counting(scale=scale)
    window = max(1, math.ceil(counted * scale) + max_tokens + room) if known else None
    after = counting.learn(TooLong(*said), counted, max_tokens, window)
    assert after == min(w for w in (window, counting.window, said[0]) if w is not None)
    assert counting.tokens(counted) + max_tokens > after
    assert counting.scale >= scale


def test_the_servers_count_is_taken_with_a_margin_and_a_bound_with_growth():
    """Arena counted 7,500 tokens for a window of 8,000 less 400: the server's exact 11,250 makes
    it count 1.5 times as many, with MARGIN; vLLM's "at least 7,601" (one past what fitted)
    says only that it counted too few: GROWTH tighter than before, at least."""
    exact = Counting()
    exact.learn(TooLong(8000, 11_250), 7_500, 400, 8000)
    assert exact.scale == pytest.approx(1.5 * MARGIN) and exact.window == 8000
    bound = Counting()
    bound.learn(TooLong(8000, 7_601, at_least=True), 7_500, 400, 8000)
    assert bound.scale == pytest.approx(GROWTH)
    unknown = Counting()  # no window known and none named: less than what was sent
    unknown.learn(TooLong(), 7_500, 400, None)
    assert unknown.window == 7_500 + 400 - 1 and unknown.scale == pytest.approx(GROWTH)


@given(thirds=st.integers(0, 3_000), role=st.sampled_from(["user", "assistant"]), scale=st.floats(1.0, 3.0))
@settings(max_examples=examples(100))
def test_a_turn_counts_alone_what_it_adds_to_a_request(thirds, role, scale):
    """What an agent's compaction counts a turn (most_turn_tokens) is what the turn adds to a
    request's count (most_prompt_tokens), its framing included: exactly where nothing is
    learnt yet (a text of whole tokens), and within the rounding of one token after."""
    provider = get_provider("openai/gpt-4.1-mini", {"api_key_env": KEY})
    turn = Message(role=role, content="x" * (3 * thirds))

    def added() -> int:
        with_turn, without = (
            CompletionRequest(messages=messages, json_schema=ANSWER, max_tokens=300)
            for messages in ((RULES, turn), (RULES,))
        )
        return provider.most_prompt_tokens(with_turn) - provider.most_prompt_tokens(without)

    assert added() == provider.most_turn_tokens(written(turn))
    provider.counting.scale = scale
    assert provider.most_turn_tokens(written(turn)) - 1 <= added() <= provider.most_turn_tokens(written(turn))


# --- decision mode -------------------------------------------------------------------------------

SHOP = Scenario.model_validate(
    {
        "name": "shop",
        "days": 30,
        "products": [{"id": "tea", "unit_cost": 2.0, "reference_price": 4.0, "base_demand": 30}],
        "finance": {"initial_cash": 500},
    }
)


def decider(fake: Any, coordinator: LocalCallCoordinator, **params: Any) -> LLMMerchant:
    merchant = create(
        "llm",
        {
            "model": "openai/gpt-4.1-mini",
            "base_url": fake.base_url,
            "api_key_env": KEY,
            "no_cache": True,
            "max_tokens": 300,
            **params,
        },
        RunOptions(call_coordinator=coordinator, contestant="dense"),
    )
    assert isinstance(merchant, LLMMerchant)
    return merchant


def sent_again(fake: Any) -> list[int]:
    """The calls that repeat, word for word, a request the stand-in refused before them."""
    refused: set[str] = set()
    again = []
    for n, call in enumerate(fake.calls):
        body = json.dumps(call.body, sort_keys=True)
        if body in refused:
            again.append(n)
        if call.status == 400:
            refused.add(body)
    return again


def test_decision_mode_drops_old_days_of_memory_after_a_refusal_and_decides_every_day(
    fake_openai, monkeypatch
):
    """Window memory of 30 days and a table of 30 under a window of 6,000 tokens, at a server
    that counts 2 characters a token where arena assumes 3: arena fits its requests to its own
    count, the server refuses the first that its count makes too long, and from its count arena
    keeps fewer days from then on. Every day is decided, the refused request is never sent
    again, and the refusals are few and in the transcript."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"], fake_openai.chars_per_token = 6_000, 2
    coordinator = LocalCallCoordinator(CallCoordinatorCore(stop_after=1))
    merchant = decider(fake_openai, coordinator, memory="window", window=30, history=30, context_tokens=6_000)
    env = MarketEnv(SHOP, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    merchant.reset(merchant="m0", scenario=SHOP, seed=0)
    for _ in range(SHOP.days):
        observations, *_ = env.step({"m0": merchant.decide(observations["m0"]), "m1": None})
    refused = [step for step in merchant.transcript() if step.refused is not None]
    assert 1 <= len(refused) <= 2 and [c.status for c in fake_openai.calls].count(400) == len(refused)
    assert sent_again(fake_openai) == [] and coordinator.status().stopped is None
    assert [c.purpose for c in merchant.calls()] == ["decide"] * SHOP.days  # every day, once
    first = refused[0]
    assert first.purpose == "decide" and "maximum context length is 6000 tokens" in first.refused
    days_kept = [sum(m["role"] == "assistant" for m in call.body["messages"]) for call in fake_openai.calls]
    at = [c.status for c in fake_openai.calls].index(400)
    assert days_kept[at + 1] < days_kept[at] and days_kept[-1] < 29  # fewer days than memory keeps
    assert max(c.input_tokens for c in merchant.calls()) + 300 <= 6_000  # as the server counted


def test_a_refused_request_made_again_unchanged_stops_the_run_and_is_not_sent(fake_openai, monkeypatch):
    """Were arena's count not to tighten after a refusal (a fault of arena's), the decision's
    request would be made again the same: it is not sent again, and the run stops with one
    line naming the contestant, whatever Python's -O does to asserts."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"], fake_openai.chars_per_token = 6_000, 2
    coordinator = LocalCallCoordinator()
    merchant = decider(fake_openai, coordinator, memory="window", window=30, history=30, context_tokens=6_000)
    monkeypatch.setattr(merchant.provider, "learn", lambda said, request, window: window)  # learns nothing
    env = MarketEnv(SHOP, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    merchant.reset(merchant="m0", scenario=SHOP, seed=0)
    with pytest.raises(CallsStopped) as stopped:
        for _ in range(SHOP.days):
            observations, *_ = env.step({"m0": merchant.decide(observations["m0"]), "m1": None})
    assert (
        str(stopped.value)
        == coordinator.status().stopped
        == (
            "contestant dense (openai/gpt-4.1-mini): its decide request, refused by the server as too long, "
            "was made again unchanged (arena's count of it did not tighten): a fault of arena's"
        )
    )
    assert [c.status for c in fake_openai.calls].count(400) == 1 and sent_again(fake_openai) == []


# --- the smallest conversation that cannot fit, in a match ---------------------------------------


def agent_entry(fake: Any, **params: Any) -> ContestantEntry:
    return ContestantEntry(
        name="agent",
        kind="llm",
        params={
            "model": "openai/gpt-4.1-mini",
            "mode": "agent",
            "base_url": fake.base_url,
            "api_key_env": KEY,
            "no_cache": True,
            "max_steps": 5,
            **params,
        },
    )


def played(
    entry: ContestantEntry, days: int, coordinator: LocalCallCoordinator
) -> FinishedMatch | StoppedMatch:
    """A match of the agent `entry` against a fixed price, played in this process."""
    entries = [entry, ContestantEntry(name="fixed", kind="fixed_price")]
    spec = MatchSpec(key="k", index=0, scenario="shop", seed=0, days=days, seats=("agent", "fixed"))
    rules = MatchRules(seed=1, options=RunOptions(call_coordinator=coordinator))
    return play_here([Match(spec, SHOP, rules, plan_contestants(entries))])[0]


def test_a_conversation_that_cannot_fit_as_the_server_counts_stops_the_match_with_one_line(
    fake_openai, monkeypatch
):
    """Under 2,000 tokens by arena's count, the rules, the tools and the day's report are
    refused at a server counting 2 characters a token; counted as it counts, they do not fit
    even with the report compacted away: the match stops, with one line naming the contestant,
    what did not fit and the window, and the refused request was never sent again."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"], fake_openai.chars_per_token = 2_000, 2
    fake_openai.answer = agent([[("end_day", {})]])
    coordinator = LocalCallCoordinator()
    stopped = played(agent_entry(fake_openai, context_tokens=2_000, max_tokens=100), 3, coordinator)
    assert isinstance(stopped, StoppedMatch)
    assert re.fullmatch(
        r"contestant agent \(openai/gpt-4\.1-mini\): the rules, the tools, its summary and notes come to "
        r"[\d,]+ tokens as its model counts them, which with max_tokens 100 do not fit its window of "
        r"2,000 tokens: give it a larger window or a smaller max_tokens",
        stopped.reason,
    )
    assert coordinator.status().broken == "agent"
    assert [c.status for c in fake_openai.calls] == [400, 200]  # the day's first step, then its compaction
    assert sent_again(fake_openai) == []


NOTES = [("write_note", {"key": f"n{k}", "text": str(k) * 950}) for k in range(6)]  # 5,800 characters


@pytest.mark.parametrize("chars_per_token, goes_on", [(1.3, True), (0.6, False)])
def test_a_summary_written_to_a_looser_count_is_written_anew_and_the_run_stops_only_if_that_cannot_fit(
    fake_openai, monkeypatch, chars_per_token, goes_on
):
    """An agent keeps 5,800 characters of notes under a window of 8,000 tokens, at a stand-in
    that counts 4 characters a token until the conversation is first compacted, then
    `chars_per_token` (as a tokenizer counts text dense in numbers): the summary holds the
    notes whole, as arena's count allowed, and the first request after it is refused. Counted
    as tightly as the refusal taught, every block left fits its share of the window, but the
    summary does not fit: it is written anew (its notes then their keys alone) and the agent
    goes on, every day ended; where even that form cannot fit (0.6 characters a token), the
    run stops with one line once it was tried. No refused request is sent again."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"] = 8_000
    by_day = {
        1: agent([[note] for note in NOTES[:4]] + [[("end_day", {})]]),
        2: agent([[note] for note in NOTES[4:]] + [[("end_day", {})]]),
    }
    long_days = agent([[("read_notes", {"key": None}), ("read_notes", {"key": None})], [("end_day", {})]])
    short_days = agent([[("read_books", {})], [("end_day", {})]])

    def answer(call: Any, schema: Any) -> Any:
        if schema is not None and "summary" in schema.get("properties", {}):
            fake_openai.chars_per_token = chars_per_token
        compacted = any(c.body.get("response_format") for c in fake_openai.calls)
        return by_day.get(day_of(call.body), short_days if compacted else long_days)(call, schema)

    fake_openai.answer = answer
    coordinator = LocalCallCoordinator(CallCoordinatorCore(stop_after=1))
    merchant = create(
        "llm",
        {
            "model": "openai/gpt-4.1-mini",
            "mode": "agent",
            "base_url": fake_openai.base_url,
            "api_key_env": KEY,
            "no_cache": True,
            "max_steps": 5,
            "context_tokens": 8_000,
            "max_tokens": 400,
        },
        RunOptions(call_coordinator=coordinator, contestant="dense"),
    )
    assert isinstance(merchant, LLMMerchant)
    env = MarketEnv(SHOP, ["m0", "m1"])
    observations, _ = env.reset(seed=3)
    merchant.reset(merchant="m0", scenario=SHOP, seed=0)
    days = 8
    try:
        for _ in range(days):
            observations, *_ = env.step({"m0": merchant.decide(observations["m0"]), "m1": None})
    except CallsStopped as stopped:
        assert not goes_on
        assert re.fullmatch(
            r"contestant dense \(openai/gpt-4\.1-mini\): the rules, the tools, its summary and notes come "
            r"to [\d,]+ tokens as its model counts them, which with max_tokens 400 do not fit its window "
            r"of 8,000 tokens: give it a larger window or a smaller max_tokens",
            str(stopped),
        )
        assert coordinator.status().stopped == str(stopped)
    else:
        assert goes_on and merchant.reported_metrics()["step_limit_days"] == 0
    purposes = [s.purpose if s.refused is None else "refused" for s in merchant.transcript()]
    first = purposes.index("compact")
    assert purposes[first : first + 3] == ["compact", "refused", "compact"] and purposes.count("refused") == 1
    assert sent_again(fake_openai) == []
    assert merchant.mode.agent is not None
    conversation = merchant.mode.agent[1]
    assert conversation.summary is not None and "(read them with read_notes)" in conversation.summary.content
    assert ("0" * 950) not in conversation.summary.content  # the notes no longer whole
    if goes_on:
        assert len(merchant.mode.days_worked) == days and merchant.provider.counting.scale > 2


def test_a_rehearsal_that_cannot_fit_stops_as_the_run_would_and_tells_no_coordinator(monkeypatch):
    """`arena validate` rehearses without calling a model: a window too small for an agent's
    rules and tools stops the rehearsal with the line the run's coordinator would give, and
    the coordinator the merchant's calls would check in with is told nothing (the rehearsal
    stops no run)."""
    monkeypatch.setenv(KEY, "unused")
    coordinator = LocalCallCoordinator()
    merchant = create(
        "llm",
        {"model": "openai/gpt-4.1-mini", "mode": "agent", "api_key_env": KEY, "context_tokens": 1_200},
        RunOptions(rehearse="fewest", call_coordinator=coordinator, contestant="small"),
    )
    merchant.reset(merchant="m0", scenario=SHOP, seed=0)
    observations, _ = MarketEnv(SHOP, ["m0", "m1"]).reset(seed=3)
    with pytest.raises(CallsStopped) as stopped:
        merchant.decide(observations["m0"])
    assert re.fullmatch(
        r"contestant small \(openai/gpt-4\.1-mini\): the rules, the tools, its summary and notes come to "
        r"[\d,]+ tokens as its model counts them, which with max_tokens 400 do not fit its window of "
        r"1,200 tokens: give it a larger window or a smaller max_tokens",
        str(stopped.value),
    )
    assert coordinator.status().stopped is None


# --- the record: stored, shown, exported ---------------------------------------------------------


def test_refusals_are_counted_per_merchant_shown_and_exported(fake_openai, monkeypatch, tmp_path):
    """An agent at a server counting 2 characters a token, for 8 days under 5,000 tokens (its
    first refusal comes on the sixth): its refusals are steps of its transcript, their number
    is its result's length_refusals, which `arena show` shows and `arena export` writes, with
    each refusal's words in the transcript."""
    monkeypatch.setenv(KEY, fake_openai.api_key)
    fake_openai.contexts["gpt-4.1-mini"], fake_openai.chars_per_token = 5_000, 2
    fake_openai.answer = agent(
        [[("read_books", {}), ("calculator", {"expression": "2*2"})], [("end_day", {})]]
    )
    finished = played(agent_entry(fake_openai, context_tokens=5_000), 8, LocalCallCoordinator())
    assert isinstance(finished, FinishedMatch)
    refusals = [step for step in finished.transcript if step.refused is not None]
    count = {r.merchant: r.length_refusals for r in finished.merchants}
    assert count == {"agent": len(refusals), "fixed": 0} and refusals
    assert len(refusals) == [c.status for c in fake_openai.calls].count(400)

    db = f"sqlite:///{tmp_path}/t.db"
    engine = engine_for(db)
    tournament = store.start_tournament(
        engine, "t", "t.yaml", "", "h", 1, [("agent", "llm", {}), ("fixed", "fixed_price", {})], 1
    )
    match_id = recording.save_match(engine, tournament, finished)
    monkeypatch.setattr(printing.out, "width", 250)  # one line per row
    shown = CliRunner().invoke(app, ["show", str(match_id), "--db", db]).stdout
    results = shown.split("┓", 1)[1].split("┘", 1)[0].splitlines()  # the first table: the results
    header = [cell.strip() for cell in results[1].split("┃")[1:-1]]
    table = [[cell.strip() for cell in line.split("│")[1:-1]] for line in results if line.startswith("│")]
    assert next(row for row in table if row[1] == "agent")[header.index("length refusals")] == str(
        len(refusals)
    )
    day = refusals[0].day
    on_day = CliRunner().invoke(app, ["show", str(match_id), "--day", str(day), "--db", db]).stdout
    assert "refused" in on_day and "maximum context length is 5000 tokens" in " ".join(on_day.split())

    out = tmp_path / "tables"
    assert CliRunner().invoke(app, ["export", str(tournament), "--out", str(out), "--db", db]).exit_code == 0
    with (out / "results.csv").open() as file:
        exported = {row["merchant"]: row["length_refusals"] for row in csv.DictReader(file)}
    assert exported == {"agent": str(len(refusals)), "fixed": "0"}
    with (out / "transcript.csv").open() as file:
        rows = [row for row in csv.DictReader(file) if row["part"] == "refused"]
    assert [row["content"] for row in rows] == [step.refused for step in refusals]
