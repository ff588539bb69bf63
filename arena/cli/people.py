"""What `arena run` shows of a run: its progress (arena.cli.progress) and, where it seats people,
their pages served while it plays, one link per seat printed before the first match, and each
person told on stderr as they come."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from arena.cli.printing import err_print, out_print
from arena.cli.progress import Bars, LogLines
from contestants.desk import PeopleSide


class RunShown:
    """A run's observer (tournaments.run.RunObserver): its progress as `progress` shows it;
    once the run seats its people, their pages served on `listener` (bound on `host`)."""

    def __init__(self, progress: Bars | LogLines, listener: socket.socket | None, host: str):
        self.progress, self.listener, self.host = progress, listener, host
        self.names: list[str] = []
        self.come = 0

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.progress.started(tournament_id, matches, days, skipped)

    def advanced(self, matches_done: int, days_done: int) -> None:
        self.progress.advanced(matches_done, days_done)

    def lost(self, match_key: str, reason: str) -> None:
        self.progress.lost(match_key, reason)

    def judged(self, done: int, total: int) -> None:
        self.progress.judged(done, total)

    @contextmanager
    def seated(self, people: PeopleSide, names: list[str]) -> Iterator[None]:
        """Their pages served while the run plays, each person's link printed first."""
        from seats.app import serve_seats  # (Starlette and uvicorn: imported by a run with people alone)

        assert self.listener is not None, "a run that seats people is given where to serve their pages"
        served, self.names = serve_seats(people, names, self.listener, self.host), names
        try:
            out_print(
                f"Each person's link to their seat (the matches start once all {len(names)} have come):"
            )
            for name in names:
                out_print(f"  {name}: {served.links[name]}")
            yield
        finally:
            served.stop()

    def joined(self, name: str) -> None:
        self.come += 1
        err_print(f"{name} has come to their seat ({self.come} of {len(self.names)})")
