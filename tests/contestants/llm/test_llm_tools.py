"""Requests that offer tools: the conversation of tool calls and their results goes to each
API in its own form (the stand-ins refuse a result without its call, a call left without its
result, and a request longer than the model's window, with the real error bodies), and what
comes back is the text, the calls, the reasoning and what must be carried to the next step."""

from __future__ import annotations

import json

import pytest
from fakes.openai_api import Uses

from contestants.calls.cache import request_key
from contestants.calls.coordinator import LocalCallCoordinator
from contestants.calls.types import CompletionRequest, Message, Tool, ToolCall
from contestants.llm import ProviderError, get_provider

KEY = "sk-fake-openai"
OBJECT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
PRICE = {
    "type": "object",
    "properties": {"product": {"type": "string", "enum": ["tea"]}, "price": {"type": "number"}},
    "required": ["product", "price"],
    "additionalProperties": False,
}
TOOLS = (
    Tool(name="read_books", description="Your cash, stock and receivables.", parameters=OBJECT),
    Tool(name="set_price", description="Post a product's price for today.", parameters=PRICE),
    Tool(name="end_day", description="Close the day.", parameters=OBJECT),
)
RULES = Message(role="system", content="You run a tea shop. Use the tools; end the day when done.")
MORNING = Message(role="user", content="Day 3 of 30 begins.")


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("ARENA_TEST_OPENAI", KEY)


def openai(fake, model: str, **settings):
    """A provider at the stand-in, with a call coordinator of its own (the process's own counts
    failures in a row across tests, and three refusals stop it)."""
    return get_provider(
        f"openai/{model}",
        {
            "base_url": fake.base_url,
            "api_key_env": "ARENA_TEST_OPENAI",
            "no_cache": True,
            "backoff_initial": 0.01,
            **settings,
        },
        coordinator=LocalCallCoordinator(),
    )


def step(*messages: Message, max_tokens: int = 300) -> CompletionRequest:
    return CompletionRequest(messages=(RULES, MORNING, *messages), tools=TOOLS, max_tokens=max_tokens)


def results(calls: tuple[ToolCall, ...]) -> tuple[Message, ...]:
    """A result for each call, naming what it was asked."""
    return tuple(
        Message(role="tool", tool_call_id=call.id, content=f"{call.name} done: {call.arguments}")
        for call in calls
    )


