"""The leaderboard: ratings from match ranks, results, coherence metrics and model usage.

The rating is the order-independent Bradley–Terry fit of results.rating_fit, with its 95%
interval and rank. Online Elo is kept beside it as a second column, applied match by match in
schedule order:

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

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from itertools import combinations, groupby
from typing import NamedTuple

from pydantic import BaseModel, Field
from sqlalchemy import Engine
from sqlmodel import Session, func, select

from results.composite import ScoringWeights, composite
from results.errors import NotFound
from results.rating_fit import Rating, fit_ratings
from results.tables import (
    ContestantRow,
    DeviationCallRow,
    MatchResultRow,
    MatchRow,
    MetricRow,
    ModelCallRow,
    TournamentRow,
)

START = 1000.0
MEAN_METRICS = (
    "validity_rate",
    "memory_error",
    "profit_gain",
    "price_gain",
)  # the metrics the table shows the means of
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


class Standing(BaseModel):
    """A contestant's place in a table rated from match ranks alone (`arena rate` prints these)."""

    contestant: str
    rating: float | None = Field(
        description="Bradley–Terry rating, Elo scale (results.rating_fit); None before a rated match"
    )
    low: float | None = Field(description="95% bootstrap interval of the rating")
    high: float | None
    rank: int | None = Field(description="1 + contestants whose interval lies wholly above this one's")
    elo: float = Field(description="online Elo in schedule order")
    matches: int
    wins: int = Field(description="matches in which the contestant finished first, alone or tied")
    win_rate: float | None = Field(description="wins / matches; None before its first match")


class LeaderboardRow(Standing):
    mean_profit: float | None = Field(description="over the contestant's seats; None before its first match")
    mean_net_worth: float | None
    faults: int
    validity: float | None = Field(
        description="mean `validity_rate` metric over its seats; None when none is stored"
    )
    memory_error: float | None = Field(
        description="mean `memory_error` metric over its seats; None when none is stored"
    )
    profit_gain: float | None = Field(
        description="mean `profit_gain` metric (collusion) over its seats; None when none is stored"
    )
    price_gain: float | None = Field(
        description="mean `price_gain` metric (collusion) over its seats; None when none is stored"
    )
    tokens: int = Field(0, description="input + output tokens of the contestant's model calls")
    cost: float | None = Field(
        0.0,
        description="USD at the models' prices for the contestant's calls, replayed ones included; None when a model has no price",
    )
    composite: float | None = Field(
        description="results.composite: weighted win rate, validity and memory; never part of the rating"
    )


def standings(
    matches: Sequence[RankedMatch], *, names: Iterable[str] = (), anchor: str | None = None
) -> list[Standing]:
    """Every contestant of `matches`, and the `names` that have not played, sorted: rated
    contestants by rating, best first, then by name; then the unrated by name.

    A contestant wins a match when it has the match's best rank, alone or tied (rank 1, or
    the best among the seats kept by a contestant selection).
    Raises NotFound when `anchor` names no rated contestant.
    """
    fitted = fit_ratings([match.ranks for match in matches], anchor=anchor)
    online = elo(matches)
    played: dict[str, int] = defaultdict(int)
    won: dict[str, int] = defaultdict(int)
    for match in matches:
        best = min(rank for _, rank in match.ranks)
        for name in {name for name, _ in match.ranks}:
            played[name] += 1
            won[name] += any(seat == name and rank == best for seat, rank in match.ranks)
    rows = []
    for name in set(names) | online.keys():
        fit = fitted.get(name)
        rows.append(
            Standing(
                contestant=name,
                **(fit._asdict() if fit else dict.fromkeys(Rating._fields)),
                elo=online.get(name, START),
                matches=played[name],
                wins=won[name],
                win_rate=won[name] / played[name] if played[name] else None,
            )
        )
    return sorted(rows, key=_table_order)


def _table_order(row: Standing) -> tuple:
    # rounded so that contestants with equal records, whose fitted ratings may differ in the
    # last bits, are ordered by name
    return (row.rating is None, -round(row.rating or 0.0, 6), row.contestant)


