"""Desks (contestants.base.Desk): what carries a human seat's pages to its person and back.

A desk has two sides. The seats' side is `Desk.ask`, which waits. The people's side
(`PeopleSide`) is what the pages a person plays on call, and none of it waits: who has
joined, the page a person's seat has open now, and what they submit for it.

`LocalDesk` holds its open pages in this process (the run's desk holds one of its own in an
actor, tournaments.desk); `BlankDesk` is a person who submits every page blank at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import NamedTuple, Protocol

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
        when its time was up, answered already, or never asked)."""


class LocalDesk(Desk):
    """A desk whose people are in this process (threads, or the pages of a server running
    here). A seat's `ask` waits until its page is answered (`submit`) or its time is up.
    Thread-safe: every seat and every person may call from a thread of its own."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        # pages asked and not yet answered, in the order asked, with when they are due (monotonic)
        self._open: dict[DeskKey, tuple[DeskAsk, float | None]] = {}
        self._answers: dict[DeskKey, dict[str, str]] = {}
        self._joined: set[str] = set()

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        start = time.monotonic()
        due = None if within is None else start + within
        with self._changed:
            self._open[asked.key] = (asked, due)
            self._changed.notify_all()
            while asked.key not in self._answers:
                left = None if due is None else due - time.monotonic()
                if left is not None and left <= 0:
                    del self._open[asked.key]  # withdrawn: a later submit is refused
                    return None
                self._changed.wait(left)
            return Submitted(self._answers.pop(asked.key), time.monotonic() - start)

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
            asked, due = found
            return OpenPage(asked, None if due is None else max(0.0, due - time.monotonic()))

    def waiting(self, merchant: str, timeout: float | None = None) -> DeskAsk | None:
        """The page of `merchant`'s seat still to be answered, the first asked, once there is
        one; None if `timeout` seconds (None: no limit) pass first (a person in a thread of
        this process waiting for their next page)."""
        with self._changed:
            found = self._changed.wait_for(lambda: self._first(merchant), timeout)
            return found[0] if found else None

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        with self._changed:
            if self._open.pop(key, None) is None:
                return False
            self._answers[key] = dict(fields)
            self._changed.notify_all()
            return True

    def _first(self, merchant: str) -> tuple[DeskAsk, float | None] | None:
        return next((opened for key, opened in self._open.items() if key.merchant == merchant), None)


class BlankDesk(Desk):
    """A person who submits every page blank at once (in no time): a day of waiting, no answer
    to a question. It holds nothing, so copies of it (a contestant pickled for Ray) are the
    same desk."""

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        return Submitted({}, 0.0)
