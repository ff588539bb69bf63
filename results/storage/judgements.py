"""The judges' judgements of a tournament's matches (the `judgement` table) and the model calls
that made them: a match's judgements by one judge are written in one transaction with that
judge's calls and the mark that it judged the match (`judged_match`), so that judging stopped
midway (a crash, a spent budget) resumes at the first match a judge has not judged, and no
paid call is left unrecorded beside its judgements."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from pydantic import TypeAdapter
from sqlalchemy import Engine
from sqlalchemy import select as select_columns
from sqlmodel import Session, col, func, select

from common.conduct import Claim, Judgement, Words
from results.records import MerchantConduct, ModelCallRecord
from results.storage.schema import (
    ConductRow,
    JudgedMatchRow,
    JudgementRow,
    MatchConductRow,
    MatchRow,
    ModelCallRow,
)

_CLAIMS = TypeAdapter(tuple[Claim, ...])


def save_judgements(
    engine: Engine,
    tournament_id: int,
    match_id: int,
    match_key: str,
    judge: str,
    judged: Sequence[tuple[Words, Judgement]] | None,
    calls: Sequence[ModelCallRecord],
) -> None:
    """Write `judge`'s judgements of every item of a stored match's words (`judged`, maybe
    none) and the calls they took (the match's id and key); with `judged` None (a judging
    stopped midway), the calls alone: paid, though the match is still to judge."""
    with Session(engine) as session:
        session.add_all(
            JudgementRow(
                match_id=match_id,
                merchant=words.merchant,
                day=words.day,
                source=words.source,
                index=words.index,
                text=words.text,
                judge=judgement.judge,
                labels=",".join(judgement.labels),
                reason=judgement.reason,
                unscored=judgement.unscored,
                claims=_CLAIMS.dump_json(judgement.claims).decode(),
            )
            for words, judgement in judged or []
        )
        if judged is not None:
            session.add(JudgedMatchRow(match_id=match_id, judge=judge))
        session.add_all(
            ModelCallRow(
                **call.model_dump(),
                tournament_id=tournament_id,
                match_id=match_id,
                match_key=match_key,
            )
            for call in calls
        )
        session.commit()


def judged(
    engine: Engine, tournament_id: int, matches: Collection[int] | None = None
) -> set[tuple[int, str]]:
    """The (match id, judge) pairs of the tournament that are judged (of `matches` alone, if
    given)."""
    statement = (
        select(JudgedMatchRow.match_id, JudgedMatchRow.judge)
        .join(MatchRow, col(MatchRow.id) == col(JudgedMatchRow.match_id))
        .where(col(MatchRow.tournament_id) == tournament_id)
    )
    if matches is not None:
        statement = statement.where(col(JudgedMatchRow.match_id).in_(matches))
    with Session(engine) as session:
        return {(match_id, judge) for match_id, judge in session.exec(statement)}


def judges_of(engine: Engine, match_id: int) -> set[str]:
    """The judges that have judged a match."""
    with Session(engine) as session:
        return set(session.exec(select(JudgedMatchRow.judge).where(col(JudgedMatchRow.match_id) == match_id)))


def judgements(engine: Engine, match_id: int) -> dict[Words, list[Judgement]]:
    """A match's judgements, item by item in the order the items were judged."""
    found: dict[Words, list[Judgement]] = {}
    with Session(engine) as session:
        rows = session.exec(
            select(JudgementRow).where(col(JudgementRow.match_id) == match_id).order_by(col(JudgementRow.id))
        )
        for row in rows:
            words = Words(
                merchant=row.merchant, day=row.day, source=row.source, index=row.index, text=row.text
            )
            found.setdefault(words, []).append(_judgement(row))
    return found


def _judgement(row: JudgementRow) -> Judgement:
    return Judgement(
        judge=row.judge,
        labels=tuple(row.labels.split(",")) if row.labels else (),
        reason=row.reason,
        unscored=row.unscored,
        claims=_CLAIMS.validate_json(row.claims),
    )


def save_judging(engine: Engine, tournament_id: int, judges: Sequence[str], majority: int | None) -> None:
    """Record whose judgements the tournament's conduct is read from (ConductRow), replacing
    what was."""
    with Session(engine) as session:
        session.merge(
            ConductRow(tournament_id=tournament_id, judges=json.dumps(list(judges)), majority=majority)
        )
        session.commit()


