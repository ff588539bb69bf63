"""Every query and write of the record but the leaderboard's readings (leaderboard_rows).

Every function takes an engine and opens its own short session, so callers (the runner, the
CLI, the report, the export) never hold a session open across a match. What the database
holds is handed out as the record's own types (results.records, results.storage.schema). It
computes nothing: a match comes scored (results.recording), and what reads, computes and
writes again (results.rescoring, results.leaderboard) lives above it. results.storage.db opens
the database and creates its tables."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import BaseModel
from sqlalchemy import Engine, case, delete, insert
from sqlalchemy import select as select_columns
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, func, select

from common.model_calls import CallPurpose
from market.daylog import DayLog
from market.scenario import Scenario
from results.errors import NotFound
from results.records import (
    DeviationPath,
    Fault,
    FinishedMatch,
    GoalResult,
    MarketScores,
    MerchantResult,
    MetricNote,
    ModelCallRecord,
    OffPathAnswer,
    PlayedMatch,
    PriceWindow,
    RecallLog,
    RecallResult,
    StoppedMatch,
    SweepCell,
    TranscriptRecord,
)
from results.settings import DeviationProbe
from results.storage.daylog_codec import decode, pack
from results.storage.db import reconnecting
from results.storage.person_seats import seated_people
from results.storage.schema import (
    ContestantRow,
    DayLogRow,
    DeviationCallRow,
    DeviationFaultRow,
    DeviationPathRow,
    FaultRow,
    GoalRow,
    MarketMetricRow,
    MatchResultRow,
    MatchRow,
    MetricNoteRow,
    MetricRow,
    ModelCallRow,
    OffPathRow,
    PriceWindowRow,
    RatingSnapshot,
    RecallQuestionRow,
    RunEndRow,
    RunProgressRow,
    SweepCellRow,
    TournamentRow,
    TranscriptRow,
    stored_id,
    utcnow,
)
from results.storage.transcript_codec import day_rows, notes_kept, steps_of

Row = TypeVar("Row", bound=SQLModel)
Record = TypeVar("Record", bound=BaseModel)


def start_tournament(
    engine: Engine,
    name: str,
    config_path: str,
    config_text: str,
    config_hash: str,
    seed: int,
    contestants: list[tuple[str, str, dict[str, Any]]],
    planned_matches: int,
    cells: Sequence[SweepCell] = (),
) -> int:
    """Record a new running tournament, its contestants (name, kind, params) and the cells of
    its sweep; return its id.

    `config_hash` identifies the tournament's files for resuming (the caller decides what
    goes into it: the YAML text and the scenarios it names)."""
    with Session(engine) as session:
        tournament = TournamentRow(
            name=name,
            config_path=config_path,
            config_text=config_text,
            config_hash=config_hash,
            seed=seed,
            planned_matches=planned_matches,
        )
        session.add(tournament)
        session.flush()
        tournament_id = stored_id(tournament.id)
        for contestant, kind, params in contestants:
            session.add(
                ContestantRow(
                    tournament_id=tournament_id,
                    name=contestant,
                    kind=kind,
                    params=json.dumps(params, sort_keys=True),
                )
            )
        for cell in cells:
            session.add(
                SweepCellRow(
                    tournament_id=tournament_id,
                    **cell.model_dump(exclude={"factors"}),
                    factors=json.dumps(cell.factors),
                )
            )
        session.commit()
        return tournament_id


def sweep_cells(engine: Engine, tournament_id: int) -> list[SweepCell]:
    """The cells of the tournament's sweep in their order; none for a tournament without one."""
    with Session(engine) as session:
        rows = session.exec(
            select(SweepCellRow)
            .where(SweepCellRow.tournament_id == tournament_id)
            .order_by(col(SweepCellRow.position))
        ).all()
        return [
            SweepCell(**row.model_dump(exclude={"tournament_id", "factors"}), factors=json.loads(row.factors))
            for row in rows
        ]


