"""A database as an older arena left it: its tables under their old names (results.storage.db.RENAMED_TABLES,
with their indexes named after them) and without the columns this version added
(results.storage.db.ADDED_COLUMNS), on SQLite or PostgreSQL."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect, text
from sqlmodel import SQLModel

from results.storage.db import ADDED_COLUMNS, RENAMED_TABLES


def as_an_older_arena_left_it(url: str) -> None:
    """Give every table of RENAMED_TABLES its old name and drop every column of ADDED_COLUMNS
    from the database at `url`."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            for table, added in ADDED_COLUMNS.items():
                for column in added:
                    connection.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
            for old, new in RENAMED_TABLES.items():
                connection.execute(text(f"ALTER TABLE {new} RENAME TO {old}"))
                for index in SQLModel.metadata.tables[new].indexes:
                    columns = ", ".join(column.name for column in index.columns)
                    connection.execute(text(f"DROP INDEX {index.name}"))
                    connection.execute(
                        text(f"CREATE INDEX {index.name.replace(new, old)} ON {old} ({columns})")
                    )
    finally:
        engine.dispose()


def columns_of(url: str, table: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {column["name"] for column in inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def layout_of(url: str) -> dict[str, tuple[set[str], set[str]]]:
    """Each table of the database at `url`: its columns' and its indexes' names."""
    engine = create_engine(url)
    try:
        inspector = inspect(engine)
        return {
            table: (
                {column["name"] for column in inspector.get_columns(table)},
                {str(index["name"]) for index in inspector.get_indexes(table)},
            )
            for table in inspector.get_table_names()
        }
    finally:
        engine.dispose()
