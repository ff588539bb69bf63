"""What the ratings are computed from: the plain rows results.storage.store reads of the stored
matches (and results.storage.results_csv of a file of results from elsewhere). They sit at
results' base so that the store hands them up without importing the scoring that rates them
(results.scoring.ratings)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple


class RankedMatch(NamedTuple):
    """`order` is (tournament id, schedule index, key), the order in which matches are rated;
    `ranks` holds (contestant, rank) for every seat, rank 1 best, ties sharing a rank."""

    order: tuple[int, int, str]
    ranks: Sequence[tuple[str, int]]


class Seat(NamedTuple):
    """A contestant's seat in a stored match, as the leaderboard reads it: the match's `order`
    (as RankedMatch's), the seat's rank and its result, and what a seat alone in its match is
    ranked by against others (results.scoring.ratings.ranked_matches): the match's scenario,
    seed, days and the cell of its sweep ("" without one) followed by its repeat's number
    (`/sample=K`, none for the match itself), and the day the merchant went bankrupt."""

    order: tuple[int, int, str]
    contestant: str
    rank: int
    profit: float
    net_worth: float
    faults: int
    setting: tuple[str, int, int, str]
    bankrupt_day: int | None
    goals_met: float | None


class MetricReading(NamedTuple):
    """A stored value of one of the metrics the leaderboard averages
    (results.scoring.ratings.MEAN_METRICS) for one of a contestant's seats."""

    contestant: str
    name: str
    value: float


class NoteReading(NamedTuple):
    """Why one of the metrics the leaderboard averages has no value for one of a contestant's
    seats: the stored note (results.records.MetricNote) and its match's scenario."""

    contestant: str
    name: str
    scenario: str
    note: str


class CallsSpent(NamedTuple):
    """A contestant's model calls of one kind (on path or deviated): input + output tokens, the
    USD of those with a price, and how many have none."""

    contestant: str
    tokens: int
    cost: float
    unpriced: int


@dataclass(frozen=True)
class LeaderboardRecords:
    """What a leaderboard is computed from, as results.storage.store reads it from the stored matches:
    the seats in rating order, the contestants registered to appear whether they played or
    not, the metric values to average (and why some seats have none), the model calls to
    sum, and the contestants people play (common.people.PERSON_KIND)."""

    seats: Sequence[Seat]
    registered: Collection[str] = ()
    metrics: Sequence[MetricReading] = ()
    spent: Sequence[CallsSpent] = ()
    notes: Sequence[NoteReading] = ()
    people: Collection[str] = ()
