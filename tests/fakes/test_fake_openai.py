"""The OpenAI stand-in, driven through the official SDK: what it refuses (and with which body),
what it answers, its usage numbers, its prompt cache, its rate limit and its scripted failures."""

from __future__ import annotations

import functools
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from openai_api import CACHE_MINIMUM, CACHE_STEP, MODELS, FakeOpenAI
from schemas import fits

KEY = "sk-fake-openai"
HELLO = [{"role": "user", "content": "Hello"}]

LEG = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["buy", "sell"]},
        "qty": {"type": "integer", "minimum": 1},
    },
    "required": ["kind", "qty"],
    "additionalProperties": False,
}
ORDER = {
    "type": "object",
    "properties": {
        "operations": {"type": "array", "items": LEG, "minItems": 1},
        "note": {"type": ["string", "null"]},
    },
    "required": ["operations", "note"],
    "additionalProperties": False,
}
LEG_PATH = ("properties", "operations", "items")


def json_schema_format(schema: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "order", "schema": schema, "strict": strict}}


def text_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"format": {"type": "json_schema", "name": "order", "schema": schema, "strict": True}}


def chat_tool(schema: dict[str, Any], name: str = "decide") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": schema, "strict": True}}


def flat_tool(schema: dict[str, Any], name: str = "decide") -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": schema, "strict": True}


def changed(
    schema: dict[str, Any], path: tuple[str, ...] = (), drop: str | None = None, **keys: Any
) -> dict[str, Any]:
    """A copy of `schema` with, at `path`, the key `drop` removed and `keys` set."""
    copy = json.loads(json.dumps(schema))
    target = copy
    for part in path:
        target = target[part]
    if drop:
        del target[drop]
    target.update(keys)
    return copy


# Every SDK client would load the system's CA certificates into a TLS context of its own (most of a
# test's CPU); the stand-in speaks plain HTTP, so the clients share one context, loaded once.
tls = functools.cache(ssl.create_default_context)


def sdk(fake: FakeOpenAI, api_key: str = KEY, max_retries: int = 0) -> openai.OpenAI:
    """An SDK client of the stand-in."""
    http = openai.DefaultHttpxClient(verify=tls())
    return openai.OpenAI(base_url=fake.base_url, api_key=api_key, max_retries=max_retries, http_client=http)


@pytest.fixture
def fake():
    stand_in = FakeOpenAI().start()
    yield stand_in
    stand_in.close()


@pytest.fixture
def client(fake: FakeOpenAI) -> openai.OpenAI:
    return sdk(fake)


@pytest.fixture(scope="module")
def shared():
    """A client of one stand-in for the tables of refusals, which leave no state behind (closing
    a server takes a poll interval, so a fresh one per row would make the tables slow)."""
    stand_in = FakeOpenAI().start()
    yield sdk(stand_in)
    stand_in.close()


def chat(client: openai.OpenAI, model: str = "gpt-4.1-mini", messages: list[Any] = HELLO, **arguments: Any):
    """A chat completion, as the SDK parsed it and as the raw JSON, which must fit the SDK's
    types exactly (the SDK alone would tolerate missing fields)."""
    raw = client.chat.completions.with_raw_response.create(model=model, messages=messages, **arguments)
    body = json.loads(raw.text)
    ChatCompletion.model_validate(body)
    return raw.parse(), body, raw.headers


def respond(client: openai.OpenAI, model: str = "gpt-4.1-mini", input: Any = "Hello", **arguments: Any):
    """A Responses answer, parsed and raw, checked against the SDK's types like `chat`."""
    raw = client.responses.with_raw_response.create(model=model, input=input, **arguments)
    body = json.loads(raw.text)
    Response.model_validate(body)
    return raw.parse(), body, raw.headers


def refused(call, **arguments: Any) -> openai.APIStatusError:
    with pytest.raises(openai.APIStatusError) as caught:
        call(**arguments)
    return caught.value


# -- successes -----------------------------------------------------------------------------------


def test_models_lists_every_served_model(client: openai.OpenAI):
    assert sorted(m.id for m in client.models.list()) == sorted(MODELS)


