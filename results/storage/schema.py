"""The SQLModel tables of the record.

Timestamps are UTC (UTCDateTime). JSON columns (`params`, `decisions`) are text holding JSON so that any
database stores them the same way. Contestants are identified by name across tournaments;
results refer to contestants by name, not by row id, for that reason. A table of a match's
records is its model in results.records with the keys that place a row in the record, and
the column type of each field whose Python type alone does not give one (a Literal, a long
text).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    CheckConstraint,
    DateTime,
    Dialect,
    Index,
    LargeBinary,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlmodel import AutoString, Field, SQLModel

from common.conduct import Source
from common.model_calls import CallPurpose
from results.records import (
    Fault,
    FaultKind,
    GoalResult,
    MerchantResult,
    MetricNote,
    ModelCallRecord,
    OffPathAnswer,
    PlayedMatch,
    PriceWindow,
    RecallResult,
    WindowKind,
)

LARGEST_ID = 2**63 - 1  # the largest key a database holds


def utcnow() -> datetime:
    return datetime.now(UTC)


def stored_id(row_id: int | None) -> int:
    """The id of a stored row: the database gives one to every row it stores, so only a row
    not yet stored has none."""
    if row_id is None:
        raise ValueError("a row not stored has no id")
    return row_id


class UTCDateTime(TypeDecorator[datetime]):
    """A moment, stored as UTC without a zone and read back as UTC: the same on every
    database. Left to itself, PostgreSQL turns a moment into its server's local time to
    store it in a column without a zone, and SQLite gives back no zone."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None or value.tzinfo is None:
            return value
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return value if value is None else value.replace(tzinfo=UTC)


def row_json(row: SQLModel) -> dict[str, Any]:
    """A stored row as JSON, its fields in the order its model declares them: a row read back
    from the database holds them in whatever order SQLAlchemy loaded them, which changes from
    one process to the next."""
    dumped = row.model_dump(mode="json")
    return {name: dumped[name] for name in type(row).model_fields if name in dumped}


class TournamentRow(SQLModel, table=True):
    __tablename__ = "tournament"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'finished', 'stopped')", name="ck_tournament_status"),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str
    config_path: str
    config_text: str = Field(sa_type=Text, description="the tournament YAML as it was read")
    config_hash: str = Field(index=True, description="see tournaments.config.TournamentSpec.config_hash")
    seed: int
    status: str = Field(default="running", description="'running' | 'finished' | 'stopped'")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    planned_matches: int


class RunProgressRow(SQLModel, table=True):
    """Where a tournament's run stands, written by the run every few seconds while it plays
    (for readers of the record as it grows: `arena serve`): the days its matches have played,
    stored or still in play, and how many matches are in play. Left as it was when a run
    stops, crashes or finishes."""

    __tablename__ = "run_progress"

    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", primary_key=True)
    started_at: datetime = Field(
        sa_type=UTCDateTime, description="when this run started (a resumed one: its own start)"
    )
    days_at_start: int = Field(description="the days its matches had played when this run started")
    days_played: int
    days_planned: int
    matches_playing: int
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class SweepCellRow(SQLModel, table=True):
    """A cell of a tournament's sweep (results.records.SweepCell); `factors` is JSON."""

    __tablename__ = "sweep_cell"

    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", primary_key=True)
    position: int = Field(primary_key=True)
    label: str
    factors: str = Field(sa_type=Text, description="JSON object: factor -> value, in the sweep's order")
    first_index: int
    matches: int


