"""A loopback stand-in for Anthropic's Messages API as the official SDK 2.14 speaks it
(`anthropic-version: 2026-10-21`), so that tests exercise a real client against the rules the
real service enforces without reaching it.

It serves POST /v1/messages and POST /v1/messages/count_tokens for the models in `MODELS`.
Whatever the real API refuses, it refuses with the real envelope
`{"type": "error", "error": {"type", "message"}, "request_id": "req_..."}` and a `request-id`
header. Where the real message text is known (researched) it is used verbatim; where it was not
found the comment beside it says the wording is ours ("plausible").

An answer is a small instance of the schema the request asks for (a forced or lone tool's
input_schema, or `output_config.format`), or whatever the test's `answer` decides. Prompt
caching is billed the way Anthropic bills it, with deterministic token counts (`FakeAPI.count` of
each prompt block's canonical JSON), so a client's cost accounting can be checked to the token.
A prompt longer than the model's window (`contexts`) by that count, alone or with `max_tokens`,
is refused in the API's words.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakes.schemas import fits, instance_of
from fakes.server import Call, FakeAPI, Reply, Scripted, Uses, tokens


@dataclass(frozen=True)
class ModelRules:
    """What one model accepts."""

    forced_tool_choice: bool  # whether tool_choice "tool" / "any" is accepted at all
    thinking: tuple[str, ...]  # the accepted thinking.type values
    default_thinking: str  # what an omitted `thinking` means
    effort: bool  # whether output_config.effort is accepted
    min_cacheable: int  # the shortest prefix, in tokens, that is cached
    max_output: int  # the largest max_tokens
    context: int = 200_000  # the longest prompt, in tokens


# The models served, from the research notes (/tmp/research/anthropic_rules.md, 2026-12-01).
# Where the notes say "unknown" we assumed, and say so:
# - claude-sonnet-5-5: forced tool_choice refused outright (zh-CN model page). Thinking only
#   adaptive (the default) or between_tools. Minimum cacheable prefix unknown: we follow
#   Sonnet 5's 1024. max_tokens ceiling unknown: 128k assumed.
# - claude-haiku-4-5: manual thinking ("enabled" with a budget) or none; no effort; 4096-token
#   minimum prefix (quoted in anthropic-sdk-python#1194); 64k output.
# - claude-haiku-5-5: adaptive thinking with effort. Whether it accepts forced tool_choice is
#   unknown: we assume it does, like the Haiku before it; we also assume "disabled" is accepted
#   and that an omitted `thinking` means adaptive. Minimum prefix unknown: 1024 assumed.
#   max_tokens ceiling unknown: 64k assumed.
# - claude-opus-5: forced tool_choice accepted (celeste-python PR #393); thinking adaptive by
#   default or disabled; effort; 512-token minimum prefix (litellm docs, 2026-10-07).
MODELS: dict[str, ModelRules] = {
    "claude-opus-5": ModelRules(True, ("adaptive", "disabled"), "adaptive", True, 512, 128_000),
    "claude-sonnet-5-5": ModelRules(False, ("adaptive", "between_tools"), "adaptive", True, 1024, 128_000),
    "claude-haiku-4-5": ModelRules(True, ("enabled", "disabled"), "disabled", False, 4096, 64_000),
    "claude-haiku-5-5": ModelRules(True, ("adaptive", "disabled"), "adaptive", True, 1024, 64_000),
}

EFFORTS = ("low", "medium", "high", "xhigh", "max")
THINKING_TOKENS = 16  # billed per thinking block (more than its short text: the thinking is summarised)
MAX_BREAKPOINTS = 4
LOOKBACK = 20  # how many blocks back from a breakpoint the API looks for an earlier cache entry

# The top-level keys each endpoint takes (SDK 2.14's request bodies). Anything else is refused
# the way the 2026-10-21 API refuses temperature, top_p and top_k: as an extra input.
MESSAGE_KEYS = frozenset(
    [
        "model",
        "messages",
        "max_tokens",
        "cache_control",
        "container",
        "diagnostics",
        "inference_geo",
        "metadata",
        "output_config",
        "service_tier",
        "speed",
        "stop_sequences",
        "stream",
        "system",
        "thinking",
        "tool_choice",
        "tools",
    ]
)
COUNT_KEYS = frozenset(
    [
        "model",
        "messages",
        "cache_control",
        "output_config",
        "speed",
        "system",
        "thinking",
        "tool_choice",
        "tools",
    ]
)

# A scripted failure's error type and message, by status (the docs' error table; 429 and 529
# texts as the real API sends them).
FAILURES: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "There was an issue with the format or content of your request."),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "There was an issue with your billing or payment."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource was not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "This request would exceed your account's rate limit. Please try again later."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}


class Refusal(Exception):
    """A request the API answers with an error, raised from anywhere in the checks."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def error_body(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def canonical(value: Any) -> str:
    """One spelling per JSON value, so equal prompts hash and count alike."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- the prompt as the cache sees it ---------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One unit of the prompt in render order (a tool, a system block, a message content block)."""

    where: str  # its path in the request, for error messages
    text: str  # canonical JSON of its place and content, without cache_control
    cache_control: dict[str, Any] | None
    cacheable: bool  # thinking blocks can carry no breakpoint


