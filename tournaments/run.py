"""Play a tournament on Ray and record every finished match as it finishes.

Finished matches are written as they come back, each whole in one transaction (a group of
matches played side by side together), so a run killed at any moment loses only the
matches in flight; `resume=True` continues the latest unfinished tournament made
from the same files and skips what it already holds. A file's judges (`conduct:`) judge each
match as it is stored, beside the matches still in play; a resumed run first gives them what
they had not judged. The Elo table is computed over matches in schedule order, so it does not
depend on which match happened to finish first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

import ray
from ray.exceptions import GetTimeoutError, RayError, RayTaskError
from sqlalchemy import Engine

from contestants.base import JudgeFailed, RunOptions
from contestants.calls.budget import Spend
from contestants.calls.coordinator import CallsStopped, Status
from contestants.desk import PeopleSide
from market.scenario import Scenario
from results import leaderboard, recording
from results.records import FinishedMatch, ModelCallRecord, StoppedMatch, market_draw
from results.scoring import deviation
from results.scoring.ratings import LeaderboardRow
from results.storage import store
from results.storage.judgements import judged
from results.storage.schema import RunProgressRow, stored_id, utcnow
from tournaments.adaptive import AdaptiveSchedule
from tournaments.cluster import READY_SECONDS, ClusterError, Place, cluster_cpus, ray_session, result
from tournaments.conduct import JudgingProgress, MatchJudging, judge_names, judge_under_budget
from tournaments.config import Tournament, TournamentSpec
from tournaments.coordinator_actor import start_call_coordinator
from tournaments.deviation_paths import DEVIATED_SUFFIX
from tournaments.hosts import HostProcess, start_hosts
from tournaments.instant import group_instant, play_instant_matches, unpickle_matches
from tournaments.match import LOSSES_ALLOWED, MatchLost, MatchRules, call_records
from tournaments.match_runners import POLL_SECONDS, RunnerPool, RunnerSetup, start_runner
from tournaments.people import people_seated
from tournaments.plan import ContestantPlan, people_of, plan_tournament
from tournaments.schedule import MatchSpec, schedule, sweep_cells

log = logging.getLogger(__name__)
NOTE_SECONDS = 2.0  # how often, at most, the run writes where it stands to the record (RunProgressRow)
CLOSE_SECONDS = 15.0  # how long the end of a run waits for its last note to be written


class RunObserver(Protocol):
    """What a front end is told while a tournament runs."""

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None: ...
    def advanced(self, matches_done: int, days_done: int) -> None: ...
    def lost(self, match_key: str, reason: str) -> None: ...  # a match to be played again (MatchLost)
    def judged(self, done: int, total: int) -> None: ...  # of the (match, judge) pairs to judge
    # a run that seats people: their pages served from the desk's people's side while the run
    # plays (the context's end), then each person told as they come
    def seated(self, people: PeopleSide, names: list[str]) -> AbstractContextManager[object]: ...
    def joined(self, name: str) -> None: ...


class _Silent:
    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        pass

    def advanced(self, matches_done: int, days_done: int) -> None:
        pass

    def lost(self, match_key: str, reason: str) -> None:
        pass

    def judged(self, done: int, total: int) -> None:
        pass

    def seated(self, people: PeopleSide, names: list[str]) -> AbstractContextManager[object]:
        raise RuntimeError(
            f"{', '.join(names)} seated: a run that seats people needs an observer serving their pages"
        )

    def joined(self, name: str) -> None:
        pass


@dataclass(frozen=True)
class RunSummary:
    tournament_id: int
    played: int
    skipped: int
    resumed: bool
    # why matches (or their judging) were left (the budget, a broken model), if they were
    stopped: str | None = None
    broken: str | None = None  # the contestant (or judge) whose failing model stopped the run
    table: list[LeaderboardRow] = field(default_factory=list)  # the leaderboard as the run stored it
    ended: str | None = None  # why an adaptive schedule ended (tournaments.adaptive), when it did
    # every match of the schedule is stored: what a stopped run left is its judging
    played_all: bool = True


def run_tournament(
    tournament: Tournament,
    engine: Engine,
    *,
    resume: bool = False,
    address: str | None = None,
    observer: RunObserver | None = None,
    options: RunOptions = RunOptions(),
) -> RunSummary:
    """Play `tournament` (what is left of it with `resume`), saving each match as it finishes;
    `options` (`arena run` flags) reach every contestant's creation, inline or in an actor."""
    observer = observer or _Silent()
    spec = tournament.spec
    plan = schedule(tournament)  # of an adaptive tournament, the most it may play
    previous = store.find_resumable(engine, tournament.config_hash) if resume else None
    done = store.finished_keys(engine, previous) if previous is not None else set()
    rounds = _Rounds(AdaptiveSchedule(tournament), engine, previous) if spec.format == "adaptive" else None
    todo = rounds.next() if rounds is not None else [m for m in plan if m.key not in done]
    with _ready(tournament, engine, plan, previous, todo, address, observer, options) as ready:
        tournament_id, options = ready
        if rounds is not None:
            rounds.tournament_id = tournament_id
        cells = tournament.each_cell()
        paths = {cell.label: deviation.paths(cell.tournament.spec.deviation) for cell in cells}
        total_days, done_days = (
            sum(paths[m.cell] * m.days for m in plan),
            sum(paths[m.cell] * m.days for m in plan if m.key in done),
        )
        start = _Once(functools.partial(observer.started, tournament_id, len(plan), total_days, len(done)))
        ending = Status(stopped=None, spent=Spend(*store.spent(engine, tournament_id)), broken=None)
        progress = _Progress(
            observer,
            len(done),
            done_days,
            notes := _ProgressNotes(engine, tournament_id, done_days, total_days),
        )
        progress.note(done_days, 0)  # a resumed run is seen to be alive before its first day
        judging_progress = _judging_progress(engine, tournament_id, spec, len(plan), observer)
        try:
            for cell in cells:  # one after another: each has its own contestants' settings and scenarios
                left = [m for m in todo if m.cell == cell.label]
                if left and ending.stopped is None:
                    run = TournamentRun(
                        cell.tournament,
                        plan_tournament(cell.tournament.spec),
                        left,
                        engine,
                        tournament_id,
                        progress,
                        judging_progress,
                        None if rounds is None else rounds.next,
                    )
                    ending = run.play(start, ending.spent, options)
            start()  # (when nothing was left to play)
            progress.note(progress.days, 0)
        finally:
            notes.close()
    if spec.conduct is not None and judging_progress is not None and ending.stopped is None:
        # what the run's judging left (a run with nothing left to play judges here)
        swept = judge_under_budget(engine, tournament_id, spec.conduct, spec, options, judging_progress)
        ending = swept if isinstance(swept, Status) else ending
    stored = store.finished_keys(engine, tournament_id)
    played = len(stored) - len(done)
    played_all = rounds.ended is not None if rounds is not None else all(m.key in stored for m in plan)
    ended = None if rounds is None or ending.stopped is not None else rounds.ended
    if ending.stopped is None and ended is None:
        observer.advanced(len(plan), total_days)
    table = _finished(engine, tournament_id, spec, ending.stopped, ended)
    return RunSummary(
        tournament_id,
        played,
        len(done),
        previous is not None,
        ending.stopped,
        ending.broken,
        table,
        ended,
        played_all,
    )


