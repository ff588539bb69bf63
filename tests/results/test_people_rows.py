"""Who the record says a person plays, and what a leaderboard row of a person holds: its time
per day (the mean of its seats' `seconds_per_day`), no tokens and no cost (a person is no free
model: no point on the report's rating-for-cost plot, nor on its front), rated as everyone."""

from __future__ import annotations

from common.people import PERSON_KIND, PERSON_TIME
from results.leaderboard import leaderboard
from results.readings import CallsSpent, LeaderboardRecords, MetricReading, Seat
from results.recording import save_match
from results.scoring.ratings import compute_leaderboard, cost_front
from results.storage.store import match_detail, start_tournament


def seat(index: int, contestant: str, rank: int) -> Seat:
    return Seat(
        (1, index, f"k{index}"), contestant, rank, 10.0 - rank, 1000.0, 0, ("s", 0, 3, ""), None, None
    )


def test_a_persons_row_has_its_mean_time_per_day_and_no_tokens_or_cost():
    """ann (a person) beats the model in one match and loses the other; her seats reported 12 and
    30 seconds a day: 21 on average. The model paid 0.5 USD for 900 tokens."""
    records = LeaderboardRecords(
        seats=[seat(0, "ann", 1), seat(0, "model", 2), seat(1, "ann", 2), seat(1, "model", 1)],
        metrics=[MetricReading("ann", PERSON_TIME, 12.0), MetricReading("ann", PERSON_TIME, 30.0)],
        spent=[CallsSpent("model", 900, 0.5, 0), CallsSpent("ann", 0, 0.0, 0)],
        people={"ann"},
    )
    rows = {row.contestant: row for row in compute_leaderboard(records)}
    ann, model = rows["ann"], rows["model"]
    assert (ann.person, ann.seconds_per_day, ann.matches, ann.wins) == (True, 21.0, 2, 1)
    assert (ann.tokens, ann.cost, ann.cost_per_match, ann.rating_per_dollar) == (None, None, None, None)
    assert (model.person, model.seconds_per_day, model.tokens, model.cost_per_match) == (
        False,
        None,
        900,
        0.25,
    )
    assert cost_front(list(rows.values())) == {"model"}  # she is on no front of cost


def test_a_name_is_a_persons_where_one_of_its_tournaments_registers_it_as_one(engine, make_match):
    """ann is a person in tournament 1 and a rule in tournament 2: pooled, she is a person (her
    seats of both); tournament 2 alone, she is not; the stored matches of each mark her seat
    as its tournament registers her."""
    ids = []
    for name, kind in (("one", PERSON_KIND), ("two", "rule")):
        tournament = start_tournament(
            engine, name, f"{name}.yaml", "", name, 1, [("ann", kind, {}), ("bob", "rule", {})], 1
        )
        ids.append(save_match(engine, tournament, make_match("k", 0, {"ann": 1, "bob": 2})))
    person = {t: {row.contestant: row.person for row in leaderboard(engine, t)} for t in (None, 1, 2)}
    assert person == {1: {"ann": True, "bob": False}, 2: {"ann": False, "bob": False}} | {
        None: {"ann": True, "bob": False}
    }
    # conftest's matches report no time per day: her seat is marked, its time None
    assert [match_detail(engine, match_id).people for match_id in ids] == [{"m0": None}, {}]
