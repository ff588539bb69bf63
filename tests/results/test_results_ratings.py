from __future__ import annotations

import random

import pytest

from results.db import engine_for
from results.ratings import RankedMatch, elo, leaderboard
from results.store import NotFound, save_match, start_tournament


def _m(index: int, **ranks: int) -> RankedMatch:
    return RankedMatch((1, index, f"k{index}"), list(ranks.items()))


def test_pairwise_winner_gains_loser_loses_sum_conserved():
    ratings = elo([_m(0, a=1, b=2)])
    assert ratings == {"a": 1016.0, "b": 984.0}


def test_pairwise_uses_the_400_point_logistic_scale():
    # after a: 1016, b: 984, b's expected score is 1 / (1 + 10 ** (32 / 400)) = 0.454078,
    # so b's win gains 32 * (1 - 0.454078) = 17.4695
    ratings = elo([_m(0, a=1, b=2), _m(1, a=2, b=1)])
    assert ratings["b"] == pytest.approx(1001.4695, abs=1e-4)
    assert ratings["a"] == pytest.approx(998.5305, abs=1e-4)
    assert sum(ratings.values()) == pytest.approx(2000.0)


def test_draw_between_equals_changes_nothing():
    assert elo([_m(0, a=1, b=1)]) == {"a": 1000.0, "b": 1000.0}


def test_three_equal_merchants_decompose_into_pairs():
    # n = 3, k = 32 / 2 = 16, every pair expects 0.5:
    # first: +16*0.5 (vs second) +16*0.5 (vs third) = +16; second: -8 + 8 = 0; third: -16
    assert elo([_m(0, a=1, b=2, c=3)]) == {"a": 1016.0, "b": 1000.0, "c": 984.0}


def test_shared_rank_is_a_draw_between_the_tied():
    # a-b draw (0), each beats c: +16*0.5 = +8; c loses two pairs: -16
    assert elo([_m(0, a=1, b=1, c=3)]) == {"a": 1008.0, "b": 1008.0, "c": 984.0}


def test_four_merchant_winner_moves_like_a_pairwise_winner():
    # n = 4, k = 32 / 3: first wins 3 pairs, 3 * 0.5 * 32/3 = +16; second: (-0.5 + 0.5 + 0.5) * 32/3
    ratings = elo([_m(0, a=1, b=2, c=3, d=4)])
    assert ratings["a"] == pytest.approx(1016.0)
    assert ratings["b"] == pytest.approx(1000.0 + 16 / 3)
    assert ratings["c"] == pytest.approx(1000.0 - 16 / 3)
    assert ratings["d"] == pytest.approx(984.0)


def test_seat_order_within_a_match_does_not_matter():
    assert elo([RankedMatch((1, 0, "k"), [("c", 3), ("a", 1), ("b", 2)])]) == elo([_m(0, a=1, b=2, c=3)])


def _season() -> list[RankedMatch]:
    return [
        _m(0, a=1, b=2, c=3),
        _m(1, b=1, c=2),
        _m(2, c=1, a=2, b=2),
        _m(3, a=2, b=1),
        _m(4, a=1, c=2, d=3),
        RankedMatch((2, 0, "k0"), [("d", 1), ("a", 2)]),
    ]


def test_ratings_ignore_the_order_matches_arrive_in():
    season = _season()
    expected = elo(season)
    generator = random.Random(5)
    for _ in range(10):
        shuffled = season[:]
        generator.shuffle(shuffled)
        assert elo(shuffled) == expected


def test_schedule_order_is_what_counts():
    """Online Elo does depend on order, so the sort above is doing real work."""
    season = _season()
    renumbered = [RankedMatch((1, len(season) - i, m.order[2]), m.ranks) for i, m in enumerate(season)]
    assert elo(renumbered) != elo(season)


def _tournament(engine, *names: str) -> int:
    return start_tournament(engine, "t", "t.yaml", "x: 1\n", "hash-t", 1, [(n, "rule", {}) for n in names], 3)


def test_database_ratings_do_not_depend_on_completion_order(tmp_path, make_match):
    schedule = [
        make_match("k0", 0, {"a": 1, "b": 2, "c": 3}),
        make_match("k1", 1, {"b": 1, "c": 2}),
        make_match("k2", 2, {"c": 1, "a": 2}),
        make_match("k3", 3, {"a": 1, "b": 1, "c": 3}),
    ]
    boards = []
    for run, completion in enumerate([[0, 1, 2, 3], [3, 1, 0, 2]]):
        engine = engine_for(f"sqlite:///{tmp_path / f'run{run}.db'}")
        tournament = _tournament(engine, "a", "b", "c")
        for position in completion:
            save_match(engine, tournament, schedule[position])
        boards.append(leaderboard(engine, tournament))
        engine.dispose()
    assert boards[0] == boards[1]
    assert elo([]) == {}


def test_leaderboard_counts_wins_and_sorts(engine, make_match):
    tournament = _tournament(engine, "alpha", "beta", "gamma", "delta")
    save_match(engine, tournament, make_match("k0", 0, {"alpha": 1, "beta": 2}))
    shared = make_match("k1", 1, {"alpha": 2, "beta": 1, "gamma": 1})  # beta and gamma share first
    shared.merchants[0].faults = 2
    save_match(engine, tournament, shared)

    board = leaderboard(engine, tournament)
    # k0: alpha 1016, beta 984. k1 (k = 16): gamma beats alpha (+8.37) and draws beta (-0.37),
    # so gamma ~1008.0; alpha loses twice, ~998.9; beta ~993.1; delta, unplayed, stays 1000
    assert [row.contestant for row in board] == ["gamma", "delta", "alpha", "beta"]
    rows = {row.contestant: row for row in board}
    assert [row.rating for row in board] == sorted((row.rating for row in board), reverse=True)
    assert (rows["alpha"].matches, rows["alpha"].wins, rows["alpha"].faults) == (2, 1, 2)
    assert (rows["beta"].matches, rows["beta"].wins) == (2, 1)
    assert (rows["gamma"].matches, rows["gamma"].wins) == (1, 1)
    assert rows["alpha"].mean_profit == pytest.approx((90.0 + 80.0) / 2)
    assert rows["beta"].mean_net_worth == pytest.approx((980.0 + 990.0) / 2)
    assert (rows["delta"].rating, rows["delta"].matches, rows["delta"].mean_profit) == (1000.0, 0, None)


def test_equal_ratings_sort_by_name(engine, make_match):
    tournament = _tournament(engine, "zed", "amy", "kim")
    save_match(engine, tournament, make_match("k0", 0, {"zed": 1, "amy": 1}))
    assert [row.contestant for row in leaderboard(engine, tournament)] == ["amy", "kim", "zed"]


def test_global_leaderboard_identifies_contestants_by_name(engine, make_match):
    first = _tournament(engine, "a", "b")
    second = _tournament(engine, "a", "b")
    save_match(engine, second, make_match("k0", 0, {"a": 2, "b": 1}))
    save_match(engine, first, make_match("k0", 0, {"a": 1, "b": 2}))

    overall = {row.contestant: row for row in leaderboard(engine)}
    assert overall["a"].matches == 2 and overall["a"].wins == 1
    # tournament 1 is rated first whatever was saved first: a 1016 then b wins back 17.4695
    assert overall["b"].rating == pytest.approx(1001.4695, abs=1e-4)
    assert {row.contestant: row.rating for row in leaderboard(engine, first)} == {"a": 1016.0, "b": 984.0}


def test_leaderboard_of_unknown_tournament(engine):
    with pytest.raises(NotFound, match="no tournament with id 5"):
        leaderboard(engine, 5)
