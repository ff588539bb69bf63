"""The `human` kind: a person at a seat, who decides each day on a page put before them by the
run's desk (contestants.base.Desk, RunOptions.desk), as a model decides on a prompt.

Each day the seat asks the desk with the day's form (contestants.human.form) and waits for
what the person submits; the form reads it into a decision by the market's own checks. A
refused form goes back to the person with the market's reason and the fields as typed, and
the seat waits again; nothing of it is applied. Recall and off-path questions are pages of one
number: empty is "don't know", a text that is no finite number is refused in the same way.

A person may be given a deadline (`turn_seconds`, each page's own, kept by the seat: a run
gives a person's turn none of its own): the seat stops waiting then and the turn is late
(DeadlinePassed), which the match records as any contestant's passed deadline; the merchant
does nothing that day. Without one, the seat waits as long as the person takes.

What a person takes in place of a model's tokens and cost is time: the seat reports
`seconds_per_day`, the mean over the days whose form was taken of the seconds that day's pages
(its question, its form, the forms refused) waited for the person, as the desk measured them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from itertools import count
from typing import ClassVar, Literal, TypeVar

from pydantic import Field

from common.people import PERSON_KIND, PERSON_TIME
from contestants.base import (
    ANSWER,
    Contestant,
    ContestantConfigError,
    DeadlinePassed,
    Desk,
    DeskAsk,
    DeskKey,
    OffPathQuestion,
    Params,
    RecallQuestion,
    RunOptions,
)
from contestants.human.form import DayForm, Refusal, day_form, no_number, typed_number
from market.scenario import Scenario
from market.types import Decision, Observation

T = TypeVar("T")


class HumanParams(Params):
    """turn_seconds: how long the person has for each page of a day (its question, then its
    form), from when the page is asked; None: as long as they take."""

    turn_seconds: float | None = Field(default=None, gt=0, le=86400)  # a day's page for a day at most


class HumanSeat(Contestant):
    """A person's seat. It needs an actor of its own (needs_actor) so that waiting for its
    person holds no other seat, and calls no model."""

    kind: ClassVar[str] = PERSON_KIND
    params_model: ClassVar[type[Params]] = HumanParams
    needs_actor: ClassVar[bool] = True
    seats_a_person: ClassVar[bool] = True
    params: HumanParams

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        if options.desk is None:
            raise ContestantConfigError(
                "a human seat needs a run that puts its pages before a person (a desk)"
            )
        self.desk: Desk = options.desk
        self.match = options.match
        self.merchant = ""
        self.scenario: Scenario | None = None
        self.form: DayForm | None = None  # made on the match's first day: whether merchants talk shows then
        self.day = 0  # the last day decided
        self.waited: dict[int, float] = {}  # seconds its pages waited for the person, by day
        self.decided: list[int] = []  # the days whose form was taken

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.merchant, self.scenario, self.form, self.day = merchant, scenario, None, 0
        self.waited, self.decided = {}, []

    def decide(self, observation: Observation) -> Decision:
        """The decision of the form the person submits, once it is not refused."""
        due = self._deadline()
        self.day = observation.day
        if self.form is None:
            assert self.scenario is not None, "reset before the first day"
            self.form = day_form(self.scenario, talk=observation.messages is not None)
        form = self.form
        key = DeskKey(self.match, self.merchant, observation.day, "day", 0)
        decision = self._taken(
            DeskAsk(key, observation, form), lambda typed: form.read(typed, observation), due
        )
        self.decided.append(observation.day)
        return decision

    def recall(self, question: RecallQuestion) -> float | None:
        return self._answer(question, "recall")

    def off_path(self, question: OffPathQuestion) -> float | None:
        return self._answer(question, "off_path")

    def _answer(
        self, question: RecallQuestion | OffPathQuestion, asked: Literal["recall", "off_path"]
    ) -> float | None:
        """The number the person answers `question` with, asked before the day's form (on the
        day after the last decided); empty: None, "don't know"."""
        due = self._deadline()
        key = DeskKey(self.match, self.merchant, self.day + 1, asked, 0)
        return self._taken(DeskAsk(key, question=question), _number, due)

    def reported_metrics(self) -> dict[str, float]:
        if not self.decided:
            return {}
        return {PERSON_TIME: sum(self.waited[day] for day in self.decided) / len(self.decided)}

    def _taken(self, first: DeskAsk, read: Callable[[dict[str, str]], T | Refusal], due: float | None) -> T:
        """What `read` makes of what the person submits on the page `first`, asked again after
        each refusal (the next attempt) with its reason and the fields as typed."""
        typed: dict[str, str] = {}
        refusal: Refusal | None = None
        for attempt in count():
            asked = replace(first, key=first.key._replace(attempt=attempt), typed=typed, refusal=refusal)
            typed = self._asked(asked, due)
            taken = read(typed)
            if not isinstance(taken, Refusal):
                return taken
            refusal = taken
        raise AssertionError("count() never ends")

    def _deadline(self) -> float | None:
        """This page's deadline (its attempts share it): `turn_seconds` from now; None: none."""
        if self.params.turn_seconds is None:
            return None
        return time.monotonic() + self.params.turn_seconds

    def _asked(self, asked: DeskAsk, due: float | None) -> dict[str, str]:
        """What the person submits for `asked`; DeadlinePassed if `due` passes first. A page
        with no time left is asked all the same, to be withdrawn at once by the desk: a desk
        that keeps what came of each page keeps that too, so that a replay, which takes no
        time, withdraws it as well."""
        within = None if due is None else max(0.0, due - time.monotonic())
        submitted = self.desk.ask(asked, within)
        if submitted is None:
            raise DeadlinePassed(f"day {asked.key.day}: nothing submitted in time")
        self.waited[asked.key.day] = self.waited.get(asked.key.day, 0.0) + submitted.seconds
        return submitted.fields


def _number(typed: Mapping[str, str]) -> float | None | Refusal:
    """The answer typed on a question's page: a finite number, None if empty ("don't know"),
    else its refusal."""
    text = typed.get(ANSWER, "").strip()
    if not text:
        return None
    number = typed_number(text)
    if number is not None and math.isfinite(number):
        return number
    return Refusal((ANSWER,), f"answer: {no_number(text)} (leave it empty: do not know)")