def resume_tournament(engine: Engine, tournament_id: int) -> None:
    """Mark a stopped tournament running again, as its resumed run plays."""
    with Session(engine) as session:
        tournament = require(session, TournamentRow, tournament_id)
        tournament.status, tournament.finished_at = "running", None
        session.add(tournament)
        session.commit()


def find_resumable(engine: Engine, config_hash: str) -> int | None:
    """The id of the latest tournament with this config hash that is not finished (running or stopped)."""
    with Session(engine) as session:
        statement = (
            select(TournamentRow.id)
            .where(col(TournamentRow.config_hash) == config_hash, col(TournamentRow.status) != "finished")
            .order_by(col(TournamentRow.created_at).desc(), col(TournamentRow.id).desc())
        )
        return session.exec(statement).first()


def get_tournament(engine: Engine, tournament_id: int) -> TournamentRow:
    with Session(engine) as session:
        return require(session, TournamentRow, tournament_id)


def list_tournaments(engine: Engine) -> list[TournamentRow]:
    """Every stored tournament, in the order they were started."""
    with Session(engine) as session:
        return list(session.exec(select(TournamentRow).order_by(col(TournamentRow.id))))


def match_counts(engine: Engine) -> dict[int, int]:
    """How many matches are stored of each tournament that has any, by tournament id."""
    with Session(engine) as session:
        counted = session.exec(
            select(MatchRow.tournament_id, func.count()).group_by(col(MatchRow.tournament_id))
        )
        return dict(counted.all())


def contestant_kinds(engine: Engine, tournament_id: int) -> dict[str, str]:
    """The kind of each contestant registered for the tournament, by name, in the order the
    tournament file lists them."""
    with Session(engine) as session:
        rows = session.exec(
            select(ContestantRow.name, ContestantRow.kind)
            .where(col(ContestantRow.tournament_id) == tournament_id)
            .order_by(col(ContestantRow.id))
        )
        return dict(rows.all())


def finished_keys(engine: Engine, tournament_id: int) -> set[str]:
    """Keys of the matches already recorded for the tournament: the ones a resumed run skips."""
    with Session(engine) as session:
        require(session, TournamentRow, tournament_id)
        return set(session.exec(select(MatchRow.key).where(col(MatchRow.tournament_id) == tournament_id)))


def save_match(
    engine: Engine, tournament_id: int, match: FinishedMatch, scenario: Scenario | None = None
) -> int:
    """Write a scored match (one that carries its metrics, market scores, goals and notes:
    results.recording.scored) with its results, day records and faults in one transaction;
    return its id. `scenario` is the one it was played on, whose products name its day log's.

    All or nothing: if any row fails, nothing of the match is stored. A key already recorded
    for the tournament is not written again (the first write wins) and its id is returned;
    the unique (tournament, key) constraint decides, so this holds for concurrent writers too.
    """
    with Session(engine) as session:
        try:
            match_id = _insert_match(session, tournament_id, match, scenario)
            session.commit()
            return match_id
        except IntegrityError:  # no such tournament, or the key is recorded already (by any writer)
            session.rollback()
            require(session, TournamentRow, tournament_id)
            existing = session.exec(
                select(MatchRow.id).where(
                    col(MatchRow.tournament_id) == tournament_id, col(MatchRow.key) == match.key
                )
            ).first()
            if existing is None:
                raise
            return existing


@reconnecting
def save_matches(
    engine: Engine,
    tournament_id: int,
    matches: Sequence[tuple[FinishedMatch, Scenario | None]],
) -> list[int]:
    """`save_match` for several matches (each with its scenario) in one transaction, each
    match whole as there: matches played side by side finish together, and a commit costs
    about as much as writing a match. If they cannot be written as one (no such tournament,
    or one's key is recorded already), each is written on its own."""
    with Session(engine) as session:
        try:
            ids = [_insert_match(session, tournament_id, match, scenario) for match, scenario in matches]
            session.commit()
            return ids
        except IntegrityError:
            session.rollback()
    return [save_match(engine, tournament_id, match, scenario) for match, scenario in matches]