@contextlib.contextmanager
def _ready(
    tournament: Tournament,
    engine: Engine,
    plan: list[MatchSpec],
    previous: int | None,
    todo: list[MatchSpec],
    address: str | None,
    observer: RunObserver,
    options: RunOptions,
) -> Iterator[tuple[int, RunOptions]]:
    """The tournament's id in the record and the options its contestants are made with: Ray
    joined first if anything is left to play (`todo`), so that a bad address leaves nothing
    behind, then the people of what is left seated (tournaments.people)."""
    with contextlib.ExitStack() as stack:
        if todo:
            stack.enter_context(ray_session(address))
        tournament_id = _stored_tournament(engine, tournament, plan, previous)
        adaptive = tournament.spec.format == "adaptive"  # (its later rounds may seat anyone)
        if todo and (people := people_of(tournament, None if adaptive else todo)):
            options = stack.enter_context(
                people_seated(engine, tournament_id, people, options, observer.seated, observer.joined)
            )
        yield tournament_id, options


def _judging_progress(
    engine: Engine, tournament_id: int, spec: TournamentSpec, matches: int, observer: RunObserver
) -> JudgingProgress | None:
    """How far the judging of the file's `conduct:` is, where it has one: of the (match, judge)
    pairs of the `matches` planned, those its judges have not judged before."""
    if spec.conduct is None:
        return None
    names = set(judge_names(spec.conduct))
    before = sum(judge in names for _, judge in judged(engine, tournament_id))
    return JudgingProgress(observer.judged, matches * len(names) - before)


