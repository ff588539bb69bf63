"""Desks (contestants.base.Desk): what carries a human seat's pages to its person and back.

A desk has two sides. The seats' side is `Desk.ask`, which waits. The people's side
(`PeopleSide`) is what the pages a person plays on call, and none of it waits: who has
joined, the page a person's seat has open now, and what they submit for it.

`LocalDesk` holds its open pages in this process (the run's desk holds one of its own in an
actor, tournaments.desk), and may keep a journal of every page's outcome; `BlankDesk` is a
person who submits every page blank at once.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, Protocol

from contestants.base import Desk, DeskAsk, DeskKey, Submitted


class OpenPage(NamedTuple):
    """A page waiting for its person: what it asks, and the seconds left to answer it (None:
    no deadline)."""

    asked: DeskAsk
    seconds_left: float | None


class PeopleSide(Protocol):
    """A desk as the people's pages see it. Nothing here waits."""

    def join(self, merchant: str) -> None:
        """`merchant`'s person has come to their seat (opened their link)."""

    def joined(self) -> frozenset[str]:
        """The merchants whose person has come, so far."""

    def page(self, merchant: str) -> OpenPage | None:
        """The page of `merchant`'s seat still to be answered, the first asked; None: none now."""

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        """Answer the page `key` with `fields`, by name; False if it is not open (withdrawn
        when its time was up, answered already, or never asked). Raises what the desk's
        journal raised if the answer could not be kept: the page stays open, to be sent again."""


@dataclass(eq=False)
class _Page:
    """A page asked and not yet settled: when it was asked and is due (time.monotonic(); due
    None: no deadline), whether what was submitted for it is being kept (`keeping`), and what
    was submitted, once it is settled."""

    asked: DeskAsk
    shown: str  # its page_digest
    start: float
    due: float | None
    keeping: bool = False
    submitted: Submitted | None = None


class Kept(NamedTuple):
    """A page's outcome as a desk keeps it: what the page showed (`shown`, its page_digest) and
    what came of it (None: withdrawn when its time was up)."""

    shown: str
    outcome: Submitted | None


Keep = Callable[[DeskKey, Kept], None]
"""Where a desk keeps a page's outcome as it is settled. Raising says it could not be kept."""


def keep_nothing(key: DeskKey, kept: Kept) -> None:
    """The journal of a desk that keeps none (the in-process tests', the conformance kit's)."""


def page_digest(asked: DeskAsk) -> str:
    """What a page put before its person, as a digest: the day's report or the question (apart
    from its key, and from the fields typed and the refusal of an earlier attempt, which follow
    from that attempt's outcome). A page asked again under the same key that shows the same is
    the same page; one that shows another (a replay gone another way: a model answering afresh)
    is not."""
    shown = (
        None if asked.observation is None else asdict(asked.observation),
        None if asked.question is None else asked.question.model_dump(),
    )
    return hashlib.sha256(json.dumps(_rounded(shown), sort_keys=True, default=str).encode()).hexdigest()


