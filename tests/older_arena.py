"""A database as an older arena left it: its tables without the columns this version added
(results.db.ADDED_COLUMNS), on SQLite or PostgreSQL."""

from __future__ import annotations

from sqlalchemy import create_engine, inspect, text

from results.db import ADDED_COLUMNS


def as_an_older_arena_left_it(url: str) -> None:
    """Drop every column of ADDED_COLUMNS from the database at `url`."""
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            for table, columns in ADDED_COLUMNS.items():
                for column in columns:
                    connection.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
    finally:
        engine.dispose()


def columns_of(url: str, table: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {column["name"] for column in inspect(engine).get_columns(table)}
    finally:
        engine.dispose()
