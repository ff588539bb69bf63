"""The Ray actors of a run: a ContestantHost for each contestant that needs isolation, and a
few MatchRunners that play the matches those contestants are in.

A ContestantHost is one process per such contestant (it holds a model, is slow, or may crash
its process). It keeps that contestant's state for every match it is in, keyed by (match key,
merchant), and answers the matches' turns on a pool of threads, so one slow contestant answers
many matches at once. A match has one turn a day with each of its hosted merchants; the turns
go over a direct connection from the runner (tournaments.channel), the rest through Ray.
Ray restarts a host if its process dies; the match then starts its merchant afresh, unless
the process died with its node: the match is then played again (tournaments.match.MatchLost).

A MatchRunner plays matches with hosted contestants as coroutines on its event loop: such a
match mostly waits for its contestants' answers, so one process plays many side by side. A run
starts about one runner per CPU, placed on the nodes in proportion to their CPUs (as the hosts
are), so the market steps and turns of many matches are spread over the cores and the driver
only hands out matches and records the results.
"""

from __future__ import annotations

import asyncio
import functools
import os
import pickle
import threading
import time
from collections import defaultdict
from typing import Any

import ray
from ray import cloudpickle
from ray.exceptions import ActorUnavailableError

from contestants.base import Contestant
from contestants.kinds import contestant_class, create
from market.calls import ModelCall
from market.scenario import Scenario
from results.records import FinishedMatch, StoppedMatch
from tournaments.channel import Address, TurnClient, TurnServer
from tournaments.cluster import Place, enter, result, spread
from tournaments.config import ContestantEntry
from tournaments.match import Forgotten, Match, MatchRules, TurnRequest, take_turn
from tournaments.schedule import MatchSpec

HOST_THREADS = 64
FINISH_RETRY_S = 0.5
FINISH_PATIENCE_S = 120.0  # well past the time Ray takes to find a node dead (its health checks)


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, entry: ContestantEntry, working_dir: str):
        enter(working_dir)
        # Import the contestant's code now, so that `ready` means ready to play: otherwise
        # every host imports it on its first call, all at once, inside the first day of play.
        contestant_class(entry.kind)
        self.entry = entry
        self.instances: dict[tuple[str, str], Contestant] = {}
        self.turning: dict[tuple[str, str], threading.Lock] = defaultdict(
            threading.Lock
        )  # one turn at a time per merchant
        self.server = TurnServer(self.turn, HOST_THREADS, ray.util.get_node_ip_address())
        self.node = ray.get_runtime_context().get_node_id()

    def ready(self) -> bool:
        return True

    def channel(self) -> tuple[Address, str]:
        """Where the runners connect for the turns, the token they must send first, and the
        node this host runs on."""
        return self.server.address, self.node

    def turn(self, request: bytes) -> bytes:
        """The merchant's day, the answer to a pickled TurnRequest (on the TurnServer's
        threads): made afresh first if it carries a start (its first day, or its actor had
        died), then its answer to the day's memory probe if there is one, then its decision
        (see tournaments.match.take_turn); the Turn goes back pickled, with this host's node.

        A merchant's turns never overlap: a turn the match gave up waiting for keeps its
        merchant until it ends (its answer is dropped), and the next one waits for it, within
        its own deadline."""
        arrived = time.monotonic()
        r: TurnRequest = pickle.loads(request)
        key = (r.match_key, r.merchant)
        with self.turning[key]:
            if r.start is not None:
                self.instances[key] = create(
                    self.entry.kind, self.entry.params, r.start.options.for_contestant(self.entry.name)
                )
                self.instances[key].reset(merchant=r.merchant, scenario=r.start.scenario, seed=r.start.seed)
            contestant = self.instances.get(key)
            if contestant is None:
                raise Forgotten(f"no state for {r.merchant!r} in match {r.match_key!r}")
            turn = take_turn(contestant, r.observation, r.probe, r.deadline, arrived)._replace(node=self.node)
        try:
            return pickle.dumps(turn, pickle.HIGHEST_PROTOCOL)
        except (
            Exception
        ):  # a decision only cloudpickle can write (a lambda, say): the market will refuse it as before
            return cloudpickle.dumps(turn)

    def finish(self, match_key: str, merchant: str) -> list[ModelCall]:
        """Forget the match; hand back the model calls made in it (after its last turn)."""
        with self.turning[(match_key, merchant)]:
            contestant = self.instances.pop((match_key, merchant), None)
        self.turning.pop((match_key, merchant), None)
        return contestant.calls() if contestant is not None else []