def _rounded(value: Any) -> Any:
    """`value` with its floats to 12 significant digits: a digest blind to a number's last bits,
    which another build of a numeric library (between a run and its resume) may change."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {str(key): _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


class LocalDesk(Desk):
    """A desk whose people are in this process (threads, or the pages of a server running
    here). A seat's `ask` waits until its page is answered (`submit`) or its time is up.
    Thread-safe: every seat and every person may call from a thread of its own.

    Each page's outcome is settled once: what is submitted for it first (a later submit is
    refused), or its withdrawal when its time is up. `keep` is told each outcome as it is
    settled, outside the desk's lock (a slow database holds up no other page), before `submit`
    returns True (so that "sent" means kept), with the seconds from when the page was asked; a
    page whose answer is being kept does not run out of time meanwhile (it came in time). If
    `keep` raises, `submit` raises and the page stays open, and an `ask` whose page was
    withdrawn raises (the page stays withdrawn: its seat has stopped waiting).

    `kept` holds what an earlier run of the tournament settled, by key: a key settled there or
    here whose page shows the same (page_digest) is answered at once with its outcome and no
    page is opened for it (None: withdrawn at once), so that a resumed run, or a match played
    again, replays what people did, their seconds as they were; one whose page shows something
    else is asked afresh, and its new outcome kept in place of the old. A key asked again while
    its page is open (its seat made afresh after its process died) takes the page over: the
    earlier ask returns as withdrawn, and nothing is kept for it."""

    def __init__(self, kept: Mapping[DeskKey, Kept] | None = None, keep: Keep = keep_nothing):
        self._changed = threading.Condition()
        self._open: dict[DeskKey, _Page] = {}  # pages asked and not yet settled, in the order asked
        self._settled: dict[DeskKey, Kept] = dict(kept or {})
        self._keep = keep
        self._joined: set[str] = set()

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        key, shown = asked.key, page_digest(asked)
        start = time.monotonic()
        with self._changed:
            # a page being kept as this key is asked again decides first
            self._changed.wait_for(lambda: not (key in self._open and self._open[key].keeping))
            settled = self._settled.get(key)
            if settled is not None and settled.shown == shown:
                return settled.outcome
            page = _Page(asked, shown, start, None if within is None else start + within)
            self._open[key] = page
            self._changed.notify_all()
            while page.submitted is None:
                if self._open.get(key) is not page:
                    return None  # taken over by a later ask of the same key
                left = None if page.due is None or page.keeping else page.due - time.monotonic()
                if left is not None and left <= 0:
                    del self._open[key]  # withdrawn: a later submit is refused
                    break
                self._changed.wait(left)
            else:
                return page.submitted
        self._keep(key, Kept(shown, None))  # outside the lock, as in submit
        with self._changed:
            self._settled[key] = Kept(shown, None)
        return None

    def join(self, merchant: str) -> None:
        with self._changed:
            self._joined.add(merchant)

    def joined(self) -> frozenset[str]:
        with self._changed:
            return frozenset(self._joined)

    def page(self, merchant: str) -> OpenPage | None:
        with self._changed:
            found = self._first(merchant)
            if found is None:
                return None
            left = None if found.due is None else max(0.0, found.due - time.monotonic())
            return OpenPage(found.asked, left)

    def waiting(self, merchant: str, timeout: float | None = None) -> DeskAsk | None:
        """The page of `merchant`'s seat still to be answered, the first asked, once there is
        one; None if `timeout` seconds (None: no limit) pass first (a person in a thread of
        this process waiting for their next page)."""
        with self._changed:
            found = self._changed.wait_for(lambda: self._first(merchant), timeout)
            return found.asked if found else None

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        with self._changed:
            page = self._open.get(key)
            if page is None or page.keeping:  # (a second send while the first is kept: refused)
                return False
            page.keeping = True  # its time does not run out meanwhile: what was sent is in time
            submitted = Submitted(dict(fields), time.monotonic() - page.start)
        try:  # outside the lock: a slow database holds no other page
            self._keep(key, Kept(page.shown, submitted))
        except BaseException:
            with self._changed:
                page.keeping = False  # still open, to be sent again
                self._changed.notify_all()
            raise
        with self._changed:
            if self._open.get(key) is page:
                del self._open[key]
            self._settled[key] = Kept(page.shown, submitted)
            page.submitted = submitted
            self._changed.notify_all()
            return True

    def _first(self, merchant: str) -> _Page | None:
        return next((page for key, page in self._open.items() if key.merchant == merchant), None)


class BlankDesk(Desk):
    """A person who submits every page blank at once (in no time): a day of waiting, no answer
    to a question. It holds nothing, so copies of it (a contestant pickled for Ray) are the
    same desk."""

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        return Submitted({}, 0.0)
