"""What a finished match hands to the record, written in one transaction: pydantic data, which
results.storage.schema extends into its SQLModel tables. Kept free of SQLAlchemy, so that the
processes that play matches (match runners, contestant hosts, Ray workers) start without
importing it."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, SkipValidation

from common.conduct import Label
from common.model_calls import ModelCall, TranscriptStep
from market.daylog import ColumnRecords
from market.scenario import Scenario
from market.types import DayRecord
from results.settings import CollusionSettings, DeviationProbe

FaultKind = Literal["error", "timeout", "actor_died", "malformed"]
WindowKind = Literal["supra_competitive", "price_war"]
WINDOW_TITLES: dict[WindowKind, str] = {
    "supra_competitive": "supra-competitive",
    "price_war": "price war",
}  # as tables and the report name them


class Fault(BaseModel):
    """A day on which a merchant gave no usable decision and did nothing instead."""

    day: int
    merchant: str
    kind: FaultKind
    detail: str


class RecallResult(BaseModel):
    """One recall question answered: on `day` the merchant was asked its `fact` at the end of
    `asked_day`.

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


Question = tuple[int, int, str, "str | None"]  # (day asked, asked_day, fact, product)


@dataclass(frozen=True, eq=False)
class RecallLog(ColumnRecords[RecallResult]):
    """A match's recall questions and answers as columns, a row per merchant asked, in the
    order asked.

    A question day puts one question to every merchant still playing, so a match collects its
    answers a question at a time (`RecallLogBuilder`) and scores and sends them as arrays; read
    as a sequence it gives RecallResults, made on demand. NaN in `answer` and `error` is no
    answer."""

    merchants: tuple[str, ...]
    questions: tuple[Question, ...]
    question: np.ndarray  # per row, into questions
    seat: np.ndarray  # per row, into merchants
    truth: np.ndarray
    answer: np.ndarray
    error: np.ndarray  # relative error, |answer - truth| / max(|truth|, 1)

    def __len__(self) -> int:
        return len(self.seat)

    @property
    def day(self) -> np.ndarray:
        """The day each row's question was asked."""
        return np.array([q[0] for q in self.questions], dtype=np.int64).reshape(-1)[self.question]

    def rows(self, rows: Iterable[int] | None = None) -> list[dict]:
        """The RecallResult fields of `rows` (default: all), as dicts."""
        rows = list(range(len(self))) if rows is None else list(rows)
        names = ("day", "asked_day", "fact", "product")
        return [
            {
                "merchant": self.merchants[seat],
                **dict(zip(names, self.questions[q])),
                "truth": truth,
                "answer": _none_if_nan(answer),
                "relative_error": _none_if_nan(error),
            }
            for q, seat, truth, answer, error in zip(
                *(
                    column[rows].tolist()
                    for column in (self.question, self.seat, self.truth, self.answer, self.error)
                )
            )
        ]

    def records(self, rows: Iterable[int] | None = None) -> list[RecallResult]:
        return [RecallResult.model_construct(**row) for row in self.rows(rows)]  # made from checked columns

    @classmethod
    def of(cls, recalls: Iterable[RecallResult]) -> RecallLog:
        """The log of RecallResults made elsewhere (stored ones, tests): each its own question."""
        if isinstance(recalls, RecallLog):
            return recalls
        recalls = list(recalls)
        merchants = tuple(dict.fromkeys(p.merchant for p in recalls))
        seat_of = {m: s for s, m in enumerate(merchants)}
        return cls(
            merchants=merchants,
            questions=tuple((p.day, p.asked_day, p.fact, p.product) for p in recalls),
            question=np.arange(len(recalls)),
            seat=np.array([seat_of[p.merchant] for p in recalls], dtype=np.int64),
            truth=np.array([p.truth for p in recalls], dtype=float),
            answer=np.array([_nan_if_none(p.answer) for p in recalls], dtype=float),
            error=np.array([_nan_if_none(p.relative_error) for p in recalls], dtype=float),
        )


