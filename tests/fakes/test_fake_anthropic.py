"""The Anthropic stand-in, driven through the official SDK: what it refuses (status, error type,
message), what it answers, and how it bills prompt caching."""

from __future__ import annotations

import functools
import json
import ssl

import anthropic
import httpx2
import pytest
from anthropic.types import Message
from fakes.anthropic_api import MODELS, THINKING_TOKENS, FakeAnthropic
from fakes.schemas import fits
from fakes.server import tokens

KEY = "sk-ant-fake"
DECISION = {
    "type": "object",
    "properties": {
        "action": {"enum": ["buy", "sell", "hold"]},
        "quantity": {"type": "integer", "minimum": 1},
    },
    "required": ["action", "quantity"],
    "additionalProperties": False,
}
DECIDE = {"name": "decide", "description": "Place an order.", "input_schema": DECISION}
HELLO = [{"role": "user", "content": "Your turn."}]
LONG = "The market opens at nine. " * 200  # 5200 characters: 1300 tokens of system prompt
VERY_LONG = LONG * 4  # over Haiku 4.5's 4096-token minimum
# Every SDK client would load the system's CA certificates into a TLS context of its own (most of a
# test's CPU); the stand-in speaks plain HTTP, so the clients share one context, loaded once.
tls = functools.cache(ssl.create_default_context)


def sdk(fake: FakeAnthropic, api_key: str = KEY, max_retries: int = 0) -> anthropic.Anthropic:
    """An SDK client of the stand-in."""
    http = anthropic.DefaultHttpxClient(verify=tls())
    return anthropic.Anthropic(
        base_url=fake.base_url, api_key=api_key, max_retries=max_retries, http_client=http
    )


@pytest.fixture
def fake():
    with FakeAnthropic() as api:
        yield api


@pytest.fixture
def client(fake):
    with sdk(fake) as client:
        yield client


def refused(client, error=anthropic.BadRequestError, **request):
    """The SDK error a request raises (defaults: Haiku 4.5, one user message, 256 tokens)."""
    request = {"model": "claude-haiku-4-5", "max_tokens": 256, "messages": HELLO, **request}
    with pytest.raises(error) as caught:
        client.messages.create(**request)
    body = caught.value.body
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    assert caught.value.request_id == body["request_id"]  # the request-id header says the same
    return caught.value


def cached_system(text, ttl=None):
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return [{"type": "text", "text": text, "cache_control": control}]


def system_tokens(text):
    """What the stand-in counts for a system prompt of one text block."""
    return tokens(json.dumps(["system", {"text": text, "type": "text"}], separators=(",", ":")))


# -- a plain answer ------------------------------------------------------------------------


def test_a_plain_answer_parses_as_a_message_with_full_usage(fake, client):
    raw = client.messages.with_raw_response.create(model="claude-haiku-4-5", max_tokens=256, messages=HELLO)
    message = raw.parse()
    assert isinstance(message, Message)
    assert (
        message.id.startswith("msg_") and message.role == "assistant" and message.model == "claude-haiku-4-5"
    )
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == "OK"
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    usage = message.usage
    assert usage.input_tokens > 0 and usage.output_tokens == tokens("OK")
    assert usage.cache_creation_input_tokens == 0 and usage.cache_read_input_tokens == 0
    assert (
        usage.cache_creation.ephemeral_5m_input_tokens == 0
        and usage.cache_creation.ephemeral_1h_input_tokens == 0
    )
    assert raw.headers["request-id"].startswith("req_")
    (call,) = fake.calls_to("/v1/messages")
    assert (
        call.headers["authorization"] == f"Bearer {KEY}" and call.headers["anthropic-version"] == "2026-10-21"
    )


# -- refusals of the request's shape --------------------------------------------------------


@pytest.mark.parametrize(
    "name, value", [("temperature", 0.2), ("temperature", 1.0), ("top_p", 0.9), ("top_k", 40)]
)
def test_sampling_parameters_are_extra_inputs_even_at_defaults(client, name, value):
    error = refused(client, extra_body={name: value})
    assert error.status_code == 400 and error.type == "invalid_request_error"
    assert error.api_message == f"{name}: Extra inputs are not permitted"


def test_an_unknown_model_is_a_404_naming_it_as_sent(client):
    error = refused(client, anthropic.NotFoundError, model="claude-3-5-haiku-20241022")
    assert error.type == "not_found_error" and error.api_message == "model: claude-3-5-haiku-20241022"