def _block(where: str, place: str, content: Any) -> Block:
    if not isinstance(content, dict):
        raise Refusal(f"{where}: Input should be a valid dictionary")
    bare = {k: v for k, v in content.items() if k != "cache_control"}
    cacheable = content.get("type") not in ("thinking", "redacted_thinking")
    if not cacheable and "cache_control" in content:
        raise Refusal(f"{where}.cache_control: Extra inputs are not permitted")
    return Block(where, canonical([place, bare]), content.get("cache_control"), cacheable)


def prompt_blocks(body: dict[str, Any]) -> list[Block]:
    """The request as the ordered sequence tools → system blocks → message content blocks,
    the order in which Anthropic renders (and so caches) a prompt. A string system prompt or
    message content counts as one text block."""
    blocks = [_block(f"tools.{i}", "tool", tool) for i, tool in enumerate(body.get("tools") or [])]
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    blocks += [_block(f"system.{i}", "system", part) for i, part in enumerate(system or [])]
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks += [
            _block(f"messages.{m}.content.{c}", message["role"], part) for c, part in enumerate(content)
        ]
    return blocks


def _ttl(where: str, control: Any) -> str:
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise Refusal(f"{where}.type: Input should be 'ephemeral'")
    ttl = control.get("ttl") or "5m"
    if ttl not in ("5m", "1h"):
        raise Refusal(f"{where}.ttl: Input should be '5m' or '1h'")
    return ttl


def breakpoints(blocks: list[Block], top_level: Any) -> dict[int, str]:
    """Block index → TTL of each cache breakpoint: every block with cache_control, plus the last
    cacheable block when the request has a top-level cache_control (which takes one of the four
    slots)."""
    marks = {
        i: _ttl(f"{b.where}.cache_control", b.cache_control)
        for i, b in enumerate(blocks)
        if b.cache_control is not None
    }
    if top_level is not None:
        last = max((i for i, b in enumerate(blocks) if b.cacheable), default=None)
        if last is not None:
            marks.setdefault(last, _ttl("cache_control", top_level))
    if len(marks) > MAX_BREAKPOINTS:
        raise Refusal(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
        )
    ttls = [marks[i] for i in sorted(marks)]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        # The docs require longer TTLs before shorter ones; this wording is ours (plausible).
        raise Refusal("cache_control: a breakpoint with ttl '1h' may not come after one with ttl '5m'.")
    return marks


