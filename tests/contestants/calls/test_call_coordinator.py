"""The call coordinator every model call checks in with (contestants.calls.coordinator), on
its own: endpoint limits, the budget, a contestant's failures in a row, the cache key a call
holds, and what a call that never reports back leaves behind. The minute of the rate limits
is shortened to a fraction of a second; the tests count admissions, not seconds."""

from __future__ import annotations

import asyncio
import fcntl
import itertools
import os
import random
import time
from collections import Counter

from contestants.calls import coordinator as call_coordinator
from contestants.calls.cache import ResponseCache
from contestants.calls.coordinator import (
    Admission,
    Budget,
    CallCoordinatorCore,
    Failed,
    Limits,
    Spend,
    Ticket,
)
from contestants.calls.types import Completion, TokenUsage

_ids = itertools.count()


def ticket(
    endpoint: str = "e",
    contestant: str = "c",
    key: str | None = None,
    cache_dir: str = "",
    tokens: int = 10,
    lease: float = 60.0,
    patience: float = 60.0,
    caller: str | None = None,
    **limits,
) -> Ticket:
    return Ticket(
        id=str(next(_ids)),
        contestant=contestant,
        model="openai/m",
        endpoint=(endpoint,),
        limits=Limits(**limits),
        tokens=tokens,
        cache_key=key,
        cache_dir=cache_dir,
        lease=lease,
        patience=patience,
        caller=caller,
    )


def completion(tokens: int = 100, cost: float | None = 1.0, text: str = "{}") -> Completion:
    return Completion(
        text=text,
        usage=TokenUsage(input_tokens=tokens, output_tokens=0),
        provider="openai",
        model="m",
        output={},
        cost=cost,
        latency=0.0,
        attempts=1,
        request_hash="h",
    )


async def pending_after_a_turn(*work) -> tuple[list, list]:
    """Start the coroutines and let the loop run them as far as they go without waiting for
    time to pass: the finished ones' results, and the tasks still waiting."""
    tasks = [asyncio.ensure_future(w) for w in work]
    for _ in range(20):
        await asyncio.sleep(0)
    return [t.result() for t in tasks if t.done()], [t for t in tasks if not t.done()]


def test_no_more_calls_in_flight_at_an_endpoint_than_the_callers_limit():
    async def play():
        coordinator = CallCoordinatorCore()
        tickets = [ticket(concurrent=2) for _ in range(3)]
        done, waiting = await pending_after_a_turn(*(coordinator.admit(t) for t in tickets))
        assert len(done) == 2 and len(waiting) == 1
        other, _ = await pending_after_a_turn(coordinator.admit(ticket(endpoint="other", concurrent=2)))
        assert len(other) == 1  # another endpoint has places of its own
        await coordinator.report(tickets[0], completion(), None)
        await asyncio.wait_for(waiting[0], 1)

    asyncio.run(play())


def test_requests_per_minute_hold_over_the_window():
    async def play():
        coordinator = CallCoordinatorCore(window=0.3)
        done, waiting = await pending_after_a_turn(
            *(coordinator.admit(ticket(requests_per_minute=3, concurrent=10)) for _ in range(4))
        )
        assert len(done) == 3 and len(waiting) == 1  # the fourth waits for the first to leave the window...
        await asyncio.wait_for(waiting[0], 5)  # ...and then goes

    asyncio.run(play())


def test_tokens_per_minute_count_what_calls_used():
    async def play():
        coordinator = CallCoordinatorCore(window=0.3)
        first = ticket(tokens_per_minute=1000, tokens=400, concurrent=10)
        await coordinator.admit(first)
        await coordinator.report(first, completion(tokens=900), None)  # it used more than expected
        done, waiting = await pending_after_a_turn(
            coordinator.admit(ticket(tokens_per_minute=1000, tokens=400, concurrent=10))
        )
        assert done == [] and len(waiting) == 1  # 900 + 400 would pass 1000 within the window
        await asyncio.wait_for(waiting[0], 5)

    asyncio.run(play())