def test_a_wrong_key_is_a_401_that_never_echoes_it(fake):
    with sdk(fake, "sk-ant-wrong-secret") as other:
        error = refused(other, anthropic.AuthenticationError)
    assert error.type == "authentication_error" and error.api_message == "invalid x-api-key"
    assert "sk-ant-wrong-secret" not in error.response.text and "sk-ant-wrong-secret" not in str(error)


def test_x_api_key_wins_over_bearer_and_none_accepts_any_key(fake):
    with sdk(fake, "sk-ant-wrong") as other:
        message = other.messages.create(
            model="claude-haiku-4-5", max_tokens=64, messages=HELLO, extra_headers={"x-api-key": KEY}
        )
        assert message.content[0].text == "OK"
        fake.api_key = None
        assert (
            other.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=HELLO).content[0].text
            == "OK"
        )


def post(fake, body, headers):
    """A request sent without the SDK, to break what the SDK never breaks."""
    reply = httpx2.post(fake.base_url + "/v1/messages", json=body, headers=headers)
    assert reply.headers["request-id"] == reply.json()["request_id"]
    return reply.status_code, reply.json()["error"]


def test_a_missing_version_header_or_key_or_field_is_refused(fake):
    body = {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": HELLO}
    assert post(fake, body, {"x-api-key": KEY}) == (
        400,
        {"type": "invalid_request_error", "message": "anthropic-version: header is required"},
    )
    versioned = {"anthropic-version": "2026-10-21"}
    assert post(fake, body, versioned) == (
        401,
        {"type": "authentication_error", "message": "x-api-key header is required"},
    )
    assert post(fake, {"model": "claude-haiku-4-5", "messages": HELLO}, {**versioned, "x-api-key": KEY}) == (
        400,
        {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    )


def test_max_tokens_above_the_models_ceiling_is_refused(client):
    # An explicit timeout spares the SDK's own refusal of long non-streaming requests.
    error = refused(client, max_tokens=MODELS["claude-haiku-4-5"].max_output + 1, timeout=30)
    assert error.api_message == (
        "max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5"
    )


# -- tools -----------------------------------------------------------------------------------


@pytest.mark.parametrize("choice", [{"type": "tool", "name": "decide"}, {"type": "any"}])
def test_sonnet_5_5_refuses_forced_tool_choice_outright(client, choice):
    error = refused(
        client, model="claude-sonnet-5-5", tools=[DECIDE], tool_choice=choice, thinking={"type": "adaptive"}
    )
    assert error.api_message == 'tool_choice: type "tool" and "any" are not supported for this model.'
    error = refused(
        client, model="claude-sonnet-5-5", tools=[DECIDE], tool_choice=choice
    )  # without thinking too
    assert error.api_message == 'tool_choice: type "tool" and "any" are not supported for this model.'


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-haiku-5-5"])
@pytest.mark.parametrize("choice", [{"type": "tool", "name": "decide"}, {"type": "any"}])
def test_haikus_answer_a_forced_tool_choice_with_a_fitting_call(client, model, choice):
    other = {"name": "log", "input_schema": {"type": "object", "properties": {}}}
    message = client.messages.create(
        model=model, max_tokens=256, messages=HELLO, tools=[DECIDE, other], tool_choice=choice
    )
    (block,) = message.content  # a forced tool turns default thinking off
    assert block.type == "tool_use" and block.name == "decide" and block.id.startswith("toolu_")
    assert fits(block.input, DECISION) is None and block.input == {"action": "buy", "quantity": 1}
    assert message.stop_reason == "tool_use" and message.usage.output_tokens == tokens(
        json.dumps(block.input, separators=(",", ":"))
    )


def test_a_lone_tool_under_auto_is_called_unless_scripted_otherwise(fake, client):
    message = client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=256,
        messages=HELLO,
        tools=[DECIDE],
        thinking={"type": "adaptive"},
    )
    assert [b.type for b in message.content] == ["thinking", "tool_use"] and message.stop_reason == "tool_use"
    fake.auto_tool_use = False
    message = client.messages.create(
        model="claude-sonnet-5-5",
        max_tokens=256,
        messages=HELLO,
        tools=[DECIDE],
        thinking={"type": "between_tools"},
    )
    (text,) = message.content
    assert (
        text.type == "text"
        and fits(json.loads(text.text), DECISION) is None
        and message.stop_reason == "end_turn"
    )


def test_a_forced_tool_must_be_among_the_tools(client):
    error = refused(client, tools=[DECIDE], tool_choice={"type": "tool", "name": "sell_all"})
    assert error.status_code == 400 and "sell_all" in error.api_message


# -- thinking --------------------------------------------------------------------------------


@pytest.mark.parametrize("thinking", [{"type": "enabled", "budget_tokens": 2048}, {"type": "disabled"}])
def test_sonnet_5_5_takes_only_adaptive_thinking(client, thinking):
    error = refused(client, model="claude-sonnet-5-5", max_tokens=4096, thinking=thinking)
    assert (
        error.type == "invalid_request_error"
        and f'type "{thinking["type"]}" is not supported for this model' in error.api_message
    )


def test_adaptive_thinking_puts_a_signed_thinking_block_first_and_bills_it(client):
    for thinking in ({"type": "adaptive"}, None):  # omitted means adaptive on Sonnet 5.5
        extra = {"thinking": thinking} if thinking else {}
        message = client.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=HELLO, **extra)
        first, answer = message.content
        assert first.type == "thinking" and first.signature and first.thinking
        assert answer.type == "text" and message.usage.output_tokens == THINKING_TOKENS + tokens(answer.text)