def _finished(
    engine: Engine, tournament_id: int, spec: TournamentSpec, stopped: str | None, ended: str | None
) -> list[LeaderboardRow]:
    """The tournament marked finished, or stopped (why), and its table as stored
    (results.leaderboard.finish_tournament)."""
    status: Literal["finished", "stopped"] = "finished" if stopped is None else "stopped"
    return leaderboard.finish_tournament(
        engine,
        tournament_id,
        status,
        weights=spec.scoring,
        confidence=spec.confidence,
        reason=stopped or ended,
    )


def _stored_tournament(
    engine: Engine, tournament: Tournament, plan: list[MatchSpec], previous: int | None
) -> int:
    """The ID of the run's tournament in the store: `previous` resumed, else a new one recorded
    with its file, its contestants and its schedule `plan`."""
    if previous is not None:
        store.resume_tournament(engine, previous)
        return previous
    spec = tournament.spec
    return store.start_tournament(
        engine,
        name=spec.name,
        config_path=tournament.path,
        config_text=tournament.text,
        config_hash=tournament.config_hash,
        seed=spec.seed,
        contestants=list(  # every cell's: a sweep of copies plays names the file does not list
            {
                c.name: (c.name, c.kind, c.params)
                for cell in tournament.each_cell()
                for c in cell.tournament.spec.contestants
            }.values()
        ),
        planned_matches=len(plan),
        cells=sweep_cells(tournament, plan),
    )


class _Rounds:
    """The rounds of an adaptive tournament as the run plays them: each chosen from the
    matches stored by the rounds before (tournaments.adaptive), less those already stored (a
    resumed run chooses again the rounds it had played)."""

    def __init__(self, schedule: AdaptiveSchedule, engine: Engine, tournament_id: int | None):
        self.schedule, self.engine, self.tournament_id = schedule, engine, tournament_id
        self.ended: str | None = None

    def next(self) -> list[MatchSpec]:
        """The matches of the next round not yet stored; none once the schedule has ended."""
        while True:
            stored = (
                leaderboard.rankings(self.engine, self.tournament_id, by_goals=self.schedule.by_goals)
                if self.tournament_id is not None
                else []
            )
            scheduled = {m.key for m in self.schedule.scheduled}
            played = [m for m in stored if m.order[2] in scheduled]
            chosen = self.schedule.next_round(
                [m.ranks for m in played], [market_draw(m.order[2]) for m in played]
            )
            if not chosen.matches:
                self.ended = chosen.ended
                return []
            held = {m.order[2] for m in stored}
            left = [m for m in chosen.matches if m.key not in held]
            if left:
                return left


