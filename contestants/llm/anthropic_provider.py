"""Anthropic's Messages API: the answer is a forced use of one tool whose input is the schema."""

from __future__ import annotations

import json
from typing import Any

from contestants.llm.providers import RemoteProvider, RemoteSettings
from contestants.llm.retry import BadResponse, Failure, sdk_failure
from contestants.llm.types import Answer, CompletionRequest, TokenUsage


class AnthropicSettings(RemoteSettings):
    api_key_env: str | None = "ANTHROPIC_API_KEY"


class AnthropicProvider(RemoteProvider):
    name = "anthropic"
    settings_model = AnthropicSettings
    settings: AnthropicSettings

    def _new_client(self, **options: Any) -> Any:
        import anthropic

        return anthropic.Anthropic(**options)

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        """System messages go to `system`. The Messages API (SDK 2.x) takes neither a seed nor
        a temperature, so those request fields only key the cache here."""
        from anthropic.types import Message

        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.model_dump() for m in request.messages if m.role != "system"],
            "max_tokens": request.max_tokens,
            "tools": [{"name": request.schema_name, "input_schema": request.json_schema}],
            "tool_choice": {"type": "tool", "name": request.schema_name},
            "timeout": timeout,
        }
        if system:
            kwargs["system"] = system
        response = self._sdk_client().messages.create(**kwargs)
        if not isinstance(response, Message):
            raise BadResponse("not a message")
        tool_uses = [block for block in response.content if block.type == "tool_use"]
        if tool_uses:
            text = json.dumps(tool_uses[0].input)
        else:
            text = "".join(block.text for block in response.content if block.type == "text")
        return Answer(text=text, usage=_usage(response.usage))

    def _failure(self, exc: BaseException) -> Failure | None:
        import anthropic

        return sdk_failure(exc, anthropic)


def _usage(usage: Any) -> TokenUsage:
    """Anthropic's input_tokens excludes cache reads and writes; ours counts every prompt token."""
    read = getattr(usage, "cache_read_input_tokens", None) or 0
    written = getattr(usage, "cache_creation_input_tokens", None) or 0
    return TokenUsage(input_tokens=usage.input_tokens + read + written, output_tokens=usage.output_tokens, cached_tokens=read)