def test_the_budget_stops_new_calls_and_counts_those_in_flight():
    async def play():
        coordinator = CallCoordinatorCore(budget=Budget(cost_usd=2.0), spent=Spend(0, 0.5))
        a, b = ticket(), ticket()
        assert (await coordinator.admit(a)).stopped is None and (await coordinator.admit(b)).stopped is None
        await coordinator.report(a, completion(cost=1.0), None)  # 1.5 spent
        assert (await coordinator.admit(ticket())).stopped is None
        await coordinator.report(b, completion(cost=1.0), None)  # 2.5: reached
        refused = await coordinator.admit(ticket())
        assert refused.stopped == "cost budget reached ($2.5000 of $2.0000)"
        assert coordinator.status().spent == Spend(200, 2.5) and coordinator.status().broken is None

    asyncio.run(play())


def test_a_replayed_answer_is_not_paid():
    async def play():
        coordinator = CallCoordinatorCore(budget=Budget(tokens=150))
        t = ticket()
        await coordinator.admit(t)
        await coordinator.report(t, completion(tokens=100).model_copy(update={"cached": True}), None)
        assert coordinator.status().spent == Spend(0, 0.0)

    asyncio.run(play())


def test_the_same_refusal_three_times_in_a_row_stops_the_run():
    async def play():
        coordinator = CallCoordinatorCore(stop_after=3)
        refusal = Failed("HTTP 404: no such model", 404, retryable=False)

        async def fail(contestant: str, failed: Failed | None) -> None:
            t = ticket(contestant=contestant)
            await coordinator.admit(t)
            await coordinator.report(t, None if failed else completion(), failed)

        for outcome in (refusal, refusal, None, refusal, refusal):  # a success ends a row
            await fail("typo", outcome)
        assert coordinator.status().failing == {"typo"}  # its last call failed for good
        await fail("typo", None)
        assert coordinator.status().failing == frozenset()
        await fail("typo", refusal)
        await fail("typo", Failed("HTTP 429: slow down", 429, retryable=True))  # so does a retryable failure
        await fail("typo", refusal)
        await fail("other", refusal)  # another contestant's failures are its own
        await fail("typo", refusal)
        assert coordinator.status().stopped is None
        await fail("typo", refusal)
        assert (
            coordinator.status().stopped
            == "contestant typo (openai/m) failed 3 calls in a row: HTTP 404: no such model"
        )
        assert coordinator.status().broken == "typo"
        assert (await coordinator.admit(ticket(contestant="other"))).stopped == coordinator.status().stopped

    asyncio.run(play())


def test_a_call_holds_its_key_so_the_same_request_waits_and_replays(tmp_path):
    async def play():
        coordinator = CallCoordinatorCore()
        first, second = (
            ticket(key="k" * 64, cache_dir=str(tmp_path)),
            ticket(key="k" * 64, cache_dir=str(tmp_path)),
        )
        assert (await coordinator.admit(first)).hit is None
        done, waiting = await pending_after_a_turn(coordinator.admit(second))
        assert done == [] and len(waiting) == 1  # the first is being made: the second waits for it
        await coordinator.report(first, completion(text='{"a": 1}'), None)
        replayed = await asyncio.wait_for(waiting[0], 5)
        assert replayed.hit is not None and replayed.hit.text == '{"a": 1}'

    asyncio.run(play())


def test_a_call_that_never_reports_back_lets_go_after_its_lease(tmp_path):
    async def play():
        coordinator = CallCoordinatorCore()
        lost = ticket(key="l" * 64, cache_dir=str(tmp_path), concurrent=1, lease=0.2)
        await coordinator.admit(lost)  # its process dies: no report
        again = await asyncio.wait_for(
            coordinator.admit(ticket(key="l" * 64, cache_dir=str(tmp_path), concurrent=1)), 5
        )
        assert again.hit is None and again.stopped is None  # the key and the place are free again

    asyncio.run(play())


