"""Match runners: the Ray actors that play the matches whose merchants are hosted, and the
driver's pool of them.

A hosted match mostly waits for its merchants' answers, so a MatchRunner plays many side by
side as coroutines on its event loop. A run starts about one runner per CPU, placed on the
nodes in proportion to their CPUs (as the hosts are), so the market days and turns of many
matches are spread over the cores and the driver only hands out matches and records results.
A runner that dies (its node was lost) is replaced by one on another node, and its matches in
play are lost (MatchLost): they are played again from their start.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError

from market.scenario import Scenario
from results.records import FinishedMatch, ModelCallRecord, StoppedMatch
from results.storage import daylog_codec
from tournaments.cluster import Place, enter, result, spread
from tournaments.collector import freeze_startup_heap
from tournaments.hosts import HostClient, HostProcess, hosted_seats
from tournaments.match import Match, MatchLost, MatchRules
from tournaments.plan import ContestantPlan
from tournaments.schedule import MatchSpec

POLL_SECONDS = 0.2  # how often the driver asks the runners how many days they played


@dataclass(frozen=True)
class RunnerSetup:
    """What every match runner of a run is given once, when it starts: the scenarios, the
    matches' rules (with the benchmarks their scoring needs) and contestant plans, the hosts'
    actors by contestant, and the host processes the run knows of (a runner started in place
    of one that died may find one of them gone)."""

    scenarios: dict[str, Scenario]
    rules: MatchRules
    plans: dict[str, ContestantPlan]
    hosts: dict[str, Any]
    known: dict[str, HostProcess]


@ray.remote(num_cpus=0)
class MatchRunner:
    """Plays the matches of one tournament it is given by their specs; what they share (the
    scenarios, rules, contestants and hosts) it is given once, when it starts."""

    def __init__(self, working_dir: str, setup: RunnerSetup):
        enter(working_dir)  # inline contestants of its matches may read files too
        freeze_startup_heap()  # its matches' collections then leave Ray's and arena's modules unscanned
        self.scenarios, self.rules, self.plans = setup.scenarios, setup.rules, setup.plans
        self.hosts = {name: HostClient(actor, setup.known.get(name)) for name, actor in setup.hosts.items()}
        self.make_seat = hosted_seats(self.hosts)
        self.days_done = 0  # of the matches it finished
        self.days_in_play: dict[str, int] = {}  # by match key

    async def ready(self) -> bool:
        """Ready once connected to every host."""
        await asyncio.gather(*(host.connect() for host in self.hosts.values()))
        return True

    async def play(self, spec: MatchSpec) -> FinishedMatch | StoppedMatch:
        """The match played (a MatchLost is not: its days are not counted, it is played again)."""
        match = Match(spec, self.scenarios[spec.scenario], self.rules, self.plans, self.make_seat)
        self.days_in_play[spec.key] = 0
        try:
            played = await match.play(on_day=functools.partial(self._count_day, spec.key))
            self.days_done += self.days_in_play[spec.key]
        finally:
            del self.days_in_play[spec.key]
        return daylog_codec.packed(played) if isinstance(played, FinishedMatch) else played

    async def days_played(self) -> tuple[int, int]:
        """Days played so far by the matches this runner finished, and by those in play (for
        the progress bar)."""
        return self.days_done, sum(self.days_in_play.values())

    def _count_day(self, key: str) -> None:
        self.days_in_play[key] += 1


class RunnerPool:
    """The match runners, `count` of them spread over the cluster's nodes, each made by
    `start(place)`: each match goes to the runner with the fewest matches in play; the days
    they have played are polled for the progress bar. `calls_held` gives the model calls of a
    match whose runner died, from its merchants' hosts."""

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
            played: FinishedMatch | StoppedMatch = await result(runner.play.remote(match))
            return played
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

    async def report_days(self, told: Callable[[int], None]) -> None:
        """Until cancelled: tell `told` the days played since, every POLL_SECONDS."""
        while self.runners:
            await asyncio.sleep(POLL_SECONDS)
            told(await self.days_since())

    async def days_since(self) -> int:
        """The days the runners played since they were last asked."""
        runners = list(self.runners)
        days = await asyncio.gather(
            *(result(r.days_played.remote()) for r in runners), return_exceptions=True
        )
        played, self.days_lost = -self.days_lost, 0
        for index, (runner, count) in enumerate(zip(runners, days)):
            if isinstance(count, tuple) and self.runners[index] is runner:  # not one that died meanwhile
                played += sum(count) - sum(self.days_told[index])
                self.days_told[index] = count
        return played


def start_runner(place: Place, setup: RunnerSetup) -> Any:
    return MatchRunner.options(**place.options()).remote(os.getcwd(), setup)  # type: ignore[attr-defined]
