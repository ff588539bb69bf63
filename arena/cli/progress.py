"""A run's progress on stderr: bars on a terminal, lines in a log."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from arena.cli.printing import err


class Bars:
    """Progress on a terminal: a bar of the matches, one of the market days, and one of the
    judges' readings of the matches (each match once per judge) where they judge."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.bars: tuple[TaskID, TaskID] | None = None  # matches, market days: from `started` on
        self.judging: TaskID | None = None  # from the first `judged` on

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.bars = (
            self.progress.add_task(f"tournament {tournament_id}: matches", total=matches, completed=skipped),
            self.progress.add_task("market days", total=days),
        )

    def advanced(self, matches_done: int, days_done: int) -> None:
        assert self.bars is not None  # a run starts before it advances
        matches, days = self.bars
        self.progress.update(matches, completed=matches_done)
        self.progress.update(days, completed=days_done)

    def lost(self, match_key: str, reason: str) -> None:
        self.progress.console.print(
            _lost_line(match_key, reason), markup=False, highlight=False, soft_wrap=True
        )

    def judged(self, done: int, total: int) -> None:
        if self.judging is None:
            self.judging = self.progress.add_task(JUDGED, total=total)
        self.progress.update(self.judging, completed=done, total=total)


JUDGED = "matches judged (once per judge)"


def _lost_line(match_key: str, reason: str) -> str:
    return f"match {match_key} lost, {reason}: playing it again from its start"


class LogLines:
    """Progress for a log (stderr is not a terminal: nohup, CI, a pipe), where bars would be
    drawn once, at the end: a line when the run starts, then one each time another
    twentieth of the market days has been played, or a minute has passed with some played,
    and one when every match is done. The days count those of the matches in play: more
    days than the finished matches had means that a match is under way."""

    STEPS = 20
    QUIET_SECONDS = 60.0

    def __init__(self, console: Console):
        self.console = console
        self.tournament_id: int | None = None  # known once the run has started
        self.told: tuple[int, int] | None = None
        self.told_step = 0
        self.judged_step = 0

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.tournament_id, self.matches, self.days = tournament_id, matches, days
        self.begun = self.told_at = time.monotonic()
        done = f", {skipped} of them done before" if skipped else ""
        self._line(f"{matches} matches, {days:,} market days{done}")

    def advanced(self, matches_done: int, days_done: int) -> None:
        now, step = time.monotonic(), days_done * self.STEPS // max(self.days, 1)
        news = (
            step > self.told_step or matches_done == self.matches or now - self.told_at >= self.QUIET_SECONDS
        )
        if (matches_done, days_done) == self.told or not news:
            return
        self.told, self.told_step, self.told_at = (matches_done, days_done), step, now
        elapsed = datetime.timedelta(seconds=round(now - self.begun))
        self._line(
            f"{matches_done} of {self.matches} matches, {days_done:,} of {self.days:,} market days "
            f"after {elapsed}"
        )

    def lost(self, match_key: str, reason: str) -> None:
        self._line(_lost_line(match_key, reason))

    def judged(self, done: int, total: int) -> None:
        """A line each time another twentieth of the judging is done, and at its end."""
        step = done * self.STEPS // max(total, 1)
        if step > self.judged_step or done == total:
            self.judged_step = step
            self._line(f"{done} of {total} {JUDGED}")

    def _line(self, text: str) -> None:
        where = f"tournament {self.tournament_id}: " if self.tournament_id is not None else ""
        self.console.print(f"{where}{text}", markup=False, highlight=False, soft_wrap=True)


@contextmanager
def shown_progress() -> Iterator[Bars | LogLines]:
    """The observer of a run (tournaments.run.run_tournament): bars while it lasts on a
    terminal, else LogLines."""
    if not err.is_terminal:
        yield LogLines(err)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
    )
    with progress:
        yield Bars(progress)