def test_a_call_without_a_price_under_a_cost_budget_stops_the_run():
    async def play():
        coordinator = CallCoordinatorCore(budget=Budget(cost_usd=10))
        t = ticket()
        await coordinator.admit(t)
        await coordinator.report(t, completion(cost=None), None)
        assert coordinator.status().stopped == (
            "contestant c (openai/m) has no price, so the cost budget cannot be kept: give it one in prices:"
        )
        assert coordinator.status().broken == "c"

    asyncio.run(play())


def test_the_same_failure_is_the_same_status_and_code_whatever_the_message_says():
    """A message may carry a count or an id that changes with every call: where the server
    names the error with a code, the code decides."""

    async def play():
        coordinator = CallCoordinatorCore(stop_after=3)
        for tokens in (5000, 5100, 5200):
            t = ticket()
            await coordinator.admit(t)
            failure = Failed(
                f"HTTP 400: Unrecognized request argument supplied: thinking (request {tokens})",
                400,
                retryable=False,
                code="unknown_parameter",
            )
            await coordinator.report(t, None, failure)
        assert coordinator.status().broken == "c"

    asyncio.run(play())


def test_the_calls_of_a_caller_that_is_gone_are_released_at_once(tmp_path):
    """Two calls hold a key and a place each, one made on node a and one on node b; releasing
    b's frees its key and place at once, long before its lease, and a's stay held."""

    async def play():
        coordinator = CallCoordinatorCore()
        keys = {"a": "a" * 64, "b": "b" * 64}
        for caller, key in keys.items():
            await coordinator.admit(
                ticket(key=key, cache_dir=str(tmp_path), concurrent=2, lease=600, caller=caller)
            )
        assert coordinator.held_by() == {"a", "b"}
        done, waiting = await pending_after_a_turn(
            *(
                coordinator.admit(ticket(key=key, cache_dir=str(tmp_path), concurrent=2, caller="c"))
                for key in keys.values()
            )
        )
        assert done == [] and len(waiting) == 2  # same requests, same endpoint: both wait
        coordinator.release_held_by({"b", "elsewhere"})
        again = await asyncio.wait_for(waiting[1], 5)
        assert again.hit is None and again.stopped is None  # b's request is made again
        assert not waiting[0].done()
        assert coordinator.held_by() == {"a", "c"}
        waiting[0].cancel()

    asyncio.run(play())


def test_a_refusal_for_length_is_no_part_of_a_row_and_a_final_failure_stops_at_once():
    """Refusals for length, which their merchant recovers from, neither count in a row of
    failures nor end one; a conversation that cannot fit its window stops the run at the first,
    told without a call (its ticket was never admitted)."""

    async def play():
        coordinator = CallCoordinatorCore(stop_after=2)
        refusal = Failed("HTTP 404: no such model", 404, retryable=False)
        too_long = Failed(
            "HTTP 400: too long", 400, retryable=False, code="context_length_exceeded", too_long=True
        )

        async def fail(failed: Failed) -> None:
            t = ticket()
            await coordinator.admit(t)
            await coordinator.report(t, None, failed)

        for outcome in (refusal, too_long, too_long, too_long):
            await fail(outcome)
        assert coordinator.status().stopped is None and coordinator.status().failing == {"c"}
        await fail(refusal)
        assert (
            coordinator.status().stopped
            == "contestant c (openai/m) failed 2 calls in a row: HTTP 404: no such model"
        )

        fitting = CallCoordinatorCore(stop_after=3)
        await fitting.report(
            ticket(), None, Failed("its rules do not fit its window", None, False, final=True)
        )
        assert fitting.status().stopped == "contestant c (openai/m): its rules do not fit its window"
        assert fitting.status().broken == "c"

    asyncio.run(play())


