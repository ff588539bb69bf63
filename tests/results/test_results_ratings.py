from __future__ import annotations

import random

import pytest
from sqlmodel import Session, select

from results.leaderboard import finish_tournament, leaderboard
from results.readings import RankedMatch
from results.recording import save_match
from results.scoring.composite import ScoringWeights
from results.scoring.ratings import elo
from results.storage.db import engine_for
from results.storage.schema import MatchResultRow, MatchRow, MetricRow
from results.storage.store import NotFound, start_tournament


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
    # the fit: gamma beat alpha and drew beta; alpha beat beta in k0 (weight 1) and lost to it
    # in k1 (weight 1/2); delta, unplayed, has no rating and comes last
    assert [row.contestant for row in board] == ["gamma", "alpha", "beta", "delta"]
    rows = {row.contestant: row for row in board}
    assert sum(rows[name].rating for name in ("alpha", "beta", "gamma")) / 3 == pytest.approx(1000.0)
    assert all(
        rows[name].low <= rows[name].high and rows[name].rank == 1 for name in ("alpha", "beta", "gamma")
    )
    assert (rows["delta"].rating, rows["delta"].low, rows["delta"].rank, rows["delta"].win_rate) == (
        None,
        None,
        None,
        None,
    )
    # online Elo, in schedule order: k0: alpha 1016, beta 984. k1 (k = 16): gamma beats alpha
    # (+8.37) and draws beta (-0.37), so gamma ~1008.0; alpha ~998.9; beta ~993.1; delta 1000
    assert rows["gamma"].elo == pytest.approx(1008.0, abs=0.1)
    assert rows["alpha"].elo == pytest.approx(998.9, abs=0.1)
    assert rows["beta"].elo == pytest.approx(993.1, abs=0.1)
    assert rows["delta"].elo == 1000.0
    assert (rows["alpha"].matches, rows["alpha"].wins, rows["alpha"].faults) == (2, 1, 2)
    assert (rows["beta"].matches, rows["beta"].wins, rows["beta"].win_rate) == (2, 1, 0.5)
    assert (rows["gamma"].matches, rows["gamma"].wins, rows["gamma"].win_rate) == (1, 1, 1.0)
    assert rows["alpha"].mean_profit == pytest.approx((90.0 + 80.0) / 2)
    assert (rows["alpha"].worst_profit, rows["gamma"].worst_profit, rows["delta"].worst_profit) == (
        80.0,
        90.0,
        None,
    )
    assert rows["beta"].mean_net_worth == pytest.approx((980.0 + 990.0) / 2)
    assert (rows["delta"].matches, rows["delta"].mean_profit, rows["delta"].composite) == (0, None, None)


def test_equal_records_sort_by_name_and_unplayed_come_last(engine, make_match):
    tournament = _tournament(engine, "zed", "amy", "kim")
    save_match(engine, tournament, make_match("k0", 0, {"zed": 1, "amy": 1}))
    board = leaderboard(engine, tournament)
    assert [row.contestant for row in board] == ["amy", "zed", "kim"]
    assert board[0].rating == pytest.approx(1000.0) and board[1].rating == pytest.approx(1000.0)


def test_global_leaderboard_identifies_contestants_by_name(engine, make_match):
    first = _tournament(engine, "a", "b")
    second = _tournament(engine, "a", "b")
    save_match(engine, second, make_match("k0", 0, {"a": 2, "b": 1}))
    save_match(engine, first, make_match("k0", 0, {"a": 1, "b": 2}))

    overall = {row.contestant: row for row in leaderboard(engine)}
    assert overall["a"].matches == 2 and overall["a"].wins == 1
    # one win each: equal ratings whatever the order
    assert overall["a"].rating == pytest.approx(1000.0) and overall["b"].rating == pytest.approx(1000.0)
    # online Elo rates tournament 1 first whatever was saved first: a 1016 then b wins back 17.4695
    assert overall["b"].elo == pytest.approx(1001.4695, abs=1e-4)
    assert {row.contestant: row.elo for row in leaderboard(engine, first)} == {"a": 1016.0, "b": 984.0}
    alone = {row.contestant: row.rating for row in leaderboard(engine, first)}
    assert alone["a"] > 1000.0 > alone["b"]


def test_leaderboard_of_unknown_tournament(engine):
    with pytest.raises(NotFound, match="no tournament with id 5"):
        leaderboard(engine, 5)


def _scenario_match(make_match, key: str, index: int, scenario: str, ranks: dict[str, int]):
    match = make_match(key, index, ranks)
    match.scenario = scenario
    return match


