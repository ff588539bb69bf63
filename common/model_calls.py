"""The record of a merchant's calls of a language model: what each cost (ModelCall) and what
was said (TranscriptStep, made of Messages). Contestants make them and results stores them,
two rooms on one floor that may not import each other, so the one definition lives here."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

CallPurpose = Literal["decide", "repair", "recall", "off_path", "reflect", "step", "compact", "judge"]

NOTE_TOOL, FORGET_TOOL, PLAN_TOOL = "write_note", "delete_note", "state_plan"
"""An agent's tools (contestants.llm.agent) whose words results reads back from a transcript:
the notes it keeps (results.storage.transcript_codec) and what it wrote (results.scoring.conduct)."""

NOTEBOOKS = ("plans", "insights")
"""A `memory: plans` decision's notebooks (contestants.llm.decision_mode): what the merchant
writes for itself, which results reads as its notes."""


class ToolCall(BaseModel):
    """A tool the model asked to use: the call's id (the provider's, which the result names),
    the tool's name and the arguments as the JSON text the model wrote (which may not parse)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    name: str
    arguments: str


class Message(BaseModel):
    """One turn of a conversation. An assistant's turn may ask for tools (`tool_calls`); a
    `tool` turn is the result of the call `tool_call_id` names. `reasoning` is what the
    provider showed of an assistant's reasoning (its text or a summary), kept for the record
    and never sent back. `carried` is the turn in its provider's own form, as the API returned
    it, for the providers that must be given their own items back whole and in order (signed
    thinking blocks, encrypted reasoning items, thought signatures): that provider sends it in
    place of a turn rebuilt from the fields above, which stay for the record and the others."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = Field(None, min_length=1)
    reasoning: str | None = None
    carried: tuple[dict[str, Any], ...] = ()

    @model_validator(mode="after")
    def _tool_parts(self) -> Message:
        if (self.role == "tool") != (self.tool_call_id is not None):
            raise ValueError("a tool turn, and only a tool turn, names the call it answers")
        if self.role != "assistant" and (self.tool_calls or self.reasoning is not None or self.carried):
            raise ValueError("only an assistant's turn asks for tools or reasons")
        return self

    @model_serializer(mode="wrap")
    def _without_empty_tool_parts(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A turn without tool parts dumps as it did before tools existed, so that the
        response cache's keys of conversations without tools stay what they were."""
        fields = dump(self)
        for name in ("tool_calls", "tool_call_id", "reasoning", "carried"):
            if not getattr(self, name):
                fields.pop(name, None)
        return fields


class ModelCall(BaseModel):
    """One call a contestant made to a language model, for the accounting table (its row is
    this model with who made the call and where, results.storage.schema).

    Tokens: `input_tokens` counts every prompt token, `cached_tokens` and `cache_write_tokens`
    among them (read from and written to the provider's prompt cache); `output_tokens`
    includes the `reasoning_tokens`. `cost` is in USD at the model's price for those tokens
    (None: no known price); `cached` says the answer came from arena's response cache, so the
    call was not made and not paid. request_hash identifies what was asked (the cache's key).
    `served_model` is the model the API says answered and `fingerprint` its backend
    configuration, where the API reports them. prompt_version names the prompt templates the
    request was built from ("merchant-v2+recall-v1"); temperature, top_p and seed are what
    the request carried (None: not sent, the model's default).
    """

    day: int
    purpose: CallPurpose
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    latency: float
    attempts: int
    cost: float | None
    cached: bool
    request_hash: str
    served_model: str | None = None
    fingerprint: str | None = None
    prompt_version: str
    temperature: float | None
    top_p: float | None = None
    seed: int | None


class TranscriptStep(BaseModel):
    """What one call of a merchant's conversation said and heard, as the record keeps it: the
    turns new to its request (`sent`: not the prefix an earlier call of the conversation sent
    already), the model's answer (its text, the reasoning its provider showed, its tool calls)
    and the results of those calls; or, for a request the server refused as longer than the
    model's window, no answer and `refused`: the server's words and how the request is asked
    again (the steps after it: a compaction, the request made shorter). `step` numbers the
    merchant's calls of the day from 1. Provider items carried with a turn (signed thinking,
    encrypted reasoning) are not kept: they are the provider's, and the reasoning they hold is
    in `reasoning`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    day: int
    step: int
    purpose: CallPurpose
    sent: tuple[Message, ...]
    answer: Message | None
    results: tuple[Message, ...] = ()
    refused: str | None = None

    @model_validator(mode="after")
    def _answered_or_refused(self) -> TranscriptStep:
        if (self.answer is None) == (self.refused is None):
            raise ValueError("a step has an answer or was refused, one of the two")
        return self
