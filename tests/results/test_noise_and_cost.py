"""What a leaderboard row says of luck and money: the market's and the contestant's own share of
its profit's variance (from repeats of each market draw), its worst and best draw, the cost of
a match, the rating per dollar, and how settled its order with the next row is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from results.readings import CallsSpent, LeaderboardRecords, Seat
from results.scoring.rating_fit import fit
from results.scoring.ratings import LeaderboardRow, compute_leaderboard, cost_front, market_share


def test_the_market_share_of_hand_made_draws():
    """Draws [1, 3], [5, 7], [9, 11]: each varies by 2 within (pooled S = 6 / 3 = 2), their
    means 2, 6, 10 by 16 (ddof 1), of which sampling makes S / 2 = 1: M = 15, share 15 / 17."""
    assert market_share([[1, 3], [5, 7], [9, 11]]) == pytest.approx(15 / 17)


def test_without_repeats_or_variance_there_is_no_share():
    assert market_share([[1.0], [2.0], [3.0]]) is None  # no draw repeated
    assert market_share([[1.0, 1.0], [2.0]]) is None  # one draw repeated
    assert market_share([[4.0, 4.0], [4.0, 4.0]]) is None  # no variance at all


@given(
    st.lists(st.integers(-1000, 1000), min_size=2, max_size=6),
    st.integers(2, 5),
)
def test_repeats_alike_are_all_the_market_and_draws_alike_all_sampling(means, repeats):
    alike = [[m] * repeats for m in means]
    if len(set(means)) > 1:
        assert market_share(alike) == pytest.approx(1.0)
    spread = [[m + k for k in range(repeats)] for m in [means[0]] * len(means)]
    assert market_share(spread) == pytest.approx(0.0)


def seat(index: int, key: str, contestant: str, rank: int, profit: float) -> Seat:
    return Seat((1, index, key), contestant, rank, profit, 1000 + profit, 0, ("s", 0, 10, ""), None, None)


def test_a_row_reads_its_draws_spread_and_cost():
    """a beats b in every match: two draws, each with a repeat of a's own draws. a's profits by
    draw are 10/14 and 30/34, so its worst draw 12 and best 32; it paid 0.6 USD over its 4
    matches."""
    profits = {"s/seed=0/a+b": (10, 14), "s/seed=1/a+b": (30, 34)}
    seats = []
    for k, (key, pair) in enumerate(profits.items()):
        for sample, profit in enumerate(pair):
            shown = f"{key}/sample={sample}:a" if sample else key  # a repeat renewing a's own draws
            seats += [
                seat(2 * k + sample, shown, "a", 1, profit),
                seat(2 * k + sample, shown, "b", 2, -profit),
            ]
    records = LeaderboardRecords(seats=seats, registered=(), spent=[CallsSpent("a", 100, 0.6, 0)])
    rows = {row.contestant: row for row in compute_leaderboard(records)}
    a = rows["a"]
    assert (a.worst_profit, a.best_profit) == (12, 32)
    assert a.market_share == pytest.approx(market_share([[10, 14], [30, 34]]))
    assert a.market_share + a.sampling_share == pytest.approx(1.0)
    assert rows["b"].market_share is None  # a's repeats are no repeats of b's own
    assert a.cost_per_match == pytest.approx(0.15)
    assert a.rating is not None and rows["b"].rating is not None
    assert a.rating_per_dollar == pytest.approx((a.rating - rows["b"].rating) / 0.15)  # b rated last
    assert rows["b"].cost_per_match == 0 and rows["b"].rating_per_dollar is None
    # a won all four: the only order any resample shows, but four meetings are all there are
    assert a.above_next == 1.0 and a.matches_to_separate == 0


@given(st.lists(st.tuples(st.integers(800, 1200), st.integers(0, 5)), min_size=1, max_size=8))
def test_the_cost_front_is_what_nothing_beats_on_both(points):
    rows = [
        LeaderboardRow.model_construct(contestant=f"c{k}", rating=float(r), cost_per_match=float(c))
        for k, (r, c) in enumerate(points)
    ]
    front = cost_front(rows)

    def beaten(a, b) -> bool:  # b beats a
        return (
            b.rating >= a.rating
            and b.cost_per_match <= a.cost_per_match
            and (b.rating, -b.cost_per_match)
            != (
                a.rating,
                -a.cost_per_match,
            )
        )

    for row in rows:
        assert (row.contestant in front) == (not any(beaten(row, other) for other in rows))
    assert front  # the best rated of the cheapest is always on it


def test_a_match_and_its_repeats_are_resampled_together():
    """Each match played twice alike: counted as two independent matches the bootstrap is as
    sure as with twice the evidence; drawn together, as sure as with the matches once."""
    once = [[("a", 1), ("b", 2)]] * 6 + [[("b", 1), ("a", 2)]] * 4
    twice = [ranking for ranking in once for _ in range(2)]
    draws = [k // 2 for k in range(len(twice))]

    def width(found) -> float:
        return found.ratings["a"].high - found.ratings["a"].low

    alone, together, apart = fit(once), fit(twice, draws=draws), fit(twice)
    assert width(apart) < 0.85 * width(alone)
    assert width(together) == pytest.approx(width(alone), rel=0.25)
