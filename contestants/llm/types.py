"""What goes into a model call and what comes out, independent of any provider."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class CompletionRequest(BaseModel):
    """One call: the conversation, and the JSON schema the answer must fill.

    `schema_name` becomes the tool/function name, so it keeps to the characters every API
    accepts there. `seed` is passed where the provider supports it (OpenAI-compatible servers
    and the local model; Anthropic has none).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    json_schema: dict[str, Any]
    schema_name: str = Field("decision", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = None
    max_tokens: int = Field(512, gt=0)


class TokenUsage(BaseModel):
    """Tokens of one or more calls; additive.

    `input_tokens` counts every prompt token, including the `cached_tokens` the provider
    served from its prompt cache (a subset, usually billed cheaper).
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


class Answer(BaseModel):
    """What one successful attempt produced, before timing, cost and caching are added."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: TokenUsage


class Completion(BaseModel):
    """The result of `Provider.complete`.

    `output` is the answer parsed as a JSON object, or None when `text` (the raw answer) is
    not one. `cost` is in USD, None when the model has no price. A cache hit (`cached`) made
    no call: `attempts` is 0 and `cost` is 0, while `usage` still describes the stored answer.
    `latency` is the wall time of this `complete` call in seconds, retries included.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    output: dict[str, Any] | None
    text: str
    usage: TokenUsage
    cost: float | None
    latency: float
    attempts: int
    cached: bool = False
    request_hash: str

    @property
    def retries(self) -> int:
        return max(self.attempts - 1, 0)


def parse_object(text: str) -> dict[str, Any] | None:
    """The text as a JSON object, or None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
