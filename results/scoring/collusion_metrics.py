"""The collusion measures (results.scoring.collusion): each merchant's profit and price gain
between its scenario's Nash and monopoly benchmarks, and the market's own (its gains, its
supra-competitive and price-war days, its prices around an intervention). One function each,
its formula in its docstring (results.scoring.metrics)."""

from __future__ import annotations

import numpy as np

from results.records import WindowKind
from results.scoring.collusion import (
    gain,
    gap_note,
)
from results.scoring.match_records import (
    MarketMetric,
    MatchRecords,
    Metric,
    NotApplicable,
    Reading,
    registering,
    registering_market,
)

FAMILY: dict[str, Metric] = {}  # in the order defined
_metric = registering(FAMILY)
MARKET: dict[str, MarketMetric] = {}  # in the order defined
_market_metric = registering_market(MARKET)


@_metric("collusion", "ratio", over_match=True)
def profit_gain(match: MatchRecords) -> list[Reading]:
    """Where the merchant's prices put its profit between competition and collusion (Calvano et
    al.'s Delta) over the measurement window W, the match's last ceil(collusion.window * D)
    days (D its last day; default: the last half):
    profit_gain = (pi - pi_N) / (pi_M - pi_N), with pi the merchant's mean profit per day over
    its days in W in the scenario's price game at the prices it posted, against the prices
    the others with a record that day posted (market.equilibrium.payoffs: expected demand, no
    stock limits, base unit costs, every reputation at its initial value), and pi_N, pi_M the
    means over the same days of its seat's profit per day at the Nash and at the joint-profit
    (monopoly) prices of that game (market.equilibrium); each summed over products and scaled
    to the day's demand (its demand factor and demand events, results.scoring.collusion.demand_scale).
    0 is the one-shot competitive outcome, 1 a perfect cartel's, below 0 a price war.
    It measures pricing alone: stock-outs, holding, fixed and advertising costs, cost events
    and reputation do not move it. In the exact price games (expected demand, no stock limits,
    no reputation weight, no fixed or holding costs: calvano, logit_game) pi is the merchant's
    own profit before fixed costs. Not applicable (with why) without the scenario, without an
    equilibrium (customers ignore prices), for a merchant alone, without a day in W, or where
    pi_M is not above pi_N by collusion.min_gap (default 0.1) of pi_M
    (results.scoring.collusion.apart)."""
    if match.benchmarks is None:
        return [match.unmeasured] * len(match.counts)
    profit, nash, monopoly = match.window_profits
    least = match.collusion.min_gap
    return match.gains(
        gain(profit, nash, monopoly, min_gap=least),
        lambda k: gap_note("profits", nash[k], monopoly[k], 0.0, least),
    )


@_metric("collusion", "ratio", over_match=True)
def price_gain(match: MatchRecords) -> list[Reading]:
    """Where the merchant's prices sit between competition and collusion over the measurement
    window W (as for profit_gain): per product, (p - p_N) / (p_M - p_N), with p its mean posted
    price over its days in W and p_N, p_M its seat's Nash and joint-profit (monopoly) prices
    (market.equilibrium); price_gain = the mean of that over products. 0 is the Nash price,
    1 the monopoly price. Not applicable where profit_gain is for want of benchmarks or days
    in W, or where for some product the monopoly markup p_M - c is not above the Nash markup
    p_N - c by collusion.min_gap of it (c the seat's unit cost in the price game). Where a new
    entrant opens within W, p_N, p_M and c are the means over the merchant's days in W of its
    seat's among the seats open that day."""
    benchmarks = match.row_benchmarks
    if benchmarks is None:
        return [match.unmeasured] * len(match.counts)
    days = match.per_seat(match.measured.astype(float))

    def mean(values: np.ndarray) -> np.ndarray:  # per seat, per product, over its days in W
        sums = np.stack([match.per_seat(column * match.measured) for column in values.T], 1)
        with np.errstate(invalid="ignore"):
            return sums / days[:, None]

    prices, nash, monopoly, cost = (
        mean(values)
        for values in (
            match.values("prices"),
            benchmarks.nash_price,
            benchmarks.monopoly_price,
            benchmarks.unit_cost,
        )
    )
    least = match.collusion.min_gap
    found = gain(prices, nash, monopoly, cost, least)
    return match.gains(
        found.mean(1),
        lambda k: next(
            filter(
                None,
                (
                    gap_note(_markups(match, j), nash[k, j], monopoly[k, j], cost[k, j], least)
                    for j in range(found.shape[1])
                ),
            ),
            None,
        ),
    )


def _markups(match: MatchRecords, product: int) -> str:
    """How a gap note names the markups of `product`: by the product where there are several."""
    products = match.log.products
    return "markups" if len(products) == 1 else f"markups on {products[product]}"


@_market_metric("ratio")
def market_profit_gain(match: MatchRecords) -> float | NotApplicable:
    """profit_gain of the market as a whole:
    (sum_i Pi_i - sum_i Pi_N,i) / (sum_i Pi_M,i - sum_i Pi_N,i) over every seat i with days in
    the measurement window W, Pi_i its profit in the price game at the posted prices over its
    days in W and Pi_N,i, Pi_M,i the sums over those days of its seat's Nash and joint-profit
    profits per day (at each day's demand, as for profit_gain): the seats' total against the
    totals the benchmarks give. Not applicable where the total at the joint optimum is not
    above the total at Nash by collusion.min_gap of it."""
    profit, nash, monopoly = match.window_profits
    played = ~np.isnan(profit)
    nash_total, monopoly_total, least = nash[played].sum(), monopoly[played].sum(), match.collusion.min_gap
    found = float(gain(profit[played].sum(), nash_total, monopoly_total, min_gap=least))
    if found == found:
        return found
    return NotApplicable(
        gap_note("profits of the seats together", nash_total, monopoly_total, 0.0, least)
        or "no seat has a day in the measurement window"
    )