def _insert_match(
    session: Session, tournament_id: int, match: FinishedMatch, scenario: Scenario | None
) -> int:
    scores, market, goals, notes = match.metrics, match.market, match.goals, match.notes
    if scores is None or market is None or goals is None or notes is None:
        raise ValueError(f"match {match.key!r} is not scored (results.recording.scored)")
    fields = match.model_dump(include=set(PlayedMatch.model_fields))
    inserted = session.connection().execute(
        insert(MatchRow).values(tournament_id=tournament_id, finished_at=utcnow(), **fields)
    )
    match_id = stored_id(inserted.inserted_primary_key[0] if inserted.inserted_primary_key else None)
    _bulk_insert(session, MatchResultRow, [{**r.model_dump(), "match_id": match_id} for r in match.merchants])
    days = pack(match.days_played, scenario.product_ids if scenario is not None else None)
    _bulk_insert(
        session, DayLogRow, [{"match_id": match_id, "columns": days.columns, "decisions": days.decisions}]
    )
    _bulk_insert(session, FaultRow, [{**f.model_dump(), "match_id": match_id} for f in match.faults])
    _bulk_insert(
        session, RecallQuestionRow, [{**r, "match_id": match_id} for r in RecallLog.of(match.recalls).rows()]
    )
    _bulk_insert(session, OffPathRow, [{**a.model_dump(), "match_id": match_id} for a in match.off_path])
    _insert_calls(session, tournament_id, match.key, match_id, match.calls)
    _bulk_insert(
        session, TranscriptRow, [{**row, "match_id": match_id} for row in day_rows(match.transcript)]
    )
    _bulk_insert(session, MetricRow, _metric_rows(match_id, match.merchants, scores))
    _bulk_insert(session, GoalRow, _goal_rows(match_id, match.merchants, goals))
    _insert_market(session, match_id, market, notes)
    if match.deviation is not None:
        _insert_deviation(session, tournament_id, match_id, match.deviation, scenario)
    return match_id


def _insert_deviation(
    session: Session, tournament_id: int, match_id: int, path: DeviationPath, scenario: Scenario | None
) -> None:
    days = pack(path.days_played, scenario.product_ids if scenario is not None else None)
    row = {
        "match_id": match_id,
        "probe": path.probe.model_dump_json(),
        "columns": days.columns,
        "decisions": days.decisions,
    }
    _bulk_insert(session, DeviationPathRow, [row])
    _bulk_insert(session, DeviationFaultRow, [{**f.model_dump(), "match_id": match_id} for f in path.faults])
    _bulk_insert(
        session,
        DeviationCallRow,
        [{**c.model_dump(), "tournament_id": tournament_id, "match_id": match_id} for c in path.calls],
    )


def _insert_market(
    session: Session, match_id: int, market: MarketScores, notes: Sequence[MetricNote]
) -> None:
    """The market's metrics and price windows, and why the metrics without a value have none."""
    _bulk_insert(
        session,
        MarketMetricRow,
        [{"match_id": match_id, "name": name, "value": value} for name, value in market.metrics.items()],
    )
    _bulk_insert(session, PriceWindowRow, [{**w.model_dump(), "match_id": match_id} for w in market.windows])
    _bulk_insert(session, MetricNoteRow, [{**n.model_dump(), "match_id": match_id} for n in notes])


def _insert_calls(
    session: Session, tournament_id: int, key: str, match_id: int | None, calls: Sequence[ModelCallRecord]
) -> None:
    rows = [
        {**c.model_dump(), "tournament_id": tournament_id, "match_key": key, "match_id": match_id}
        for c in calls
    ]
    _bulk_insert(session, ModelCallRow, rows)


