"""What a merchant is worth and how it placed, defined once for the market, the match
scoring, the metrics and the report: net worth, starting net worth, profit, rank and market
share.

Goods are valued at what they cost on the day they are valued: the unit cost of that day,
cost events included. Profit is the change in that value over the match, so it counts what
the merchant's trade made and what price changes did to the goods it held.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from market.daylog import DayLog

_sum = np.add.reduce


def net_worth(cash: np.ndarray, goods: np.ndarray, unit_cost: np.ndarray, *receivables: np.ndarray) -> np.ndarray:
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
    net_worth_0 = net_worth_1 - (revenue_1 - sum_p sold_p,1 * unit_cost_p,1 - advertising_1 - holding_1 - fixed_1),
    since orders, arrivals, collections and credit sales only move value between cash, goods
    and receivables at that day's cost."""
    closing, revenue, advertising, holding, fixed = (log.scalar(name)[first] for name in ("net_worth", "revenue", "advertising", "holding", "fixed"))
    cost_of_sales = _sum(log.product_values("units_sold")[first] * log.product_values("unit_cost")[first], 1)
    return closing - (revenue - cost_of_sales - advertising - holding - fixed)


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
    keys = list(zip(np.asarray(survived, dtype=bool).tolist(), np.asarray(lasted, dtype=np.int64).tolist(), worth))
    place: dict[tuple, int] = {}
    for position, key in enumerate(sorted(keys, reverse=True), start=1):
        place.setdefault(key, position)
    return [place[key] for key in keys]


def market_shares(units_sold: Sequence[float]) -> list[float]:
    """Each merchant's share of the units every merchant sold: units_sold_i / sum_j units_sold_j,
    0 for all when nothing was sold (nobody won any of it)."""
    total = float(sum(units_sold))
    return [float(units) / total if total > 0 else 0.0 for units in units_sold]
