"""The call coordinator: every model call of a run checks in with it before it is made, and
reports back after.

A tournament makes its calls from many processes (an actor per hosted contestant, match
runners, workers), possibly on several machines; what must hold across all of them is kept
in one place, the call coordinator:

- the response cache: a call whose answer is stored makes no request; a call about to be
  made holds its key (in this run, and across processes through a lock file next to the
  entry), so two calls of the same request never both pay: the second waits and replays;
- the endpoint limits: at most `concurrent` calls in flight to an endpoint (provider and
  base_url), at most `requests_per_minute` started and `tokens_per_minute` spent in any
  minute, each as the calling contestant states them;
- the budget: once the run's paid tokens or cost reach it, no new call starts;
- broken contestants: one whose calls fail with the same non-retryable error `stop_after`
  times in a row stops the run (a model that does not exist, a key that is refused); a
  refusal for length, which the caller recovers from by asking again shorter, is no part of
  such a row; a conversation that cannot fit its window even at its smallest stops the run at
  once.

A stop is final for the run: every later call is refused with the reason
(`Admission.stopped`), which the caller raises as CallsStopped. A caller asks `admit` before a
call and `report`s its outcome after it. `CallCoordinatorCore` is the logic, on asyncio;
`LocalCallCoordinator` runs it on a thread of this process (a process playing alone), and a
tournament runs it in one Ray actor that every process of the run talks to (tournaments.coordinator_actor).

Nothing waits without a bound. An admission waits at most its ticket's `patience` (for room at
the endpoint, or for the answer another call of the same request is making), then it is
`late` and no call is made; what an admitted call holds is let go of when it reports, or when
its `lease` runs out; and a caller waits for the coordinator's answer at most SLACK_S longer
than the coordinator itself may take, or its calls stop (`unanswered`). A caller may be
cancelled at any of the core's awaits: the core waits on futures of its own, never on a lock
or a condition a cancelled waiter could leave held (Python 3.11's `wait_for` around
`Condition.wait` did: a cancelled admission could leave the condition's lock held by nobody, and
then every call of the run waited for ever), and it takes a place only after its last await.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from contestants.calls.budget import Budget, Spend
from contestants.calls.cache import ResponseCache
from contestants.calls.types import Completion

WINDOW_S = 60.0  # the minute of requests_per_minute and tokens_per_minute
# How much longer than what it governs a bound of the coordinator's allows: what an admitted
# call holds is kept this long after its total timeout (its lease), and a caller waits this long
# after its own patience for the coordinator's answer (a round trip through Ray on a busy machine).
SLACK_S = 60.0
T = TypeVar("T")


class CallsStopped(RuntimeError):
    """The run's calls have stopped (its budget is spent, or a contestant's model is broken):
    no new call may start. Not a fault of the merchant: the match it was asked in is left
    unplayed. The message is the reason, one line."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a caller allows at once at its endpoint (None: no limit of its own)."""

    concurrent: int = 8
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None


@dataclass(frozen=True, slots=True)
class Ticket:
    """One call about to be made. `tokens` is its expected size (prompt and answer) for the
    tokens-per-minute limit; `cache_key` None means the response cache is off for it; `lease`
    is how long the coordinator keeps what the call holds if it never reports back (its
    process died); `patience` is how long the caller waits to be admitted (seconds, from when
    it asks); `caller` names where it is made (a run's node: see `release_held_by`)."""

    id: str
    contestant: str | None
    model: str
    endpoint: tuple[str, ...]
    limits: Limits
    tokens: int
    cache_key: str | None
    cache_dir: str
    lease: float
    patience: float
    caller: str | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """How a call failed for good, for the coordinator's count of a contestant's failures in a
    row: the same failure is the same status and error code (the same message where the server
    gives no code: a message may carry a count or an id that changes every time). `too_long`: a
    refusal for length, which its caller recovers from (it neither counts in a row nor ends
    one); `final`: no call of the contestant can succeed (its smallest conversation does not fit
    its window), which stops the run at once."""

    message: str
    status: int | None
    retryable: bool
    code: str | None = None
    too_long: bool = False
    final: bool = False

    @property
    def signature(self) -> tuple[int | None, str]:
        return (self.status, self.code if self.code else self.message)


@dataclass(frozen=True, slots=True)
class Admission:
    """The coordinator's answer to a ticket: the stored answer (make no call), or why no call may
    start, or that the ticket's patience ran out first (`late`: make no call), or none of these:
    go ahead."""

    hit: Completion | None = None
    stopped: str | None = None
    late: bool = False


