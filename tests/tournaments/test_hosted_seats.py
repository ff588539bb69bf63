"""Whose fault a hosted merchant's missing turn is: a host stand-in (no Ray) that answers,
hangs, closes its connection, forgets or moves, and a cluster whose nodes die when the test
says. A turn lost with a node is never the merchant's fault: the seat is lost (its match is
played again); one lost on a node that lives on is."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable
from typing import TypeVar

import pytest
from ray.exceptions import ActorUnavailableError

import tournaments.hosts as hosts
import tournaments.plan
from contestants.base import Handed, RunOptions
from contestants.baselines import FixedPrice, FixedPriceParams
from market.scenario import load_scenario
from market.types import Decision
from tournaments.channel import HostGone
from tournaments.hosts import ContestantHost, Forgotten, HostedSeat, HostProcess, Start, TurnRequest
from tournaments.plan import ContestantPlan
from tournaments.seats import SeatLost, Turn, TurnStuck

T = TypeVar("T")
DEADLINE = 0.05
HEAD, WORKER = HostProcess("head-id", "10.0.0.1", "a"), HostProcess("worker-id", "10.0.0.2", "b")
RESTARTED = HostProcess("head-id", "10.0.0.1", "c")  # the host again, on the head, after its node died


class Cluster:
    """The nodes found dead so far, as Ray's control store would answer."""

    def __init__(self) -> None:
        self.dead: set[str] = set()
        self.asked = 0

    async def dead_nodes(self, ids: set[str]) -> set[str]:
        self.asked += 1
        addresses = {HEAD.node: HEAD.address, WORKER.node: WORKER.address}
        return {addresses[i] for i in ids if i in self.dead}


class Host:
    """A HostClient stand-in: each turn does the next of `script` ("answer", "hang", "gone",
    "forgotten"), as `process`; the requests it got are kept."""

    def __init__(self, process: HostProcess, script: list[str]):
        self.process, self.script = process, script
        self.requests: list[TurnRequest] = []

    async def ask(self, request: bytes) -> bytes:
        self.requests.append(pickle.loads(request))
        action = self.script.pop(0)
        if action == "hang":
            await asyncio.sleep(10)
        if action == "gone":
            raise HostGone("the connection to the contestant host closed: its process died")
        if action == "forgotten":
            raise Forgotten("no state")
        if action == "unreachable":  # Ray cannot reach the actor to ask where it listens
            raise ActorUnavailableError("The actor is temporarily unavailable", None)
        return pickle.dumps(Turn(Decision(), late=False))

    async def finish(self, match_key: str, merchant: str, longest_turn: float) -> tuple[Handed, HostProcess]:
        if self.script and self.script[0] == "stuck":
            raise TurnStuck(f"the turn of {merchant} in match {match_key} had not ended")
        return Handed([], [], {}), self.process


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    found = Cluster()
    monkeypatch.setattr(hosts, "dead_nodes", found.dead_nodes)
    monkeypatch.setattr(tournaments.plan, "START_ALLOWANCE_S", 0.0)  # a first turn waits its deadline alone
    return found


def seat(host: Host) -> HostedSeat:
    start = Start(load_scenario("price_war"), seed=1, options=RunOptions())
    plan = ContestantPlan("slow", FixedPrice, FixedPriceParams(), hosted=True, deadline=DEADLINE)
    return HostedSeat(host, "m", start, plan)  # type: ignore[arg-type]


def run(work: Awaitable[T]) -> T:
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(work)
    finally:
        loop.close()


OBSERVATION = None  # the stand-in host never reads it


def test_a_turn_answered_in_time_is_a_decision_and_asks_the_cluster_nothing(cluster):
    host = Host(WORKER, ["answer", "answer"])
    merchant = seat(host)

    async def play() -> None:
        for _ in range(2):
            turn = await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
            assert turn.fault is None and turn.decision == Decision()
        assert await merchant.finish() == Handed([], [], {})

    run(play())
    assert [r.start is not None for r in host.requests] == [True, False]  # made once, on its first turn
    assert cluster.asked == 0


def test_a_slow_merchant_on_a_live_node_is_at_fault(cluster):
    merchant = seat(Host(WORKER, ["answer", "hang", "answer"]))

    async def play() -> list:
        turns = [await merchant.turn(OBSERVATION, None) for _ in range(3)]  # type: ignore[arg-type]
        await merchant.finish()
        return turns

    turns = run(play())
    assert [t.fault.kind if t.fault else None for t in turns] == [None, "timeout", None]


def test_a_turn_that_timed_out_on_a_node_found_dead_later_loses_the_seat_when_the_match_ends(cluster):
    """The node dies during a turn: the turn times out long before Ray finds the node dead, so
    it looks like the merchant's fault for now; once the host answers again (restarted
    elsewhere), the node is known dead and the match is lost, not scored with that fault."""
    host = Host(WORKER, ["answer", "hang"])
    merchant = seat(host)

    async def play() -> None:
        await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
        turn = await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
        assert turn.fault is not None and turn.fault.kind == "timeout"
        cluster.dead.add(WORKER.node)
        host.process = RESTARTED
        await merchant.finish()

    with pytest.raises(SeatLost, match=r"a node that died \(10\.0\.0\.2\)"):
        run(play())


def test_a_turn_that_fails_on_a_node_already_found_dead_loses_the_seat_at_once(cluster):
    cluster.dead.add(WORKER.node)
    merchant = seat(Host(WORKER, ["hang"]))
    with pytest.raises(SeatLost, match="10.0.0.2"):
        run(merchant.turn(OBSERVATION, None))  # type: ignore[arg-type]


