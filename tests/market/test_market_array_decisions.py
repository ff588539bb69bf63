"""ArrayDecisions (rows of numbers, what rule merchants answer) must be applied exactly as the
same decisions given as operations, rejections with their codes and reasons included: the
two are compiled into the same operation columns and applied by the same step."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from market.engine import Market
from market.types import ArrayDecisions


def random_arrays(rng: np.random.Generator, market: Market) -> ArrayDecisions:
    """Valid and invalid numbers alike: NaN (keep), negative, huge and fractional."""
    m, p = len(market.playing), len(market.scenario.products)
    reference = np.array([pr.reference_price for pr in market.scenario.products])
    prices = reference * rng.choice([math.nan, -1.0, 0.5, 1.0, 1.7, 250.0, math.inf], size=(m, p))
    affordable = market.cash[:, None] / np.array([pr.unit_cost for pr in market.scenario.products])
    orders = np.floor(affordable * rng.choice([0.0, 0.0, 0.1, 0.6, 0.6, 1.2, 5.0], size=(m, p))) + rng.choice(
        [0.0, 0.0, 0.5], size=(m, p)
    )
    orders[rng.random((m, p)) < 0.05] = math.inf
    return ArrayDecisions(rng.random(m) < 0.5, prices, orders)


@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(0, 2**16), scenario_index=st.integers(0, 3))
def test_array_decisions_apply_as_their_operations(market, seed, scenario_index):
    scenario = market.load(["price_war", "multi_product", "seasonal", "logit_game"][scenario_index])
    rosters = [["a", "b", "c", "d"], ["e", "f", "g", "h"]]
    arrays, typed = Market(scenario, rosters, days=12), Market(scenario, rosters, days=12)
    arrays.reset([seed, seed + 1])
    typed.reset([seed, seed + 1])
    rng = np.random.default_rng(seed)
    rejections = 0
    while typed.playing.any():
        decisions = random_arrays(rng, arrays)
        ids = scenario.product_ids
        typed.advance(decisions={row: decisions.operations(row, ids) for row in range(len(typed.playing))})
        arrays.advance(decisions)
        for by_arrays, by_operations in zip(arrays.logs, typed.logs):
            assert list(by_arrays.build()) == list(by_operations.build())
        rejections += sum(len(r.rejections) for log in typed.logs for r in log.day(typed.day - 1))
    assert rejections > 0
