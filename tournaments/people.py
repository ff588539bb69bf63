"""A run that seats people: its desk (tournaments.desk) started before the matches, the pages
handed to whoever serves them (`arena run`), and the matches held until every person has come
to their seat, so that nobody's first days pass before they have seen them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
    seated: Callable[[PeopleSide, list[str]], None],
    joined: Callable[[str], None],
) -> Iterator[RunOptions]:
    """`options` with the run's desk, once every one of `people` has come. `seated` is given
    the desk's people's side to serve pages from; `joined` is told each person as they come."""
    desk = start_desk(engine, tournament_id)
    try:
        seated(desk.people, people)
        told: set[str] = set()
        while True:
            try:
                come = desk.people.joined()
            except DeskFailed as exc:  # before any match: nothing to stop but the run
                raise ClusterError(str(exc)) from None
            for name in [name for name in people if name in come and name not in told]:
                told.add(name)
                joined(name)
            if len(told) == len(people):
                break
            time.sleep(JOIN_POLL_S)
        yield options.model_copy(update={"desk": desk.desk})
    finally:
        desk.stop()
