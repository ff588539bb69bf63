"""Matches: a market, its merchants, day after day, until the last day.

One loop plays every match, alone or side by side with others of its scenario, length and
size (`play_together`). Before the first day, each kind prepares its inline merchants of all
the matches at once (a learner's learning phase, `prepare`). Each day the rule merchants
playing inline decide together from the market's view; every other merchant gets its
Observation: an inline one is called directly, those hosted in Ray actors are asked all at
once and given their turn's deadline to answer. A merchant that raises, misses the deadline,
returns something unusable or whose actor dies does nothing that day, and the fault is
recorded; the match goes on. A match that depended on a node that died (its merchant's state
was there) is not scored: it is lost (MatchLost) and played again from its start.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import math
import pickle
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple, get_args

import numpy as np
import ray
from ray.exceptions import RayActorError, RayTaskError

from contestants.base import Contestant, RecallProbe, RunOptions, Seating
from contestants.baselines import RulePlay
from contestants.kinds import contestant_class, create, validate_params
from contestants.llm.errors import CallsStopped
from market.calls import ModelCall
from market.daylog import DayLog, DayLogBuilder, ProbeFact
from market.engine import Market
from market.scenario import Scenario
from market.types import MarketView
from results import deviation
from results.collusion import CollusionSettings
from results.deviation import DeviationProbe
from results.metrics import compute as compute_metrics
from results.metrics import match_results
from results.records import (
    DeviationPath,
    Fault,
    FinishedMatch,
    ModelCallRecord,
    ProbeLogBuilder,
    StoppedMatch,
)
from tournaments.channel import HostGone
from tournaments.config import ContestantEntry, TournamentSpec
from tournaments.schedule import MatchSpec


def match_seeds(tournament_seed: int, key: str, seats: int) -> list[int]:
    """Seeds for the market (first), each seat, and the memory probes (last), from the
    tournament seed and the match key alone, so a match plays the same wherever and
    whenever it runs."""
    sequence = np.random.SeedSequence([tournament_seed, zlib.crc32(key.encode())])
    return [int(child.generate_state(1)[0]) for child in sequence.spawn(seats + 2)]


def repetition_seed(tournament_seed: int, seed: int) -> int:
    """The seed of the tournament's matches played with `seed`, whoever plays them: work a
    kind's merchants share across those matches (a learner's self-play) is seeded from it
    (contestants.base.Seating)."""
    return int(
        np.random.SeedSequence([tournament_seed, zlib.crc32(b"repetition"), seed]).generate_state(1)[0]
    )


DEFAULT_DEADLINE_S = 10.0  # a hosted contestant's turn, when neither the tournament nor its kind says


@dataclass(frozen=True)
class MatchRules:
    """What every match of a tournament shares. `deadlines`: seconds a hosted contestant's
    turn may take, by contestant name (see `deadline`)."""

    seed: int
    deadlines: dict[str, float] = field(default_factory=dict)
    recall_every: int = 0  # 0: no memory probes
    options: RunOptions = RunOptions()  # how contestants are made: `arena run` flags, prices, the run's desk
    collusion: CollusionSettings = CollusionSettings()  # how the collusion metrics measure a finished match
    deviation: DeviationProbe | None = (
        None  # every match is played twice: on path and with a seat forced to deviate
    )
    talk: bool = False  # merchants may send one another messages (market.engine.Market)

    @classmethod
    def of(
        cls,
        spec: TournamentSpec,
        options: RunOptions = RunOptions(),
        deadlines: dict[str, float] | None = None,
    ) -> MatchRules:
        """What the matches of the tournament `spec` describes share (`deadlines`: by contestant,
        tournaments.runner.deadlines)."""
        return cls(
            seed=spec.seed,
            deadlines=deadlines or {},
            recall_every=spec.recall_every,
            options=options,
            collusion=spec.collusion,
            deviation=spec.deviation,
            talk=spec.talk,
        )

    def deadline(self, name: str) -> float:
        return self.deadlines.get(name, DEFAULT_DEADLINE_S)

    def probe_day(self, day: int) -> bool:
        """Probes ask about a day at least two days back (yesterday is in today's observation)."""
        return self.recall_every > 0 and day >= 3 and day % self.recall_every == 0


class Match:
    def __init__(
        self,
        spec: MatchSpec,
        scenario: Scenario,
        rules: MatchRules,
        entries: dict[str, ContestantEntry],
        hosts: dict[str, Any],
        deviated: bool = False,
    ):
        """`deviated`: this is the match's deviated path (MatchRules.deviation), played with
        the same seeds as the match itself, its hosted merchants kept apart from the on-path ones."""
        self.spec, self.scenario, self.rules = spec, scenario, rules
        self.made_of = (entries, hosts)
        self.probe = rules.deviation if deviated else None
        self.host_key = spec.key + DEVIATED_SUFFIX if deviated else spec.key
        seeds = match_seeds(rules.seed, spec.key, len(spec.seats))
        self.market_seed = seeds[0]
        self.seat_seeds = dict(zip(spec.seats, seeds[1:-1]))
        self.probe_rng = np.random.default_rng(seeds[-1])
        self.hosts = {name: hosts[name] for name in spec.seats if name in hosts}
        self.local: dict[str, Contestant] = {
            name: create(entries[name].kind, entries[name].params, rules.options.for_contestant(name))
            for name in spec.seats
            if name not in self.hosts
        }
        kinds = [contestant_class(entries[name].kind) for name in spec.seats]
        self.lineup = tuple(
            (entries[name].kind, validate_params(entries[name].kind, entries[name].params))
            for name in spec.seats
        )
        self.calls_models = any(kind.calls_models for kind in kinds)
        self.from_record = np.array(
            [kind.remembers_the_record for kind in kinds]
        )  # per seat: its memory is the log
        self.by_view = {name for name, c in self.local.items() if c.decides_from_view}
        self.rules_alone = len(self.by_view) == len(
            spec.seats
        )  # nobody to ask anything: the rule merchants decide from the view
        self.faults: list[Fault] = []
        self.probes = ProbeLogBuilder(spec.seats)
        self.calls: list[ModelCallRecord] = []
        self._needs_start: set[str] = set(self.hosts)
        self.host_nodes: set[str] = (
            set()
        )  # the nodes its hosted merchants' states lived on, or that a failed turn went to
        self.answered_from: dict[str, str] = {}  # by hosted merchant: the node of its host's last answer
        self.nodes_in_doubt = (
            False  # today a hosted merchant's turn failed, never came back, or came from another node
        )

    def deviated(self) -> Match:
        """This match's deviated path, to play after it or beside it."""
        return Match(self.spec, self.scenario, self.rules, *self.made_of, deviated=True)

    def forcing(self, day: int) -> Callable[[np.ndarray], np.ndarray] | None:
        """On a deviated path's forced days, the forced seat's prices of the day [product]
        from the prices its match posted [seat, product] (Market.advance); None otherwise."""
        probe = self.probe
        if probe is None or not probe.day <= day <= probe.last_day:
            return None
        if probe.to == "best_response":
            from market.equilibrium import best_response, price_games  # scipy: only for a probe

            games = list(price_games(self.scenario, len(self.spec.seats)).values())
            return lambda posted: np.array(
                [best_response(game, posted[:, j], probe.seat) for j, game in enumerate(games)]
            )
        if probe.to == "nash":
            from market.equilibrium import by_seat

            nash = by_seat(self.scenario, len(self.spec.seats)).nash_price[probe.seat]
            return lambda posted: nash
        price = np.full(len(self.scenario.products), float(probe.to))
        return lambda posted: price

    def probes_memory(self, day: int) -> bool:
        """Whether its merchants' memory is probed today: on the probe days of its rules, on
        path only (a deviated path's answers would be paid and thrown away: its record is
        the path's days)."""
        return self.probe is None and self.rules.probe_day(day)

    def reset_contestants(self) -> None:
        for name, contestant in self.local.items():
            contestant.reset(merchant=name, scenario=self.scenario, seed=self.seat_seeds[name])

    def seatings(self) -> list[Seating]:
        """Where its inline merchants sit, for their kinds' `prepare`."""
        seed = repetition_seed(self.rules.seed, self.spec.seed)
        return [
            Seating(self.local[name], s, self.lineup, self.scenario, seed)
            for s, name in enumerate(self.spec.seats)
            if name in self.local
        ]

    async def play(self, on_day: Callable[[], None] = lambda: None) -> FinishedMatch | StoppedMatch:
        """The match played to its end, or stopped where the run's model calls stopped (its
        budget spent, a contestant's model broken): a stopped match is not stored as played."""
        return (await play_together([self], on_day))[0]

    async def _play_day(self, market: Market, view: MarketView, b: int) -> dict[int, Any]:
        """Today's memory probe, asked and scored, and the decisions of the merchants of
        match b that decide from Observations, by market row."""
        span, day = market.match_rows[b], market.day
        seats = np.flatnonzero(market.playing[span])
        probe = self._draw_probe(day) if self.probes_memory(day) else None
        if self.rules_alone:  # nobody to ask: the record answers the probe
            if probe is not None:
                self._score_probe(day, probe, {}, seats, market.logs[b])
            return {}
        asked = [(s, self.spec.seats[s]) for s in seats.tolist() if self.spec.seats[s] not in self.by_view]
        observations = dict(
            zip((name for _, name in asked), market.observations(view, [span.start + s for s, _ in asked]))
        )
        answers: dict[str, Any] = {}
        if probe is not None:
            answers = {
                name: recall(self.local[name], probe)
                for _, name in asked
                if name in self.local and not self.from_record[self.spec.seats.index(name)]
            }
        decisions = self._local_decisions(observations, day)
        if self.hosts:
            decisions.update(await self._hosted_decisions(observations, day, probe, answers))
        if probe is not None:
            self._score_probe(day, probe, answers, seats, market.logs[b])
        rows = {name: span.start + s for s, name in asked}
        return {rows[name]: decision for name, decision in decisions.items()}

    async def _calls_stopped(self) -> str | None:
        """Why the run's calls have stopped, if they have and this match's merchants call
        models: a match that ended meanwhile may hold faults of the failures that stopped them."""
        desk = self.rules.options.desk
        if desk is None or not self.calls_models:
            return None
        return (await desk.current()).stopped

    def finished(self, log: DayLog, wall_seconds: float) -> FinishedMatch | DeviationPath:
        """The match's result, from its days (a deviated path's: its days, faults and calls)."""
        if self.probe is not None:
            return DeviationPath(probe=self.probe, days_played=log, faults=self.faults, calls=self.calls)
        probes = self.probes.build()
        scores = compute_metrics(log, probes, self.faults, self.scenario, self.rules.collusion)
        for name, contestant in self.local.items():
            scores.merchants[name].update(contestant.reported_metrics())
        return FinishedMatch(
            key=self.spec.key,
            index=self.spec.index,
            scenario=self.scenario.name,
            seed=self.spec.seed,
            days=self.spec.days,
            wall_seconds=wall_seconds,
            merchants=match_results(self.spec.seats, log, scores.merchants, self.faults),
            days_played=log,
            faults=self.faults,
            probes=probes,
            metrics=scores.merchants,
            market=scores.market,
            calls=self.calls,
        )

    def _draw_probe(self, day: int) -> RecallProbe:
        """Today's memory probe: one question, the same for every merchant, about its own past."""
        asked_day = int(self.probe_rng.integers(1, day - 1))
        fact = PROBE_FACTS[int(self.probe_rng.integers(len(PROBE_FACTS)))]
        products = self.scenario.product_ids
        product = None if fact == "cash" else products[int(self.probe_rng.integers(len(products)))]
        return RecallProbe(day=asked_day, fact=fact, product=product)

    def _score_probe(
        self, day: int, probe: RecallProbe, answers: dict[str, Any], seats: np.ndarray, log: DayLogBuilder
    ) -> None:
        """Compare the answer of each merchant at `seats` (missing: none) with its record of
        the day asked about; the record is the answer of those whose memory it is."""
        truths = log.facts(probe.day, probe.fact, probe.product, seats)
        if self.rules_alone:
            answered = truths
        else:
            numbers = [_number(answers.get(self.spec.seats[s])) for s in seats.tolist()]
            answered = np.where(
                self.from_record[seats], truths, np.array([math.nan if n is None else n for n in numbers])
            )
        known = ~np.isnan(truths)
        self.probes.ask(
            (day, probe.day, probe.fact, probe.product), seats[known], truths[known], answered[known]
        )

    def _local_decisions(self, observations: dict[str, Any], day: int) -> dict[str, Any]:
        """The decisions of the inline merchants among those given `observations`."""
        decisions: dict[str, Any] = {}
        for name in observations:
            contestant = self.local.get(name)
            if contestant is None:
                continue
            try:
                decisions[name] = contestant.decide(observations[name])
            except CallsStopped:
                raise
            except Exception as exc:  # a contestant's bug is a fault, not a crash
                self._fault(day, name, "error", _describe(exc))
        return decisions

    async def _hosted_decisions(
        self, observations: dict, day: int, probe: RecallProbe | None, recalled: dict[str, Any]
    ) -> dict[str, Any]:
        """The hosted merchants' decisions, one turn each a day (`ContestantHost.turn`).

        The turn carries the day's memory probe, whose answers go into `recalled`, and for a
        merchant that needs a fresh state (its first day, or its actor died) what the host
        makes it from; such a merchant is not probed: it remembers nothing (nor is one whose
        memory is the record). The host times each part of the turn; the wait here allows
        for all of them."""
        playing = [name for name in observations if name in self.hosts]
        self.nodes_in_doubt = False
        if not playing:
            return {}
        starts = {
            name: Start(self.scenario, self.seat_seeds[name], self.rules.options)
            if name in self._needs_start
            else None
            for name in playing
        }
        probes = {
            name: probe
            if starts[name] is None and not self.from_record[self.spec.seats.index(name)]
            else None
            for name in playing
        }
        deadline = {name: self.rules.deadline(name) for name in playing}
        longest = max(deadline.values(), default=0.0)
        wait = longest * (2 if probe is not None else 1) + (
            START_ALLOWANCE_S if any(starts.values()) else 0.0
        )
        asked = {
            name: asyncio.ensure_future(
                self.hosts[name].turn(
                    pickle.dumps(
                        TurnRequest(
                            self.host_key,
                            name,
                            observations[name],
                            probes[name],
                            starts[name],
                            deadline[name],
                        ),
                        pickle.HIGHEST_PROTOCOL,
                    )
                )
            )
            for name in playing
        }
        went_to = {name: self.hosts[name].node for name in playing}
        done, late = await asyncio.wait(asked.values(), timeout=wait)
        for reply in late:
            reply.cancel()
        decisions: dict[str, Any] = {}
        for name, reply in ((name, reply if reply in done else None) for name, reply in asked.items()):
            if reply is not None and reply.exception() is not None:
                if isinstance(reply.exception(), CallsStopped):
                    raise reply.exception()
                self._host_failed(day, name, reply.exception())
                self._went_to(name, went_to[name])
                continue
            turn: Turn | None = pickle.loads(reply.result()) if reply is not None else None
            if turn is not None:
                self._needs_start.discard(name)
                self.host_nodes.add(turn.node)
                if (
                    self.answered_from.setdefault(name, turn.node) != turn.node
                ):  # its host was restarted elsewhere
                    self.answered_from[name] = turn.node
                    self.nodes_in_doubt = True
                if probes[name] is not None:
                    recalled[name] = turn.recalled
            else:
                self._went_to(name, went_to[name])
            if turn is None or turn.late:
                self._fault(day, name, "timeout", f"no decision within {deadline[name]:g} s")
            else:
                decisions[name] = turn.decision
        return decisions

    def _went_to(self, name: str, asked_on: str | None) -> None:
        """A turn of `name` failed or never came back: the node its host was on when the
        turn was asked and the one it is on now may be where the merchant's state was lost."""
        self.nodes_in_doubt = True
        self.host_nodes.update(node for node in (asked_on, self.hosts[name].node) if node is not None)

    def _host_failed(self, day: int, name: str, exc: BaseException) -> None:
        """Record why a hosted merchant gave no decision; one whose actor died starts afresh."""
        if isinstance(exc, (RayActorError, HostGone)) or isinstance(_cause(exc), Forgotten):
            self._needs_start.add(name)
            self._fault(day, name, "actor_died", "its actor process died")
        else:
            self._fault(day, name, "error", _describe(exc))

    async def _collect_calls(self) -> None:
        """Gather every contestant's model calls; hosts forget the match as they hand them over."""
        for name, contestant in self.local.items():
            self._add_calls(name, contestant.calls())
        names = list(self.hosts)
        answers = await asyncio.gather(
            *(self.hosts[n].finish(self.host_key, n) for n in names), return_exceptions=True
        )
        for name, calls in zip(names, answers):
            if not isinstance(calls, BaseException):  # an actor that died took its log with it
                self._add_calls(name, calls)

    def _add_calls(self, merchant: str, calls: list[ModelCall]) -> None:
        self.calls.extend(call_records(merchant, calls))

    def _fault(self, day: int, merchant: str, kind: str, detail: str) -> None:
        self.faults.append(Fault(day=day, merchant=merchant, kind=kind, detail=detail[:500]))


async def play_together(
    matches: list[Match], on_day: Callable[[], None] = lambda: None
) -> list[FinishedMatch | StoppedMatch]:
    """Play matches of one scenario, length, size and talk side by side in one market: each comes
    out exactly as it would played alone, and a day of many costs little more than a day of
    one. Each match's wall time is the time of the whole group. Matches whose merchants call
    models are played alone: once the run's calls stop, the match stops (`StoppedMatch`).

    With a deviation probe (MatchRules.deviation) each match is played on path and deviated,
    and comes out with its deviated path and the measures that compare the two. Matches
    whose merchants call models play their deviated paths after their own, so that every
    answer of a day before the deviation is in the response cache already: those days
    replay from it, at no cost. The others play both paths side by side. `on_day` is told of
    every day of each path."""
    if matches[0].rules.deviation is None:
        return await _play_side_by_side(matches, on_day)
    twins = [match.deviated() for match in matches]
    if any(match.calls_models for match in matches):
        played = await _play_side_by_side(matches, on_day)
        if any(isinstance(p, StoppedMatch) for p in played):
            return played
        try:
            deviated = await _play_side_by_side(twins, on_day)
        except MatchLost as lost:  # the calls of the path played are paid too
            raise MatchLost(lost.reason, [*(call for p in played for call in p.calls), *lost.calls]) from None
    else:
        both = await _play_side_by_side(matches + twins, lambda: (on_day(), on_day()))
        played, deviated = both[: len(matches)], both[len(matches) :]
    return [_with_deviation(p, d) for p, d in zip(played, deviated)]


def _with_deviation(
    played: FinishedMatch | StoppedMatch, path: DeviationPath | StoppedMatch
) -> FinishedMatch | StoppedMatch:
    """The match with its deviated path and their measures; stopped if either path was."""
    if isinstance(played, StoppedMatch) or isinstance(path, StoppedMatch):
        stopped = played if isinstance(played, StoppedMatch) else path
        return stopped.model_copy(update={"calls": [*played.calls, *path.calls]})
    metrics = deviation.with_measures(played.metrics or {}, played.days_played, path.days_played, path.probe)
    return played.model_copy(update={"deviation": path, "metrics": metrics})


async def _play_side_by_side(
    matches: list[Match], on_day: Callable[[], None]
) -> list[FinishedMatch | StoppedMatch | DeviationPath]:
    """`play_together` without deviation probes: each match plays the path it is (its
    deviated one if it is that, Match.forcing). A rule kind that raises does nothing that
    day, a fault for each of its merchants still playing. (Rows of merchants already out are
    decided too and ignored by the market.)"""
    started = time.perf_counter()
    first = matches[0]
    market = Market(first.scenario, [m.spec.seats for m in matches], first.spec.days, first.rules.talk)
    market.reset([m.market_seed for m in matches])
    n = market.seats
    by_view: tuple[list[int], list[Any]] = ([], [])
    for match in matches:
        match.reset_contestants()
    await asyncio.get_running_loop().run_in_executor(
        None, prepare, matches
    )  # a learning phase takes seconds: a runner's other matches play on
    for b, match in enumerate(matches):
        for s, name in enumerate(match.spec.seats):
            if name in match.by_view:
                by_view[0].append(b * n + s)
                by_view[1].append(match.local[name])
    rule_play = RulePlay(by_view[1], np.array(by_view[0])) if by_view[0] else None
    deviated = [b for b, match in enumerate(matches) if match.probe is not None]
    stopped: str | None = None
    try:
        while market.playing.any():
            day, view = market.day, market.view()
            arrays = rows = None
            if rule_play is not None:
                arrays, rows, failed = rule_play.decide(view)
                for team_rows, exc in failed:
                    for row in team_rows:
                        if market.playing[row]:
                            matches[row // n]._fault(day, market.name(row), "error", _describe(exc))
            playing = np.flatnonzero(np.logical_or.reduce(market.playing.reshape(-1, n), 1)).tolist()
            decisions: dict[int, Any] = {}
            for b in playing:
                if not matches[b].rules_alone or matches[b].probes_memory(day):
                    decisions.update(await matches[b]._play_day(market, view, b))
            forced = {
                b * n + matches[b].probe.seat: price
                for b in deviated
                if (price := matches[b].forcing(day)) is not None
            }
            market.advance(arrays, rows, decisions, forced)
            for b in (
                b for b in playing if not matches[b].rules_alone
            ):  # an answer that was not a decision at all: keep what it was
                for merchant, whole in market.logs[b].whole_rejections(day):
                    matches[b]._fault(day, merchant, "malformed", f"{whole.reason}: {whole.operation!r}")
            on_day()
            if any(match.nodes_in_doubt for match in matches) and await _nodes_lost(matches):
                break  # played again from its start (MatchLost below): the days from here would be thrown away
        for match in matches:
            stopped = stopped or await match._calls_stopped()
    except CallsStopped as exc:
        stopped = str(exc)
    finally:
        for match in matches:
            await match._collect_calls()
    if stopped is not None:
        return [
            StoppedMatch(key=m.spec.key, index=m.spec.index, reason=stopped, calls=m.calls) for m in matches
        ]
    if lost := await _nodes_lost(matches):
        calls = [call for match in matches for call in match.calls]
        raise MatchLost(f"a host of its merchants was on a node that died ({', '.join(sorted(lost))})", calls)
    wall = time.perf_counter() - started
    return [match.finished(log.build(), wall) for match, log in zip(matches, market.logs)]


async def _nodes_lost(matches: list[Match]) -> set[str]:
    """The addresses of the nodes the matches' hosted merchants depended on that are no
    longer alive (as Ray's control store has it). Asked after a day on which a turn failed or
    a host answered from another node than before, which finds most losses early, and after
    the hosts have handed over the matches' calls, which finds all: a host whose node died
    answers that only once Ray has restarted it elsewhere, that is once Ray has recorded the
    node as dead."""
    used = set().union(*(match.host_nodes for match in matches))
    if not used:
        return set()
    nodes = {
        node["NodeID"]: node for node in await asyncio.to_thread(ray.nodes)
    }  # a call to Ray's control store
    return {
        nodes[n]["NodeManagerAddress"] if n in nodes else n for n in used if not nodes.get(n, {}).get("Alive")
    }


def call_records(merchant: str, calls: list[ModelCall]) -> list[ModelCallRecord]:
    """A merchant's model calls as the record keeps them (a merchant is named after its
    contestant: results.metrics.match_results)."""
    return [ModelCallRecord(merchant=merchant, contestant=merchant, **call.model_dump()) for call in calls]


class MatchLost(Exception):
    """A match that cannot be scored because a process it was played by died: a host of one
    of its merchants, with its node, or its match runner. It is played again from its start.
    `calls`: the model calls it had made, paid for though the match is not stored."""

    def __init__(self, reason: str, calls: list[ModelCallRecord]):
        super().__init__(reason, calls)
        self.reason, self.calls = reason, calls

    def __str__(self) -> str:
        return self.reason


def prepare(matches: list[Match]) -> None:
    """Each kind's work before the matches play (a learner's learning phase), for all its
    inline merchants in them at once (Contestant.prepare)."""
    by_kind: dict[type[Contestant], list[Seating]] = {}
    for match in matches:
        for seating in match.seatings():
            by_kind.setdefault(type(seating.contestant), []).append(seating)
    for kind, seatings in by_kind.items():
        kind.prepare(seatings)


def play_here(matches: list[Match]) -> list[FinishedMatch | StoppedMatch]:
    """Play matches with no hosted contestants to the end on a private event loop, with
    garbage collection paused unless they call models (see `collector_paused`).

    Not asyncio.run: on Python 3.11 its SIGINT bookkeeping ends up repr()-ing the finished
    task, that is the whole match, which costs more than playing a short one."""
    _freeze_startup_heap()
    loop = asyncio.new_event_loop()
    try:
        with collector_paused() if not any(m.calls_models for m in matches) else contextlib.nullcontext():
            return loop.run_until_complete(play_together(matches))
    finally:
        loop.close()


PROBE_FACTS = get_args(ProbeFact)
DEVIATED_SUFFIX = "/deviated"  # a deviated path's key among its hosted merchants' matches


class Forgotten(LookupError):
    """The host has no state for the merchant: its process died, in another match's call,
    and Ray restarted it since this match's last turn."""


START_ALLOWANCE_S = 30.0  # extra wait for a hosted merchant's first turn: making it may load a model


class Start(NamedTuple):
    """What a host makes a merchant's fresh match state from."""

    scenario: Scenario
    seed: int
    options: RunOptions


class TurnRequest(NamedTuple):
    """What a match asks of a hosted merchant for one day (ContestantHost.turn)."""

    match_key: str
    merchant: str
    observation: Any
    probe: RecallProbe | None
    start: Start | None  # given when the merchant needs a fresh state
    deadline: float


class Turn(NamedTuple):
    """A hosted contestant's answer for one day: its decision (`late` if it took longer than
    the deadline), its answer to the day's memory probe if there was one (None if it
    had none, raised, or took longer than the deadline), and the node of the host that
    answered (set by the host)."""

    decision: Any
    late: bool
    recalled: Any = None
    node: str | None = None


def recall(contestant: Contestant, probe: RecallProbe) -> Any:
    """The contestant's answer to a memory probe; None if it raised."""
    try:
        return contestant.recall(probe)
    except Exception:  # a contestant's bug: no answer
        return None


def take_turn(
    contestant: Contestant,
    observation: Any,
    probe: RecallProbe | None,
    deadline: float,
    arrived: float | None = None,
) -> Turn:
    """A hosted contestant's day (ContestantHost.turn), asked at `arrived` (time.monotonic()):
    its answer to the memory probe if there is one, then its decision. Each part has
    `deadline` seconds, counted from when the turn was asked (default: now) (a turn that waited for the
    merchant's previous one has less left), and the contestant is told when its time is up;
    a probe answer that raises or comes later is none, a decision that comes later is `late`
    (and none is asked for when no time is left); an exception from `decide` propagates."""
    arrived = time.monotonic() if arrived is None else arrived
    recalled = None
    if probe is not None:
        contestant.begin_turn(arrived + deadline)
        recalled = recall(contestant, probe)
        if time.monotonic() > arrived + deadline:
            recalled = None
        arrived = time.monotonic()
    due = arrived + deadline
    if time.monotonic() >= due:
        return Turn(None, late=True, recalled=recalled)
    contestant.begin_turn(due)
    decision = contestant.decide(observation)
    return Turn(decision, late=time.monotonic() > due, recalled=recalled)


def _number(answer: Any) -> float | None:
    """A finite number, or None for anything else (no answer, text, NaN)."""
    if isinstance(answer, bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


@functools.cache
def _freeze_startup_heap() -> None:
    """Once per process: exempt every object alive now (the imported modules of numpy,
    pydantic, Ray, ...) from garbage collection with gc.freeze().

    A match allocates many small objects and keeps its day records, so the collector runs
    full collections during play, and each one otherwise rescans that whole startup heap:
    about a fifth of an instant match's time. Frozen objects are still freed when no longer
    referenced; only cycles among them are never collected. There is no gc.collect() first:
    it would cost a tenth of a second, more than a short match, to reclaim a few cycles
    left over from importing."""
    gc.freeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside. Matches played side by side make many small objects
    that live to the end (day records, operations, results), and the collections that
    their making, scoring, pickling and unpickling would trigger rescan all of them: a
    fifth of an instant tournament's time. The few cycles made meanwhile are collected
    after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _cause(exc: BaseException) -> BaseException:
    """The exception a contestant raised in its actor, for one Ray re-raised here."""
    return exc.cause if isinstance(exc, RayTaskError) and exc.cause is not None else exc


def _describe(exc: BaseException) -> str:
    """One line about an exception raised by a contestant (the remote cause if any)."""
    cause = _cause(exc)
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0] if text else ''}".rstrip(": ")
