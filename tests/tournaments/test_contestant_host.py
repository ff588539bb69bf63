"""A real ContestantHost as a match runner reaches it (HostClient): the turns and the match's
end go over the direct connection, and Ray is asked only where the host listens, until the
connection fails: then the end is asked through Ray, of the process Ray restarted."""

from __future__ import annotations

import asyncio
import os
import pickle
from typing import Any

import pytest
import ray

from contestants.base import Handed, RunOptions
from market.engine import Market
from market.scenario import load_scenario
from tests.doubles import LATENCY
from tournaments.channel import HostGone
from tournaments.config import ContestantEntry
from tournaments.hosts import ContestantHost, Forgotten, HostClient, Start, TurnRequest
from tournaments.plan import plan_contestants
from tournaments.seats import Turn

pytestmark = pytest.mark.usefixtures("ray_local")


class CountingActor:
    """An actor handle that notes the name of every method asked of it through Ray."""

    def __init__(self, actor: Any):
        self.actor, self.asked = actor, []

    def __getattr__(self, name: str) -> Any:
        self.asked.append(name)
        return getattr(self.actor, name)


def request(match_key: str, start: bool) -> bytes:
    scenario = load_scenario("price_war")
    market = Market(scenario, [("slow", "other")], 5)
    market.reset([1])
    observation = market.observations(market.view(), [0])[0]
    fresh = Start(scenario, 1, RunOptions()) if start else None
    return pickle.dumps(TurnRequest(match_key, "slow", observation, None, fresh, 10.0))


def test_the_end_of_a_match_goes_over_the_connection_and_through_ray_once_the_host_died():
    entry = ContestantEntry(name="slow", kind=LATENCY, params={"latency_s": 0.5})
    plan = plan_contestants([entry])["slow"]
    host = ContestantHost.remote(plan, os.getcwd())  # type: ignore[attr-defined]
    counting = CountingActor(host)
    client = HostClient(counting)

    async def play() -> None:
        turn: Turn = pickle.loads(await client.ask(request("m1", start=True)))
        assert not turn.late and turn.decision is not None
        handed, process = await client.finish("m1", "slow", plan.longest_turn)
        assert handed == Handed([], [], {}) and process == client.process
        assert counting.asked == ["channel"]  # where it listens, once
        with pytest.raises(Forgotten):  # the end made the host forget the merchant
            await client.ask(request("m1", start=False))

        # the end of a match asked while its last turn holds the merchant, and the process dies
        last_turn = asyncio.ensure_future(client.ask(request("m2", start=True)))
        await asyncio.sleep(0.1)  # the turn holds the merchant (for its 0.5 s) before the end asks
        end = asyncio.ensure_future(client.finish("m2", "slow", plan.longest_turn))
        await asyncio.sleep(0.2)
        ray.kill(host, no_restart=False)  # Ray starts another process
        with pytest.raises(HostGone):
            await last_turn
        handed, restarted = await end
        assert handed == Handed([], [], {}) and restarted != process  # the state went with the process
        # then asked through Ray, again while Ray restarts the host
        assert counting.asked[0] == "channel" and set(counting.asked[1:]) == {"finish"}

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(play())
    finally:
        loop.close()
        ray.kill(host)