class TournamentRun:
    """The play of the matches left of a tournament: the run's call coordinator (when a
    contestant calls a model), the hosted contestants and the match runners started, the
    matches played (up to max_concurrent_matches at once), each recorded as it finishes.

    Matches of instant contestants are Ray tasks (tournaments.instant); a match with hosted
    contestants goes to a match runner (tournaments.match_runners). Once the run's model calls stop
    (the call coordinator says why), no match starts; matches in play stop at their next call,
    and their paid calls are recorded without them. A match that ends with faults of a
    contestant whose model fails as retrying cannot help waits to be stored until that is
    settled (`_Suspects`).
    """

    def __init__(
        self,
        tournament: Tournament,
        plans: dict[str, ContestantPlan],
        todo: list[MatchSpec],
        engine: Engine,
        tournament_id: int,
        progress: _Progress,
        judging_progress: JudgingProgress | None = None,
        more: Callable[[], list[MatchSpec]] | None = None,
    ):
        """`judging_progress`: how far the judging of the file's `conduct:` is, where it has
        one; `more`: the next matches to play once these are stored (an adaptive schedule's)."""
        self.tournament, self.plans, self.todo, self.more = tournament, plans, todo, more
        self.engine, self.tournament_id, self.progress = engine, tournament_id, progress
        self.judging_progress = judging_progress
        self.unsaved: list[tuple[FinishedMatch, Scenario | None]] = []

    def play(self, ready: Callable[[], None], spent: Spend, options: RunOptions) -> Status:
        """Start the call coordinator (when a contestant calls a model), the hosts and the
        runners, tell `ready` once they all are, play; how the calls ended (why they stopped,
        if they did)."""
        spec = self.tournament.spec
        # an adaptive schedule's later rounds may seat anyone: its run is ready for all of them
        needed = set(self.plans) if self.more is not None else {name for m in self.todo for name in m.seats}
        self.spent = spent
        self.coordinator = (  # a run whose contestants and judges call no model has no calls to coordinate
            start_call_coordinator(spec.budget, spent, spec.stop_after_failures, os.getcwd())
            if any(self.plans[name].calls_models for name in needed) or spec.conduct is not None
            else None
        )
        self.hosts = start_hosts(
            [plan for name, plan in self.plans.items() if name in needed and plan.hosted]
        )
        calling = options.model_copy(update={"call_coordinator": self.coordinator, "prices": spec.prices})
        # the scenarios' equilibria solved while the hosts start (hosts do not need the rules)
        self.rules = MatchRules.of(spec, calling, self.tournament.scenarios)
        self.judging = (
            MatchJudging(self.engine, self.tournament_id, spec.conduct, calling, self.judging_progress)
            if spec.conduct is not None and self.judging_progress is not None
            else None
        )
        self.host_processes: dict[str, HostProcess] = {}  # known once the hosts are ready
        hosted_matches = (
            spec.max_concurrent_matches * bool(self.hosts)
            if self.more is not None
            else sum(1 for m in self.todo if self.is_hosted(m))
        )
        self.cpus = cluster_cpus()
        # a runner per CPU of the cluster, but no more than can be kept busy (none without hosted matches)
        count = min(self.cpus, hosted_matches, spec.max_concurrent_matches)
        self.runners = RunnerPool(self.start_runner, count, self.calls_held)
        coordinating = [self.coordinator.actor] if self.coordinator is not None else []
        try:
            hosts = [host.ready.remote() for host in self.hosts.values()]
            try:
                readied = ray.get(
                    hosts + [actor.ready.remote() for actor in [*coordinating, *self.runners.runners]],
                    timeout=READY_SECONDS,
                )
            except GetTimeoutError:
                raise ClusterError(
                    f"the run's processes (call coordinator, contestant hosts, match runners) did not "
                    f"start within {READY_SECONDS:g} s: the cluster has no room for them, or is overloaded"
                ) from None
            self.host_processes = dict(zip(self.hosts, readied))
            ready()
            if self.judging is not None:  # what was stored before (a resumed run's) and not judged
                stored = store.list_matches(self.engine, self.tournament_id)
                self.judging.judge([(stored_id(match.id), match.key) for match in stored])
            return asyncio.run(self.play_all())
        finally:
            if self.judging is not None:  # (stopped by a failure, or Ctrl-C)
                self.judging.stop()  # no pair starts; those in flight stop before their next item
                self.judging.pool.shutdown()  # while the call coordinator still answers them
            for actor in [*coordinating, *self.hosts.values(), *self.runners.runners]:
                ray.kill(actor)

    async def calls_status(self) -> Status:
        """How the run's model calls stand: never stopped in a run without a call coordinator."""
        if self.coordinator is None:
            return Status(None, self.spent, None)
        return await self.coordinator.current()

    def start_runner(self, place: Place) -> Any:
        """A match runner at `place` (a replacement one knows the host processes of the run)."""
        setup = RunnerSetup(
            self.tournament.scenarios,
            self.rules,
            self.plans,
            self.hosts,
            self.host_processes,
        )
        return start_runner(place, setup)

    def is_hosted(self, match: MatchSpec) -> bool:
        return any(name in self.hosts for name in match.seats)

    async def play_all(self) -> Status:
        """Every match played and recorded; how the run's model calls ended."""
        spec = self.tournament.spec
        self.slots = _Slots(spec.max_concurrent_matches)
        self.people = _People([name for name, plan in self.plans.items() if plan.seats_a_person])
        self.progress.playing = lambda: spec.max_concurrent_matches - self.slots.free
        self.stopped = _Stop(self.calls_status)
        self.suspects = _Suspects(self.calls_status)
        reporting = asyncio.create_task(self.runners.report_days(self.progress.day))
        todo = self.todo
        try:
            while todo:
                hosted = [m for m in todo if self.is_hosted(m)]
                instant = group_instant(
                    [m for m in todo if not self.is_hosted(m)],
                    self.plans,
                    spec.max_concurrent_matches,
                    self.cpus,
                )
                await asyncio.gather(*map(self.play_hosted, hosted), *map(self.play_instant, instant))
                more = self.more
                last = more is None or await self.stopped.now()
                await self.record([], None, final=last)  # at the end, what is still held
                if more is None or last:
                    break
                if self.suspects.held:
                    self.stop_held()
                    break
                todo = more()
        finally:
            reporting.cancel()
        self.progress.day(await self.runners.days_since())
        failed = await asyncio.to_thread(self.judging_failure)
        status = await self.calls_status()
        if failed is not None:  # a judge whose model fails stops the run as a merchant's does
            return Status(status.stopped or str(failed), status.spent, status.broken or failed.judge)
        if status.stopped is None and self.stopped.reason is not None:  # stopped by the run itself
            return replace(status, stopped=self.stopped.reason)
        return status

    def judging_failure(self) -> JudgeFailed | None:
        """Once the matches stored have been judged: the judge whose model failed, if one did
        (a judging stopped with the run's calls is the call coordinator's to tell)."""
        if self.judging is None:
            return None
        try:
            self.judging.finish()
        except JudgeFailed as exc:
            return exc
        except CallsStopped:
            pass
        return None

    async def play_hosted(self, match: MatchSpec) -> None:
        for attempt in range(1, LOSSES_ALLOWED + 2):
            # a person plays one match at a time (their page is the first of theirs asked, and the
            # others' deadlines would pass unseen); a slot is held while the match plays, not
            # while it is recorded
            async with self.people.seated(match.seats), self.slots.hold(1):
                if await self.stopped.now():
                    return  # matches not yet started are left for --resume
                try:
                    played = await self.runners.play(match)
                except MatchLost as lost:
                    if lost.calls:  # paid, though the match is not stored
                        stopped = StoppedMatch(
                            key=match.key, index=match.index, reason=lost.reason, calls=lost.calls
                        )
                        store.save_stopped(self.engine, self.tournament_id, [stopped])
                    if attempt > LOSSES_ALLOWED:
                        raise _lost_too_often(f"match {match.key}", attempt, str(lost)) from None
                    self.progress.observer.lost(match.key, lost.reason)
                    continue
            await self.record([played], self.tournament.scenarios[match.scenario])
            return

    async def play_instant(self, group: list[MatchSpec]) -> None:
        scenario = self.tournament.scenarios[group[0].scenario]
        async with self.slots.hold(len(group)):
            if await self.stopped.now():
                return
            task = play_instant_matches.remote(group, scenario, self.rules, self.plans)
            try:
                played = unpickle_matches(await result(task))
            except RayTaskError:  # raised by arena's code, not a crash
                raise
            except RayError as exc:  # Ray played it again LOSSES_ALLOWED times already
                others = f" (and the {len(group) - 1} played with it)" if len(group) > 1 else ""
                why = f"its process died ({type(exc).__name__})"
                raise _lost_too_often(f"match {group[0].key}{others}", LOSSES_ALLOWED + 1, why) from None
        self.progress.day(deviation.paths(self.rules.deviation) * sum(m.days for m in group))
        await self.record(played, scenario)

    async def record(
        self, played: list[FinishedMatch | StoppedMatch], scenario: Scenario | None, final: bool = False
    ) -> None:
        """Write finished matches, with those that finished in the same turn of the event
        loop, in one transaction (SQLite pays a disk sync for every commit); the calls of
        stopped ones at once."""
        halted = [match for match in played if isinstance(match, StoppedMatch)]
        finished = [(match, scenario) for match in played if isinstance(match, FinishedMatch)]
        if self.suspects.held or any(_failed(match) for match, _ in finished):
            finished, judged = await self.suspects.sort(finished, final)
            halted += judged
        if halted:
            store.save_stopped(self.engine, self.tournament_id, halted)
            self.stopped.reason = self.stopped.reason or halted[0].reason
        self.unsaved.extend(finished)
        try:
            await asyncio.sleep(0)  # the other matches that have just finished add theirs
        finally:  # cancelled or not, what has finished is written
            if self.unsaved:  # else another match's call wrote them
                self.write()

    def stop_held(self) -> None:
        """An adaptive round ended with matches held for a model that is failing: the next round
        would be chosen without them, or stored with them were the model to break, so the run
        stops here (their calls recorded as paid) and `--resume` plays them again."""
        reason = "a contestant's model failed in the last adaptive round; resume once it answers"
        held = [
            StoppedMatch(key=match.key, index=match.index, reason=reason, calls=match.all_calls)
            for match, _ in self.suspects.held
        ]
        self.suspects.held = []
        store.save_stopped(self.engine, self.tournament_id, held)
        self.stopped.reason = self.stopped.reason or reason

    def write(self) -> None:
        """Store the finished matches, and give them to the judges; a judge that has failed
        stops the run (no match starts)."""
        batch = self.unsaved[:]
        self.unsaved.clear()
        ids = recording.save_matches(self.engine, self.tournament_id, batch, self.tournament.spec.collusion)
        for _ in batch:
            self.progress.match()
        if self.judging is not None:
            self.judging.judge([(match_id, match.key) for match_id, (match, _) in zip(ids, batch)])
            failed = self.judging.failure
            if isinstance(failed, JudgeFailed):
                self.stopped.reason = self.stopped.reason or str(failed)

    async def calls_held(self, match: MatchSpec) -> list[ModelCallRecord]:
        """The model calls of a match whose runner died, from its merchants' hosts, which forget
        the match as they hand them over (on both paths of a probed match): paid, though the
        match is played again. A host that died with the runner took its merchant's with it."""
        keys = [match.key, match.key + DEVIATED_SUFFIX] if self.rules.deviation is not None else [match.key]
        asked = [(key, name) for key in keys for name in match.seats if name in self.hosts]
        answers = await asyncio.gather(
            *(result(self.hosts[name].finish.remote(key, name)) for key, name in asked),
            return_exceptions=True,
        )
        return [
            record
            for (_, name), answer in zip(asked, answers)
            if not isinstance(answer, BaseException)
            for record in call_records(name, answer[0].calls)  # (Handed, HostProcess)
        ]