def save_stopped(engine: Engine, tournament_id: int, stopped: Sequence[StoppedMatch]) -> None:
    """Record the model calls of matches the run stopped before their end, in one
    transaction: they were paid, though the matches are not stored (a resumed run plays
    them again, replaying those calls from the response cache)."""
    with Session(engine) as session:
        require(session, TournamentRow, tournament_id)
        for match in stopped:
            _insert_calls(session, tournament_id, match.key, None, match.calls)
        session.commit()


def replace_scores(
    engine: Engine,
    match_id: int,
    results: Sequence[MerchantResult],
    scores: Mapping[str, Mapping[str, float | None]],
    market: MarketScores,
    goals: Sequence[GoalResult],
    notes: Sequence[MetricNote],
    replaced: Collection[str],
) -> None:
    """Replace a stored match's metrics named `replaced` (what merchants reported of
    themselves, under other names, is kept), its market's metrics and price windows, its goals
    and its notes with `scores` (by merchant, of its `results`' seats), `market`, `goals` and
    `notes`, in one transaction."""
    with Session(engine) as session:
        session.exec(
            delete(MetricRow).where(col(MetricRow.match_id) == match_id, col(MetricRow.name).in_(replaced))
        )
        session.exec(delete(MarketMetricRow).where(col(MarketMetricRow.match_id) == match_id))
        session.exec(delete(GoalRow).where(col(GoalRow.match_id) == match_id))
        session.exec(delete(PriceWindowRow).where(col(PriceWindowRow.match_id) == match_id))
        session.exec(delete(MetricNoteRow).where(col(MetricNoteRow.match_id) == match_id))
        _bulk_insert(session, MetricRow, _metric_rows(match_id, results, scores))
        _insert_market(session, match_id, market, notes)
        _bulk_insert(session, GoalRow, _goal_rows(match_id, results, goals))
        session.commit()


class MetricValue(NamedTuple):
    """One stored metric of one merchant in one match (definitions: results.scoring.metrics.METRICS),
    and where it does not apply, why (results.records.MetricNote)."""

    match_id: int
    merchant: str
    contestant: str
    name: str
    value: float | None
    note: str | None = None


def metrics(
    engine: Engine,
    tournament_id: int | None = None,
    *,
    match_id: int | None = None,
    names: Collection[str] | None = None,
) -> list[MetricValue]:
    """Stored metrics of a tournament's matches, of one match, or of every match (those
    `names`d only, if given); by match, then merchant in seat order, then metric in the order
    of results.scoring.metrics.METRICS."""
    with Session(engine) as session:
        statement = select_columns(
            col(MetricRow.match_id),
            col(MetricRow.merchant),
            col(MetricRow.contestant),
            col(MetricRow.name),
            col(MetricRow.value),
            col(MetricNoteRow.note),
        ).outerjoin(
            MetricNoteRow,
            (col(MetricNoteRow.match_id) == col(MetricRow.match_id))
            & (col(MetricNoteRow.merchant) == col(MetricRow.merchant))
            & (col(MetricNoteRow.name) == col(MetricRow.name)),
        )
        if tournament_id is not None:
            require(session, TournamentRow, tournament_id)
            statement = statement.join(MatchRow, col(MatchRow.id) == col(MetricRow.match_id)).where(
                col(MatchRow.tournament_id) == tournament_id
            )
        if match_id is not None:
            require(session, MatchRow, match_id)
            statement = statement.where(col(MetricRow.match_id) == match_id)
        if names is not None:
            statement = statement.where(col(MetricRow.name).in_(names))
        ordered = statement.order_by(col(MetricRow.match_id), col(MetricRow.id))
        return [MetricValue(*row) for row in session.connection().execute(ordered)]


