"""What one hosted turn costs, by the way it travels: run by hand, prints JSON. Not a test.

    python benchmarks/turns.py [--turns 2000] [--at-once 14]

A match runner asks a contestant host for a merchant's turn every day of every hosted match.
This asks an actor in another process for `--turns` answers to a turn-sized request (a
merchant's pickled Observation), `--at-once` in flight at a time (a runner's matches against
one host), two ways: as a call of the actor's method through Ray, and over the direct
connection arena uses (tournaments.channel). For each: the wall time per turn, and the CPU
the asking process and the answering one spend per turn, which is what a runner of many
matches, and a host of many merchants, pay.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import resource
import time
from typing import Any

import ray
from throughput import local_ray, machine

from market.engine import Market
from market.scenario import load_scenario
from tournaments.channel import Address, TurnClient, TurnServer
from tournaments.cluster import result


def request_bytes() -> bytes:
    """A merchant's turn as a runner sends it: its Observation, pickled."""
    market = Market(load_scenario("multi_product"), [("a", "b")])
    market.reset([1])
    market.advance()
    return pickle.dumps(market.observations(market.view(), [0])[0], pickle.HIGHEST_PROTOCOL)


def answer(request: bytes) -> bytes:
    """What the host does with a turn, apart from the merchant: read it, write an answer."""
    pickle.loads(request)
    return pickle.dumps({"operations": []}, pickle.HIGHEST_PROTOCOL)


@ray.remote(num_cpus=0)
class Host:
    def __init__(self) -> None:
        self.server = TurnServer(answer, threads=16, host="127.0.0.1")

    def channel(self) -> Address:
        return self.server.address

    def turn(self, request: bytes) -> bytes:
        return answer(request)

    def cpu(self) -> float:
        return time.process_time()


def own_cpu() -> float:
    """This process's CPU seconds, its threads included (Ray's own among them)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def measure(ask: Any, host: Any, request: bytes, turns: int, at_once: int) -> dict[str, float]:
    """Wall and CPU per turn of `turns` turns asked with `ask(request)`, `at_once` at a time."""
    slots = asyncio.Semaphore(at_once)

    async def one() -> None:
        async with slots:
            await ask(request)

    await asyncio.gather(*(one() for _ in range(min(turns, 100))))  # warm up
    host_before, before, started = await result(host.cpu.remote()), own_cpu(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(turns)))
    wall, asking = time.perf_counter() - started, own_cpu() - before
    answering = await result(host.cpu.remote()) - host_before
    return {
        "wall_ms_per_turn": round(1000 * wall / turns, 3),
        "asking_cpu_ms_per_turn": round(1000 * asking / turns, 3),
        "answering_cpu_ms_per_turn": round(1000 * answering / turns, 3),
    }


async def compare(turns: int, at_once: int) -> dict[str, Any]:
    host = Host.remote()  # type: ignore[attr-defined]
    request = request_bytes()
    address = await result(host.channel.remote())

    async def locate() -> Address:
        return address  # type: ignore[no-any-return]

    client = TurnClient(locate)
    await client.connect()

    async def by_ray(payload: bytes) -> bytes:
        return await result(host.turn.remote(payload))  # type: ignore[no-any-return]

    results = {}
    for name, ask in (("ray_actor_call", by_ray), ("direct_connection", client.ask)) * 2:
        results[name] = await measure(ask, host, request, turns, at_once)  # the second round counts
    return {"request_bytes": len(request), "turns": turns, "at_once": at_once, **results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--at-once", type=int, default=14, help="turns in flight (a runner's matches)")
    args = parser.parse_args()
    with local_ray():
        figures = asyncio.run(compare(args.turns, args.at_once))
    print(json.dumps({"machine": machine(), **figures}, indent=2))


if __name__ == "__main__":
    main()
