from __future__ import annotations

import pytest
from sqlalchemy import text

from results.db import DatabaseError, engine_for


def test_sqlite_gets_wal_and_foreign_keys(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'a.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
    engine.dispose()


def test_url_from_environment_then_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_DB", f"sqlite:///{tmp_path / 'env.db'}")
    engine_for().dispose()
    assert (tmp_path / "env.db").exists()

    monkeypatch.delenv("ARENA_DB")
    monkeypatch.chdir(tmp_path)
    engine_for().dispose()
    assert (tmp_path / "arena.db").exists()


def test_argument_wins_over_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_DB", f"sqlite:///{tmp_path / 'env.db'}")
    engine_for(f"sqlite:///{tmp_path / 'arg.db'}").dispose()
    assert (tmp_path / "arg.db").exists()
    assert not (tmp_path / "env.db").exists()


def test_unreachable_postgres_hides_password():
    with pytest.raises(DatabaseError) as caught:
        engine_for("postgresql://arena:s3cret-pw@127.0.0.1:1/arena")
    message = str(caught.value)
    assert "s3cret-pw" not in message
    assert "postgresql://arena:***@127.0.0.1:1/arena" in message
    assert "\n" not in message


def test_unparseable_url_hides_password():
    with pytest.raises(DatabaseError) as caught:
        engine_for("postgresql://arena:s3cret-pw@host:notaport/arena")
    assert "s3cret-pw" not in str(caught.value)
    assert "cannot parse" in str(caught.value)


def test_error_names_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("ARENA_DB", f"sqlite:///{tmp_path / 'no-such-dir' / 'a.db'}")
    with pytest.raises(DatabaseError, match=r"\(from \$ARENA_DB\)"):
        engine_for()


def test_unopenable_sqlite_file(tmp_path):
    with pytest.raises(DatabaseError, match="cannot open database"):
        engine_for(f"sqlite:///{tmp_path / 'no-such-dir' / 'a.db'}")


def test_a_database_with_an_older_layout_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "old.db"
    engine = engine_for(f"sqlite:///{path}")
    with engine.begin() as connection:  # what an older arena left: day records one row per merchant-day
        connection.execute(text("CREATE TABLE day (id INTEGER PRIMARY KEY, record TEXT)"))
        connection.execute(text("DROP TABLE day_log"))
    engine.dispose()
    with pytest.raises(
        DatabaseError, match=r"older arena \(table 'day'.*name a new database with --db"
    ) as caught:
        engine_for(f"sqlite:///{path}")
    assert "\n" not in str(caught.value)
    with engine.connect() as connection:  # nothing created in it
        tables = {
            row[0] for row in connection.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
        }
    assert "day_log" not in tables and "day" in tables
    engine.dispose()


def test_a_table_lacking_a_column_is_refused(tmp_path):
    path = tmp_path / "old.db"
    engine = engine_for(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE metric"))
        connection.execute(text("CREATE TABLE metric (id INTEGER PRIMARY KEY, name TEXT)"))
    engine.dispose()
    with pytest.raises(DatabaseError, match=r"table 'metric' lacks .*value"):
        engine_for(f"sqlite:///{path}")
    engine_for(f"sqlite:///{tmp_path / 'new.db'}").dispose()  # a new file is fine
