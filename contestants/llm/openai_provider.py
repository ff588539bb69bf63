"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, LM Studio, llama.cpp) via `base_url`.

The answer is asked for as a forced call of one function whose parameters are the schema
("tool", works on OpenAI and llama.cpp's server), or with `structured: json_object` as
response_format {"type": "json_object", "schema": ...}, which llama.cpp-style servers use to
constrain decoding.
"""

from __future__ import annotations

from typing import Any, Literal

from contestants.llm.providers import RemoteProvider, RemoteSettings
from contestants.llm.retry import BadResponse, Failure, sdk_failure
from contestants.llm.types import Answer, CompletionRequest, TokenUsage


class OpenAISettings(RemoteSettings):
    api_key_env: str | None = "OPENAI_API_KEY"
    structured: Literal["tool", "json_object"] = "tool"


class OpenAIProvider(RemoteProvider):
    name = "openai"
    settings_model = OpenAISettings
    settings: OpenAISettings

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "structured": self.settings.structured}

    def _new_client(self, **options: Any) -> Any:
        import openai

        return openai.OpenAI(**options)

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        from openai.types.chat import ChatCompletion

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [message.model_dump() for message in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": timeout,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if self.settings.structured == "tool":
            kwargs["tools"] = [
                {"type": "function", "function": {"name": request.schema_name, "parameters": request.json_schema}}
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": request.schema_name}}
        else:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        response = self._sdk_client().chat.completions.create(**kwargs)
        # Given a 2xx body that is not JSON, the SDK returns the body as a str.
        if not isinstance(response, ChatCompletion) or not response.choices:
            raise BadResponse("not a chat completion")
        message = response.choices[0].message
        calls = message.tool_calls or []
        text = calls[0].function.arguments if calls else (message.content or "")
        return Answer(text=text, usage=_usage(response.usage))

    def _failure(self, exc: BaseException) -> Failure | None:
        import openai

        return sdk_failure(exc, openai)


def _usage(usage: Any) -> TokenUsage:
    if usage is None:
        return TokenUsage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return TokenUsage(input_tokens=usage.prompt_tokens or 0, output_tokens=usage.completion_tokens or 0, cached_tokens=cached)
