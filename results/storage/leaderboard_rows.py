"""What the leaderboard of stored matches is computed from, read in a few queries: the seats of
the matches selected (by tournament, scenario and contestants), the metric values to average,
why some have none, and the model calls to sum (results.readings; results.leaderboard rates
them)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol, TypeVar

from sqlalchemy import Engine, and_, case, or_
from sqlalchemy import Select as ColumnsSelect
from sqlalchemy import select as select_columns
from sqlmodel import Session, col, func, select

from results.errors import NotFound
from results.readings import CallsSpent, LeaderboardRecords, MetricReading, NoteReading, Seat
from results.records import repeat_number
from results.storage import person_seats, store
from results.storage.schema import (
    ContestantRow,
    DeviationCallRow,
    MatchResultRow,
    MatchRow,
    MetricNoteRow,
    MetricRow,
    ModelCallRow,
    TournamentRow,
)

Statement = TypeVar("Statement", bound=ColumnsSelect[*tuple[Any, ...]])


def leaderboard_records(
    engine: Engine,
    tournaments: int | Collection[int] | None,
    scenario: str | None,
    contestants: Collection[str] | None,
    metrics: Collection[str],
) -> LeaderboardRecords:
    """What the leaderboard of the stored matches is computed from (results.leaderboard): all of
    them, or those of a tournament (or of several, pooled), of a scenario, and of the named
    contestants (matches where at least two of them met, and only their seats; and their solo
    matches); the values of `metrics` and why some seats have none. With tournaments, their
    registered contestants too. Raises NotFound for an unknown tournament, scenario or
    contestant."""
    with Session(engine) as session:
        return _leaderboard_records(
            session, store.tournament_ids(tournaments), scenario, contestants, metrics
        )


def seats(engine: Engine, tournament_id: int) -> list[Seat]:
    """The seats of a tournament's stored matches in rating order (results.readings.Seat)."""
    with Session(engine) as session:
        store.require(session, TournamentRow, tournament_id)
        return _seats(session, _selection([tournament_id], None, None))


def _leaderboard_records(
    session: Session,
    tournament_ids: list[int] | None,
    scenario: str | None,
    contestants: Collection[str] | None,
    metrics: Collection[str],
) -> LeaderboardRecords:
    for tournament_id in tournament_ids or ():
        store.require(session, TournamentRow, tournament_id)
    if scenario is not None:
        stored = select(MatchRow.id).where(col(MatchRow.scenario) == scenario).limit(1)
        if session.exec(stored).first() is None:
            raise NotFound(f"no stored match of scenario {scenario!r}")
    for name in sorted(contestants or ()):
        known = select(ContestantRow.id).where(col(ContestantRow.name) == name).limit(1)
        if session.exec(known).first() is None:
            raise NotFound(f"no contestant named {name!r}")
    selected = _selection(tournament_ids, scenario, contestants)
    seats = _seats(session, selected)
    registered: set[str] = set()
    if tournament_ids is not None:
        names = select(ContestantRow.name).where(col(ContestantRow.tournament_id).in_(tournament_ids))
        if contestants is not None:
            names = names.where(col(ContestantRow.name).in_(contestants))
        registered = set(session.exec(names))
    readings = session.connection().execute(
        selected(
            select_columns(col(MetricRow.contestant), col(MetricRow.name), col(MetricRow.value))
            .join(MatchRow, col(MatchRow.id) == col(MetricRow.match_id))
            .where(col(MetricRow.name).in_(metrics)),
            MetricRow.contestant,
        )
    )
    spent = [
        CallsSpent(contestant, int(tokens or 0), float(cost or 0.0), unpriced)
        for table in (ModelCallRow, DeviationCallRow)  # the deviated paths' calls were made too
        for contestant, tokens, cost, unpriced in session.connection().execute(
            selected(
                select_columns(
                    col(table.contestant),
                    func.sum(col(table.input_tokens) + col(table.output_tokens)),
                    func.sum(col(table.cost)),
                    func.count() - func.count(col(table.cost)),  # calls without a price
                )
                .join(MatchRow, col(MatchRow.id) == col(table.match_id))
                .group_by(col(table.contestant)),
                table.contestant,
            )
        )
    ]
    notes = session.connection().execute(
        selected(
            select_columns(
                col(MatchResultRow.contestant),
                col(MetricNoteRow.name),
                col(MatchRow.scenario),
                col(MetricNoteRow.note),
            )
            .join(MatchRow, col(MatchRow.id) == col(MetricNoteRow.match_id))
            .join(
                MatchResultRow,
                (col(MatchResultRow.match_id) == col(MetricNoteRow.match_id))
                & (col(MatchResultRow.merchant) == col(MetricNoteRow.merchant)),
            )
            .where(col(MetricNoteRow.name).in_(metrics)),
            MatchResultRow.contestant,
        )
    )
    return LeaderboardRecords(
        seats=seats,
        registered=registered,
        metrics=[
            MetricReading(contestant, name, value)
            for contestant, name, value in readings
            if value is not None
        ],
        spent=spent,
        notes=[NoteReading(*row) for row in notes],
        people=person_seats.people(session, tournament_ids),
    )


