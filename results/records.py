"""What a finished match hands to the record: plain pydantic data, written in one transaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SkipValidation

from market.types import DayRecord, record_adapter

DayRowValues = tuple[str, int, float, float, float, str]
"""A day record as the `day` table holds it: merchant, day, cash_end, net_worth, revenue and
the whole record as JSON."""


def day_row(record: DayRecord) -> DayRowValues:
    return (record.merchant, record.day, record.cash_end, record.net_worth, record.revenue, record_adapter.dump_json(record).decode())


class PackedDays(Sequence[DayRecord]):
    """A match's day records already in the form the `day` table stores (`DayRowValues`).

    A match played in a Ray worker is sent back to the writer packed: a list of strings and
    floats pickles in a fraction of the time thousands of DayRecords with a dozen dicts each
    take, and the JSON is made on the worker's core rather than the writer's. Reading it as
    a sequence of DayRecords parses the JSON back (for tests and tools, not the hot path).
    """

    __slots__ = ("rows",)

    def __init__(self, rows: list[DayRowValues]):
        self.rows = rows

    @classmethod
    def of(cls, records: Sequence[DayRecord]) -> PackedDays:
        return cls([day_row(record) for record in records])

    def __reduce__(self):
        return PackedDays, (self.rows,)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [record_adapter.validate_json(row[-1]) for row in self.rows[index]]
        return record_adapter.validate_json(self.rows[index][-1])

    def __iter__(self) -> Iterator[DayRecord]:
        return (record_adapter.validate_json(row[-1]) for row in self.rows)


def day_rows(days: Sequence[DayRecord]) -> list[DayRowValues]:
    """`days` as `day` table rows, without re-serialising days that come packed."""
    return days.rows if isinstance(days, PackedDays) else [day_row(record) for record in days]

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
    # built by the market, trusted: no per-record copy; a list, or PackedDays (see `packed`)
    days_played: Annotated[Sequence[DayRecord], SkipValidation]
    faults: list[Fault]
    probes: list[ProbeResult] = Field(default_factory=list)
    calls: list[ModelCallRecord] = Field(default_factory=list)
    metrics: dict[str, dict[str, float | None]] | None = Field(
        None, description="results.metrics per merchant, computed where the match was played (None: when it is saved)"
    )

    def packed(self) -> FinishedMatch:
        """This match with its day records packed as table rows: what a Ray worker sends back."""
        return self.model_copy(update={"days_played": PackedDays.of(self.days_played)})
