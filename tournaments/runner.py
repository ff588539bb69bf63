"""Play a tournament on Ray and record every finished match as it finishes.

Finished matches are written as they come back, each whole in one transaction (a group of
matches played side by side together), so a run killed at any moment loses only the
matches in flight; `resume=True` continues the latest unfinished tournament made
from the same files and skips what it already holds. The Elo table is computed over
matches in schedule order, so it does not depend on which match happened to finish first.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import pickle
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

import ray
from ray.exceptions import RayActorError, RayError, RayTaskError

from contestants.base import RunOptions
from contestants.kinds import contestant_class, validate_params
from contestants.llm.desk import Spend, Status
from market.scenario import Scenario
from results import deviation, store
from results.records import FinishedMatch, ModelCallRecord, StoppedMatch
from tournaments.actors import start_hosts, start_runner
from tournaments.calls import RemoteDesk, start_desk
from tournaments.cluster import ClusterError, Place, ray_session, result, spread
from tournaments.config import ContestantEntry, Tournament, TournamentSpec
from tournaments.match import (
    DEVIATED_SUFFIX,
    Match,
    MatchLost,
    MatchRules,
    call_records,
    collector_paused,
    play_here,
)
from tournaments.schedule import MatchSpec, schedule

POLL_SECONDS = 0.2
LOSSES_ALLOWED = 3  # times one match may be lost (MatchLost) and played again from its start


class RunObserver(Protocol):
    """What a front end is told while a tournament runs."""

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None: ...
    def advanced(self, matches_done: int, days_done: int) -> None: ...
    def lost(self, match_key: str, reason: str) -> None: ...  # a match to be played again (MatchLost)


class _Silent:
    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        pass

    def advanced(self, matches_done: int, days_done: int) -> None:
        pass

    def lost(self, match_key: str, reason: str) -> None:
        pass


@dataclass(frozen=True)
class RunSummary:
    tournament_id: int
    played: int
    skipped: int
    resumed: bool
    stopped: str | None = None  # why matches were left unplayed (the budget, a broken model), if they were
    broken: str | None = None  # the contestant whose failing model stopped the run


def run_tournament(
    tournament: Tournament,
    engine: Any,
    *,
    resume: bool = False,
    address: str | None = None,
    observer: RunObserver | None = None,
    options: RunOptions = RunOptions(),
) -> RunSummary:
    """Play `tournament` (what is left of it with `resume`), saving each match as it finishes.

    `options` (`arena run` flags) reach every contestant's creation, inline or in an actor.
    """
    observer = observer or _Silent()
    spec = tournament.spec
    plan = schedule(tournament)
    previous = store.find_resumable(engine, tournament.config_hash) if resume else None
    done = store.finished_keys(engine, previous.id) if previous is not None else set()
    todo = [m for m in plan if m.key not in done]
    with ray_session(address) if todo else nullcontext():
        if previous is not None:
            tournament_id = previous.id
        else:  # recorded only once Ray is up, so a bad address leaves nothing behind
            tournament_id = store.start_tournament(
                engine,
                name=spec.name,
                config_path=tournament.path,
                config_text=tournament.text,
                config_hash=tournament.config_hash,
                seed=spec.seed,
                contestants=[(c.name, c.kind, c.params) for c in spec.contestants],
                planned_matches=len(plan),
            )
        paths = deviation.paths(spec.deviation)
        total_days, done_days = (
            paths * sum(m.days for m in plan),
            paths * sum(m.days for m in plan if m.key in done),
        )
        start = functools.partial(observer.started, tournament_id, len(plan), total_days, len(done))
        ending = Status(stopped=None, spent=Spend(*store.spent(engine, tournament_id)), broken=None)
        if todo:
            ending = _play(
                tournament,
                todo,
                engine,
                tournament_id,
                _Progress(observer, len(done), done_days),
                start,
                ending.spent,
                options,
            )
        else:
            start()
    played = len(store.finished_keys(engine, tournament_id)) - len(done)
    if ending.stopped is None:
        observer.advanced(len(plan), total_days)
    store.finish_tournament(engine, tournament_id, "finished" if ending.stopped is None else "stopped")
    return RunSummary(tournament_id, played, len(done), previous is not None, ending.stopped, ending.broken)


def _play(
    tournament: Tournament,
    todo: list[MatchSpec],
    engine: Any,
    tournament_id: int,
    progress: _Progress,
    start: Callable[[], None],
    spent: Spend,
    options: RunOptions,
) -> Status:
    """Start the run's call desk, the hosted contestants and the match runners, tell `start`
    once they are all ready, play `todo`; how the calls ended (why they stopped, if they did)."""
    spec = tournament.spec
    desk = start_desk(spec.budget, spent, spec.stop_after_failures, os.getcwd())
    options = options.model_copy(update={"desk": desk, "prices": spec.prices})
    entries = {c.name: c for c in spec.contestants}
    rules = MatchRules.of(spec, options, deadlines(spec))
    needed = {name for m in todo for name in m.seats}
    hosts = start_hosts([entry for name, entry in entries.items() if name in needed and _isolated(entry)])
    hosted_matches = sum(1 for m in todo if any(name in hosts for name in m.seats))
    count = _runner_count(hosted_matches, spec.max_concurrent_matches)
    runners = _Runners(
        functools.partial(
            start_runner, scenarios=tournament.scenarios, rules=rules, entries=entries, hosts=hosts
        ),
        count,
        functools.partial(_calls_held, hosts, rules),
    )
    try:
        ray.get([actor.ready.remote() for actor in [desk.actor, *hosts.values(), *runners.runners]])
        start()
        asyncio.run(
            _play_all(tournament, todo, rules, entries, hosts, runners, engine, tournament_id, progress, desk)
        )
        return desk.status()
    finally:
        for actor in [desk.actor, *hosts.values(), *runners.runners]:
            ray.kill(actor)


def deadlines(spec: TournamentSpec) -> dict[str, float]:
    """Seconds each contestant's hosted turn may take: the tournament's decision_timeout_s if
    it sets one, else what the contestant's own settings need (a model's retries, see
    Contestant.turn_seconds); a contestant left out gets MatchRules' default."""
    chosen = {}
    for entry in spec.contestants:
        kind = contestant_class(entry.kind)
        own = kind.turn_seconds(validate_params(entry.kind, entry.params))
        if spec.decision_timeout_s or own:
            chosen[entry.name] = spec.decision_timeout_s or own
    return chosen


