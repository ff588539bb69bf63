"""What goes into a model call and what comes out, independent of any provider."""

from __future__ import annotations

import json
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from common.model_calls import Message, ToolCall

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"  # what every API accepts as a tool's or a format's name


class Tool(BaseModel):
    """A tool offered to the model: its name, what it does in a line, and the JSON schema of
    its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME_PATTERN)
    description: str
    parameters: dict[str, Any]


class CompletionRequest(BaseModel):
    """One call: the conversation, and either the JSON schema the answer must fill or the
    tools the model may use (it answers with text, tool calls or both).

    `schema_name` becomes the tool/function/format name of a schema's answer, so it keeps to
    the characters every API accepts there. `temperature` and `top_p` are None for the model's
    own default; a provider sends them, and `seed`, only where the model takes them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: tuple[Message, ...] = Field(min_length=1)
    json_schema: dict[str, Any] | None = None
    tools: tuple[Tool, ...] = ()
    schema_name: str = Field("decision", pattern=NAME_PATTERN)
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: int | None = None
    max_tokens: int = Field(512, gt=0)

    @model_validator(mode="after")
    def _schema_or_tools(self) -> CompletionRequest:
        if (self.json_schema is None) == (not self.tools):
            raise ValueError("a request asks for an answer to a schema or offers tools, one of the two")
        return self

    def answer_of(self, text: str, calls: tuple[ToolCall, ...]) -> tuple[str, tuple[ToolCall, ...]]:
        """The answer's text and its tool calls; where the request asks for a schema, the API
        was made to fill it through a tool, and that call's arguments are the answer."""
        if self.json_schema is not None and calls:
            return calls[0].arguments, ()
        return text, calls

    @model_serializer(mode="wrap")
    def _without_tools(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A request without tools dumps as it did before tools existed (see Message)."""
        fields = dump(self)
        if not self.tools:
            fields.pop("tools", None)
        return fields


class TokenUsage(BaseModel):
    """Tokens of one or more calls; additive.

    `input_tokens` counts every prompt token, including the `cached_tokens` the provider
    served from its prompt cache and the `cache_write_tokens` it wrote to it (both billed at
    their own prices). `output_tokens` includes the `reasoning_tokens` (billed as output).
    """

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            **{name: getattr(self, name) + getattr(other, name) for name in TokenUsage.model_fields}
        )


class Answer(BaseModel):
    """What one successful attempt produced, before timing, cost and caching are added:
    the text, the tools it asked for, and its reasoning and the items to carry as `Message`
    keeps them.

    `served_model` is the model name the API says answered (a dated snapshot of an alias, or
    whatever a gateway routed to), `fingerprint` the backend configuration it reports
    (OpenAI's system_fingerprint); both None where the API reports none. `temperature`,
    `top_p` and `seed` are what the request actually carried (None: not sent)."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: TokenUsage
    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str | None = None
    carried: tuple[dict[str, Any], ...] = ()
    served_model: str | None = None
    fingerprint: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    def turn(self) -> Message:
        """The answer as the assistant's turn of the conversation it continues."""
        return Message(
            role="assistant",
            content=self.text,
            tool_calls=self.tool_calls,
            reasoning=self.reasoning,
            carried=self.carried,
        )


class Completion(Answer):
    """The result of `Provider.complete`.

    `output` is the answer parsed as a JSON object, or None when `text` (the raw answer) is
    not one. `cost` is in USD at the model's price for the answer's tokens, None when the
    model has no price; a cache hit (`cached`) made no call and was not paid (`attempts` 0),
    while `usage` and `cost` still describe the stored answer, so that a table of a replayed
    run equals that of the run that paid. `latency` is the wall time of this `complete` call
    in seconds, waiting and retries included.
    """

    provider: str
    model: str
    output: dict[str, Any] | None
    cost: float | None
    latency: float
    attempts: int
    cached: bool = False
    request_hash: str

    @property
    def retries(self) -> int:
        return max(self.attempts - 1, 0)

    @property
    def paid(self) -> bool:
        return not self.cached

    def text_of(self, field: str) -> str | None:
        """What the answer wrote in a text field of its own, stripped; None if it wrote none."""
        value = (self.output or {}).get(field)
        return value.strip() if isinstance(value, str) else None


def parse_object(text: str) -> dict[str, Any] | None:
    """The text as a JSON object, or None."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
