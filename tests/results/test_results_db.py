from __future__ import annotations

import sqlite3

import pytest
from older_arena import as_an_older_arena_left_it, columns_of
from sqlalchemy import text
from sqlalchemy.engine import make_url

from results.db import DatabaseError, engine_for
from results.store import list_tournaments, match_detail, save_match, start_tournament


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


def _with_a_match(url: str, make_match) -> int:
    """A database at `url` holding one tournament with one match; the match's id."""
    engine = engine_for(url)
    tournament = start_tournament(
        engine, "t", "t.yaml", "", "hash", 1, [("a", "rule", {}), ("b", "rule", {})], 2
    )
    match_id = save_match(engine, tournament, make_match("old", 0, {"a": 1, "b": 2}))
    engine.dispose()
    return match_id


def test_an_older_arenas_database_gains_the_columns_added_since_its_rows_reading_none(tmp_path, make_match):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old_match = _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    assert "length_refusals" not in columns_of(url, "match_result")

    engine = engine_for(url, create=False)  # what `arena leaderboard` opens
    assert {r.length_refusals for r in match_detail(engine, old_match).results} == {0}
    (tournament,) = list_tournaments(engine)
    refused = make_match("new", 1, {"a": 2, "b": 1})
    refused.merchants[0].length_refusals = 3
    new_match = save_match(engine, tournament.id, refused)
    assert [r.length_refusals for r in match_detail(engine, new_match).results] == [3, 0]
    engine.dispose()
    engine_for(url).dispose()  # opened again: nothing more to add


def test_an_older_arenas_table_lacking_a_column_not_added_since_is_refused_and_left_alone(
    tmp_path, make_match
):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    with sqlite3.connect(tmp_path / "old.db") as old:
        old.execute("ALTER TABLE match_result DROP COLUMN rejected_operations")
    with pytest.raises(DatabaseError) as caught:
        engine_for(url, create=False)
    assert str(caught.value) == (
        f"database {url} was written by an older arena (table 'match_result' lacks "
        "rejected_operations, length_refusals): name a new database with --db"
    )
    assert not {"rejected_operations", "length_refusals"} & columns_of(url, "match_result")


def test_an_older_arenas_database_opened_for_reading_only_is_left_alone_with_what_to_do(tmp_path, make_match):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    read_only_url = f"sqlite:///file:{tmp_path / 'old.db'}?mode=ro&uri=true"
    with pytest.raises(DatabaseError) as caught:
        engine_for(read_only_url, create=False)
    assert str(caught.value) == (
        "cannot add match_result.length_refusals, which this arena writes, to database "
        f"{make_url(read_only_url).render_as_string()}: attempt to write a readonly database; "
        "open it once where it may be written (`arena matches --db URL` adds it)"
    )
    with pytest.raises(DatabaseError, match=r"lacks what this arena reads \(match_result.length_refusals;"):
        engine_for(url, read_only=True)  # a reader such as `arena serve`
    assert "length_refusals" not in columns_of(url, "match_result")

    engine_for(url, create=False).dispose()  # opened once where it may be written
    engine_for(read_only_url, create=False).dispose()
    engine_for(url, read_only=True).dispose()
