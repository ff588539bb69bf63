"""One match: a market, its merchants, day after day, until the last day.

Contestants that run inline (instant rule baselines) are called directly; contestants
hosted in Ray actors are asked all at once and given `timeout_s` to answer. A merchant that
raises, misses the deadline, returns something unusable or whose actor dies does nothing
that day, and the fault is recorded; the match goes on.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import time
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import ray
from ray.exceptions import RayActorError, RayTaskError

from contestants.base import Contestant, create
from market.env import MarketEnv
from market.scenario import Scenario
from market.types import DayRecord
from results.records import Fault, FinishedMatch
from tournaments.config import ContestantEntry
from tournaments.schedule import MatchSpec
from tournaments.scoring import score_match


def match_seeds(tournament_seed: int, key: str, seats: int) -> list[int]:
    """Seeds for the market (first) and each seat, from the tournament seed and the match
    key alone, so a match plays the same wherever and whenever it runs."""
    sequence = np.random.SeedSequence([tournament_seed, zlib.crc32(key.encode())])
    return [int(child.generate_state(1)[0]) for child in sequence.spawn(seats + 1)]


class Match:
    def __init__(
        self,
        spec: MatchSpec,
        scenario: Scenario,
        tournament_seed: int,
        entries: dict[str, ContestantEntry],
        hosts: dict[str, Any],
        timeout_s: float,
    ):
        self.spec, self.scenario, self.timeout_s = spec, scenario, timeout_s
        seeds = match_seeds(tournament_seed, spec.key, len(spec.seats))
        self.market_seed = seeds[0]
        self.seat_seeds = dict(zip(spec.seats, seeds[1:]))
        self.hosts = {name: hosts[name] for name in spec.seats if name in hosts}
        self.local: dict[str, Contestant] = {
            name: create(entries[name].kind, entries[name].params) for name in spec.seats if name not in self.hosts
        }
        self.faults: list[Fault] = []
        self.records: list[DayRecord] = []
        self._needs_reset: set[str] = set(self.hosts)

    async def play(self, on_day: Callable[[], None] = lambda: None) -> FinishedMatch:
        started = time.perf_counter()
        env = MarketEnv(self.scenario, list(self.spec.seats), days=self.spec.days)
        observations, _ = env.reset(seed=self.market_seed)
        for name, contestant in self.local.items():
            contestant.reset(merchant=name, scenario=self.scenario, rng=np.random.default_rng(self.seat_seeds[name]))
        try:
            while env.agents:
                day = env.day
                decisions = self._local_decisions(observations, day, env.agents)
                if self.hosts:
                    decisions.update(await self._hosted_decisions(observations, day, env.agents))
                observations, _, _, _, infos = env.step(decisions)
                for name, info in infos.items():
                    record: DayRecord = info["record"]
                    if any(r.index == -1 for r in record.rejections):
                        self._fault(day, name, "malformed", record.rejections[0].reason)
                    self.records.append(record)
                on_day()
        finally:
            await self._release_hosts()
        seats = {name: name for name in self.spec.seats}
        return FinishedMatch(
            key=self.spec.key,
            index=self.spec.index,
            scenario=self.scenario.name,
            seed=self.spec.seed,
            days=self.spec.days,
            wall_seconds=time.perf_counter() - started,
            merchants=score_match(self.scenario, self.spec.days, seats, self.records, self.faults),
            days_played=self.records,
            faults=self.faults,
        )

    def play_here(self) -> FinishedMatch:
        """Play to the end on a private event loop (for matches with no hosted contestants).

        Not asyncio.run: on Python 3.11 its SIGINT bookkeeping ends up repr()-ing the
        finished task, that is the whole match, which costs more than playing a short one.
        """
        _freeze_startup_heap()
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(self.play())
        finally:
            loop.close()

    def _local_decisions(self, observations: dict, day: int, agents: list[str]) -> dict[str, Any]:
        decisions: dict[str, Any] = {}
        for name in agents:
            contestant = self.local.get(name)
            if contestant is None:
                continue
            try:
                decisions[name] = contestant.decide(observations[name])
            except Exception as exc:  # a contestant's bug is a fault, not a crash
                self._fault(day, name, "error", _describe(exc))
        return decisions

    async def _hosted_decisions(self, observations: dict, day: int, agents: list[str]) -> dict[str, Any]:
        playing = [name for name in agents if name in self.hosts]
        await self._reset_hosts([name for name in playing if name in self._needs_reset], day)
        calls = {
            name: asyncio.ensure_future(_await(self.hosts[name].decide.remote(self.spec.key, name, observations[name])))
            for name in playing
            if name not in self._needs_reset
        }
        if not calls:
            return {}
        done, _ = await asyncio.wait(calls.values(), timeout=self.timeout_s)
        decisions: dict[str, Any] = {}
        for name, call in calls.items():
            if call not in done:
                call.cancel()
                self._fault(day, name, "timeout", f"no decision within {self.timeout_s:g} s")
            elif call.exception() is not None:
                self._host_failed(day, name, call.exception())
            else:
                decisions[name] = call.result()
        return decisions

    async def _reset_hosts(self, names: list[str], day: int) -> None:
        """Give hosted contestants a fresh match state: at the start, and after their actor
        died (a restarted actor remembers nothing)."""
        if not names:
            return
        calls = {
            name: asyncio.ensure_future(
                _await(self.hosts[name].reset.remote(self.spec.key, name, self.scenario, self.seat_seeds[name]))
            )
            for name in names
        }
        done, _ = await asyncio.wait(calls.values(), timeout=max(self.timeout_s, 30.0))
        for name, call in calls.items():
            if call in done and call.exception() is None:
                self._needs_reset.discard(name)
            elif call in done:
                self._host_failed(day, name, call.exception())
            else:
                call.cancel()
                self._fault(day, name, "timeout", "its actor did not come back in time")

    def _host_failed(self, day: int, name: str, exc: BaseException) -> None:
        if isinstance(exc, RayActorError):
            self._needs_reset.add(name)
            self._fault(day, name, "actor_died", "its actor process died")
        else:
            self._fault(day, name, "error", _describe(exc))

    async def _release_hosts(self) -> None:
        calls = [_await(host.finish.remote(self.spec.key, name)) for name, host in self.hosts.items()]
        await asyncio.gather(*calls, return_exceptions=True)

    def _fault(self, day: int, merchant: str, kind: str, detail: str) -> None:
        self.faults.append(Fault(day=day, merchant=merchant, kind=kind, detail=detail[:500]))


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


async def _await(ref: ray.ObjectRef) -> Any:
    return await ref


def _describe(exc: BaseException) -> str:
    """One line about an exception raised by a contestant (the remote cause if any)."""
    cause = exc.cause if isinstance(exc, RayTaskError) and exc.cause is not None else exc
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0] if text else ''}".rstrip(": ")
