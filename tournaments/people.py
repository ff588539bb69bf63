"""A run that seats people: its desk (tournaments.desk) started before the matches, the pages
served by whoever serves them (`arena run`) while the run plays, and the matches held until
every person has come to their seat, so that nobody's first days pass before they have seen
them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Engine

from contestants.base import RunOptions
from contestants.desk import PeopleSide
from tournaments.cluster import ClusterError
from tournaments.desk import DeskFailed, start_desk

JOIN_POLL_S = 0.5  # how often the run looks for people who have come, while it waits for them


@contextmanager
def people_seated(
    engine: Engine,
    tournament_id: int,
    people: list[str],
    options: RunOptions,
    serving: Callable[[PeopleSide, list[str]], AbstractContextManager[object]],
    joined: Callable[[str], None],
) -> Iterator[RunOptions]:
    """`options` with the run's desk, once every one of `people` has come. `serving` serves
    pages from the desk's people's side while the run plays; they end before the desk does, so
    that no page is left asking a desk that is gone. `joined` is told each person as they come."""
    desk = start_desk(engine, tournament_id)
    try:
        with serving(desk.people, people):
            _wait_for(desk.people, people, joined)
            yield options.model_copy(update={"desk": desk.desk})
    finally:
        desk.stop()


def _wait_for(people_side: PeopleSide, people: list[str], joined: Callable[[str], None]) -> None:
    """Once every one of `people` has come to their seat, each told to `joined` as they come."""
    told: set[str] = set()
    while True:
        try:
            come = people_side.joined()
        except DeskFailed as exc:  # before any match: nothing to stop but the run
            raise ClusterError(str(exc)) from None
        for name in [name for name in people if name in come and name not in told]:
            told.add(name)
            joined(name)
        if len(told) == len(people):
            return
        time.sleep(JOIN_POLL_S)
