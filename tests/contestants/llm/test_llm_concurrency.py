"""max_concurrent_calls: however many threads call, at most that many requests reach one
endpoint at once, counted at a slow loopback server; and callers whose deadlines pass while
they wait or mid-call all end, leaving nothing held."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from contestants.base import DeadlinePassed
from contestants.calls.coordinator import Admission, Limits, LocalCallCoordinator, Ticket
from contestants.calls.types import CompletionRequest, Message
from contestants.llm import get_provider

ANSWER = {"operations": []}


class SlowServer:
    """Answers `answer` (a chat completion) after `delay` seconds, or, given `meet`, once that
    many requests are in flight (a 500 if they never are); records the most requests it ever
    had in flight at once."""

    def __init__(self, answer: dict, delay: float, meet: int | None = None):
        self.answer, self.delay = answer, delay
        self.meeting = threading.Barrier(meet, timeout=30) if meet else None
        self.in_flight = self.most = self.served = 0
        self.lock = threading.Lock()
        self.base_url = ""

    def respond(self, path: str, headers: object, body: bytes) -> tuple[int, dict, dict]:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        if self.meeting is not None:
            try:
                self.meeting.wait()
            except threading.BrokenBarrierError:
                return 500, {"error": {"message": "the requests did not overlap"}}, {}
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
            self.served += 1
        return 200, self.answer, {}


@pytest.fixture
def slow_server(chat_completion, loopback):
    """Starts SlowServers on loopback."""

    def start(delay: float = 0.3, meet: int | None = None) -> SlowServer:
        server = SlowServer(chat_completion(ANSWER), delay, meet)
        server.base_url = f"{loopback(server.respond)}/v1"
        return server

    return start


def request(n: int) -> CompletionRequest:
    return CompletionRequest(
        messages=(Message(role="user", content=f"day {n}"),), json_schema={"type": "object"}
    )


def call(base_url: str, limit: int, n: int) -> None:
    # A provider per call, as an actor has one per match: the limit must hold across them.
    settings = {"base_url": base_url, "api_key_env": None, "no_cache": True, "max_concurrent_calls": limit}
    assert get_provider("openai/slow", settings).complete(request(n)).output == ANSWER


def test_no_more_calls_in_flight_than_the_limit(slow_server):
    server = slow_server()
    with ThreadPoolExecutor(12) as pool:
        list(pool.map(lambda n: call(server.base_url, 3, n), range(12)))
    assert server.served == 12
    assert server.most == 3  # reached, never passed


def test_each_endpoint_has_its_own_limit(slow_server):
    a, b = slow_server(), slow_server()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: call((a, b)[n % 2].base_url, 2, n), range(16)))
    assert (a.served, b.served) == (8, 8)
    assert (a.most, b.most) == (2, 2)  # calls to one did not wait for places at the other


def test_the_default_limit_lets_calls_overlap(slow_server):
    server = slow_server(delay=0, meet=4)  # no answer before all four are in flight
    settings = {"base_url": server.base_url, "api_key_env": None, "no_cache": True, "max_retries": 0}
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: get_provider("openai/slow", settings).complete(request(n)), range(4)))
    assert server.most == 4  # below the default of 8: none waited


def test_callers_whose_deadlines_pass_while_waiting_or_mid_call_all_end(slow_server):
    """Twelve callers make six calls each in a row, with deadlines drawn at random (seeded),
    at a server slower than many of them, through an endpoint of two places: a call is answered
    in time, or answered after its deadline passed mid-call (the attempt under way ends on its
    own), or not made because its deadline passed while it waited for a place or before an
    attempt could start. Every call ends one of these ways, the server never has more than two
    at once, and the call coordinator is left holding nothing."""
    server = slow_server(delay=0.05)
    coordinator = LocalCallCoordinator()
    settings = {"base_url": server.base_url, "api_key_env": None, "no_cache": True, "max_concurrent_calls": 2}
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def caller(seed: int) -> None:
        rng = random.Random(seed)
        provider = get_provider("openai/slow", settings, coordinator=coordinator)
        for n in range(6):
            deadline = time.monotonic() + rng.choice([0.0, 0.02, 0.08, 2.0])
            try:
                provider.complete(request(100 * seed + n), deadline)
                outcome = "answered late" if time.monotonic() > deadline else "answered"
            except DeadlinePassed:
                outcome = "not made"
            with lock:
                outcomes[outcome] += 1

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(caller, range(12)))
    assert sum(outcomes.values()) == 72 and set(outcomes) == {"answered", "answered late", "not made"}
    assert server.served == outcomes["answered"] + outcomes["answered late"] and server.most == 2
    endpoint = get_provider("openai/slow", settings).endpoint()
    alone = Ticket(
        "alone", None, "openai/slow", endpoint, Limits(concurrent=1), 1, None, "", 60.0, patience=0.0
    )
    assert coordinator.admit(alone) == Admission()  # with no patience at all: no place is held
