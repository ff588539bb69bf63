"""Turn a played match into per-merchant results: ranks, profit, market share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

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


def score_match(scenario: Scenario, days: int, seats: Sequence[str], records: list[DayRecord], faults: list[Fault]) -> list[MerchantResult]:
    """Results in seat order. A merchant is named after the contestant in its seat."""
    last: dict[str, DayRecord] = {}
    sold: dict[str, float] = defaultdict(float)
    rejected: dict[str, int] = defaultdict(int)
    for record in records:
        last[record.merchant] = record
        sold[record.merchant] += sum(record.units_sold.values())
        rejected[record.merchant] += len(record.rejections)
    fault_count: dict[str, int] = defaultdict(int)
    for fault in faults:
        fault_count[fault.merchant] += 1
    total_sold = sum(sold.values())
    start = starting_net_worth(scenario)
    bankrupt_day = {m: r.day for m, r in last.items() if r.bankrupt}
    final = {m: (m not in bankrupt_day, bankrupt_day.get(m, days), round(last[m].net_worth, 6)) for m in seats}
    ranks = rank_merchants(final)
    return [
        MerchantResult(
            merchant=merchant,
            contestant=merchant,
            final_cash=last[merchant].cash_end,
            net_worth=last[merchant].net_worth,
            profit=last[merchant].net_worth - start,
            rank=ranks[merchant],
            market_share=sold[merchant] / total_sold if total_sold > 0 else 0.0,
            bankrupt_day=bankrupt_day.get(merchant),
            faults=fault_count[merchant],
            rejected_operations=rejected[merchant],
        )
        for merchant in seats
    ]