class ContestantRow(SQLModel, table=True):
    __tablename__ = "contestant"
    __table_args__ = (UniqueConstraint("tournament_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE")
    name: str
    kind: str
    params: str = Field(
        sa_type=Text, description="JSON object; never holds secrets (keys come from env vars)"
    )


class MatchRow(PlayedMatch, SQLModel, table=True):
    __tablename__ = "match"
    __table_args__ = (
        UniqueConstraint("tournament_id", "key"),
        Index("ix_match_tournament_index", "tournament_id", "index"),
    )

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE")
    finished_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class MatchResultRow(MerchantResult, SQLModel, table=True):
    __tablename__ = "match_result"
    __table_args__ = (
        UniqueConstraint("match_id", "merchant"),
        Index("ix_match_result_contestant", "contestant"),
    )

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE")


class GoalRow(GoalResult, SQLModel, table=True):
    """One merchant's result on one campaign goal in one match (results.scoring.metrics)."""

    __tablename__ = "goal"
    __table_args__ = (UniqueConstraint("match_id", "merchant", "goal"),)

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE")
    contestant: str


class DayLogRow(SQLModel, table=True):
    """A match's day records, one row per match (see market.daylog.DayLog): the numbers as
    an .npz archive of arrays, one row per merchant-day, and the rest as JSON. One row
    rather than one per merchant-day because a tournament of instant merchants plays tens of
    thousands of merchant-days a second; read them with `results.storage.store.match_detail`,
    `arena show` or `arena export`."""

    __tablename__ = "day_log"

    match_id: int = Field(foreign_key="match.id", primary_key=True, ondelete="CASCADE")
    columns: bytes = Field(
        sa_type=LargeBinary, description="numpy .npz: seat, day, bankrupt, scalars, per_product"
    )
    decisions: str = Field(
        sa_type=Text,
        description="JSON: merchants, products, column names; "
        "per row rejections, plan and (where someone spoke) message",
    )


class FaultColumns(Fault, SQLModel):
    """A fault's columns, for the faults of both paths of a match."""

    kind: FaultKind = Field(sa_type=AutoString)
    detail: str = Field(sa_type=Text)


class FaultRow(FaultColumns, table=True):
    __tablename__ = "fault"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class RecallQuestionRow(RecallResult, SQLModel, table=True):
    """A recall question a merchant was asked, and its answer (results.records.RecallResult)."""

    __tablename__ = "recall_question"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class OffPathRow(OffPathAnswer, SQLModel, table=True):
    """A merchant's answer to an off-path question (results.records.OffPathAnswer)."""

    __tablename__ = "off_path"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class ModelCallColumns(ModelCallRecord, SQLModel):
    """A model call's columns, for the calls of both paths of a match."""

    purpose: CallPurpose = Field(sa_type=AutoString)


class ModelCallRow(ModelCallColumns, table=True):
    """A language-model call; the request is kept only as its hash."""

    __tablename__ = "model_call"

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", index=True)
    match_id: int | None = Field(
        default=None,
        foreign_key="match.id",
        ondelete="CASCADE",
        index=True,
        description="None: a match the run stopped before its end, which is not stored (see StoppedMatch)",
    )
    match_key: str


class TranscriptRow(SQLModel, table=True):
    """What a merchant's model calls of one day said and heard (common.model_calls.TranscriptStep),
    step by step: a compressed JSON list (results.storage.transcript_codec). One row a merchant-day, so that
    a day is read alone and a year of steps stays small."""

    __tablename__ = "transcript"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)
    merchant: str
    day: int
    steps: int = Field(description="the day's calls")
    words: bytes = Field(sa_type=LargeBinary, description="zlib-compressed JSON: the day's steps")


class ConductRow(SQLModel, table=True):
    """Whose judgements a tournament's conduct is read from, as its latest judging said (a
    run's `conduct:`, or the one `arena audit` was given): its judges, by name, and how many
    of them must give a label for it to count (None: more than half of them)."""

    __tablename__ = "conduct"

    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", primary_key=True)
    judges: str = Field(sa_type=Text, description="JSON: the judges' names")
    majority: int | None = None


class JudgedMatchRow(SQLModel, table=True):
    """A match a judge has judged, every item of its words (none, for a match without words):
    written with its judgements, so that judging resumes where it stopped."""

    __tablename__ = "judged_match"

    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", primary_key=True)
    judge: str = Field(primary_key=True)


class JudgementRow(SQLModel, table=True):
    """A judge's judgement of one item of a merchant's words (common.conduct: Words, Judgement):
    the words themselves, kept beside so that a judgement reads alone; `labels` joined by
    commas ("": unscored, with why in `unscored`); the claims it found as a JSON list. A
    judge's name identifies its judgements: an audit judges again only the items its judges
    have not judged."""

    __tablename__ = "judgement"
    __table_args__ = (UniqueConstraint("match_id", "merchant", "day", "source", "index", "judge"),)

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE")
    merchant: str
    day: int
    source: Source = Field(sa_type=AutoString)
    index: int = Field(description="tells apart the items of one source on one day (Words.index)")
    text: str = Field(sa_type=Text)
    judge: str
    labels: str
    reason: str = Field(sa_type=Text)
    unscored: str | None = Field(default=None, sa_type=Text)
    claims: str = Field(sa_type=Text, description="JSON: the claims it found (common.conduct.Claim)")