def test_haiku_4_5_refuses_adaptive_thinking_and_effort(client):
    error = refused(client, thinking={"type": "adaptive"})
    assert 'type "adaptive" is not supported for this model' in error.api_message
    error = refused(client, output_config={"effort": "high"})
    assert error.status_code == 400 and error.api_message.startswith("output_config.effort:")


@pytest.mark.parametrize("model", ["claude-sonnet-5-5", "claude-haiku-5-5"])
def test_newer_models_take_every_effort(client, model):
    for effort in ("low", "medium", "high", "xhigh", "max"):
        message = client.messages.create(
            model=model, max_tokens=256, messages=HELLO, output_config={"effort": effort}
        )
        assert message.stop_reason == "end_turn"
    error = refused(client, model=model, output_config={"effort": "extreme"})
    assert (
        error.api_message == "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
    )


def test_haiku_4_5_thinking_budget_rules(client):
    error = refused(client, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1023})
    assert (
        error.api_message == "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    )
    error = refused(client, max_tokens=2048, thinking={"type": "enabled", "budget_tokens": 2048})
    assert error.api_message.startswith("`max_tokens` must be greater than `thinking.budget_tokens`.")
    message = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=2049,
        messages=HELLO,
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    assert [b.type for b in message.content] == ["thinking", "text"]


@pytest.mark.parametrize("choice", [{"type": "tool", "name": "decide"}, {"type": "any"}])
def test_thinking_may_not_be_on_when_a_tool_is_forced(client, choice):
    error = refused(
        client,
        max_tokens=4096,
        tools=[DECIDE],
        tool_choice=choice,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert error.api_message == "Thinking may not be enabled when tool_choice forces tool use."
    error = refused(
        client, model="claude-haiku-5-5", tools=[DECIDE], tool_choice=choice, thinking={"type": "adaptive"}
    )
    assert error.api_message == "Thinking may not be enabled when tool_choice forces tool use."


def test_thinking_with_a_tool_under_auto_thinks_then_calls(client):
    message = client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=4096,
        messages=HELLO,
        tools=[DECIDE],
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert [b.type for b in message.content] == ["thinking", "tool_use"] and message.stop_reason == "tool_use"


# -- structured output and scripted answers ---------------------------------------------------


def test_a_turns_tool_results_come_before_its_text(client):
    asked = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "decide", "input": {}}],
    }
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    late = {"role": "user", "content": [{"type": "text", "text": "Here:"}, result]}
    error = refused(client, messages=[*HELLO, asked, late])
    assert (
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1" in error.message
    )
    first = {"role": "user", "content": [result, {"type": "text", "text": "Go on."}]}
    assert client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=[*HELLO, asked, first])


