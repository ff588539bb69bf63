"""Campaign goals: each merchant's value of a metric against a bound, scaled with the match's
length where the metric is a flow; stored, exported, on the leaderboard, and the rating's
objective when the scoring section says so."""

from __future__ import annotations

import json

import pyarrow.csv
import pytest
from typer.testing import CliRunner

from arena.cli import app, printing
from market.engine import Market
from market.scenario import Scenario
from results import leaderboard, recording
from results.presentation.export import export
from results.readings import LeaderboardRecords, Seat
from results.records import FinishedMatch
from results.scoring.composite import ScoringWeights
from results.scoring.metrics import compute, match_results
from results.scoring.ratings import compute_leaderboard, ranked_matches
from results.storage import store

CAMPAIGN = Scenario.model_validate(
    {
        "name": "campaign",
        "days": 30,
        "products": [
            {
                "id": "tea",
                "unit_cost": 1.0,
                "reference_price": 2.0,
                "base_demand": 20,
                "initial_stock": 5000,
                "holding_cost": 0.001,
            }
        ],
        "demand": {"mode": "expected"},
        "goals": [
            {"metric": "revenue", "at_least": 300},
            {"metric": "market_share", "at_least": 0.6},
            {"metric": "inventory_cost_share", "at_most": 0.5},
        ],
    }
)


def played(days: int = 45):
    market = Market(CAMPAIGN, [["a", "b"]], days=days)
    market.reset([1])
    for _ in range(days):
        market.advance(
            decisions={
                0: [{"op": "set_price", "product": "tea", "price": 1.6}],
                1: [{"op": "set_price", "product": "tea", "price": 2.4}],
            }
        )
    return market.logs[0].build()


def test_a_flow_goal_scales_with_the_match_and_the_others_do_not():
    """Written for 30 days, played for 45: the revenue floor is 300 x 45 / 30 = 450, the share
    and the cost ratio stay as written; values from the day records, summed here."""
    log = played()
    scores = compute(log, scenario=CAMPAIGN)
    by = {(g.merchant, g.metric): g for g in scores.goals}
    sold = {m: sum(r.units_sold["tea"] for r in log if r.merchant == m) for m in ("a", "b")}
    revenue = {m: sum(r.revenue - r.refunds for r in log if r.merchant == m) for m in ("a", "b")}
    holding = {m: sum(r.holding for r in log if r.merchant == m) for m in ("a", "b")}
    for m in ("a", "b"):
        assert by[m, "revenue"].bound == pytest.approx(450.0)
        assert by[m, "revenue"].value == pytest.approx(revenue[m])
        assert by[m, "revenue"].met == (revenue[m] >= 450.0)
        share = sold[m] / (sold["a"] + sold["b"])
        assert by[m, "market_share"].bound == 0.6 and by[m, "market_share"].value == pytest.approx(share)
        assert by[m, "inventory_cost_share"].value == pytest.approx(holding[m] / revenue[m])
        met = [g.met for g in scores.goals if g.merchant == m]
        assert scores.merchants[m]["goals_met"] == pytest.approx(sum(met) / 3)
    assert by["a", "market_share"].met and not by["b", "market_share"].met  # the cheaper one sells more
    assert scores.merchants["a"]["goals_met"] > scores.merchants["b"]["goals_met"]
    assert by["a", "revenue"].goal == "revenue ≥ 300"


def test_in_a_scaled_currency_a_goal_on_money_counts_in_it_and_the_others_do_not():
    """The campaign with `scale: 10`: prices, costs and the revenue floor are ten times as
    large (300 x 10 x 45 / 30 = 4,500), the share and the cost ratio are not money; the
    merchants' values follow, so each meets what it met in the campaign's own currency."""
    scaled = Scenario.model_validate({**CAMPAIGN.model_dump(), "scale": 10})
    assert [g.scale for g in scaled.goals] == [10, 10, 10]
    assert scaled.identity() != CAMPAIGN.identity()
    assert '"scale"' not in CAMPAIGN.identity()  # a file without scale keeps the identity it had
    market = Market(scaled, [["a", "b"]], days=45)
    market.reset([1])
    for _ in range(45):
        market.advance(
            decisions={
                0: [{"op": "set_price", "product": "tea", "price": 16.0}],
                1: [{"op": "set_price", "product": "tea", "price": 24.0}],
            }
        )
    goals = compute(market.logs[0].build(), scenario=scaled).goals
    plain = compute(played(), scenario=CAMPAIGN).goals
    by = {(g.merchant, g.metric): g for g in goals}
    assert by["a", "revenue"].bound == pytest.approx(4500.0) and by["a", "revenue"].goal == "revenue ≥ 3000"
    assert by["a", "market_share"].bound == 0.6 and by["a", "inventory_cost_share"].bound == 0.5
    assert [g.met for g in goals] == [g.met for g in plain]