def _isolated(entry: ContestantEntry) -> bool:
    return entry.isolate if entry.isolate is not None else contestant_class(entry.kind).needs_actor


def _runner_count(hosted_matches: int, max_concurrent: int) -> int:
    """One match runner per CPU of the cluster (at least one), but no more than can be kept
    busy: none for a run without hosted matches."""
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return min(max(cpus, 1), hosted_matches, max_concurrent)


async def _play_all(
    tournament,
    todo,
    rules: MatchRules,
    entries,
    hosts,
    runners: _Runners,
    engine,
    tournament_id,
    progress: _Progress,
    desk: RemoteDesk,
) -> None:
    """Keep up to max_concurrent_matches matches going; record each as it finishes.

    Matches of instant contestants are Ray tasks on the cluster's warm worker pool: they run
    straight through, with no Ray call per day, and those of rule merchants alone go in
    groups played side by side in one market (`group_instant`). A
    match with hosted contestants mostly waits for them, so it goes to a match runner, which
    plays many side by side.

    Once the run's model calls stop (the desk says why), no match starts; matches in play
    stop at their next call, and their paid calls are recorded without them. A match that
    ends with faults of a contestant whose model fails as retrying cannot help waits to be
    stored until that is settled (`_Suspects`).
    """
    slots = _Slots(tournament.spec.max_concurrent_matches)
    is_hosted = [any(name in hosts for name in m.seats) for m in todo]
    hosted = [m for m, on in zip(todo, is_hosted) if on]
    cpus = int(ray.cluster_resources().get("CPU", 1))
    instant = group_instant(
        [m for m, on in zip(todo, is_hosted) if not on], entries, tournament.spec.max_concurrent_matches, cpus
    )
    stopped = _Stop(
        desk,
        watching=any(contestant_class(entries[name].kind).calls_models for m in todo for name in m.seats),
    )
    suspects = _Suspects(desk)

    unsaved: list[tuple[FinishedMatch, Scenario]] = []

    async def record(
        played: list[FinishedMatch | StoppedMatch], scenario: Scenario | None, final: bool = False
    ) -> None:
        """Write finished matches, with those that finished in the same turn of the event
        loop, in one transaction (SQLite pays a disk sync for every commit); the calls of
        stopped ones at once."""
        halted = [match for match in played if isinstance(match, StoppedMatch)]
        finished = [(match, scenario) for match in played if isinstance(match, FinishedMatch)]
        if suspects.held or any(_failed(match) for match, _ in finished):
            finished, judged = await suspects.sort(finished, final)
            halted += judged
        if halted:
            store.save_stopped(engine, tournament_id, halted)
            stopped.reason = stopped.reason or halted[0].reason
        unsaved.extend(finished)
        try:
            await asyncio.sleep(0)  # the other matches that have just finished add theirs
        finally:  # cancelled or not, what has finished is written
            if unsaved:  # else another match's call wrote them
                write()

    def write() -> None:
        batch = unsaved[:]
        unsaved.clear()
        store.save_matches(engine, tournament_id, batch)
        for _ in batch:
            progress.match()

    async def one_hosted(match: MatchSpec) -> None:
        for attempt in range(1, LOSSES_ALLOWED + 2):
            async with slots.hold(1):  # a slot is held while the match plays, not while it is recorded
                if await stopped.now():
                    return  # matches not yet started are left for --resume
                try:
                    played = await runners.play(match)
                except MatchLost as lost:
                    if lost.calls:  # paid, though the match is not stored
                        store.save_stopped(
                            engine,
                            tournament_id,
                            [
                                StoppedMatch(
                                    key=match.key, index=match.index, reason=lost.reason, calls=lost.calls
                                )
                            ],
                        )
                    if attempt > LOSSES_ALLOWED:
                        raise _lost_too_often(f"match {match.key}", attempt, str(lost)) from None
                    progress.observer.lost(match.key, lost.reason)
                    continue
            await record([played], tournament.scenarios[match.scenario])
            return

    async def instant_group(group: list[MatchSpec]) -> None:
        scenario = tournament.scenarios[group[0].scenario]
        async with slots.hold(len(group)):
            if await stopped.now():
                return
            try:
                played = unpickle_matches(
                    await result(play_instant_matches.remote(group, scenario, rules, entries))
                )
            except RayTaskError:  # raised by arena's code, not a crash
                raise
            except RayError as exc:  # Ray played it again LOSSES_ALLOWED times already
                others = f" (and the {len(group) - 1} played with it)" if len(group) > 1 else ""
                raise _lost_too_often(
                    f"match {group[0].key}{others}",
                    LOSSES_ALLOWED + 1,
                    f"its process died ({type(exc).__name__})",
                ) from None
        progress.day(deviation.paths(rules.deviation) * sum(m.days for m in group))
        await record(played, scenario)

    reporting = asyncio.create_task(runners.report_days(progress))
    try:
        await asyncio.gather(*map(one_hosted, hosted), *map(instant_group, instant))
    finally:
        reporting.cancel()
    await record([], None, final=True)  # what is still held
    await runners.tell_days(progress)


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

    def __init__(self, desk: RemoteDesk):
        self.desk = desk
        self.held: list[tuple[FinishedMatch, Scenario]] = []

    async def sort(
        self, finished: list[tuple[FinishedMatch, Scenario]], final: bool
    ) -> tuple[list[tuple[FinishedMatch, Scenario]], list[StoppedMatch]]:
        """Of `finished` and the held matches: those to store now and those the run stopped;
        the rest stay held (`final`: none does)."""
        status = await self.desk.current()
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
    """Whether the run's model calls have stopped, asked of the desk before a match starts
    (or known from a match that stopped); never, in a run whose contestants call no model
    (`watching` false)."""

    def __init__(self, desk: RemoteDesk, watching: bool):
        self.desk, self.watching = desk, watching
        self.reason: str | None = None

    async def now(self) -> bool:
        if self.reason is None and self.watching:
            self.reason = (await self.desk.current()).stopped
        return self.reason is not None


