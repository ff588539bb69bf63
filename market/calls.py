"""The record of a merchant's call of a language model. The market itself never reads it; it
lives on this floor because both rooms above need the one definition: contestants make it,
results stores it (imports point down only: contestants and results both import market)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

CallPurpose = Literal["decide", "repair", "recall", "reflect", "step"]


class ModelCall(BaseModel):
    """One call a contestant made to a language model, for the accounting table (its row is
    this model with who made the call and where, results.tables).

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