@dataclass
class RecallLogBuilder:
    """Collects a match's recall answers question by question; `build` joins them into a
    RecallLog."""

    merchants: tuple[str, ...]
    _asked: list[tuple[Question, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    def ask(self, question: Question, seats: np.ndarray, truths: np.ndarray, answers: np.ndarray) -> None:
        """One question put to the merchants at `seats`: their truths and answers (NaN: none)."""
        self._asked.append(
            (
                question,
                np.asarray(seats, dtype=np.int64),
                np.asarray(truths, dtype=float),
                np.asarray(answers, dtype=float),
            )
        )

    def build(self) -> RecallLog:
        questions = tuple(q for q, *_ in self._asked)
        sizes = [len(seats) for _, seats, _, _ in self._asked]
        seat, truth, answer = (
            np.concatenate([asked[k] for asked in self._asked]) if self._asked else np.zeros(0)
            for k in (1, 2, 3)
        )
        with np.errstate(over="ignore"):  # an absurd answer: an infinite error, as in Python
            error = np.abs(answer - truth) / np.maximum(np.abs(truth), 1.0)
        return RecallLog(
            self.merchants,
            questions,
            np.repeat(np.arange(len(questions)), sizes),
            seat.astype(np.int64),
            truth,
            answer,
            error,
        )


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else value


def _none_if_nan(value: float) -> float | None:
    return None if value != value else value


class PriceWindow(BaseModel):
    """A run of consecutive days on which a match's market price was supra-competitive or in a
    price war (results.scoring.metrics: supra_competitive_days, price_war_days)."""

    kind: WindowKind
    first_day: int
    last_day: int


def window_days(windows: Sequence[PriceWindow], kind: WindowKind) -> str:
    """The days of the windows of `kind`, as tables show them: "days 3–12, 40–47", or "none"."""
    days = [f"{w.first_day}–{w.last_day}" for w in windows if w.kind == kind]
    return f"days {', '.join(days)}" if days else "none"


class MarketScores(BaseModel):
    """What results.scoring.metrics says of a match's market as a whole: the market metrics by name
    (results.scoring.metrics.MARKET_METRICS) and the price windows. Both are empty for a match whose
    scenario has no equilibrium, or that was scored without its scenario."""

    metrics: dict[str, float | None] = Field(default_factory=dict)
    windows: list[PriceWindow] = Field(default_factory=list)


class MetricNote(BaseModel):
    """Why a metric of a merchant in a match, or of its market as a whole (merchant None), has
    no value: the reason a reader is shown beside "n/a" (results.scoring.match_records.NotApplicable)."""

    merchant: str | None = Field(description="seat name in the match; None: a metric of the market")
    name: str = Field(description="the metric")
    note: str = Field(description="why it does not apply")


class ModelCallRecord(ModelCall):
    """A merchant's language-model call, with the seat and the contestant that made it."""

    merchant: str
    contestant: str


class TranscriptRecord(TranscriptStep):
    """A step of a merchant's conversation, with the seat that took it."""

    merchant: str


def total_cost(calls: Iterable[ModelCallRecord]) -> float | None:
    """USD of the calls at their models' prices; None when one of them has no price (an
    unknown cost is never counted as 0)."""
    costs = []
    for call in calls:
        if call.cost is None:
            return None
        costs.append(call.cost)
    return math.fsum(costs)


class GoalResult(BaseModel):
    """How one merchant did on one campaign goal (market.scenario.Goal) in one match."""

    merchant: str = Field(description="seat name in the match")
    goal: str = Field(description="the goal as written, e.g. 'revenue ≥ 500000'")
    metric: str
    at_least: bool = Field(description="true: the metric must reach the bound; false: stay under it")
    bound: float = Field(
        description="the bound for this match: scaled to its length where the metric is a flow"
    )
    value: float | None = Field(description="the merchant's value of the metric (None: it does not apply)")
    met: bool


class MerchantResult(BaseModel):
    merchant: str = Field(description="seat name in the match, e.g. 'm0'")
    contestant: str = Field(description="contestant name from the tournament YAML")
    final_cash: float
    net_worth: float
    profit: float = Field(description="net worth at the end minus net worth at the start")
    rank: int = Field(description="1 is best; ties share the better rank")
    market_share: float = Field(
        description="share of all units sold in the match (market.accounting.market_shares)"
    )
    bankrupt_day: int | None
    faults: int
    rejected_operations: int
    length_refusals: int = Field(
        0,
        description="requests the model's server refused as longer than its window (each then asked shorter)",
    )


FactorValue = (
    bool | int | float | str | None
)  # a factor's value in a sweep (bool before int: True stays True)


def repeat_key(key: str, sample: int, contestant: str) -> str:
    """The key of the `sample`-th repeat (a tournament's sampling_repeats) of the match `key` in
    which `contestant`'s own draws are new: `KEY/sample=K:NAME`; 0: the match itself."""
    return f"{key}/sample={sample}:{contestant}" if sample else key


def _repeat(key: str) -> tuple[str, int, str | None]:
    """A key's match, its repeat's number and whose draws it renews (0 and None: the match)."""
    head, _, repeat = key.rpartition("/sample=")
    number, _, contestant = repeat.partition(":")
    return (head, int(number), contestant) if head and number.isdigit() and contestant else (key, 0, None)


def market_draw(key: str) -> str:
    """A match's key without its repeat's suffix: what the match and its repeats share, the
    market's draws."""
    return _repeat(key)[0]


def repeat_number(key: str) -> int:
    """The number of the repeat a key names; 0 for a match itself."""
    return _repeat(key)[1]


def renewed(key: str) -> str | None:
    """The contestant whose own draws a repeat renews; None for a match itself."""
    return _repeat(key)[2]


def as_number(value: object) -> object:
    """A factor's value as written, or the number a text reads as (YAML reads 1e-5, with no
    point before the e, as text)."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return number if math.isfinite(number) else value
    return value


def same_value(value: FactorValue) -> tuple[str, object]:
    """What makes two values of a factor the same: 20 and 20.0 are, true and 1 are not."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return type(value).__name__, value
    return "number", float(value)


def shown_value(value: FactorValue) -> str:
    """A factor's value as a cell's label shows it: text as written, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


class SweepCell(BaseModel):
    """A cell of a tournament's sweep: its factors' values (in the sweep's order) and the
    matches of the schedule that are its own, `first_index` to `first_index + matches - 1`."""

    position: int = Field(description="its place in the sweep's product, from 0")
    label: str = Field(description="what leads its matches' keys: qlearning.alpha=0.05,group_size=2")
    factors: dict[str, FactorValue]
    first_index: int
    matches: int

    def holds(self, index: int) -> bool:
        return self.first_index <= index < self.first_index + self.matches


@dataclass(frozen=True)
class PlayedScenarios:
    """The scenarios (as played, by name) and the collusion settings of a tournament's
    matches, per cell of its sweep by the label that leads a match's key; without a sweep, one
    cell of label "". A match of no known cell has no scenario and the default settings."""

    cells: Mapping[str, tuple[Mapping[str, Scenario], CollusionSettings]]

    def _cell(self, match: PlayedMatch) -> tuple[Mapping[str, Scenario], CollusionSettings]:
        found = [label for label in self.cells if label == "" or match.key.startswith(f"{label}/")]
        return self.cells[max(found, key=len)] if found else ({}, CollusionSettings())

    def of(self, match: PlayedMatch) -> Scenario | None:
        return self._cell(match)[0].get(match.scenario)

    def collusion(self, match: PlayedMatch) -> CollusionSettings:
        return self._cell(match)[1]

    def listed(self) -> list[Scenario]:
        """The scenarios of the first cell (a sweep's others differ only by its factors)."""
        first = next(iter(self.cells.values()), ({}, CollusionSettings()))[0]
        return list(first.values())


class PlayedMatch(BaseModel):
    """Which match of the schedule was played, on what, and how long it took."""

    key: str = Field(description="the match's identity within its tournament; stable across runs")
    index: int = Field(description="position in the tournament's schedule")
    scenario: str
    seed: int
    days: int
    wall_seconds: float


class DeviationPath(BaseModel):
    """A probed match played again with the same seeds and one seat's prices forced
    (results.scoring.deviation): its days, and the faults and model calls of this second play."""

    probe: DeviationProbe
    days_played: Annotated[Sequence[DayRecord], SkipValidation]  # as FinishedMatch's
    faults: list[Fault] = Field(default_factory=list)
    calls: list[ModelCallRecord] = Field(default_factory=list)


class OffPathAnswer(BaseModel):
    """A merchant's answer to an off-path question (contestants.base.OffPathQuestion) on `day`:
    had `rival` posted `price` for `product` yesterday (it posted `posted`, told to the merchant
    only where rivals' prices are shown), it would charge `answer` (None: no answer). Stored
    apart; it never entered the market."""

    merchant: str
    day: int
    rival: str
    product: str
    price: float
    posted: float
    answer: float | None


class FinishedMatch(PlayedMatch):
    merchants: list[MerchantResult]
    # built by the market, trusted: no copy; a DayLog, packed (results.storage.daylog_codec.packed),
    # or a list of DayRecords (tests, tools)
    days_played: Annotated[Sequence[DayRecord], SkipValidation]
    faults: list[Fault]
    # a RecallLog from the match, or a list of RecallResults (stored ones, tests)
    recalls: Annotated[Sequence[RecallResult], SkipValidation] = Field(default_factory=list)
    calls: list[ModelCallRecord] = Field(default_factory=list)
    transcript: list[TranscriptRecord] = Field(default_factory=list)
    metrics: dict[str, dict[str, float | None]] | None = Field(
        None,
        description="results.scoring.metrics per merchant, computed where the match was played "
        "(None: when it is saved)",
    )
    market: MarketScores | None = Field(
        None, description="results.scoring.metrics of the market as a whole, computed with `metrics`"
    )
    goals: list[GoalResult] | None = Field(
        None, description="each merchant's result on each campaign goal, computed with `metrics`"
    )
    notes: list[MetricNote] | None = Field(
        None, description="why the metrics without a value do not apply, computed with `metrics`"
    )
    deviation: DeviationPath | None = Field(
        default=None, description="the deviated path of a deviation probe; its measures are in `metrics`"
    )
    off_path: list[OffPathAnswer] = Field(default_factory=list)

    @property
    def all_calls(self) -> list[ModelCallRecord]:
        """The model calls of both paths of a probed match (of the one path otherwise)."""
        return [*self.calls, *(self.deviation.calls if self.deviation is not None else [])]


class StoppedMatch(BaseModel):
    """A match the run stopped before its end (its budget spent, a contestant's model
    broken): it is not stored as played, and a resumed run plays it again; the model calls it
    made were paid and are recorded."""

    key: str
    index: int
    reason: str
    calls: list[ModelCallRecord] = Field(default_factory=list)


class MerchantConduct(BaseModel):
    """What one merchant of a match did in words: its items judged (`items`), how many carry
    each conduct label (every label of CONDUCT, 0 included) and how many were undecided (too few
    readable judges); of its claims checked against the record, its promises kept, broken and released
    (kept until the stated condition on the rivals' prices failed) and its false statements of
    fact. Summed over a contestant's matches (results.scoring.conduct.summed), the counts are
    over its `seats` judged."""

    model_config = ConfigDict(frozen=True)

    seats: int = 1
    items: int = 0
    labels: dict[Label, int]
    undecided: int = 0
    promises_kept: int = 0
    promises_broken: int = 0
    promises_released: int = 0
    false_statements: int = 0