def test_scenario_filter_rates_only_that_scenarios_matches(engine, make_match):
    tournament = _tournament(engine, "a", "b")
    save_match(engine, tournament, _scenario_match(make_match, "k0", 0, "calm", {"a": 1, "b": 2}))
    save_match(engine, tournament, _scenario_match(make_match, "k1", 1, "calm", {"a": 1, "b": 2}))
    save_match(engine, tournament, _scenario_match(make_match, "k2", 2, "storm", {"a": 2, "b": 1}))

    calm = {row.contestant: row for row in leaderboard(engine, tournament, scenario="calm")}
    storm = {row.contestant: row for row in leaderboard(engine, scenario="storm")}
    assert (calm["a"].matches, calm["a"].wins, storm["a"].matches, storm["a"].wins) == (2, 2, 1, 0)
    assert calm["a"].rating > calm["b"].rating and storm["a"].rating < storm["b"].rating
    with pytest.raises(NotFound, match="no stored match of scenario 'fog'"):
        leaderboard(engine, scenario="fog")


def test_contestant_filter_keeps_only_their_seats(engine, make_match):
    tournament = _tournament(engine, "a", "b", "c")
    save_match(engine, tournament, make_match("k0", 0, {"c": 1, "a": 2, "b": 3}))
    save_match(engine, tournament, make_match("k1", 1, {"c": 1, "b": 2}))  # a and b did not meet
    save_match(engine, tournament, make_match("k2", 2, {"b": 1, "c": 2, "a": 3}))

    board = {row.contestant: row for row in leaderboard(engine, tournament, contestants=["a", "b"])}
    assert set(board) == {"a", "b"}
    # without c, a finished first in k0 and b in k2; k1 is left out
    assert (board["a"].matches, board["a"].wins, board["b"].matches, board["b"].wins) == (2, 1, 2, 1)
    assert board["a"].rating == pytest.approx(board["b"].rating)
    assert board["b"].mean_profit == pytest.approx((70.0 + 90.0) / 2)  # its seats in k0 and k2 only
    with pytest.raises(NotFound, match="no contestant named 'zz'"):
        leaderboard(engine, contestants=["a", "zz"])


def test_solo_matches_are_ranked_against_the_others_of_their_scenario_and_seed(engine, make_match):
    """A merchant alone has no rival in its match: the solo matches of one scenario and seed
    are ranked together, by the rule that ranks a match (survivors first, then net worth), and
    each seed is one such comparison; a contestant selection compares only its solo matches."""
    tournament = _tournament(engine, "a", "b", "c")
    played = [  # (contestant, seed, net worth, bankrupt day)
        ("a", 1, 1100.0, None),
        ("b", 1, 1200.0, None),
        ("c", 1, 1500.0, 2),  # the most net worth, but bankrupt: last
        ("a", 2, 1300.0, None),
        ("b", 2, 1250.0, None),
        ("c", 2, 1000.0, None),
    ]
    for index, (contestant, seed, net_worth, bankrupt_day) in enumerate(played):
        match = make_match(f"k{index}", index, {contestant: 1})
        match.seed = seed
        match.merchants[0].net_worth, match.merchants[0].bankrupt_day = net_worth, bankrupt_day
        save_match(engine, tournament, match)

    board = {row.contestant: row for row in leaderboard(engine, tournament)}
    # seed 1: b, a, c; seed 2: a, b, c
    assert {name: (row.matches, row.wins) for name, row in board.items()} == {
        "a": (2, 1),
        "b": (2, 1),
        "c": (2, 0),
    }
    assert board["a"].rating == pytest.approx(board["b"].rating)
    assert board["c"].rating < board["a"].rating
    chosen = {row.contestant: row for row in leaderboard(engine, tournament, contestants=["a", "c"])}
    assert {name: (row.matches, row.wins) for name, row in chosen.items()} == {"a": (2, 2), "c": (2, 0)}


def test_anchor_rates_the_named_contestant_1000(engine, make_match):
    tournament = _tournament(engine, "a", "b", "c")
    save_match(engine, tournament, make_match("k0", 0, {"a": 1, "b": 2, "c": 3}))
    save_match(engine, tournament, make_match("k1", 1, {"b": 1, "a": 2, "c": 3}))
    rows = {row.contestant: row for row in leaderboard(engine, tournament, anchor="c")}
    assert (rows["c"].rating, rows["c"].low, rows["c"].high) == (1000.0, 1000.0, 1000.0)
    assert rows["a"].rating > 1000.0 and rows["b"].rating > 1000.0
    with pytest.raises(NotFound, match="reference contestant 'd'"):
        leaderboard(engine, tournament, anchor="d")


