"""Turn a played match into per-merchant results: ranks, profit, market share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from market.daylog import DayLog
from market.scenario import Scenario
from market.types import DayRecord
from results.records import Fault, MerchantResult


def starting_net_worth(scenario: Scenario) -> float:
    """Initial cash plus initial stock at unit cost: what every merchant starts with."""
    stock = sum(p.initial_stock * p.unit_cost for p in scenario.products)
    return scenario.finance.initial_cash + stock


def rank_merchants(final: dict[str, tuple[bool, int, float]]) -> dict[str, int]:
    """Competition ranks ("1224"): survivors by net worth, then the bankrupt by how long
    they lasted. `final` maps merchant -> (survived, bankrupt_day or days, net worth)."""
    order = sorted(final, key=lambda m: final[m], reverse=True)
    ranks: dict[str, int] = {}
    for position, merchant in enumerate(order, start=1):
        previous = order[position - 2] if position > 1 else None
        tied = previous is not None and final[previous] == final[merchant]
        ranks[merchant] = ranks[previous] if tied else position
    return ranks


def score_match(scenario: Scenario, days: int, seats: Sequence[str], records: Iterable[DayRecord], faults: list[Fault]) -> list[MerchantResult]:
    """Results in seat order. A merchant is named after the contestant in its seat."""
    log = DayLog.of(records, scenario.product_ids)
    by_seat = np.bincount(log.seat, weights=log.product_values("units_sold").sum(axis=1), minlength=len(log.merchants))
    sold = dict(zip(log.merchants, by_seat.tolist()))
    rejected = dict(zip(log.merchants, np.bincount(log.seat, weights=[len(r) for r in log.rejections], minlength=len(log.merchants)).tolist()))
    last = {merchant: int(log.rows_of(merchant)[-1]) for merchant in seats}
    cash, worth, bankrupt, day = log.scalar("cash_end").tolist(), log.scalar("net_worth").tolist(), log.bankrupt.tolist(), log.day.tolist()
    fault_count = Counter(fault.merchant for fault in faults)
    total_sold = sum(sold.values())
    start = starting_net_worth(scenario)
    bankrupt_day = {m: day[r] for m, r in last.items() if bankrupt[r]}
    final = {m: (m not in bankrupt_day, bankrupt_day.get(m, days), round(worth[last[m]], 6)) for m in seats}
    ranks = rank_merchants(final)
    return [
        MerchantResult(
            merchant=merchant,
            contestant=merchant,
            final_cash=cash[last[merchant]],
            net_worth=worth[last[merchant]],
            profit=worth[last[merchant]] - start,
            rank=ranks[merchant],
            market_share=sold[merchant] / total_sold if total_sold > 0 else 0.0,
            bankrupt_day=bankrupt_day.get(merchant),
            faults=fault_count[merchant],
            rejected_operations=int(rejected[merchant]),
        )
        for merchant in seats
    ]
