"""The economics and competition metrics: what a merchant earned and where it placed (profit,
revenue, return, net worth, goals, rank, share, prices against the market's and its costs).
One function each, its formula in its docstring (results.scoring.metrics)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from market import accounting
from results.scoring.match_records import MatchRecords, Metric, Seat, _sum, registering

FAMILY: dict[str, Metric] = {}  # in the order defined
_metric = registering(FAMILY)


@_metric("economics", "money", over_match=True, flow=True)
def profit(match: MatchRecords) -> np.ndarray:
    """Net worth at the end minus net worth before the first day, goods valued at each day's
    unit cost: profit = net_worth_last - net_worth_0, with net_worth_0 = initial cash +
    initial stock at day 1's unit cost (market.accounting.profit)."""
    return match.profits


@_metric("economics", "money", over_match=True, flow=True)
def revenue(match: MatchRecords) -> np.ndarray:
    """What the merchant's customers paid and kept: revenue = sum over days of revenue - refunds."""
    return match.per_seat(accounting.kept_revenue(match.scalar("revenue"), match.scalar("refunds")))


@_metric("economics", "share", over_match=True)
def inventory_cost_share(match: MatchRecords) -> list[float | None]:
    """What keeping stock cost, as a share of revenue: inventory_cost_share = (sum of holding
    + sum over products of (spoiled + returned - restocked) * unit_cost) / revenue, the goods
    spoiled and the returns written off at cost; None when revenue is not above 0."""
    cost = match.scalar("holding")
    if not {"spoiled", "returned", "restocked"} <= match.zero_fields:
        written_off = match.values("spoiled") + match.values("returned") - match.values("restocked")
        cost = cost + _sum(written_off * match.values("unit_cost"), 1)
    cost = match.per_seat(cost)
    earned = revenue(match)
    return [c / r if r > 0 else None for c, r in zip(cost.tolist(), earned.tolist())]


@_metric("economics", "share", over_match=True)
def goals_met(match: MatchRecords) -> list[float | None]:
    """Share of the scenario's campaign goals the merchant met (MatchRecords.goal_results);
    None without goals."""
    goals = match.scenario.goals if match.scenario is not None else ()
    if not goals:
        return [None] * len(match.seats)
    met = Counter(result.merchant for result in match.goal_results if result.met)
    return [met[merchant] / len(goals) for merchant in match.seats]


@_metric("economics", "share", over_match=True)
def roi(match: MatchRecords) -> list[float | None]:
    """Return on the starting capital: roi = profit / net_worth_0. None when the merchant
    started with nothing."""
    return [
        gain / start if start > 0 else None
        for gain, start in zip(match.profits.tolist(), match.start_net_worth.tolist())
    ]


@_metric("economics", "money", over_match=True)
def net_worth(match: MatchRecords) -> np.ndarray:
    """Net worth at the end of the merchant's last day: cash + stock in hand and in transit at
    unit cost + receivables."""
    return match.scalar("net_worth")[match.last]


@_metric("economics", "share", over_match=True)
def goal_completion(match: MatchRecords) -> list[float | None]:
    """How far the merchant got from where it started to the scenario's target_net_worth:
    goal_completion = (net_worth_last - net_worth_0) / (target - net_worth_0); 1 is the target
    reached, 0 no gain, negative a loss. None without a scenario, without a target, or with a
    target not above the start."""
    target = match.scenario.target_net_worth if match.scenario is not None else None
    return [
        None if target is None or target <= start else gain / (target - start)
        for gain, start in zip(match.profits.tolist(), match.start_net_worth.tolist())
    ]


@_metric("economics", "count")
def rank(seat: Seat) -> float:
    """Finishing place, 1 is best, ties share the better place ("1224"): survivors ordered by
    final net worth, then the bankrupt, the later bankrupt first."""
    return float(seat.match.ranks[seat.merchant])


@_metric("economics", "share", over_match=True)
def market_share(match: MatchRecords) -> list[float]:
    """Share of all units sold in the match: market_share = units sold by the merchant / units
    sold by every merchant and scripted competitor; 0 for all when nothing was sold
    (market.accounting.market_shares)."""
    scripted = match.log.competitors
    return accounting.market_shares(
        match.units_sold.tolist(), 0.0 if scripted is None else float(scripted.units_sold.sum())
    )


@_metric("economics", "ratio", over_match=True)
def price_vs_market(match: MatchRecords) -> np.ndarray:
    """Mean price relative to the market: the mean over the merchant's days and products of
    price / (mean price of that product over the merchants with a record that day, this one
    included). Below 1: cheaper than the market."""
    prices = match.values("prices")
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero price: not finite, stored as None
        return match.per_seat(_sum(prices / match.mean_prices, 1)) / (match.counts * prices.shape[1])


@_metric("economics", "ratio", over_match=True)
def price_vs_cost(match: MatchRecords) -> np.ndarray:
    """Mean markup: the mean over the merchant's days and products of price / unit cost that
    day. Below 1: selling below cost."""
    prices = match.values("prices")
    with np.errstate(
        divide="ignore", invalid="ignore", over="ignore"
    ):  # a zero cost: not finite, stored as None
        return match.per_seat(_sum(prices / match.values("unit_cost"), 1)) / (match.counts * prices.shape[1])
