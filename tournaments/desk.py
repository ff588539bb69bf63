"""The run's desk: one Ray actor on the driver's node that every human seat of the run asks
(each from its contestant's host) and that the people's pages reach (served by `arena run` in
the driver's process), holding a contestants.desk.LocalDesk whose journal is the database.

Every page's outcome is kept as it is settled (results.storage.desk_pages): what a person
submits is stored before the page says it was sent, a page withdrawn when its time was up is
stored as withdrawn. The actor reads what the tournament's earlier runs kept when it starts,
so that `arena run --resume` answers at once the pages people answered before, with what they
submitted and the seconds it took them, and puts each person back at the page they were on.

Every waiting `ask` holds a thread of the actor's own pool (made as asks come, WAITING_ASKS at
most); the people's calls run in a concurrency group of their own, so however many asks wait,
people's pages get through. A desk that fails stops the run (DeskFailed, a CallsStopped): its
process died (what it held open is lost), it does not answer, or the database refused what it
had to keep. A page withdrawn that cannot be kept fails the seat's ask, so the run stops: a
journal that cannot be written would let `--resume` ask again what was already decided. What a
person submits that cannot be kept fails their submit, and the page stays open to be sent again.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError, RayTaskError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from sqlalchemy import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from contestants.base import Desk, DeskAsk, DeskKey, Submitted
from contestants.calls.coordinator import SLACK_S, CallsStopped
from contestants.desk import Kept, LocalDesk, OpenPage, PeopleSide
from results.errors import DatabaseError
from results.storage.db import describe_failure, engine_for
from results.storage.desk_pages import KeptPage, keep_page, kept_pages
from tournaments.cluster import READY_SECONDS, ClusterError, enter

WAITING_ASKS = 10_000  # asks that may wait for their people at once, a thread each
PEOPLES_CALLS = 16  # people's calls served at once (none of them waits)
GONE = "the run's desk is gone (its process died)"


class DeskFailed(CallsStopped):
    """The run's desk is gone, does not answer, or could not keep a page's outcome: a seat
    that asks it stops the run, as when its calls stop (the message, one line, says why). A
    person's submit that raises it leaves the page open."""


@ray.remote(  # type: ignore[call-overload]  # Ray's overloads of remote leave concurrency_groups out
    num_cpus=0, concurrency_groups={"asking": WAITING_ASKS, "people": PEOPLES_CALLS}
)
class DeskActor:
    """The run's LocalDesk, journaled in the tournament's database (opened here from `url`,
    its password given apart, in the folder `arena run` was started in, so that a relative
    SQLite path means the run's file).

    The password comes through Ray's object store, not among the arguments: Ray keeps an
    actor's arguments with its description in the cluster's control store, for as long as the
    cluster lives."""

    def __init__(self, url: str, password: str | None, tournament_id: int, working_dir: str):
        enter(working_dir)
        self.tournament_id = tournament_id
        self.threads = ThreadPoolExecutor(WAITING_ASKS, thread_name_prefix="desk-ask")
        self.people = ThreadPoolExecutor(PEOPLES_CALLS, thread_name_prefix="desk-people")
        self.failed: str | None = None  # why the desk could not open, for `ready` to say
        self.engine: Engine | None = None
        self.desk = LocalDesk()
        try:
            whole = make_url(url).set(password=password).render_as_string(hide_password=False)
            self.engine, kept = _journal(whole, tournament_id)
        except DatabaseError as exc:
            self.failed = str(exc)
        else:
            self.desk = LocalDesk(kept, self._keep)

    @ray.method(concurrency_group="people")
    def ready(self) -> str | None:
        """None once the desk is open; else why it could not open, one line."""
        return self.failed

    @ray.method(concurrency_group="asking")
    async def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        return await asyncio.get_running_loop().run_in_executor(self.threads, self.desk.ask, asked, within)

    # An actor with an async method runs its others on their group's event loop: the people's
    # calls go to a pool of their own, so that one kept in the database holds up no other.
    @ray.method(concurrency_group="people")
    async def join(self, merchant: str) -> None:
        await self._for_people(self.desk.join, merchant)

    @ray.method(concurrency_group="people")
    async def joined(self) -> frozenset[str]:
        joined: frozenset[str] = await self._for_people(self.desk.joined)
        return joined

    @ray.method(concurrency_group="people")
    async def page(self, merchant: str) -> OpenPage | None:
        page: OpenPage | None = await self._for_people(self.desk.page, merchant)
        return page

    @ray.method(concurrency_group="people")
    async def submit(self, key: DeskKey, fields: dict[str, str]) -> bool:
        sent: bool = await self._for_people(self.desk.submit, key, fields)
        return sent

    async def _for_people(self, call: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.people, call, *args)

    def _keep(self, key: DeskKey, kept: Kept) -> None:
        """Store a page's outcome (the LocalDesk's journal); DeskFailed if it cannot be."""
        assert self.engine is not None, "a desk that could not open keeps nothing"
        if key.match is None:
            raise DeskFailed(f"the run's desk cannot keep {_named(key)}: it names no match")
        fields, seconds = (None, None) if kept.outcome is None else kept.outcome
        try:
            page = KeptPage(
                key.match, key.merchant, key.day, key.asked, key.attempt, kept.shown, fields, seconds
            )
            keep_page(self.engine, self.tournament_id, page)
        except SQLAlchemyError as exc:
            raise DeskFailed(
                f"the run's desk cannot keep {_named(key)}: {describe_failure(self.engine, exc)}"
            ) from None