class HostClient(TurnClient):
    """A runner's client of one ContestantHost: turns over the direct connection
    (TurnClient), the rest through Ray. `node`: the node of the host process it last
    reached (None before it first has)."""

    def __init__(self, actor: Any):
        super().__init__(self._locate)
        self.actor = actor
        self.node: str | None = None

    async def _locate(self) -> Address:
        address, self.node = await result(self.actor.channel.remote())
        return address

    async def finish(self, match_key: str, merchant: str) -> list[ModelCall]:
        """The merchant's model calls in the match (ContestantHost.finish), asked again while
        Ray cannot reach the host, for up to FINISH_PATIENCE_S: if its node died, the answer
        then comes from the host Ray restarted elsewhere, which Ray does only once it has
        recorded the node as dead, so the match's check for lost nodes that follows sees it."""
        deadline = time.monotonic() + FINISH_PATIENCE_S
        while True:
            try:
                return await result(self.actor.finish.remote(match_key, merchant))
            except ActorUnavailableError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(FINISH_RETRY_S)


@ray.remote(num_cpus=0)
class MatchRunner:
    """Plays the matches of one tournament it is given by their specs; what they share (the
    scenarios, rules, contestants and hosts) it is given once, when it starts."""

    def __init__(
        self,
        working_dir: str,
        scenarios: dict[str, Scenario],
        rules: MatchRules,
        entries: dict[str, ContestantEntry],
        hosts: dict[str, Any],
    ):
        enter(working_dir)  # inline contestants of its matches may read files too
        self.scenarios, self.rules, self.entries = scenarios, rules, entries
        self.hosts = {name: HostClient(actor) for name, actor in hosts.items()}
        self.days_done = 0  # of the matches it finished
        self.days_in_play: dict[str, int] = {}  # by match key

    async def ready(self) -> bool:
        """Ready once connected to every host, rather than in the first day of play."""
        await asyncio.gather(*(host.connect() for host in self.hosts.values()))
        return True

    async def play(self, spec: MatchSpec) -> FinishedMatch | StoppedMatch:
        """The match played (a MatchLost is not: its days are not counted, it is played again)."""
        match = Match(spec, self.scenarios[spec.scenario], self.rules, self.entries, self.hosts)
        self.days_in_play[spec.key] = 0
        try:
            played = await match.play(on_day=functools.partial(self._count_day, spec.key))
            self.days_done += self.days_in_play[spec.key]
        finally:
            del self.days_in_play[spec.key]
        return played.packed() if isinstance(played, FinishedMatch) else played

    async def days_played(self) -> tuple[int, int]:
        """Days played so far by the matches this runner finished, and by those in play (for
        the progress bar)."""
        return self.days_done, sum(self.days_in_play.values())

    def _count_day(self, key: str) -> None:
        self.days_in_play[key] += 1


def start_hosts(entries: list[ContestantEntry]) -> dict[str, Any]:
    """A host for each of `entries`, spread over the cluster's nodes as the runners are: a host
    holds a model and the state of all its contestant's matches."""
    return {
        entry.name: ContestantHost.options(**place.options()).remote(entry, os.getcwd())
        for entry, place in zip(entries, spread(len(entries)))
    }


def start_runner(
    place: Place,
    scenarios: dict[str, Scenario],
    rules: MatchRules,
    entries: dict[str, ContestantEntry],
    hosts: dict[str, Any],
) -> Any:
    return MatchRunner.options(**place.options()).remote(os.getcwd(), scenarios, rules, entries, hosts)
