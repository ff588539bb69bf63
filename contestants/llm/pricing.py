"""What a completion cost, from per-model prices in USD per million tokens.

The defaults cover a few well-known models (list prices when written; check before relying
on them); users extend or override them with a mapping keyed by "provider/model", merged
over the defaults. Local models are free; any other model without a price costs None
(unknown), not 0, so a budget never silently ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from contestants.llm.types import TokenUsage


class Price(BaseModel):
    """USD per million tokens. Cached input tokens cost `cached_input`, or `input` when unset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)


DEFAULT_PRICES: Mapping[str, Price] = {
    "openai/gpt-4o": Price(input=2.50, output=10.00, cached_input=1.25),
    "openai/gpt-4o-mini": Price(input=0.15, output=0.60, cached_input=0.075),
    "openai/gpt-4.1": Price(input=2.00, output=8.00, cached_input=0.50),
    "openai/gpt-4.1-mini": Price(input=0.40, output=1.60, cached_input=0.10),
    "openai/gpt-4.1-nano": Price(input=0.10, output=0.40, cached_input=0.025),
    "anthropic/claude-3-5-haiku-latest": Price(input=0.80, output=4.00, cached_input=0.08),
    "anthropic/claude-3-7-sonnet-latest": Price(input=3.00, output=15.00, cached_input=0.30),
    "anthropic/claude-sonnet-4-0": Price(input=3.00, output=15.00, cached_input=0.30),
}


def price_table(overrides: Mapping[str, Price | Mapping[str, Any]] | None = None) -> dict[str, Price]:
    """The default prices with `overrides` merged over them."""
    table = dict(DEFAULT_PRICES)
    for model, price in (overrides or {}).items():
        table[model] = price if isinstance(price, Price) else Price.model_validate(price)
    return table


def cost(model: str, usage: TokenUsage, table: Mapping[str, Price]) -> float | None:
    """USD for `usage` of `model` ("provider/model").

    cost = ((input - cached) * input_price + cached * cached_price + output * output_price) / 1e6
    """
    price = table.get(model)
    if price is None:
        return 0.0 if model.split("/", 1)[0] == "local" else None
    cached_price = price.input if price.cached_input is None else price.cached_input
    uncached = usage.input_tokens - usage.cached_tokens
    return (uncached * price.input + usage.cached_tokens * cached_price + usage.output_tokens * price.output) / 1e6
