"""sampling_repeats on real Ray: every match played again with the market's draws the same and
the merchants' own drawn anew, and the leaderboard's split of each contestant's profit
variance between the market and its own sampling."""

from __future__ import annotations

import textwrap

import pytest

from results import store
from results.db import engine_for
from results.records import market_draw
from tournaments.config import load_tournament
from tournaments.runner import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")


def played(tmp_path, scenario: str, contestants: str):
    path = tmp_path / "repeats.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: repeats
            scenarios: [{scenario}]
            repetitions: 4
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
    seed to seed, and exactly alike in each seed's three repeats."""
    engine, summary = played(
        tmp_path, "price_war", "- {name: fixed, kind: fixed_price}\n- {name: plus, kind: cost_plus}\n"
    )
    matches = store.list_matches(engine, summary.tournament_id)
    assert len(matches) == 4 * 3 and len({market_draw(m.key) for m in matches}) == 4
    profit = {
        m.key: {r.merchant: r.profit for r in store.match_detail(engine, m.id).results} for m in matches
    }
    for key in {market_draw(m.key) for m in matches}:
        assert profit[key] == profit[f"{key}/sample=1"] == profit[f"{key}/sample=2"]
    for row in summary.table:
        assert row.market_share == pytest.approx(1.0) and row.sampling_share == pytest.approx(0.0)
        assert row.worst_profit < row.best_profit


def test_random_merchants_in_a_market_without_chance_vary_by_their_own_draws(tmp_path):
    """calvano's customers are the expected ones: the market draws nothing, so the random
    merchants' repeats differ by their own draws alone, within seeds as much as across them."""
    engine, summary = played(
        tmp_path,
        "calvano",
        "- {name: r1, kind: random}\n- {name: r2, kind: random, params: {max_markup: 0.5}}\n",
    )
    matches = store.list_matches(engine, summary.tournament_id)
    profit = {m.key: store.match_detail(engine, m.id).results[0].profit for m in matches}
    assert len({round(p, 9) for p in profit.values()}) == len(profit)  # every repeat its own
    for row in summary.table:
        assert row.sampling_share is not None and row.sampling_share > 0.6
