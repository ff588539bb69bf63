"""The posted prices once a day's operations are applied: the regulator's acts on them
(market.scenario.Intervention), then a deviation probe's forced prices."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from market.state import MarketState


def regulate(market: MarketState, day: int) -> None:
    """The regulator's acts of the day on posted prices: a forced price in its seats, then
    every price above a cap lowered to it. Before a deviation probe's forced prices: a probe
    deviates in the market as regulated."""
    acts = market.scenario.interventions
    if not acts:
        return
    for act in acts:
        if act.kind == "forced_price" and act.running(day):
            assert act.price is not None  # a forced_price has one (Intervention)
            rows = np.flatnonzero([act.binds(seat) for seat in range(market.seats)] * len(market.rosters))
            columns = slice(None) if act.product is None else market.pid[act.product]
            market.prices[rows, columns] = np.minimum(act.price, market.ceiling[columns])
    limit = market.rules.price_limit(day)
    if limit is not market.ceiling:
        np.minimum(market.prices, limit, out=market.prices)


def force_prices(market: MarketState, forced: Mapping[int, Callable[[np.ndarray], np.ndarray]]) -> None:
    """The forced rows' prices of the day (see market.engine.Market.advance), from the prices
    as the regulator left them, within the day's limit (a price cap in force, else the
    ceiling)."""
    limit = market.rules.price_limit(market.day)
    for i, prices in forced.items():
        if market.playing[i]:
            span = market.match_rows[i // market.seats]
            posted = np.where(
                market.closed[span, None], math.inf, market.prices[span]
            )  # the closed sell nothing
            market.prices[i] = np.minimum(prices(posted), limit)
