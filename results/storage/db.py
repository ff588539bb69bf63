"""Opening the database: one engine per URL, tables created, SQLite tuned for a tournament."""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    MetaData,
    Table,
    create_engine,
    event,
    false,
    inspect,
    literal,
    select,
    text,
)
from sqlalchemy.engine import URL, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError, DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry
from sqlmodel import SQLModel

from results.errors import DatabaseError
from results.storage import schema  # noqa: F401  (registers the tables on SQLModel.metadata)

DEFAULT_URL = "sqlite:///arena.db"
RECONNECT_WAITS_S = (
    1.0,
    2.0,
    4.0,
    8.0,
    15.0,
)  # half a minute: a server restarting, a connection a proxy dropped
CONNECT_TIMEOUT_S = 10  # for a database server to answer a new connection
P = ParamSpec("P")
T = TypeVar("T")


def engine_for(
    url: str | None = None, *, create: bool = True, writes: bool | None = None, read_only: bool = False
) -> Engine:
    """An engine for `url`, else $ARENA_DB, else sqlite:///arena.db, with all tables created.

    `read_only` (a reader such as `arena serve`) creates nothing, changes nothing (not even
    SQLite's journal mode) and makes every connection refuse writes: SQLite's query_only,
    PostgreSQL's read-only transactions. So it refuses a database that lacks tables or
    columns this arena reads (an older arena's): any other command adds them.

    With create=False (commands that work on stored results) a SQLite file that does not
    exist is an error rather than a new empty database left behind. For a caller that
    `writes` (by default one that may create: a run) the right to write every table is tried
    at once, by an insert of no rows into each: a user who may only read hears it in one
    line before anything is played, rather than from the first match's write.

    SQLite gets WAL (readers do not block the writer while a tournament runs) and enforced
    foreign keys. On PostgreSQL the layout is checked and the tables created in one
    transaction that holds an advisory lock, so runs that start at once on an empty
    database create them once: two concurrent CREATE TABLEs of one name collide in
    PostgreSQL's catalog. At that check the tables an older arena named otherwise are renamed
    (RENAMED_TABLES) and the columns its tables lack that have a value for the rows already
    there (ADDED_COLUMNS) are added. Raises DatabaseError, with
    any password masked, when the URL cannot be parsed, the database cannot be opened or
    written, or it holds an older layout of the tables that cannot be brought forward (then
    nothing is written to it).
    """
    from_env = not url and bool(os.environ.get("ARENA_DB"))
    raw = url or os.environ.get("ARENA_DB") or DEFAULT_URL
    source = " (from $ARENA_DB)" if from_env else ""
    try:
        parsed = make_url(raw)
    except (ArgumentError, ValueError):
        raise DatabaseError(f"cannot parse database URL {_mask(raw)!r}{source}") from None
    shown = parsed.render_as_string(hide_password=True) + source
    sqlite = parsed.get_backend_name() == "sqlite"
    if (read_only or not create) and sqlite and not _sqlite_file_exists(parsed):
        raise DatabaseError(f"no database at {shown}: run a tournament first, or name one with --db")
    engine, failed, advice = None, "cannot open database", ""
    try:
        engine = create_engine(parsed, **_server_options(parsed))
        if read_only:
            engine = engine.execution_options(postgresql_readonly=True)
        if sqlite:
            event.listen(engine, "connect", _sqlite_reading if read_only else _sqlite_pragmas)
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql" and not read_only:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LAYOUT_LOCK})
            outdated, renamed, added = _outdated_layout(connection)
            missing = (_missing_tables(connection) + [_named(c) for c in added]) if read_only else []
            if outdated is None and not read_only:
                if renamed or added:
                    changes = [f"rename table {old} to {new}" for old, new in renamed]
                    changes += [f"add {_named(column)}" for column in added]
                    failed = f"cannot {', '.join(changes)} (the layout this arena writes) in database"
                    advice = (
                        "; open it once where it may be written (`uv run arena matches --db URL` does it)"
                    )
                    _rename_tables(connection, renamed)
                    _add_columns(connection, added)
                failed, advice = "cannot write to database", ""
                SQLModel.metadata.create_all(connection)
                if create if writes is None else writes:
                    _try_writing(connection)
    except (SQLAlchemyError, ImportError) as exc:
        if engine is not None:
            engine.dispose()
        raise DatabaseError(f"{failed} {shown}: {_reason(exc)}{advice}") from exc
    if outdated is not None:
        engine.dispose()
        raise DatabaseError(
            f"database {shown} was written by an older arena ({outdated}): name a new database with --db"
        )
    if missing:
        engine.dispose()
        raise DatabaseError(
            f"database {shown} lacks what this arena reads ({', '.join(missing)}; an older arena wrote it): "
            "any other arena command on it adds them, `uv run arena matches --db URL` for one"
        )
    return engine


