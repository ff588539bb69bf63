"""The Ray actors of a run: a ContestantHost for each contestant that needs isolation, and a
few MatchRunners that play the matches those contestants are in.

A ContestantHost is one process per such contestant (it holds a model, is slow, or may crash
its process). It keeps that contestant's state for every match it is in, keyed by (match key,
merchant), and answers the matches' turns on a pool of threads, so one slow contestant answers
many matches at once. A match has one turn a day with each of its hosted merchants; the turns
go over a direct connection from the runner (tournaments.channel), the rest through Ray.
Ray restarts a host if its process dies; the match then starts its merchant afresh.

A MatchRunner plays matches with hosted contestants as coroutines on its event loop: such a
match mostly waits for its contestants' answers, so one process plays many side by side. A run
starts about one runner per CPU, so the market steps and turns of many matches are spread
over the cores and the driver only hands out matches and records the results.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import time
from collections import defaultdict
from typing import Any

import ray
from ray import cloudpickle

from contestants.base import Contestant
from market.calls import ModelCall
from contestants.kinds import contestant_class, create
from market.scenario import Scenario
from results.records import FinishedMatch, StoppedMatch
from tournaments.channel import Address, TurnClient, TurnServer
from tournaments.cluster import enter, result
from tournaments.config import ContestantEntry
from tournaments.match import Forgotten, Match, MatchRules, TurnRequest, take_turn
from tournaments.schedule import MatchSpec

HOST_THREADS = 64


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, entry: ContestantEntry, working_dir: str):
        enter(working_dir)
        # Import the contestant's code now, so that `ready` means ready to play: otherwise
        # every host imports it on its first call, all at once, inside the first day of play.
        contestant_class(entry.kind)
        self.entry = entry
        self.instances: dict[tuple[str, str], Contestant] = {}
        self.turning: dict[tuple[str, str], threading.Lock] = defaultdict(threading.Lock)  # one turn at a time per merchant
        self.server = TurnServer(self.turn, HOST_THREADS, ray.util.get_node_ip_address())

    def ready(self) -> bool:
        return True

    def channel(self) -> Address:
        """Where the runners connect for the turns, and the token they must send first."""
        return self.server.address

    def turn(self, request: bytes) -> bytes:
        """The merchant's day, the answer to a pickled TurnRequest (on the TurnServer's
        threads): made afresh first if it carries a start (its first day, or its actor had
        died), then its answer to the day's memory probe if there is one, then its decision
        (see tournaments.match.take_turn); the Turn goes back pickled.

        A merchant's turns never overlap: a turn the match gave up waiting for keeps its
        merchant until it ends (its answer is dropped), and the next one waits for it, within
        its own deadline."""
        arrived = time.monotonic()
        r: TurnRequest = pickle.loads(request)
        key = (r.match_key, r.merchant)
        with self.turning[key]:
            if r.start is not None:
                self.instances[key] = create(self.entry.kind, self.entry.params, r.start.options.for_contestant(self.entry.name))
                self.instances[key].reset(merchant=r.merchant, scenario=r.start.scenario, seed=r.start.seed)
            contestant = self.instances.get(key)
            if contestant is None:
                raise Forgotten(f"no state for {r.merchant!r} in match {r.match_key!r}")
            turn = take_turn(contestant, r.observation, r.probe, r.deadline, arrived)
        try:
            return pickle.dumps(turn, pickle.HIGHEST_PROTOCOL)
        except Exception:  # a decision only cloudpickle can write (a lambda, say): the market will refuse it as before
            return cloudpickle.dumps(turn)

    def finish(self, match_key: str, merchant: str) -> list[ModelCall]:
        """Forget the match; hand back the model calls made in it (after its last turn)."""
        with self.turning[(match_key, merchant)]:
            contestant = self.instances.pop((match_key, merchant), None)
        self.turning.pop((match_key, merchant), None)
        return contestant.calls() if contestant is not None else []


class HostClient(TurnClient):
    """A runner's client of one ContestantHost: turns over the direct connection
    (TurnClient), the rest through Ray."""

    def __init__(self, actor: Any):
        super().__init__(lambda: result(actor.channel.remote()))
        self.actor = actor

    def finish(self, match_key: str, merchant: str) -> asyncio.Future:
        return result(self.actor.finish.remote(match_key, merchant))


@ray.remote(num_cpus=0)
class MatchRunner:
    """Plays the matches of one tournament it is given by their specs; what they share (the
    scenarios, rules, contestants and hosts) it is given once, when it starts."""

    def __init__(
        self, working_dir: str, scenarios: dict[str, Scenario], rules: MatchRules, entries: dict[str, ContestantEntry], hosts: dict[str, Any]
    ):
        enter(working_dir)  # inline contestants of its matches may read files too
        self.scenarios, self.rules, self.entries = scenarios, rules, entries
        self.hosts = {name: HostClient(actor) for name, actor in hosts.items()}
        self.days = 0

    async def ready(self) -> bool:
        """Ready once connected to every host, rather than in the first day of play."""
        await asyncio.gather(*(host.connect() for host in self.hosts.values()))
        return True

    async def play(self, spec: MatchSpec) -> FinishedMatch | StoppedMatch:
        match = Match(spec, self.scenarios[spec.scenario], self.rules, self.entries, self.hosts)
        played = await match.play(on_day=self._count_day)
        return played.packed() if isinstance(played, FinishedMatch) else played

    async def days_played(self) -> int:
        """Days played by all matches of this runner so far (for the progress bar)."""
        return self.days

    def _count_day(self) -> None:
        self.days += 1


def start_host(entry: ContestantEntry) -> Any:
    return ContestantHost.remote(entry, os.getcwd())


def start_runners(
    count: int, scenarios: dict[str, Scenario], rules: MatchRules, entries: dict[str, ContestantEntry], hosts: dict[str, Any]
) -> list[Any]:
    return [MatchRunner.options(scheduling_strategy="SPREAD").remote(os.getcwd(), scenarios, rules, entries, hosts) for _ in range(count)]
