"""Turn a played match into per-merchant results, by the definitions of market.accounting."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from market import accounting
from market.daylog import DayLog
from market.scenario import Scenario
from market.types import DayRecord
from results.records import Fault, MerchantResult


def score_match(scenario: Scenario, days: int, seats: Sequence[str], records: Iterable[DayRecord], faults: list[Fault]) -> list[MerchantResult]:
    """Results in seat order. A merchant is named after the contestant in its seat; one that
    did not go bankrupt lasted the match's `days`."""
    log = DayLog.of(records, scenario.product_ids)
    rows = [log.rows_of(merchant) for merchant in seats]
    first, last = np.array([r[0] for r in rows]), np.array([r[-1] for r in rows])
    seat = [log.merchants.index(merchant) for merchant in seats]
    sold = np.bincount(log.seat, weights=log.product_values("units_sold").sum(axis=1), minlength=len(log.merchants))[seat]
    rejected = np.bincount(log.seat, weights=[len(r) for r in log.rejections], minlength=len(log.merchants))[seat]
    bankrupt = log.bankrupt[last]
    lasted = np.where(bankrupt, log.day[last], days)
    cash, worth = log.scalar("cash_end")[last], log.scalar("net_worth")[last]
    ranks = accounting.ranks(~bankrupt, lasted, worth)
    profit = accounting.profit(log, first, last)
    shares = accounting.market_shares(sold.tolist())
    fault_count = Counter(fault.merchant for fault in faults)
    return [
        MerchantResult(
            merchant=merchant,
            contestant=merchant,
            final_cash=float(cash[k]),
            net_worth=float(worth[k]),
            profit=float(profit[k]),
            rank=ranks[k],
            market_share=float(shares[k]),
            bankrupt_day=int(lasted[k]) if bankrupt[k] else None,
            faults=fault_count[merchant],
            rejected_operations=int(rejected[k]),
        )
        for k, merchant in enumerate(seats)
    ]
