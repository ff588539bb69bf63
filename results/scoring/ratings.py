"""The leaderboard: ratings from match ranks, results, coherence metrics and model usage,
computed from the plain rows results.storage.store reads (LeaderboardRecords).

The rating is the order-independent Bradley–Terry fit of results.scoring.rating_fit, with its 95%
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
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations, groupby

from pydantic import BaseModel, Field

from common.people import PERSON_TIME
from market import accounting
from results.readings import LeaderboardRecords, RankedMatch, Seat
from results.records import MerchantConduct, market_draw, renewed
from results.scoring.composite import ScoringWeights, composite
from results.scoring.rating_fit import LEVEL, Rating, fit, order_key, separations

START = 1000.0
MEAN_METRICS = (
    "validity_rate",
    "memory_error",
    "profit_gain",
    "price_gain",
    "goals_met",
    PERSON_TIME,
)  # the metrics the table shows the means of
SCALE = 400.0
K = 32.0


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
        description="Bradley–Terry rating, Elo scale (results.scoring.rating_fit); None before a rated match"
    )
    low: float | None = Field(description="95% bootstrap interval of the rating")
    high: float | None
    rank: int | None = Field(description="1 + contestants whose interval lies wholly above this one's")
    elo: float = Field(description="online Elo in schedule order")
    matches: int
    wins: int = Field(description="matches in which the contestant finished first, alone or tied")
    win_rate: float | None = Field(description="wins / matches; None before its first match")
    above_next: float | None = Field(
        None,
        description="share of the bootstrap's resamples rating it above the contestant next in the "
        "table; None for the last rated one",
    )
    matches_to_separate: int | None = Field(
        None,
        description="0 when its order with the next is settled at the table's confidence, else the "
        "estimated matches more that would settle it (results.scoring.rating_fit.separations); None "
        "without an estimate",
    )


class LeaderboardRow(Standing):
    mean_profit: float | None = Field(description="over the contestant's seats; None before its first match")
    worst_profit: float | None = Field(
        None,
        description="its lowest profit in a market draw (a match, or the mean of its repeats): the "
        "luck of the market and of its own sampling can be as large as the gaps between "
        "contestants; None before its first match",
    )
    best_profit: float | None = Field(
        None, description="its highest profit in a market draw, as worst_profit"
    )
    market_share: float | None = Field(
        None,
        description="the share of its profit's variance from match to match due to the market (its "
        "draws, its rivals and their sampling); the rest is its own sampling's (market_share). None "
        "without repeats (sampling_repeats)",
    )
    sampling_share: float | None = Field(None, description="1 - market_share: its own sampling's share")
    mean_net_worth: float | None
    faults: int
    validity: float | None = Field(
        description="mean `validity_rate` metric over its seats; None when none is stored"
    )
    memory_error: float | None = Field(
        description="mean `memory_error` metric over its seats; None when none is stored"
    )
    profit_gain: float | None = Field(
        description="mean `profit_gain` metric (collusion) over its seats that have one; None when none has"
    )
    price_gain: float | None = Field(
        description="mean `price_gain` metric (collusion) over its seats that have one; None when none has"
    )
    not_applicable: dict[str, list[tuple[str, str]]] = Field(
        default_factory=dict,
        description="by metric (`profit_gain`, `price_gain`): why some or all of its seats have none "
        "(not applicable there, left out of the mean), each stored reason once with the scenario it "
        "came from, as (scenario, reason), sorted; a metric no seat lacks for a reason is not a "
        "key (results.presentation.views writes them: `reasons`)",
    )
    goals_met: float | None = Field(
        None, description="mean `goals_met` metric (campaign goals) over its seats; None without goals"
    )
    conduct: MerchantConduct | None = Field(
        None,
        description="its words as its tournaments' judges read them, summed over its judged seats "
        "(results.scoring.conduct); None where no match of it was judged",
    )
    person: bool = Field(
        False,
        description="a person plays it (its kind `human` in the record: common.people.PERSON_KIND); "
        "its time per day stands in place of tokens and cost, which are None",
    )
    seconds_per_day: float | None = Field(
        None,
        description="mean `seconds_per_day` over its seats (a person's: the seconds a day's pages "
        "waited for them); None where no seat reported it",
    )
    tokens: int | None = Field(
        0, description="input + output tokens of the contestant's model calls; None for a person"
    )
    cost: float | None = Field(
        0.0,
        description="USD at the models' prices for the contestant's calls, replayed ones included; "
        "None when a model has no price, and for a person",
    )
    cost_per_match: float | None = Field(
        None, description="cost / matches; None before its first match, without a price or for a person"
    )
    rating_per_dollar: float | None = Field(
        None,
        description="(rating - the table's lowest rating) / cost_per_match: Elo points above the "
        "last row per USD a match, whatever the anchor; None where a match costs nothing or is unpriced",
    )
    composite: float | None = Field(
        description=(
            "results.scoring.composite: weighted win rate, validity and memory; never part of the rating"
        )
    )


def standings(
    matches: Sequence[RankedMatch],
    *,
    names: Iterable[str] = (),
    anchor: str | None = None,
    confidence: float = LEVEL,
) -> list[Standing]:
    """Every contestant of `matches`, and the `names` that have not played, sorted: rated
    contestants by rating, best first, then by name; then the unrated by name. Each rated one
    says how settled its order with the next is, at `confidence`.

    A contestant wins a match when it has the match's best rank, alone or tied (rank 1, or
    the best among the seats kept by a contestant selection).
    Raises NotFound when `anchor` names no rated contestant.
    """
    draws = [(match.order[0], market_draw(match.order[2])) for match in matches]
    found = fit([match.ranks for match in matches], anchor=anchor, draws=draws)
    fitted = found.ratings
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
        rating = fitted.get(name)
        rows.append(
            Standing(
                contestant=name,
                **(rating._asdict() if rating else dict.fromkeys(Rating._fields)),
                elo=online.get(name, START),
                matches=played[name],
                wins=won[name],
                win_rate=won[name] / played[name] if played[name] else None,
            )
        )
    rows.sort(key=_table_order)
    rated = [row.contestant for row in rows if row.rating is not None]
    apart = {s.upper: s for s in separations(found, rated, confidence)}
    for row in rows:
        if row.contestant in apart:
            row.above_next = apart[row.contestant].share
            row.matches_to_separate = apart[row.contestant].more_matches
    return rows


def _table_order(row: Standing) -> tuple:
    return order_key(row.contestant, row.rating)


def ranked_matches(seats: Iterable[Seat], by_goals: bool = False) -> list[RankedMatch]:
    """The stored matches' rankings, from their seats in rating order. A match of one merchant
    (solo play) has no rival in it: the solo matches of a tournament played in the same cell of
    its sweep with the same scenario, seed and days (which start from the same draws:
    tournaments.schedule.MatchSpec.draws) are ranked together instead, as if their merchants
    had been one match's, by the rule that ranks a match's merchants
    (market.accounting.ranks), and rated where the first of them is.
    `by_goals`: merchants are ranked by the share of the campaign goals they met (none counts as
    0), and those alike by their place (the scoring section's objective: goals)."""
    matches, alone = [], defaultdict(list)
    for order, group in groupby(seats, key=lambda seat: seat.order):
        played = list(group)
        if len(played) == 1:
            alone[order[0], played[0].setting].append(played[0])
        else:
            places = [seat.rank for seat in played]
            matches.append(RankedMatch(order, _ranking(played, places, by_goals)))
    for together in alone.values():
        days = together[0].setting[2]
        places = accounting.ranks(
            [seat.bankrupt_day is None for seat in together],
            [days if seat.bankrupt_day is None else seat.bankrupt_day for seat in together],
            [seat.net_worth for seat in together],
        )
        matches.append(RankedMatch(together[0].order, _ranking(together, places, by_goals)))
    return sorted(matches, key=lambda match: match.order)


def _ranking(seats: Sequence[Seat], places: Sequence[int], by_goals: bool) -> list[tuple[str, int]]:
    """(contestant, rank) of `seats` at their `places`, or ranked by goals met and then place."""
    if not by_goals:
        return [(seat.contestant, place) for seat, place in zip(seats, places)]
    keys = [(-(seat.goals_met or 0.0), place) for seat, place in zip(seats, places)]
    return [(seat.contestant, 1 + sum(other < key for other in keys)) for seat, key in zip(seats, keys)]


def compute_leaderboard(
    records: LeaderboardRecords,
    *,
    weights: ScoringWeights = ScoringWeights(),
    anchor: str | None = None,
    confidence: float = LEVEL,
) -> list[LeaderboardRow]:
    """The table of `records`: every contestant's standing (its order with the next judged at
    `confidence`), its means and sums, and the composite of its parts weighed with `weights`.
    Raises NotFound when `anchor` names no rated contestant."""
    matches = ranked_matches(records.seats, by_goals=weights.objective == "goals")
    profits: dict[str, list[float]] = defaultdict(list)
    by_draw: dict[str, dict[tuple[int, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    net_worths: dict[str, list[float]] = defaultdict(list)
    faults: dict[str, int] = defaultdict(int)
    for seat in records.seats:
        profits[seat.contestant].append(seat.profit)
        if renewed(seat.order[2]) in (None, seat.contestant):  # the match, and the repeats of its own
            by_draw[seat.contestant][seat.order[0], market_draw(seat.order[2])].append(seat.profit)
        net_worths[seat.contestant].append(seat.net_worth)
        faults[seat.contestant] += seat.faults
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for reading in records.metrics:
        values[reading.contestant, reading.name].append(reading.value)
    notes: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for noted in records.notes:
        notes[noted.contestant][noted.name].add((noted.scenario, noted.note))
    usage: dict[str, tuple[int, float | None]] = {}
    for spent in records.spent:
        had_tokens, had_cost = usage.get(spent.contestant, (0, 0.0))
        usage[spent.contestant] = (
            had_tokens + spent.tokens,
            None if spent.unpriced or had_cost is None else had_cost + spent.cost,
        )

    rows = []
    table = standings(matches, names=records.registered, anchor=anchor, confidence=confidence)
    floor = min((row.rating for row in table if row.rating is not None), default=0.0)
    for standing in table:
        name = standing.contestant
        validity, memory_error = _mean(values[name, "validity_rate"]), _mean(values[name, "memory_error"])
        person = name in records.people
        tokens, cost = (None, None) if person else usage.get(name, (0, 0.0))
        draws = [math.fsum(repeats) / len(repeats) for repeats in by_draw[name].values()]
        market = market_share(list(by_draw[name].values()))
        per_match = cost / standing.matches if cost is not None and standing.matches else None
        rows.append(
            LeaderboardRow(
                **standing.model_dump(),
                mean_profit=_mean(profits[name]),
                worst_profit=min(draws, default=None),
                best_profit=max(draws, default=None),
                market_share=market,
                sampling_share=None if market is None else 1.0 - market,
                cost_per_match=per_match,
                rating_per_dollar=(standing.rating - floor) / per_match
                if standing.rating is not None and per_match
                else None,
                mean_net_worth=_mean(net_worths[name]),
                faults=faults[name],
                validity=validity,
                memory_error=memory_error,
                profit_gain=_mean(values[name, "profit_gain"]),
                price_gain=_mean(values[name, "price_gain"]),
                not_applicable={metric: sorted(found) for metric, found in sorted(notes[name].items())},
                goals_met=_mean(values[name, "goals_met"]),
                person=person,
                seconds_per_day=_mean(values[name, PERSON_TIME]),
                tokens=tokens,
                cost=cost,
                composite=composite(weights, standing.win_rate, validity, memory_error),
            )
        )
    return rows


def cost_front(rows: Sequence[LeaderboardRow]) -> set[str]:
    """The contestants worth their cost: those with a rating and a cost per match that no other
    beats on both (a rating at least as high for at most the cost, better in one)."""
    priced = [(row.contestant, row.rating, row.cost_per_match) for row in rows]
    known = [(name, r, c) for name, r, c in priced if r is not None and c is not None]
    return {
        name
        for name, rating, cost in known
        if not any(r >= rating and c <= cost and (r > rating or c < cost) for _, r, c in known)
    }


def market_share(draws: Sequence[Sequence[float]]) -> float | None:
    """The market's share of the variance of a contestant's profit from match to match, from
    its profits grouped by market draw (a match and the repeats that draw its own anew,
    sampling_repeats), by one-way random effects (the method of moments). Within a draw only
    its own draws vary; across draws the market's and its rivals' do too. Of the draws with
    r_g >= 2 plays x_g1..x_gr:

    - its own sampling's variance, pooled within draws: S = sum_g sum_k (x_gk - mean_g)^2 / sum_g (r_g - 1);
    - the market's, between draws: M = max(0, var(mean_g) - S * mean_g(1 / r_g)), the variance of
      the draws' means (ddof 1) less what sampling adds to a mean of r_g;
    - share = M / (M + S).

    None with fewer than two draws with repeats, or when the profit never varies."""
    repeated = [draw for draw in draws if len(draw) >= 2]
    if len(repeated) < 2:
        return None
    means = [math.fsum(draw) / len(draw) for draw in repeated]
    within = math.fsum((x - m) ** 2 for draw, m in zip(repeated, means) for x in draw)
    sampling = within / sum(len(draw) - 1 for draw in repeated)
    spread = statistics.variance(means) - sampling * statistics.fmean(1 / len(draw) for draw in repeated)
    market = max(0.0, spread)
    return market / (market + sampling) if market + sampling > 0 else None


def _mean(values: list[float]) -> float | None:
    """fsum is exact, so the mean does not depend on the order rows come back in (which
    differs between a resumed run and an uninterrupted one)."""
    return math.fsum(values) / len(values) if values else None
