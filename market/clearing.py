"""Customers' choice and sales of a market's day: each match's customers choose among its own
merchants at the prices they offer and the scripted competitors (market.demand), drawn from
the match's own generator, sales capped by stock; with customer segments, each segment by
its own utilities, returning part of what it bought."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from market.demand import allocate_markets, allocate_segments, demand_factor, utilities
from market.scenario import event_multiplier
from market.state import MarketState


class Cleared(NamedTuple):
    """What the day's customers did (`clear_market`), per row and product: the units they
    wanted (first choices) and bought, and of those bought, the units returned and the part
    of them back in stock."""

    wanted: np.ndarray
    sold: np.ndarray
    returned: np.ndarray
    restocked: np.ndarray


def clear_market(market: MarketState, day: int, offered: np.ndarray) -> Cleared:
    """Each match's customers, product by product, among its own merchants at the prices
    they `offered` and the scripted competitors (their sales go to `competitor_sold`)."""
    s = market.scenario
    m, p = market.prices.shape
    wanted, sold = np.zeros((m, p)), np.zeros((m, p))
    factor = demand_factor(s.demand, day)
    stochastic = s.demand.mode == "stochastic"
    if s.segments:
        return _clear_segments(market, day, offered, factor, stochastic)
    utility = utilities(s.choice, offered, market.reference, market.reputation[:, None], market.quality)
    if market.promotions is not None or s.satisfaction is not None:
        utility = (
            utility + _promotion_bonus(market, day, s.choice.promotion_response) + _satisfaction_bonus(market)
        )
    utility = np.where(market.closed[:, None], -np.inf, utility)
    running = np.logical_or.reduce(market.playing.reshape(-1, market.seats), 1)  # matches not over
    rngs = [rng for rng, on in zip(market.rngs, running.tolist()) if on]
    if len(rngs) == len(running):
        running = slice(None)  # every match: views rather than copies
    by_match = (-1, market.seats, p)
    rivals = len(market.competitors)
    if rivals:
        rival_utility = market.competitors.utilities(market.competitor_prices)[running]
        market.competitor_sold = np.zeros_like(market.competitor_prices)
    for j, product in enumerate(s.products):
        mean = product.base_demand * factor * event_multiplier(s.events, "demand", product.id, day)
        customers = (
            np.array([float(rng.poisson(mean)) for rng in rngs]) if stochastic else np.full(len(rngs), mean)
        )
        stock = market.inventory.reshape(by_match)[running, :, j] if s.demand.stock_limited else None
        options = utility.reshape(by_match)[running, :, j]
        if rivals:  # never sold out
            options = np.concatenate([options, rival_utility[:, :, j]], axis=1)
            if stock is not None:
                stock = np.concatenate([stock, np.full((len(stock), rivals), math.inf)], axis=1)
        chose, bought, _ = allocate_markets(
            customers, options, s.choice.no_purchase_utility, stock, rngs if stochastic else None
        )
        if rivals:
            market.competitor_sold[running, :, j] = bought[:, market.seats :]
            chose, bought = chose[:, : market.seats], bought[:, : market.seats]
        wanted.reshape(by_match)[running, :, j], sold.reshape(by_match)[running, :, j] = chose, bought
    return Cleared(wanted, sold, market.none_by_product, market.none_by_product)


def _clear_segments(
    market: MarketState, day: int, offered: np.ndarray, factor: float, stochastic: bool
) -> Cleared:
    """`clear_market` with customer segments: each segment's share of the day's customers
    chooses by its own utilities, all share the merchants' stock
    (market.demand.allocate_segments), and each segment returns its return_rate of what it
    bought, of which the product's returns_resellable share goes back to stock (where
    units are whole, one multinomial draw per match sorts every unit sold into kept,
    returned to stock and returned to be written off)."""
    s = market.scenario
    m, p = market.prices.shape
    seats, segments = market.seats, s.segments
    wanted, sold, returned, restocked = (np.zeros((m, p)) for _ in range(4))
    running = np.flatnonzero(np.logical_or.reduce(market.playing.reshape(-1, seats), 1))
    if not running.size:
        return Cleared(wanted, sold, returned, restocked)
    rngs = [market.rngs[b] for b in running.tolist()]
    shares = np.array([g.share for g in segments])
    rates = np.array([g.return_rate for g in segments])
    choices = market.segment_choices
    # [row, segment, product] and [match, segment, competitor, product]
    utility = np.stack(
        [
            utilities(c, offered, market.reference, market.reputation[:, None], market.quality)
            + _promotion_bonus(market, day, c.promotion_response)
            + _satisfaction_bonus(market)
            for c in choices
        ],
        axis=1,
    )
    utility = np.where(market.closed[:, None, None], -np.inf, utility)
    rivals = len(market.competitors)
    if rivals:
        scripted = np.stack(
            [market.competitors.utilities(market.competitor_prices, c) for c in choices], axis=1
        )
        market.competitor_sold = np.zeros_like(market.competitor_prices)
    rows = (running[:, None] * seats + np.arange(seats)).ravel()
    mean = np.array(
        [
            product.base_demand * factor * event_multiplier(s.events, "demand", product.id, day)
            for product in s.products
        ]
    )
    customers = np.broadcast_to(mean[:, None] * shares, (len(rngs), p, len(segments)))
    # [match, product, segment, seat or competitor]
    options = utility[rows].reshape(len(rngs), seats, len(segments), p).transpose(0, 3, 2, 1)
    stock = None
    if s.demand.stock_limited:
        stock = market.inventory[rows].reshape(len(rngs), seats, p).transpose(0, 2, 1)
    if rivals:  # never sold out
        options = np.concatenate([options, scripted[running].transpose(0, 3, 1, 2)], axis=3)
        if stock is not None:
            stock = np.concatenate([stock, np.full((len(rngs), p, rivals), math.inf)], axis=2)
    chose, bought, _ = allocate_segments(
        customers, options, s.choice.no_purchase_utility, stock, rngs if stochastic else None
    )
    if rivals:
        market.competitor_sold[running] = bought[..., seats:].sum(axis=2).transpose(0, 2, 1)
        chose, bought = chose[..., :seats], bought[..., :seats]
    if rates.any():
        resellable = rates[:, None] * market.resellable_share  # [segment, product]
        if stochastic:  # per unit sold: [back to stock, written off, kept]
            kept = np.broadcast_to(1 - rates[:, None], resellable.shape)
            fates = np.stack([resellable, rates[:, None] - resellable, kept], -1)
            fates = fates.transpose(1, 0, 2)[:, :, None, :]  # [product, segment, 1, fate]
            drawn = np.array(
                [rng.multinomial(units.astype(np.int64), fates) for rng, units in zip(rngs, bought)]
            )
            back, fit = drawn[..., 0] + drawn[..., 1], drawn[..., 0]
        else:
            back, fit = bought * rates[:, None], bought * resellable.T[:, :, None]
        returned[rows] = back.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
        restocked[rows] = fit.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
    wanted[rows] = chose.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
    sold[rows] = bought.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
    return Cleared(wanted, sold, returned, restocked)


def _satisfaction_bonus(market: MarketState) -> np.ndarray | float:
    """What each row's satisfaction adds to its customers' utility [row, 1]."""
    kept = market.scenario.satisfaction
    if kept is None or kept.demand_weight == 0:
        return 0.0
    return kept.demand_weight * (market.satisfaction[:, None] - kept.initial)


def _promotion_bonus(market: MarketState, day: int, response: float) -> np.ndarray | float:
    """What running promotions add to customers' utility [row, product] for customers of
    that `response`."""
    if market.promotions is None or response == 0:
        return 0.0
    return response * (market.discount_until >= day)
