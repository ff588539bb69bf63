"""The outcomes of the pages put before people at human seats (the `desk_page` table): each
kept as it is settled, one row a page, so that a resumed run of the tournament answers at once
the pages its people answered before, with what they submitted (tournaments.desk)."""

from __future__ import annotations

import json
from typing import NamedTuple

from sqlalchemy import Engine, delete
from sqlmodel import Session, col, select

from results.storage.db import reconnecting
from results.storage.schema import DeskPageRow


class KeptPage(NamedTuple):
    """A page's outcome as kept: its key (the match's key, the merchant, the day, what it
    asked, its attempt), a digest of what it showed, then what was submitted, by field, and the
    seconds the page waited for it; `fields` and `seconds` None: withdrawn when its time was up."""

    match: str
    merchant: str
    day: int
    asked: str
    attempt: int
    shown: str
    fields: dict[str, str] | None
    seconds: float | None


@reconnecting
def keep_page(engine: Engine, tournament_id: int, page: KeptPage) -> None:
    """Store `page`'s outcome, in a transaction of its own, in place of what was kept for its key
    before (a page asked afresh because a replay showed another). Safe to make twice: a
    write whose commit was made but not answered (reconnecting) writes the same again."""
    with Session(engine) as session:
        session.exec(
            delete(DeskPageRow).where(
                col(DeskPageRow.tournament_id) == tournament_id,
                col(DeskPageRow.match_key) == page.match,
                col(DeskPageRow.merchant) == page.merchant,
                col(DeskPageRow.day) == page.day,
                col(DeskPageRow.asked) == page.asked,
                col(DeskPageRow.attempt) == page.attempt,
            )
        )
        session.add(
            DeskPageRow(
                tournament_id=tournament_id,
                match_key=page.match,
                merchant=page.merchant,
                day=page.day,
                asked=page.asked,
                attempt=page.attempt,
                shown=page.shown,
                fields=None if page.fields is None else json.dumps(page.fields),
                seconds=page.seconds,
            )
        )
        session.commit()


def kept_pages(engine: Engine, tournament_id: int) -> list[KeptPage]:
    """The tournament's kept pages, in the order they were kept."""
    with Session(engine) as session:
        rows = session.exec(
            select(DeskPageRow)
            .where(col(DeskPageRow.tournament_id) == tournament_id)
            .order_by(col(DeskPageRow.id))
        )
        return [
            KeptPage(
                row.match_key,
                row.merchant,
                row.day,
                row.asked,
                row.attempt,
                row.shown,
                None if row.fields is None else json.loads(row.fields),
                row.seconds,
            )
            for row in rows
        ]