class MatchConductRow(SQLModel, table=True):
    """A judged match's conduct seat by seat (results.scoring.conduct.MerchantConduct), kept so
    that a table of many matches need not read and combine every judgement again: as combined
    from the judgements of `judges` with `majority` (ConductRow's, when it was written; a
    later judging with other judges or another majority writes it anew)."""

    __tablename__ = "match_conduct"

    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", primary_key=True)
    judges: str = Field(sa_type=Text, description="JSON: the judges' names")
    majority: int | None = None
    seats: str = Field(sa_type=Text, description="JSON: [contestant, merchant, its conduct] per seat")


class DeviationPathRow(SQLModel, table=True):
    """The deviated path of a probed match (results.records.DeviationPath): its probe and
    its days, stored as a match's days are (DayLogRow)."""

    __tablename__ = "deviation_path"

    match_id: int = Field(foreign_key="match.id", primary_key=True, ondelete="CASCADE")
    probe: str = Field(
        sa_type=Text,
        description="JSON: the tournament's deviation section (results.settings.DeviationProbe)",
    )
    columns: bytes = Field(sa_type=LargeBinary)
    decisions: str = Field(sa_type=Text)


class DeviationFaultRow(FaultColumns, table=True):
    """A fault on the deviated path of a probed match."""

    __tablename__ = "deviation_fault"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class DeviationCallRow(ModelCallColumns, table=True):
    """A model call made on the deviated path of a probed match (answers replayed from the
    response cache are recorded too, `cached`)."""

    __tablename__ = "deviation_call"

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", index=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class MetricRow(SQLModel, table=True):
    """One metric of one merchant in one match (see results.scoring.metrics for the definitions).

    Computed from the match's stored records when the match is saved; None where a metric
    does not apply (no recall questions asked, no price moves)."""

    __tablename__ = "metric"
    # the only index: a match writes hundreds of these rows, and each index costs about as
    # much again per row; reads go by match (this index's first column)
    __table_args__ = (UniqueConstraint("match_id", "merchant", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE")
    merchant: str
    contestant: str
    name: str
    value: float | None = None


class MarketMetricRow(SQLModel, table=True):
    """One metric of a match's market as a whole (results.scoring.metrics.MARKET_METRICS): stored
    for the matches whose scenario has an equilibrium, none for the others."""

    __tablename__ = "market_metric"
    __table_args__ = (UniqueConstraint("match_id", "name"),)

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE")
    name: str
    value: float | None = None


class MetricNoteRow(MetricNote, SQLModel, table=True):
    """Why a metric of a merchant (of the market: merchant NULL) in a match has no value, for
    the metrics that say (results.scoring.match_records.NotApplicable): the "n/a" of its row in `metric` or
    `market_metric`. A database an older arena wrote has none until `arena rescore`."""

    __tablename__ = "metric_note"

    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class PriceWindowRow(PriceWindow, SQLModel, table=True):
    __tablename__ = "price_window"

    kind: WindowKind = Field(sa_type=AutoString)
    id: int | None = Field(default=None, primary_key=True)
    match_id: int = Field(foreign_key="match.id", ondelete="CASCADE", index=True)


class RunEndRow(SQLModel, table=True):
    """Why a tournament's last run ended before playing every match of its schedule: its
    budget, a broken model, or an adaptive schedule's own end (tournaments.adaptive)."""

    __tablename__ = "run_end"

    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", primary_key=True)
    reason: str = Field(sa_type=Text)
    ended_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class DeskPageRow(SQLModel, table=True):
    """The outcome of a page put before a person at a human seat, kept as it is settled
    (results.storage.desk_pages), so that a resumed run answers again at once what people
    answered: the page's key (its match, merchant, day, what it asked: "day", "recall" or
    "off_path", and its attempt), a digest of what it showed (contestants.desk.page_digest),
    what was submitted, by field, and the seconds it waited for it; both None for a page
    withdrawn when its time was up."""

    __tablename__ = "desk_page"
    __table_args__ = (UniqueConstraint("tournament_id", "match_key", "merchant", "day", "asked", "attempt"),)

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE")
    match_key: str
    merchant: str
    day: int
    asked: str
    attempt: int
    shown: str
    fields: str | None = Field(default=None, sa_type=Text, description="JSON: field -> text; None: withdrawn")
    seconds: float | None = None


class RatingSnapshot(SQLModel, table=True):
    __tablename__ = "rating_snapshot"

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id", ondelete="CASCADE", index=True)
    contestant: str
    rating: float
    matches: int
    wins: int
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
