"""A scenario's `scale` is its currency: every amount of money times the scale. Customers judge
a price against the reference price, so the market plays the same game in any currency: every
rule and every learner posts the same prices times the scale, sells the same units, and its
profit gain (a ratio of money to money) is unchanged."""

from __future__ import annotations

import pytest

from common.yaml_files import ConfigError
from market.scenario import Scenario, load_scenario
from results.records import FinishedMatch
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

SCALE = 10.0
FAST_LEARNER = {"beta": 2.0e-4, "stable_periods": 2000, "max_periods": 200_000}
PAIRS = [  # (scenario, the two seats' kinds and params)
    ("calvano", [("qlearning", FAST_LEARNER), ("qlearning", FAST_LEARNER)]),
    ("calvano", [("qlearning", FAST_LEARNER), ("tit_for_tat", {})]),
    ("calvano", [("grim_trigger", {}), ("undercut", {})]),
    ("calvano", [("cartel", {}), ("tit_for_tat", {})]),
    ("calvano", [("best_response", {}), ("random", {})]),
    ("price_war", [("best_response", {}), ("cost_plus", {})]),
    ("price_war", [("fixed_price", {}), ("reorder_point", {})]),
    ("price_war", [("undercut", {}), ("random", {})]),
    ("multi_product", [("tit_for_tat", {}), ("grim_trigger", {})]),
]


def in_currency(name: str, scale: float) -> Scenario:
    return Scenario.model_validate({**load_scenario(name).model_dump(), "scale": scale})


def play(scenario: Scenario, seats: list[tuple[str, dict]]) -> FinishedMatch:
    entries = {
        f"m{i}": ContestantEntry(name=f"m{i}", kind=kind, params=params)
        for i, (kind, params) in enumerate(seats)
    }
    spec = MatchSpec(key="scaled", index=0, scenario=scenario.name, seed=3, days=12, seats=tuple(entries))
    played = play_here([Match(spec, scenario, MatchRules(seed=4), plan_contestants(entries.values()))])[0]
    assert played.faults == []
    return played


def test_scale_multiplies_every_amount_of_money_as_the_file_is_read(tmp_path):
    base = load_scenario("multi_product")
    scaled = in_currency("multi_product", SCALE)
    for product, original in zip(scaled.products, base.products):
        assert (
            product.unit_cost == original.unit_cost * SCALE
            and product.reference_price == original.reference_price * SCALE
        )
        assert (
            product.holding_cost == original.holding_cost * SCALE
            and product.base_demand == original.base_demand
        )  # units stay units
    assert (
        scaled.finance.initial_cash == base.finance.initial_cash * SCALE
        and scaled.finance.fixed_daily_cost == base.finance.fixed_daily_cost * SCALE
    )
    assert scaled.reputation.advertising_scale == base.reputation.advertising_scale * SCALE
    assert (
        Scenario.model_validate(scaled.model_dump()) == scaled
    )  # read once: it holds the amounts it plays with
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nscale: 10\nproducts: [{id: x, unit_cost: 1, reference_price: 2, base_demand: 5}]\n"
    )
    minimal = load_scenario(path)  # sections left out hold money too: their defaults are scaled
    assert (minimal.finance.initial_cash, minimal.reputation.advertising_scale) == (
        Scenario.model_fields["finance"].default.initial_cash * SCALE,
        1000.0,
    )
    path.write_text(
        "name: s\nscale: 0\nproducts: [{id: x, unit_cost: 1, reference_price: 2, base_demand: 5}]\n"
    )
    with pytest.raises(ConfigError, match="scale must be a number above 0 and at most 1e[+]06, not 0"):
        load_scenario(path)


@pytest.mark.parametrize(("scenario", "seats"), PAIRS, ids=[f"{s}-{a[0]}-{b[0]}" for s, (a, b) in PAIRS])
def test_every_rule_and_learner_prices_times_the_scale_and_gains_the_same(scenario, seats):
    plain, scaled = (play(in_currency(scenario, scale), seats) for scale in (1.0, SCALE))
    for one, other in zip(plain.days_played, scaled.days_played):
        assert (other.merchant, other.day) == (one.merchant, one.day)
        assert [other.prices[p] for p in other.prices] == pytest.approx(
            [SCALE * one.prices[p] for p in one.prices], rel=1e-9
        )
        assert other.units_sold == pytest.approx(one.units_sold, rel=1e-9, abs=1e-9)
        assert other.net_worth == pytest.approx(SCALE * one.net_worth, rel=1e-9)
    for merchant, values in plain.metrics.items():
        for name in ("profit_gain", "price_gain"):
            assert scaled.metrics[merchant][name] == _same(values[name]), (merchant, name)
    assert scaled.market.metrics == {name: _same(value) for name, value in plain.market.metrics.items()}
    assert scaled.notes == plain.notes  # a gain that does not apply (price_war's two seats) in any currency


def _same(value: float | None) -> object:
    """What a scaled match's value must be: the plain one's, or None (n/a) as it is."""
    return None if value is None else pytest.approx(value, rel=1e-6, abs=1e-9)
