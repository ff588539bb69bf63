"""The day loop: matches played day after day, alone or side by side in one market.

A match is a market and a seat for each of its merchants (tournaments.seats). Matches of one
scenario, length, size and talk can be played side by side (`play_side_by_side`): each comes
out exactly as it would played alone, and a day of many costs little more than a day of
one. Before the first day each kind prepares its inline merchants of all the matches at once
(a learner's learning phase). Then, each day:

1. the rule merchants played inline decide together from the market's view (play_from_view);
2. every other merchant takes its turn through its seat, answering the day's question first
   on the days there is one: a recall question (tournaments.recall), or on the days the
   tournament says an off-path one in its place (tournaments.off_path);
3. the market applies every decision and clears (market.engine.Market.advance), with a
   deviated path's seat forced to its prices on the forced days (tournaments.deviation_paths);
4. an answer that was no decision at all becomes a fault.

A merchant that gives no usable decision does nothing that day, with a fault; the match goes
on. After the last day each seat hands over its merchant's model calls and each match is
scored (tournaments.outcome). A match whose calls stopped (budget, broken model) comes out
stopped; one whose seat was lost with a machine is lost (MatchLost) and played again from its
start.

Nothing here knows of Ray: hosted seats (tournaments.hosts) bring it in.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from common.model_calls import ModelCall
from contestants.base import Contestant, RunOptions, Seating, ViewPlay
from contestants.calls.coordinator import CallsStopped
from market.daylog import DayLog
from market.engine import Market
from market.scenario import Scenario
from market.types import MarketView
from results.records import (
    DeviationPath,
    Fault,
    FaultKind,
    FinishedMatch,
    ModelCallRecord,
    StoppedMatch,
    TranscriptRecord,
)
from results.scoring.collusion import NoBenchmarks, seat_benchmarks
from results.scoring.match_records import UNSOLVED
from results.settings import CollusionSettings, DeviationProbe, OffPathSettings
from tournaments.collector import collector_paused, freeze_startup_heap
from tournaments.deviation_paths import DEVIATED_SUFFIX, forcing
from tournaments.off_path import Asked, OffPathQuestions
from tournaments.outcome import Played, Recorded, finished_match, with_deviation
from tournaments.plan import ContestantPlan
from tournaments.recall import RecallQuestions, asks_on
from tournaments.schedule import MatchSpec, match_seeds, repetition_seed
from tournaments.seats import InlineSeat, Seat, SeatLost, SeatTurn, TurnStuck, describe

if TYPE_CHECKING:  # the processes that play matches need neither
    from market.equilibrium import SeatBenchmarks
    from tournaments.config import TournamentSpec


@dataclass(frozen=True)
class MatchRules:
    """What every match of a tournament shares. `benchmarks`: its scenarios' price
    equilibria for its match size, or why it has none
    (results.scoring.collusion.seat_benchmarks), by scenario, solved once by the driver: a
    process that plays matches then scores them without SciPy, which takes it a third of a
    second to import (kinds that play by the equilibria, and a probe that deviates to Nash,
    still solve them where they play)."""

    seed: int
    recall_every: int = 0  # 0: no recall questions
    options: RunOptions = RunOptions()  # `arena run` flags, prices, the run's call coordinator
    collusion: CollusionSettings = CollusionSettings()  # how the collusion metrics measure a finished match
    deviation: DeviationProbe | None = None  # every match is played twice: on path and deviated
    talk: bool = False  # merchants may send one another messages (market.engine.Market)
    off_path: OffPathSettings | None = None  # off-path questions on some days, in place of recall
    benchmarks: Mapping[str, SeatBenchmarks | NoBenchmarks] = field(default_factory=dict, compare=False)

    @classmethod
    def of(
        cls,
        spec: TournamentSpec,
        options: RunOptions = RunOptions(),
        scenarios: Mapping[str, Scenario] | None = None,
    ) -> MatchRules:
        """What the matches of the tournament `spec` describes share, with the benchmarks of
        `scenarios` (by the name its matches give them)."""
        return cls(
            seed=spec.seed,
            recall_every=spec.recall_every,
            options=options,
            collusion=spec.collusion,
            deviation=spec.deviation,
            talk=spec.talk,
            off_path=spec.off_path,
            benchmarks={
                name: seat_benchmarks(scenario, spec.merchants_per_match)
                for name, scenario in (scenarios or {}).items()
            },
        )


class SeatMaker(Protocol):
    """Makes the seat of the contestant of `plan` in the match `match_key`, its merchant
    reset for `scenario` with `seed`."""

    def __call__(
        self, plan: ContestantPlan, match_key: str, scenario: Scenario, seed: int, options: RunOptions
    ) -> Seat: ...


def inline_seat(
    plan: ContestantPlan, match_key: str, scenario: Scenario, seed: int, options: RunOptions
) -> Seat:
    """Every merchant in this process (a tournament's runner hosts those that need it)."""
    return InlineSeat(plan.make(options.for_match(match_key)), plan.name, scenario, seed)


class Match:
    """One path of one match: its seats, its questions (recall, off-path), and the faults and
    model calls it has recorded so far (tournaments.outcome.Recorded). `deviated`: the match's
    deviated path (MatchRules.deviation), played with the same seeds, its hosted merchants kept
    apart from the path's."""

    def __init__(
        self,
        spec: MatchSpec,
        scenario: Scenario,
        rules: MatchRules,
        plans: Mapping[str, ContestantPlan],
        make_seat: SeatMaker = inline_seat,
        deviated: bool = False,
    ):
        self.spec, self.scenario, self.rules = spec, scenario, rules
        self.plans = {name: plans[name] for name in spec.seats}
        self.make_seat = make_seat
        self.probe = rules.deviation if deviated else None
        self.key = spec.key + DEVIATED_SUFFIX if deviated else spec.key
        renewed = (spec.seats.index(spec.renewed), spec.renewed) if spec.sample else None
        seeds = match_seeds(rules.seed, spec.draws, len(spec.seats), spec.sample, renewed)
        self.market_seed = seeds[0]
        self.questions = RecallQuestions(scenario, spec.seats, np.random.default_rng(seeds[-1]))
        self.off_path = (
            OffPathQuestions(
                rules.off_path,
                scenario,
                spec.seats,
                [self.plans[name].answers_in_words for name in spec.seats],
                rules.benchmarks.get(spec.scenario),
            )
            if rules.off_path is not None and self.probe is None  # on path only, as recall questions
            else None
        )
        self.seats = [
            make_seat(self.plans[name], self.key, scenario, seed, rules.options)
            for name, seed in zip(spec.seats, seeds[1:-1])
        ]
        self.inline: dict[str, Contestant] = {
            seat.name: seat.contestant for seat in self.seats if isinstance(seat, InlineSeat)
        }
        self.by_view = np.array(
            [seat.name in self.inline and self.plans[seat.name].decides_from_view for seat in self.seats]
        )
        self.by_record = np.array([self.plans[name].remembers_the_record for name in spec.seats])
        self.rules_alone = bool(
            self.by_view.all()
        )  # nobody to ask anything: the rule merchants decide from the view
        self.calls_models = any(plan.calls_models for plan in self.plans.values())
        self.recorded = Recorded()
        self.lost: str | None = None  # why, once a seat was lost

    def deviated(self) -> Match:
        """This match's deviated path, to play after it or beside it."""
        return Match(self.spec, self.scenario, self.rules, self.plans, self.make_seat, deviated=True)

    async def play(self, on_day: Callable[[], None] = lambda: None) -> FinishedMatch | StoppedMatch:
        """The match played to its end, or stopped where the run's model calls stopped (its
        budget spent, a contestant's model broken): a stopped match is not stored as played."""
        return (await play_matches([self], on_day))[0]

    def asks_recall(self, day: int) -> bool:
        """Whether its merchants are asked a recall question today: on the question days of its
        rules, on path only (a deviated path's answers would be paid and thrown away)."""
        return self.probe is None and asks_on(day, self.rules.recall_every)

    def seatings(self) -> list[Seating]:
        """Where its inline merchants sit, for their kinds' `prepare`."""
        seed = repetition_seed(self.rules.seed, self.spec.seed)
        lineup = tuple((plan.kind.kind, plan.params) for plan in self.plans.values())
        return [
            Seating(self.inline[name], s, lineup, self.scenario, seed)
            for s, name in enumerate(self.spec.seats)
            if name in self.inline
        ]

    async def take_turns(self, market: Market, view: MarketView, b: int) -> dict[int, Any]:
        """Today's question (off-path, else recall), asked and its answers kept, and the turns of
        the merchants of match b that do not decide from the view: their decisions, by market row."""
        span, day = market.match_rows[b], market.day
        playing = np.flatnonzero(market.playing[span])
        asked = [s for s in playing.tolist() if not self.by_view[s]]
        off_path: Asked = {}
        if self.off_path is not None and self.off_path.asks_on(day):
            off_path = self.off_path.draw(market, b, asked)
        question = self.questions.draw(day) if self.asks_recall(day) else None
        if off_path:  # drawn all the same: later days ask what they would without the off-path ones
            question = None
        turns: list[SeatTurn | BaseException] = []
        if asked:
            observations = market.observations(view, [span.start + s for s in asked])
            turns = await asyncio.gather(
                *(
                    self.seats[s].turn(
                        observation,
                        off_path[s][0]
                        if s in off_path
                        else None
                        if off_path or self.by_record[s]
                        else question,
                    )
                    for s, observation in zip(asked, observations)
                ),
                return_exceptions=True,
            )
        decisions, answers = self.decisions(day, span.start, asked, turns)
        if question is not None:
            self.questions.score(day, question, answers, self.by_record, playing, market.logs[b])
        if self.off_path is not None:
            self.off_path.keep(day, off_path, answers)
        return decisions

    def decisions(
        self, day: int, first_row: int, asked: list[int], turns: list[SeatTurn | BaseException]
    ) -> tuple[dict[int, Any], dict[int, Any]]:
        """The decisions of the `turns` of the merchants at seats `asked`, by market row (the
        match's first is `first_row`), and their answers to the day's question, by seat. A turn
        that gave no decision is a fault; a seat lost makes the match lost."""
        decisions, answers = {}, {}
        for s, turn in zip(asked, turns):
            if isinstance(turn, SeatLost):
                self.lost = self.lost or str(turn)
                continue
            if isinstance(turn, BaseException):  # CallsStopped, or a bug of ours
                raise turn
            answers[s] = turn.recalled
            if turn.fault is not None:
                self.fault(day, self.spec.seats[s], *turn.fault)
            else:
                decisions[first_row + s] = turn.decision
        return decisions, answers

    def fault(self, day: int, merchant: str, kind: FaultKind, detail: str) -> None:
        self.recorded.faults.append(Fault(day=day, merchant=merchant, kind=kind, detail=detail[:500]))

    async def calls_stopped(self) -> str | None:
        """Why the run's calls have stopped, if they have and this match's merchants call
        models: a match that ended meanwhile may hold faults of the failures that stopped them."""
        coordinator = self.rules.options.call_coordinator
        if coordinator is None or not self.calls_models:
            return None
        stopped: str | None = (await coordinator.current()).stopped
        return stopped

    async def collect_calls(self) -> str | None:
        """Every seat's model calls and their transcript; a seat found lost on the way makes
        the match lost. Why the run stops, if a seat's last turn does not end (TurnStuck)."""
        handed = await asyncio.gather(*(seat.finish() for seat in self.seats), return_exceptions=True)
        stuck = None
        for seat, given in zip(self.seats, handed):
            if isinstance(given, SeatLost):
                self.lost = self.lost or str(given)
            elif isinstance(given, TurnStuck):
                stuck = stuck or str(given)
            elif isinstance(given, BaseException):
                raise given
            else:
                self.recorded.calls.extend(call_records(seat.name, given.calls))
                self.recorded.reported[seat.name] = given.reported
                self.recorded.transcript.extend(
                    TranscriptRecord(merchant=seat.name, **step.model_dump()) for step in given.transcript
                )
        return stuck

    def finished(self, log: DayLog, wall_seconds: float) -> FinishedMatch | DeviationPath:
        """The match's result, from its days (a deviated path's: its days, faults and calls)."""
        recorded = self.recorded
        if self.probe is not None:
            return DeviationPath(
                probe=self.probe, days_played=log, faults=recorded.faults, calls=recorded.calls
            )
        return finished_match(
            self.spec,
            self.scenario,
            log,
            self.questions.build(),
            self.off_path.answers if self.off_path is not None else [],
            recorded,
            self.rules.collusion,
            self.rules.benchmarks.get(self.spec.scenario, UNSOLVED),
            wall_seconds,
        )


async def play_matches(
    matches: Sequence[Match], on_day: Callable[[], None] = lambda: None
) -> list[FinishedMatch | StoppedMatch]:
    """Play matches of one scenario, length, size and talk side by side, each on its path and,
    with a deviation probe, deviated too. `on_day` is told of every day of each path."""
    if matches[0].rules.deviation is not None:
        return await play_both_paths(matches, on_day)
    played = await play_side_by_side(matches, on_day)
    return [p for p in played if not isinstance(p, DeviationPath)]


async def play_both_paths(
    matches: Sequence[Match], on_day: Callable[[], None]
) -> list[FinishedMatch | StoppedMatch]:
    """Each match played on path and deviated (tournaments.deviation_paths), with its deviated
    path and the measures that compare the two. A match lost on its deviated path is lost with
    the calls of both.

    Matches whose merchants call models play their deviated paths after their own, so every
    answer of a day before the deviation is in the response cache already: those days replay
    from it, at no cost. The others play both paths side by side."""
    twins = [match.deviated() for match in matches]
    if any(match.calls_models for match in matches):
        played = await play_side_by_side(matches, on_day)
        if any(isinstance(p, StoppedMatch) for p in played):
            return [p for p in played if not isinstance(p, DeviationPath)]
        try:
            deviated = await play_side_by_side(twins, on_day)
        except MatchLost as lost:  # the calls of the path played are paid too
            raise MatchLost(lost.reason, [*(call for p in played for call in p.calls), *lost.calls]) from None
    else:

        def both_paths() -> None:  # a day of the group is a day of each path
            on_day()
            on_day()

        both = await play_side_by_side([*matches, *twins], both_paths)
        played, deviated = both[: len(matches)], both[len(matches) :]
    return [with_deviation(p, d) for p, d in zip(played, deviated)]


async def play_side_by_side(matches: Sequence[Match], on_day: Callable[[], None]) -> list[Played]:
    """Each match played on the path it is, in one market. A rule kind that raises does
    nothing that day, with a fault for each of its merchants still playing. (Rows of merchants
    already out are decided too and ignored by the market.) Each match's wall time is the time
    of the whole group."""
    started = time.perf_counter()
    first = matches[0]
    market = Market(first.scenario, [m.spec.seats for m in matches], first.spec.days, first.rules.talk)
    market.reset([m.market_seed for m in matches])
    n = market.seats
    # a learning phase takes seconds: a runner's other matches play on meanwhile
    await asyncio.get_running_loop().run_in_executor(None, prepare, matches)
    rule_play = _rule_play(matches, n)
    stopped: str | None = None
    try:
        while market.in_play:
            day, view = market.day, market.view()
            arrays = rows = None
            if rule_play is not None:
                arrays, rows, failed = rule_play.decide(view)
                for team_rows, exc in failed:
                    for row in team_rows:
                        if market.playing[row]:
                            matches[row // n].fault(day, market.name(row), "error", describe(exc))
            playing = np.flatnonzero(np.logical_or.reduce(market.playing.reshape(-1, n), 1)).tolist()
            decisions: dict[int, Any] = {}
            for b in playing:
                if not matches[b].rules_alone or matches[b].asks_recall(day):
                    decisions.update(await matches[b].take_turns(market, view, b))
            market.advance(arrays, rows, decisions, _forced(matches, n, day))
            for b in (b for b in playing if not matches[b].rules_alone):
                for merchant, whole in market.logs[b].whole_rejections(day):  # keep what the answer was
                    matches[b].fault(day, merchant, "malformed", f"{whole.reason}: {whole.operation!r}")
            on_day()
            if any(match.lost for match in matches):
                break  # played again from its start (MatchLost below): days from here would be thrown away
        for match in matches:
            stopped = stopped or await match.calls_stopped()
    except CallsStopped as exc:
        stopped = str(exc)
    finally:
        for match in matches:
            stuck = await match.collect_calls()
            stopped = stopped or stuck
    if stopped is not None:
        return [
            StoppedMatch(key=m.spec.key, index=m.spec.index, reason=stopped, calls=m.recorded.calls)
            for m in matches
        ]
    lost = next((match.lost for match in matches if match.lost), None)
    if lost is not None:
        raise MatchLost(lost, [call for match in matches for call in match.recorded.calls])
    wall = time.perf_counter() - started
    return [match.finished(log.build(), wall) for match, log in zip(matches, market.logs)]


def _rule_play(matches: Sequence[Match], seats: int) -> ViewPlay | None:
    """The rule merchants of every match deciding together from the view, by market row
    (Contestant.play_from_view)."""
    rows: list[int] = []
    merchants: list[Contestant] = []
    for b, match in enumerate(matches):
        for s in np.flatnonzero(match.by_view).tolist():
            rows.append(b * seats + s)
            merchants.append(match.inline[match.spec.seats[s]])
    return type(merchants[0]).play_from_view(merchants, np.array(rows)) if rows else None


def _forced(matches: Sequence[Match], seats: int, day: int) -> dict[int, Callable[[np.ndarray], np.ndarray]]:
    """The prices forced today on deviated paths, by market row (Market.advance)."""
    forced = {}
    for b, match in enumerate(matches):
        if (
            match.probe is not None
            and (prices := forcing(match.probe, match.scenario, seats, day)) is not None
        ):
            forced[b * seats + match.probe.seat] = prices
    return forced


def prepare(matches: Sequence[Match]) -> None:
    """Each kind's work before the matches play (a learner's learning phase), for all its
    inline merchants in them at once (Contestant.prepare)."""
    by_kind: dict[type[Contestant], list[Seating]] = {}
    for match in matches:
        for seating in match.seatings():
            by_kind.setdefault(type(seating.contestant), []).append(seating)
    for kind, seatings in by_kind.items():
        kind.prepare(seatings)


def play_here(matches: Sequence[Match]) -> list[FinishedMatch | StoppedMatch]:
    """Play matches to the end in this process, on a private event loop, with garbage
    collection paused unless they call models (tournaments.collector).

    Not asyncio.run: on Python 3.11 its SIGINT bookkeeping ends up repr()-ing the finished
    task, that is the whole match, which costs more than playing a short one."""
    freeze_startup_heap()
    loop = asyncio.new_event_loop()
    try:
        calls_models = any(m.calls_models for m in matches)
        with collector_paused() if not calls_models else contextlib.nullcontext():
            return loop.run_until_complete(play_matches(matches))
    finally:
        loop.close()


def call_records(merchant: str, calls: list[ModelCall]) -> list[ModelCallRecord]:
    """A merchant's model calls as the record keeps them (a merchant is named after its
    contestant: results.scoring.metrics.match_results)."""
    return [ModelCallRecord(merchant=merchant, contestant=merchant, **call.model_dump()) for call in calls]


LOSSES_ALLOWED = 3  # times one match may be lost and played again from its start


class MatchLost(Exception):
    """A match that cannot be scored because a process it was played by died with its
    machine: a host of one of its merchants, or its match runner. It is played again from its
    start. `calls`: the model calls it had made, paid for though the match is not stored."""

    def __init__(self, reason: str, calls: list[ModelCallRecord]):
        super().__init__(reason, calls)
        self.reason, self.calls = reason, calls

    def __str__(self) -> str:
        return self.reason