# The advisory lock that runs hold while they check and create the tables (PostgreSQL's
# advisory locks belong to one database: runs on other databases of the server do not wait).
LAYOUT_LOCK = 0x6172656E61  # "arena"


def _server_options(url: URL) -> dict[str, Any]:
    """For a database server: a connection found closed when taken from the pool (a restart,
    a proxy's idle timeout, while a run waits for its matches) is replaced, and a server that
    does not answer is given up on in seconds rather than the system's minutes."""
    backend = url.get_backend_name()
    if backend == "sqlite":
        return {}
    return {
        "pool_pre_ping": True,
        "connect_args": {"connect_timeout": CONNECT_TIMEOUT_S} if backend == "postgresql" else {},
    }


def _try_writing(connection: Connection) -> None:
    """Insert no rows into every table: refused, as a write, where the user may only read."""
    for table in SQLModel.metadata.sorted_tables:
        connection.execute(table.insert().from_select(list(table.columns), select(table).where(false())))


# Tables an older arena wrote that this one no longer reads, and what replaced them.
RETIRED_TABLES = {"day": "one row per merchant-day, now one day_log row per match"}

# Tables an older arena wrote under another name, by that name: a database holding one has it
# renamed when a command opens it, as it gains ADDED_COLUMNS.
RENAMED_TABLES = {"probe": "recall_question"}  # "probe" names the deviation probe alone

# Columns this version added to tables an older arena wrote, each with the value the rows
# already there take: a database that lacks one gains it when a command opens it (a reader
# such as `arena serve` names it instead, changing nothing). A missing column not named here
# is refused.
ADDED_COLUMNS: dict[str, dict[str, int]] = {
    "match_result": {"length_refusals": 0},  # the older arena recorded no refusal
}


def _outdated_layout(
    connection: Connection,
) -> tuple[str | None, list[tuple[str, str]], list[Column[Any]]]:
    """What makes the database's tables unusable by this version (a retired table, a table
    under its old name beside one under its new, a table lacking a column this version
    writes), or None; the tables of RENAMED_TABLES it holds under their old names (old, new);
    and the columns of ADDED_COLUMNS that its tables lack. Tables not there yet are fine:
    they are created."""
    inspector = inspect(connection)
    present = set(inspector.get_table_names())
    retired = sorted(present & RETIRED_TABLES.keys())
    if retired:
        return f"table {retired[0]!r}: {RETIRED_TABLES[retired[0]]}", [], []
    renamed = [(old, new) for old, new in RENAMED_TABLES.items() if old in present]
    for old, new in renamed:
        if new in present:
            return f"table {old!r} beside {new!r}, its name in this arena", [], []
    name_there = {name: name for name in present} | {new: old for old, new in renamed}
    added: list[Column[Any]] = []
    for table in SQLModel.metadata.sorted_tables:
        if table.name in name_there:
            columns = {column["name"] for column in inspector.get_columns(name_there[table.name])}
            missing = [column for column in table.columns if column.name not in columns]
            addable = [column for column in missing if column.name in ADDED_COLUMNS.get(table.name, {})]
            if len(addable) < len(missing):
                lacking = ", ".join(column.name for column in missing)
                return f"table {name_there[table.name]!r} lacks {lacking}", [], []
            added += addable
    return None, renamed, added