def _failed(match: FinishedMatch) -> frozenset[str]:
    """The merchants (named after their contestants) of a match that had a day's call fail,
    on either path of a probed match (its measures are built from both)."""
    faults = [*match.faults, *(match.deviation.faults if match.deviation is not None else [])]
    return frozenset(fault.merchant for fault in faults if fault.kind == "error")


class _Suspects:
    """Finished matches with faults of a contestant whose last call had failed as retrying
    cannot help (a refused key, an unknown model): held back until that is settled, so that a
    match built from a broken model's faults is never stored. A held match is stored once
    the contestant's calls go through again (or the run ends without its failures stopping
    it), and recorded as stopped (its calls only) if its failures stop the run."""

    def __init__(self, calls_status: Callable[[], Awaitable[Status]]):
        self.calls_status = calls_status
        self.held: list[tuple[FinishedMatch, Scenario | None]] = []

    async def sort(
        self, finished: list[tuple[FinishedMatch, Scenario | None]], final: bool
    ) -> tuple[list[tuple[FinishedMatch, Scenario | None]], list[StoppedMatch]]:
        """Of `finished` and the held matches: those to store now and those the run stopped;
        the rest stay held (`final`: none does)."""
        status = await self.calls_status()
        ready, halted, held = [], [], []
        for match, scenario in [*self.held, *finished]:
            failed = _failed(match)
            if status.broken is not None and status.broken in failed:
                halted.append(
                    StoppedMatch(
                        key=match.key, index=match.index, reason=status.stopped or "", calls=match.all_calls
                    )
                )
            elif failed & status.failing and not final:
                held.append((match, scenario))
            else:
                ready.append((match, scenario))
        self.held = held
        return ready, halted