class _Selection(Protocol):
    """A selection of matches (as _leaderboard_records makes one): `statement`, of rows joined
    to their match, restricted to it, with `contestant` the rows' contestant column."""

    def __call__(self, statement: Statement, contestant: Any) -> Statement: ...


def _selection(
    tournament_ids: Collection[int] | None, scenario: str | None, contestants: Collection[str] | None
) -> _Selection:
    """The matches of the tournaments, of a scenario and of the named contestants (each None: all)."""
    # with a contestant selection: only matches where two of them met, and their solo matches
    # (ranked against one another's: results.scoring.ratings.ranked_matches)
    chosen = case((col(MatchResultRow.contestant).in_(contestants or ()), 1), else_=0)
    meetings = (
        select(MatchResultRow.match_id)
        .group_by(col(MatchResultRow.match_id))
        .having(or_(func.sum(chosen) >= 2, and_(func.count() == 1, func.sum(chosen) == 1)))
    )

    def selected(statement: Statement, contestant: Any) -> Statement:
        """`statement` (of rows joined to their match) restricted to the selection."""
        if tournament_ids is not None:
            statement = statement.where(col(MatchRow.tournament_id).in_(tournament_ids))
        if scenario is not None:
            statement = statement.where(col(MatchRow.scenario) == scenario)
        if contestants is not None:
            statement = statement.where(col(contestant).in_(contestants), col(MatchRow.id).in_(meetings))
        return statement

    return selected


def _seats(session: Session, selected: _Selection) -> list[Seat]:
    """The seats of the matches `selected` keeps (as _leaderboard_records selects), in rating
    order."""
    rows = session.connection().execute(
        selected(
            select_columns(
                col(MatchRow.tournament_id),
                col(MatchRow.index),
                col(MatchRow.key),
                col(MatchResultRow.contestant),
                col(MatchResultRow.rank),
                col(MatchResultRow.profit),
                col(MatchResultRow.net_worth),
                col(MatchResultRow.faults),
                col(MatchRow.scenario),
                col(MatchRow.seed),
                col(MatchRow.days),
                col(MatchResultRow.bankrupt_day),
                col(MetricRow.value),
            )
            .join(MatchResultRow, col(MatchResultRow.match_id) == col(MatchRow.id))
            .outerjoin(
                MetricRow,
                (col(MetricRow.match_id) == col(MatchRow.id))
                & (col(MetricRow.merchant) == col(MatchResultRow.merchant))
                & (col(MetricRow.name) == "goals_met"),
            ),
            MatchResultRow.contestant,
        ).order_by(
            col(MatchRow.tournament_id), col(MatchRow.index), col(MatchRow.key), col(MatchResultRow.merchant)
        )
    )
    return [
        Seat._make(
            [
                (tournament, index, key),
                *result,
                (scenario, seed, days, _cell_of(key, scenario, seed) + _repeat_of(key)),
                bankrupt_day,
                goals_met,
            ]
        )
        for tournament, index, key, *result, scenario, seed, days, bankrupt_day, goals_met in rows
    ]


def _repeat_of(key: str) -> str:
    """`/sample=K` for a key of a repeat (solo repeats of one number meet); "" for a match."""
    return f"/sample={repeat_number(key)}" if repeat_number(key) else ""


def _cell_of(key: str, scenario: str, seed: int) -> str:
    """The label of the sweep's cell a match's key starts with (tournaments.schedule: a key is
    [CELL/]SCENARIO/seed=N/LINEUP); "" for a key without one."""
    cell, found, _ = key.partition(f"/{scenario}/seed={seed}/")
    return cell if found else ""
