"""Hosted merchants: a Ray actor (a ContestantHost) for each contestant that needs one, and
the seats through which the match runners' matches reach it (HostedSeat).

A ContestantHost is one process per such contestant (it holds a model, is slow, or may crash
its process). It keeps that contestant's state for every match it is in, keyed by (match key,
merchant), and answers the matches' turns on a pool of threads, so one slow contestant answers
many matches at once. The turns, and the match's end (`finish`), go over a direct connection
from each runner (tournaments.channel); everything else through Ray.

Ray restarts a host whose process dies. Whose fault that is decides what happens:
- the host's process died on a machine that lives on (a contestant that crashes it): the
  merchant's turn is a fault (`actor_died`) and it starts afresh on its next turn;
- the process that held the merchant's state, or that a turn which failed or never came back
  was asked of, was on a node that died: the match is lost (SeatLost) and played again from
  its start, whatever the turns of the meantime recorded. A turn can time out long before Ray
  finds the node dead (its health checks take seconds), so such doubts are kept and resolved
  when the match ends: the host then answers (`finish`) only once Ray has restarted it, which
  it does only once it has found the old node dead.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import secrets
import threading
import time
from collections import defaultdict
from typing import Any, NamedTuple

import ray
from ray import cloudpickle
from ray.exceptions import ActorUnavailableError, RayActorError

from contestants.base import Contestant, Handed, Question, RunOptions
from contestants.calls.coordinator import SLACK_S, CallsStopped
from market.scenario import Scenario
from market.types import Observation
from tournaments.channel import Address, HostGone, TurnClient, TurnServer
from tournaments.cluster import dead_nodes, enter, result, spread
from tournaments.plan import ContestantPlan, turn_wait
from tournaments.seats import Seat, SeatFault, SeatLost, SeatTurn, Turn, TurnStuck, describe, late, take_turn

HOST_THREADS = 64
FINISH_RETRY_S = 0.5
FINISH_PATIENCE_S = 120.0  # well past the time Ray takes to find a node dead (its health checks)


class HostProcess(NamedTuple):
    """One process of a host: Ray restarts a host in a new one, on the same node or another."""

    node: str  # Ray's node id
    address: str  # the node's address, for messages
    id: str


class Start(NamedTuple):
    """What a host makes a merchant's fresh match state from."""

    scenario: Scenario
    seed: int
    options: RunOptions


class TurnRequest(NamedTuple):
    """What a match asks of a hosted merchant for one day (ContestantHost.turn)."""

    match_key: str
    merchant: str
    observation: Observation
    question: Question | None
    start: Start | None  # given when the merchant needs a fresh state
    deadline: float | None  # None: as long as it takes

    @property
    def wait(self) -> float | None:
        """How long the match waits for this turn's answer (tournaments.plan.turn_wait)."""
        return turn_wait(self.deadline, self.question is not None, self.start is not None)


class FinishRequest(NamedTuple):
    """What a match asks of a hosted merchant after its last day (ContestantHost.finish)."""

    match_key: str
    merchant: str


class Forgotten(LookupError):
    """The host has no state for the merchant: its process died (in another match's turn, or
    with its node) and Ray restarted it since this match's last turn."""


