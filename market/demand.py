"""Customers: how many arrive, and whom they buy from.

Choice is a multinomial logit over the merchants that sell the product plus a no-purchase
option. A customer whose chosen merchant has run out chooses again among those still in
stock (or leaves); by the logit's independence of irrelevant alternatives that is the same
as choosing with the sold-out merchant removed. The allocation therefore proceeds in rounds:
all customers choose, merchants with more takers than stock sell out, the overflow chooses
again among the rest. Each round removes at least one merchant, so it ends.

Every function is vectorised over merchants; arrays are indexed [merchant]
(`allocate_markets`: [market, merchant], several separate markets at once).
"""

from __future__ import annotations

from typing import overload

import numpy as np

from market import elementary
from market.scenario import Choice, Demand


@overload
def demand_factor(demand: Demand, day: int) -> float: ...
@overload
def demand_factor(demand: Demand, day: np.ndarray) -> np.ndarray: ...
def demand_factor(demand: Demand, day: int | np.ndarray) -> float | np.ndarray:
    """Weekday times season: weekday_factors[(day-1) % 7] * (1 + A sin(2 pi (day-1) / period)),
    of one day or of an array of days (sin correctly rounded: market.elementary)."""
    weekday = np.asarray(demand.weekday_factors)[(day - 1) % 7]
    season = 1.0 + demand.seasonal_amplitude * elementary.sin(
        2.0 * np.pi * (day - 1) / demand.seasonal_period
    )
    return weekday * season


def utilities(
    choice: Choice,
    prices: np.ndarray,
    reference_price: float | np.ndarray,
    reputation: np.ndarray,
    quality: float | np.ndarray,
) -> np.ndarray:
    """u = -price_sensitivity * price / reference_price + reputation_weight * reputation
         + quality_weight * quality.

    Broadcasts: prices [merchant, product] with reference_price and quality per product and
    reputation [merchant, 1] gives every product's utilities in one pass."""
    return (
        -choice.price_sensitivity * prices / reference_price
        + choice.reputation_weight * reputation
        + choice.quality_weight * quality
    )


def logit_shares(utility: np.ndarray, outside: float) -> np.ndarray:
    """Choice probabilities [..., merchants then no purchase] of utilities [..., merchant]:
    exp(u_i) / (exp(u_0) + sum_j exp(u_j)), u_0 = `outside`; a merchant at -inf gets none."""
    options = np.concatenate([utility, np.full((*utility.shape[:-1], 1), outside)], axis=-1)
    return _softmax(options.reshape(-1, options.shape[-1])).reshape(options.shape)


def choice_shares(
    choice: Choice,
    prices: np.ndarray,
    reference_price: float | np.ndarray,
    reputation: np.ndarray,
    quality: float | np.ndarray,
    selling: np.ndarray | None = None,
) -> np.ndarray:
    """Each merchant's share of all customers of one product, the no-purchase option last:
    `logit_shares` of `utilities`, with the scenario's no_purchase_utility. Prices are
    [..., merchant] (several price profiles at once: a grid of one merchant's prices against
    fixed rivals), reputation and quality [merchant] (or one for all); a merchant that is not
    `selling` (bankrupt, absent) is no option and wins no share. These are the shares
    customers choose by in `allocate_markets` before anyone sells out: all of the day's
    choosing when sales are not capped by stock."""
    utility = utilities(choice, prices, reference_price, reputation, quality)
    if selling is not None:
        utility = np.where(selling, utility, -np.inf)
    return logit_shares(utility, choice.no_purchase_utility)


def _softmax(options: np.ndarray) -> np.ndarray:
    """Per row, exp(u_k) / sum_l exp(u_l) over every option, computed after subtracting the
    row's largest u, with exp correctly rounded (market.elementary), so that the shares, and
    the draws made with them, are the same on every machine.

    numpy reduces a short row slowly, so with fewer than 8 options the rows are reduced as
    columns (options first in memory). Row by row, numpy adds fewer than 8 terms in order,
    as the columns are added, so both give the same bits; with more it sums pairwise."""
    # ufunc reductions: no Python wrapper, this runs daily
    if options.shape[1] >= 8:
        weights = elementary.exp(options - np.maximum.reduce(options, 1, keepdims=True))
        return weights / np.add.reduce(weights, 1, keepdims=True)
    columns = np.ascontiguousarray(options.T)
    weights = elementary.exp(columns - np.maximum.reduce(columns, 0))
    return (weights / np.add.reduce(weights, 0)).T