def _metrics(engine, tournament: int, key: str, values: dict[tuple[str, str], float | None]) -> None:
    with Session(engine) as session:
        match = session.exec(
            select(MatchRow).where(MatchRow.tournament_id == tournament, MatchRow.key == key)
        ).one()
        seats = {
            r.contestant: r.merchant
            for r in session.exec(select(MatchResultRow).where(MatchResultRow.match_id == match.id))
        }
        for computed in session.exec(
            select(MetricRow).where(MetricRow.match_id == match.id)
        ):  # written by save_match
            session.delete(computed)
        session.flush()
        for (contestant, name), value in values.items():
            session.add(
                MetricRow(
                    match_id=match.id,
                    merchant=seats[contestant],
                    contestant=contestant,
                    name=name,
                    value=value,
                )
            )
        session.commit()


def test_validity_and_memory_error_are_means_over_the_selected_matches(engine, make_match):
    tournament = _tournament(engine, "a", "b")
    save_match(engine, tournament, _scenario_match(make_match, "k0", 0, "calm", {"a": 1, "b": 2}))
    save_match(engine, tournament, _scenario_match(make_match, "k1", 1, "storm", {"a": 2, "b": 1}))
    _metrics(
        engine,
        tournament,
        "k0",
        {
            ("a", "validity_rate"): 1.0,
            ("a", "memory_error"): 0.2,
            ("b", "validity_rate"): 0.5,
            ("a", "rejections"): 9.0,
        },
    )
    _metrics(
        engine,
        tournament,
        "k1",
        {("a", "validity_rate"): 0.5, ("a", "memory_error"): None, ("b", "validity_rate"): 0.7},
    )

    rows = {row.contestant: row for row in leaderboard(engine, tournament)}
    assert rows["a"].validity == pytest.approx(0.75) and rows["a"].memory_error == pytest.approx(0.2)
    assert rows["b"].validity == pytest.approx(0.6) and rows["b"].memory_error is None
    calm = {row.contestant: row for row in leaderboard(engine, tournament, scenario="calm")}
    assert (calm["a"].validity, calm["b"].validity) == (1.0, 0.5)
    # default weights 0.5 win rate, 0.25 validity, 0.25 memory; b has no memory part
    assert rows["a"].composite == pytest.approx((0.5 * 0.5 + 0.25 * 0.75 + 0.25 * 0.8) / 1.0)
    assert rows["b"].composite == pytest.approx((0.5 * 0.5 + 0.25 * 0.6) / 0.75)


def test_composite_weights_come_from_the_argument_else_the_defaults(engine, make_match):
    scored = _tournament(engine, "a", "b")
    save_match(engine, scored, make_match("k0", 0, {"a": 1, "b": 2}))
    _metrics(engine, scored, "k0", {("a", "validity_rate"): 0.25, ("b", "validity_rate"): 0.75})
    validity_only = ScoringWeights(win_rate=0, validity=1, memory=0)
    by_validity = {
        row.contestant: row.composite for row in leaderboard(engine, scored, weights=validity_only)
    }
    assert by_validity == {"a": 0.25, "b": 0.75}
    by_argument = {
        row.contestant: row.composite
        for row in leaderboard(engine, scored, weights=ScoringWeights(win_rate=1, validity=0, memory=0))
    }
    assert by_argument == {"a": 1.0, "b": 0.0}
    everywhere = {row.contestant: row.composite for row in leaderboard(engine)}  # no weights: the defaults
    assert everywhere["a"] == pytest.approx((0.5 * 1.0 + 0.25 * 0.25) / 0.75)
    # the table a run ends with (and prints) is the leaderboard weighed with the tournament's weights
    finished = finish_tournament(engine, scored, "finished", weights=validity_only)
    assert {row.contestant: row.composite for row in finished} == by_validity
    assert finished == leaderboard(engine, scored, weights=validity_only)


def test_leaderboard_rows_carry_the_fields_the_report_reads(engine, make_match):
    tournament = _tournament(engine, "a", "b")
    save_match(engine, tournament, make_match("k0", 0, {"a": 1, "b": 2}))
    fields = set(leaderboard(engine, tournament)[0].model_dump())
    assert {
        "contestant",
        "rating",
        "low",
        "high",
        "rank",
        "elo",
        "matches",
        "wins",
        "win_rate",
        "mean_profit",
        "validity",
        "memory_error",
        "tokens",
        "cost",
        "composite",
    } <= fields
