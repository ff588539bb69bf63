"""Running `arena` as a user runs it, in its own process, for the tests of crashes, clusters
and databases: the command, its environment, what it left in a SQLite database, and a run
started in the background as a shell starts a job, watched through the progress lines it
prints to a log and killed with SIGKILL once a match is stored and another is under way."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
ARENA = str(BIN / "arena")
PATIENCE = 300  # seconds: only a safety net, for a run that never gets where a test waits for it


def arena(
    *args: str, cwd: Path, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [ARENA, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env or arena_env()
    )


def arena_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.pop("RAY_AUTH_MODE", None)  # as a new user has it: Ray's own defaults decide
    return env


@contextmanager
def own_ray_env() -> Iterator[dict[str, str]]:
    """`arena_env()` with a Ray temp dir of its own (RAY_TMPDIR), removed afterwards: the local
    Ray of the runs started with it keeps its sessions, sockets and logs there, not in the
    /tmp/ray that other Ray users of the machine share. Short, as Ray puts unix sockets in it."""
    temp = tempfile.mkdtemp(prefix="arena", dir="/tmp")
    try:
        yield {**arena_env(), "RAY_TMPDIR": temp}
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def stored_matches(db: Path) -> int:
    return matches_and_days(db)[0]


def matches_and_days(db: Path) -> tuple[int, int]:
    """The matches a SQLite store holds, and their market days."""
    if not db.exists():
        return 0, 0
    try:
        with sqlite3.connect(db, timeout=5) as connection:
            return connection.execute("select count(*), coalesce(sum(days), 0) from match").fetchone()
    except sqlite3.OperationalError:  # tables not created yet
        return 0, 0


def table(url: str, tournament: int = 1) -> list[dict]:
    """The tournament's table in the database at `url`, as `arena leaderboard --json` gives it."""
    from results.leaderboard import leaderboard
    from results.storage.db import engine_for

    engine = engine_for(url, create=False)
    try:
        return [row.model_dump() for row in leaderboard(engine, tournament)]
    finally:
        engine.dispose()


def assert_whole_and_equal(db: Path, reference: Path) -> None:
    """Every match of the tournament stored once and whole, one tournament, and the table of
    the uninterrupted run."""
    with sqlite3.connect(db) as connection:
        stored = [key for (key,) in connection.execute("select key from match")]
        tournaments = connection.execute("select count(*) from tournament").fetchone()[0]
    assert sorted(stored) == sorted(keys(reference)) and tournaments == 1
    assert orphan_rows(db) == {}
    assert rows_per_match(db) == rows_per_match(reference)
    assert table(f"sqlite:///{db}") == table(f"sqlite:///{reference}")