def test_without_goals_none_is_met_or_missed():
    log = played(3)
    scores = compute(log, scenario=CAMPAIGN.model_copy(update={"goals": ()}))
    assert scores.goals == [] and scores.merchants["a"]["goals_met"] is None


def test_goals_are_stored_read_back_exported_and_on_the_leaderboard(engine, tournament, tmp_path):
    log = played()
    scores = compute(log, scenario=CAMPAIGN)
    match = FinishedMatch(
        key="k0",
        index=0,
        scenario="campaign",
        seed=1,
        days=45,
        wall_seconds=0.1,
        merchants=[
            r.model_copy(update={"contestant": name})
            for r, name in zip(match_results(["a", "b"], log, scores.merchants, []), ("alpha", "beta"))
        ],
        days_played=log,
        faults=[],
    )
    match_id = recording.save_match(engine, tournament, match, CAMPAIGN)  # metrics computed as it is saved
    assert store.match_detail(engine, match_id).goals == scores.goals
    export(engine, tournament, tmp_path, "csv")
    exported = pyarrow.csv.read_csv(tmp_path / "goals.csv").to_pylist()
    assert len(exported) == 6
    assert {(row["contestant"], row["metric"], row["met"]) for row in exported} == {
        ({"a": "alpha", "b": "beta"}[g.merchant], g.metric, g.met) for g in scores.goals
    }
    rows = {row.contestant: row for row in leaderboard.leaderboard(engine, tournament)}
    assert rows["alpha"].goals_met == pytest.approx(scores.merchants["a"]["goals_met"])


def seat(contestant: str, rank: int, goals_met: float | None) -> Seat:
    return Seat((1, 0, "k"), contestant, rank, 0.0, 0.0, 0, ("s/seed=1", 30), None, goals_met)


def test_the_rating_can_rank_by_goals_met_then_by_place():
    seats = [seat("a", 1, 0.5), seat("b", 2, 1.0), seat("c", 3, 1.0), seat("d", 4, None)]
    (by_place,) = ranked_matches(seats)
    (by_goals,) = ranked_matches(seats, by_goals=True)
    assert dict(by_place.ranks) == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert dict(by_goals.ranks) == {"b": 1, "c": 2, "a": 3, "d": 4}


def test_the_scoring_sections_objective_decides_who_wins():
    seats = [seat("a", 1, 0.0), seat("b", 2, 1.0)]
    records = LeaderboardRecords(seats=seats, registered=set(), metrics=[], spent=[])
    by_place = {r.contestant: r.wins for r in compute_leaderboard(records)}
    by_goals = {
        r.contestant: r.wins for r in compute_leaderboard(records, weights=ScoringWeights(objective="goals"))
    }
    assert by_place == {"a": 1, "b": 0} and by_goals == {"a": 0, "b": 1}


def test_what_scripted_competitors_did_is_exported_and_shown(engine, tournament, tmp_path, monkeypatch):
    data = CAMPAIGN.model_dump()
    data["competitors"] = [{"name": "shop", "price_ratio": 0.9}]
    with_shop = Scenario.model_validate(data)
    market = Market(with_shop, [["a"]], days=3)
    market.reset([1])
    for _ in range(3):
        market.advance(decisions={0: []})
    log = market.logs[0].build()
    match = FinishedMatch(
        key="k1",
        index=0,
        scenario="campaign",
        seed=1,
        days=3,
        wall_seconds=0.1,
        merchants=match_results(["a"], log, compute(log, scenario=with_shop).merchants, []),
        days_played=log,
        faults=[],
    )
    match_id = recording.save_match(engine, tournament, match, with_shop)
    export(engine, tournament, tmp_path, "csv")
    rows = pyarrow.csv.read_csv(tmp_path / "competitor_days.csv").to_pylist()
    assert [(r["competitor"], r["day"], r["product"]) for r in rows] == [
        ("shop", d, "tea") for d in (1, 2, 3)
    ]
    assert [r["price"] for r in rows] == pytest.approx([1.8] * 3)
    assert [r["units_sold"] for r in rows] == pytest.approx(log.competitors.units_sold[:, 0, 0].tolist())
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    shown = json.loads(CliRunner().invoke(app, ["show", str(match_id), "--db", url, "--json"]).stdout)
    assert shown["competitors"]["names"] == ["shop"]
    assert shown["competitors"]["prices"] == [[[pytest.approx(1.8)]]] * 3
    assert shown["competitors"]["units_sold"] == [
        [[pytest.approx(u)]] for u in log.competitors.units_sold[:, 0, 0]
    ]
    monkeypatch.setattr(printing.out, "width", 200)
    table = CliRunner().invoke(app, ["show", str(match_id), "--db", url]).stdout
    lines = table[table.index("scripted competitors, day by day") :].splitlines()
    day_rows = [line.split("│")[1:3] for line in lines if line.count("│") > 3 and "shop" in line]
    assert [[cell.strip() for cell in row] for row in day_rows] == [[str(d), "shop"] for d in (1, 2, 3)]
    assert all("1.80" in line for line in lines if "shop" in line)