def test_chat_answers_a_strict_schema_with_its_snapshot_and_usage(client: openai.OpenAI):
    messages = [{"role": "developer", "content": "Trade."}, *HELLO]
    completion, _, headers = chat(client, "gpt-5-mini", messages, response_format=json_schema_format(ORDER))
    assert headers["x-request-id"].startswith("req_")
    assert completion.id.startswith("chatcmpl-") and completion.system_fingerprint.startswith("fp_")
    assert completion.model == "gpt-5-mini-2025-08-07"
    content = completion.choices[0].message.content
    assert fits(json.loads(content), ORDER) is None
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert usage.completion_tokens_details.reasoning_tokens == 16 * 3  # medium, the default
    assert usage.completion_tokens == 48 + len(content) // 4
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_chat_on_a_non_reasoning_model_takes_sampling_and_max_tokens(client: openai.OpenAI):
    messages = [{"role": "system", "content": "Be brief."}, *HELLO]
    completion, _, _ = chat(client, "gpt-4.1-mini", messages, temperature=0, top_p=0.5, max_tokens=50, seed=7)
    assert completion.model == "gpt-4.1-mini-2025-04-14"
    assert completion.usage.completion_tokens_details.reasoning_tokens == 0
    assert completion.choices[0].message.content


@pytest.mark.parametrize("effort, steps", [("none", 0), ("low", 2), ("high", 4), ("xhigh", 5), ("max", 6)])
def test_reasoning_tokens_grow_with_the_effort(shared: openai.OpenAI, effort: str, steps: int):
    completion, _, _ = chat(shared, "gpt-6-luna", reasoning_effort=effort)
    assert completion.usage.completion_tokens_details.reasoning_tokens == 16 * steps


def test_luna_takes_temperature_and_tools_at_effort_none(client: openai.OpenAI):
    completion, _, _ = chat(
        client,
        "gpt-6-luna",
        reasoning_effort="none",
        temperature=0.2,
        tools=[chat_tool(ORDER)],
        tool_choice={"type": "function", "function": {"name": "decide"}},
    )
    call = completion.choices[0].message.tool_calls[0]
    assert call.id.startswith("call_") and call.function.name == "decide"
    assert fits(json.loads(call.function.arguments), ORDER) is None
    assert completion.choices[0].message.content is None
    assert completion.choices[0].finish_reason == "stop"  # a forced call ends with "stop", as on the real API


def test_an_automatic_tool_call_ends_with_tool_calls(client: openai.OpenAI):
    completion, _, _ = chat(client, "gpt-5-mini", tools=[chat_tool(ORDER)], tool_choice="required")
    assert completion.choices[0].finish_reason == "tool_calls"


def test_responses_answers_a_schema_with_reasoning_at_max_effort(client: openai.OpenAI):
    response, body, headers = respond(
        client, "gpt-6-astra", instructions="Trade.", reasoning={"effort": "max"}, text=text_format(ORDER)
    )
    assert headers["x-request-id"].startswith("req_")
    assert response.id.startswith("resp_") and response.model == "gpt-6-astra"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert response.output[0].id.startswith("rs_") and response.output[1].id.startswith("msg_")
    assert fits(json.loads(response.output_text), ORDER) is None
    usage = response.usage
    assert usage.output_tokens_details.reasoning_tokens == 16 * 6
    assert usage.output_tokens == 96 + len(response.output_text) // 4
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert "system_fingerprint" not in body


def test_responses_calls_a_flat_function_tool_on_astra(client: openai.OpenAI):
    conversation = [{"role": "developer", "content": "Trade."}, {"role": "user", "content": "Hello"}]
    response, _, _ = respond(
        client,
        "gpt-6-astra",
        conversation,
        tools=[flat_tool(ORDER)],
        tool_choice={"type": "function", "name": "decide"},
    )
    call = response.output[-1]
    assert call.type == "function_call" and call.name == "decide" and call.call_id.startswith("call_")
    assert fits(json.loads(call.arguments), ORDER) is None


