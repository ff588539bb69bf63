"""The market's view of a morning (MarketView): every row's books and the public board, as
the rule merchants read it directly and everyone else's Observation is read from it, with
what the merchants are told of the scenario's events and its regulator's acts."""

from __future__ import annotations

import math

import numpy as np

from market.scenario import Scenario
from market.state import MarketState
from market.types import Board, EventNotice, MarketView

_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper


def market_view(market: MarketState) -> MarketView:
    """The market's morning (market.engine.Market.view): its own arrays, not copies, and the
    public board as the scenario's visibility shows it (NaN where it hides a number)."""
    s, day = market.scenario, min(market.day, market.days)
    vis = s.visibility
    hidden = np.full_like(market.prices, math.nan)
    paid = market.offered(day - 1)  # what their customers paid
    if market.entrants:  # an entrant, absent or opening today, posted no price yesterday
        paid = np.where(market.posted_by(day)[:, None], paid, math.nan)
    board = Board(
        market.seats,
        paid if vis.rival_prices else hidden,
        market.reputation if vis.rival_reputation else np.full_like(market.reputation, math.nan),
        market.units_sold if vis.rival_sales else hidden,
        market.closed,
        market.competitor_prices if vis.rival_prices else np.full_like(market.competitor_prices, math.nan),
    )
    return MarketView(
        day,
        market.days,
        s.finance.fixed_daily_cost,
        market.unit_cost_today(day),
        _notices(s, day),
        market.all_rows,
        market.cash,
        market.reputation,
        market.due
        + market.credit[
            :, 0
        ],  # credit[:, 0] falls due as the day starts (step 1), so it may be collected today
        _sum(market.credit[:, 1:], 1),
        market.prices,
        market.inventory,
        _sum(market.pipeline, 2),
        board,
        market.batches if market.perishable.size else None,
        None if market.promotions is None else (market.discount, market.discount_until),
        None if s.satisfaction is None else market.satisfaction,
    )


def _notices(scenario: Scenario, day: int) -> list[EventNotice]:
    """What the merchants are told on `day` of the scenario's events and of its
    regulator's price caps and forced prices (an act on some seats only is not told: every
    merchant sees one list)."""
    return [
        EventNotice(
            name=e.name,
            kind=e.kind,
            product=e.product,
            start_day=e.start_day,
            end_day=e.end_day,
            multiplier=e.multiplier,
            shape=e.shape,
        )
        for e in scenario.events
        # a trend keeps its level after end_day: merchants keep being told of it
        if e.announced
        and e.start_day - e.announce_days_ahead <= day
        and (day <= e.end_day or e.shape == "trend")
    ] + [
        EventNotice(
            name=act.name,
            kind=act.kind,
            product=act.product,
            start_day=act.start_day,
            end_day=act.last_day,
            multiplier=1.0,
            price=act.price,
        )
        for act in scenario.interventions
        if act.announced
        and act.kind != "memory_reset"
        and act.seats is None
        and act.start_day - act.announce_days_ahead <= day <= act.last_day
    ]
