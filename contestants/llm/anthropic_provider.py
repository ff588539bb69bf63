"""Anthropic's Messages API (API version 2026-10-21, as the locked SDK speaks it), or a
compatible gateway through `base_url`.

The decision comes back as a forced use of one tool whose input is the schema, or, where the
model refuses a forced tool (the newest models, and any model while it thinks), as a
structured output (output_config.format), or failing that as an unforced tool the model is
asked to use, whose use or text is taken. What each model accepts is the catalogue's
(contestants/llm/catalogue.yaml).

The rules and the tool are the same in every call of a match, so the system block carries a
cache breakpoint: the API caches the prefix (tools, then system) on the first call and the
next calls read it at a tenth or less of the input price; a second breakpoint after the
conversation so far (window memory) lets tomorrow's call read today's. The API caches a
prefix only from a length on (512 to 4096 tokens, by model): shorter ones are simply not.
This API version takes no temperature, top_p or seed: a request asking for one is refused at
validation.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field

from contestants.calls.types import Answer, CompletionRequest, Message, TokenUsage, ToolCall
from contestants.llm.catalogue import AnthropicFamily, anthropic_family
from contestants.llm.errors import ProviderConfigError
from contestants.llm.providers import RemoteProvider, RemoteSettings, check_effort
from contestants.llm.retry import BadResponse, Failure, sdk_failure
from contestants.llm.schema import strict_schema

Mode = Literal["tool", "json_schema", "unforced_tool"]


class AnthropicSettings(RemoteSettings):
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    structured: Literal["auto", "tool", "json_schema"] = "auto"
    thinking: Literal["adaptive", "enabled", "disabled"] | None = Field(
        None, description="extended thinking; None: the model's default"
    )
    thinking_budget: int = Field(
        1024, ge=1024, le=10**8, description="tokens of thinking with thinking: enabled; below max_tokens"
    )
    cache_prompt: bool = Field(True, description="a prompt-cache breakpoint after the rules and the tool")


class AnthropicProvider(RemoteProvider):
    name = "anthropic"
    settings_model = AnthropicSettings
    settings: AnthropicSettings

    @property
    def family(self) -> AnthropicFamily:
        return anthropic_family(self.model)

    def context_tokens(self) -> int | None:
        return self.family.context

    @property
    def thinks(self) -> bool:
        """Whether the model thinks before answering: asked to, or always (a family whose only
        thinking type is adaptive)."""
        thinking = self.settings.thinking
        return thinking in ("adaptive", "enabled") or (
            thinking is None and self.family.thinking == ("adaptive",)
        )

    @property
    def mode(self) -> Mode:
        """How the answer is asked for: `structured`, or the model's first mode (auto); a tool
        is forced where the model allows it and does not think (thinking rules a forced tool
        out), else offered, and its use or the text is taken."""
        family = self.family
        wanted = family.structured[0] if self.settings.structured == "auto" else self.settings.structured
        if wanted == "json_schema":
            return "json_schema"
        return "tool" if family.forced_tool and not self.thinks else "unforced_tool"

    def check_request(self, request: CompletionRequest) -> None:
        family, s = self.family, self.settings
        for field in ("temperature", "top_p"):
            if getattr(request, field) is not None:
                raise ProviderConfigError(
                    f"{self.label}: the Messages API (version 2026-10-21) takes no {field}: leave it unset",
                    field,
                )
        if s.thinking is not None and family.thinking and s.thinking not in family.thinking:
            raise ProviderConfigError(
                f"{self.label} takes thinking {' or '.join(family.thinking)}, not {s.thinking!r}", "thinking"
            )
        if s.thinking == "enabled" and request.max_tokens <= s.thinking_budget:
            raise ProviderConfigError(
                f"{self.label}: max_tokens ({request.max_tokens}) must exceed "
                f"thinking_budget ({s.thinking_budget})",
                "max_tokens",
            )
        check_effort(self.label, s.reasoning_effort, family.efforts)
        if s.structured == "json_schema" and "json_schema" not in family.structured:
            raise ProviderConfigError(
                f"{self.label} offers no structured output (output_config.format): use structured: tool",
                "structured",
            )

    def cache_identity(self) -> dict[str, Any]:
        s = self.settings
        thinking = {
            "thinking": s.thinking,
            "thinking_budget": s.thinking_budget if s.thinking == "enabled" else None,
        }
        return {
            **super().cache_identity(),
            "mode": self.mode,
            "reasoning_effort": s.reasoning_effort,
            **thinking,
        }

    def _new_client(self, **options: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(**options)

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        from anthropic.types import Message

        s, mode, name = self.settings, self.mode, request.schema_name
        rules = "\n\n".join(m.content for m in request.messages if m.role == "system")
        messages = _turns(request.messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "timeout": timeout,
        }
        if rules:
            kwargs["system"] = [
                _block(rules, s.cache_prompt)
            ]  # after the tools and the rules: the prefix every call repeats
        if s.cache_prompt and len(messages) > 1:
            # and after the conversation so far, which the next call repeats: tomorrow's (a
            # decision), or the next step's (tools), which repeats the whole of this request;
            # with tools, also where the step before ended (before the model's last turn),
            # since the API looks for a cached prefix only some twenty blocks back from a breakpoint
            _breakpoint(messages[-1 if request.tools else -2])
            answered = [i for i, turn in enumerate(messages) if turn["role"] == "assistant"]
            if request.tools and answered and answered[-1] > 0:
                _breakpoint(messages[answered[-1] - 1])
        output_config: dict[str, Any] = {}
        if s.reasoning_effort is not None:
            output_config["effort"] = s.reasoning_effort
        if request.json_schema is None:  # the model may use the tools or answer in text
            kwargs["tools"] = [
                {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
                for tool in request.tools
            ]
        elif mode == "json_schema":
            output_config["format"] = {"type": "json_schema", "schema": strict_schema(request.json_schema)}
        else:
            kwargs["tools"] = [{"name": name, "input_schema": request.json_schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": name} if mode == "tool" else {"type": "auto"}
        if output_config:
            kwargs["output_config"] = output_config
        if s.thinking is not None:
            kwargs["thinking"] = {
                "type": s.thinking,
                **({"budget_tokens": s.thinking_budget} if s.thinking == "enabled" else {}),
            }
        if s.request:
            kwargs["extra_body"] = dict(s.request)
        response = self._sdk_client().messages.create(**kwargs)
        if not isinstance(response, Message):
            raise BadResponse("not a message")
        calls = tuple(
            ToolCall(id=block.id, name=block.name, arguments=json.dumps(block.input))
            for block in response.content
            if block.type == "tool_use"
        )
        text, calls = request.answer_of(
            "".join(block.text for block in response.content if block.type == "text"), calls
        )
        thought = "\n\n".join(block.thinking for block in response.content if block.type == "thinking")
        return Answer(
            text=text,
            tool_calls=calls,
            reasoning=thought or None,
            # with tools, the turn goes back as it came: its signed thinking unchanged and in
            # its place among the text and the tool uses, as the API requires
            carried=tuple(
                block.model_dump(mode="json", by_alias=True, exclude_none=True)
                for block in response.content
                if block.type != "text" or block.text  # the API refuses an empty text block back
            )
            if request.tools
            else (),
            usage=_usage(response.usage),
            served_model=response.model,
        )

    def _failure(self, exc: BaseException) -> Failure | None:
        import anthropic

        return sdk_failure(exc, anthropic)


def _block(text: str, breakpoint: bool) -> dict[str, Any]:
    """A text block; with a prompt-cache breakpoint, the prefix up to it is cached."""
    return {"type": "text", "text": text, **({"cache_control": {"type": "ephemeral"}} if breakpoint else {})}


def _breakpoint(message: dict[str, Any]) -> None:
    """A prompt-cache breakpoint on the last block of `message`."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = [_block(content, True)]
    else:
        content[-1] = {**content[-1], "cache_control": {"type": "ephemeral"}}


