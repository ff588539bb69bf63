"""At most N model calls in flight at once per provider endpoint, within this process.

An actor hosting a language-model contestant serves many matches on many threads, each match
with its own provider instance; without a shared limit they would all call the API at once
and run into its rate limits. The limit is a property of the caller (each contestant's
`max_concurrent_calls`), so a call waits until fewer than its own limit of calls to the same
endpoint are in flight, whoever made them. A call keeps its place through its retries and
the waits between them, so an API that asks to slow down is not called harder.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager


class InFlight:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._calls: Counter[Hashable] = Counter()

    @contextmanager
    def slot(self, endpoint: Hashable, limit: int) -> Iterator[None]:
        """Hold one of `limit` places for a call to `endpoint` while the block runs."""
        with self._changed:
            self._changed.wait_for(lambda: self._calls[endpoint] < limit)
            self._calls[endpoint] += 1
        try:
            yield
        finally:
            with self._changed:
                self._calls[endpoint] -= 1
                self._changed.notify_all()


IN_FLIGHT = InFlight()