def test_an_admission_waits_no_longer_than_its_patience(tmp_path):
    """The endpoint's one place is taken, or the same request is being made by another call:
    a ticket whose patience passes meanwhile is late and holds nothing; one with patience
    left goes once the place or the key is free."""

    async def play():
        coordinator = CallCoordinatorCore()
        holder = ticket(key="p" * 64, cache_dir=str(tmp_path), concurrent=1)
        assert await coordinator.admit(holder) == Admission()
        for waiting in (
            ticket(concurrent=1, patience=0.05),  # for room
            ticket(key="p" * 64, cache_dir=str(tmp_path), concurrent=2, patience=0.05),  # for the key
        ):
            assert await asyncio.wait_for(coordinator.admit(waiting), 5) == Admission(late=True)
        assert coordinator.held_by() == set() and coordinator._keys == {"p" * 64}
        patient = asyncio.ensure_future(coordinator.admit(ticket(concurrent=1)))
        await coordinator.report(holder, None, None)
        assert await asyncio.wait_for(patient, 5) == Admission()

    asyncio.run(play())


def where(task: asyncio.Task) -> tuple[str, ...]:
    """The coordinator's coroutines `task` is suspended in, outermost first."""
    names, awaited = [], task.get_coro()
    while awaited is not None and hasattr(awaited, "cr_frame"):
        if awaited.cr_frame is not None and awaited.cr_code.co_filename == call_coordinator.__file__:
            names.append(awaited.cr_code.co_name)
        awaited = awaited.cr_await
    return tuple(names)


WAITS = (
    ("admit", "_hold_key"),  # looking the stored answer up (in a thread)
    ("admit", "_hold_key", "_change"),  # waiting for the same request, being made by another call
    ("admit", "_hold_key", "_lock_file"),  # waiting for another process's hold on the request
    ("admit", "_change"),  # waiting for room at the endpoint
)