def test_a_match_that_starts_while_its_hosts_node_is_dying_is_lost_not_faulted(cluster):
    """Its first turn goes to the host process the runner knew, on the node that just died,
    and times out; Ray finds the node dead and restarts the host before the match ends."""
    host = Host(WORKER, ["hang", "answer", "answer"])
    merchant = seat(host)

    async def play() -> None:
        assert (await merchant.turn(OBSERVATION, None)).fault.kind == "timeout"  # type: ignore[arg-type, union-attr]
        cluster.dead.add(WORKER.node)
        host.process = RESTARTED
        for _ in range(2):
            assert (await merchant.turn(OBSERVATION, None)).fault is None  # type: ignore[arg-type]
        await merchant.finish()

    with pytest.raises(SeatLost):
        run(play())


def test_a_host_that_crashed_on_a_live_node_is_the_merchants_fault_and_it_starts_afresh(cluster):
    """A contestant that kills its own process (the chaos kind): Ray restarts the host on the
    same, living node; the merchant's turn is an actor_died fault and it is made again."""
    host = Host(WORKER, ["answer", "gone", "answer", "answer"])
    merchant = seat(host)

    async def play() -> list:
        turns = [await merchant.turn(OBSERVATION, None)]  # type: ignore[arg-type]
        turns.append(await merchant.turn(OBSERVATION, None))  # type: ignore[arg-type]
        host.process = HostProcess(WORKER.node, WORKER.address, "again")
        turns += [await merchant.turn(OBSERVATION, None) for _ in range(2)]  # type: ignore[arg-type]
        await merchant.finish()
        return turns

    turns = run(play())
    assert [t.fault.kind if t.fault else None for t in turns] == [None, "actor_died", None, None]
    assert [r.start is not None for r in host.requests] == [True, False, True, False]


def test_a_host_that_forgot_the_merchant_after_its_node_died_loses_the_seat(cluster):
    host = Host(WORKER, ["answer", "forgotten"])
    merchant = seat(host)

    async def play() -> None:
        await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
        cluster.dead.add(WORKER.node)
        host.process = RESTARTED
        await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]

    with pytest.raises(SeatLost):
        run(play())


def test_a_host_restarted_elsewhere_after_the_last_turn_loses_the_merchants_calls_and_the_seat(cluster):
    host = Host(WORKER, ["answer", "answer"])
    merchant = seat(host)

    async def play() -> None:
        for _ in range(2):
            await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
        cluster.dead.add(WORKER.node)
        host.process = RESTARTED  # its state, and the calls it made, went with the node
        await merchant.finish()

    with pytest.raises(SeatLost):
        run(play())


def test_a_runner_that_never_reached_a_host_lost_with_its_node_loses_the_seat(cluster):
    """A runner started in place of one that died with the worker has not reached the hosts
    yet: its client knows the host process the run last knew of, on the worker, and a first
    turn that cannot reach the host is treated as one of that process."""
    cluster.dead.add(WORKER.node)
    with pytest.raises(SeatLost, match="10.0.0.2"):
        run(seat(Host(WORKER, ["unreachable"])).turn(OBSERVATION, None))  # type: ignore[arg-type]


def test_a_host_unreachable_for_a_moment_on_a_live_node_is_the_merchants_fault(cluster):
    merchant = seat(Host(WORKER, ["unreachable", "answer"]))

    async def play() -> list:
        return [await merchant.turn(OBSERVATION, None) for _ in range(2)]  # type: ignore[arg-type]

    assert [t.fault.kind if t.fault else None for t in run(play())] == ["actor_died", None]


def test_a_host_waits_for_a_merchants_busy_turn_no_longer_than_the_match_does(monkeypatch):
    """The merchant's turn under way does not end: the host does not ask the next turn once
    the match has stopped waiting for it (it is late, unasked), and the match's end waits for
    the busy turn at most the plan's longest turn (TurnStuck), then hands over once it ends."""
    monkeypatch.setattr(tournaments.plan, "START_ALLOWANCE_S", 0.0)
    host = object.__new__(ContestantHost.__ray_metadata__.modified_class.__mro__[1])  # no Ray
    host.plan = ContestantPlan("slow", FixedPrice, FixedPriceParams(), hosted=True, deadline=DEADLINE)
    host.instances, host.turning, host.process = {}, defaultdict(threading.Lock), WORKER
    busy = host.turning[("m", "slow")]
    busy.acquire()  # a turn under way
    request = TurnRequest("m", "slow", OBSERVATION, None, None, DEADLINE)  # type: ignore[arg-type]
    assert host.turn(request, time.monotonic()) == Turn(None, late=True)
    with pytest.raises(TurnStuck, match="the turn of slow in match m had not ended 0.1 s"):
        host.finish("m", "slow")
    busy.release()  # it ends
    assert host.finish("m", "slow") == (Handed.of(None), WORKER)


@pytest.mark.parametrize("node_died", [False, True])
def test_a_merchant_whose_last_turn_does_not_end_stops_the_run_unless_its_node_died(cluster, node_died):
    """The host says the merchant's last turn outlasted every bound: that stops the run
    (TurnStuck), unless the host was on a node found dead meanwhile: then the seat is lost."""
    host = Host(WORKER, ["answer", "stuck"])
    merchant = seat(host)
    if node_died:
        cluster.dead.add(WORKER.node)

    async def play() -> None:
        await merchant.turn(OBSERVATION, None)  # type: ignore[arg-type]
        await merchant.finish()

    with pytest.raises(SeatLost if node_died else TurnStuck):
        run(play())
