"""The day's trade and what it moves: customers buy (market.clearing); sales are paid in cash
or on credit, the goods sold leave stock (perishable ones oldest first) and the day's costs
leave cash; reputation and the satisfaction index move. The flows are named as DayRecord
names them."""

from __future__ import annotations

import numpy as np

from market import accounting, elementary
from market.clearing import clear_market
from market.state import MarketState
from market.stock import spoil

_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper


def trade(
    market: MarketState, day: int, unit_cost: np.ndarray, paid: np.ndarray, advertising: np.ndarray
) -> dict[str, np.ndarray]:
    """Customers buy; the day's sales are paid (in cash or on credit) and its costs taken
    from cash; reputation moves. The day's flows, by DayRecord's names (`paid`: what the
    day's orders cost)."""
    finance = market.scenario.finance
    offered = market.offered(day)
    wanted, sold, returned, restocked = clear_market(market, day, offered)
    revenue = _sum(sold * offered, 1)
    refunds, kept = market.none_by_row, revenue
    if market.scenario.segments:  # customers who return goods get their money back
        refunds = _sum(returned * offered, 1)
        kept = accounting.kept_revenue(revenue, refunds)
    on_credit = kept * finance.credit_share
    revenue_cash = revenue - on_credit
    bad_debt = on_credit * finance.bad_debt_share  # never to be paid: written off at once
    if finance.credit_days == 0:
        market.due += on_credit - bad_debt
    else:
        market.credit[:, finance.credit_days - 1] += on_credit - bad_debt
    if market.scenario.demand.stock_limited:
        market.inventory -= sold
        made_to_order = np.zeros(len(market.playing))
    else:
        made_to_order = _sum(sold * unit_cost, 1)
    if market.scenario.segments:
        market.inventory += restocked
        market.receive(restocked)
    spoiled = spoil(market, sold) if market.perishable.size else market.none_by_product
    holding = np.where(market.closed, 0.0, _sum(market.inventory * market.holding, 1))
    fixed = np.where(market.closed, 0.0, finance.fixed_daily_cost)
    market.cash += revenue_cash - made_to_order - holding - fixed
    if market.scenario.segments:
        market.cash -= refunds
    market.units_sold += sold
    _update_reputation(market, wanted, sold, advertising)
    return {
        "revenue": revenue,
        "revenue_cash": revenue_cash,
        "bad_debt": bad_debt,
        "purchases": paid + made_to_order,
        "holding": holding,
        "fixed": fixed,
        "first_choice": wanted,
        "units_sold": sold,
        "lost_sales": wanted - sold,
        "spoiled": spoiled,
        "returned": returned,
        "restocked": restocked,
        "refunds": refunds,
        "discount": market.none_by_product
        if market.promotions is None
        else np.where(market.discount_until >= day, market.discount, 0.0),
    }


def _update_reputation(
    market: MarketState, wanted: np.ndarray, sold: np.ndarray, advertising: np.ndarray
) -> None:
    """The reputation of the rows still selling moves toward the day's fill rate (the share
    of first choices served), plus what advertising adds (market.scenario.Reputation)."""
    r = market.scenario.reputation
    demand, served = _sum(wanted, 1), _sum(sold, 1)
    fill_rate = np.divide(served, demand, out=np.ones(len(served)), where=demand > 0)
    updated = (1 - r.memory) * fill_rate + r.memory * market.reputation
    if advertising.any():  # no spend adds a boost of exactly zero, so it is skipped
        updated += r.advertising_gain * (1.0 - elementary.exp(-advertising / r.advertising_scale))
    updated = np.minimum(np.maximum(updated, r.minimum), r.maximum)  # np.clip, without its Python wrapper
    market.reputation = np.where(market.closed, market.reputation, updated)


def update_satisfaction(
    market: MarketState, flows: dict[str, np.ndarray], late: np.ndarray, came: np.ndarray
) -> None:
    """The day's move of the satisfaction index (market.scenario.Satisfaction) of the rows
    still selling, from its stock-outs, returns and late deliveries (`came`: the units
    that arrived on time)."""
    kept = market.scenario.satisfaction
    if kept is None:
        return

    def share(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
        part, whole = _sum(part, 1), _sum(whole, 1)
        return np.divide(part, whole, out=np.zeros(len(part)), where=whole > 0)

    target = (
        5.0
        - kept.stockout_weight * share(flows["lost_sales"], flows["first_choice"])
        - kept.return_weight * share(flows["returned"], flows["units_sold"])
        - kept.late_weight * share(late, late + came)
    )
    moved = kept.memory * market.satisfaction + (1 - kept.memory) * np.minimum(np.maximum(target, 1.0), 5.0)
    market.satisfaction = np.where(market.closed, market.satisfaction, moved)