def allocate_markets(
    customers: np.ndarray,
    utility: np.ndarray,
    outside: float,
    stock: np.ndarray | None,
    rngs: list[np.random.Generator] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split each market's customers of one product between its merchants: one row per market
    (customers [market], utility and stock [market, merchant], -inf utility: not selling;
    a generator per market, whose draws are the market's own). Returns, per row, wanted
    (customers who chose each merchant, in any round), sold (<= stock; wanted - sold is what
    stock-outs cost) and no_purchase, with customers == sold.sum() + no_purchase. With
    generators customers are whole and choices are sampled; without, flows are expected
    values. `stock` None: sales are not capped."""
    markets, n = utility.shape
    wanted = np.zeros((markets, n))
    sold = np.zeros((markets, n))
    no_purchase = np.zeros(markets)
    # every option's utility, no purchase last; a merchant out of the running has -inf
    options = np.empty((markets, n + 1))
    options[:, :n] = np.where(np.isfinite(utility), utility, -np.inf)
    options[:, n] = outside
    left = None if stock is None else stock.astype(float)
    choosing = customers.astype(float)
    tolerance = 1e-9 * np.maximum(customers, 1.0)
    active = choosing > 0
    while active.any():
        shares = _softmax(options)
        if rngs is None:
            picks = choosing[:, None] * shares
        else:
            picks = np.zeros((markets, n + 1))
            for b in np.flatnonzero(active).tolist():
                picks[b] = rngs[b].multinomial(int(choosing[b]), shares[b])
        no_purchase += picks[:, n]
        picks = picks[:, :n]
        wanted += picks
        if left is None:
            sold += picks
            break
        served = np.minimum(picks, left)
        sold += served
        left -= served
        choosing = np.add.reduce(picks - served, 1)
        settled = choosing <= tolerance  # what little is left of the flow buys nothing
        no_purchase += np.where(settled & active, choosing, 0.0)
        active &= ~settled
        choosing = np.where(active, choosing, 0.0)
        options[:, :n][left <= 1e-12] = -np.inf
    if stock is not None:
        sold = np.minimum(sold, stock)  # summing a sold-out merchant's rounds can overshoot by an ulp
    return wanted, sold, no_purchase


def allocate_segments(
    customers: np.ndarray,
    utility: np.ndarray,
    outside: float,
    stock: np.ndarray | None,
    rngs: list[np.random.Generator] | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`allocate_markets` for customers of several segments, each choosing by its own
    utilities, every product of a market at once: customers [market, product, segment] (the
    expected number), utility [market, product, segment, merchant], stock [market, product,
    merchant] shared by the segments. Returns wanted and sold [market, product, segment,
    merchant] and no_purchase [market, product, segment].

    With generators, customers arrive by a Poisson draw and choose by a multinomial one;
    the two are drawn as one, since a Poisson number of customers split at random is a
    Poisson number for each option (one draw of the market's generator for all its
    products, segments and options). A merchant with more takers than stock serves a random
    set of them (without generators: each segment in proportion to its takers), and the
    rest choose again within their segment among the merchants still in stock. With one
    segment it allocates as `allocate_markets` does, in distribution."""
    *cells, n = utility.shape
    wanted = np.zeros(utility.shape)
    sold = np.zeros(utility.shape)
    no_purchase = np.zeros(cells)
    options = np.empty((*cells, n + 1))
    options[..., :n] = np.where(np.isfinite(utility), utility, -np.inf)
    options[..., n] = outside
    left = None if stock is None else stock.astype(float)
    choosing = customers.astype(float)
    tolerance = 1e-9 * np.maximum(customers, 1.0)
    active = choosing > 0
    arriving = True
    while active.any():
        shares = _softmax(options.reshape(-1, n + 1)).reshape(options.shape)
        if rngs is None:
            picks = choosing[..., None] * shares
        else:
            picks = np.zeros(options.shape)
            if arriving:  # one draw per market
                for b in np.flatnonzero(np.logical_or.reduce(active.reshape(len(active), -1), 1)).tolist():
                    picks[b] = rngs[b].poisson(choosing[b][..., None] * shares[b])
            else:  # one per product and segment still choosing, usually few
                for cell in zip(*np.nonzero(active)):
                    picks[cell] = rngs[cell[0]].multinomial(int(choosing[cell]), shares[cell])
        arriving = False
        no_purchase += picks[..., n]
        picks = picks[..., :n]
        wanted += picks
        if left is None:
            sold += picks
            break
        served = _ration(picks, left, rngs)
        sold += served
        # summing the segments' shares can overshoot by an ulp
        left = np.maximum(left - served.sum(axis=2), 0.0)
        choosing = (picks - served).sum(axis=3)
        settled = choosing <= tolerance
        no_purchase += np.where(settled & active, choosing, 0.0)
        active &= ~settled
        choosing = np.where(active, choosing, 0.0)
        options[..., :n][np.broadcast_to((left <= 1e-12)[:, :, None, :], utility.shape)] = -np.inf
    if stock is not None:
        sold = np.minimum(sold, stock[:, :, None, :])
    return wanted, sold, no_purchase


def _ration(picks: np.ndarray, left: np.ndarray, rngs: list[np.random.Generator] | None) -> np.ndarray:
    """Of the takers picks [market, product, segment, merchant], those served from the stock
    `left` [market, product, merchant]: all where the stock suffices; where it does not, a
    random set of as many as it holds (a multivariate hypergeometric draw over the
    segments, `_draw_without_replacement`), or each segment's share of it without
    generators."""
    takers = picks.sum(axis=2)
    short = takers > left
    if not short.any():
        return picks.copy()
    if rngs is None:
        scale = np.divide(left, takers, out=np.ones_like(left), where=short)
        return picks * scale[:, :, None, :]
    served = picks.copy()
    b, j, i = np.nonzero(short)
    served[b, j, :, i] = [
        _draw_without_replacement(rngs[market], counts, draws)
        for market, counts, draws in zip(
            b.tolist(), picks[b, j, :, i].astype(np.int64).tolist(), left[b, j, i].astype(np.int64).tolist()
        )
    ]
    return served


def _draw_without_replacement(rng: np.random.Generator, counts: list[int], draws: int) -> list[int]:
    """How many of each kind, of `counts` items per kind, `draws` picks taken without
    replacement contain: a multivariate hypergeometric draw, made kind by kind (the first
    kind's number is hypergeometric against all the others, and so on with what is left).
    Scalar draws: numpy's checks of array arguments cost several times a draw."""
    drawn = []
    later = sum(counts)
    for count in counts[:-1]:
        later -= count
        taken = rng.hypergeometric(count, later, draws) if draws else 0
        drawn.append(taken)
        draws -= taken
    return [*drawn, draws]
