"""The operations metrics: how a merchant ran its shop (stock-outs, lost sales, spoilage, late
deliveries, returns, satisfaction, turnover, cash flow, when it went bankrupt or stopped
selling). One function each, its formula in its docstring (results.scoring.metrics)."""

from __future__ import annotations

import math

import numpy as np

from results.scoring.match_records import MatchRecords, Metric, registering

FAMILY: dict[str, Metric] = {}  # in the order defined
_metric = registering(FAMILY)


@_metric("operations", "count", over_match=True, flow=True)
def stockout_days(match: MatchRecords) -> np.ndarray:
    """Days on which the merchant turned customers away for lack of stock (lost sales > 0 in
    any product)."""
    return match.days_with("lost_sales")


@_metric("operations", "count", over_match=True, flow=True)
def lost_sales(match: MatchRecords) -> np.ndarray:
    """Units customers wanted from the merchant but could not buy for lack of stock:
    lost_sales = sum over days and products of lost_sales."""
    return match.total("lost_sales")


@_metric("operations", "count", over_match=True, flow=True)
def spoilage_days(match: MatchRecords) -> np.ndarray:
    """Days on which goods of the merchant spoiled (spoiled > 0 in any product)."""
    return match.days_with("spoiled")


@_metric("operations", "money", over_match=True, flow=True)
def spoiled_cost(match: MatchRecords) -> np.ndarray:
    """What spoiled goods cost: spoiled_cost = sum over days and products of spoiled * unit_cost."""
    return match.total("spoiled", per_unit="unit_cost")


@_metric("operations", "count", over_match=True, flow=True)
def late_delivery_days(match: MatchRecords) -> np.ndarray:
    """Days on which goods the merchant ordered were due and a supplier delivered them late
    (late > 0 in any product)."""
    return match.days_with("late")


@_metric("operations", "share", over_match=True)
def return_share(match: MatchRecords) -> list[float | None]:
    """Share of the units sold that customers brought back: sum of returned / sum of units
    sold; None when nothing was sold."""
    returned = match.total("returned")
    return [r / s if s > 0 else None for r, s in zip(returned.tolist(), match.units_sold.tolist())]


@_metric("operations", "ratio", over_match=True)
def satisfaction(match: MatchRecords) -> list[float | None]:
    """The customer-satisfaction index (1 to 5, market.scenario.Satisfaction) at the end of the
    merchant's last day; None where the scenario keeps none."""
    final = match.scalar("satisfaction")[match.last].tolist()
    return [value if value > 0 else None for value in final]


@_metric("operations", "ratio", over_match=True)
def inventory_turnover(match: MatchRecords) -> list[float | None]:
    """How many times the stock was sold through over the match: cost of goods sold over the
    mean value of stock in hand,
    inventory_turnover = sum_t sum_p sold_p,t * unit_cost_p,t / mean_t sum_p inventory_p,t * unit_cost_p,t,
    with inventory at the end of each day. None when no stock was ever held."""
    sold = match.total("units_sold", per_unit="unit_cost")
    held = match.total("inventory", per_unit="unit_cost") / match.counts
    return [s / h if h > 0 else None for s, h in zip(sold.tolist(), held.tolist())]


@_metric("operations", "money", over_match=True)
def cash_flow_volatility(match: MatchRecords) -> list[float | None]:
    """Standard deviation (population) of the daily net cash flow cash_end - cash_start over
    the merchant's days. None with fewer than two days."""
    flows = match.scalar("cash_end") - match.scalar("cash_start")
    mean = match.per_seat(flows) / match.counts
    variance = match.per_seat((flows - mean[match.row_seats]) ** 2) / match.counts
    return [math.sqrt(v) if n >= 2 else None for v, n in zip(variance.tolist(), match.counts.tolist())]


@_metric("operations", "day", over_match=True)
def bankrupt_day(match: MatchRecords) -> list[float | None]:
    """The day the merchant's cash fell below zero (its last day); None if it never did."""
    last = match.last
    return [
        float(day) if bankrupt else None
        for day, bankrupt in zip(match.log.day[last].tolist(), match.log.bankrupt[last].tolist())
    ]


@_metric("operations", "day", over_match=True)
def sales_stop_day(match: MatchRecords) -> list[float | None]:
    """The day from which the merchant sold nothing to the end of its match (the day after its
    last sale; 1 if it never sold); None if it sold on its last day. Long-horizon agents are
    seen to stop selling for good when they lose the thread of their business."""
    sold = (match.values("units_sold") > 0).any(axis=1)
    last_sale = np.zeros(len(match.counts))
    np.maximum.at(last_sale, match.row_seats[sold], match.log.day[sold])
    final = match.log.day[match.last]
    return [None if last == end else float(last + 1) for last, end in zip(last_sale.tolist(), final.tolist())]