def judging(engine: Engine, tournament_id: int) -> tuple[list[str], int | None] | None:
    """The judges the tournament's conduct is read from and the majority they set (None: more
    than half of them); None where it has not been judged."""
    with Session(engine) as session:
        row = session.get(ConductRow, tournament_id)
        return None if row is None else (json.loads(row.judges), row.majority)


def judged_tournaments(engine: Engine) -> set[int]:
    """The tournaments that have been judged."""
    with Session(engine) as session:
        return set(session.exec(select(ConductRow.tournament_id)))


def tournament_judgements(
    engine: Engine, tournament_id: int, judges: Collection[str]
) -> list[list[Judgement]]:
    """The judgements of `judges`, item by item, over the tournament's matches that every one
    of them has judged, in one query: what agreement over a whole tournament reads of them,
    their labels and whether they were unscored (without their reasons and claims)."""
    everyone = (
        select(JudgedMatchRow.match_id)
        .where(col(JudgedMatchRow.judge).in_(judges))
        .group_by(col(JudgedMatchRow.match_id))
        .having(func.count() == len(set(judges)))
    )
    items: dict[tuple[int, str, int, str, int], list[Judgement]] = {}
    with Session(engine) as session:
        rows = session.execute(
            select_columns(
                *(
                    col(column)
                    for column in (
                        JudgementRow.match_id,
                        JudgementRow.merchant,
                        JudgementRow.day,
                        JudgementRow.source,
                        JudgementRow.index,
                        JudgementRow.judge,
                        JudgementRow.labels,
                        JudgementRow.unscored,
                    )
                )
            )
            .join(MatchRow, col(MatchRow.id) == col(JudgementRow.match_id))
            .where(col(MatchRow.tournament_id) == tournament_id)
            .where(col(JudgementRow.judge).in_(judges))
            .where(col(JudgementRow.match_id).in_(everyone))
            .order_by(col(JudgementRow.id))
        )
        for match_id, merchant, day, source, index, judge, labels, unscored in rows:
            items.setdefault((match_id, merchant, day, source, index), []).append(
                Judgement(judge=judge, labels=tuple(labels.split(",")) if labels else (), unscored=unscored)
            )
    return list(items.values())


def save_match_conduct(
    engine: Engine,
    match_id: int,
    judging: tuple[Sequence[str], int | None],
    seats: Sequence[tuple[str, str, MerchantConduct]],
) -> None:
    """Keep a judged match's conduct, seat by seat (contestant, merchant, conduct), as
    combined by `judging` (its judges, its majority), replacing what was kept."""
    judges, majority = judging
    kept = [
        [contestant, merchant, conduct.model_dump(mode="json")] for contestant, merchant, conduct in seats
    ]
    with Session(engine) as session:
        session.merge(
            MatchConductRow(
                match_id=match_id, judges=json.dumps(list(judges)), majority=majority, seats=json.dumps(kept)
            )
        )
        session.commit()


def match_conducts(
    engine: Engine, tournaments: Collection[int], scenario: str | None = None
) -> dict[int, list[tuple[str, str, MerchantConduct]]]:
    """Per match of the tournaments (of `scenario`, if given) whose kept conduct was combined
    as its tournament's latest judging says: its seats' conduct (contestant, merchant,
    conduct). A match kept under other judges, or not kept, is left out."""
    with Session(engine) as session:
        statement = (
            select(MatchConductRow, ConductRow)
            .join(MatchRow, col(MatchRow.id) == col(MatchConductRow.match_id))
            .join(ConductRow, col(ConductRow.tournament_id) == col(MatchRow.tournament_id))
            .where(col(MatchRow.tournament_id).in_(tournaments))
            .where(col(MatchConductRow.judges) == col(ConductRow.judges))
            .where(
                func.coalesce(col(MatchConductRow.majority), 0) == func.coalesce(col(ConductRow.majority), 0)
            )
        )
        if scenario is not None:
            statement = statement.where(col(MatchRow.scenario) == scenario)
        return {
            kept.match_id: [
                (contestant, merchant, MerchantConduct.model_validate(conduct))
                for contestant, merchant, conduct in json.loads(kept.seats)
            ]
            for kept, _ in session.exec(statement)
        }
