"""A loopback stand-in for today's OpenAI API: Chat Completions, Responses and the model list.

It refuses what the real API refuses, with the real error bodies, so that a client which gets
through the stand-in does not trip over the real API's rules on its first real call. Where the
research behind it (/tmp/research/openai_rules.md) marks a rule as inference, it leans towards
refusing: a false refusal shows up at once in a test, a false acceptance only in production.

What it enforces, per model (see `MODELS`):
- reasoning models refuse `max_tokens` (they take `max_completion_tokens`), accept only their own
  `reasoning_effort` values, and take `temperature`/`top_p` only as their family allows: GPT-6
  Astra refuses the fields outright, GPT-6 Luna takes other values only at effort `none`, GPT-5
  mini takes only the default 1. `logprobs`, `top_logprobs` and `stop` are refused by reasoning
  models unless the effort is `none` (conservative: the research has the rule, not the text).
- Chat Completions refuses function tools on GPT-6 models unless the effort is `none` (Astra has
  no `none`, so never); the Responses API takes them.
- a non-reasoning model (GPT-4.1 mini) takes `max_tokens`, `temperature` 0..2 and `top_p` 0..1,
  and refuses any reasoning effort.
- each endpoint knows the top-level keys of the SDK's `create()`; anything else is refused, and
  the Responses API has no `seed`, `max_tokens`, `max_completion_tokens` or flat
  `reasoning_effort`.
- `json_object` output needs the word "json" somewhere in the messages.
- strict schemas (strict `json_schema` formats and strict function tools, in both APIs) are
  checked as Structured Outputs checks them: the root is an object, every object says
  `additionalProperties: false` and lists every property in `required`, at most 10 levels of
  nesting and 5000 properties, and only the keywords in `STRICT_KEYWORDS`. That whitelist is
  the conservative reading: it is what OpenAI documents as supported. Others, such as
  `minLength`, `maxLength`, `default`, `oneOf`, `allOf` and `discriminator`, are refused here
  even where the real API may have started to accept some of them. Non-strict schemas are not
  checked. A Responses function tool that omits `strict` counts as strict (our reading of
  the Responses API's default; inference, so the stricter choice).

What it answers: the `answer` hook's value, else a small instance of the requested schema
(`schemas.instance_of`), in `message.content`, in a tool call's `arguments`, in an
`output_text` part or in a `function_call` item. A forced (named) tool choice ends with
finish_reason "stop" and an automatic one with "tool_calls", as the real API does. Usage is
worked out from the request text: prompt tokens are the stand-in's count (`FakeAPI.count`: four
characters a token, or `chars_per_token`) of the tools, the format and the messages (in that
order, which is the order the cache sees them in). Reasoning models add 16 reasoning tokens per
effort step (`EFFORTS`). Automatic prompt caching reports the longest prompt prefix seen before
on the same model, once it reaches 1024 tokens, in steps of 128. A request longer than the
model's window (`contexts`) by that count is refused with the body of OpenAI's Chat Completions
or Responses API, or, as an OpenAI-compatible server, vLLM's or llama.cpp server's
(`refuses_as`).

Wording that is the stand-in's own, because no real text was found: the nesting/size limit
messages, the `tool_choice` naming a missing function, the Responses `json_object` rule, the
bodies of scripted 400/403/404 failures, and a scripted 429 that names no model. Things the
stand-in does not do (streaming, `previous_response_id`, non-function tools) get a 500 that says
so, so a test that relies on them fails loudly rather than passing on a pretend answer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
import time
import typing
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCallParam,
    ResponseIncludable,
    ResponseOutputMessageParam,
    ResponseReasoningItemParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput

try:  # imported as `fakes.openai_api`
    from .schemas import fits, instance_of
    from .server import Call, FakeAPI, Reply, Scripted, Uses, tokens
except ImportError:  # imported with tests/fakes on sys.path, as pytest does for the tests here
    from schemas import fits, instance_of  # type: ignore[no-redef]
    from server import Call, FakeAPI, Reply, Scripted, Uses, tokens  # type: ignore[no-redef]

ORGANIZATION = "org-fake"
EFFORTS = (
    "none",
    "minimal",
    "low",
    "medium",
    "high",
    "xhigh",
    "max",
)  # in order: the reasoning tokens grow with it
REASONING_TOKENS_PER_STEP = 16
CACHE_MINIMUM, CACHE_STEP = 1024, 128  # tokens
PROMPTS_CACHED = 64  # the latest prompts to a model whose prefixes are cached
RPM_WINDOW = 60.0  # seconds
MAX_NESTING, MAX_PROPERTIES = 10, 5000
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
NAME_MAX = 64


# -- the models ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """What one served model accepts.

    `sampling` is the rule for `temperature` and `top_p`: "any" (the ordinary ranges),
    "when_none" (other than the default 1 only at effort none), "default_only" (only 1) or
    "refused" (the fields may not be sent at all). `chat_tools` is when Chat Completions takes
    function tools: "any", "when_none" or "never"."""

    snapshot: str  # the name answers carry in `model`
    chat_efforts: tuple[str, ...]  # () for a model that does not reason
    responses_efforts: tuple[str, ...]
    default_effort: str | None
    sampling: str
    chat_tools: str
    context: int = 400_000  # tokens: the prompt and the most the answer may take

    @property
    def reasons(self) -> bool:
        return bool(self.chat_efforts)


_NONE_TO_MAX = ("none", "low", "medium", "high", "xhigh", "max")

MODELS: dict[str, Model] = {
    "gpt-6-astra": Model(
        "gpt-6-astra",
        chat_efforts=("low", "medium", "high", "xhigh"),
        responses_efforts=("low", "medium", "high", "xhigh", "max"),
        default_effort="medium",
        sampling="refused",
        chat_tools="never",
    ),
    "gpt-6-luna": Model(
        "gpt-6-luna",
        _NONE_TO_MAX,
        _NONE_TO_MAX,
        default_effort="medium",
        sampling="when_none",
        chat_tools="when_none",
    ),
    "gpt-5-mini": Model(
        "gpt-5-mini-2025-08-07",
        chat_efforts=("minimal", "low", "medium", "high"),
        responses_efforts=("minimal", "low", "medium", "high"),
        default_effort="medium",
        sampling="default_only",
        chat_tools="any",
    ),
    "gpt-4.1-mini": Model(
        "gpt-4.1-mini-2025-04-14", (), (), default_effort=None, sampling="any", chat_tools="any"
    ),
}

# Parameters reasoning models refuse unless the effort is none (the GPT-6 deployment checklist).
REASONING_REFUSED = ("logprobs", "top_logprobs", "stop")

# The top-level keys of the SDK's create() for each endpoint (openai 3.57).
CHAT_KEYS = frozenset(
    [
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "messages",
        "metadata",
        "modalities",
        "model",
        "moderation",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    ]
)
RESPONSES_KEYS = frozenset(
    [
        "access_programs",
        "background",
        "background_options",
        "context_management",
        "conversation",
        "image",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "model",
        "moderation",
        "parallel_tool_calls",
        "previous_response_id",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    ]
)
RESPONSES_TOOL_KEYS = frozenset(
    [
        "type",
        "name",
        "description",
        "parameters",
        "strict",
        "allowed_callers",
        "defer_loading",
        "output_schema",
        "async",
    ]
)
# What `include` may ask for of the Responses API, and the keys of each kind of input item:
# the SDK's own lists (openai 3.57), which the API's match.
RESPONSES_INCLUDABLE = typing.get_args(ResponseIncludable)
INPUT_ITEM_KEYS = {
    kind: frozenset(param.__required_keys__ | param.__optional_keys__)
    for kind, param in {
        "message": ResponseOutputMessageParam,
        "reasoning": ResponseReasoningItemParam,
        "function_call": ResponseFunctionToolCallParam,
        "function_call_output": FunctionCallOutput,
    }.items()
}
INPUT_MESSAGE_KEYS = frozenset(
    EasyInputMessageParam.__required_keys__ | EasyInputMessageParam.__optional_keys__
)
CHAT_ROLES = ("system", "assistant", "user", "function", "tool", "developer")
RESPONSES_ROLES = ("user", "assistant", "system", "developer")

# The keywords a strict schema may use anywhere (the conservative reading, see the module docstring).
STRICT_KEYWORDS = frozenset(
    [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    ]
)


# -- error bodies --------------------------------------------------------------------------------


class Refusal(Exception):
    """An error answer. The checks raise it wherever they find the fault; `handle` sends it."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        type: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = {"message": message, "type": type, "param": param, "code": code}
        self.headers = headers or {}


