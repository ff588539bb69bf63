"""Off-path questions: on the days a tournament's `off_path:` names, each merchant that calls a
model is asked, in place of the day's recall question, what it would charge had a rival posted
a given price yesterday (contestants.base.OffPathQuestion). Its answer is kept with the rival's
real price of yesterday (results.records.OffPathAnswer) and never enters the market.

The question is about the next rival playing in seat order and the scenario's first product.
A benchmark price (nash, monopoly) is the rival's among the seats open that day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from contestants.base import OffPathQuestion
from market.engine import Market
from market.scenario import Scenario
from results.records import OffPathAnswer
from results.scoring.collusion import NoBenchmarks, open_seat_benchmarks
from results.settings import OffPathSettings
from tournaments.recall import number

if TYPE_CHECKING:  # the processes that play matches need no SciPy
    from market.equilibrium import SeatBenchmarks

Asked = dict[int, tuple[OffPathQuestion, float]]  # by seat: the question, and the rival's real price


class OffPathQuestions:
    """A match's off-path questions, asked as `settings` say of its merchants that answer in
    words (`answering`, by seat: those that call models and people), and the answers they
    gave. `benchmarks`: the scenario's price equilibria as the driver solved them for its match
    size, if it did (tournaments.match.MatchRules)."""

    def __init__(
        self,
        settings: OffPathSettings,
        scenario: Scenario,
        merchants: tuple[str, ...],
        answering: Sequence[bool],
        benchmarks: SeatBenchmarks | NoBenchmarks | None,
    ):
        self.settings, self.scenario, self.merchants = settings, scenario, merchants
        self.answering, self.benchmarks = answering, benchmarks
        self.answers: list[OffPathAnswer] = []

    def asks_on(self, day: int) -> bool:
        return day in self.settings.days

    def draw(self, market: Market, b: int, asked: list[int]) -> Asked:
        """Today's question of each merchant `asked` (seats of match b of `market`) that answers
        in words, with the rival's real price of yesterday: that real price is told where rivals'
        prices are shown (a merchant alone is not asked)."""
        settings = self.settings
        span, seats = market.match_rows[b], len(self.merchants)
        product = self.scenario.products[0].id
        benchmarks = None if isinstance(self.benchmarks, NoBenchmarks) else self.benchmarks
        if isinstance(settings.price, str) and (
            benchmarks is None or max(self.scenario.opening_days(seats)) > market.day
        ):  # not solved by the driver (an estimate), or a seat not yet open
            benchmarks = open_seat_benchmarks(self.scenario, seats, market.day)
        opening = self.scenario.opening_days(seats)
        # rivals that posted a price yesterday: playing, and not an entrant opening today
        playing = [r for r in np.flatnonzero(market.playing[span]).tolist() if opening[r] < market.day]
        questions = {}
        for s in asked:
            rivals = [r for r in playing if r != s]
            if not self.answering[s] or not rivals:
                continue
            rival = next((r for r in rivals if r > s), rivals[0])
            if isinstance(settings.price, str):
                assert benchmarks is not None  # checked with the tournament file (load.check_off_path)
                levels = benchmarks.nash_price if settings.price == "nash" else benchmarks.monopoly_price
                price = float(levels[rival, 0])
            else:
                price = settings.price
            posted = float(market.prices[span.start + rival, 0])
            question = OffPathQuestion(
                rival=self.merchants[rival],
                product=product,
                price=price,
                posted=posted if self.scenario.visibility.rival_prices else None,
            )
            questions[s] = (question, posted)
        return questions

    def keep(self, day: int, asked: Asked, answers: Mapping[int, Any]) -> None:
        """The answers (by seat; a missing one is none) to the questions `asked` today."""
        for s, (question, posted) in asked.items():
            answer = number(answers.get(s))
            self.answers.append(
                OffPathAnswer(
                    merchant=self.merchants[s],
                    day=day,
                    **question.model_dump(exclude={"posted"}),
                    posted=posted,
                    answer=answer if math.isfinite(answer) else None,
                )
            )