GROUP_LIMIT = 32  # matches played side by side in one task


def group_instant(
    matches: list[MatchSpec], entries: dict[str, ContestantEntry], max_concurrent: int, cpus: int
) -> list[list[MatchSpec]]:
    """The instant matches in groups to play as one task each, in schedule order of their
    first match. Matches whose merchants all decide from the view and that share scenario, length
    and size are grouped, in near-equal groups of at most max_concurrent / cpus (so every CPU
    can have a group while all count against max_concurrent_matches) and GROUP_LIMIT; any
    other match is a group of its own."""
    limit = max(1, min(GROUP_LIMIT, max_concurrent // max(cpus, 1)))
    alike: dict[tuple, list[MatchSpec]] = {}
    groups: list[list[MatchSpec]] = []
    for match in matches:
        if all(contestant_class(entries[name].kind).decides_from_view for name in match.seats):
            alike.setdefault((match.scenario, match.days, len(match.seats)), []).append(match)
        else:
            groups.append([match])
    for same in alike.values():
        count = -(-len(same) // limit)
        size = -(-len(same) // count)
        groups += [same[i : i + size] for i in range(0, len(same), size)]
    return sorted(groups, key=lambda group: group[0].index)


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


def _lost_too_often(what: str, times: int, reason: str) -> ClusterError:
    return ClusterError(
        f"{what} was lost {times} times, the last because {reason}: the processes that play it keep dying (nodes "
        "lost, or a contestant that crashes its process outside an actor of its own); finished matches are saved, "
        "and --resume plays the rest"
    )


async def _calls_held(hosts: dict[str, Any], rules: MatchRules, match: MatchSpec) -> list[ModelCallRecord]:
    """The model calls of a match whose runner died, from its merchants' hosts, which forget
    the match as they hand them over (on both paths of a probed match): paid, though the match
    is played again. A host that died with the runner took its merchant's with it."""
    keys = [match.key, match.key + DEVIATED_SUFFIX] if rules.deviation is not None else [match.key]
    asked = [(key, name) for key in keys for name in match.seats if name in hosts]
    answers = await asyncio.gather(
        *(result(hosts[name].finish.remote(key, name)) for key, name in asked), return_exceptions=True
    )
    return [
        record
        for (_, name), calls in zip(asked, answers)
        if not isinstance(calls, BaseException)
        for record in call_records(name, calls)
    ]


@ray.remote(
    num_cpus=1, max_retries=LOSSES_ALLOWED
)  # a group lost with its worker or node is played again from its start
def play_instant_matches(
    matches: list[MatchSpec], scenario: Scenario, rules: MatchRules, entries: dict[str, ContestantEntry]
) -> bytes:
    """A group of `group_instant`, played side by side: the finished (or stopped)
    matches packed for storage and pickled here, with garbage collection paused (see
    `unpickle_matches`)."""
    with collector_paused():
        finished = play_here([Match(match, scenario, rules, entries, hosts={}) for match in matches])
        packed = [match.packed() if isinstance(match, FinishedMatch) else match for match in finished]
        return pickle.dumps(packed, pickle.HIGHEST_PROTOCOL)


def unpickle_matches(blob: bytes) -> list[FinishedMatch | StoppedMatch]:
    """The matches `play_instant_matches` returns, unpickled with garbage collection paused
    as they were pickled (Ray's own serialiser would do both with it running)."""
    with collector_paused():
        return pickle.loads(blob)


class _Progress:
    """Counts finished matches and played days, telling the observer at most every POLL_SECONDS."""

    def __init__(self, observer: RunObserver, matches: int, days: int):
        self.observer, self.matches, self.days = observer, matches, days
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


class _Runners:
    """The match runners, `count` of them spread over the cluster's nodes, each made by
    `start(place)`: each match goes to the runner with the fewest matches in play; the days
    they have played are polled for the progress bar. A runner that dies (its node was lost)
    is replaced by one on another node, and its matches in play are lost (MatchLost): they
    are played again from their start."""

    def __init__(
        self,
        start: Callable[[Place], Any],
        count: int,
        calls_held: Callable[[MatchSpec], Awaitable[list[ModelCallRecord]]],
    ):
        self.start, self.calls_held = start, calls_held
        self.places = spread(count) if count else []
        self.runners = [start(place) for place in self.places]
        self.in_play = [0] * count
        self.days_told = [
            (0, 0)
        ] * count  # by runner: (days of its finished matches, of those in play), as last told
        self.days_lost = 0  # told as played by runners that died since, in matches they did not finish

    async def play(self, match: MatchSpec) -> FinishedMatch | StoppedMatch:
        index = min(range(len(self.runners)), key=self.in_play.__getitem__)
        runner, place = self.runners[index], self.places[index]
        self.in_play[index] += 1
        try:
            return await result(runner.play.remote(match))
        except RayActorError:
            self._replace(index, runner)
            raise MatchLost(
                f"its match runner on {place.address} died", await self.calls_held(match)
            ) from None
        except RayTaskError as exc:
            if isinstance(exc.cause, MatchLost):
                raise exc.cause from None
            raise
        finally:
            if self.runners[index] is runner:  # else its count went with it
                self.in_play[index] -= 1

    def _replace(self, index: int, runner: Any) -> None:
        """A new runner in place of `runner`, on another node, once: the other matches it held
        fail with it. (Not awaited: no other match may pick the dead runner meanwhile; Ray's
        list of nodes is read once per runner lost.)"""
        if self.runners[index] is not runner:
            return
        ray.kill(runner)  # if only unreachable, it must not play on
        others = [place.node for i, place in enumerate(self.places) if i != index]
        self.places[index] = spread(1, placed=others, avoid={self.places[index].node})[0]
        self.runners[index] = self.start(self.places[index])
        self.days_lost += self.days_told[index][1]
        self.in_play[index], self.days_told[index] = 0, (0, 0)

    async def report_days(self, progress: _Progress) -> None:
        """Until cancelled: tell `progress` the days played every POLL_SECONDS."""
        while self.runners:
            await asyncio.sleep(POLL_SECONDS)
            await self.tell_days(progress)

    async def tell_days(self, progress: _Progress) -> None:
        runners = list(self.runners)
        days = await asyncio.gather(
            *(result(runner.days_played.remote()) for runner in runners), return_exceptions=True
        )
        played, self.days_lost = -self.days_lost, 0
        for index, (runner, count) in enumerate(zip(runners, days)):
            if isinstance(count, tuple) and self.runners[index] is runner:  # not one that died meanwhile
                played += sum(count) - sum(self.days_told[index])
                self.days_told[index] = count
        progress.day(played)
