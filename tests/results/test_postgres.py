"""The record on a real PostgreSQL server (the session's `postgres` fixture): the tables
created once when runs start at once, and every kind of column (floats, JSON, bytes,
moments) read back as SQLite reads it, judges' judgements and what is kept of them,
and the pages people answered, included."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import psycopg
import pytest
from older_arena import as_an_older_arena_left_it, layout_of
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlmodel import Session, SQLModel, select

from common.conduct import Judgement, PricePromise, Words
from results import leaderboard, recording
from results.records import RecallResult
from results.storage import store
from results.storage.db import DatabaseError, engine_for
from results.storage.desk_pages import KeptPage, keep_page, kept_pages
from results.storage.judgements import (
    judgements,
    match_conducts,
    save_judgements,
    save_judging,
    tournament_judgements,
)
from results.storage.schema import ContestantRow, MatchRow, RatingSnapshot, TournamentRow, stored_id

RUNS_AT_ONCE = 4
ROUNDS = 3  # empty databases raced on: without the layout lock, every round of 8 tried failed


def _open_at_once(url: str, start: threading.Barrier, failures: list[BaseException]) -> None:
    """Open the database when every run is ready, counting what fails."""
    start.wait()
    try:
        engine_for(url).dispose()
    except BaseException as exc:  # noqa: BLE001 (every failure is counted)
        failures.append(exc)


def _opened_at_once(url: str) -> list[str]:
    """Open the database by RUNS_AT_ONCE runs at once; what failed."""
    start = threading.Barrier(RUNS_AT_ONCE)
    failures: list[BaseException] = []
    threads = [
        threading.Thread(target=_open_at_once, args=(url, start, failures)) for _ in range(RUNS_AT_ONCE)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return [str(failure) for failure in failures]


def test_runs_starting_at_once_on_an_empty_database_create_its_tables_once(postgres):
    tables = set(SQLModel.metadata.tables)
    for _ in range(ROUNDS):
        url = postgres.fresh_database()
        assert _opened_at_once(url) == []
        with psycopg.connect(url.replace("+psycopg", "")) as connection:
            created = {
                name
                for (name,) in connection.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                )
            }
        assert created == tables


def _recorded(engine: Engine, make_match, stamp: float) -> int:
    """A tournament with one match whose numbers need every bit of a double, and whose
    contestants' params are nested JSON; the tournament's id."""
    tournament = store.start_tournament(
        engine,
        name="round trip",
        config_path="t.yaml",
        config_text='name: round trip\nnote: "é ü ✓"\n',
        config_hash="hash",
        seed=7,
        planned_matches=1,
        contestants=[
            ("alpha", "rule", {"markup": 0.1 + 0.2, "tiers": [1, {"x": None}], "label": "é ✓"}),
            ("beta", "rule", {}),
        ],
    )
    match = make_match("m-1", 0, {"alpha": 1, "beta": 2})
    match.recalls = [
        RecallResult(
            merchant="m0",
            day=2,
            asked_day=1,
            fact="price",
            product="tea",
            truth=0.1,
            answer=0.1 + 0.2,
            relative_error=0.1 + 0.1,
        )
    ]
    merchants = [
        r.model_copy(update={"market_share": stamp, "profit": -stamp * 1e300, "final_cash": 1e-300 / 3})
        for r in match.merchants
    ]
    recording.save_match(
        engine, tournament, match.model_copy(update={"merchants": merchants, "wall_seconds": 1 / 7})
    )
    (stored,) = store.list_matches(engine, tournament)
    said = Words(merchant="m0", day=1, source="message", index=0, text="hold 2.50, or else ✓")
    for judge, labels in (("a", ("proposal", "threat")), ("b", ("proposal",))):
        claims = (PricePromise(product="tea", price=0.1 + 0.2),)
        judged = [(said, Judgement(judge=judge, labels=labels, reason="é", claims=claims))]
        save_judgements(engine, tournament, stored_id(stored.id), stored.key, judge, judged, [])
    save_judging(engine, tournament, ["a", "b"], None)
    keep_page(engine, tournament, KeptPage("m-1", "m0", 1, "day", 0, "a1", {"message": "é ✓"}, 0.1 + 0.2))
    keep_page(engine, tournament, KeptPage("m-1", "m0", 2, "off_path", 1, "b2", None, None))
    recording.record_tournament_conduct(engine, tournament)
    leaderboard.finish_tournament(engine, tournament, "finished")
    return tournament


def _content(engine: Engine, tournament: int) -> dict:
    (match,) = store.list_matches(engine, tournament)
    detail = store.match_detail(engine, match.id)
    with Session(engine) as session:
        contestants = [
            (c.name, c.kind, json.loads(c.params))
            for c in session.exec(select(ContestantRow).order_by(ContestantRow.name))
        ]
    return {
        "tournament": store.get_tournament(engine, tournament).model_dump(
            exclude={"id", "created_at", "finished_at"}
        ),
        "contestants": contestants,
        "match": match.model_dump(exclude={"id", "tournament_id", "finished_at"}),
        "results": detail.results,
        "days": list(detail.days),
        "faults": detail.faults,
        "recalls": detail.recalls,
        "market": detail.market,
        "metrics": [v._replace(match_id=None) for v in store.metrics(engine, tournament)],
        "judgements": list(judgements(engine, stored_id(match.id)).items()),
        "kept": list(match_conducts(engine, [tournament]).values()),  # (its match's id apart)
        "pooled": tournament_judgements(engine, tournament, ["a", "b"]),
        "pages": kept_pages(engine, tournament),
    }


def test_every_column_reads_back_as_on_sqlite(postgres, tmp_path, make_match):
    stamp = 1 / 3
    engines = [engine_for(postgres.fresh_database()), engine_for(f"sqlite:///{tmp_path / 'a.db'}")]
    try:
        on_postgres, on_sqlite = (
            _content(engine, _recorded(engine, make_match, stamp)) for engine in engines
        )
    finally:
        for engine in engines:
            engine.dispose()
    assert on_postgres == on_sqlite
    assert (
        on_postgres["results"][0].market_share == stamp and on_postgres["results"][0].final_cash == 1e-300 / 3
    )
    assert on_postgres["match"]["wall_seconds"] == 1 / 7
    assert on_postgres["contestants"][0][2] == {
        "markup": 0.1 + 0.2,
        "tiers": [1, {"x": None}],
        "label": "é ✓",
    }
    assert len(on_postgres["days"]) == 6 and on_postgres["metrics"]
    # both judges gave a proposal: it counts (2 of 2); the threat, one judge's, does not
    [seats] = on_postgres["kept"]
    assert [(merchant, said.labels["proposal"], said.labels["threat"]) for _, merchant, said in seats] == [
        ("m0", 1, 0),
        ("m1", 0, 0),
    ]
    assert [[j.judge for j in item] for item in on_postgres["pooled"]] == [["a", "b"]]
    assert [page.seconds for page in on_postgres["pages"]] == [0.1 + 0.2, None]


def test_moments_are_stored_in_utc_whatever_the_server_time_zone(postgres, make_match):
    url = postgres.fresh_database()
    with psycopg.connect(url.replace("+psycopg", "")) as connection:
        assert connection.execute("SHOW TimeZone").fetchone()[0] != "UTC"  # the case that shifted moments
    engine = engine_for(url)
    try:
        before = datetime.now(UTC)
        tournament = _recorded(engine, make_match, 0.5)
        after = datetime.now(UTC)
        stored = store.get_tournament(engine, tournament)
        (match,) = store.list_matches(engine, tournament)
        with Session(engine) as session:
            snapshots = [s.created_at for s in session.exec(select(RatingSnapshot))]
    finally:
        engine.dispose()
    moments = [stored.created_at, stored.finished_at, match.finished_at, *snapshots]
    assert len(moments) == 5
    for moment in moments:
        assert moment.tzinfo is not None and before <= moment <= after, (moment, before, after)
    with psycopg.connect(url.replace("+psycopg", "")) as connection:  # the column holds UTC's wall clock
        raw = connection.execute(f"SELECT created_at FROM {TournamentRow.__tablename__}").fetchone()[0]
        raw_match = connection.execute(f'SELECT finished_at FROM "{MatchRow.__tablename__}"').fetchone()[0]
    assert raw == stored.created_at.replace(tzinfo=None) and raw_match == match.finished_at.replace(
        tzinfo=None
    )


OLD_READER, OLD_READER_PASSWORD = "old_reader", "old-reader-Secret-2291"


def test_an_older_arenas_database_is_brought_forward_once_and_never_through_a_reader(postgres, make_match):
    """Its recall questions' table under its old name, its results without the columns added
    since: runs that open it at once rename the one and add the others once (under the layout
    lock), to the layout of a new database; a role that may only read, and a reader such as
    `arena serve`, change nothing and say what to do."""
    url = postgres.fresh_database()
    engine = engine_for(url)
    tournament = _recorded(engine, make_match, 0.25)
    written = _content(engine, tournament)
    engine.dispose()
    as_an_older_arena_left_it(url)
    database = make_url(url).database
    with postgres.admin(database) as connection:
        connection.execute(f"CREATE ROLE {OLD_READER} LOGIN PASSWORD '{OLD_READER_PASSWORD}'")
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {OLD_READER}')
        connection.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {OLD_READER}")
    readers_url = postgres.url(database, OLD_READER, OLD_READER_PASSWORD)

    older = layout_of(url)
    assert "recall_question" not in older and older["probe"][1] == {"ix_probe_match_id"}

    with pytest.raises(DatabaseError) as caught:
        engine_for(readers_url, create=False)
    assert str(caught.value) == (
        "cannot rename table probe to recall_question, add match_result.length_refusals "
        "(the layout this arena writes) in database "
        f"{make_url(readers_url).render_as_string()}: must be owner of table probe; "
        "open it once where it may be written (`uv run arena matches --db URL` does it)"
    )
    with pytest.raises(
        DatabaseError, match=r"lacks what this arena reads \(recall_question, match_result.length_refusals;"
    ):
        engine_for(url, read_only=True)
    assert layout_of(url) == older

    assert _opened_at_once(url) == []
    fresh = postgres.fresh_database()
    engine_for(fresh).dispose()
    assert layout_of(url) == layout_of(fresh)
    engine = engine_for(readers_url, create=False)
    try:
        assert _content(engine, tournament) == written  # its merchants had no refusals
    finally:
        engine.dispose()
