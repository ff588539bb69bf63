"""Elo ratings from match ranks, and the leaderboard.

Online Elo, applied match by match in schedule order:

- every contestant starts at START = 1000;
- a match of n merchants is decomposed into all n(n-1)/2 pairs of its seats; in each pair a
  seat scores 1 if its rank is better, 0.5 if equal, 0 if worse;
- expected score of a against b: E = 1 / (1 + 10 ** ((R_b - R_a) / SCALE)), SCALE = 400;
- each pair changes a's rating by k * (score - E) and b's by the opposite, with
  k = K / (n - 1), K = 32: a seat plays n - 1 pairs, so a whole match moves a rating about
  as much as one two-player game;
- all pairs of a match use the ratings from before the match and are applied together, so
  the order of seats within a match does not matter and the sum of ratings is conserved.

Online Elo depends on the order of matches. The order used is (tournament id, schedule index,
key), never completion order, so parallel and resumed runs of the same schedule give the
same table. Contestants are identified by name across tournaments.
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations, groupby
from typing import Iterable, NamedTuple, Sequence

from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlmodel import Session, func, select

from results.errors import NotFound
from results.tables import ContestantRow, MatchResultRow, MatchRow, ModelCallRow, Tournament

START = 1000.0
SCALE = 400.0
K = 32.0


class RankedMatch(NamedTuple):
    """`order` is (tournament id, schedule index, key), the order in which matches are rated;
    `ranks` holds (contestant, rank) for every seat, rank 1 best, ties sharing a rank."""

    order: tuple[int, int, str]
    ranks: Sequence[tuple[str, int]]


def expected_score(rating: float, opponent: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((opponent - rating) / SCALE))


def elo(matches: Iterable[RankedMatch]) -> dict[str, float]:
    """Ratings after all matches, rated in `order` whatever order they are given in."""
    ratings: dict[str, float] = {}
    for match in sorted(matches, key=lambda m: m.order):
        before = {name: ratings.setdefault(name, START) for name, _ in match.ranks}
        if len(match.ranks) < 2:
            continue
        k = K / (len(match.ranks) - 1)
        change: dict[str, float] = defaultdict(float)
        for (a, rank_a), (b, rank_b) in combinations(match.ranks, 2):
            score = 1.0 if rank_a < rank_b else 0.5 if rank_a == rank_b else 0.0
            delta = k * (score - expected_score(before[a], before[b]))
            change[a] += delta
            change[b] -= delta
        for name, delta in change.items():
            ratings[name] += delta
    return ratings


class LeaderboardRow(BaseModel):
    contestant: str
    rating: float
    low: float = Field(description="lower end of the rating's 95% interval (this Elo has none: the rating itself)")
    high: float = Field(description="upper end of the rating's 95% interval (this Elo has none: the rating itself)")
    rank: int = Field(description="place in the table, 1 best")
    elo: float = Field(description="online Elo, in schedule order")
    matches: int
    wins: int = Field(description="matches in which the contestant finished first, alone or tied")
    win_rate: float | None = Field(description="wins / matches; None before its first match")
    mean_profit: float | None = Field(description="over the contestant's seats; None before its first match")
    mean_net_worth: float | None
    faults: int
    tokens: int = Field(0, description="input + output tokens of the contestant's model calls")
    cost: float = Field(0.0, description="USD, for models with a known price")
    validity: float | None = Field(None, description="share of operations the market accepted (not computed yet)")
    memory_error: float | None = Field(None, description="mean relative error of memory probes (not computed yet)")
    composite: float | None = Field(None, description="composite score (not computed yet)")


def leaderboard(engine: Engine, tournament_id: int | None = None) -> list[LeaderboardRow]:
    """The table of one tournament (its registered contestants included, played or not), or of
    all tournaments together; sorted by rating, best first, then by name."""
    with Session(engine) as session:
        statement = (
            select(
                MatchRow.tournament_id,
                MatchRow.index,
                MatchRow.key,
                MatchResultRow.contestant,
                MatchResultRow.rank,
                MatchResultRow.profit,
                MatchResultRow.net_worth,
                MatchResultRow.faults,
            )
            .join(MatchResultRow, MatchResultRow.match_id == MatchRow.id)
            .order_by(MatchRow.tournament_id, MatchRow.index, MatchRow.key, MatchResultRow.merchant)
        )
        registered = select(ContestantRow.name)
        if tournament_id is not None:
            if session.get(Tournament, tournament_id) is None:
                raise NotFound(f"no tournament with id {tournament_id}")
            statement = statement.where(MatchRow.tournament_id == tournament_id)
            registered = registered.where(ContestantRow.tournament_id == tournament_id)
        seats = session.exec(statement).all()
        names = set(session.exec(registered))
        spent = (
            select(
                MatchResultRow.contestant,
                func.sum(ModelCallRow.input_tokens + ModelCallRow.output_tokens),
                func.coalesce(func.sum(ModelCallRow.cost), 0.0),
            )
            .join(ModelCallRow, (ModelCallRow.match_id == MatchResultRow.match_id) & (ModelCallRow.merchant == MatchResultRow.merchant))
            .join(MatchRow, MatchRow.id == MatchResultRow.match_id)
            .group_by(MatchResultRow.contestant)
        )
        if tournament_id is not None:
            spent = spent.where(MatchRow.tournament_id == tournament_id)
        usage = {name: (int(tokens or 0), float(cost or 0.0)) for name, tokens, cost in session.exec(spent)}

    matches: list[RankedMatch] = []
    played: dict[str, set] = defaultdict(set)
    won: dict[str, set] = defaultdict(set)
    profits: dict[str, list[float]] = defaultdict(list)
    net_worths: dict[str, list[float]] = defaultdict(list)
    faults: dict[str, int] = defaultdict(int)
    for order, group in groupby(seats, key=lambda seat: (seat[0], seat[1], seat[2])):
        group = list(group)
        matches.append(RankedMatch(order, [(seat.contestant, seat.rank) for seat in group]))
        for seat in group:
            played[seat.contestant].add(order)
            if seat.rank == 1:
                won[seat.contestant].add(order)
            profits[seat.contestant].append(seat.profit)
            net_worths[seat.contestant].append(seat.net_worth)
            faults[seat.contestant] += seat.faults

    ratings = elo(matches)
    ordered = sorted(names | ratings.keys(), key=lambda name: (-ratings.get(name, START), name))
    return [
        LeaderboardRow(
            contestant=name,
            rating=ratings.get(name, START),
            low=ratings.get(name, START),
            high=ratings.get(name, START),
            rank=place,
            elo=ratings.get(name, START),
            matches=len(played[name]),
            wins=len(won[name]),
            win_rate=len(won[name]) / len(played[name]) if played[name] else None,
            mean_profit=_mean(profits[name]),
            mean_net_worth=_mean(net_worths[name]),
            faults=faults[name],
            tokens=usage.get(name, (0, 0.0))[0],
            cost=usage.get(name, (0, 0.0))[1],
        )
        for place, name in enumerate(ordered, start=1)
    ]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