@ray.remote(num_cpus=0, max_restarts=-1)
class ContestantHost:
    def __init__(self, plan: ContestantPlan, working_dir: str):
        enter(working_dir)
        self.plan = plan
        self.instances: dict[tuple[str, str], Contestant] = {}
        # one turn at a time per merchant
        self.turning: dict[tuple[str, str], threading.Lock] = defaultdict(threading.Lock)
        self.server = TurnServer(self.answer, HOST_THREADS, ray.util.get_node_ip_address())
        node = ray.get_runtime_context().get_node_id()
        self.process = HostProcess(node, ray.util.get_node_ip_address(), secrets.token_hex(8))

    def ready(self) -> HostProcess:
        """This process, once started."""
        return self.process

    def channel(self) -> tuple[Address, HostProcess]:
        """Where the runners connect for the turns (with the token they must send first), and
        this process."""
        return self.server.address, self.process

    def answer(self, request: bytes) -> bytes:
        """The reply to a pickled TurnRequest (a Turn) or FinishRequest (what `finish`
        hands back), pickled, on the TurnServer's threads."""
        arrived = time.monotonic()
        r: TurnRequest | FinishRequest = pickle.loads(request)
        reply = (
            self.finish(r.match_key, r.merchant) if isinstance(r, FinishRequest) else self.turn(r, arrived)
        )
        try:
            return pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception:  # a decision only cloudpickle can write (a lambda, say): the market refuses it
            written: bytes = cloudpickle.dumps(reply)
            return written

    def turn(self, r: TurnRequest, arrived: float) -> Turn:
        """The merchant's day, asked at `arrived`: made afresh first if the request carries a
        start, then its answer to the day's question if there is one, then its decision
        (tournaments.seats.take_turn).

        A merchant's turns never overlap: a turn the match gave up waiting for keeps its
        merchant until it ends (its answer is dropped), and the next one waits for it, within
        its own deadline. One still under way when the match stops waiting for this one
        (TurnRequest.wait) leaves this one unasked: it is late."""
        key = (r.match_key, r.merchant)
        turning = self.turning[key]
        if not _acquired(turning, None if r.wait is None else max(0.0, arrived + r.wait - time.monotonic())):
            return Turn(None, late=True)
        try:
            if r.start is not None:
                self.instances[key] = self.plan.make(r.start.options)
                self.instances[key].reset(merchant=r.merchant, scenario=r.start.scenario, seed=r.start.seed)
            contestant = self.instances.get(key)
            if contestant is None:
                raise Forgotten(f"no state for {r.merchant!r} in match {r.match_key!r}")
            return take_turn(contestant, r.observation, r.question, r.deadline, arrived)
        finally:
            turning.release()

    def finish(self, match_key: str, merchant: str) -> tuple[Handed, HostProcess]:
        """Forget the match; hand back the model calls made in it and their transcript (after
        its last turn, waited for at most its plan's longest turn: TurnStuck), and this
        process."""
        turning = self.turning[(match_key, merchant)]
        if not _acquired(turning, longest := self.plan.longest_turn):
            assert longest is not None  # (without a limit, the lock is waited for as long as it takes)
            raise TurnStuck(stuck(merchant, match_key, longest))
        try:
            contestant = self.instances.pop((match_key, merchant), None)
        finally:
            turning.release()
        self.turning.pop((match_key, merchant), None)
        return Handed.of(contestant), self.process


def _acquired(lock: threading.Lock, seconds: float | None) -> bool:
    """Whether `lock` was taken within `seconds` (None: waited for as long as it takes)."""
    return lock.acquire(timeout=-1 if seconds is None else seconds)


def silent(merchant: str, match_key: str, seconds: float) -> str:
    """Why the run stops when a merchant's host does not hand over its match (TurnStuck)."""
    return f"the host of {merchant} did not hand over match {match_key} within {seconds:g} s"


def stuck(merchant: str, match_key: str, seconds: float) -> str:
    """Why the run stops when a merchant's turn does not end (TurnStuck)."""
    return (
        f"the turn of {merchant} in match {match_key} had not ended {seconds:g} s after the match's end "
        "(its contestant outlasts its deadline and its own timeouts)"
    )


class HostClient(TurnClient):
    """A runner's client of one ContestantHost, shared by the runner's matches: turns over the
    direct connection (TurnClient), the rest through Ray. `process`: the host process it last
    reached, or, before it first has, the one the run last knew of (a runner started in place
    of one that died may fail to reach a host that died with it: the failure is treated as
    one of that process)."""

    def __init__(self, actor: Any, process: HostProcess | None = None):
        super().__init__(self._locate)
        self.actor = actor
        self.process = process

    async def _locate(self) -> Address:
        address: Address
        address, self.process = await result(self.actor.channel.remote())
        return address

    async def finish(
        self, match_key: str, merchant: str, longest_turn: float | None
    ) -> tuple[Handed, HostProcess]:
        """ContestantHost.finish, asked over the connection (every match asks it of every
        hosted merchant at its end, so through Ray it would cost a run's last matches tens of
        milliseconds). If the connection fails, asked through Ray, and again while Ray cannot
        reach the host, for up to FINISH_PATIENCE_S: if its node died, the answer then comes
        from the host Ray restarted elsewhere, which Ray does only once it has found the node
        dead. Each ask waits for the merchant's turn under way at most `longest_turn` and
        SLACK_S more for the answer: TurnStuck (None: as long as it takes)."""
        seconds = None if longest_turn is None else longest_turn + SLACK_S
        try:
            async with asyncio.timeout(seconds):
                handed: tuple[Handed, HostProcess] = pickle.loads(
                    await self.ask(pickle.dumps(FinishRequest(match_key, merchant), pickle.HIGHEST_PROTOCOL))
                )
            return handed
        except (HostGone, RayActorError):  # its process died, or Ray cannot reach it to ask where it listens
            pass
        except TimeoutError:
            assert seconds is not None  # (no limit: never timed out)
            raise TurnStuck(silent(merchant, match_key, seconds)) from None
        deadline = time.monotonic() + FINISH_PATIENCE_S
        while True:
            try:
                async with asyncio.timeout(seconds):
                    handed = await result(self.actor.finish.remote(match_key, merchant))
                return handed
            except TimeoutError:
                assert seconds is not None
                raise TurnStuck(silent(merchant, match_key, seconds)) from None
            except ActorUnavailableError:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(FINISH_RETRY_S)


