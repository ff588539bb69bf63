"""sampling_repeats on real Ray: every match played again with the market's draws the same and
the merchants' own drawn anew, and the leaderboard's split of each contestant's profit
variance between the market and its own sampling."""

from __future__ import annotations

import textwrap

import pytest

from results.records import market_draw
from results.storage import store
from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")


def played(tmp_path, scenario: str, contestants: str, repetitions: int = 4):
    path = tmp_path / "repeats.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: repeats
            scenarios: [{scenario}]
            repetitions: {repetitions}
            days: 8
            recall_every: 0
            sampling_repeats: 3
            contestants:
            """
        )
        + textwrap.dedent(contestants)
    )
    engine = engine_for(f"sqlite:///{tmp_path}/{scenario}.db")
    summary = run_tournament(load_tournament(path), engine)
    return engine, summary


def test_rules_that_draw_nothing_repeat_exactly_so_all_their_variance_is_the_markets(tmp_path):
    """In price_war customers come at random: a fixed price and cost-plus earn differently from
    seed to seed, and exactly alike in each seed's repeats (two for each merchant)."""
    engine, summary = played(
        tmp_path, "price_war", "- {name: fixed, kind: fixed_price}\n- {name: plus, kind: cost_plus}\n"
    )
    matches = store.list_matches(engine, summary.tournament_id)
    assert len(matches) == 4 * (1 + 2 * 2) and len({market_draw(m.key) for m in matches}) == 4
    profit = {
        m.key: {r.merchant: r.profit for r in store.match_detail(engine, m.id).results} for m in matches
    }
    for key in {market_draw(m.key) for m in matches}:
        repeats = [f"{key}/sample={k}:{name}" for name in ("fixed", "plus") for k in (1, 2)]
        assert all(profit[key] == profit[repeat] for repeat in repeats)
    for row in summary.table:
        assert row.market_share == pytest.approx(1.0) and row.sampling_share == pytest.approx(0.0)
        assert row.worst_profit < row.best_profit


def test_a_repeat_renews_one_merchants_own_draws_and_no_one_elses(tmp_path):
    """calvano's customers are the expected ones, so the market draws nothing. A random
    merchant's repeats differ from its match by its own draws alone: its rival's prices are
    the same in every one. Its own draws are all its variance, within a seed and across seeds
    alike, so its share is its own sampling's (the market's, 0 in expectation, is estimated
    from 12 seeds: above 0.4 in fewer than 1 in 100 draws of them); the fixed price varies only
    with its rival, never within its own repeats, so its share is the market's."""
    engine, summary = played(
        tmp_path, "calvano", "- {name: fixed, kind: fixed_price}\n- {name: rand, kind: random}\n", 12
    )
    matches = store.list_matches(engine, summary.tournament_id)
    prices = {
        m.key: {
            (r.merchant, r.day): r.prices["good"] for r in store.match_detail(engine, m.id).days.records()
        }
        for m in matches
    }
    for m in matches:
        if m.key.endswith(":rand"):
            base = prices[market_draw(m.key)]
            mine = prices[m.key]
            assert all(mine[seat] == base[seat] for seat in base if seat[0] == "fixed")
            assert any(mine[seat] != base[seat] for seat in base if seat[0] == "rand")
    rows = {row.contestant: row for row in summary.table}
    assert rows["fixed"].market_share == pytest.approx(1.0)
    assert rows["rand"].sampling_share is not None and rows["rand"].sampling_share > 0.6
