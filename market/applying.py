"""A day's operations applied to the market's books, each as if one by one in its row's
order: prices and promotions posted, the k-th spending operation (collect, order,
advertise) of every row checked against the cash the earlier ones left (the rules'
judgement, market.operations), and each refused one given a code and a reason."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import numpy as np

from market.daylog import Operations
from market.operations import ADVERTISE, ORDER, PROMOTE, SET_PRICE, Submitted
from market.state import MarketState
from market.stock import place_orders
from market.types import Rejection


class Applied(NamedTuple):
    """What applying a day's operations did (`apply_operations`): the operations applied,
    and per row the units ordered and those of them in stock at once (orders without lead
    time that came on time), by product, the units due today that a supplier delivers late,
    what the orders from listed suppliers saved against the products' unit costs, the
    advertising spent and the receivables collected."""

    operations: Operations
    ordered: np.ndarray
    stocked: np.ndarray
    late: np.ndarray
    savings: np.ndarray
    advertising: np.ndarray
    collected: np.ndarray


def apply_operations(
    market: MarketState, ops: Submitted, unit_cost: np.ndarray, rejected: defaultdict[int, list[Rejection]]
) -> Applied:
    """Apply the day's operations, each as if one by one in its row's order; record each
    refused one in `rejected` (after those already there, in the order given)."""
    m, p = market.prices.shape
    row, kind, product, value, supplier = ops.row, ops.kind, ops.product, ops.value, ops.supplier
    judged = market.rules.judge(ops, market.day, unit_cost, market.cash, market.due)
    valid, accepted, cost = judged.valid, judged.accepted, judged.cost
    priced = np.flatnonzero((kind == SET_PRICE) & valid)
    if priced.size:  # a later price for the same product wins
        cells = row[priced] * p + product[priced]
        if not (cells[1:] > cells[:-1]).all():
            priced = priced[len(priced) - 1 - np.unique(cells[::-1], return_index=True)[1]]
        market.prices[row[priced], product[priced]] = value[priced]
    if market.promotions is not None:  # a later promotion replaces an earlier one
        for x in np.flatnonzero((kind == PROMOTE) & valid).tolist():
            market.discount[row[x], product[x]] = value[x]
            market.discount_until[row[x], product[x]] = market.day + int(ops.days[x]) - 1
    ordering, advertising = kind == ORDER, kind == ADVERTISE
    buying = np.flatnonzero(ordering & accepted)
    r, j, units, source = row[buying], product[buying], value[buying], supplier[buying]
    ordered = np.bincount(r * p + j, weights=units, minlength=m * p).reshape(m, p)
    savings = market.none_by_row
    lead: np.ndarray = market.supply.lead[j]
    if market.supply.names:
        savings = np.zeros(m)
        np.add.at(savings, r, units * (unit_cost[r, j] - cost[buying]))
        lead = market.supply.lead_time[j, source].astype(np.int64)
    stocked, late_today = place_orders(market, r, j, units, lead, source)
    adverts = np.flatnonzero(advertising & accepted)
    spent = np.bincount(row[adverts], weights=value[adverts], minlength=m) if adverts.size else np.zeros(m)
    for x in np.flatnonzero(~accepted).tolist():
        rejected[int(row[x])].append(market.rules.rejection(ops, judged, x))
    keep = np.flatnonzero(accepted)
    applied = Operations(row[keep], kind[keep], product[keep], value[keep], supplier[keep], ops.days[keep])
    return Applied(applied, ordered, stocked, late_today, savings, spent, judged.collected)