def test_a_caller_cancelled_at_any_await_leaves_nothing_held(tmp_path, monkeypatch):
    """An admission waits in turn at every await of the coordinator (WAITS), each released
    once it has been seen waiting there for a few steps of the event loop; its caller is
    cancelled at each of them, at each of those steps. Wherever it was cut, nothing stays held:
    the same request, asked again, goes at once. Each cut is counted where it landed."""
    monkeypatch.setattr(call_coordinator, "LOCK_POLL_S", 0.001)
    slowly = ResponseCache.get
    monkeypatch.setattr(ResponseCache, "get", lambda cache, key: time.sleep(0.002) or slowly(cache, key))
    key, steps_seen = "q" * 64, 3  # a wait is seen this many steps before what it waits for lets go

    async def cut(at_wait: tuple[str, ...], step: int, folder: str) -> bool:
        """Whether the admission was cancelled at `step` of its wait at `at_wait`."""
        coordinator = CallCoordinatorCore()
        same = ticket(key=key, cache_dir=folder, concurrent=2)  # the same request, under way
        other = ticket(concurrent=2)  # another call at the endpoint
        for made in (same, other):
            assert await coordinator.admit(made) == Admission()
        held_file: int | None = None  # another process's hold on the key's lock file, once taken
        mine = ticket(key=key, cache_dir=folder, concurrent=1)
        victim = asyncio.ensure_future(coordinator.admit(mine))
        at, seen, was_cut = (), 0, False
        while not victim.done():
            await asyncio.sleep(0)
            now = where(victim)
            at, seen = now, (seen + 1 if now == at else 0)
            if (at, seen) == (at_wait, step):
                victim.cancel()
                await asyncio.gather(victim, return_exceptions=True)
                was_cut = True
            elif seen < steps_seen:
                pass
            elif at == ("admit", "_hold_key", "_change") and held_file is None:
                await coordinator.report(same, None, None)  # it ends without an answer...
                held_file = os.open(ResponseCache(folder).lock_path(key), os.O_RDWR)
                fcntl.flock(held_file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ...and another process asks it
            elif at == ("admit", "_hold_key", "_lock_file") and held_file is not None and held_file >= 0:
                os.close(held_file)
                held_file = -1
            elif at == ("admit", "_change"):
                await coordinator.report(other, None, None)
        if held_file is not None and held_file >= 0:
            os.close(held_file)
        for made in (same, other):
            await coordinator.report(made, None, None)  # a second report changes nothing
        if not victim.cancelled():
            assert victim.result() == Admission()
            await coordinator.report(mine, None, None)
        again = ticket(key=key, cache_dir=folder, concurrent=1, patience=0.0)
        assert await coordinator.admit(again) == Admission(), f"cut at step {step} of {at_wait}"
        return was_cut

    async def play() -> list[bool]:
        return [
            await cut(wait, step, str(tmp_path / f"{n}-{step}"))
            for n, wait in enumerate(WAITS)
            for step in range(steps_seen)
        ]

    assert asyncio.run(play()) == [True] * len(WAITS) * steps_seen


def test_a_crowd_of_callers_cut_short_abandoning_and_timing_out_never_leaves_a_call_waiting(tmp_path):
    """Seeded crowds at one endpoint (a place or two, a rate or token limit whose waits end on
    their own, the same requests asked by several), whose callers are cancelled at random
    moments, abandon admitted calls (their leases run out) or run out of patience. Every
    admission ends within its patience (none is left waiting), the places are never
    overtaken, and once the leases have run out nothing is held: a new call goes at once."""

    async def crowd(seed: int) -> Counter[str]:
        rng = random.Random(seed)
        coordinator = CallCoordinatorCore(window=0.02)
        limits = {
            "concurrent": rng.choice([1, 2, 3]),
            "requests_per_minute": rng.choice([None, 2, 5]),
            "tokens_per_minute": rng.choice([None, 50]),
        }
        folder = str(tmp_path / str(seed))
        outcomes: Counter[str] = Counter()

        async def caller() -> None:
            made = ticket(
                key=rng.choice([None, None, "a" * 64, "b" * 64]),
                cache_dir=folder,
                tokens=rng.choice([5, 20]),
                lease=rng.choice([0.01, 0.05]),
                patience=rng.choice([0.0, 0.01, 0.2]),
                **limits,
            )
            admission = await coordinator.admit(made)
            if admission.late:
                outcomes["late"] += 1
                return
            assert coordinator._in_flight[("e",)] <= limits["concurrent"]
            await asyncio.sleep(rng.random() * 0.01)
            if rng.random() < 0.2:
                outcomes["abandoned"] += 1  # its process died: no report
                return
            await coordinator.report(made, completion() if rng.random() < 0.5 else None, None)
            outcomes["reported"] += 1

        callers = [asyncio.ensure_future(caller()) for _ in range(30)]
        for _ in range(40):  # cuts, some of them cut again while the first is being handled
            await asyncio.sleep(rng.random() * 0.004)
            cut = rng.choice(callers)
            cut.cancel()
            if rng.random() < 0.5:
                await asyncio.sleep(0)
                cut.cancel()
        done, waiting = await asyncio.wait(callers, timeout=5)
        assert waiting == set()  # patience bounds every wait
        outcomes["cancelled"] = sum(task.cancelled() for task in done)
        await asyncio.sleep(0.06)  # every lease has run out
        assert coordinator.held_by() == set() and coordinator._in_flight[("e",)] == 0
        fresh = ticket(key="a" * 64, cache_dir=folder, patience=0.0, concurrent=1)
        again = await coordinator.admit(fresh)
        assert again.late is False and again.stopped is None  # goes, or replays a stored answer
        return outcomes

    async def play() -> Counter[str]:
        total: Counter[str] = Counter()
        for seed in range(CROWDS):
            total += await crowd(seed)
        return total

    total = asyncio.run(play())
    assert sum(total.values()) == CROWDS * 30  # every caller ended one way or another
    assert all(total[outcome] > 0 for outcome in ("late", "abandoned", "reported", "cancelled"))


CROWDS = 20
