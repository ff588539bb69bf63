from __future__ import annotations

import sqlite3

import pytest
from older_arena import as_an_older_arena_left_it, layout_of
from sqlalchemy import text
from sqlalchemy.engine import make_url

from results.recording import save_match
from results.records import RecallResult
from results.storage.db import DatabaseError, engine_for
from results.storage.store import list_tournaments, match_detail, start_tournament


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


RECALLED = RecallResult(
    merchant="m0",
    day=3,
    asked_day=1,
    fact="cash",
    product=None,
    truth=120.0,
    answer=132.0,
    relative_error=0.1,
)


def _with_a_match(url: str, make_match) -> int:
    """A database at `url` holding one tournament with one match, a recall question among its
    records; the match's id."""
    engine = engine_for(url)
    tournament = start_tournament(
        engine, "t", "t.yaml", "", "hash", 1, [("a", "rule", {}), ("b", "rule", {})], 2
    )
    match = make_match("old", 0, {"a": 1, "b": 2})
    match.recalls = [RECALLED]
    match_id = save_match(engine, tournament, match)
    engine.dispose()
    return match_id


def test_an_older_arenas_database_is_brought_forward_to_this_arenas_layout_its_rows_kept(
    tmp_path, make_match
):
    """Its recall questions under their table's old name (`probe`), its results without the
    columns added since: a command that opens it renames the one and adds the others, so that
    the database then has the layout of a new one and reads as it did."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    old_match = _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    older = layout_of(url)
    assert "recall_question" not in older and older["probe"][1] == {"ix_probe_match_id"}
    assert "length_refusals" not in older["match_result"][0]

    engine = engine_for(url, create=False)  # what `arena leaderboard` opens
    engine_for(f"sqlite:///{tmp_path / 'new.db'}").dispose()
    assert layout_of(url) == layout_of(f"sqlite:///{tmp_path / 'new.db'}")
    old = match_detail(engine, old_match)
    assert old.recalls == [RECALLED] and {r.length_refusals for r in old.results} == {0}
    (tournament,) = list_tournaments(engine)
    refused = make_match("new", 1, {"a": 2, "b": 1})
    refused.merchants[0].length_refusals = 3
    refused.recalls = [RECALLED.model_copy(update={"merchant": "m1", "answer": None, "relative_error": None})]
    new_match = save_match(engine, tournament.id, refused)
    new = match_detail(engine, new_match)
    assert [r.length_refusals for r in new.results] == [3, 0] and new.recalls == refused.recalls
    engine.dispose()
    engine_for(url).dispose()  # opened again: nothing more to change
    assert layout_of(url) == layout_of(f"sqlite:///{tmp_path / 'new.db'}")


def test_an_older_arenas_table_lacking_a_column_not_added_since_is_refused_and_left_alone(
    tmp_path, make_match
):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    with sqlite3.connect(tmp_path / "old.db") as old:
        old.execute("ALTER TABLE match_result DROP COLUMN rejected_operations")
    older = layout_of(url)
    with pytest.raises(DatabaseError) as caught:
        engine_for(url, create=False)
    assert str(caught.value) == (
        f"database {url} was written by an older arena (table 'match_result' lacks "
        "rejected_operations, length_refusals): name a new database with --db"
    )
    assert layout_of(url) == older  # the recall questions' table not renamed either


def test_a_recall_questions_table_under_its_old_name_beside_its_new_is_refused_and_left_alone(
    tmp_path, make_match
):
    """What an older arena leaves when it writes to a database this one brought forward: its
    recall questions in a `probe` table of its own, which this arena would not read."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _with_a_match(url, make_match)
    with sqlite3.connect(tmp_path / "old.db") as old:
        old.execute("CREATE TABLE probe AS SELECT * FROM recall_question")
    before = layout_of(url)
    with pytest.raises(DatabaseError) as caught:
        engine_for(url, create=False)
    assert str(caught.value) == (
        f"database {url} was written by an older arena (table 'probe' beside 'recall_question', "
        "its name in this arena): name a new database with --db"
    )
    assert layout_of(url) == before


def test_an_older_arenas_database_opened_for_reading_only_is_left_alone_with_what_to_do(tmp_path, make_match):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _with_a_match(url, make_match)
    as_an_older_arena_left_it(url)
    older = layout_of(url)
    read_only_url = f"sqlite:///file:{tmp_path / 'old.db'}?mode=ro&uri=true"
    with pytest.raises(DatabaseError) as caught:
        engine_for(read_only_url, create=False)
    assert str(caught.value) == (
        "cannot rename table probe to recall_question, add match_result.length_refusals "
        "(the layout this arena writes) in database "
        f"{make_url(read_only_url).render_as_string()}: attempt to write a readonly database; "
        "open it once where it may be written (`uv run arena matches --db URL` does it)"
    )
    with pytest.raises(
        DatabaseError, match=r"lacks what this arena reads \(recall_question, match_result.length_refusals;"
    ):
        engine_for(url, read_only=True)  # a reader such as `arena serve`
    assert layout_of(url) == older

    engine_for(url, create=False).dispose()  # opened once where it may be written
    engine_for(read_only_url, create=False).dispose()
    engine_for(url, read_only=True).dispose()