def market_metric_values(
    engine: Engine, tournament_id: int, names: Collection[str]
) -> list[tuple[int, str, float | None]]:
    """(match id, metric, value) of the stored market metrics `names` of a tournament's matches."""
    with Session(engine) as session:
        statement = (
            select_columns(
                col(MarketMetricRow.match_id), col(MarketMetricRow.name), col(MarketMetricRow.value)
            )
            .join(MatchRow, col(MatchRow.id) == col(MarketMetricRow.match_id))
            .where(col(MatchRow.tournament_id) == tournament_id, col(MarketMetricRow.name).in_(names))
        )
        return [(match_id, name, value) for match_id, name, value in session.connection().execute(statement)]


def metric_names(engine: Engine, tournament_id: int) -> list[str]:
    """The names of the metrics stored for the tournament's merchants (those arena computes and
    those they reported of themselves), in no particular order."""
    with Session(engine) as session:
        statement = (
            select_columns(col(MetricRow.name))
            .distinct()
            .join(MatchRow, col(MatchRow.id) == col(MetricRow.match_id))
            .where(col(MatchRow.tournament_id) == tournament_id)
        )
        return list(session.connection().execute(statement).scalars())


def match_places(engine: Engine, tournament_id: int) -> dict[int, tuple[int, int]]:
    """The stored matches of a tournament by their ids: their places in its schedule and their seeds."""
    with Session(engine) as session:
        statement = select_columns(col(MatchRow.id), col(MatchRow.index), col(MatchRow.seed)).where(
            col(MatchRow.tournament_id) == tournament_id
        )
        return {
            stored_id(match_id): (index, seed)
            for match_id, index, seed in session.connection().execute(statement)
        }


def run_end(engine: Engine, tournament_id: int) -> str | None:
    """Why the tournament's last run ended before its schedule's last match; None if it did not."""
    with Session(engine) as session:
        found = session.get(RunEndRow, tournament_id)
        return None if found is None else found.reason


def tournament_ids(tournaments: int | Collection[int] | None) -> list[int] | None:
    """A tournament's id, or several, as a list of distinct ids in the order given; None: all."""
    if tournaments is None:
        return None
    return [tournaments] if isinstance(tournaments, int) else list(dict.fromkeys(tournaments))


def end_tournament(
    engine: Engine,
    tournament_id: int,
    status: Literal["finished", "stopped"],
    reason: str | None,
    ratings: Iterable[tuple[str, float, int, int]],
) -> None:
    """Mark the tournament finished or stopped, with the `reason` its run ended before its
    schedule's last match (none: it played them all), and snapshot the `ratings` of its table
    as reported: (contestant, rating, matches, wins) each."""
    if status not in ("finished", "stopped"):
        raise ValueError(f"a tournament ends 'finished' or 'stopped', not {status!r}")
    with Session(engine) as session:
        tournament = require(session, TournamentRow, tournament_id)
        tournament.status = status
        tournament.finished_at = utcnow()
        session.add(tournament)
        ended = session.get(RunEndRow, tournament_id)
        if reason is None and ended is not None:
            session.delete(ended)
        elif reason is not None:
            session.merge(RunEndRow(tournament_id=tournament_id, reason=reason))
        for contestant, rating, matches, wins in ratings:
            session.add(
                RatingSnapshot(
                    tournament_id=tournament_id,
                    contestant=contestant,
                    rating=rating,
                    matches=matches,
                    wins=wins,
                )
            )
        session.commit()


def spent(engine: Engine, tournament_id: int) -> tuple[int, float]:
    """Tokens (input + output) and USD paid for a tournament's model calls: the calls made, in
    stored matches (on both paths of a probed one) and in matches the run stopped; answers
    replayed from the response cache were not paid. A call without a price adds no USD (a
    cost budget admits no such model)."""
    tokens, cost = 0, 0.0
    with Session(engine) as session:
        for table in (ModelCallRow, DeviationCallRow):
            paid_tokens, paid = session.exec(
                select(
                    func.sum(col(table.input_tokens) + col(table.output_tokens)), func.sum(col(table.cost))
                ).where(col(table.tournament_id) == tournament_id, col(table.cached).is_(False))
            ).one()  # sums of no rows are NULL
            tokens, cost = tokens + int(paid_tokens or 0), cost + float(paid or 0.0)
    return tokens, cost