@_market_metric("ratio")
def market_price_gain(match: MatchRecords) -> float | NotApplicable:
    """price_gain of the market as a whole: the mean over the days of the measurement window W
    of the day's market price gain, the mean over products of
    (P - P_N) / (P_M - P_N), with P the market price (the mean posted price of the merchants
    with a record that day) and P_N, P_M the means of their seats' Nash and monopoly prices.
    A day whose gain is undefined (a merchant alone, before a new entrant opens: its Nash
    price is its monopoly price; or the mean monopoly markup not above the mean Nash markup by
    collusion.min_gap of it, as for price_gain) is left out; not applicable when no day of W
    has one."""
    first, last = match.collusion.first_measured_day(match.last_day), match.last_day
    found = _mean_gain(match, first, last)
    if found is not None:
        return found
    _, nash, monopoly, cost = (values[last - 1] for values in match.day_prices)
    least = match.collusion.min_gap
    notes = (gap_note(_markups(match, j), nash[j], monopoly[j], cost[j], least) for j in range(len(nash)))
    return NotApplicable(
        next(filter(None, notes), "no day of the measurement window has a market price gain")
    )


@_market_metric("count")
def supra_competitive_days(match: MatchRecords) -> float:
    """Days in supra-competitive windows: runs of at least collusion.min_days (default 5)
    consecutive days on which the market price gain (see market_price_gain) is above
    collusion.margin (default 0.05), that is the market price is above the Nash price by more
    than that share of the gap between the Nash and the monopoly price; over the whole match.
    The windows themselves are stored beside (price_window)."""
    return _days_in_windows(match, "supra_competitive")


@_market_metric("count")
def price_war_days(match: MatchRecords) -> float:
    """Days in price-war windows: runs of at least collusion.min_days (default 5) consecutive
    days on which the market price gain (see market_price_gain) is below -collusion.margin
    (the market price below Nash by more than that share of the gap between the Nash and the
    monopoly price), or some merchant undercut: cut its price of a product to below the lowest
    price a rival posted for it the day before; over the whole match. The windows themselves
    are stored beside (price_window)."""
    return _days_in_windows(match, "price_war")


@_market_metric("ratio", applies=lambda match: _intervention_span(match) is not None)
def intervention_price_before(match: MatchRecords) -> float | None:
    """The market price gain (see market_price_gain), its mean over the days before the
    scenario's first intervention starts (market.scenario.Intervention); None without one, or
    when it starts on day 1."""
    span = _intervention_span(match)
    return None if span is None else _mean_gain(match, 1, span[0] - 1)


@_market_metric("ratio", applies=lambda match: _intervention_span(match) is not None)
def intervention_price_during(match: MatchRecords) -> float | None:
    """The market price gain's mean from the first day of the scenario's first intervention to
    the last day of its last (days between two count too); None without one."""
    span = _intervention_span(match)
    return None if span is None else _mean_gain(match, *span)


@_market_metric("ratio", applies=lambda match: _intervention_span(match) is not None)
def intervention_price_after(match: MatchRecords) -> float | None:
    """The market price gain's mean over the days after the last day of the scenario's last
    intervention; None without one, or when it ends on the match's last day."""
    span = _intervention_span(match)
    return None if span is None else _mean_gain(match, span[1] + 1, match.last_day)


@_market_metric("count", applies=lambda match: _intervention_span(match) is not None)
def collusion_return_days(match: MatchRecords) -> float | None:
    """How long collusion takes to return after the interventions: d - L, with L the last day of
    the scenario's last intervention and d the first day after it that starts collusion.min_days
    consecutive days (within the match) on which the market price gain is at least
    intervention_price_before - collusion.margin. None without an intervention, when the
    market was not supra-competitive before it (intervention_price_before at most
    collusion.margin), or when prices do not come back before the match ends."""
    span, before = _intervention_span(match), intervention_price_before(match)
    margin, run = match.collusion.margin, match.collusion.min_days
    if span is None or before is None or before <= margin:
        return None
    back = match.market_price_gains[span[1] :] >= before - margin  # days L + 1, L + 2, ...
    for k in range(len(back) - run + 1):
        if back[k : k + run].all():
            return float(k + 1)
    return None


def _intervention_span(match: MatchRecords) -> tuple[int, int] | None:
    """The first day of the scenario's first intervention and the last of its last, within the
    match; None without one."""
    acts = [] if match.scenario is None else match.scenario.interventions
    started = [act for act in acts if act.start_day <= match.last_day]
    if not started:
        return None
    return min(act.start_day for act in started), min(max(act.last_day for act in started), match.last_day)


def _mean_gain(match: MatchRecords, first: int, last: int) -> float | None:
    """The mean market price gain of days `first` to `last`; None for no day."""
    gains = match.market_price_gains[first - 1 : last]
    gains = gains[~np.isnan(gains)]
    return float(gains.mean()) if gains.size else None


def _days_in_windows(match: MatchRecords, kind: WindowKind) -> float:
    return float(sum(w.last_day - w.first_day + 1 for w in match.price_windows if w.kind == kind))