def _named(key: DeskKey) -> str:
    """A page named for a message: "ann's day 3 form (attempt 1) in match lab/1"."""
    what = {"day": "form", "recall": "recall question", "off_path": "off-path question"}[key.asked]
    return f"{key.merchant}'s day {key.day} {what} (attempt {key.attempt}) in match {key.match}"


def _journal(url: str, tournament_id: int) -> tuple[Engine, dict[DeskKey, Kept]]:
    """The database at `url` and what the tournament's runs kept there, by page; DatabaseError
    (one line, no password) if it cannot be opened or read."""
    engine = engine_for(url)
    try:
        return engine, {_key(page): _kept(page) for page in kept_pages(engine, tournament_id)}
    except SQLAlchemyError as exc:
        engine.dispose()
        raise DatabaseError(describe_failure(engine, exc)) from None


def _key(page: KeptPage) -> DeskKey:
    return DeskKey._make(page[:5])  # the same five fields, in the same order


def _kept(page: KeptPage) -> Kept:
    if page.fields is None or page.seconds is None:  # withdrawn
        return Kept(page.shown, None)
    return Kept(page.shown, Submitted(page.fields, page.seconds))


def _answer(ref: Any, seconds: float | None) -> Any:
    """The desk's answer to a call (`ref`) within `seconds` (None: no limit); DeskFailed if it
    does not come, the desk raised it, or the desk is gone."""
    try:
        return ray.get(ref, timeout=seconds)
    except GetTimeoutError:
        raise DeskFailed(f"the run's desk did not answer within {seconds:g} s") from None
    except RayTaskError as exc:
        if isinstance(exc.cause, DeskFailed):
            raise exc.cause from None
        raise
    except RayError:
        raise DeskFailed(GONE) from None


class RemoteDesk(Desk):
    """The seats' side of the run's desk: pickles as the actor's handle (RunOptions.desk). An
    ask waits as long as its page may, and SLACK_S more for the desk to answer."""

    def __init__(self, actor: Any):
        self.actor = actor

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        answered: Submitted | None = _answer(
            self.actor.ask.remote(asked, within), None if within is None else within + SLACK_S
        )
        return answered


class RemotePeople:
    """The people's side of the run's desk (contestants.desk.PeopleSide), for the pages'
    server: each call is the actor's, answered within SLACK_S (none of them waits)."""

    def __init__(self, actor: Any):
        self.actor = actor

    def join(self, merchant: str) -> None:
        self._call("join", merchant)

    def joined(self) -> frozenset[str]:
        joined: frozenset[str] = self._call("joined")
        return joined

    def page(self, merchant: str) -> OpenPage | None:
        page: OpenPage | None = self._call("page", merchant)
        return page

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        sent: bool = self._call("submit", key, dict(fields))
        return sent

    def _call(self, method: str, *args: Any) -> Any:
        if not ray.is_initialized():  # the run has ended: a call would start a Ray of its own
            raise DeskFailed(GONE)
        return _answer(getattr(self.actor, method).remote(*args), SLACK_S)


class RunDesk:
    """The run's desk as `arena run` holds it: `desk` for RunOptions.desk, `people` for the
    pages' server, `stop` when the run ends."""

    def __init__(self, actor: Any):
        self.actor = actor
        self.desk = RemoteDesk(actor)
        self.people: PeopleSide = RemotePeople(actor)

    def stop(self) -> None:
        """End the desk's actor: a seat still asking it stops with DeskFailed."""
        ray.kill(self.actor)


def start_desk(engine: Engine, tournament_id: int) -> RunDesk:
    """The desk of tournament `tournament_id`'s run, on this (the driver's) node, journaled in
    `engine`'s database, with what the tournament's earlier runs kept. Raises DatabaseError
    (one line, no password) if the desk cannot open the database or read what was kept,
    ClusterError if it does not start."""
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    actor = DeskActor.options(scheduling_strategy=here).remote(  # type: ignore[attr-defined]  # see @ray.remote above
        engine.url.render_as_string(hide_password=True),
        # resolved for the actor: its description holds the reference alone (unless a cluster
        # inlines small objects into tasks, which Ray does not by default)
        ray.put(engine.url.password),
        tournament_id,
        os.getcwd(),
    )
    try:
        failed: str | None = _answer(actor.ready.remote(), READY_SECONDS)
    except DeskFailed as exc:
        ray.kill(actor)
        raise ClusterError(f"the run's desk did not start: {exc}") from None
    if failed is not None:
        ray.kill(actor)
        raise DatabaseError(failed)
    return RunDesk(actor)
