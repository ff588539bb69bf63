"""What a finished match hands to the record: plain pydantic data, written in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SkipValidation

from market.daylog import pack
from market.types import DayRecord

FaultKind = Literal["error", "timeout", "actor_died", "malformed"]


class Fault(BaseModel):
    """A day on which a merchant gave no usable decision and did nothing instead."""

    day: int
    merchant: str
    kind: FaultKind
    detail: str


class ProbeResult(BaseModel):
    """One memory probe: on `day` the merchant was asked its `fact` at the end of `asked_day`.

    relative_error = |answer - truth| / max(|truth|, 1); None when it gave no answer.
    """

    merchant: str
    day: int
    asked_day: int
    fact: str
    product: str | None
    truth: float
    answer: float | None
    relative_error: float | None


class ModelCallRecord(BaseModel):
    """One language-model call of a merchant (see contestants.base.ModelCall)."""

    merchant: str
    day: int
    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency: float
    attempts: int
    cost: float | None
    cached: bool
    request_hash: str
    prompt_version: str
    temperature: float
    seed: int | None


class MerchantResult(BaseModel):
    merchant: str = Field(description="seat name in the match, e.g. 'm0'")
    contestant: str = Field(description="contestant name from the tournament YAML")
    final_cash: float
    net_worth: float
    profit: float = Field(description="net worth at the end minus net worth at the start")
    rank: int = Field(description="1 is best; ties share the better rank")
    market_share: float = Field(description="share of all units sold in the match")
    bankrupt_day: int | None
    faults: int
    rejected_operations: int


class FinishedMatch(BaseModel):
    key: str = Field(description="the match's identity within its tournament; stable across runs")
    index: int = Field(description="position in the tournament's schedule")
    scenario: str
    seed: int
    days: int
    wall_seconds: float
    merchants: list[MerchantResult]
    # built by the market, trusted: no copy; a DayLog, packed (see `packed`), or a list of DayRecords (tests, tools)
    days_played: Annotated[Sequence[DayRecord], SkipValidation]
    faults: list[Fault]
    probes: list[ProbeResult] = Field(default_factory=list)
    calls: list[ModelCallRecord] = Field(default_factory=list)
    metrics: dict[str, dict[str, float | None]] | None = Field(
        None, description="results.metrics per merchant, computed where the match was played (None: when it is saved)"
    )

    def packed(self) -> FinishedMatch:
        """This match with its days in stored form: what a Ray worker sends back."""
        return self.model_copy(update={"days_played": pack(self.days_played)})