@dataclass(frozen=True, slots=True)
class Status:
    stopped: str | None
    spent: Spend
    broken: str | None  # the contestant whose model stopped the run
    failing: frozenset[str] = frozenset()  # contestants whose last call failed as retrying cannot help


@runtime_checkable
class CallCoordinator(Protocol):
    """What a provider's calls check in with: `admit` before a call, `report` after it."""

    def admit(self, ticket: Ticket) -> Admission: ...
    def report(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None: ...
    def status(self) -> Status: ...
    async def current(self) -> Status: ...  # `status`, from a coroutine


@dataclass
class _Held:
    """What an admitted call holds until it is reported: its place at the endpoint, and its
    cache key (in this run, and the key's lock file) while it holds that."""

    ticket: Ticket
    key: str | None = None
    lock_file: int | None = None
    expiry: asyncio.TimerHandle | None = None


@dataclass
class _Streak:
    failure: tuple[int | None, str] | None = None  # Failed.signature
    count: int = 0


class CallCoordinatorCore:
    """The call coordinator's state and rules (module docstring). Its coroutines run on one
    event loop, and change its state only between awaits."""

    def __init__(
        self,
        budget: Budget | None = None,
        spent: Spend = Spend(),
        stop_after: int = 3,
        window: float = WINDOW_S,
    ):
        self.budget, self.spent, self.stop_after, self.window = budget, spent, stop_after, window
        self.stopped: str | None = None
        self.broken: str | None = None
        self._in_flight: Counter[tuple[str, ...]] = Counter()
        self._starts: dict[
            tuple[str, ...], deque[list]
        ] = {}  # per endpoint: [start time, tokens, ticket id] of the last minute
        self._held: dict[str, _Held] = {}
        self._keys: set[str] = set()  # the cache keys held by calls of this run
        self._waiting: set[asyncio.Future[None]] = set()  # admissions waiting for a change
        self._streaks: dict[str | None, _Streak] = {}
        self._caches: dict[str, ResponseCache] = {}

    async def admit(self, ticket: Ticket) -> Admission:
        """Whether the call may be made, waiting at most the ticket's patience: for the answer
        another call of the same request is making (then replayed), and for room at the
        endpoint. A caller cancelled meanwhile holds nothing."""
        if self.stopped is not None:
            return Admission(stopped=self.stopped)
        due = time.monotonic() + ticket.patience
        held = _Held(ticket)
        try:
            if ticket.cache_key is not None:
                hit = await self._hold_key(held, ticket.cache_key, due)
                if hit is not None:
                    return Admission(hit=hit)
            while True:
                self._check_budget()
                if self.stopped is not None:
                    self._release_key(held)
                    return Admission(stopped=self.stopped)
                wait = self._wait_for_room(ticket)
                if wait == 0.0:
                    break
                await self._change(due, wait)
        except _Late:
            self._release_key(held)
            return Admission(late=True)
        except BaseException:
            self._release_key(held)
            raise
        # no await from the look for room to here: the place is the one that was found free
        self._in_flight[ticket.endpoint] += 1
        self._starts[ticket.endpoint].append([time.monotonic(), ticket.tokens, ticket.id])
        held.expiry = asyncio.get_running_loop().call_later(ticket.lease, self._expire, ticket.id)
        self._held[ticket.id] = held
        return Admission()

    async def report(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        """An admitted call's outcome: its answer (`completion`, paid for and stored in the
        cache) or how it failed; what it held is released, whatever happens to the store."""
        held = self._held.pop(ticket.id, None)
        if completion is not None and completion.paid:
            self._pay(ticket, completion)
        self._count_failure(ticket, failed)
        if held is None:  # its lease ran out: it was already released
            self._check_budget()
            self._wake()
            return
        try:
            if completion is not None and ticket.cache_key is not None:
                cache = self._cache(ticket.cache_dir)
                await asyncio.to_thread(cache.put, ticket.cache_key, completion)
        finally:
            self._release(held, completion)

    def status(self) -> Status:
        failing = frozenset(
            name for name, streak in self._streaks.items() if streak.count and name is not None
        )
        return Status(self.stopped, self.spent, self.broken, failing)

    # -- waiting ---------------------------------------------------------------------------

    async def _change(self, due: float, wait: float | None = None) -> None:
        """Until something changes (a call ends or lets go of its key, the run stops), `wait`
        seconds pass (None: no limit of its own), or `due` (time.monotonic()) comes: then
        _Late. A future of its own, never a lock: a waiter cancelled here holds nothing."""
        left = due - time.monotonic()
        if left <= 0:
            raise _Late
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.add(waiter)
        try:
            await asyncio.wait([waiter], timeout=left if wait is None else min(wait, left))
        finally:
            self._waiting.discard(waiter)

    def _wake(self) -> None:
        """Every admission waiting looks again."""
        waiting, self._waiting = self._waiting, set()
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(None)

    def _release(self, held: _Held, completion: Completion | None = None) -> None:
        """Let go of what an admitted call holds (its place, its key), counting the tokens it
        used in the endpoint's minute."""
        if held.expiry is not None:
            held.expiry.cancel()
        ticket = held.ticket
        self._in_flight[ticket.endpoint] -= 1
        if completion is not None:
            for start in self._starts.get(ticket.endpoint, ()):
                if start[2] == ticket.id:
                    start[1] = completion.usage.input_tokens + completion.usage.output_tokens
        self._release_key(held)
        self._check_budget()
        self._wake()

    # -- the response cache ----------------------------------------------------------------

    def _cache(self, directory: str) -> ResponseCache:
        if directory not in self._caches:
            self._caches[directory] = ResponseCache(directory)
        return self._caches[directory]

    async def _hold_key(self, held: _Held, key: str, due: float) -> Completion | None:
        """The stored answer for `key`, the ticket's cache key, or None with the key held by
        this call: in this run, then the lock file other processes take too. Waits for whoever
        holds it until `due` (then _Late); a caller that leaves with an exception may still
        hold it (`admit` lets go)."""
        cache = self._cache(held.ticket.cache_dir)
        hit = await asyncio.to_thread(cache.get, key)
        if hit is not None:
            return hit
        while key in self._keys:
            await self._change(due)
        self._keys.add(key)
        held.key = key
        held.lock_file = await _lock_file(cache.lock_path(key), due)
        hit = await asyncio.to_thread(cache.get, key)  # written meanwhile by whoever held it
        if hit is not None:
            self._release_key(held)
        return hit

    def _release_key(self, held: _Held) -> None:
        if held.lock_file is not None:
            fd, held.lock_file = held.lock_file, None
            _unlock_file(fd)
        if held.key is not None:
            self._keys.discard(held.key)
            held.key = None
            self._wake()

    def held_by(self) -> set[str]:
        """The callers of the calls admitted and not yet reported."""
        return {held.ticket.caller for held in self._held.values() if held.ticket.caller is not None}

    def release_held_by(self, callers: set[str]) -> None:
        """Release at once what the calls of `callers` hold, as if their leases had run out:
        they are gone (a node that died), and a call of the same request, made again when
        their match is played again, would otherwise wait for the lease."""
        for ticket_id in [i for i, held in self._held.items() if held.ticket.caller in callers]:
            self._expire(ticket_id)

    def _expire(self, ticket_id: str) -> None:
        """A call that never reported back: its process died; release what it held."""
        held = self._held.pop(ticket_id, None)
        if held is not None:
            self._release(held)

    # -- limits, budget, failures -----------------------------------------------------------

    def _wait_for_room(self, ticket: Ticket) -> float | None:
        """0 when the call may start now; else how long to wait at most before looking again
        (None: until a call ends)."""
        limits, endpoint = ticket.limits, ticket.endpoint
        starts = self._starts.setdefault(endpoint, deque())
        now = time.monotonic()
        while starts and starts[0][0] <= now - self.window:
            starts.popleft()
        if self._in_flight[endpoint] >= limits.concurrent:
            return None
        until_older_leaves = starts[0][0] + self.window - now if starts else 0.0
        if limits.requests_per_minute is not None and len(starts) >= limits.requests_per_minute:
            return max(until_older_leaves, 0.001)
        if limits.tokens_per_minute is not None and starts:
            used = sum(start[1] for start in starts)
            if used + min(ticket.tokens, limits.tokens_per_minute) > limits.tokens_per_minute:
                return max(until_older_leaves, 0.001)
        return 0.0

    def _pay(self, ticket: Ticket, completion: Completion) -> None:
        """Count a paid call. A call without a price under a cost budget (validation keeps
        such models out; a price list may not) stops the run as a broken model would: its
        cost is not known, so the budget could not be kept."""
        usage = completion.usage
        tokens = self.spent.tokens + usage.input_tokens + usage.output_tokens
        if (
            completion.cost is None
            and self.budget is not None
            and self.budget.cost_usd is not None
            and self.stopped is None
        ):
            self.broken = ticket.contestant
            self.stopped = (
                f"{_who(ticket)} has no price, so the cost budget cannot be kept: give it one in prices:"
            )
        self.spent = Spend(tokens, self.spent.cost + (completion.cost or 0.0))

    def _check_budget(self) -> None:
        if self.stopped is None and self.budget is not None:
            self.stopped = self.budget.exceeded_by(self.spent.tokens, self.spent.cost)

    def _count_failure(self, ticket: Ticket, failed: Failed | None) -> None:
        """A contestant's run of the same non-retryable failure; anything else ends it but a
        refusal for length, which is being recovered from. A final failure stops the run."""
        streak = self._streaks.setdefault(ticket.contestant, _Streak())
        if failed is not None and failed.too_long:
            return
        if failed is None or failed.retryable:
            streak.failure, streak.count = None, 0
            return
        streak.count = streak.count + 1 if streak.failure == failed.signature else 1
        streak.failure = failed.signature
        if self.stopped is None and (failed.final or streak.count >= self.stop_after):
            self.broken = ticket.contestant
            self.stopped = (
                f"{_who(ticket)}: {failed.message}"
                if failed.final
                else f"{_who(ticket)} failed {streak.count} calls in a row: {failed.message}"
            )


def _who(ticket: Ticket) -> str:
    return who(ticket.contestant, ticket.model)


def who(contestant: str | None, model: str) -> str:
    """Whose calls a stop names: the contestant and its model ("provider/model"), or the model
    alone where no contestant is named."""
    return f"contestant {contestant} ({model})" if contestant else model


class _Late(Exception):
    """An admission's patience ran out."""


LOCK_POLL_S = 0.05  # how often a call waiting for another process's hold on its key looks again


async def _lock_file(path: Path, due: float) -> int:
    """Open and lock (exclusively) the lock file at `path`, waiting while another process holds
    it (polling: no thread is kept waiting) until `due` (time.monotonic(); then _Late); its
    descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                left = due - time.monotonic()
                if left <= 0:
                    raise _Late from None
                await asyncio.sleep(min(LOCK_POLL_S, left))
    except BaseException:
        os.close(fd)
        raise


def _unlock_file(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def unanswered(seconds: float) -> str:
    """Why a run's calls stop when its call coordinator does not answer in time."""
    return f"the run's call coordinator did not answer within {seconds:g} s"


class LocalCallCoordinator:
    """A CallCoordinatorCore on an event loop of its own thread: every coroutine of the core
    runs on that one loop, whichever thread or loop asks. A caller waits for its answer at
    most the ticket's patience and SLACK_S more (SLACK_S for a report or the status), then is
    told the calls stopped (CallsStopped, `unanswered`) and the work is cancelled."""

    def __init__(self, core: CallCoordinatorCore | None = None):
        self.core = core or CallCoordinatorCore()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="model-call-coordinator", daemon=True).start()

    def admit(self, ticket: Ticket) -> Admission:
        return self._run(self.core.admit(ticket), ticket.patience + SLACK_S)

    def close(self) -> None:
        """Stop its loop and the thread that runs it (a coordinator of one piece of work)."""
        self.loop.call_soon_threadsafe(self.loop.stop)

    def report(self, ticket: Ticket, completion: Completion | None, failed: Failed | None) -> None:
        self._run(self.core.report(ticket, completion, failed), SLACK_S)

    def status(self) -> Status:
        try:
            return self._run(self._status(), SLACK_S)
        except CallsStopped as exc:
            return Status(str(exc), Spend(), None)

    async def current(self) -> Status:
        try:
            async with asyncio.timeout(SLACK_S):
                return await self.on_loop(self._status())
        except TimeoutError:
            return Status(unanswered(SLACK_S), Spend(), None)

    async def on_loop(self, work: Coroutine[Any, Any, T]) -> T:
        """`work` run on the coordinator's loop, awaited from another loop."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))

    async def _status(self) -> Status:
        return self.core.status()

    def _run(self, work: Coroutine[Any, Any, T], seconds: float) -> T:
        answer = asyncio.run_coroutine_threadsafe(work, self.loop)
        try:
            return answer.result(timeout=seconds)
        except TimeoutError:
            answer.cancel()
            raise CallsStopped(unanswered(seconds)) from None


_local: LocalCallCoordinator | None = None
_local_lock = threading.Lock()


def local_call_coordinator() -> LocalCallCoordinator:
    """This process's own call coordinator (no budget), for calls made outside a tournament's."""
    global _local
    with _local_lock:
        if _local is None:
            _local = LocalCallCoordinator()
        return _local