def script(*answers):
    """The stand-in's answers, one a request, in order."""
    queue = list(answers)
    return lambda call, schema: queue.pop(0)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_days_steps_carry_the_calls_and_their_results(fake_openai, api):
    fake_openai.answer = script(
        Uses((("read_books", {}), ("set_price", {"product": "tea", "price": 4.5})), text="Let me look."),
        "Prices set; that is all.",
    )
    provider = openai(fake_openai, "gpt-4.1-mini", api=api)
    first = provider.complete(step())
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("read_books", {}),
        ("set_price", {"product": "tea", "price": 4.5}),
    ]
    assert first.text == "Let me look." and len({c.id for c in first.tool_calls}) == 2
    second = provider.complete(step(first.turn(), *results(first.tool_calls)))
    assert second.text == "Prices set; that is all." and second.tool_calls == ()
    sent = fake_openai.calls[1].body
    if api == "chat":
        assistant, *answered = sent["messages"][2:]
        assert [c["id"] for c in assistant["tool_calls"]] == [m["tool_call_id"] for m in answered]
        assert [t["function"]["name"] for t in sent["tools"]] == [t.name for t in TOOLS]
    else:
        kinds = [item.get("type", "message") for item in sent["input"]]
        assert kinds == [
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
        assert sent["input"][-1]["output"].startswith("set_price done")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_result_without_its_call_is_refused_as_the_api_refuses_it(fake_openai, api):
    orphan = Message(role="tool", tool_call_id="call_nobody", content="42")
    with pytest.raises(ProviderError) as refused:
        openai(fake_openai, "gpt-4.1-mini", api=api).complete(step(orphan))
    assert refused.value.status == 400 and not refused.value.retryable
    assert ("preceeding message with 'tool_calls'" if api == "chat" else "No tool call found") in str(
        refused.value
    )


def test_a_call_left_without_its_result_is_refused(fake_openai):
    asked = Message(
        role="assistant", content="", tool_calls=(ToolCall(id="call_1", name="read_books", arguments="{}"),)
    )
    with pytest.raises(ProviderError, match="did not have response messages: call_1"):
        openai(fake_openai, "gpt-4.1-mini").complete(step(asked))


def test_a_request_longer_than_the_window_is_refused_with_the_apis_body(fake_openai):
    fake_openai.contexts["gpt-4.1-mini"] = 400
    long_day = Message(role="user", content="sold 3 tea at 4.5; " * 200)
    with pytest.raises(ProviderError) as refused:
        openai(fake_openai, "gpt-4.1-mini").complete(step(long_day))
    assert refused.value.code == "context_length_exceeded" and refused.value.status == 400
    assert "maximum context length is 400 tokens" in str(refused.value)
    assert len(fake_openai.calls) == 1  # not retried


def reasoned(fake, **settings):
    """A reasoning model on the Responses API, at the stand-in."""
    return openai(fake, "gpt-5-mini", api="responses", reasoning_effort="low", **settings)


TWO_CALLS = Uses((("read_books", {}), ("set_price", {"product": "tea", "price": 4.5})), text="Looking.")


def test_a_reasoning_models_items_go_back_whole_and_in_order(fake_openai):
    """The model reasons before its text and again before its second call; each reasoning item
    goes back right before the item that followed it, with its encrypted content, since
    nothing is stored; its summary is kept as the turn's reasoning."""
    fake_openai.answer = script(TWO_CALLS, "Done.")
    provider = reasoned(fake_openai)
    first = provider.complete(step())
    asked = fake_openai.calls[0].body
    assert asked["reasoning"] == {"effort": "low", "summary": "auto"}
    assert asked["store"] is False and asked["include"] == ["reasoning.encrypted_content"]
    assert first.reasoning == "Weighing 1 items of input."
    assert [item["type"] for item in first.carried] == [
        "reasoning",
        "message",
        "function_call",
        "reasoning",
        "function_call",
    ]
    assert all(item["encrypted_content"] for item in first.carried if item["type"] == "reasoning")
    second = provider.complete(step(first.turn(), *results(first.tool_calls)))
    assert second.text == "Done."
    sent = fake_openai.calls[1].body["input"]
    assert sent[1:6] == list(first.carried)  # the rules go as instructions
    assert [item["type"] for item in sent[6:]] == ["function_call_output"] * 2


def test_a_turn_rebuilt_around_its_reasoning_is_refused_as_the_api_refuses_it(fake_openai):
    """What was sent before: the reasoning items first, then the text and the calls rebuilt
    without their ids. The API wants each reasoning item right before the item that followed it."""
    fake_openai.answer = script(TWO_CALLS)
    provider = reasoned(fake_openai)
    first = provider.complete(step())
    thought = tuple(item for item in first.carried if item["type"] == "reasoning")
    rebuilt = Message(
        role="assistant",
        content=first.text,
        tool_calls=first.tool_calls,
        carried=(
            *thought,
            {"role": "assistant", "content": first.text},
            *(
                {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
                for c in first.tool_calls
            ),
        ),
    )
    with pytest.raises(
        ProviderError, match="of type 'reasoning' was provided without its required following"
    ):
        provider.complete(step(rebuilt, *results(first.tool_calls)))


def test_reasoning_items_without_their_content_are_unknown_when_nothing_was_stored(fake_openai):
    fake_openai.answer = script(Uses((("read_books", {}),)))
    provider = reasoned(fake_openai)
    first = provider.complete(step())
    bare = tuple({k: v for k, v in item.items() if k != "encrypted_content"} for item in first.carried)
    with pytest.raises(
        ProviderError, match="Items are not persisted when `store` is set to false"
    ) as refused:
        provider.complete(step(first.turn().model_copy(update={"carried": bare}), *results(first.tool_calls)))
    assert refused.value.status == 404


def test_an_organisation_without_reasoning_summaries_goes_on_without_them(fake_openai, caplog):
    """The API refuses summaries to an unverified organisation: the provider asks once more
    without, says so once, and asks for none after."""
    fake_openai.verified = False
    fake_openai.answer = script(Uses((("read_books", {}),)), "Done.")
    provider = reasoned(fake_openai)
    first = provider.complete(step())
    assert first.tool_calls and first.reasoning is None
    provider.complete(step(first.turn(), *results(first.tool_calls)))
    summaries = ["summary" in call.body["reasoning"] for call in fake_openai.calls]
    assert summaries == [True, False, False]
    assert sum("no reasoning summaries" in r.getMessage() for r in caplog.records) == 1


def test_a_reasoning_summary_can_be_left_out(fake_openai):
    fake_openai.answer = script(Uses((("read_books", {}),)))
    first = reasoned(fake_openai, reasoning_summary=None).complete(step())
    assert fake_openai.calls[0].body["reasoning"] == {"effort": "low"} and first.reasoning is None


@pytest.mark.parametrize("own", ["reasoning_content", "thought_signatures"])
def test_a_compatible_servers_own_fields_go_back_with_its_calls(fake_openai, own):
    """DeepSeek's reasoning_content and Gemini's thought signatures: the servers refuse the
    next step without them."""
    setattr(fake_openai, own, True)
    fake_openai.answer = script(TWO_CALLS, "Done.", TWO_CALLS)
    provider = openai(fake_openai, "gpt-4.1-mini")
    first = provider.complete(step())
    [turn] = first.carried
    if own == "reasoning_content":
        assert turn["reasoning_content"] == "Reading 2 messages."
    else:
        assert all(c["extra_content"]["google"]["thought_signature"] for c in turn["tool_calls"])
    assert provider.complete(step(first.turn(), *results(first.tool_calls))).text == "Done."
    assert fake_openai.calls[1].body["messages"][2] == turn
    stripped = first.turn().model_copy(update={"carried": ()})
    wording = (
        "Missing `reasoning_content` field" if own == "reasoning_content" else "missing a thought_signature"
    )
    with pytest.raises(ProviderError, match=wording):
        provider.complete(step(stripped, *results(first.tool_calls)))


def test_answers_cached_before_turns_were_carried_whole_still_go_back(
    fake_openai, fake_anthropic, monkeypatch
):
    """An arena that carried only the reasoning items (Responses) or the thinking (Anthropic)
    cached such answers: their turns are rebuilt in a form the APIs take, the reasoning items
    left out, the thinking first."""
    fake_openai.answer = script(Uses((("read_books", {}),)), "Done.")
    provider = reasoned(fake_openai)
    first = provider.complete(step())
    old = first.turn().model_copy(
        update={"carried": tuple(i for i in first.carried if i["type"] == "reasoning")}
    )
    assert provider.complete(step(old, *results(first.tool_calls))).text == "Done."
    assert [item.get("type", "message") for item in fake_openai.calls[1].body["input"][1:]] == [
        "function_call",
        "function_call_output",
    ]
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.answer = script(Uses((("read_books", {}),), text="Looking."), "Done.")
    claude = anthropic(fake_anthropic, "claude-opus-5")
    first = claude.complete(step())
    thinking = tuple(b for b in first.carried if b["type"] == "thinking")
    old = first.turn().model_copy(update={"carried": thinking})
    assert claude.complete(step(old, *results(first.tool_calls))).text == "Done."
    assert [b["type"] for b in fake_anthropic.calls[1].body["messages"][1]["content"]] == [
        "thinking",
        "text",
        "tool_use",
    ]


def test_tool_calls_without_an_id_are_given_one(fake_openai):
    fake_openai.blank_call_ids = True
    fake_openai.answer = script(TWO_CALLS, "Done.")
    provider = openai(fake_openai, "gpt-4.1-mini")
    first = provider.complete(step())
    assert len({c.id for c in first.tool_calls}) == 2 and all(c.id for c in first.tool_calls)
    assert provider.complete(step(first.turn(), *results(first.tool_calls))).text == "Done."


def test_an_empty_text_block_is_not_given_back(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.empty_text = True
    fake_anthropic.answer = script(Uses((("read_books", {}),)), "Done.")
    provider = anthropic(fake_anthropic, "claude-opus-5")
    first = provider.complete(step())
    assert [b["type"] for b in first.carried] == ["thinking", "tool_use"]
    assert provider.complete(step(first.turn(), *results(first.tool_calls))).text == "Done."


def test_the_users_request_settings_add_to_what_arena_asks_for(fake_openai):
    fake_openai.answer = script(Uses((("read_books", {}),)))
    settings = {
        "request": {"include": ["message.output_text.logprobs"], "reasoning": {"summary": "detailed"}}
    }
    reasoned(fake_openai, **settings).complete(step())
    body = fake_openai.calls[0].body
    assert body["include"] == ["reasoning.encrypted_content", "message.output_text.logprobs"]
    assert body["reasoning"] == {"effort": "low", "summary": "detailed"} and body["store"] is False


def test_a_model_not_known_to_reason_is_asked_to_store_nothing_less(fake_openai):
    """Encrypted reasoning is refused for a model that does not reason, and without it a
    reasoning item must be stored to be given back: such a model keeps the API's default."""
    fake_openai.answer = script(Uses((("read_books", {}),)))
    openai(fake_openai, "gpt-4.1-mini", api="responses").complete(step())
    assert "store" not in fake_openai.calls[0].body and "include" not in fake_openai.calls[0].body


def test_a_turn_id_must_name_something():
    with pytest.raises(ValueError):
        Message(role="tool", tool_call_id="", content="42")
    with pytest.raises(ValueError):
        ToolCall(id="", name="read_books", arguments="{}")


def test_a_conversation_without_tools_keeps_its_cache_key():
    """Tools added fields to the request and its turns: without tools they are not part of
    what the response cache hashes, so answers cached before stay found."""
    plain = CompletionRequest(messages=(RULES, MORNING), json_schema=OBJECT)
    assert set(plain.model_dump()) == {
        "messages",
        "json_schema",
        "schema_name",
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
    }
    assert all(set(m) == {"role", "content"} for m in plain.model_dump()["messages"])
    with_tools = CompletionRequest(messages=(RULES, MORNING), tools=TOOLS)
    assert request_key({}, plain) != request_key({}, with_tools)


def test_a_request_asks_for_a_schema_or_offers_tools():
    with pytest.raises(ValueError, match="one of the two"):
        CompletionRequest(messages=(RULES,), json_schema=OBJECT, tools=TOOLS)
    with pytest.raises(ValueError, match="one of the two"):
        CompletionRequest(messages=(RULES,))
    with pytest.raises(ValueError, match="names the call it answers"):
        Message(role="tool", content="42")


def anthropic(fake, model: str, **settings):
    return get_provider(
        f"anthropic/{model}",
        {"base_url": fake.base_url, "api_key_env": "ARENA_TEST_ANTHROPIC", "no_cache": True, **settings},
        coordinator=LocalCallCoordinator(),
    )


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-opus-5"])
def test_anthropic_tool_uses_and_results_alternate_and_the_thinking_goes_back(
    fake_anthropic, monkeypatch, model
):
    """Opus thinks by default (adaptive), again before its second call: its turn goes back as
    it came, signed thinking in its places, or the API refuses it; the results of one turn go
    back together in one user turn, after a cache breakpoint on the last of them."""
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.answer = script(
        Uses((("read_books", {}), ("set_price", {"product": "tea", "price": 4.5})), text="Looking."),
        "That is all for today.",
    )
    provider = anthropic(fake_anthropic, model)
    first = provider.complete(step())
    assert [c.name for c in first.tool_calls] == ["read_books", "set_price"] and first.text == "Looking."
    thinks = model == "claude-opus-5"
    assert bool(first.reasoning) == thinks
    kinds = (
        ["thinking", "text", "tool_use", "thinking", "tool_use"]
        if thinks
        else ["text", "tool_use", "tool_use"]
    )
    assert [b["type"] for b in first.carried] == kinds
    second = provider.complete(step(first.turn(), *results(first.tool_calls)))
    assert second.text == "That is all for today." and not second.tool_calls
    sent = fake_anthropic.calls[1].body["messages"]
    turn, answered = sent[1]["content"], sent[2]["content"]
    assert turn == list(first.carried)
    assert [b["tool_use_id"] for b in answered] == [b["id"] for b in turn if b["type"] == "tool_use"]
    assert answered[-1]["cache_control"] == {"type": "ephemeral"}
    # where the step before ended, too: the morning, before the model's turn
    assert sent[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_anthropic_refuses_a_thinking_turn_given_back_without_its_thinking(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.answer = script(Uses((("read_books", {}),)))
    provider = anthropic(fake_anthropic, "claude-opus-5")
    first = provider.complete(step())
    stripped = first.turn().model_copy(update={"carried": ()})
    with pytest.raises(ProviderError, match="must start with a thinking block"):
        provider.complete(step(stripped, *results(first.tool_calls)))


def test_anthropic_refuses_a_thinking_turn_given_back_regrouped(fake_anthropic, monkeypatch):
    """What was sent before: all thinking first, then the text and the tool uses."""
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.answer = script(TWO_CALLS)
    provider = anthropic(fake_anthropic, "claude-opus-5")
    first = provider.complete(step())
    regrouped = sorted(first.carried, key=lambda block: block["type"] != "thinking")
    assert regrouped != list(first.carried)
    with pytest.raises(ProviderError, match="cannot be modified"):
        provider.complete(
            step(first.turn().model_copy(update={"carried": tuple(regrouped)}), *results(first.tool_calls))
        )


def test_anthropic_refuses_thinking_it_did_not_sign(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.answer = script(Uses((("read_books", {}),)))
    provider = anthropic(fake_anthropic, "claude-opus-5")
    first = provider.complete(step())
    forged = ({**first.carried[0], "thinking": "I should raise prices."}, *first.carried[1:])
    with pytest.raises(ProviderError, match="Invalid `signature` in `thinking` block"):
        provider.complete(
            step(first.turn().model_copy(update={"carried": forged}), *results(first.tool_calls))
        )


def test_anthropic_refuses_a_prompt_longer_than_the_window(fake_anthropic, monkeypatch):
    monkeypatch.setenv("ARENA_TEST_ANTHROPIC", "sk-ant-fake")
    fake_anthropic.contexts["claude-haiku-4-5"] = 300
    with pytest.raises(ProviderError, match=r"prompt is too long: \d+ tokens > 300 maximum"):
        anthropic(fake_anthropic, "claude-haiku-4-5").complete(
            step(Message(role="user", content="sold 3 tea at 4.5; " * 200))
        )


@pytest.fixture(scope="module")
def smollm2():
    return get_provider("local/smollm2", {"no_cache": True})


def test_the_embedded_model_answers_each_step_with_one_call_of_an_offered_tool(smollm2):
    first = smollm2.complete(step(max_tokens=60))
    [call] = first.tool_calls
    assert call.name in {t.name for t in TOOLS}
    arguments = json.loads(call.arguments)
    if call.name == "set_price":
        assert arguments["product"] == "tea" and isinstance(arguments["price"], (int, float))
    else:
        assert arguments == {}
    second = smollm2.complete(step(first.turn(), *results(first.tool_calls), max_tokens=60))
    [again] = second.tool_calls
    assert again.id != call.id and again.name in {t.name for t in TOOLS}
    assert second.usage.input_tokens > first.usage.input_tokens  # the first step and its result are read