def tournament_calls(
    engine: Engine, tournament_id: int, purpose: CallPurpose | None = None
) -> list[ModelCallRecord]:
    """Every model call of the tournament's stored matches, on either path of a probed one
    (not those of matches the run stopped, which are not stored); those of `purpose` alone, if
    given."""
    played = select(ModelCallRow).where(
        col(ModelCallRow.tournament_id) == tournament_id, col(ModelCallRow.match_id).is_not(None)
    )
    deviated = select(DeviationCallRow).where(col(DeviationCallRow.tournament_id) == tournament_id)
    if purpose is not None:
        played = played.where(col(ModelCallRow.purpose) == purpose)
        deviated = deviated.where(col(DeviationCallRow.purpose) == purpose)
    with Session(engine) as session:
        rows = [
            *session.exec(played.order_by(col(ModelCallRow.id))),
            *session.exec(deviated.order_by(col(DeviationCallRow.id))),
        ]
        return [_as_record(call, ModelCallRecord) for call in rows]


def list_matches(
    engine: Engine,
    tournaments: int | Collection[int] | None = None,
    offset: int = 0,
    limit: int | None = None,
) -> list[MatchRow]:
    """Matches in schedule order (tournament, then index): of a tournament, of several, or of
    all when none is given; `limit` of them from the `offset`-th on (a page of them)."""
    chosen = tournament_ids(tournaments)
    with Session(engine) as session:
        statement = select(MatchRow).order_by(
            col(MatchRow.tournament_id), col(MatchRow.index), col(MatchRow.key)
        )
        if chosen is not None:
            for tournament_id in chosen:
                require(session, TournamentRow, tournament_id)
            statement = statement.where(col(MatchRow.tournament_id).in_(chosen))
        return list(session.exec(statement.offset(offset).limit(limit)))


def same_draw(engine: Engine, match: MatchRow, limit: int = 20) -> list[MatchRow]:
    """Other stored matches of the same scenario and seed (of any tournament): other
    lineups, or other models, in the same market."""
    with Session(engine) as session:
        statement = (
            select(MatchRow)
            .where(
                col(MatchRow.scenario) == match.scenario,
                col(MatchRow.seed) == match.seed,
                col(MatchRow.id) != match.id,
            )
            .order_by(col(MatchRow.id))
            .limit(limit)
        )
        return list(session.exec(statement))


def lineups(engine: Engine, match_ids: Collection[int]) -> dict[int, list[MerchantResult]]:
    """The results of each of the matches, by match, best rank first."""
    found: dict[int, list[MerchantResult]] = {match_id: [] for match_id in match_ids}
    with Session(engine) as session:
        rows = session.exec(
            select(MatchResultRow)
            .where(col(MatchResultRow.match_id).in_(list(match_ids)))
            .order_by(col(MatchResultRow.rank), col(MatchResultRow.merchant))
        )
        for row in rows:
            found[row.match_id].append(_as_record(row, MerchantResult))
    return found


def note_progress(engine: Engine, progress: RunProgressRow) -> None:
    """Record where a tournament's run stands (one row a tournament, replaced)."""
    with Session(engine) as session:
        session.merge(progress)
        session.commit()


def run_progress(engine: Engine, tournament_id: int) -> RunProgressRow | None:
    """Where the tournament's run last said it stood; None before it said."""
    with Session(engine) as session:
        return session.get(RunProgressRow, tournament_id)


def count_matches(engine: Engine, tournament_id: int) -> int:
    """How many of the tournament's matches are stored."""
    with Session(engine) as session:
        return session.exec(
            select(func.count()).select_from(MatchRow).where(col(MatchRow.tournament_id) == tournament_id)
        ).one()