def test_output_config_format_answers_with_json_text(client):
    message = client.messages.create(
        model="claude-haiku-5-5",
        max_tokens=256,
        messages=HELLO,
        thinking={"type": "disabled"},
        output_config={"format": {"type": "json_schema", "schema": DECISION}},
    )
    (text,) = message.content
    assert (
        text.type == "text"
        and json.loads(text.text) == {"action": "buy", "quantity": 1}
        and message.stop_reason == "end_turn"
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"action": {"type": "string"}}},  # open at the root
        {
            **DECISION,
            "properties": {"order": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        },  # open inside
        {"type": "array", "items": DECISION},  # not an object
    ],
)
def test_a_format_schema_must_be_a_closed_object(client, schema):
    error = refused(client, output_config={"format": {"type": "json_schema", "schema": schema}})
    assert error.status_code == 400 and error.api_message.startswith("output_config.format.schema")


def test_a_scripted_answer_is_used_checked_or_sent_verbatim(fake, client):
    seen = []
    fake.answer = lambda call, schema: seen.append(schema) or {"action": "sell", "quantity": 3}
    message = client.messages.create(model="claude-haiku-4-5", max_tokens=256, messages=HELLO, tools=[DECIDE])
    assert message.content[0].input == {"action": "sell", "quantity": 3} and seen == [DECISION]
    fake.answer = lambda call, schema: {"action": "steal", "quantity": 3}
    error = refused(client, anthropic.InternalServerError, tools=[DECIDE])
    assert (
        error.status_code == 500
        and "does not fit its schema" in error.api_message
        and "steal" in error.api_message
    )
    fake.answer = lambda call, schema: '{"action": "bu'
    fake.auto_tool_use = False
    message = client.messages.create(model="claude-haiku-4-5", max_tokens=256, messages=HELLO, tools=[DECIDE])
    assert message.content[0].text == '{"action": "bu'


def test_an_answer_longer_than_max_tokens_is_cut(fake, client):
    fake.answer = lambda call, schema: "x" * 400  # 100 tokens
    message = client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=HELLO)
    assert (
        message.stop_reason == "max_tokens"
        and message.content[0].text == "x" * 40
        and message.usage.output_tokens == 10
    )


# -- prompt caching --------------------------------------------------------------------------


def test_a_long_enough_prefix_is_written_then_read(client):
    prefix = system_tokens(LONG)
    assert prefix >= MODELS["claude-haiku-5-5"].min_cacheable
    first = client.messages.create(
        model="claude-haiku-5-5", max_tokens=256, system=cached_system(LONG), messages=HELLO
    ).usage
    total = client.messages.count_tokens(
        model="claude-haiku-5-5", system=cached_system(LONG), messages=HELLO
    ).input_tokens
    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens) == (prefix, 0)
    assert (
        first.cache_creation.ephemeral_5m_input_tokens == prefix
        and first.cache_creation.ephemeral_1h_input_tokens == 0
    )
    assert first.input_tokens == total - prefix

    later = [{"role": "user", "content": "A different question, longer than the first one was."}]
    second = client.messages.create(
        model="claude-haiku-5-5", max_tokens=256, system=cached_system(LONG), messages=later
    ).usage
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens) == (prefix, 0)
    assert (
        second.input_tokens
        == client.messages.count_tokens(model="claude-haiku-5-5", system=LONG, messages=later).input_tokens
        - prefix
    )


def test_a_prefix_under_the_models_minimum_never_caches(client):
    assert (
        MODELS["claude-haiku-5-5"].min_cacheable
        <= system_tokens(LONG)
        < MODELS["claude-haiku-4-5"].min_cacheable
    )
    for _ in range(2):
        usage = client.messages.create(
            model="claude-haiku-4-5", max_tokens=256, system=cached_system(LONG), messages=HELLO
        ).usage
        assert usage.cache_creation_input_tokens == 0 and usage.cache_read_input_tokens == 0
    usage = client.messages.create(
        model="claude-haiku-4-5", max_tokens=256, system=cached_system(VERY_LONG), messages=HELLO
    ).usage
    assert usage.cache_creation_input_tokens == system_tokens(VERY_LONG)


def test_a_one_hour_breakpoint_is_billed_as_such_and_entries_are_per_model(client):
    usage = client.messages.create(
        model="claude-haiku-5-5", max_tokens=256, system=cached_system(LONG, "1h"), messages=HELLO
    ).usage
    assert (
        usage.cache_creation.ephemeral_1h_input_tokens == system_tokens(LONG)
        and usage.cache_creation.ephemeral_5m_input_tokens == 0
    )
    usage = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=256, system=cached_system(LONG, "1h"), messages=HELLO
    ).usage
    assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens == system_tokens(LONG)


