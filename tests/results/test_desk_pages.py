"""The pages' outcomes kept for a tournament (results.storage.desk_pages) on SQLite: read back
as kept, in order, per tournament; a page kept once; gone with its tournament; the table added
to a database made before it."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, text
from sqlmodel import Session, col

from results.errors import DatabaseError
from results.storage.db import engine_for
from results.storage.desk_pages import KeptPage, keep_page, kept_pages
from results.storage.schema import TournamentRow
from results.storage.store import start_tournament

SENT = KeptPage("lab/1", "ann", 1, "day", 1, "a1", {"price.widget": "17.5", "message": 'é ✓, "hi"'}, 1 / 3)
WITHDRAWN = KeptPage("lab/1", "ann", 2, "recall", 0, "b2", None, None)


def another(engine) -> int:
    return start_tournament(
        engine,
        name="autumn",
        config_path="a.yaml",
        config_text="",
        config_hash="h",
        seed=1,
        contestants=[("ann", "human", {})],
        planned_matches=1,
    )


def test_pages_read_back_as_kept_in_order_and_per_tournament(engine, tournament):
    other = another(engine)
    keep_page(engine, tournament, SENT)
    keep_page(engine, other, SENT._replace(fields={"price.widget": "9"}))
    keep_page(engine, tournament, WITHDRAWN)
    assert kept_pages(engine, tournament) == [SENT, WITHDRAWN]  # every bit of the seconds, the text as typed
    assert kept_pages(engine, other) == [SENT._replace(fields={"price.widget": "9"})]
    # kept anew (a page asked afresh: its replay showed another): in place of the old, once
    anew = SENT._replace(shown="c3", fields={}, seconds=2.0)
    keep_page(engine, tournament, anew)
    keep_page(engine, tournament, anew)  # (a write made again after an unanswered commit)
    assert kept_pages(engine, tournament) == [WITHDRAWN, anew]


def test_a_tournaments_pages_go_with_it(engine, tournament):
    keep_page(engine, tournament, SENT)
    with Session(engine) as session:
        session.exec(delete(TournamentRow).where(col(TournamentRow.id) == tournament))
        session.commit()
    assert kept_pages(engine, tournament) == []


def test_a_database_made_before_the_table_gains_it_when_a_command_opens_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'older.db'}"
    engine = engine_for(url)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE desk_page"))
    engine.dispose()
    with pytest.raises(DatabaseError, match=r"lacks what this arena reads \(desk_page;"):
        engine_for(url, read_only=True)  # a reader such as `arena serve` changes nothing
    engine = engine_for(url)
    keep_page(engine, another(engine), SENT)
    engine.dispose()