def test_a_non_reasoning_model_reports_no_reasoning_on_responses(client: openai.OpenAI):
    response, _, _ = respond(client, "gpt-4.1-mini", temperature=1.5)
    assert [item.type for item in response.output] == ["message"]
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_reasoning_can_use_up_the_output_limit(client: openai.OpenAI):
    completion, _, _ = chat(client, "gpt-5-mini", reasoning_effort="high", max_completion_tokens=20)
    assert completion.choices[0].finish_reason == "length"
    assert completion.choices[0].message.content == ""
    assert completion.usage.completion_tokens == 20
    response, _, _ = respond(client, "gpt-5-mini", reasoning={"effort": "high"}, max_output_tokens=16)
    assert response.status == "incomplete" and response.incomplete_details.reason == "max_output_tokens"
    assert [item.type for item in response.output] == ["reasoning"]


def test_the_answer_hook_decides_and_a_strict_misfit_is_a_loud_500(fake: FakeOpenAI, client: openai.OpenAI):
    seen: list[Any] = []

    def answer(call, schema):
        seen.append(schema)
        return {"operations": [], "note": None}  # minItems is 1: this does not fit

    fake.answer = answer
    error = refused(
        client.chat.completions.create,
        model="gpt-5-mini",
        messages=HELLO,
        response_format=json_schema_format(ORDER),
    )
    assert error.status_code == 500 and "does not fit the strict schema 'order'" in error.body["message"]
    assert seen == [ORDER]
    loose, _, _ = chat(client, "gpt-5-mini", response_format=json_schema_format(ORDER, strict=False))
    assert json.loads(loose.choices[0].message.content) == {"operations": [], "note": None}


def test_json_object_needs_the_word_json(client: openai.OpenAI):
    error = refused(
        client.chat.completions.create,
        model="gpt-4.1-mini",
        messages=HELLO,
        response_format={"type": "json_object"},
    )
    assert error.status_code == 400
    assert error.body["message"] == (
        "'messages' must contain the word 'json' in some form, "
        "to use 'response_format' of type 'json_object'."
    )
    asked = [{"role": "user", "content": "Answer in JSON."}]
    completion, _, _ = chat(client, "gpt-4.1-mini", asked, response_format={"type": "json_object"})
    assert isinstance(json.loads(completion.choices[0].message.content), dict)


# -- refusals ------------------------------------------------------------------------------------

NOT_SUPPORTED = "Unsupported parameter: '{}' is not supported with this model."
MAX_TOKENS = NOT_SUPPORTED.format("max_tokens") + " Use 'max_completion_tokens' instead."
ONLY_DEFAULT = (
    "Unsupported value: '{}' does not support {} with this model. Only the default (1) value is supported."
)
EFFORT = "Unsupported value: '{}' does not support '{}' with this model. Supported values are: {}."
ASTRA_CHAT_EFFORTS = "'low', 'medium', 'high', and 'xhigh'"
FUNCTION_TOOLS = (
    "Function tools with reasoning_effort are not supported for {} in /v1/chat/completions. "
    "To use function tools, use /v1/responses or set reasoning_effort to 'none'."
)
TOOLS = [chat_tool(ORDER)]