def prefix_keys(model: str, blocks: list[Block]) -> list[str]:
    """The cache key of each prefix (blocks 0..i): a hash of the model and the blocks' JSON."""
    digest = hashlib.sha256(model.encode())
    keys = []
    for block in blocks:
        digest.update(b"\x1e" + block.text.encode())
        keys.append(digest.copy().hexdigest())
    return keys


# -- request checks --------------------------------------------------------------------------


def check_shape(body: Any, allowed: frozenset[str], required: tuple[str, ...]) -> tuple[str, ModelRules]:
    """The checks every request meets first: known keys, required keys, a model we serve,
    messages with a role and content."""
    if not isinstance(body, dict):
        # Plausible wording.
        raise Refusal("There was an error parsing the body of your request. The body must be a JSON object.")
    for key in body:
        if key not in allowed:
            raise Refusal(f"{key}: Extra inputs are not permitted")
    for key in required:
        if key not in body:
            raise Refusal(f"{key}: Field required")
    model = body["model"]
    if not isinstance(model, str) or model not in MODELS:
        raise Refusal(f"model: {model}", 404, "not_found_error")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        raise Refusal("messages: at least one message is required")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise Refusal(f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'")
        if not isinstance(message.get("content"), (str, list)):
            raise Refusal(f"messages.{i}.content: Field required")
        for c, block in enumerate(message["content"] if isinstance(message["content"], list) else []):
            if isinstance(block, dict) and block.get("type") == "text" and not block.get("text"):
                raise Refusal(f"messages.{i}.content.{c}.text: text content blocks must be non-empty")
    check_tool_turns(messages)
    return model, MODELS[model]


def _blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message["content"]
    return (
        [b for b in content if isinstance(b, dict) and b.get("type") == kind]
        if isinstance(content, list)
        else []
    )


def check_tool_turns(messages: list[dict[str, Any]]) -> None:
    """Every tool_use is answered by a tool_result in the very next message, and a tool_result
    answers a tool_use of the message before, as the API requires (its own wording)."""
    for i, message in enumerate(messages):
        asked = (
            {b.get("id") for b in _blocks_of(message, "tool_use")}
            if message["role"] == "assistant"
            else set()
        )
        if i > 0 and messages[i - 1]["role"] == "assistant":
            before = {b.get("id") for b in _blocks_of(messages[i - 1], "tool_use")}
        else:
            before = set()
        for c, block in enumerate(_blocks_of(message, "tool_result")):
            if block.get("tool_use_id") not in before:
                raise Refusal(
                    f"messages.{i}.content.{c}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
        if asked:
            answered = (
                _leading_results(messages[i + 1])
                if i + 1 < len(messages)
                else asked  # the last message: the next request answers it
            )
            missing = sorted(asked - answered)
            if missing:
                raise Refusal(
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message."
                )


def _leading_results(message: dict[str, Any]) -> set[Any]:
    """The calls a user turn answers: its tool_result blocks before any other block (the API
    wants the results first; text after them)."""
    content = message["content"] if isinstance(message["content"], list) else []
    answered = set()
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            break
        answered.add(block.get("tool_use_id"))
    return answered


def check_thinking_kept(messages: list[dict[str, Any]]) -> None:
    """With thinking on, the assistant turn whose tools the last message answers starts with
    its thinking, given back as it came (the API's rule for tool use with thinking)."""
    if len(messages) < 2 or not _blocks_of(messages[-1], "tool_result"):
        return
    turn = messages[-2]
    first = turn["content"][0] if isinstance(turn["content"], list) and turn["content"] else {}
    if first.get("type") not in ("thinking", "redacted_thinking"):
        raise Refusal(
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, "
            f"but found `{first.get('type', 'text')}`. When `thinking` is enabled, a final `assistant` "
            "message must start with a thinking block (preceeding the lastmost set of `tool_use` and "
            "`tool_result` blocks). We recommend you include thinking blocks from previous turns."
        )


def check_max_tokens(body: dict[str, Any], model: str, rules: ModelRules) -> None:
    """max_tokens is an integer from 0 (SDK 2.14: "Set to 0 to populate the prompt cache without
    generating a response") to the model's output ceiling."""
    value = body["max_tokens"]
    if not isinstance(value, int) or isinstance(value, bool):
        raise Refusal("max_tokens: Input should be a valid integer")
    if value < 0:
        raise Refusal("max_tokens: Input should be greater than or equal to 0")
    if value > rules.max_output:
        raise Refusal(
            f"max_tokens: {value} > {rules.max_output}, which is the maximum allowed number of output tokens "
            f"for {model}"
        )


def custom_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The client's own tools (server tools such as web search have a dated `type`)."""
    return [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") in (None, "custom")]


def check_tools(body: dict[str, Any], rules: ModelRules) -> dict[str, Any] | None:
    """The tool a forced tool_choice names (or the first, for "any"); None when not forced."""
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise Refusal("tools: Input should be a valid list")
    for i, tool in enumerate(tools or []):
        if isinstance(tool, dict) and tool.get("type") in (None, "custom"):
            for key in ("name", "input_schema"):
                if key not in tool:
                    raise Refusal(f"tools.{i}.custom.{key}: Field required")
    choice = body.get("tool_choice") or {"type": "auto"}
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise Refusal("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
    if kind in ("auto", "none"):
        return None
    if not rules.forced_tool_choice:
        raise Refusal('tool_choice: type "tool" and "any" are not supported for this model.')
    mine = custom_tools(body)
    if kind == "any":
        if not mine:
            raise Refusal('tool_choice: type "any" requires at least one tool.')  # plausible wording
        return mine[0]
    if "name" not in choice:
        raise Refusal("tool_choice.tool.name: Field required")
    for tool in mine:
        if tool["name"] == choice["name"]:
            return tool
    raise Refusal(
        f"tool_choice.name: no tool named {choice['name']!r} among the tools given."
    )  # plausible wording


def thinking_type(body: dict[str, Any], rules: ModelRules, forced: bool) -> str:
    """The thinking mode the request runs with, after checking it is one the model accepts.
    An omitted `thinking` takes the model's default, which yields to a forced tool_choice (we
    assume the API turns default thinking off rather than refuse a request that asked for none)."""
    given = body.get("thinking")
    if given is None:
        return "disabled" if forced else rules.default_thinking
    kind = given.get("type") if isinstance(given, dict) else None
    if kind not in ("enabled", "adaptive", "disabled", "between_tools"):
        raise Refusal("thinking.type: Input should be 'enabled', 'adaptive', 'disabled' or 'between_tools'")
    if kind not in rules.thinking:
        # The real text for a thinking type a model does not take was not found; this is ours.
        accepted = " or ".join(f'"{t}"' for t in rules.thinking)
        raise Refusal(f'thinking: type "{kind}" is not supported for this model. Use {accepted}.')
    if kind == "enabled":
        budget = given.get("budget_tokens")
        if budget is None:
            raise Refusal("thinking.enabled.budget_tokens: Field required")
        if not isinstance(budget, int) or budget < 1024:
            raise Refusal("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if "max_tokens" in body and body["max_tokens"] <= budget:
            raise Refusal(
                "`max_tokens` must be greater than `thinking.budget_tokens`. "
                "Please consult our documentation at "
                "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
            )
    if forced and kind in ("enabled", "adaptive"):
        raise Refusal("Thinking may not be enabled when tool_choice forces tool use.")
    return kind


def strictness_problem(schema: Any, where: str) -> str | None:
    """Why a structured-output schema is refused, or None: the root must be an object schema and
    every object in it must set additionalProperties to false."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return f"{where}: The root schema must be of type 'object'"  # plausible wording
    pending: list[tuple[str, Any]] = [(where, schema)]
    while pending:
        path, node = pending.pop()
        if not isinstance(node, dict):
            continue
        kind = node.get("type")
        is_object = kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node
        if is_object and node.get("additionalProperties") is not False:
            # plausible wording
            return f"{path}: For 'object' type, 'additionalProperties' must be explicitly set to false"
        for key in ("properties", "$defs", "definitions"):
            pending += [(f"{path}.{key}.{name}", child) for name, child in (node.get(key) or {}).items()]
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            pending += [(f"{path}.{key}.{i}", child) for i, child in enumerate(node.get(key) or [])]
        if isinstance(node.get("items"), dict):
            pending.append((f"{path}.items", node["items"]))
    return None


def check_output_config(body: dict[str, Any], rules: ModelRules) -> dict[str, Any] | None:
    """The JSON schema the answer must follow, or None; refuses effort on a model without it."""
    config = body.get("output_config") or {}
    effort = config.get("effort")
    if effort is not None:
        if effort not in EFFORTS:
            raise Refusal("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
        if not rules.effort:
            raise Refusal(
                "output_config.effort: effort is not supported for this model."
            )  # plausible wording
    form = config.get("format")
    if form is None:
        return None
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        raise Refusal("output_config.format.type: Input should be 'json_schema'")
    if "schema" not in form:
        raise Refusal("output_config.format.schema: Field required")
    problem = strictness_problem(form["schema"], "output_config.format.schema")
    if problem:
        raise Refusal(problem)
    return form["schema"]


@dataclass(frozen=True)
class Request:
    """A request that passed every check, and what answering it needs."""

    model: str
    rules: ModelRules
    forced: dict[str, Any] | None  # the tool a forced tool_choice calls
    thinking: str  # the thinking mode it runs with
    format_schema: dict[str, Any] | None  # output_config.format's schema
    blocks: list[Block]
    marks: dict[int, str]  # breakpoints: block index → TTL


def check_request(body: Any, allowed: frozenset[str], required: tuple[str, ...]) -> Request:
    """Every rule a request must meet, roughly in the order the API applies them (shape and
    model first, then tools, thinking, output config, cache breakpoints)."""
    model, rules = check_shape(body, allowed, required)
    if "max_tokens" in required:
        check_max_tokens(body, model, rules)
    forced = check_tools(body, rules)
    thinking = thinking_type(body, rules, forced is not None)
    format_schema = check_output_config(body, rules)
    blocks = prompt_blocks(body)
    return Request(
        model, rules, forced, thinking, format_schema, blocks, breakpoints(blocks, body.get("cache_control"))
    )


# -- the stand-in ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheEntry:
    tokens: int
    ttl: str


Answer = Callable[[Call, "dict[str, Any] | None"], "dict[str, Any] | str | Uses"]


class FakeAnthropic(FakeAPI):
    """Anthropic's Messages API on loopback. `api_key=None` accepts any key; `answer(call, schema)`
    decides an answer (a dict is checked against `schema`; a str is sent as is, the way to script
    a malformed answer), by default a small instance of the schema. `auto_tool_use` says whether
    a request with one tool and tool_choice auto is answered with a call of it (as a model
    usually does) or with a text block holding the JSON. `cache` holds the cache entries written,
    keyed by prefix hash (entries never expire; clear it to simulate expiry)."""

    def __init__(self, api_key: str | None = "sk-ant-fake", answer: Answer | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.answer = answer
        self.auto_tool_use = True
        self.empty_text = False  # answers that use tools begin with an empty text block
        self.cache: dict[str, CacheEntry] = {}
        self._cache_lock = threading.Lock()
        self.contexts: dict[str, int] = {}  # by model: a window smaller than its own, for tests
        # the thinking blocks signed, by signature: the thinking and the whole turn it began
        self._signed: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        self._signing = threading.Lock()

    @property
    def base_url(self) -> str:
        """What to pass to `anthropic.Anthropic(base_url=...)` (the SDK appends /v1/messages)."""
        return self.address

    # -- FakeAPI's hooks -------------------------------------------------------------------

    def handle(self, call: Call) -> Reply:
        request_id = new_id("req_")
        try:
            status, body = 200, self._respond(call)
        except Refusal as refusal:
            status, body = refusal.status, error_body(refusal.kind, refusal.message, request_id)
        except Exception as exc:  # a bug in a test's `answer` or in the stand-in: loudly
            status, body = 500, error_body("api_error", f"stand-in failed: {exc!r}", request_id)
        return status, body, {"request-id": request_id}

    def failure(self, status: int, retry_after: float | None) -> Scripted:
        request_id = new_id("req_")
        kind, message = FAILURES.get(status, ("api_error", "Internal server error"))
        headers = {"request-id": request_id}
        if retry_after is not None:
            headers["retry-after"] = f"{retry_after:g}"
        if status == 529:
            headers["x-should-retry"] = "true"  # as seen on real 529s
        return Scripted(status, error_body(kind, message, request_id), headers)

    # -- answering -------------------------------------------------------------------------

    def _respond(self, call: Call) -> dict[str, Any]:
        self._check_headers(call.headers)
        path = call.path.split("?")[0].rstrip("/")
        if path == "/v1/messages":
            return self._message(call)
        if path == "/v1/messages/count_tokens":
            return self._count(call.body)
        raise Refusal("Not Found", 404, "not_found_error")

    def _check_headers(self, headers: dict[str, str]) -> None:
        """The key (x-api-key wins over Authorization: Bearer, as the API does when both are
        sent; SDK 2.14 sends Bearer) and the version header. The key is never echoed."""
        if self.api_key is not None:
            key = headers.get("x-api-key")
            if key is None:
                scheme, _, token = headers.get("authorization", "").partition(" ")
                key = token.strip() if scheme.lower() == "bearer" else None
            if key is None:
                raise Refusal("x-api-key header is required", 401, "authentication_error")
            if key != self.api_key:
                raise Refusal("invalid x-api-key", 401, "authentication_error")
        if not headers.get("anthropic-version"):
            raise Refusal("anthropic-version: header is required")

    def _count(self, body: Any) -> dict[str, Any]:
        """count_tokens: the same checks (bar max_tokens) and the same count as a message."""
        request = check_request(body, COUNT_KEYS, ("model", "messages"))
        return {"input_tokens": sum(self.count(b.text) for b in request.blocks)}

    def _message(self, call: Call) -> dict[str, Any]:
        body = call.body
        request = check_request(body, MESSAGE_KEYS, ("model", "max_tokens", "messages"))
        if body.get("stream"):
            raise Refusal("the stand-in does not stream: ask with stream false", 500, "api_error")
        thinks = request.thinking in ("enabled", "adaptive")
        self._check_signed(body["messages"])
        if thinks:
            check_thinking_kept(body["messages"])
        prompt = sum(self.count(b.text) for b in request.blocks)
        context = self.contexts.get(request.model, request.rules.context)
        if prompt > context:
            raise Refusal(f"prompt is too long: {prompt} tokens > {context} maximum")
        if prompt + body["max_tokens"] > context:
            raise Refusal(
                f"input length and `max_tokens` exceed context limit: {prompt} + {body['max_tokens']} > "
                f"{context}, decrease input length or `max_tokens` and try again"
            )
        tool, schema = self._plan(body, request.forced, request.format_schema)
        cache = self._bill_cache(request)
        content, output, stop = self._content(call, tool, schema, thinks, body)
        if content and content[0]["type"] == "thinking":  # the turn it begins, to check it comes back whole
            with self._signing:
                self._signed[content[0]["signature"]] = (content[0]["thinking"], content)
        return {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {**cache, "output_tokens": output, "service_tier": "standard"},
        }

    def _check_signed(self, messages: list[dict[str, Any]]) -> None:
        """Every thinking block given back is one the API signed, and the latest assistant
        turn that began with thinking comes back as it went out: the same blocks in the same
        order (a cache breakpoint aside)."""
        latest = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
        for i, message in enumerate(messages):
            if message["role"] != "assistant" or not isinstance(message["content"], list):
                continue
            for c, block in enumerate(message["content"]):
                if not isinstance(block, dict) or block.get("type") != "thinking":
                    continue
                signed = self._signed.get(block.get("signature", ""))
                if signed is None or signed[0] != block.get("thinking"):
                    raise Refusal(f"messages.{i}.content.{c}: Invalid `signature` in `thinking` block")
                if i == latest and c == 0:
                    self._check_unchanged(message["content"], signed[1], i)

    @staticmethod
    def _check_unchanged(given: list[dict[str, Any]], issued: list[dict[str, Any]], at: int) -> None:
        """The latest assistant turn that began with thinking, given back: the stand-in wants
        the whole turn as it went out, where the API's documented rule names only its thinking
        blocks (stricter, on purpose: a turn rebuilt around its thinking is what this catches).
        An empty text block, which the API refuses on input, is left out of what went out."""
        issued = [block for block in issued if block.get("type") != "text" or block.get("text")]
        for c in range(max(len(given), len(issued))):
            sent = given[c] if c < len(given) else {}
            came = issued[c] if c < len(issued) else {}
            if any(sent.get(key) != value for key, value in came.items()) or not came:
                raise Refusal(
                    f"messages.{at}.content.{c}: `thinking` or `redacted_thinking` blocks in the latest "
                    "assistant message cannot be modified. These blocks must remain as they were in the "
                    "original response."
                )

    def _plan(
        self, body: dict[str, Any], forced: dict | None, format_schema: dict | None
    ) -> tuple[dict | None, dict | None]:
        """(tool, schema): the tool the answer calls (None: a text answer) and the schema the
        answer follows (None: free text). A forced tool is called; a lone tool under
        tool_choice auto is called when `auto_tool_use`; otherwise output_config.format, else
        the lone tool's schema as text, else free text."""
        if forced is not None:
            return forced, forced["input_schema"]
        choice = (body.get("tool_choice") or {"type": "auto"})["type"]
        tools = custom_tools(body)
        lone = tools[0] if choice == "auto" and len(tools) == 1 else None
        if lone is not None and self.auto_tool_use:
            return lone, lone["input_schema"]
        if format_schema is not None:
            return None, format_schema
        return None, lone["input_schema"] if lone is not None else None

    def _decide(self, call: Call, schema: dict | None) -> dict[str, Any] | str | Uses:
        """The test's answer, or a small instance of the schema; a dict that does not fit the
        schema is the test's bug, and said so with a 500."""
        if self.answer is not None:
            decided = self.answer(call, schema)
        else:
            decided = instance_of(schema) if schema is not None else "OK"
        if isinstance(decided, dict) and schema is not None:
            problem = fits(decided, schema)
            if problem:
                raise Refusal(f"stand-in answer does not fit its schema: {problem}", 500, "api_error")
        return decided

    def _content(
        self, call: Call, tool: dict | None, schema: dict | None, thinks: bool, body: dict[str, Any]
    ) -> tuple[list[dict], int, str]:
        """The content blocks, output tokens and stop reason. With thinking on, a thinking block
        comes first. An answer longer than max_tokens is cut (text) or dropped (a tool call), with
        stop_reason "max_tokens"; max_tokens 0 only warms the cache."""
        budget = body["max_tokens"]
        if budget == 0:
            return [], 0, "max_tokens"
        content: list[dict[str, Any]] = []
        used = 0
        if thinks:
            content.append(self._thought(body))
            used = min(THINKING_TOKENS, budget)
        decided = self._decide(call, schema)
        room = budget - used
        if isinstance(decided, Uses):
            return self._uses(decided, body, content, used, budget)
        if isinstance(decided, str) and len(custom_tools(body)) > 1:  # the model chose to answer in text
            tool = None
        if tool is not None:
            arguments = json.loads(decided) if isinstance(decided, str) else decided
            if not isinstance(arguments, dict):
                raise Refusal(
                    f"stand-in answer for tool {tool['name']!r} is not a JSON object: {decided!r}",
                    500,
                    "api_error",
                )
            cost = tokens(canonical(arguments))
            if cost > room:
                return content, budget, "max_tokens"
            content.append(
                {"type": "tool_use", "id": new_id("toolu_"), "name": tool["name"], "input": arguments}
            )
            return content, used + cost, "tool_use"
        text = decided if isinstance(decided, str) else json.dumps(decided)
        cost = tokens(text)
        if cost > room:
            content.append({"type": "text", "text": text[: room * 4]})
            return content, budget, "max_tokens"
        content.append({"type": "text", "text": text})
        return content, used + cost, "end_turn"

    def _thought(self, body: dict[str, Any]) -> dict[str, Any]:
        """A signed thinking block (its text left out where the request says so)."""
        omitted = (body.get("thinking") or {}).get("display") == "omitted"
        text = "" if omitted else "Working out which answer the request asks for."
        block = {"type": "thinking", "thinking": text, "signature": new_id("sig_")}
        with self._signing:
            self._signed[block["signature"]] = (text, [block])
        return block

    def _uses(
        self, uses: Uses, body: dict[str, Any], content: list[dict], used: int, budget: int
    ) -> tuple[list[dict], int, str]:
        """A scripted turn that uses tools: its text, then a tool_use block per call (each
        checked against its tool's schema: a mismatch is the test's bug, a 500); a model that
        thinks thinks again before each call after the first."""
        offered = {tool["name"]: tool for tool in custom_tools(body)}
        if uses.text or self.empty_text:  # a model may write an empty text block before its calls
            content.append({"type": "text", "text": uses.text})
            used += tokens(uses.text)
        for name, arguments in uses.calls:
            tool = offered.get(name)
            problem = "not offered" if tool is None else fits(arguments, tool["input_schema"])
            if problem:
                raise Refusal(f"stand-in call of {name!r}: {problem}", 500, "api_error")
            used += tokens(canonical(arguments))
            if used > budget:
                return content, budget, "max_tokens"
            if content and content[0]["type"] == "thinking" and content[-1]["type"] == "tool_use":
                content.append(self._thought(body))
            content.append({"type": "tool_use", "id": new_id("toolu_"), "name": name, "input": arguments})
        return content, used, "tool_use" if uses.calls else "end_turn"

    # -- prompt caching --------------------------------------------------------------------

    def _bill_cache(self, request: Request) -> dict[str, Any]:
        """The input side of usage, caching as Anthropic does: read the longest cached prefix
        found at a breakpoint or up to LOOKBACK blocks before one; write every breakpoint prefix
        beyond it that is not cached and is at least the model's minimum (a shorter one is just
        not cached); bill each written stretch at the TTL of the breakpoint ending it; the rest
        is plain input. input + creation + read is always the whole prompt."""
        blocks, marks, minimum = request.blocks, request.marks, request.rules.min_cacheable
        keys = prefix_keys(request.model, blocks)
        reach = list(
            itertools.accumulate(self.count(b.text) for b in blocks)
        )  # up to and including each block
        written = {"5m": 0, "1h": 0}
        with self._cache_lock:
            read = 0
            for mark in marks:
                hit = next(
                    (p for p in range(mark, max(-1, mark - LOOKBACK), -1) if keys[p] in self.cache), None
                )
                if hit is not None:
                    read = max(read, reach[hit])
            done = read
            for mark in sorted(marks):
                if reach[mark] <= done or reach[mark] < minimum:
                    continue
                written[marks[mark]] += reach[mark] - done
                done = reach[mark]
                self.cache[keys[mark]] = CacheEntry(reach[mark], marks[mark])
        total = reach[-1] if reach else 0
        return {
            "input_tokens": total - done,
            "cache_creation_input_tokens": done - read,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written["5m"],
                "ephemeral_1h_input_tokens": written["1h"],
            },
        }