def keys(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {key for (key,) in connection.execute("select key from match")}


def _match_tables(connection: sqlite3.Connection) -> list[str]:
    """The tables with a match_id column: the rows of a match besides its own."""
    tables = [name for (name,) in connection.execute("select name from sqlite_master where type = 'table'")]
    return [
        t
        for t in tables
        if any(column[1] == "match_id" for column in connection.execute(f"pragma table_info({t})"))
    ]


def orphan_rows(db: Path) -> dict[str, int]:
    """Per table, rows of a match that is not in `match`."""
    with sqlite3.connect(db) as connection:
        counts = {
            table: connection.execute(
                f"select count(*) from {table} "
                "where match_id is not null and match_id not in (select id from match)"
            ).fetchone()[0]
            for table in _match_tables(connection)
        }
    return {table: n for table, n in counts.items() if n}


def rows_per_match(db: Path, only: set[str] | None = None) -> dict[str, dict[str, int]]:
    """Per table, the rows of each match, by match key (`only` these keys)."""
    with sqlite3.connect(db) as connection:
        return {
            table: {
                key: n
                for key, n in connection.execute(
                    f"select m.key, count(*) from {table} t join match m on m.id = t.match_id group by m.key"
                )
                if only is None or key in only
            }
            for table in _match_tables(connection)
        }


# ---- a run in the background -------------------------------------------------------------

# What `arena run` prints to a log (arena/cli/progress.py's LogLines): matches stored, days played.
PROGRESS = re.compile(r"^tournament (\d+): (\d+) of (\d+) matches, ([\d,]+) of ([\d,]+) market days")


@dataclass(frozen=True)
class Progress:
    """One progress line: matches stored and market days played (of every match started,
    those in play among them) so far, of how many."""

    matches: int
    planned: int
    days: int
    planned_days: int


class BackgroundRun:
    """`arena ARGS` started as a shell starts a job: in a session of its own, so in a process
    group of its own (its leader is the `arena` process), with stdout and stderr in `log`.
    Ray's workers each take a process group of their own, but stay in the session: the
    session is how every process of the run is found. Leaving the `with` block kills
    whatever of the run is left."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str], log: Path):
        self.log = log
        with log.open("w") as output:
            self.process = subprocess.Popen(
                [ARENA, *args], cwd=cwd, stdout=output, stderr=output, env=env, start_new_session=True
            )

    def __enter__(self) -> BackgroundRun:
        return self

    def __exit__(self, *exc: object) -> None:
        kill_session(self.process.pid)
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def progress(self) -> Progress | None:
        """The last whole progress line printed so far."""
        lines = self.output().split("\n")[:-1]  # the last piece may be a line being written
        shown = [match for match in map(PROGRESS.match, lines) if match]
        if not shown:
            return None
        numbers = [int(group.replace(",", "")) for group in shown[-1].groups()[1:]]
        return Progress(*numbers)

    def wait_for(self, what: str, done: Callable[[], bool], seconds: float = PATIENCE) -> None:
        """Poll `done` until it holds; fail, with the end of the log, if the run ends first
        or `seconds` pass."""
        deadline = time.monotonic() + seconds
        while not done():
            assert self.process.poll() is None, f"the run ended before {what}:\n{self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"no {what} within {seconds} s:\n{self.output()[-3000:]}"
            time.sleep(0.05)

    def signal_group(self, sig: signal.Signals) -> None:
        os.killpg(self.process.pid, sig)

    def kill(self) -> None:
        """SIGKILL to the run's process group, as `kill -9 -- -PGID` does; returns once its
        leader is dead."""
        self.signal_group(signal.SIGKILL)
        self.process.wait()

    def processes(self) -> dict[int, str]:
        """Every live process of the run's session, with its command line."""
        return session_processes(self.process.pid)

    def survivors(self, seconds: float = 60) -> dict[int, str]:
        """The run's processes still alive after waiting up to `seconds` for them to end (a
        Ray worker ends when it finds its raylet gone; that takes a moment)."""
        deadline = time.monotonic() + seconds
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left


@dataclass(frozen=True)
class InFlight:
    """What was seen of a run frozen just before its kill: its last progress line and what the
    store held (matches, and their market days as the progress counts them)."""

    progress: Progress
    stored: int
    stored_days: int

    @property
    def in_play(self) -> bool:
        """More days played than the stored matches had: a match played days that were not
        stored. The days of a line cover every match of the run, stored or not, and a match
        stored has at least the days it had played by then; so the excess is of a match that
        had started by the line and was still unstored when the store was read."""
        return self.progress.days > self.stored_days


def kill_with_a_match_in_flight(
    run: BackgroundRun,
    stored: Callable[[], tuple[int, int]],
    seconds: float = PATIENCE,
    kill: Callable[[], None] | None = None,
) -> InFlight:
    """Wait until at least one match is stored and at least one is in flight, then kill the
    run's process group with SIGKILL (or call `kill`, and let the run go on); what was seen
    just before (`kill_when`)."""
    return kill_when(run, stored, "a match stored and another in flight", a_match_in_flight, seconds, kill)


def a_match_in_flight(state: InFlight) -> bool:
    return state.stored >= 1 and state.in_play


def kill_when(
    run: BackgroundRun,
    stored: Callable[[], tuple[int, int]],
    what: str,
    moment: Callable[[InFlight], bool],
    seconds: float = PATIENCE,
    kill: Callable[[], None] | None = None,
) -> InFlight:
    """Wait for the `moment` (`what`) the run's last progress line and its store show, then
    kill the run's process group with SIGKILL (or call `kill`, and let the run go on); what
    was seen just before.

    `stored()` reads the run's store: (matches, their market days). To be sure of what the
    kill interrupts, the group is first stopped (SIGSTOP): only the `arena` process writes to
    the store, so a stopped run writes nothing until the kill; the store and the last line
    are read then, and the kill done if they still show the moment, else the run let go on."""
    deadline = time.monotonic() + seconds

    def seen() -> InFlight | None:
        progress = run.progress()
        return None if progress is None else InFlight(progress, *stored())

    def ready(state: InFlight | None) -> bool:
        return state is not None and moment(state)

    while True:
        run.wait_for(what, lambda: ready(seen()), deadline - time.monotonic())
        run.signal_group(signal.SIGSTOP)
        frozen = seen()
        if ready(frozen):
            assert frozen is not None
            if kill is None:
                run.kill()
            else:
                kill()
                run.signal_group(signal.SIGCONT)
            return frozen
        run.signal_group(signal.SIGCONT)


def session_processes(session_id: int) -> dict[int, str]:
    """Every live process of a session, with its command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (
                (entry / "stat").read_text().rpartition(")")[2].split()
            )  # after "pid (name)": state, ppid, pgrp, session, ...
            state, session = fields[0], int(fields[3])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):  # it ended meanwhile
            continue
        if session == session_id and state != "Z":
            found[int(entry.name)] = command
    return found


def kill_session(session_id: int, seconds: float = 30) -> None:
    """SIGKILL to every process of a session, as a machine that dies takes them all, until
    none is left (one may be starting meanwhile)."""
    deadline = time.monotonic() + seconds
    while (left := session_processes(session_id)) and time.monotonic() < deadline:
        for pid in left:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.05)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