def test_tools_come_before_the_system_prompt_in_the_cached_prefix(client):
    ask = dict(
        model="claude-haiku-5-5",
        max_tokens=256,
        system=cached_system(LONG),
        messages=HELLO,
        tool_choice={"type": "none"},
    )
    first = client.messages.create(tools=[DECIDE], **ask).usage
    again = client.messages.create(tools=[DECIDE], **ask).usage
    assert again.cache_read_input_tokens == first.cache_creation_input_tokens > system_tokens(LONG)
    renamed = client.messages.create(
        tools=[{**DECIDE, "name": "order"}], **ask
    ).usage  # a changed tool invalidates the system entry
    assert (
        renamed.cache_read_input_tokens == 0
        and renamed.cache_creation_input_tokens == first.cache_creation_input_tokens
    )


def test_top_level_cache_control_caches_a_growing_conversation(client):
    turn = [{"role": "user", "content": LONG}]
    first = client.messages.create(
        model="claude-haiku-5-5", max_tokens=256, messages=turn, cache_control={"type": "ephemeral"}
    ).usage
    assert first.cache_creation_input_tokens > 0 and first.input_tokens == 0
    grown = turn + [{"role": "assistant", "content": "OK"}, {"role": "user", "content": "And now?"}]
    second = client.messages.create(
        model="claude-haiku-5-5", max_tokens=256, messages=grown, cache_control={"type": "ephemeral"}
    ).usage
    assert (
        second.cache_read_input_tokens == first.cache_creation_input_tokens
    )  # found looking back from the new last block
    assert second.cache_creation_input_tokens > 0 and second.input_tokens == 0


def test_warming_with_max_tokens_zero_writes_without_answering(client):
    message = client.messages.create(
        model="claude-haiku-5-5", max_tokens=0, system=cached_system(LONG), messages=HELLO
    )
    assert (
        message.content == []
        and message.usage.output_tokens == 0
        and message.usage.cache_creation_input_tokens == system_tokens(LONG)
    )


def test_more_than_four_breakpoints_are_refused(client):
    system = [
        {"type": "text", "text": f"Rule {i}.", "cache_control": {"type": "ephemeral"}} for i in range(4)
    ]
    error = refused(
        client, system=system, cache_control={"type": "ephemeral"}
    )  # the top-level one takes a fifth slot
    assert error.api_message == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert (
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=64, system=system, messages=HELLO
        ).stop_reason
        == "end_turn"
    )


# -- count_tokens ----------------------------------------------------------------------------


def test_count_tokens_counts_as_messages_do_and_refuses_alike(client):
    ask = dict(model="claude-haiku-4-5", system="Be brief.", messages=HELLO, tools=[DECIDE])
    counted = client.messages.count_tokens(**ask).input_tokens
    usage = client.messages.create(max_tokens=256, **ask).usage
    assert counted == usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.count_tokens(**ask, extra_body={"max_tokens": 256})
    assert caught.value.api_message == "max_tokens: Extra inputs are not permitted"
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.count_tokens(**{**ask, "model": "claude-nope"})
    assert caught.value.api_message == "model: claude-nope"


# -- scripted failures -----------------------------------------------------------------------


def test_a_scripted_429_says_when_to_retry_then_the_next_call_succeeds(fake, client):
    fake.fail(429, retry_after=7)
    error = refused(client, anthropic.RateLimitError)
    assert error.type == "rate_limit_error" and error.response.headers["retry-after"] == "7"
    assert (
        client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=HELLO).content[0].text
        == "OK"
    )


def test_the_sdk_retries_a_429_after_its_retry_after(fake):
    fake.fail(429, retry_after=0.01)
    with sdk(fake, max_retries=1) as retrying:
        assert (
            retrying.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=HELLO).content[0].text
            == "OK"
        )
    assert [c.status for c in fake.calls] == [429, 200]


def test_a_scripted_529_is_overloaded(fake, client):
    fake.fail(529, times=2)
    for _ in range(2):
        error = refused(client, anthropic.OverloadedError)
        assert (
            error.status_code == 529
            and error.type == "overloaded_error"
            and error.api_message == "Overloaded"
        )
    assert [c.status for c in fake.calls] == [529, 529]
