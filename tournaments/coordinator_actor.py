"""The run's call coordinator (contestants.calls.coordinator) as one Ray actor that every
process of the run checks in with: hosts, match runners and workers, on every node.

It lives on the driver's node and works in the folder `arena run` was started in, so the
response cache is that folder's `.arena-cache/` (or the `cache_dir` a contestant names)
whichever node a merchant's calls come from: a re-run replays from it wherever its merchants
land. Two calls (admit, report) cost a few milliseconds, which is little beside a model call.

Calls waiting for room at an endpoint wait inside `admit`; `report` and `status` run in a
concurrency group of their own, so however many calls wait, those that end can report back.
Ray runs each group on a loop of its own, so the coordinator's state lives on a loop of its
own too (a LocalCallCoordinator), which every method hands its work to.
A coordinator that is gone (its process died) stops the run's calls: what it held is lost, so
no call can be let through or paid for any more. So does one that does not answer: a caller
waits for an admission at most its ticket's patience and SLACK_S more, for the rest SLACK_S
(contestants.calls.coordinator.unanswered). What a call whose node died holds is released
as soon as Ray has found the node dead, not when its lease runs out: its match is played again
(tournaments.match.MatchLost) and asks the same requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from contestants.calls.coordinator import (
    SLACK_S,
    Admission,
    Budget,
    CallCoordinatorCore,
    CallsStopped,
    Failed,
    LocalCallCoordinator,
    Spend,
    Status,
    Ticket,
    unanswered,
)
from contestants.calls.types import Completion
from tournaments.cluster import enter, result

WAITING_CALLS = 100_000  # admits that may wait for room at once
NODE_CHECK_S = 2.0  # how often the coordinator looks for nodes that died under the calls it holds
GONE = "the run's call coordinator is gone (its process died)"


@ray.remote(  # type: ignore[call-overload]  # Ray's overloads of remote leave concurrency_groups out
    num_cpus=0, concurrency_groups={"waiting": WAITING_CALLS, "reporting": 64}
)
class CallCoordinatorActor:
    def __init__(self, working_dir: str, budget: Budget | None, spent: Spend, stop_after: int):
        enter(working_dir)
        self.coordinator = LocalCallCoordinator(CallCoordinatorCore(budget, spent, stop_after))
        self.watching = asyncio.run_coroutine_threadsafe(
            _release_calls_of_dead_nodes(self.coordinator.core), self.coordinator.loop
        )

    @ray.method(concurrency_group="reporting")
    def ready(self) -> bool:
        return True

    @ray.method(concurrency_group="waiting")
    async def admit(self, ticket: Ticket) -> Admission:
        return await self.coordinator.on_loop(self.coordinator.core.admit(ticket))

    @ray.method(concurrency_group="reporting")
    async def report(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        await self.coordinator.on_loop(self.coordinator.core.report(ticket, completion, failed))

    @ray.method(concurrency_group="reporting")
    async def status(self) -> Status:
        return await self.coordinator.current()


async def _release_calls_of_dead_nodes(core: CallCoordinatorCore) -> None:
    """Every NODE_CHECK_S, on the coordinator's loop: what the calls of callers on nodes that
    are no longer alive hold is released (CallCoordinatorCore.release_held_by)."""
    while True:
        await asyncio.sleep(NODE_CHECK_S)
        callers = core.held_by()
        if not callers:
            continue
        try:
            alive = await asyncio.to_thread(lambda: {node["NodeID"] for node in ray.nodes() if node["Alive"]})
        except Exception:  # Ray's control store out of reach for a moment: look again later
            continue
        core.release_held_by(callers - alive)


@functools.cache
def _this_node() -> str:
    return ray.get_runtime_context().get_node_id()


class RemoteCallCoordinator:
    """A process's way to the run's CallCoordinatorActor (picklable: it travels in RunOptions).
    Its tickets name this process's node as their caller."""

    def __init__(self, actor: Any):
        self.actor = actor

    def admit(self, ticket: Ticket) -> Admission:
        sent = dataclasses.replace(ticket, caller=_this_node())
        admission: Admission = _answer(self.actor.admit.remote(sent), ticket.patience + SLACK_S)
        return admission

    def report(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        _answer(self.actor.report.remote(ticket, completion, failed), SLACK_S)

    def status(self) -> Status:
        try:
            status: Status = _answer(self.actor.status.remote(), SLACK_S)
            return status
        except CallsStopped as exc:
            return Status(str(exc), Spend(), None)

    async def current(self) -> Status:
        """`status`, awaited on an event loop (a match runner's, the driver's)."""
        try:
            async with asyncio.timeout(SLACK_S):
                status: Status = await result(self.actor.status.remote())
                return status
        except TimeoutError:
            return Status(unanswered(SLACK_S), Spend(), None)
        except RayError:
            return Status(GONE, Spend(), None)


def _answer(ref: Any, seconds: float) -> Any:
    """The coordinator's answer to a call (`ref`) within `seconds`; CallsStopped if it does not
    come or the coordinator is gone."""
    try:
        return ray.get(ref, timeout=seconds)
    except GetTimeoutError:
        raise CallsStopped(unanswered(seconds)) from None
    except RayError:
        raise CallsStopped(GONE) from None


def start_call_coordinator(
    budget: Budget | None, spent: Spend, stop_after: int, working_dir: str
) -> RemoteCallCoordinator:
    """The run's call coordinator, on this (the driver's) node, working in `working_dir`."""
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return RemoteCallCoordinator(
        CallCoordinatorActor.options(scheduling_strategy=here).remote(  # type: ignore[attr-defined]  # see @ray.remote above
            working_dir, budget, spent, stop_after
        )
    )
