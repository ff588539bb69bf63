"""What a merchant is worth and how it placed, defined once for the market, the match
scoring, the metrics and the report: net worth, starting net worth, profit (of a match, and of
one day's trade), rank and market share.

Goods are valued at what they cost on the day they are valued: the unit cost of that day,
cost events included. Profit is the change in that value over the match, so it counts what
the merchant's trade made and what price changes did to the goods it held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from market.daylog import DayLog
from market.types import DayRecord

_sum = np.add.reduce
Number = float | np.ndarray
Amount = TypeVar("Amount", float, np.ndarray)  # money of one merchant-day, or of many


def net_worth(
    cash: np.ndarray, goods: np.ndarray, unit_cost: np.ndarray, *receivables: np.ndarray
) -> np.ndarray:
    """Per merchant, net_worth = cash + sum_p goods_p * unit_cost_p + receivables, with goods
    [merchant, product] the units in hand and in transit, unit_cost [merchant, product] the day's, and
    the receivables given in parts (due, not yet due) added in that order."""
    worth = cash + _sum(goods * unit_cost, 1)
    for part in receivables:
        worth = worth + part
    return worth


def starting_net_worth(log: DayLog, first: np.ndarray) -> np.ndarray:
    """Per merchant (`first`: the row of its first day), its net worth before day 1: initial
    cash + sum_p initial_stock_p * unit_cost_p on day 1 (nothing is in transit or owed yet).
    Given the row of a later day, the same identity gives its net worth before that day, at
    that day's unit cost.

    That is `net_worth` of the starting holdings at the cost the market values them at on
    day 1, so day 1's change in net worth is day 1's trade alone. It is read back from the
    first day's record, so a stored match needs no scenario:
    net_worth_0 = net_worth_1 - trade_profit_1."""
    closing, revenue, refunds, bad_debt, advertising, holding, fixed, savings = (
        log.scalar(name)[first]
        for name in (
            "net_worth",
            "revenue",
            "refunds",
            "bad_debt",
            "advertising",
            "holding",
            "fixed",
            "purchase_savings",
        )
    )
    units_sold, spoiled, restocked, unit_cost = (
        log.product_values(name)[first] for name in ("units_sold", "spoiled", "restocked", "unit_cost")
    )
    out = goods_out(units_sold, spoiled, restocked)
    return closing - trade_profit(
        kept_revenue(revenue, refunds), bad_debt, out, unit_cost, advertising, holding, fixed, savings
    )


def kept_revenue(revenue: Amount, refunds: Amount) -> Amount:
    """What customers paid and kept: revenue less the refunds of goods brought back (a sale
    returned is neither paid for nor owed)."""
    return revenue - refunds


def goods_out(units_sold: np.ndarray, spoiled: np.ndarray, restocked: np.ndarray) -> np.ndarray:
    """The units that left the stock for good in a day: sold + spoiled - restocked (returned
    goods back on the shelf)."""
    return units_sold + spoiled - restocked


def trade_profit(
    revenue: Number,
    bad_debt: Number,
    goods_out: np.ndarray,
    unit_cost: np.ndarray,
    advertising: Number,
    holding: Number,
    fixed: Number,
    purchase_savings: Number,
) -> Number:
    """What a day's trade made: revenue - bad_debt - sum_p goods_out_p * unit_cost_p -
    advertising - holding - fixed + purchase_savings, with revenue net of refunds, goods_out
    (the units that left the stock for good, `goods_out`) and unit_cost [..., product] (the
    day's; products on the last axis) and the rest of the shape before it (numbers for one
    merchant-day);
    purchase_savings is what orders from listed suppliers cost less than the goods are worth
    at the product's unit cost.

    It is the day's change in net worth with goods valued at the day's unit cost before and
    after: orders, arrivals, collections and credit sales only move value between cash, goods
    and receivables at that cost. (Over days whose unit costs differ, net worth also changes
    by what the new cost does to the goods held, which is not trade.)"""
    return (
        revenue
        - bad_debt
        - _sum(goods_out * unit_cost, -1)
        - advertising
        - holding
        - fixed
        + purchase_savings
    )


def day_trade_profit(record: DayRecord) -> float:
    """`trade_profit` of one merchant-day's record."""
    products = list(record.units_sold)
    units_sold, spoiled, restocked, unit_cost = (
        np.array([table[p] for p in products], dtype=float)
        for table in (record.units_sold, record.spoiled, record.restocked, record.unit_cost)
    )
    return float(
        trade_profit(
            kept_revenue(record.revenue, record.refunds),
            record.bad_debt,
            goods_out(units_sold, spoiled, restocked),
            unit_cost,
            record.advertising,
            record.holding,
            record.fixed,
            record.purchase_savings,
        )
    )


def profit(log: DayLog, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Per merchant (`first`, `last`: the rows of the first and last day of its match, or of a
    span of it such as a measurement window), profit = net worth at the end of the last day -
    starting_net_worth (before the first)."""
    return log.scalar("net_worth")[last] - starting_net_worth(log, first)


def ranks(survived: Sequence[bool], lasted: Sequence[int], final_net_worth: Sequence[float]) -> list[int]:
    """Competition ranks ("1224"), 1 best: survivors before the bankrupt, then the merchant
    that lasted longer (a bankrupt merchant's last day is the day it went bankrupt), then the
    higher net worth at the end of its last day. Net worths equal to 6 decimals tie, so that
    rounding in the books decides no place."""
    worth = [round(w, 6) for w in np.asarray(final_net_worth, dtype=float).tolist()]
    keys = list(
        zip(np.asarray(survived, dtype=bool).tolist(), np.asarray(lasted, dtype=np.int64).tolist(), worth)
    )
    place: dict[tuple, int] = {}
    for position, key in enumerate(sorted(keys, reverse=True), start=1):
        place.setdefault(key, position)
    return [place[key] for key in keys]


def market_shares(units_sold: Sequence[float], competitors_sold: float = 0.0) -> list[float]:
    """Each merchant's share of the units sold in its market: units_sold_i / (sum_j units_sold_j
    + the units the scripted competitors sold), 0 for all when nothing was sold (nobody won
    any of it)."""
    total = float(sum(units_sold)) + competitors_sold
    return [float(units) / total if total > 0 else 0.0 for units in units_sold]