class _Stop:
    """Whether the run's model calls have stopped, asked of `calls_status` before a match
    starts (or known from a match that stopped)."""

    def __init__(self, calls_status: Callable[[], Awaitable[Status]]):
        self.calls_status = calls_status
        self.reason: str | None = None

    async def now(self) -> bool:
        if self.reason is None:
            self.reason = (await self.calls_status()).stopped
        return self.reason is not None


class _Slots:
    """At most `capacity` matches in play; a group of matches takes a slot per match."""

    def __init__(self, capacity: int):
        self.free = capacity
        self.changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def hold(self, count: int) -> AsyncIterator[None]:
        async with self.changed:
            await self.changed.wait_for(lambda: self.free >= count)
            self.free -= count
        try:
            yield
        finally:
            async with self.changed:
                self.free += count
                self.changed.notify_all()


class _People:
    """The people of a run, each at one match at a time: a match takes its people's seats in the
    order of their names (so two matches never wait on each other), in the order they ask."""

    def __init__(self, names: list[str]):
        self.free = {name: asyncio.Lock() for name in names}

    @contextlib.asynccontextmanager
    async def seated(self, seats: tuple[str, ...]) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as taken:
            for name in sorted(name for name in seats if name in self.free):
                await taken.enter_async_context(self.free[name])
            yield