class HostedSeat(Seat):
    """A merchant played by its contestant's host. Its state there is made with its first
    turn, and again after its host's process died. Failures are handled as the module says:
    `doubted` holds the host processes a failure may have lost the merchant's state with."""

    def __init__(self, host: HostClient, match_key: str, start: Start, plan: ContestantPlan):
        self.host, self.key, self.start, self.plan = host, match_key, start, plan
        self.name, self.deadline = plan.name, plan.deadline
        self.fresh = True  # its next turn makes its state afresh
        self.holder: HostProcess | None = None  # the process holding its state
        self.doubted: set[HostProcess] = set()

    async def turn(self, observation: Observation, question: Question | None) -> SeatTurn:
        start = self.start if self.fresh else None
        if start is not None:
            question = None  # made afresh, it remembers nothing
        request = TurnRequest(self.key, self.name, observation, question, start, self.deadline)
        asked_of = self.host.process
        try:
            async with asyncio.timeout(request.wait):  # no task of its own, as wait_for would make
                reply = await self.host.ask(pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
        except TimeoutError:
            return await self._failed(asked_of, late(self.deadline))
        except CallsStopped:
            raise
        except (HostGone, RayActorError, Forgotten):
            self.fresh = True
            return await self._failed(asked_of, SeatFault("actor_died", "its actor process died"))
        except Exception as exc:
            return SeatTurn(fault=SeatFault("error", describe(exc)))
        turn: Turn = pickle.loads(reply)
        if start is not None:
            self.fresh, self.holder = False, self.host.process
        recalled = turn.recalled if question is not None else None
        if turn.late:
            return SeatTurn(None, recalled, late(self.deadline))
        return SeatTurn(turn.decision, recalled)

    async def _failed(self, asked_of: HostProcess | None, fault: SeatFault) -> SeatTurn:
        """A turn that failed or never came back: lost if a process it may have lost the
        merchant's state with is on a node found dead, else the merchant's fault (for now)."""
        self.doubted.update(p for p in (asked_of, self.host.process, self.holder) if p is not None)
        await self._raise_if_lost()
        return SeatTurn(fault=fault)

    async def _raise_if_lost(self) -> None:
        """SeatLost if a process in `doubted` is on a node found dead."""
        dead = await dead_nodes({process.node for process in self.doubted})
        if dead:
            raise SeatLost(f"a host of its merchants was on a node that died ({', '.join(sorted(dead))})")

    async def finish(self) -> Handed:
        try:
            handed, process = await self.host.finish(self.key, self.name, self.plan.longest_turn)
        except TurnStuck:  # unless its host was on a node that died meanwhile
            self.doubted.update(p for p in (self.host.process, self.holder) if p is not None)
            await self._raise_if_lost()
            raise
        except Exception:  # the host died for good: its log went with it
            handed, process = Handed([], [], {}), None
        if self.holder is not None and process != self.holder:  # its state did not outlive the match
            self.doubted.add(self.holder)
        if self.doubted:
            await self._raise_if_lost()
        return handed


def hosted_seats(hosts: dict[str, HostClient]) -> Any:
    """A SeatMaker (tournaments.match) that seats the contestants with a host in `hosts` there,
    and the rest inline."""
    from tournaments.match import inline_seat

    def make_seat(
        plan: ContestantPlan, match_key: str, scenario: Scenario, seed: int, options: RunOptions
    ) -> Seat:
        host = hosts.get(plan.name)
        if host is None:
            return inline_seat(plan, match_key, scenario, seed, options)
        return HostedSeat(host, match_key, Start(scenario, seed, options.for_match(match_key)), plan)

    return make_seat


def start_hosts(plans: list[ContestantPlan]) -> dict[str, Any]:
    """A host for each of `plans`, spread over the cluster's nodes as the runners are: a host
    holds a model and the state of all its contestant's matches."""
    return {
        plan.name: ContestantHost.options(**place.options()).remote(plan, os.getcwd())  # type: ignore[attr-defined]
        for plan, place in zip(plans, spread(len(plans)))
    }