def stand_in_gap(what: str) -> Refusal:
    """A 500 for something the stand-in does not imitate: the test needs a better stand-in."""
    return Refusal(
        500, f"The OpenAI stand-in does not support {what}.", type="server_error", code="stand_in_unsupported"
    )


def listing(values: tuple[str, ...] | list[str]) -> str:
    """OpenAI's way of listing values: 'a', 'b', and 'c'."""
    quoted = [f"'{v}'" for v in values]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def as_sent(value: Any) -> str:
    """A value as it was written in the request's JSON (0, 0.0 and 0.2 stay apart)."""
    return json.dumps(value)


def json_type(value: Any) -> str:
    """The JSON name of a value's type, as the real type errors say it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}.get(type(value), "value")


def unknown_parameter(path: str) -> Refusal:
    return Refusal(400, f"Unknown parameter: '{path}'.", param=path, code="unknown_parameter")


def missing_parameter(path: str) -> Refusal:
    return Refusal(
        400, f"Missing required parameter: '{path}'.", param=path, code="missing_required_parameter"
    )


def invalid_value(path: str, value: Any, supported: tuple[str, ...]) -> Refusal:
    return Refusal(
        400,
        f"Invalid value: '{value}'. Supported values are: {listing(supported)}.",
        param=path,
        code="invalid_value",
    )


def invalid_type(path: str, expected: str, value: Any) -> Refusal:
    return Refusal(
        400,
        f"Invalid type for '{path}': expected {expected}, but got {json_type(value)} instead.",
        param=path,
        code="invalid_type",
    )


def unsupported_parameter(name: str, hint: str = "", code: str | None = "unsupported_parameter") -> Refusal:
    return Refusal(
        400, f"Unsupported parameter: '{name}' is not supported with this model.{hint}", param=name, code=code
    )


def below_minimum(path: str, minimum: int, value: Any) -> Refusal:
    return Refusal(
        400,
        f"Invalid '{path}': integer below minimum value. "
        f"Expected a value >= {minimum}, but got {as_sent(value)} instead.",
        param=path,
        code="integer_below_min_value",
    )


def model_not_found(name: str) -> Refusal:
    return Refusal(
        404, f"The model `{name}` does not exist or you do not have access to it.", code="model_not_found"
    )


def mask_key(key: str) -> str:
    """An API key as the 401 shows it: the first 8 characters, asterisks, the last 4. A short key
    keeps at most a quarter of itself visible, so the whole key never shows."""
    if len(key) >= 16:
        return key[:8] + "*" * (len(key) - 12) + key[-4:]
    shown = len(key) // 4
    return key[:shown] + "*" * (len(key) - shown)


def incorrect_key(key: str) -> Refusal:
    return Refusal(
        401,
        f"Incorrect API key provided: {mask_key(key)}. "
        "You can find your API key at https://platform.openai.com/account/api-keys.",
        code="invalid_api_key",
    )


NO_KEY = (
    "You didn't provide an API key. "
    "You need to provide your API key in an Authorization header using Bearer auth "
    "(i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) "
    "if you're accessing the API from your browser and are prompted for a username and password. "
    "You can obtain an API key from https://platform.openai.com/account/api-keys."
)
BAD_JSON = (
    "We could not parse the JSON body of your request. "
    "(HINT: This likely means you aren't using your HTTP library correctly. "
    "The OpenAI API expects a JSON payload, but what was sent was not valid JSON. "
    "If you have trouble figuring out how to fix this, please contact us through our help center at "
    "help.openai.com.)"
)


def duration(seconds: float) -> str:
    """A wait as the rate-limit texts and headers write it: 174ms, 1.5s, 1m0s."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{text}" if minutes else text


def retry_headers(seconds: float) -> dict[str, str]:
    """`retry-after` in seconds and `retry-after-ms`, the two the SDK reads."""
    whole = f"{seconds:g}" if seconds == int(seconds) else f"{seconds}"
    return {"retry-after": whole, "retry-after-ms": str(math.ceil(round(seconds * 1000, 6)))}


def rate_limit_message(model: str | None, limit: int, used: int, wait: float) -> str:
    where = f"for {model} in" if model else "in"
    return (
        f"Rate limit reached {where} organization {ORGANIZATION} on requests per min (RPM): "
        f"Limit {limit}, Used {used}, Requested 1. Please try again in {duration(wait)}. "
        "Visit https://platform.openai.com/account/rate-limits to learn more."
    )


