"""The run's call desk as a Ray actor (tournaments.calls): what every process of a run checks
in at, and what a call is told once the desk's process is gone."""

from __future__ import annotations

import os

import pytest
import ray

from contestants.llm.desk import Budget, Limits, Spend, Ticket
from contestants.llm.errors import CallsStopped
from tournaments.calls import GONE, start_desk

pytestmark = pytest.mark.usefixtures("ray_local")


def ticket(n: int) -> Ticket:
    return Ticket(str(n), "c", "openai/m", ("e",), Limits(concurrent=1), 10, None, "", 60.0)


def test_reports_get_through_while_calls_wait_for_room():
    """One place at the endpoint and more calls waiting for it than an async actor runs at
    once by default (1,000): the one holding the place can still report back (settle runs
    apart from the waiting admits), and the next call goes."""
    desk = start_desk(Budget(tokens=10**9), Spend(), 3, os.getcwd())
    ray.get(desk.actor.ready.remote())
    assert desk.admit(ticket(0)).stopped is None
    waiting = [desk.actor.admit.remote(ticket(n)) for n in range(1, 1201)]
    desk.settle(ticket(0), None, None)
    admitted, still = ray.wait(waiting, num_returns=1, timeout=30)  # whichever of them the place went to
    assert len(admitted) == 1 and len(still) == len(waiting) - 1
    first = ray.get(admitted[0])
    assert first.stopped is None and first.hit is None
    assert desk.status().stopped is None
    ray.kill(desk.actor)


def test_a_desk_that_is_gone_stops_the_calls():
    desk = start_desk(None, Spend(), 3, os.getcwd())
    ray.get(desk.actor.ready.remote())
    ray.kill(desk.actor)
    with pytest.raises(CallsStopped, match="call desk is gone"):
        desk.admit(ticket(0))
    assert desk.status().stopped == GONE
