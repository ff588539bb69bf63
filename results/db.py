"""Opening the database: one engine per URL, tables created, SQLite tuned for a tournament."""

from __future__ import annotations

import os
import re

from sqlalchemy import Engine, create_engine, event, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlmodel import SQLModel

from results import tables  # noqa: F401  (registers the tables on SQLModel.metadata)
from results.errors import DatabaseError

DEFAULT_URL = "sqlite:///arena.db"


def engine_for(url: str | None = None, *, create: bool = True) -> Engine:
    """An engine for `url`, else $ARENA_DB, else sqlite:///arena.db, with all tables created.

    With create=False (commands that only read) a SQLite file that does not exist is an
    error rather than a new empty database left behind.

    SQLite gets WAL (readers do not block the writer while a tournament runs) and enforced
    foreign keys. Raises DatabaseError, with any password masked, when the URL cannot be
    parsed, the database cannot be opened, or it holds an older layout of the tables (then
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
    if not create and parsed.get_backend_name() == "sqlite" and not _sqlite_file_exists(parsed.database):
        raise DatabaseError(f"no database at {shown}: run a tournament first, or name one with --db")
    engine = None
    try:
        engine = create_engine(parsed)
        if parsed.get_backend_name() == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        outdated = _outdated_layout(engine)
        if outdated is None:
            SQLModel.metadata.create_all(engine)
    except (SQLAlchemyError, ImportError) as exc:
        if engine is not None:
            engine.dispose()
        raise DatabaseError(f"cannot open database {shown}: {_reason(exc)}") from exc
    if outdated is not None:
        engine.dispose()
        raise DatabaseError(f"database {shown} was written by an older arena ({outdated}): name a new database with --db")
    return engine


# Tables an older arena wrote that this one no longer reads, and what replaced them.
RETIRED_TABLES = {"day": "one row per merchant-day, now one day_log row per match"}


def _outdated_layout(engine: Engine) -> str | None:
    """What makes the database's tables unusable by this version (a retired table, a table
    lacking a column this version writes), or None. Tables not there yet are fine: they
    are created."""
    inspector = inspect(engine)
    present = set(inspector.get_table_names())
    retired = sorted(present & RETIRED_TABLES.keys())
    if retired:
        return f"table {retired[0]!r}: {RETIRED_TABLES[retired[0]]}"
    for table in SQLModel.metadata.sorted_tables:
        if table.name in present:
            columns = {column["name"] for column in inspector.get_columns(table.name)}
            missing = [column.name for column in table.columns if column.name not in columns]
            if missing:
                return f"table {table.name!r} lacks {', '.join(missing)}"
    return None


def _sqlite_file_exists(database: str | None) -> bool:
    in_memory = database in (None, "", ":memory:") or database.startswith("file::memory:")
    return in_memory or os.path.exists(database)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # with WAL: safe against crashes, not power loss
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _mask(raw: str) -> str:
    """Hide the password of a URL that SQLAlchemy could not parse (so cannot mask itself)."""
    return re.sub(r"(//[^/:@]*:).*@", r"\1***@", raw)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ImportError):
        return f"database driver not installed ({exc})"
    cause = exc.orig if isinstance(exc, DBAPIError) else exc
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__
