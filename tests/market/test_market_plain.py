"""PlainDecisions (rows of numbers, what rule merchants answer in plain play) must be applied
exactly as the same decisions given as operations, rejections and their reasons included."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from market.env import MarketEnv
from market.types import PlainDecisions


def random_plain(rng: np.random.Generator, env: MarketEnv) -> PlainDecisions:
    """Valid and invalid numbers alike: NaN (keep), negative, huge and fractional."""
    m, p = len(env.playing), len(env.scenario.products)
    reference = np.array([pr.reference_price for pr in env.scenario.products])
    prices = reference * rng.choice([math.nan, -1.0, 0.5, 1.0, 1.7, 250.0, math.inf], size=(m, p))
    affordable = env.cash[:, None] / np.array([pr.unit_cost for pr in env.scenario.products])
    orders = np.floor(affordable * rng.choice([0.0, 0.0, 0.1, 0.6, 0.6, 1.2, 5.0], size=(m, p))) + rng.choice([0.0, 0.0, 0.5], size=(m, p))
    orders[rng.random((m, p)) < 0.05] = math.inf
    return PlainDecisions(rng.random(m) < 0.5, prices, orders)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), scenario_index=st.integers(0, 3))
def test_plain_decisions_apply_as_their_operations(market, seed, scenario_index):
    scenario = market.load(["price_war", "multi_product", "seasonal", "logit_game"][scenario_index])
    plain, ops = MarketEnv(scenario, 4, days=12), MarketEnv(scenario, 4, days=12)
    plain.reset(seed=seed)
    ops.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rejections = 0
    while ops.agents:
        decisions = random_plain(rng, plain)
        ids = scenario.product_ids
        ops.step({a: decisions.operations(ops._index[a], ids) for a in ops.agents})
        plain.advance(decisions)
        assert list(plain.log.build()) == list(ops.log.build())
        rejections += sum(len(r.rejections) for r in ops.log.day(ops.day - 1))
    assert rejections > 0
