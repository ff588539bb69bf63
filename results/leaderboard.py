"""The leaderboard of stored matches, as `arena leaderboard`, the report, the viewer and the end
of a run show it: the store's readings (results.storage.leaderboard_rows) rated by results.scoring.ratings."""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

from sqlalchemy import Engine

from results.readings import RankedMatch
from results.records import MerchantConduct
from results.scoring.composite import ScoringWeights
from results.scoring.conduct import summed
from results.scoring.rating_fit import LEVEL
from results.scoring.ratings import MEAN_METRICS, LeaderboardRow, compute_leaderboard, ranked_matches
from results.storage import leaderboard_rows, store
from results.storage.judgements import judged_tournaments, match_conducts


def leaderboard(
    engine: Engine,
    tournaments: int | Collection[int] | None = None,
    *,
    scenario: str | None = None,
    contestants: Collection[str] | None = None,
    anchor: str | None = None,
    weights: ScoringWeights = ScoringWeights(),
    confidence: float = LEVEL,
) -> list[LeaderboardRow]:
    """The table of the stored matches (results.scoring.ratings.compute_leaderboard): all of them, or
    those of a tournament (or of several, pooled), of a scenario, and of the named contestants
    (matches where at least two of them met, and only their seats, as if the others had not
    been there; and their solo matches, ranked against one another's).

    With tournaments, their registered contestants appear played or not. The composite weighs
    its parts with `weights` (a tournament file's `scoring:` section, or a `--weights` file);
    two contestants next to each other are ordered at `confidence` (a file's `confidence:`).
    Raises NotFound for an unknown tournament, scenario, contestant or anchor.
    """
    records = leaderboard_rows.leaderboard_records(engine, tournaments, scenario, contestants, MEAN_METRICS)
    table = compute_leaderboard(records, weights=weights, anchor=anchor, confidence=confidence)
    return _with_conduct(engine, table, tournaments, scenario)


def _with_conduct(
    engine: Engine,
    table: list[LeaderboardRow],
    tournaments: int | Collection[int] | None,
    scenario: str | None,
) -> list[LeaderboardRow]:
    """Each row with its contestant's conduct, summed over its seats in the judged matches of
    the table's tournaments (of `scenario`, if given: results.recording.record_conduct keeps
    them); the rows of a table with none as they were."""
    judged, chosen = judged_tournaments(engine), store.tournament_ids(tournaments)
    if chosen is not None:
        judged &= set(chosen)
    if not judged:  # the table as it was, without reading a match
        return table
    seats: dict[str, list[MerchantConduct]] = {}
    for kept in match_conducts(engine, judged, scenario).values():
        for contestant, _, conduct in kept:
            seats.setdefault(contestant, []).append(conduct)
    if not seats:
        return table
    return [
        row.model_copy(update={"conduct": summed(seats[row.contestant])}) if row.contestant in seats else row
        for row in table
    ]


def rankings(engine: Engine, tournament_id: int, by_goals: bool = False) -> list[RankedMatch]:
    """Each stored match's ranking of a tournament, as its leaderboard rates them
    (results.scoring.ratings.ranked_matches: solo matches ranked against one another's; `by_goals`:
    by the campaign goals met first)."""
    return ranked_matches(leaderboard_rows.seats(engine, tournament_id), by_goals)


def finish_tournament(
    engine: Engine,
    tournament_id: int,
    status: Literal["finished", "stopped"],
    weights: ScoringWeights = ScoringWeights(),
    confidence: float = LEVEL,
    reason: str | None = None,
) -> list[LeaderboardRow]:
    """Mark the tournament finished or stopped, with the `reason` its run ended before its
    schedule's last match (none: it played them all), snapshot its own leaderboard and return
    it (its composite weighed with `weights`, its ties judged at `confidence`), so that the run
    reports the table it stored.

    The snapshot keeps the table as it was reported, whatever later changes to the rating
    formula; a tournament stopped, resumed and finished has one snapshot per ending.
    Contestants without a rating yet (no match played) are not snapshotted.
    """
    table = leaderboard(engine, tournament_id, weights=weights, confidence=confidence)
    rated = [(row.contestant, row.rating, row.matches, row.wins) for row in table if row.rating is not None]
    store.end_tournament(engine, tournament_id, status, reason, rated)
    return table