class _Once:
    """`call`, made the first time it is asked for and never again."""

    def __init__(self, call: Callable[[], None]):
        self.call: Callable[[], None] | None = call

    def __call__(self) -> None:
        call, self.call = self.call, None
        if call is not None:
            call()


def _lost_too_often(what: str, times: int, reason: str) -> ClusterError:
    return ClusterError(
        f"{what} was lost {times} times, the last because {reason}: the processes that play it keep "
        "dying (nodes lost, or a contestant that crashes its process outside an actor of its own); "
        "finished matches are saved, and --resume plays the rest"
    )


class _ProgressNotes:
    """Where the run stands (days played, matches in play), written to the record for its
    readers by a thread of its own: a note only hands over the latest figures, so the run
    never waits on the database for them; what cannot be written is told once in the log and
    written with the next figures. `close` writes the last ones."""

    def __init__(self, engine: Engine, tournament_id: int, days_at_start: int, days_planned: int):
        self.engine, self.tournament_id = engine, tournament_id
        self.days_at_start, self.days_planned, self.started = days_at_start, days_planned, utcnow()
        self.latest: tuple[int, int] | None = None
        self.closed, self.failed = False, False
        self.changed = threading.Condition()
        self.writer = threading.Thread(target=self._write, name="arena progress notes", daemon=True)
        self.writer.start()

    def __call__(self, days: int, playing: int) -> None:
        with self.changed:
            self.latest = (days, playing)
            self.changed.notify()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify()
        self.writer.join(CLOSE_SECONDS)

    def _write(self) -> None:
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.latest is not None or self.closed)
                latest, self.latest, closed = self.latest, None, self.closed
            if latest is not None:
                self._note(*latest)
            if closed:
                return
            with self.changed:  # at most a note every NOTE_SECONDS, but the run's end is not kept waiting
                self.changed.wait_for(lambda: self.closed, timeout=NOTE_SECONDS)

    def _note(self, days: int, playing: int) -> None:
        progress = RunProgressRow(
            tournament_id=self.tournament_id,
            started_at=self.started,
            days_at_start=self.days_at_start,
            days_played=days,
            days_planned=self.days_planned,
            matches_playing=playing,
        )
        try:
            store.note_progress(self.engine, progress)
        except Exception as exc:  # the run's own work goes on whatever this one does
            if not self.failed:
                log.warning(
                    "tournament %d: where the run stands could not be recorded (%s)", self.tournament_id, exc
                )
            self.failed = True


class _Progress:
    """Counts finished matches and played days, telling the observer at most every
    POLL_SECONDS, and the record (`note`) each time."""

    def __init__(self, observer: RunObserver, matches: int, days: int, note: Callable[[int, int], None]):
        self.observer, self.matches, self.days, self.note = observer, matches, days, note
        self.playing: Callable[[], int] = lambda: 0  # the matches in play, once play starts
        self.told = 0.0

    def day(self, days: int = 1) -> None:
        self.days += days
        self._tell(force=False)

    def match(self) -> None:
        self.matches += 1
        self._tell(force=True)

    def _tell(self, force: bool) -> None:
        now = time.monotonic()
        if force or now - self.told >= POLL_SECONDS:
            self.told = now
            self.observer.advanced(self.matches, self.days)
        self.note(self.days, self.playing())
