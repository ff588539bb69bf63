"""Desks in this process (contestants.base.Desk): `LocalDesk`, where threads of this process
play the people, taking what is asked and submitting what they type; `BlankDesk`, a person
who submits every page blank at once.

A run that serves its pages to browsers has a desk of its own; these are for playing a
match in one process (tests, the conformance kit).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from contestants.base import Desk, DeskAsk, DeskKey, Submitted


class LocalDesk(Desk):
    """A desk whose people are threads of this process. A seat's `ask` waits until its page is
    answered (`submit`) or its time is up; a person's `waiting` shows them their seat's page
    still to answer, as reloading a page shows it again, and `submit` answers it. Thread-safe:
    every seat and every person may call from a thread of its own."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._open: dict[DeskKey, DeskAsk] = {}  # pages asked and not yet answered, in the order asked
        self._answers: dict[DeskKey, dict[str, str]] = {}

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        start = time.monotonic()
        due = None if within is None else start + within
        with self._changed:
            self._open[asked.key] = asked
            self._changed.notify_all()
            while asked.key not in self._answers:
                left = None if due is None else due - time.monotonic()
                if left is not None and left <= 0:
                    del self._open[asked.key]  # withdrawn: a later submit is refused
                    return None
                self._changed.wait(left)
            return Submitted(self._answers.pop(asked.key), time.monotonic() - start)

    def waiting(self, merchant: str, timeout: float | None = None) -> DeskAsk | None:
        """The page of `merchant`'s seat still to be answered, the first asked, once there is
        one; None if `timeout` seconds (None: no limit) pass first."""
        with self._changed:
            found = self._changed.wait_for(lambda: self._first(merchant), timeout)
            return found or None

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        """Answer the page `key` with `fields`, by name; False if it is not open (withdrawn when
        its time was up, answered already, or never asked)."""
        with self._changed:
            if self._open.pop(key, None) is None:
                return False
            self._answers[key] = dict(fields)
            self._changed.notify_all()
            return True

    def _first(self, merchant: str) -> DeskAsk | None:
        return next((asked for key, asked in self._open.items() if key.merchant == merchant), None)


class BlankDesk(Desk):
    """A person who submits every page blank at once (in no time): a day of waiting, no answer
    to a question. It holds nothing, so copies of it (a contestant pickled for Ray) are the
    same desk."""

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        return Submitted({}, 0.0)
