"""The run's desk for model calls (contestants.llm.desk) as one Ray actor that every process
of the run checks in at: hosts, match runners and workers, on every node.

It lives on the driver's node and works in the folder `arena run` was started in, so the
response cache is that folder's `.arena-cache/` (or the `cache_dir` a contestant names)
whichever node a merchant's calls come from: a re-run replays from it wherever its merchants
land. Two calls (admit, settle) cost a few milliseconds, which is little beside a model call.
"""

from __future__ import annotations

import os
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from contestants.llm.desk import Admission, Budget, DeskCore, Failed, Spend, Status, Ticket
from contestants.llm.types import Completion
from tournaments.cluster import result


@ray.remote(num_cpus=0)
class CallDesk:
    def __init__(self, working_dir: str, budget: Budget | None, spent: Spend, stop_after: int):
        os.chdir(working_dir)
        self.core = DeskCore(budget, spent, stop_after)

    async def admit(self, ticket: Ticket) -> Admission:
        return await self.core.admit(ticket)

    async def settle(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        await self.core.settle(ticket, completion, failed)

    def status(self) -> Status:
        return self.core.status()


class RemoteDesk:
    """A process's way to the run's CallDesk (picklable: it travels in RunOptions)."""

    def __init__(self, actor: Any):
        self.actor = actor

    def admit(self, ticket: Ticket) -> Admission:
        return ray.get(self.actor.admit.remote(ticket))

    def settle(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        ray.get(self.actor.settle.remote(ticket, completion, failed))

    def status(self) -> Status:
        return ray.get(self.actor.status.remote())

    async def current(self) -> Status:
        """`status`, awaited on an event loop (a match runner's, the driver's)."""
        return await result(self.actor.status.remote())


def start_desk(budget: Budget | None, spent: Spend, stop_after: int) -> RemoteDesk:
    """The run's desk, on this (the driver's) node, in this folder."""
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    actor = CallDesk.options(scheduling_strategy=here, max_concurrency=1000).remote(os.getcwd(), budget, spent, stop_after)
    return RemoteDesk(actor)