def leaderboard(
    engine: Engine,
    tournament_id: int | None = None,
    *,
    scenario: str | None = None,
    contestants: Collection[str] | None = None,
    anchor: str | None = None,
    weights: ScoringWeights = ScoringWeights(),
) -> list[LeaderboardRow]:
    """The table of the stored matches: all of them, or those of a tournament, of a scenario,
    and of the named contestants (matches where at least two of them met, and only their
    seats, as if the others had not been there).

    With a tournament, its registered contestants appear played or not. The composite weighs
    its parts with `weights` (a tournament file's `scoring:` section, or a `--weights` file).
    Raises NotFound for an unknown tournament, scenario, contestant or anchor.
    """
    with Session(engine) as session:
        if tournament_id is not None and session.get(TournamentRow, tournament_id) is None:
            raise NotFound(f"no tournament with id {tournament_id}")
        if (
            scenario is not None
            and session.exec(select(MatchRow.id).where(MatchRow.scenario == scenario).limit(1)).first()
            is None
        ):
            raise NotFound(f"no stored match of scenario {scenario!r}")
        for name in sorted(contestants or ()):
            known = select(ContestantRow.id).where(ContestantRow.name == name).limit(1)
            if session.exec(known).first() is None:
                raise NotFound(f"no contestant named {name!r}")

        def selected(statement, contestant_column):
            if tournament_id is not None:
                statement = statement.where(MatchRow.tournament_id == tournament_id)
            if scenario is not None:
                statement = statement.where(MatchRow.scenario == scenario)
            if contestants is not None:
                statement = statement.where(contestant_column.in_(contestants), MatchRow.id.in_(meetings))
            return statement

        # with a contestant selection: only matches where two of them met
        meetings = (
            select(MatchResultRow.match_id)
            .where(MatchResultRow.contestant.in_(contestants or ()))
            .group_by(MatchResultRow.match_id)
            .having(func.count(func.distinct(MatchResultRow.contestant)) >= 2)
        )

        seats = session.exec(
            selected(
                select(
                    MatchRow.tournament_id,
                    MatchRow.index,
                    MatchRow.key,
                    MatchResultRow.contestant,
                    MatchResultRow.rank,
                    MatchResultRow.profit,
                    MatchResultRow.net_worth,
                    MatchResultRow.faults,
                ).join(MatchResultRow, MatchResultRow.match_id == MatchRow.id),
                MatchResultRow.contestant,
            ).order_by(MatchRow.tournament_id, MatchRow.index, MatchRow.key, MatchResultRow.merchant)
        ).all()
        registered = select(ContestantRow.name).where(ContestantRow.tournament_id == tournament_id)
        if contestants is not None:
            registered = registered.where(ContestantRow.name.in_(contestants))
        names = set(session.exec(registered)) if tournament_id is not None else set()
        metrics = session.exec(
            selected(
                select(MetricRow.contestant, MetricRow.name, MetricRow.value)
                .join(MatchRow, MatchRow.id == MetricRow.match_id)
                .where(MetricRow.name.in_(MEAN_METRICS), MetricRow.value.is_not(None)),
                MetricRow.contestant,
            )
        ).all()
        spent = [
            row
            for table in (ModelCallRow, DeviationCallRow)  # the deviated paths' calls were made too
            for row in session.exec(
                selected(
                    select(
                        table.contestant,
                        func.sum(table.input_tokens + table.output_tokens),
                        func.sum(table.cost),
                        func.count() - func.count(table.cost),  # calls without a price
                    )
                    .join(MatchRow, MatchRow.id == table.match_id)
                    .group_by(table.contestant),
                    table.contestant,
                )
            ).all()
        ]

    matches: list[RankedMatch] = []
    profits: dict[str, list[float]] = defaultdict(list)
    net_worths: dict[str, list[float]] = defaultdict(list)
    faults: dict[str, int] = defaultdict(int)
    for order, group in groupby(seats, key=lambda seat: (seat[0], seat[1], seat[2])):
        group = list(group)
        matches.append(RankedMatch(order, [(seat.contestant, seat.rank) for seat in group]))
        for seat in group:
            profits[seat.contestant].append(seat.profit)
            net_worths[seat.contestant].append(seat.net_worth)
            faults[seat.contestant] += seat.faults
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for name, metric, value in metrics:
        values[name, metric].append(value)
    usage: dict[str, tuple[int, float | None]] = {}
    for name, tokens, cost, unpriced in spent:
        had_tokens, had_cost = usage.get(name, (0, 0.0))
        usage[name] = (
            had_tokens + int(tokens or 0),
            None if unpriced or had_cost is None else had_cost + float(cost or 0.0),
        )

    rows = []
    for standing in standings(matches, names=names, anchor=anchor):
        name = standing.contestant
        validity, memory_error = _mean(values[name, "validity_rate"]), _mean(values[name, "memory_error"])
        tokens, cost = usage.get(name, (0, 0.0))
        rows.append(
            LeaderboardRow(
                **standing.model_dump(),
                mean_profit=_mean(profits[name]),
                mean_net_worth=_mean(net_worths[name]),
                faults=faults[name],
                validity=validity,
                memory_error=memory_error,
                profit_gain=_mean(values[name, "profit_gain"]),
                price_gain=_mean(values[name, "price_gain"]),
                tokens=tokens,
                cost=cost,
                composite=composite(weights, standing.win_rate, validity, memory_error),
            )
        )
    return rows


def _mean(values: list[float]) -> float | None:
    """fsum is exact, so the mean does not depend on the order rows come back in (which
    differs between a resumed run and an uninterrupted one)."""
    return math.fsum(values) / len(values) if values else None