CHAT_REFUSALS = [  # model, create() arguments, code, param, message
    ("gpt-6-astra", {"max_tokens": 10}, "unsupported_parameter", "max_tokens", MAX_TOKENS),
    ("gpt-6-astra", {"temperature": 1}, None, "temperature", NOT_SUPPORTED.format("temperature")),
    ("gpt-6-astra", {"top_p": 1}, None, "top_p", NOT_SUPPORTED.format("top_p")),
    ("gpt-6-astra", {"tools": TOOLS}, None, "reasoning_effort", FUNCTION_TOOLS.format("gpt-6-astra")),
    (
        "gpt-6-astra",
        {"tools": TOOLS, "reasoning_effort": "low"},
        None,
        "reasoning_effort",
        FUNCTION_TOOLS.format("gpt-6-astra"),
    ),
    (
        "gpt-6-astra",
        {"reasoning_effort": "none"},
        "unsupported_value",
        "reasoning_effort",
        EFFORT.format("reasoning_effort", "none", ASTRA_CHAT_EFFORTS),
    ),
    (
        "gpt-6-astra",
        {"reasoning_effort": "max"},
        "unsupported_value",
        "reasoning_effort",
        EFFORT.format("reasoning_effort", "max", ASTRA_CHAT_EFFORTS),
    ),
    (
        "gpt-6-luna",
        {"temperature": 0.2},
        "unsupported_value",
        "temperature",
        ONLY_DEFAULT.format("temperature", "0.2"),
    ),
    ("gpt-6-luna", {"tools": TOOLS}, None, "reasoning_effort", FUNCTION_TOOLS.format("gpt-6-luna")),
    (
        "gpt-6-luna",
        {"tools": TOOLS, "reasoning_effort": "high"},
        None,
        "reasoning_effort",
        FUNCTION_TOOLS.format("gpt-6-luna"),
    ),
    ("gpt-6-luna", {"max_tokens": 10}, "unsupported_parameter", "max_tokens", MAX_TOKENS),
    (
        "gpt-5-mini",
        {"temperature": 0},
        "unsupported_value",
        "temperature",
        ONLY_DEFAULT.format("temperature", "0"),
    ),
    (
        "gpt-5-mini",
        {"temperature": 0.0},
        "unsupported_value",
        "temperature",
        ONLY_DEFAULT.format("temperature", "0.0"),
    ),
    (
        "gpt-5-mini",
        {"reasoning_effort": "none"},
        "unsupported_value",
        "reasoning_effort",
        EFFORT.format("reasoning_effort", "none", "'minimal', 'low', 'medium', and 'high'"),
    ),
    ("gpt-5-mini", {"max_tokens": 10}, "unsupported_parameter", "max_tokens", MAX_TOKENS),
    ("gpt-5-mini", {"logprobs": True}, "unsupported_parameter", "logprobs", NOT_SUPPORTED.format("logprobs")),
    (
        "gpt-4.1-mini",
        {"reasoning_effort": "low"},
        "unsupported_parameter",
        "reasoning_effort",
        NOT_SUPPORTED.format("reasoning_effort"),
    ),
    (
        "gpt-4.1-mini",
        {"temperature": 3},
        "decimal_above_max_value",
        "temperature",
        "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
    ),
    ("gpt-4.1-mini", {"extra_body": {"foo": 1}}, None, None, "Unrecognized request argument supplied: foo"),
    (
        "gpt-4.1-mini",
        {"response_format": {"type": "json_object", "schema": ORDER}},
        "unknown_parameter",
        "response_format.schema",
        "Unknown parameter: 'response_format.schema'.",
    ),
    (
        "gpt-4.1-mini",
        {"tool_choice": "required"},
        None,
        "tool_choice",
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
    ),
    (
        "gpt-4.1-mini",
        {"messages": [{"role": "bot", "content": "hi"}]},
        "invalid_value",
        "messages[0].role",
        "Invalid value: 'bot'. "
        "Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.",
    ),
]