def changes(engine: Engine) -> tuple[int, ...]:
    """What changes whenever a run stores something a reader shows: the tournaments, their
    statuses and the matches stored. Equal answers: nothing new to read."""
    with Session(engine) as session:
        tournaments, running = session.exec(
            select(func.count(), func.sum(case((col(TournamentRow.status) == "running", 1), else_=0)))
        ).one()
        # the newest rows by their keys, which the database reads off its index
        match = session.exec(select(func.max(col(MatchRow.id)))).one()
        call = session.exec(select(func.max(col(ModelCallRow.id)))).one()
        return (tournaments, int(running or 0), int(match or 0), int(call or 0))


@dataclass(frozen=True)
class MatchDetail:
    """One stored match; results, days, faults and recall answers in the order they were recorded."""

    match: MatchRow
    results: list[MerchantResult]
    days: DayLog  # a sequence of DayRecords
    faults: list[Fault]
    recalls: list[RecallResult]
    calls: list[ModelCallRecord]
    market: (
        MarketScores  # the market's metrics and price windows; empty where the scenario has no equilibrium
    )
    deviation: DeviationPath | None = None  # the deviated path of a probed match
    goals: list[GoalResult] = field(default_factory=list)  # each merchant's, goal by goal
    notes: list[MetricNote] = field(default_factory=list)  # why its metrics without a value have none
    off_path: list[OffPathAnswer] = field(default_factory=list)  # its merchants' answers, as asked
    people: dict[str, float | None] = field(default_factory=dict)  # results.storage.person_seats

    @property
    def match_id(self) -> int:
        return stored_id(self.match.id)


def match_details(engine: Engine, tournament_id: int) -> Iterator[MatchDetail]:
    """Every stored match of the tournament in schedule order, each read when it is reached;
    NotFound for an unknown tournament is raised at once."""
    matches = list_matches(engine, tournament_id)
    return (match_detail(engine, stored_id(match.id)) for match in matches)


def match_detail(engine: Engine, match_id: int, with_calls: bool = True) -> MatchDetail:
    """The match; `with_calls` False leaves its model calls out (a year of an agent's are
    thousands of rows, which a reader of one day or of the charts does not need)."""
    with Session(engine) as session:
        match = require(session, MatchRow, match_id)
        days = session.get(DayLogRow, match_id)
        results = _match_records(session, MatchResultRow, match_id, MerchantResult)
        return MatchDetail(
            match=match,
            results=results,
            days=decode(days.columns, days.decisions) if days is not None else DayLog.of([]),
            faults=_match_records(session, FaultRow, match_id, Fault),
            recalls=_match_records(session, RecallQuestionRow, match_id, RecallResult),
            calls=_match_records(session, ModelCallRow, match_id, ModelCallRecord) if with_calls else [],
            market=MarketScores(
                metrics={row.name: row.value for row in _match_rows(session, MarketMetricRow, match_id)},
                windows=_match_records(session, PriceWindowRow, match_id, PriceWindow),
            ),
            deviation=_deviation_path(session, match_id),
            goals=_match_records(session, GoalRow, match_id, GoalResult),
            notes=_match_records(session, MetricNoteRow, match_id, MetricNote),
            off_path=_match_records(session, OffPathRow, match_id, OffPathAnswer),
            people=seated_people(session, match, results),
        )


def transcript(engine: Engine, match_id: int, day: int | None = None) -> list[TranscriptRecord]:
    """What the match's merchants said to their models and heard (of one `day`, or of every
    day), day by day and merchant by merchant as they were stored; NotFound for an unknown match."""
    with Session(engine) as session:
        require(session, MatchRow, match_id)
        statement = select(TranscriptRow).where(col(TranscriptRow.match_id) == match_id)
        if day is not None:
            statement = statement.where(col(TranscriptRow.day) == day)
        rows = session.exec(statement.order_by(col(TranscriptRow.id)))
        return [step for row in rows for step in steps_of(row.merchant, row.day, row.words)]


