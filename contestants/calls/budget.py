"""What a run's model calls may spend and have spent, and the price they are counted at."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from common.yaml_files import FileModel

MAX_PRICE = 1e6  # USD per million tokens: the most a price may be


class Price(FileModel):
    """USD per million tokens. Cached input costs `cached_input` (default: `input`), tokens
    written to a prompt cache `cache_write` (default: `input`, for APIs that bill no write)."""

    input: float = Field(ge=0, le=MAX_PRICE)
    output: float = Field(ge=0, le=MAX_PRICE)
    cached_input: float | None = Field(None, ge=0, le=MAX_PRICE)
    cache_write: float | None = Field(None, ge=0, le=MAX_PRICE)


class Budget(FileModel):
    """The most a run may spend on model calls; calls served from the response cache are not
    paid and do not count."""

    tokens: int | None = Field(None, gt=0, le=10**15, description="input + output tokens")
    cost_usd: float | None = Field(None, gt=0, le=1e9)

    def exceeded_by(self, tokens: int, cost: float) -> str | None:
        """Why the budget is spent, or None while it is not."""
        if self.tokens is not None and tokens >= self.tokens:
            return f"token budget reached ({tokens:,} of {self.tokens:,})"
        if self.cost_usd is not None and cost >= self.cost_usd:
            return f"cost budget reached (${cost:.4f} of ${self.cost_usd:.4f})"
        return None


@dataclass(frozen=True, slots=True)
class Spend:
    """What a run's calls have been paid: tokens (input + output) and USD."""

    tokens: int = 0
    cost: float = 0.0