def _turns(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The conversation but the rules as the Messages API takes it: an assistant's turn as it
    came (or, where it was not kept, its text and its tool uses); the results of one turn's
    tools together in the next user turn, as tool results."""
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            result = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            if turns and turns[-1]["role"] == "user" and isinstance(turns[-1]["content"], list):
                turns[-1]["content"].append(result)
            else:
                turns.append({"role": "user", "content": [result]})
        elif _whole(m):
            turns.append({"role": "assistant", "content": list(m.carried)})
        elif m.tool_calls:
            # not kept whole: an answer cached by an arena that kept only the thinking, which
            # then goes first, as the API wants it where there is no more of it between the uses
            text = [{"type": "text", "text": m.content}] if m.content else []
            uses = [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _arguments(call.arguments)}
                for call in m.tool_calls
            ]
            turns.append({"role": "assistant", "content": [*m.carried, *text, *uses]})
        elif m.content or m.role != "assistant":  # the API refuses an empty assistant turn
            turns.append({"role": m.role, "content": m.content})
    return turns


def _whole(message: Message) -> bool:
    """Whether the turn's carried blocks are the whole turn: more than its thinking, all its
    tool uses among them."""
    used = [block.get("id") for block in message.carried if block.get("type") == "tool_use"]
    kept = any(block.get("type") not in ("thinking", "redacted_thinking") for block in message.carried)
    return kept and used == [call.id for call in message.tool_calls]


def _arguments(text: str) -> Any:
    """A tool use's input: the arguments the model wrote, or {} where they did not parse (the
    API takes only an object; the result of that call said what was wrong)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _usage(usage: Any) -> TokenUsage:
    """Anthropic's input_tokens excludes cache reads and writes; ours counts every prompt token.
    Its output_tokens include the thinking tokens."""
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    details = getattr(usage, "output_tokens_details", None)
    return TokenUsage(
        input_tokens=usage.input_tokens + read + written,
        output_tokens=usage.output_tokens,
        cached_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=getattr(details, "thinking_tokens", 0) or 0,
    )
