"""Recall questions: on some days every merchant still playing is asked the same question
about its own past (its cash at the end of an earlier day, or a product's inventory, price or
units ordered), and its answer is scored against the market's record.

A question asks about a day at least two days back (yesterday is in today's observation). A
merchant whose memory is the record (the rule merchants) is not asked: the record answers for
it. The questions a match asks come from a generator of its own, so they are the same however
and wherever the match is played.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, get_args

import numpy as np

from contestants.base import RecallQuestion
from market.daylog import DayLogBuilder, RecallFact
from market.scenario import Scenario
from results.records import RecallLog, RecallLogBuilder

FACTS = get_args(RecallFact)


def asks_on(day: int, every: int) -> bool:
    """Whether questions are asked on `day` when they are asked every `every` days (0: never)."""
    return every > 0 and day >= 3 and day % every == 0


class RecallQuestions:
    """A match's recall questions: drawn from `rng`, asked of its merchants, their answers
    scored against the record (`asked_merchants` only: the rest are answered by the record)."""

    def __init__(self, scenario: Scenario, merchants: tuple[str, ...], rng: np.random.Generator):
        self.products, self.merchants, self.rng = scenario.product_ids, merchants, rng
        self.log = RecallLogBuilder(merchants)

    def draw(self, day: int) -> RecallQuestion:
        """Today's question: one, the same for every merchant, about an earlier day."""
        asked_day = int(self.rng.integers(1, day - 1))
        fact = FACTS[int(self.rng.integers(len(FACTS)))]
        product = None if fact == "cash" else self.products[int(self.rng.integers(len(self.products)))]
        return RecallQuestion(day=asked_day, fact=fact, product=product)

    def score(
        self,
        day: int,
        question: RecallQuestion,
        answers: Mapping[int, Any],
        by_record: np.ndarray,
        seats: np.ndarray,
        record: DayLogBuilder,
    ) -> None:
        """Compare the answer of each merchant at `seats` (ascending; by seat in `answers`, a
        missing one is none) with its record of the day asked about; where `by_record` [seat]
        holds, the record itself is the answer."""
        truths = record.facts(question.day, question.fact, question.product, seats)
        given = np.array([number(answers.get(seat)) for seat in seats.tolist()], dtype=float)
        answered = np.where(by_record[seats], truths, given)
        known = ~np.isnan(truths)
        asked = (day, question.day, question.fact, question.product)
        self.log.ask(asked, seats[known], truths[known], answered[known])

    def build(self) -> RecallLog:
        return self.log.build()


def number(answer: Any) -> float:
    """An answer as a finite number, or NaN for anything else (none, text, NaN)."""
    if isinstance(answer, bool):
        return math.nan
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return math.nan
    return value if math.isfinite(value) else math.nan
