"""The run's call coordinator as a Ray actor (tournaments.coordinator_actor): what every process of a run
checks in with, and what a call is told once the coordinator's process is gone or does not
answer."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time

import pytest
import ray
from ray.exceptions import ActorDiedError

import tournaments.coordinator_actor
from contestants.calls.coordinator import Admission, Budget, CallsStopped, Limits, Spend, Ticket, unanswered
from tournaments.coordinator_actor import GONE, RemoteCallCoordinator, start_call_coordinator

pytestmark = pytest.mark.usefixtures("ray_local")


def ticket(n: int, patience: float = 60.0) -> Ticket:
    return Ticket(str(n), "c", "openai/m", ("e",), Limits(concurrent=1), 10, None, "", 60.0, patience)


def test_a_ticket_names_the_node_it_was_made_on():
    sent = []

    class Actor:  # what RemoteCallCoordinator sends to the coordinator's actor
        class admit:
            @staticmethod
            def remote(made: Ticket):
                sent.append(made)
                return ray.put(Admission())

    RemoteCallCoordinator(Actor()).admit(ticket(0))
    assert [made.caller for made in sent] == [ray.get_runtime_context().get_node_id()]


def test_reports_get_through_while_calls_wait_for_room():
    """One place at the endpoint and more calls waiting for it than an async actor runs at
    once by default (1,000): the one holding the place can still report back (report runs
    apart from the waiting admits), and the next call goes."""
    coordinator = start_call_coordinator(Budget(tokens=10**9), Spend(), 3, os.getcwd())
    ray.get(coordinator.actor.ready.remote())
    assert coordinator.admit(ticket(0)).stopped is None
    waiting = [coordinator.actor.admit.remote(ticket(n)) for n in range(1, 1011)]  # 1,010 waiting
    coordinator.report(ticket(0), None, None)
    admitted, still = ray.wait(waiting, num_returns=1, timeout=30)  # whichever of them the place went to
    assert len(admitted) == 1 and len(still) == len(waiting) - 1
    first = ray.get(admitted[0])
    assert first.stopped is None and first.hit is None
    assert coordinator.status().stopped is None
    ray.kill(coordinator.actor)


def test_a_call_coordinator_that_is_gone_stops_the_calls():
    coordinator = start_call_coordinator(None, Spend(), 3, os.getcwd())
    ray.get(coordinator.actor.ready.remote())
    ray.kill(coordinator.actor)
    # ray.kill only asks: on a busy machine a call made at once can still be answered
    for _ in range(600):
        try:
            ray.get(coordinator.actor.ready.remote())
        except ActorDiedError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the call coordinator was still alive 30 s after ray.kill")
    with pytest.raises(CallsStopped, match="call coordinator is gone"):
        coordinator.admit(ticket(0))
    assert coordinator.status().stopped == GONE


def test_a_call_held_on_a_node_that_is_not_alive_is_released_before_its_lease(tmp_path):
    """A call admitted from a node Ray does not know alive (as after the node died) holds a
    request; the same request made from this node goes ahead once the coordinator has looked at
    the nodes (every NODE_CHECK_S), long before the first call's ten-minute lease runs out."""
    coordinator = start_call_coordinator(None, Spend(), 3, os.getcwd())
    ray.get(coordinator.actor.ready.remote())
    key = "d" * 64
    gone = dataclasses.replace(
        ticket(0), cache_key=key, cache_dir=str(tmp_path), lease=600.0, caller="ff" * 28
    )
    assert ray.get(coordinator.actor.admit.remote(gone)).stopped is None
    here = ray.get_runtime_context().get_node_id()
    again = dataclasses.replace(ticket(1), cache_key=key, cache_dir=str(tmp_path), caller=here)
    assert ray.get(coordinator.actor.admit.remote(again), timeout=60).hit is None
    coordinator.report(again, None, None)
    ray.kill(coordinator.actor)


def test_an_admission_whose_patience_runs_out_comes_back_late():
    """The endpoint's one place is held: a ticket with half a second of patience is told it
    is late (make no call) instead of waiting for the place, and holds nothing."""
    coordinator = start_call_coordinator(None, Spend(), 3, os.getcwd())
    assert coordinator.admit(ticket(0)) == Admission()
    assert coordinator.admit(ticket(1, patience=0.5)) == Admission(late=True)
    coordinator.report(ticket(0), None, None)
    assert coordinator.admit(ticket(2, patience=0.0)) == Admission()  # the late one took no place
    ray.kill(coordinator.actor)


@ray.remote(num_cpus=0)
class Silent:
    """A call coordinator that never answers (its loop stuck, say)."""

    async def admit(self, ticket: Ticket) -> Admission:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def status(self) -> None:
        await asyncio.sleep(3600)


def test_a_call_coordinator_that_does_not_answer_stops_the_calls(monkeypatch):
    """A caller waits for its admission its patience and SLACK_S more, then its calls stop with
    one line saying why; so does the run, which asks the status."""
    monkeypatch.setattr(tournaments.coordinator_actor, "SLACK_S", 1.0)
    coordinator = RemoteCallCoordinator(Silent.remote())  # type: ignore[attr-defined]
    with pytest.raises(CallsStopped) as stopped:
        coordinator.admit(ticket(0, patience=0.5))
    assert str(stopped.value) == unanswered(1.5)
    assert coordinator.status().stopped == unanswered(1.0)
    assert asyncio.run(coordinator.current()).stopped == unanswered(1.0)
    ray.kill(coordinator.actor)