def notes(engine: Engine, match_id: int, merchant: str, day: int) -> dict[str, str]:
    """The notes the merchant's model kept by the end of `day` (agent mode; {} for others)."""
    with Session(engine) as session:
        words = session.exec(
            select(TranscriptRow.words)
            .where(
                col(TranscriptRow.match_id) == match_id,
                col(TranscriptRow.merchant) == merchant,
                col(TranscriptRow.day) <= day,
            )
            .order_by(col(TranscriptRow.day))
        )
        return notes_kept(words)


def _deviation_path(session: Session, match_id: int) -> DeviationPath | None:
    row = session.get(DeviationPathRow, match_id)
    if row is None:
        return None
    return DeviationPath(
        probe=DeviationProbe.model_validate_json(row.probe),
        days_played=decode(row.columns, row.decisions),
        faults=_match_records(session, DeviationFaultRow, match_id, Fault),
        calls=_match_records(session, DeviationCallRow, match_id, ModelCallRecord),
    )


def _match_rows(session: Session, table: Any, match_id: int) -> list[Any]:
    """The rows of `table` that belong to the match, in the order they were written."""
    return list(session.exec(select(table).where(table.match_id == match_id).order_by(table.id)))


def _match_records(session: Session, table: Any, match_id: int, record: type[Record]) -> list[Record]:
    """The match's rows of `table` read back as `record`s."""
    return [_as_record(row, record) for row in _match_rows(session, table, match_id)]


def _as_record(row: Any, record: type[Record]) -> Record:
    """A stored row read back as its record, with the record's fields alone (a table is its
    record with keys of its own, and pydantic hands an instance of a subclass back as it is)."""
    return record.model_validate({name: getattr(row, name) for name in record.model_fields})


def _goal_rows(
    match_id: int, results: Iterable[MerchantResult], goals: Iterable[GoalResult]
) -> list[dict[str, Any]]:
    contestant = {r.merchant: r.contestant for r in results}
    return [{**g.model_dump(), "match_id": match_id, "contestant": contestant[g.merchant]} for g in goals]


def _metric_rows(
    match_id: int, results: Iterable[MerchantResult], scores: Mapping[str, Mapping[str, float | None]]
) -> list[dict[str, Any]]:
    """Rows of the metric table in seat order (the order of the results), metrics in registry order."""
    return [
        {
            "match_id": match_id,
            "merchant": r.merchant,
            "contestant": r.contestant,
            "name": name,
            "value": value,
        }
        for r in results
        for name, value in scores.get(r.merchant, {}).items()
    ]


def _bulk_insert(session: Session, table: type[SQLModel], rows: list[dict[str, Any]]) -> None:
    """One executemany per table, in the session's transaction, handed to the database
    driver as it is: a match may have hundreds of metric rows, and SQLAlchemy's own
    executemany spends ~20 us of Python per row on parameters this code already made."""
    if not rows:
        return
    connection = session.connection()
    dialect = connection.dialect
    columns = list(rows[0])
    quote = dialect.identifier_preparer.quote
    if dialect.paramstyle in ("named", "pyformat"):
        marks = [f":{c}" if dialect.paramstyle == "named" else f"%({c})s" for c in columns]
        values: list[Any] = rows
    else:
        mark = {"qmark": "?", "format": "%s"}.get(dialect.paramstyle)
        marks = [mark or f":{k + 1}" for k in range(len(columns))]
        values = (
            list(map(itemgetter(*columns), rows))
            if len(columns) > 1
            else [(row[columns[0]],) for row in rows]
        )
    name = quote(str(table.__tablename__))
    sql = f"INSERT INTO {name} ({', '.join(map(quote, columns))}) VALUES ({', '.join(marks)})"
    connection.exec_driver_sql(sql, values)


def require(session: Session, table: type[Row], row_id: int) -> Row:
    """The row of `table` with that id; NotFound if there is none."""
    row = session.get(table, row_id)
    if row is None:
        raise NotFound(f"no {table.__tablename__} with id {row_id}")
    return row