def _rename_tables(connection: Connection, renamed: list[tuple[str, str]]) -> None:
    """Rename each table (old, new), its indexes made again under the names this version
    gives them (SQLite cannot rename an index)."""
    quote = connection.dialect.identifier_preparer.quote
    for old, new in renamed:
        older = Table(old, MetaData(), autoload_with=connection)
        connection.execute(text(f"ALTER TABLE {quote(old)} RENAME TO {quote(new)}"))
        for index in older.indexes:
            index.drop(connection)
        for index in SQLModel.metadata.tables[new].indexes:
            index.create(connection)


def _add_columns(connection: Connection, columns: list[Column[Any]]) -> None:
    """Add each column to its table, NOT NULL, the rows already there holding its value of
    ADDED_COLUMNS."""
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    for column in columns:
        default = literal(ADDED_COLUMNS[column.table.name][column.name]).compile(
            dialect=dialect, compile_kwargs={"literal_binds": True}
        )
        connection.execute(
            text(
                f"ALTER TABLE {quote(column.table.name)} ADD COLUMN {quote(column.name)} "
                f"{column.type.compile(dialect)} NOT NULL DEFAULT {default}"
            )
        )


def _named(column: Column[Any]) -> str:
    return f"{column.table.name}.{column.name}"


def _missing_tables(connection: Connection) -> list[str]:
    """This version's tables that the database lacks."""
    return sorted(set(SQLModel.metadata.tables) - set(inspect(connection).get_table_names()))


def _sqlite_file_exists(url: URL) -> bool:
    """Whether the SQLite database of `url` is there: a file name, or with ?uri=true a URI
    such as file:results.storage.db?mode=ro (a database opened for reading only)."""
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file::memory:"):
        return True
    if url.query.get("uri") == "true":
        database = database.removeprefix("file:")
    return os.path.exists(database)


def _sqlite_pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # with WAL: safe against crashes, not power loss
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_reading(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA query_only=ON")  # a write is refused: "attempt to write a readonly database"
    cursor.close()


def reconnecting(write: Callable[P, T]) -> Callable[P, T]:
    """A write of the store that may run twice (store.save_matches: a match already stored is
    not stored again), called again after each of RECONNECT_WAITS_S while the database cannot
    be reached, so that a run rides out a server's restart: a write is one transaction, undone
    when the connection is lost before its commit, and one whose commit was made but not
    answered is harmless to make again. Other failures (a read-only database, a full disk)
    are not waited out."""

    @functools.wraps(write)
    def with_reconnects(*args: P.args, **kwargs: P.kwargs) -> T:
        for wait in RECONNECT_WAITS_S:
            try:
                return write(*args, **kwargs)
            except OperationalError as exc:
                if not _unreachable(exc):
                    raise
                time.sleep(wait)
        return write(*args, **kwargs)

    return with_reconnects


def _unreachable(exc: OperationalError) -> bool:
    """No connection could be made (no statement was sent), or an open one was lost."""
    return exc.connection_invalidated or exc.statement is None


def describe_failure(engine: Engine, exc: SQLAlchemyError) -> str:
    """One line on a database that failed while in use (its server gone, its disk full), its
    password masked."""
    return f"database {engine.url.render_as_string(hide_password=True)} failed: {_reason(exc)}"


def _mask(raw: str) -> str:
    """Hide the password of a URL that SQLAlchemy could not parse (so cannot mask itself)."""
    return re.sub(r"(//[^/:@]*:).*@", r"\1***@", raw)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ImportError):
        return f"database driver not installed ({exc})"
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__