# The body of a scripted failure, per status: (type, code, param, message). 429 is built apart.
SCRIPTED: dict[int, tuple[str, Any, str | None, str]] = {
    400: (
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
        "This model's maximum context length is 128000 tokens. "
        "However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
    ),
    401: (
        "invalid_request_error",
        "invalid_api_key",
        None,
        incorrect_key("sk-scripted-failure-0000").error["message"],
    ),
    403: (
        "request_forbidden",
        "unsupported_country_region_territory",
        None,
        "Country, region, or territory not supported",
    ),
    404: ("invalid_request_error", "model_not_found", None, model_not_found("gpt-scripted").error["message"]),
    500: (
        "server_error",
        None,
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    502: ("cf_bad_gateway", 502, None, "Bad gateway."),
    503: (
        "service_unavailable_error",
        "server_is_overloaded",
        None,
        "Our servers are currently overloaded. Please try again later.",
    ),
}


# -- strict schemas ------------------------------------------------------------------------------


def strict_schema_problem(schema: Any) -> str | None:
    """None when `schema` passes Structured Outputs' strict checks, else the part of the real
    message after "Invalid schema for ...: " (it names the place as a Python tuple)."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else json_type(schema)
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
    if "anyOf" in schema:
        return "In context=(), 'anyOf' is not permitted at the root of the schema."
    count = [0]
    problem = next(_schema_problems(schema, (), 1, count), None)
    if problem is None and count[0] > MAX_PROPERTIES:
        problem = (
            f"In context=(), the schema has {count[0]} object properties in total, "
            f"more than the limit of {MAX_PROPERTIES}."
        )
    return problem


def _schema_problems(node: Any, context: tuple, depth: int, count: list[int]) -> Iterator[str]:
    """The strict-mode faults of one schema node and those below it, the first first."""
    where = f"In context={context!r}, "
    if not isinstance(node, dict):
        yield where + "schema must be a JSON Schema object."
        return
    for keyword in node:
        if keyword not in STRICT_KEYWORDS:
            yield where + f"'{keyword}' is not permitted."
    if not any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")):
        yield where + "schema must have a 'type' key."
    if depth > MAX_NESTING:
        yield where + f"the schema is nested more than {MAX_NESTING} levels deep."
    kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if "object" in kinds or "properties" in node:
        yield from _object_problems(node, where)
        properties = node.get("properties") or {}
        count[0] += len(properties)
        for name, child in properties.items():
            yield from _schema_problems(child, context + ("properties", name), depth + 1, count)
    if "items" in node:
        yield from _schema_problems(node["items"], context + ("items",), depth + 1, count)
    for index, branch in enumerate(node.get("anyOf") or []):
        yield from _schema_problems(branch, context + ("anyOf", index), depth, count)
    for keyword in ("$defs", "definitions"):
        for name, child in (node.get(keyword) or {}).items():
            yield from _schema_problems(child, context + (keyword, name), 1, count)


def _object_problems(node: dict[str, Any], where: str) -> Iterator[str]:
    """An object must shut out other keys and require every one of its properties."""
    if node.get("additionalProperties") is not False:
        yield where + "'additionalProperties' is required to be supplied and to be false."
    properties = list(node.get("properties") or {})
    required = node.get("required")
    required = required if isinstance(required, list) else []
    for name in properties:
        if name not in required:
            yield where + (
                "'required' is required to be supplied and to be an array including every key in properties. "
                f"Missing '{name}'."
            )
    for name in required:
        if name not in properties:
            yield where + (
                "'required' must be an array that includes every key in `properties`. "
                f"Extra required key '{name}' supplied."
            )


# -- what a request asks for ---------------------------------------------------------------------


@dataclass
class Wanted:
    """The form the answer must take: "text", "json_object", "json_schema" or "function"."""

    kind: str = "text"
    name: str | None = None  # the schema's or the function's name
    schema: dict[str, Any] | None = None
    strict: bool = False
    forced: bool = False  # a function named by tool_choice


EMPTY_PARAMETERS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def mentions_json(value: Any) -> bool:
    """Whether any text in a request part says "json" (the json_object rule)."""
    if isinstance(value, str):
        return "json" in value.lower()
    if isinstance(value, dict):
        return any(mentions_json(v) for v in value.values())
    if isinstance(value, list):
        return any(mentions_json(v) for v in value)
    return False


def check_name(path: str, name: Any) -> None:
    """Schema and function names: letters, digits, _ and -, at most 64."""
    if not isinstance(name, str):
        raise invalid_type(path, "a string", name)
    if not NAME_PATTERN.match(name):
        raise Refusal(
            400,
            f"Invalid '{path}': string does not match pattern. "
            f"Expected a string that matches the pattern '{NAME_PATTERN.pattern}'.",
            param=path,
            code="invalid_value",
        )
    if len(name) > NAME_MAX:
        raise Refusal(
            400,
            f"Invalid '{path}': string too long. Expected a string with maximum length {NAME_MAX}, "
            f"but got a string with length {len(name)} instead.",
            param=path,
            code="string_above_max_length",
        )


def check_keys(value: dict[str, Any], allowed: set[str] | frozenset[str], path: str) -> None:
    for key in value:
        if key not in allowed:
            raise unknown_parameter(f"{path}.{key}")


def check_effort(effort: Any, model: Model, allowed: tuple[str, ...], param: str) -> str | None:
    """The effort the request runs at: the one sent if the model takes it, else its default."""
    if effort is None:
        return model.default_effort
    if not model.reasons:
        raise unsupported_parameter(param)
    if effort not in EFFORTS:
        raise invalid_value(param, effort, EFFORTS)
    if effort not in allowed:
        raise Refusal(
            400,
            f"Unsupported value: '{param}' does not support '{effort}' with this model. "
            f"Supported values are: {listing(allowed)}.",
            param=param,
            code="unsupported_value",
        )
    return effort


def check_sampling(body: dict[str, Any], model: Model, effort: str | None) -> None:
    """temperature and top_p as the model's family allows, then what reasoning refuses."""
    for name, top in (("temperature", 2), ("top_p", 1)):
        value = body.get(name)
        if value is None:
            continue
        if model.sampling == "refused":
            raise unsupported_parameter(name, code=None)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise invalid_type(name, "a decimal", value)
        if model.sampling == "default_only" or (model.sampling == "when_none" and effort != "none"):
            if value != 1:
                raise Refusal(
                    400,
                    f"Unsupported value: '{name}' does not support {as_sent(value)} with this model. "
                    "Only the default (1) value is supported.",
                    param=name,
                    code="unsupported_value",
                )
        elif value < 0:
            raise Refusal(
                400,
                f"Invalid '{name}': decimal below minimum value. "
                f"Expected a value >= 0, but got {as_sent(value)} instead.",
                param=name,
                code="decimal_below_min_value",
            )
        elif value > top:
            raise Refusal(
                400,
                f"Invalid '{name}': decimal above maximum value. "
                f"Expected a value <= {top}, but got {as_sent(value)} instead.",
                param=name,
                code="decimal_above_max_value",
            )
    if model.reasons and effort != "none":
        for name in REASONING_REFUSED:
            if body.get(name) not in (None, False):
                raise unsupported_parameter(name)


def check_token_limit(body: dict[str, Any], name: str, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_type(name, "an integer", value)
    if value < minimum:
        raise below_minimum(name, minimum, value)
    return value


def check_tool_choice(
    choice: Any, tools: dict[str, Wanted], named: Callable[[dict[str, Any]], Any]
) -> Wanted | None:
    """The function the answer calls (None for a text answer). `named` reads the function
    name out of a tool_choice object, which the two APIs nest differently."""
    if choice is None:
        choice = "auto" if tools else "none"
    elif not tools:
        raise Refusal(
            400,
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            param="tool_choice",
        )
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise invalid_value("tool_choice", choice, ("none", "auto", "required"))
        return None if choice == "none" else next(iter(tools.values()))
    if not isinstance(choice, dict) or choice.get("type") != "function":
        raise stand_in_gap(f"tool_choice {choice!r}")
    name = named(choice)
    if name not in tools:
        raise Refusal(
            400,
            f"Invalid value for 'tool_choice': function '{name}' is not among the 'tools'.",
            param="tool_choice",
            code="invalid_value",
        )
    return Wanted("function", name, tools[name].schema, tools[name].strict, forced=True)


def unanswered_calls(ids: list[str], at: int) -> Refusal:
    return Refusal(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(ids)}",
        param=f"messages.[{at}].role",
    )


def context_exceeded(context: int, prompt: int, completion: int) -> Refusal:
    """OpenAI's 400 of a chat request longer than the model's context window: the prompt alone,
    or the prompt with the answer's limit."""
    asked = (
        f"your messages resulted in {prompt} tokens. Please reduce the length of the messages."
        if prompt > context
        else f"you requested {prompt + completion} tokens ({prompt} in the messages, {completion} in "
        "the completion). Please reduce the length of the messages or completion."
    )
    return Refusal(
        400,
        f"This model's maximum context length is {context} tokens. However, {asked}",
        param="messages",
        code="context_length_exceeded",
    )


def input_exceeded() -> Refusal:
    """OpenAI's 400 of a Responses request longer than the model's context window: no numbers."""
    return Refusal(
        400,
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        param="input",
        code="context_length_exceeded",
    )


def vllm_exceeded(context: int, prompt: int, completion: int) -> Refusal:
    """vLLM's 400 (its renderer's length check, its error response's shape): it stops counting
    a prompt one token past what the window leaves it, so its count is then a lower bound."""
    counted = min(prompt, context - completion + 1)
    refusal = Refusal(
        400,
        f"This model's maximum context length is {context} tokens. However, you requested {completion} "
        f"output tokens and your prompt contains at least {counted} input tokens, for a total of at "
        f"least {counted + completion} tokens. Please reduce the length of the input prompt or the number "
        f"of requested output tokens. (parameter=input_tokens, value={counted})",
    )
    refusal.error = {
        "message": refusal.error["message"],
        "type": "BadRequestError",
        "param": "input_tokens",
        "code": 400,
    }
    return refusal


def llama_cpp_exceeded(context: int, prompt: int) -> Refusal:
    """llama.cpp server's 400 (server-context.cpp, server-common.cpp's format_error_response,
    the counts added by server-task.cpp)."""
    refusal = Refusal(
        400,
        f"request ({prompt} tokens) exceeds the available context size ({context} tokens), try increasing it",
    )
    refusal.error = {
        "code": 400,
        "message": refusal.error["message"],
        "type": "exceed_context_size_error",
        "n_prompt_tokens": prompt,
        "n_ctx": context,
    }
    return refusal


def strict_refusal(prefix: str, schema: Any, param: str, code: str) -> None:
    problem = strict_schema_problem(schema)
    if problem is not None:
        raise Refusal(400, f"Invalid schema for {prefix}: {problem}", param=param, code=code)


@dataclass(frozen=True)
class IssuedReasoning:
    """A reasoning item the Responses API returned: the id of the item that followed it, its
    encrypted content (None unless asked for) and whether it was stored (`store` not false)."""

    following: str | None
    encrypted: str | None
    stored: bool


def missing_tool_output(call_id: str) -> Refusal:
    """A function call given back without its output after it."""
    return Refusal(400, f"No tool output found for function call {call_id}.", param="input")


# -- the stand-in --------------------------------------------------------------------------------


class FakeOpenAI(FakeAPI):
    """OpenAI on 127.0.0.1: POST /v1/chat/completions, POST /v1/responses, GET /v1/models.

    `api_key` None accepts any key or none; `answer(call, schema)` may decide the answers
    (schema None for text and json_object answers). `rpm` limits the requests in any 60 s
    window (over all models), counted in `rate_limited`; `clock` is the time it is measured by,
    so that tests can move it instead of waiting."""

    def __init__(
        self,
        api_key: str | None = "sk-fake-openai",
        answer: Callable[[Call, dict[str, Any] | None], dict[str, Any] | str] | None = None,
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.answer = answer
        self.rpm: int | None = None
        self.rate_limited = 0
        self.clock: Callable[[], float] = time.monotonic
        self._state = threading.Lock()  # guards the window, the prompt cache and the id counter
        self._window: deque[float] = deque()
        # per snapshot, the prompts answered lately (the real cache keeps a prefix for minutes);
        # clear it to simulate expiry
        self.prompts: dict[str, deque[str]] = {}
        self._ids = itertools.count()
        self.contexts: dict[str, int] = {}  # by model name: a window smaller than its own, for tests
        # Whose words refuse a request longer than the window: OpenAI's (its Chat Completions' and
        # its Responses API's), vLLM's or llama.cpp server's. llama.cpp refuses a prompt that
        # fills the window alone; the others, one that leaves no room for the answer's limit.
        self.refuses_as: typing.Literal["openai", "vllm", "llama.cpp"] = "openai"
        # An organisation that is not verified gets no reasoning summaries.
        self.verified = True
        # Compatible servers' own fields on Chat Completions answers, which they require back
        # on the assistant's tool-call turns: DeepSeek's `reasoning_content` and Gemini's
        # thought signature on each call (`extra_content.google.thought_signature`).
        self.reasoning_content = False
        self.thought_signatures = False
        # Servers that send tool calls with an empty id (Gemini's, LM Studio).
        self.blank_call_ids = False
        # A model that declines on Chat Completions: its words in `refusal`, no content.
        self.refuses: str | None = None
        # Responses output items issued: a reasoning item's id -> what it must be given back
        # with; an item that followed a reasoning item -> that item's id.
        self._reasoning: dict[str, IssuedReasoning] = {}
        self._after_reasoning: dict[str, str] = {}

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"

    # -- scripted failures -----------------------------------------------------------------

    def failure(self, status: int, retry_after: float | None) -> Scripted:
        """OpenAI's own body for `status`, with the retry headers when a wait is given."""
        headers = {"x-request-id": self._new_id("req_", 32)}
        if retry_after is not None:
            headers.update(retry_headers(retry_after))
        if status == 429:
            error = {
                "message": rate_limit_message(
                    None, 500, 500, retry_after if retry_after is not None else 1.0
                ),
                "type": "requests",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        else:
            default = (
                "server_error" if status >= 500 else "invalid_request_error",
                None,
                None,
                f"HTTP {status}.",
            )
            kind, code, param, message = SCRIPTED.get(status, default)
            error = {"message": message, "type": kind, "param": param, "code": code}
        return Scripted(status, {"error": error}, headers)

    # -- answering -------------------------------------------------------------------------

    def handle(self, call: Call) -> Reply:
        headers = {
            "x-request-id": self._new_id("req_", 32),
            "openai-organization": ORGANIZATION,
            "openai-version": "2020-10-01",
            "openai-processing-ms": "1",
        }
        try:
            self._authorize(call.headers.get("authorization"))
            body, extra = self._route(call)
            status = 200
        except Refusal as refusal:
            status, body, extra = refusal.status, {"error": refusal.error}, refusal.headers
        return status, body, {**headers, **extra}

    def _authorize(self, header: str | None) -> None:
        if self.api_key is None:
            return
        if not header or not header.startswith("Bearer ") or not header[7:].strip():
            raise Refusal(401, NO_KEY)
        sent = header[7:].strip()
        if sent != self.api_key:
            raise incorrect_key(sent)

    def _route(self, call: Call) -> tuple[dict[str, Any], dict[str, str]]:
        path = call.path.split("?")[0].rstrip("/")
        if path == "/v1/chat/completions":
            return self._chat(call)
        if path == "/v1/responses":
            return self._responses(call)
        if path == "/v1/models":
            return {"object": "list", "data": [self._model_card(name) for name in MODELS]}, {}
        if path.startswith("/v1/models/"):
            name = path.removeprefix("/v1/models/")
            if name not in MODELS:
                raise model_not_found(name)
            return self._model_card(name), {}
        method = "GET" if call.body == "" else "POST"
        raise Refusal(404, f"Invalid URL ({method} {path})")

    @staticmethod
    def _model_card(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 1754524800, "owned_by": "system"}

    def _request(
        self, call: Call, known: frozenset[str], unknown: Callable[[str], Refusal]
    ) -> tuple[dict[str, Any], Model, dict[str, str]]:
        """The checks every generation request goes through first: a JSON object, known keys,
        a served model, then the rate limit. Returns the body, the model's rules and the
        rate-limit headers."""
        body = call.body
        if not isinstance(body, dict):
            raise Refusal(400, BAD_JSON)
        for key in body:
            if key not in known:
                raise unknown(key)
        name = body.get("model")
        if not name:
            raise Refusal(400, "you must provide a model parameter")
        model = MODELS.get(name) or next((m for m in MODELS.values() if m.snapshot == name), None)
        if model is None:
            raise model_not_found(name)
        if body.get("stream"):
            raise stand_in_gap("streaming")
        return body, model, self._admit(name)

    # -- Chat Completions ------------------------------------------------------------------

    def _chat(self, call: Call) -> tuple[dict[str, Any], dict[str, str]]:
        body, model, headers = self._request(
            call, CHAT_KEYS, lambda key: Refusal(400, f"Unrecognized request argument supplied: {key}")
        )
        messages = self._chat_messages(body.get("messages"))
        effort = check_effort(body.get("reasoning_effort"), model, model.chat_efforts, "reasoning_effort")
        if model.reasons and body.get("max_tokens") is not None:
            raise unsupported_parameter("max_tokens", " Use 'max_completion_tokens' instead.")
        check_sampling(body, model, effort)
        limits = [check_token_limit(body, name, 1) for name in ("max_tokens", "max_completion_tokens")]
        tools = self._chat_tools(body.get("tools"), model, effort)
        output_format = self._chat_format(
            body.get("response_format"), messages
        )  # checked even when a tool answers
        wanted = check_tool_choice(body.get("tool_choice"), tools, self._chat_choice_name) or output_format
        n = check_token_limit(body, "n", 1) or 1

        prompt = self._prompt_text(body.get("tools"), body.get("response_format"), messages)
        limit = min((x for x in limits if x is not None), default=None)
        self._check_context(body["model"], model, prompt, limit or 0, "chat")
        answered = self._answer_text(call, wanted, tools)
        calls = answered.calls if isinstance(answered, Uses) else ()
        text = answered.text if isinstance(answered, Uses) else answered
        usage = self._usage(model, prompt, effort, text + json.dumps(calls) if calls else text, limit)
        text = text[: usage["answer_chars"]]
        finish = (
            "length"
            if usage["truncated"]
            else ("stop" if (wanted.kind != "function" or wanted.forced) and not calls else "tool_calls")
        )
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
        if isinstance(answered, Uses):
            if calls and not usage["truncated"]:
                message["content"] = text or None
                message["tool_calls"] = [
                    {
                        "id": self._new_id("call_", 24),
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                    for name, arguments in calls
                ]
        elif wanted.kind == "function" and text:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": self._new_id("call_", 24),
                    "type": "function",
                    "function": {"name": wanted.name, "arguments": text},
                }
            ]
        if self.refuses is not None:
            message.update(content=None, refusal=self.refuses, tool_calls=None)
        if self.blank_call_ids:
            for tool_call in message.get("tool_calls") or []:
                tool_call["id"] = ""
        if self.reasoning_content:
            message["reasoning_content"] = f"Reading {len(messages)} messages."
        if self.thought_signatures:
            for tool_call in message.get("tool_calls") or []:
                tool_call["extra_content"] = {"google": {"thought_signature": _signature(tool_call["id"])}}
        completion = {
            "id": self._new_id("chatcmpl-", 29),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model.snapshot,
            "choices": [
                {"index": i, "message": message, "logprobs": None, "finish_reason": finish} for i in range(n)
            ],
            "usage": {
                "prompt_tokens": usage["input"],
                "completion_tokens": usage["output"],
                "total_tokens": usage["input"] + usage["output"],
                "prompt_tokens_details": {"cached_tokens": usage["cached"], "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": usage["reasoning"],
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_" + hashlib.sha256(model.snapshot.encode()).hexdigest()[:10],
        }
        return completion, headers

    @staticmethod
    def _chat_choice_name(choice: dict[str, Any]) -> Any:
        function = choice.get("function")
        if not isinstance(function, dict) or "name" not in function:
            raise missing_parameter("tool_choice.function.name")
        return function["name"]

    def _chat_messages(self, messages: Any) -> list[Any]:
        if messages is None:
            raise missing_parameter("messages")
        if not isinstance(messages, list):
            raise invalid_type("messages", "an array", messages)
        if not messages:
            raise Refusal(
                400,
                "Invalid 'messages': empty array. "
                "Expected an array with minimum length 1, but got an empty array instead.",
                param="messages",
                code="empty_array",
            )
        awaited: list[str] = []  # the ids of the last assistant turn's calls not yet answered
        for i, message in enumerate(messages):
            if not isinstance(message, dict):
                raise invalid_type(f"messages[{i}]", "an object", message)
            if "role" not in message:
                raise missing_parameter(f"messages[{i}].role")
            role = message["role"]
            if role not in CHAT_ROLES:
                raise invalid_value(f"messages[{i}].role", role, CHAT_ROLES)
            if role == "tool":
                if "tool_call_id" not in message:
                    raise missing_parameter(f"messages[{i}].tool_call_id")
                if message["tool_call_id"] not in awaited:
                    raise Refusal(
                        400,
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'.",
                        param=f"messages.[{i}].role",
                    )
                awaited.remove(message["tool_call_id"])
                continue
            if awaited:
                raise unanswered_calls(awaited, i - 1)
            calls = message.get("tool_calls") or [] if role == "assistant" else []
            if calls:
                self._check_own_fields(message, i)
            awaited = [call.get("id") for call in calls if isinstance(call, dict)]
        if awaited:
            raise unanswered_calls(awaited, len(messages) - 1)
        return messages

    def _check_own_fields(self, message: dict[str, Any], at: int) -> None:
        """A compatible server's own fields, given back on an assistant's tool-call turn."""
        if self.reasoning_content and "reasoning_content" not in message:
            raise Refusal(
                400,
                f"Missing `reasoning_content` field in the assistant message at message index {at}. "
                "For more information, please refer to "
                "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
                code="invalid_request_error",
            )
        if not self.thought_signatures:
            return
        for call in message["tool_calls"]:
            given = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
            if given != _signature(call.get("id", "")):
                name = (call.get("function") or {}).get("name")
                raise Refusal(
                    400,
                    "Function call is missing a thought_signature in functionCall parts. This is "
                    "required for tools to work correctly, and missing thought_signature may lead to "
                    f"degraded model performance. Additional data, function call `default_api:{name}` , "
                    f"position {at}. Please refer to "
                    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                )

    @staticmethod
    def _chat_tools(tools: Any, model: Model, effort: str | None) -> dict[str, Wanted]:
        """Function tools by name, in order; refuses them where the model refuses tools."""
        if tools is None:
            return {}
        if not isinstance(tools, list) or not tools:
            raise Refusal(
                400,
                "Invalid 'tools': empty array. "
                "Expected an array with minimum length 1, but got an empty array instead.",
                param="tools",
                code="empty_array",
            )
        if model.chat_tools == "never" or (model.chat_tools == "when_none" and effort != "none"):
            raise Refusal(
                400,
                f"Function tools with reasoning_effort are not supported for {model.snapshot} "
                "in /v1/chat/completions. "
                "To use function tools, use /v1/responses or set reasoning_effort to 'none'.",
                param="reasoning_effort",
            )
        found: dict[str, Wanted] = {}
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or tool.get("type") != "function":
                raise stand_in_gap(f"tools of type {tool.get('type') if isinstance(tool, dict) else tool!r}")
            check_keys(tool, {"type", "function"}, f"tools[{i}]")
            function = tool.get("function")
            if not isinstance(function, dict):
                raise missing_parameter(f"tools[{i}].function")
            check_keys(function, {"name", "description", "parameters", "strict"}, f"tools[{i}].function")
            if "name" not in function:
                raise missing_parameter(f"tools[{i}].function.name")
            check_name(f"tools[{i}].function.name", function["name"])
            strict = function.get("strict") is True
            schema = function.get("parameters") or EMPTY_PARAMETERS
            if strict:
                where = f"tools[{i}].function.parameters"
                strict_refusal(f"function '{function['name']}'", schema, where, "invalid_function_parameters")
            found[function["name"]] = Wanted("function", function["name"], schema, strict)
        return found

    @staticmethod
    def _chat_format(response_format: Any, messages: list[Any]) -> Wanted:
        if response_format is None:
            return Wanted()
        if not isinstance(response_format, dict):
            raise invalid_type("response_format", "an object", response_format)
        kind = response_format.get("type")
        if kind is None:
            raise missing_parameter("response_format.type")
        if kind == "text":
            check_keys(response_format, {"type"}, "response_format")
            return Wanted()
        if kind == "json_object":
            check_keys(response_format, {"type"}, "response_format")
            if not mentions_json(messages):
                raise Refusal(
                    400,
                    "'messages' must contain the word 'json' in some form, "
                    "to use 'response_format' of type 'json_object'.",
                    param="messages",
                )
            return Wanted("json_object")
        if kind != "json_schema":
            raise invalid_value("response_format.type", kind, ("json_object", "json_schema", "text"))
        check_keys(response_format, {"type", "json_schema"}, "response_format")
        spec = response_format.get("json_schema")
        if not isinstance(spec, dict):
            raise missing_parameter("response_format.json_schema")
        check_keys(spec, {"name", "description", "schema", "strict"}, "response_format.json_schema")
        return _schema_format(spec, "response_format.json_schema", "response_format")

    # -- Responses -------------------------------------------------------------------------

    def _responses(self, call: Call) -> tuple[dict[str, Any], dict[str, str]]:
        body, model, headers = self._request(call, RESPONSES_KEYS, self._responses_unknown)
        if body.get("previous_response_id") or body.get("conversation"):
            raise stand_in_gap("previous_response_id or conversation")
        items = self._responses_input(body.get("input"))
        reasoning = body.get("reasoning") or {}
        if not isinstance(reasoning, dict):
            raise invalid_type("reasoning", "an object", reasoning)
        check_keys(reasoning, {"effort", "summary", "generate_summary", "mode", "context"}, "reasoning")
        effort = check_effort(reasoning.get("effort"), model, model.responses_efforts, "reasoning.effort")
        if reasoning.get("summary") and not self.verified:
            raise Refusal(
                400,
                "Your organization must be verified to generate reasoning summaries. Please go to: "
                "https://platform.openai.com/settings/organization/general and click on Verify "
                "Organization. If you just verified, it can take up to 15 minutes for access to propagate.",
                param="reasoning.summary",
                code="unsupported_value",
            )
        include = body.get("include") or []
        if not isinstance(include, list):
            raise invalid_type("include", "an array", include)
        for i, value in enumerate(include):
            if value not in RESPONSES_INCLUDABLE:
                raise invalid_value(f"include[{i}]", value, RESPONSES_INCLUDABLE)
        check_sampling(body, model, effort)
        limit = check_token_limit(body, "max_output_tokens", 16)
        tools, echoed_tools = self._responses_tools(body.get("tools"))
        text_config = body.get("text") or {}
        if not isinstance(text_config, dict):
            raise invalid_type("text", "an object", text_config)
        check_keys(text_config, {"format", "verbosity"}, "text")
        fmt = text_config.get("format") or {"type": "text"}
        output_format = self._responses_format(
            fmt, [body.get("instructions"), items]
        )  # checked even when a tool answers
        wanted = check_tool_choice(body.get("tool_choice"), tools, self._choice_name) or output_format

        prompt = self._prompt_text(
            body.get("tools"), text_config.get("format"), [body.get("instructions"), items]
        )
        self._check_context(body["model"], model, prompt, limit or 0, "responses")
        answered = self._answer_text(call, wanted, tools)
        calls = answered.calls if isinstance(answered, Uses) else ()
        text = answered.text if isinstance(answered, Uses) else answered
        usage = self._usage(model, prompt, effort, text + json.dumps(calls) if calls else text, limit)
        text = text[: usage["answer_chars"]]
        state = "incomplete" if usage["truncated"] else "completed"
        output: list[dict[str, Any]] = []
        if isinstance(answered, Uses):
            if text:
                output.append(self._output_item(Wanted(), text, state))
            output.extend(
                {
                    "type": "function_call",
                    "id": self._new_id("fc_", 48),
                    "call_id": self._new_id("call_", 24),
                    "name": name,
                    "arguments": json.dumps(arguments),
                    "status": state,
                    "async": False,  # a field of today's function calls, named by a Python keyword
                }
                for name, arguments in (calls if not usage["truncated"] else ())
            )
        elif not usage["truncated"] or usage["answer_chars"]:
            output.append(self._output_item(wanted, text, state))
        if usage["reasoning"]:
            output = self._reasoned(output, reasoning, len(items), include, body.get("store", True))
        created = int(time.time())
        response = {
            "id": self._new_id("resp_", 48),
            "object": "response",
            "created_at": created,
            "completed_at": created if state == "completed" else None,
            "status": state,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if usage["truncated"] else None,
            "instructions": body.get("instructions"),
            "max_output_tokens": limit,
            "model": model.snapshot,
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": None,
            "reasoning": {"effort": effort, "summary": reasoning.get("summary")},
            "service_tier": "default",
            "store": body.get("store", True),
            "temperature": body.get("temperature", 1.0),
            "text": {"format": fmt, "verbosity": text_config.get("verbosity", "medium")},
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": echoed_tools,
            "top_p": body.get("top_p", 1.0),
            "truncation": body.get("truncation", "disabled"),
            "usage": {
                "input_tokens": usage["input"],
                "input_tokens_details": {"cached_tokens": usage["cached"], "cache_write_tokens": 0},
                "output_tokens": usage["output"],
                "output_tokens_details": {"reasoning_tokens": usage["reasoning"]},
                "total_tokens": usage["input"] + usage["output"],
            },
            "user": None,
            "metadata": body.get("metadata") or {},
        }
        return response, headers

    @staticmethod
    def _responses_unknown(key: str) -> Refusal:
        if key == "reasoning_effort":
            return Refusal(
                400,
                "Unsupported parameter: 'reasoning_effort'. "
                "In the Responses API, this parameter has moved to 'reasoning.effort'. "
                "Try again with the new parameter. See the API documentation for more information: "
                "https://platform.openai.com/docs/api-reference/responses/create.",
                code="unsupported_parameter",
            )
        return unknown_parameter(key)

    def _responses_input(self, items: Any) -> Any:
        """The input items, checked as the API checks them: roles; every function call answered
        by an output later on and every output answering an earlier call; and the items a
        reasoning model returned given back in their pairs, a reasoning item right before the
        item that followed it and never one without the other, with its encrypted content
        where nothing was stored."""
        if items is None:
            raise missing_parameter("input")
        if isinstance(items, str):
            return items
        if not isinstance(items, list):
            raise invalid_type("input", "one of a string or array of input items", items)
        called: set[str] = set()
        unanswered: list[str] = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise invalid_type(f"input[{i}]", "an object", item)
            if "role" in item and item["role"] not in RESPONSES_ROLES:
                raise invalid_value(f"input[{i}].role", item["role"], RESPONSES_ROLES)
            kind = item.get("type")
            known = INPUT_ITEM_KEYS.get(kind or "message", frozenset())
            if kind is None or (kind == "message" and "id" not in item):
                known = INPUT_MESSAGE_KEYS
            for key in item:
                if key not in known:
                    raise unknown_parameter(f"input[{i}].{key}")
            if kind == "function_call":
                called.add(item.get("call_id"))
                unanswered.append(item.get("call_id"))
            if kind == "function_call_output":
                if item.get("call_id") not in called:
                    raise Refusal(
                        400,
                        f"No tool call found for function call output with call_id {item.get('call_id')}.",
                        param="input",
                    )
                if item.get("call_id") in unanswered:
                    unanswered.remove(item.get("call_id"))
            if kind == "reasoning":
                self._check_reasoning_item(item, i, items)
            elif item.get("id") in self._after_reasoning:
                before = self._after_reasoning[item["id"]]
                if i == 0 or items[i - 1].get("id") != before:
                    raise Refusal(
                        400,
                        f"Item '{item['id']}' of type '{kind or 'message'}' was provided without its "
                        f"required 'reasoning' item: '{before}'.",
                        param="input",
                    )
        if unanswered:
            raise missing_tool_output(unanswered[0])
        return items

    def _check_reasoning_item(self, item: dict[str, Any], at: int, items: list[Any]) -> None:
        """A reasoning item given back: one this API issued, with its encrypted content where
        it was not stored, right before the item that followed it."""
        if "summary" not in item:
            raise missing_parameter(f"input[{at}].summary")
        issued = self._reasoning.get(item.get("id", ""))
        if issued is None:  # not one of ours: the API would not know it either
            raise Refusal(404, f"Item with id '{item.get('id')}' not found.", param="input")
        encrypted = item.get("encrypted_content")
        if encrypted is None and not issued.stored:
            raise Refusal(
                404,
                f"Item with id '{item['id']}' not found. Items are not persisted when `store` is set "
                "to false. Try again with `store` set to true, or remove this item from your input.",
                param="input",
            )
        if encrypted is not None and encrypted != issued.encrypted:
            # the stand-in's wording: the real text for a tampered item was not found
            raise Refusal(
                400, f"The encrypted content for item {item['id']} could not be verified.", param="input"
            )
        following = items[at + 1] if at + 1 < len(items) else None
        if issued.following is not None and (
            not isinstance(following, dict) or following.get("id") != issued.following
        ):
            raise Refusal(
                400,
                f"Item '{item['id']}' of type 'reasoning' was provided without its required following item.",
                param="input",
            )

    def _reasoned(
        self,
        output: list[dict[str, Any]],
        reasoning: dict[str, Any],
        read: int,
        include: list[str],
        stored: bool,
    ) -> list[dict[str, Any]]:
        """The output with a reasoning item before its first item and before each further
        function call (a model reasons between its calls), remembered for the rules above."""
        reasoned: list[dict[str, Any]] = []
        for n, item in enumerate(output or [None]):
            if n == 0 or item["type"] == output[n - 1]["type"] == "function_call":
                summary = (
                    [{"type": "summary_text", "text": f"Weighing {read} items of input."}]
                    if reasoning.get("summary") and n == 0
                    else []
                )
                thought = {"type": "reasoning", "id": self._new_id("rs_", 48), "summary": summary}
                encrypted = None
                if "reasoning.encrypted_content" in include:
                    encrypted = "gAAAA" + hashlib.sha256(thought["id"].encode()).hexdigest()
                    thought["encrypted_content"] = encrypted
                following = item["id"] if item is not None else None
                with self._state:
                    self._reasoning[thought["id"]] = IssuedReasoning(following, encrypted, stored)
                    if following is not None:
                        self._after_reasoning[following] = thought["id"]
                reasoned.append(thought)
            if item is not None:
                reasoned.append(item)
        return reasoned

    @staticmethod
    def _choice_name(choice: dict[str, Any]) -> Any:
        if "name" not in choice:
            raise missing_parameter("tool_choice.name")
        return choice["name"]

    @staticmethod
    def _responses_tools(tools: Any) -> tuple[dict[str, Wanted], list[dict[str, Any]]]:
        """Flat function tools by name, and the tools as the response echoes them."""
        if tools is None:
            return {}, []
        if not isinstance(tools, list):
            raise invalid_type("tools", "an array", tools)
        found: dict[str, Wanted] = {}
        echoed: list[dict[str, Any]] = []
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict) or tool.get("type") != "function":
                raise stand_in_gap(f"tools of type {tool.get('type') if isinstance(tool, dict) else tool!r}")
            if "name" not in tool:
                raise missing_parameter(f"tools[{i}].name")
            check_keys(tool, RESPONSES_TOOL_KEYS, f"tools[{i}]")
            check_name(f"tools[{i}].name", tool["name"])
            strict = tool.get("strict", True) is True
            schema = tool.get("parameters") or EMPTY_PARAMETERS
            if strict:
                strict_refusal(
                    f"function '{tool['name']}'",
                    schema,
                    f"tools[{i}].parameters",
                    "invalid_function_parameters",
                )
            found[tool["name"]] = Wanted("function", tool["name"], schema, strict)
            echoed.append(
                {
                    "type": "function",
                    "name": tool["name"],
                    "description": tool.get("description"),
                    "parameters": schema,
                    "strict": strict,
                }
            )
        return found, echoed

    @staticmethod
    def _responses_format(fmt: Any, prompt: list[Any]) -> Wanted:
        if not isinstance(fmt, dict):
            raise invalid_type("text.format", "an object", fmt)
        kind = fmt.get("type")
        if kind == "text":
            check_keys(fmt, {"type"}, "text.format")
            return Wanted()
        if kind == "json_object":
            check_keys(fmt, {"type"}, "text.format")
            if not mentions_json(prompt):
                raise Refusal(
                    400,
                    "'input' must contain the word 'json' in some form, "
                    "to use 'text.format' of type 'json_object'.",
                    param="input",
                )
            return Wanted("json_object")
        if kind != "json_schema":
            raise invalid_value("text.format.type", kind, ("json_object", "json_schema", "text"))
        check_keys(fmt, {"type", "name", "description", "schema", "strict"}, "text.format")
        return _schema_format(fmt, "text.format", "text.format.schema")

    def _output_item(self, wanted: Wanted, text: str, state: str) -> dict[str, Any]:
        if wanted.kind == "function":
            return {
                "type": "function_call",
                "id": self._new_id("fc_", 48),
                "call_id": self._new_id("call_", 24),
                "name": wanted.name,
                "arguments": text,
                "status": state,
            }
        return {
            "type": "message",
            "id": self._new_id("msg_", 48),
            "role": "assistant",
            "status": state,
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }

    # -- the answer, its usage, the cache and the rate limit -------------------------------

    def _check_context(self, name: str, model: Model, prompt: str, completion: int, api: str) -> None:
        """Refuse a request too long for the model's window, in the words of `refuses_as`."""
        context, counted = self.contexts.get(name, model.context), self.count(prompt)
        if self.refuses_as == "llama.cpp":
            if counted >= context:
                raise llama_cpp_exceeded(context, counted)
        elif counted + completion > context:
            if self.refuses_as == "vllm":
                raise vllm_exceeded(context, counted, completion)
            raise context_exceeded(context, counted, completion) if api == "chat" else input_exceeded()

    def _answer_text(self, call: Call, wanted: Wanted, tools: dict[str, Wanted] | None = None) -> str | Uses:
        """The answer as text, or the tools it uses where the hook says so and the request
        offers them; a strict answer (or call) that does not fit its schema is the test's bug,
        reported as a 500 that names the mismatch."""
        if self.answer is not None:
            value: Any = self.answer(call, wanted.schema)
            if isinstance(value, str) and tools and not wanted.forced:
                return Uses((), text=value)  # the model chose to answer in text
            if isinstance(value, Uses):
                for name, arguments in value.calls:
                    tool = (tools or {}).get(name)
                    if tool is None or wanted.forced:
                        raise Refusal(
                            500, f"The stand-in's script calls {name!r}, not offered", type="server_error"
                        )
                    problem = (
                        fits(arguments, tool.schema) if tool.strict and tool.schema is not None else None
                    )
                    if problem is not None:
                        raise Refusal(500, f"The stand-in's call of {name!r}: {problem}", type="server_error")
                return value
        elif wanted.schema is not None:
            value = instance_of(wanted.schema)
        elif wanted.kind == "json_object":
            value = {"answer": "ok"}
        else:
            value = "This is the stand-in's answer."
        text = value if isinstance(value, str) else json.dumps(value)
        if wanted.strict and wanted.schema is not None:
            try:
                problem = fits(json.loads(text), wanted.schema)
            except ValueError:
                problem = "the answer is not JSON"
            if problem is not None:
                raise Refusal(
                    500,
                    f"The stand-in's answer does not fit the strict schema '{wanted.name}': {problem}",
                    type="server_error",
                    code="stand_in_answer_mismatch",
                )
        return text

    @staticmethod
    def _prompt_text(tools: Any, output_format: Any, conversation: Any) -> str:
        """The prompt as the token count and the cache see it: tools and format first (as the
        JSON the model is shown), then the conversation as the model reads it (each turn's
        role, its text and the calls it carries; not the request's JSON, whose quoting a model
        never sees), so that prompts sharing a system message share a prefix."""
        shown = [json.dumps(part, ensure_ascii=False) for part in (tools, output_format) if part]
        return "\n".join([*shown, *_read(conversation)])

    def _usage(
        self, model: Model, prompt: str, effort: str | None, answer: str, limit: int | None
    ) -> dict[str, Any]:
        """Token counts; a `limit` below the reasoning and the answer cuts the answer short."""
        reasoning = REASONING_TOKENS_PER_STEP * EFFORTS.index(effort) if model.reasons and effort else 0
        answer_tokens = tokens(answer)
        truncated = limit is not None and reasoning + answer_tokens > limit
        if truncated:
            reasoning = min(reasoning, limit)
            answer_tokens = limit - reasoning
        chars = answer_tokens * 4 if truncated else len(answer)
        return {
            "input": self.count(prompt),
            "cached": self._cached(model.snapshot, prompt),
            "reasoning": reasoning,
            "output": reasoning + answer_tokens,
            "answer_chars": chars,
            "truncated": truncated,
        }

    def _cached(self, snapshot: str, prompt: str) -> int:
        """Automatic prompt caching: the longest prefix shared with an earlier prompt to this
        model, in tokens, counted only from 1024 on and in steps of 128."""
        with self._state:
            seen = self.prompts.setdefault(snapshot, deque(maxlen=PROMPTS_CACHED))
            shared = max((_common_prefix(prompt, earlier) for earlier in seen), default=0)
            seen.append(prompt)
        shared_tokens = int(shared / self.chars_per_token)
        if shared_tokens < CACHE_MINIMUM:
            return 0
        return CACHE_MINIMUM + (shared_tokens - CACHE_MINIMUM) // CACHE_STEP * CACHE_STEP

    def _admit(self, model: str) -> dict[str, str]:
        """Let a request into the sliding window, or refuse it with the real RPM 429. Returns
        the rate-limit headers every answer carries while a limit is set."""
        if self.rpm is None:
            return {}
        with self._state:
            now = self.clock()
            while self._window and now - self._window[0] >= RPM_WINDOW:
                self._window.popleft()
            if len(self._window) >= self.rpm:
                self.rate_limited += 1
                wait = RPM_WINDOW - (now - self._window[0]) if self._window else RPM_WINDOW
                raise Refusal(
                    429,
                    rate_limit_message(model, self.rpm, len(self._window), wait),
                    type="requests",
                    code="rate_limit_exceeded",
                    headers={
                        "retry-after": str(math.ceil(wait)),
                        "retry-after-ms": str(math.ceil(round(wait * 1000, 6))),
                    },
                )
            self._window.append(now)
            return {
                "x-ratelimit-limit-requests": str(self.rpm),
                "x-ratelimit-remaining-requests": str(self.rpm - len(self._window)),
                "x-ratelimit-reset-requests": duration(RPM_WINDOW - (now - self._window[0])),
            }

    def _new_id(self, prefix: str, length: int) -> str:
        with self._state:
            n = next(self._ids)
        return prefix + hashlib.sha256(f"{prefix}{n}".encode()).hexdigest()[:length]


def _schema_format(spec: dict[str, Any], path: str, schema_param: str) -> Wanted:
    """A json_schema format, the Chat one (`spec` = response_format.json_schema) or the
    Responses one (`spec` = text.format): name, schema, and the strict check."""
    if "name" not in spec:
        raise missing_parameter(f"{path}.name")
    check_name(f"{path}.name", spec["name"])
    strict = spec.get("strict") is True
    if "schema" not in spec:
        if strict or path == "text.format":
            raise missing_parameter(f"{path}.schema")
        return Wanted("json_schema", spec["name"], {"type": "object"}, False)
    if strict:
        strict_refusal(
            f"response_format '{spec['name']}'", spec["schema"], schema_param, "invalid_json_schema"
        )
    return Wanted("json_schema", spec["name"], spec["schema"], strict)


def _signature(call_id: str) -> str:
    """The thought signature the stand-in gives a call (and expects back with it)."""
    return hashlib.sha256(f"thought:{call_id}".encode()).hexdigest()[:32]


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters two texts share (found by halving: each comparison of
    two slices runs in C, where a loop over characters would not)."""
    shared, longest = 0, min(len(a), len(b))
    while shared < longest:
        middle = (shared + longest + 1) // 2
        if a[:middle] == b[:middle]:
            shared = middle
        else:
            longest = middle - 1
    return shared


def _read(part: Any) -> list[str]:
    """The lines a model reads of a conversation, a message or a content block: its role or
    type, its text, a call's name and arguments, a call's output."""
    if part is None:
        return []
    if isinstance(part, str):
        return [part]
    if isinstance(part, list):
        return [line for item in part for line in _read(item)]
    lines = [str(part.get("role") or part.get("type") or "")]
    for key in ("content", "text", "output", "name", "arguments"):
        lines += _read(part.get(key))
    for call in part.get("tool_calls") or []:
        lines += _read(call.get("function"))
    return lines
