"""Who the record says people play: the contestants registered with the kind
common.people.PERSON_KIND, and a stored match's seats they sat at with their time per day
(common.people.PERSON_TIME)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlmodel import Session, col, select

from common.people import PERSON_KIND, PERSON_TIME
from results.records import MerchantResult
from results.storage.schema import ContestantRow, MatchRow, MetricRow


def people(session: Session, tournament_ids: Collection[int] | None) -> set[str]:
    """The contestants a person plays (their kind common.people.PERSON_KIND) among those
    registered for the tournaments (None: for any): a name is a person's if one of its
    registrations is."""
    statement = select(ContestantRow.name).where(col(ContestantRow.kind) == PERSON_KIND)
    if tournament_ids is not None:
        statement = statement.where(col(ContestantRow.tournament_id).in_(tournament_ids))
    return set(session.exec(statement))


def seated_people(
    session: Session, match: MatchRow, results: Sequence[MerchantResult]
) -> dict[str, float | None]:
    """The merchants of `results` (a stored match's, in seat order) whose contestant a person
    plays (`people`), each with its stored PERSON_TIME (None where it has none: no day's form
    was taken)."""
    persons = people(session, [match.tournament_id])
    seated = [r.merchant for r in results if r.contestant in persons]
    if not seated:
        return {}
    times = session.exec(
        select(MetricRow.merchant, MetricRow.value).where(
            col(MetricRow.match_id) == match.id, col(MetricRow.name) == PERSON_TIME
        )
    )
    found = dict(times.all())
    return {merchant: found.get(merchant) for merchant in seated}
