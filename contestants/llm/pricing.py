"""What a completion costs, from per-model prices in USD per million tokens.

The prices are the catalogue's (catalogue.yaml, with the date they were checked), overridden
by the tournament's and the contestant's `prices:`, keyed by "provider/model". Local models
are free; any other model without a price costs None (unknown), never 0, so that no budget
or table counts an unpriced call as free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contestants.calls.budget import Price
from contestants.calls.types import TokenUsage
from contestants.llm.catalogue import catalogue_price


def prices_from(overrides: Mapping[str, Price | Mapping[str, Any]] | None) -> dict[str, Price]:
    """`overrides` (from YAML) as Prices."""
    return {
        model: price if isinstance(price, Price) else Price.model_validate(price)
        for model, price in (overrides or {}).items()
    }


def price_of(label: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of "provider/model": an override, else the catalogue's; None if unknown
    (a local model needs none: it is free)."""
    return (overrides or {}).get(label) or catalogue_price(label)


def is_free(label: str) -> bool:
    return label.split("/", 1)[0] == "local"


def cost(label: str, usage: TokenUsage, overrides: Mapping[str, Price] | None = None) -> float | None:
    """USD for `usage` of `label` ("provider/model"), None when the model has no price.

    cost = (fresh * input + cached * cached_input + written * cache_write + output * output) / 1e6

    where fresh = input_tokens - cached_tokens - cache_write_tokens (input_tokens counts every
    prompt token), and output_tokens includes the reasoning tokens, which are billed as output.
    """
    if is_free(label):
        return 0.0
    price = price_of(label, overrides)
    if price is None:
        return None
    cached = price.input if price.cached_input is None else price.cached_input
    written = price.input if price.cache_write is None else price.cache_write
    fresh = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
    return (
        fresh * price.input
        + usage.cached_tokens * cached
        + usage.cache_write_tokens * written
        + usage.output_tokens * price.output
    ) / 1e6
