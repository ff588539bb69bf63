"""The tournament file's sections that measure and probe its matches: `collusion:`, `deviation:`,
`off_path:` and `conduct:`. They sit at results' base, beside the record, and not with the scoring that reads
them: the record keeps them with its matches (a probed match's path its probe, a rescore the
collusion settings each match was played with), and the store, which reads them back, imports
nothing of the scoring. The tournament layer reads them from its file and plays by them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from common.conduct import SOURCES, Source
from common.errors import FieldError
from common.yaml_files import FileModel
from market.scenario import MAX_DAYS, MAX_MERCHANTS_PER_MATCH, MAX_MONEY, Day


class CollusionSettings(FileModel):
    """The `collusion:` section of a tournament file. Unknown keys are errors."""

    window: float = Field(
        0.5,
        gt=0,
        le=1,
        description="share of the match's days, its last ones, "
        "that profit_gain and price_gain are measured over",
    )
    margin: float = Field(
        0.05,
        ge=0,
        le=1,
        description="a day is supra-competitive when the market price is above Nash by more than this "
        "share of (monopoly - Nash price), a price-war day when it is below Nash by more than it",
    )
    min_days: int = Field(
        5,
        ge=1,
        le=MAX_DAYS,
        description="consecutive flagged days that make a supra-competitive or price-war window",
    )
    min_gap: float = Field(
        0.1,
        ge=0,
        lt=1,
        description="a gain is measured only where the monopoly benchmark is above the Nash one by at "
        "least this share of the monopoly benchmark, both counted from nothing earned (profits) or "
        "from unit cost (prices): a seat that sells nothing reads 1 - 1 / gap, below -9 when the "
        "gap is under the default 0.1",
    )

    def first_measured_day(self, last_day: int) -> int:
        """The first day of the measurement window of a match whose last day is `last_day`:
        the window is its last ceil(window * last_day) days (at least one)."""
        days = max(
            1, math.ceil(round(self.window * last_day, 9))
        )  # rounded: 0.3 * 10 is 3, not 3.0000000000000004
        return last_day - days + 1


Price = Annotated[float, Field(gt=0, le=MAX_MONEY)]  # a price a tournament file forces or asks about


def is_price(value: object) -> bool:
    """Whether `value` is a Price: a number (not true or false) above 0 and at most MAX_MONEY."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_MONEY


class DeviationProbe(FileModel):
    """The `deviation:` section of a tournament file. Unknown keys are errors."""

    day: int = Field(ge=1, le=MAX_DAYS, description="the first day the seat's prices are forced")
    seat: int = Field(
        0, ge=0, lt=MAX_MERCHANTS_PER_MATCH, description="the seat forced to deviate (0: the first)"
    )
    to: Literal["best_response", "nash"] | Price = Field(
        "best_response",
        description="best_response: each product's price that maximises the seat's profit of the day "
        "against its rivals' prices of that day (market.equilibrium's price game); nash: its Nash price; "
        "a number: that price for every product",
    )
    days: int = Field(1, ge=1, le=MAX_DAYS, description="how many days in a row the prices are forced")
    discount: float = Field(0.95, gt=0, le=1, description="δ of deviation_profitable's discounted profits")

    @field_validator("to", mode="before")
    @classmethod
    def _a_target(cls, to: object) -> object:
        if to not in ("best_response", "nash") and not is_price(to):
            raise ValueError(
                f"must be best_response, nash or a price above 0 and at most {MAX_MONEY:g}, not {to!r}"
            )
        return to

    @property
    def last_day(self) -> int:
        """The last day forced."""
        return self.day + self.days - 1

    @property
    def target(self) -> str:
        """`to` as tables show it."""
        return self.to if isinstance(self.to, str) else f"{self.to:g}"

    @property
    def when(self) -> str:
        """The forced days, as tables show them: "day 50", "days 50–52"."""
        return f"day {self.day}" if self.days == 1 else f"days {self.day}–{self.last_day}"

    def forced(self, merchants: Sequence[str]) -> str | None:
        """The merchant forced, of a match's `merchants` in seat order (None: the match has no such seat)."""
        return merchants[self.seat] if self.seat < len(merchants) else None


class OffPathSettings(FileModel):
    """The tournament file's `off_path:`: on each of `days` every merchant that answers
    questions is asked what it would charge for the scenario's first product had its next
    rival in seat order posted `price` for it the day before (a price, or that rival's seat's
    `nash` or `monopoly` price), in place of that day's recall question."""

    days: list[Day] = Field(min_length=1)
    price: Price | Literal["nash", "monopoly"]

    @field_validator("days")
    @classmethod
    def _after_day_one(cls, days: list[int]) -> list[int]:
        if min(days) < 2:
            raise ValueError("a question is about the day before: the days start at 2")
        return sorted(set(days))

    @field_validator("price", mode="before")
    @classmethod
    def _a_price(cls, price: object) -> object:
        if price not in ("nash", "monopoly") and not is_price(price):
            raise ValueError(
                f"must be nash, monopoly or a price above 0 and at most {MAX_MONEY:g}, not {price!r}"
            )
        return price


MAX_JUDGES = 16  # a panel, not a crowd: each reads every word


class ConductSettings(FileModel):
    """The `conduct:` section of a tournament file (and of `arena audit --conduct`): the judges
    that read the merchants' words, how many of them must give a label for it to count, and
    which words they read. A judge is the `llm` kind's params (model, base_url, api_key_env,
    temperature, ...) and an optional `name`; the tournament layer checks them as it checks a
    contestant's, since the record may not know the language models' settings."""

    judges: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_JUDGES, description="each: the llm kind's params"
    )
    majority: int | None = Field(
        None,
        ge=1,
        le=MAX_JUDGES,
        description="judges that must give a label for it to count; default: more than half",
    )
    read: list[Source] = Field(
        default_factory=lambda: list(SOURCES),
        min_length=1,
        description="which words are judged: " + ", ".join(SOURCES),
    )

    @field_validator("read")
    @classmethod
    def _once_each(cls, read: list[Source]) -> list[Source]:
        return sorted(set(read), key=SOURCES.index)

    @model_validator(mode="after")
    def _reachable(self) -> ConductSettings:
        if self.majority is not None and self.majority > len(self.judges):
            raise FieldError("majority", f"{self.majority} is more than the {len(self.judges)} judges")
        return self


def default_majority(judges: int) -> int:
    """How many of `judges` make a majority: more than half of them, judges // 2 + 1."""
    return judges // 2 + 1