@pytest.mark.parametrize("model, arguments, code, param, message", CHAT_REFUSALS)
def test_chat_refusals(shared: openai.OpenAI, model, arguments, code, param, message):
    arguments = {"messages": [{"role": "user", "content": "json please"}], **arguments}
    error = refused(shared.chat.completions.create, model=model, **arguments)
    assert isinstance(error, openai.BadRequestError)
    assert error.body == {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    assert error.request_id.startswith("req_")


RESPONSES_REFUSALS = [  # model, create() arguments, code, param, message
    ("gpt-4.1-mini", {"extra_body": {"seed": 7}}, "unknown_parameter", "seed", "Unknown parameter: 'seed'."),
    (
        "gpt-4.1-mini",
        {"extra_body": {"max_tokens": 10}},
        "unknown_parameter",
        "max_tokens",
        "Unknown parameter: 'max_tokens'.",
    ),
    (
        "gpt-5-mini",
        {"extra_body": {"max_completion_tokens": 10}},
        "unknown_parameter",
        "max_completion_tokens",
        "Unknown parameter: 'max_completion_tokens'.",
    ),
    (
        "gpt-5-mini",
        {"extra_body": {"reasoning_effort": "low"}},
        "unsupported_parameter",
        None,
        "Unsupported parameter: 'reasoning_effort'. "
        "In the Responses API, this parameter has moved to 'reasoning.effort'. "
        "Try again with the new parameter. See the API documentation for more information: "
        "https://platform.openai.com/docs/api-reference/responses/create.",
    ),
    (
        "gpt-5-mini",
        {"extra_body": {"bogus": True}},
        "unknown_parameter",
        "bogus",
        "Unknown parameter: 'bogus'.",
    ),
    (
        "gpt-4.1-mini",
        {"reasoning": {"effort": "low"}},
        "unsupported_parameter",
        "reasoning.effort",
        NOT_SUPPORTED.format("reasoning.effort"),
    ),
    (
        "gpt-6-astra",
        {"reasoning": {"effort": "minimal"}},
        "unsupported_value",
        "reasoning.effort",
        EFFORT.format("reasoning.effort", "minimal", "'low', 'medium', 'high', 'xhigh', and 'max'"),
    ),
    ("gpt-6-astra", {"temperature": 0.0}, None, "temperature", NOT_SUPPORTED.format("temperature")),
    ("gpt-6-luna", {"top_p": 0.9}, "unsupported_value", "top_p", ONLY_DEFAULT.format("top_p", "0.9")),
    (
        "gpt-5-mini",
        {"max_output_tokens": 5},
        "integer_below_min_value",
        "max_output_tokens",
        "Invalid 'max_output_tokens': integer below minimum value. "
        "Expected a value >= 16, but got 5 instead.",
    ),
    (
        "gpt-5-mini",
        {"tools": TOOLS},
        "missing_required_parameter",
        "tools[0].name",  # Chat's nested tool shape
        "Missing required parameter: 'tools[0].name'.",
    ),
    (
        "gpt-5-mini",
        {"text": {"format": {"type": "json_object"}}},
        None,
        "input",
        "'input' must contain the word 'json' in some form, to use 'text.format' of type 'json_object'.",
    ),
]


@pytest.mark.parametrize("model, arguments, code, param, message", RESPONSES_REFUSALS)
def test_responses_refusals(shared: openai.OpenAI, model, arguments, code, param, message):
    error = refused(shared.responses.create, model=model, input="Hello", **arguments)
    assert isinstance(error, openai.BadRequestError)
    assert error.body == {"message": message, "type": "invalid_request_error", "param": param, "code": code}


@pytest.mark.parametrize("endpoint", ["chat", "responses"])
def test_an_unknown_model_is_a_404(shared: openai.OpenAI, endpoint: str):
    if endpoint == "chat":
        error = refused(shared.chat.completions.create, model="gpt-9", messages=HELLO)
    else:
        error = refused(shared.responses.create, model="gpt-9", input="Hello")
    assert isinstance(error, openai.NotFoundError)
    assert error.body == {
        "message": "The model `gpt-9` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }


@pytest.mark.parametrize("wrong", ["sk-proj-Zq81xTfLmW0pQeRsTuVw1234abcd", "sk-wrong"])
def test_a_wrong_key_is_a_401_that_never_shows_the_key(fake: FakeOpenAI, wrong: str):
    client = sdk(fake, wrong)
    error = refused(client.chat.completions.create, model="gpt-4.1-mini", messages=HELLO)
    assert isinstance(error, openai.AuthenticationError)
    assert (error.code, error.param, error.type) == ("invalid_api_key", None, "invalid_request_error")
    message = error.body["message"]
    masked = message.removeprefix("Incorrect API key provided: ")
    assert masked.endswith(". You can find your API key at https://platform.openai.com/account/api-keys.")
    assert wrong not in error.response.text and wrong not in str(error)
    if len(wrong) >= 16:  # long keys show as the real API shows them: 8 characters, asterisks, the last 4
        assert masked.startswith(wrong[:8] + "*" * (len(wrong) - 12) + wrong[-4:] + ". ")


def test_without_a_required_key_any_key_is_accepted():
    with FakeOpenAI(api_key=None) as fake:
        client = sdk(fake, "anything")
        assert chat(client)[0].choices


def test_an_unknown_path_is_an_invalid_url(fake: FakeOpenAI):
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{fake.base_url}/embeddingz", data=b"{}", headers=headers)
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    assert caught.value.code == 404
    assert json.loads(caught.value.read())["error"]["message"] == "Invalid URL (POST /v1/embeddingz)"


# -- strict schemas ------------------------------------------------------------------------------

STRICT_REFUSALS = [  # schema, the message after "Invalid schema for response_format 'order': "
    (
        changed(ORDER, drop="additionalProperties"),
        "In context=(), 'additionalProperties' is required to be supplied and to be false.",
    ),
    (
        changed(ORDER, LEG_PATH, required=["kind"]),
        "In context=('properties', 'operations', 'items'), "
        "'required' is required to be supplied and to be an array including every key in properties. "
        "Missing 'qty'.",
    ),
    (
        changed(ORDER, required=["operations", "note", "extra"]),
        "In context=(), 'required' must be an array that includes every key in `properties`. "
        "Extra required key 'extra' supplied.",
    ),
    (
        changed(ORDER, (*LEG_PATH, "properties", "kind"), minLength=1),
        "In context=('properties', 'operations', 'items', 'properties', 'kind'), "
        "'minLength' is not permitted.",
    ),
    (
        changed(ORDER, ("properties", "note"), drop="type", oneOf=[{"type": "string"}, {"type": "null"}]),
        "In context=('properties', 'note'), 'oneOf' is not permitted.",
    ),
    ({"anyOf": [ORDER]}, "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."),
]


@pytest.mark.parametrize("schema, problem", STRICT_REFUSALS)
def test_strict_schemas_are_checked_in_chat(shared: openai.OpenAI, schema, problem):
    arguments = {"model": "gpt-5-mini", "messages": HELLO, "response_format": json_schema_format(schema)}
    error = refused(shared.chat.completions.create, **arguments)
    assert error.body == {
        "message": f"Invalid schema for response_format 'order': {problem}",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "invalid_json_schema",
    }


def test_strict_schemas_are_checked_in_responses_and_in_tools(client: openai.OpenAI):
    loose = changed(ORDER, LEG_PATH, drop="additionalProperties")
    problem = (
        "In context=('properties', 'operations', 'items'), "
        "'additionalProperties' is required to be supplied and to be false."
    )
    error = refused(client.responses.create, model="gpt-6-astra", input="Hello", text=text_format(loose))
    assert (error.body["param"], error.body["code"]) == ("text.format.schema", "invalid_json_schema")
    assert error.body["message"] == f"Invalid schema for response_format 'order': {problem}"
    tools = [chat_tool(ORDER), chat_tool(loose, "other")]
    error = refused(client.chat.completions.create, model="gpt-5-mini", messages=HELLO, tools=tools)
    assert (error.body["param"], error.body["code"]) == (
        "tools[1].function.parameters",
        "invalid_function_parameters",
    )
    assert error.body["message"] == f"Invalid schema for function 'other': {problem}"
    error = refused(client.responses.create, model="gpt-6-astra", input="Hello", tools=[flat_tool(loose)])
    assert (error.body["param"], error.body["code"]) == ("tools[0].parameters", "invalid_function_parameters")


def test_strict_schemas_are_at_most_ten_levels_deep(client: openai.OpenAI):
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(9):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"], "additionalProperties": False}
    assert chat(client, "gpt-5-mini", response_format=json_schema_format(deep))[0].choices
    deeper = {"type": "object", "properties": {"x": deep}, "required": ["x"], "additionalProperties": False}
    arguments = {"model": "gpt-5-mini", "messages": HELLO, "response_format": json_schema_format(deeper)}
    error = refused(client.chat.completions.create, **arguments)
    assert "nested more than 10 levels" in error.body["message"]


def test_a_conforming_strict_schema_with_defs_refs_and_unions_is_accepted(client: openai.OpenAI):
    price = {"type": "number", "minimum": 0, "multipleOf": 0.5}
    leg = {
        "type": "object",
        "title": "Leg",
        "properties": {"price": price, "tag": {"type": "string", "pattern": "^[a-z]*$"}},
        "required": ["price", "tag"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "$defs": {"Leg": leg},
        "properties": {
            "legs": {"type": "array", "items": {"$ref": "#/$defs/Leg"}, "minItems": 1, "maxItems": 3},
            "mode": {
                "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}],
                "description": "optional",
            },
        },
        "required": ["legs", "mode"],
        "additionalProperties": False,
    }
    completion, _, _ = chat(client, "gpt-5-mini", response_format=json_schema_format(schema))
    assert fits(json.loads(completion.choices[0].message.content), schema) is None


def test_non_strict_schemas_are_not_checked(client: openai.OpenAI):
    schema = {"type": "object", "properties": {"name": {"type": "string", "minLength": 0}}}
    completion, _, _ = chat(client, "gpt-5-mini", response_format=json_schema_format(schema, strict=False))
    assert json.loads(completion.choices[0].message.content) == {"name": ""}


# -- caching -------------------------------------------------------------------------------------


def whole_prompt_cached(prompt_tokens: int) -> int:
    """What a prompt seen before in full has cached: its tokens, rounded down to 1024 + k*128."""
    return CACHE_MINIMUM + (prompt_tokens - CACHE_MINIMUM) // CACHE_STEP * CACHE_STEP


def test_a_long_shared_prefix_is_cached_and_a_short_prompt_never(client: openai.OpenAI):
    system = {"role": "system", "content": "Rules of the market. " * 250}  # about 1300 tokens

    def usage(question: str):
        return chat(client, "gpt-4.1-mini", [system, {"role": "user", "content": question}])[0].usage

    first, second, again = usage("What now?"), usage("And then?"), usage("And then?")
    assert first.prompt_tokens_details.cached_tokens == 0
    cached = second.prompt_tokens_details.cached_tokens
    assert CACHE_MINIMUM <= cached < second.prompt_tokens and (cached - CACHE_MINIMUM) % CACHE_STEP == 0
    assert again.prompt_tokens_details.cached_tokens == whole_prompt_cached(again.prompt_tokens)
    for _ in range(2):
        assert chat(client, "gpt-4.1-mini")[0].usage.prompt_tokens_details.cached_tokens == 0


def test_the_cache_works_on_responses_and_per_model(client: openai.OpenAI):
    instructions = "Rules of the market. " * 250
    first, other_model, second = (
        respond(client, model, instructions=instructions)[0].usage
        for model in ("gpt-5-mini", "gpt-6-luna", "gpt-5-mini")
    )
    assert first.input_tokens_details.cached_tokens == 0
    assert other_model.input_tokens_details.cached_tokens == 0
    assert second.input_tokens_details.cached_tokens == whole_prompt_cached(second.input_tokens)


# -- rate limit and scripted failures ------------------------------------------------------------


def test_the_rpm_limit_refuses_within_a_sliding_minute(fake: FakeOpenAI, client: openai.OpenAI):
    now = [1000.0]
    fake.clock = lambda: now[0]
    fake.rpm = 2
    chat(client)
    now[0] += 30
    respond(client)
    now[0] += 10
    error = refused(client.chat.completions.create, model="gpt-4.1-mini", messages=HELLO)
    assert isinstance(error, openai.RateLimitError)
    assert error.body == {
        "message": "Rate limit reached for gpt-4.1-mini in organization org-fake on requests per min (RPM): "
        "Limit 2, Used 2, Requested 1. Please try again in 20s. "
        "Visit https://platform.openai.com/account/rate-limits to learn more.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert (error.response.headers["retry-after"], error.response.headers["retry-after-ms"]) == (
        "20",
        "20000",
    )
    assert fake.rate_limited == 1
    now[0] += 20  # the first request leaves the window
    _, _, headers = chat(client)
    assert (headers["x-ratelimit-limit-requests"], headers["x-ratelimit-remaining-requests"]) == ("2", "0")
    assert fake.rate_limited == 1


def test_a_scripted_429_carries_retry_after(fake: FakeOpenAI, client: openai.OpenAI):
    fake.fail(429, retry_after=2)
    error = refused(client.chat.completions.create, model="gpt-4.1-mini", messages=HELLO)
    assert isinstance(error, openai.RateLimitError)
    assert (error.code, error.type) == ("rate_limit_exceeded", "requests")
    assert "Please try again in 2s." in error.body["message"]
    assert (error.response.headers["retry-after"], error.response.headers["retry-after-ms"]) == ("2", "2000")
    assert chat(client)[0].choices  # only the next call failed


@pytest.mark.parametrize(
    "status, kind, code, exception",
    [
        (500, "server_error", None, openai.InternalServerError),
        (503, "service_unavailable_error", "server_is_overloaded", openai.InternalServerError),
        (400, "invalid_request_error", "context_length_exceeded", openai.BadRequestError),
    ],
)
def test_scripted_failures_have_openai_bodies(
    fake: FakeOpenAI, client: openai.OpenAI, status, kind, code, exception
):
    fake.fail(status, times=2)
    for _ in range(2):
        error = refused(client.responses.create, model="gpt-4.1-mini", input="Hello")
        assert isinstance(error, exception) and error.status_code == status
        assert (error.type, error.code) == (kind, code) and error.body["message"]
        assert "retry-after" not in error.response.headers
    assert respond(client)[0].output_text
    assert len(fake.calls) == 3


def test_the_sdk_retries_a_scripted_503_after_its_retry_after(fake: FakeOpenAI):
    client = sdk(fake, max_retries=1)
    fake.fail(503, retry_after=0.01)
    assert chat(client)[0].choices
    assert len(fake.calls) == 2  # the failed call and its retry


LONG = [{"role": "user", "content": "sold 3 tea at 4.5; " * 40}]  # read as "user\n" and 760 characters
OVER = "This model's maximum context length is 150 tokens. However, "


@pytest.mark.parametrize(
    "refuses_as, body",
    [
        (
            "openai",
            {
                "message": OVER
                + "your messages resulted in {prompt} tokens. Please reduce the length of the "
                "messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            },
        ),
        (
            "vllm",
            {
                "message": OVER
                + "you requested 20 output tokens and your prompt contains at least 131 input "
                "tokens, for a total of at least 151 tokens. Please reduce the length of the input prompt or "
                "the number of requested output tokens. (parameter=input_tokens, value=131)",
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            },
        ),
        (
            "llama.cpp",
            {
                "code": 400,
                "message": "request ({prompt} tokens) exceeds the available context size (150 tokens), try "
                "increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": "{prompt}",
                "n_ctx": 150,
            },
        ),
    ],
)
def test_a_request_longer_than_the_window_is_refused_in_each_servers_body_by_the_stand_ins_count(
    fake: FakeOpenAI, client: openai.OpenAI, refuses_as: str, body: dict[str, Any]
):
    """765 characters as the model reads them: 191 tokens at the default four characters a
    token, 382 at two; each over a window of 150, refused with the server's own error object
    (vLLM's count stops at the window less the answer's 20, plus one)."""
    fake.contexts["gpt-4.1-mini"], fake.refuses_as = 150, refuses_as
    for chars, prompt in ((4, 191), (2, 382)):
        fake.chars_per_token = chars
        error = refused(chat, client=client, messages=LONG, max_tokens=20)
        assert isinstance(error, openai.BadRequestError)
        expected = {k: v.format(prompt=prompt) if isinstance(v, str) else v for k, v in body.items()}
        if "n_prompt_tokens" in expected:
            expected["n_prompt_tokens"] = int(expected["n_prompt_tokens"])
        assert error.body == expected


def test_a_responses_request_longer_than_the_window_is_refused_without_numbers(
    fake: FakeOpenAI, client: openai.OpenAI
):
    fake.contexts["gpt-4.1-mini"] = 150
    error = refused(respond, client=client, input=LONG, max_output_tokens=20)
    assert isinstance(error, openai.BadRequestError) and error.body == {
        "message": "Your input exceeds the context window of this model. Please adjust your input and try "
        "again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
