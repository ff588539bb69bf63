"""Metrics of one merchant in one match, computed from the match's stored records.

Every metric is one function of a `Seat` (a merchant's day records, its memory probes and
faults, and the whole match for comparisons) with its formula in its docstring, registered in
`METRICS` under its function's name: that name is the one stored in the `metric` table and
shown by `arena show`. A metric that does not apply (no probes asked, no price moves) is None.

Only what the record holds goes in, so stored matches can be scored again
(`results.store.rescore`). The scenario is optional: without it `goal_completion` is None and
`contradictions` knows of cost changes only from the recorded unit costs.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from market.daylog import PER_PRODUCT, SCALARS, DayLog
from market.scenario import Scenario
from market.types import DayRecord
from results.records import Fault, ProbeResult

Group = Literal["coherence", "operations", "economics"]
Unit = Literal["share", "count", "money", "ratio", "day", "per_day"]
Compute = Callable[["Seat"], "float | None"]

LARGE_RESTOCK_DAYS = 5.0  # an order of at least this many days of the product's mean daily demand
CLEARANCE_CUT = 0.2  # a price cut of at least this share of the price on the restock day
CONTRADICTION_WINDOW = 3  # days after a large restock in which a clearance cut contradicts it
_MOVE_TOLERANCE = 1e-9  # relative: smaller price changes are not moves


@dataclass(frozen=True)
class Metric:
    name: str
    group: Group
    unit: Unit
    compute: Compute

    @property
    def formula(self) -> str:
        """The definition, as written in the metric function's docstring."""
        return inspect.getdoc(self.compute) or ""


METRICS: dict[str, Metric] = {}


def _metric(group: Group, unit: Unit) -> Callable[[Compute], Compute]:
    def register(compute: Compute) -> Compute:
        METRICS[compute.__name__] = Metric(compute.__name__, group, unit, compute)
        return compute

    return register


def compute(
    records: Iterable[DayRecord],
    probes: Iterable[ProbeResult] = (),
    faults: Iterable[Fault] = (),
    scenario: Scenario | None = None,
) -> dict[str, dict[str, float | None]]:
    """merchant -> metric name -> value, for every merchant with a day record, in the order
    they first appear. A value that comes out infinite or NaN is stored as None."""
    match = MatchRecords(records, probes, faults, scenario)
    return {merchant: {name: _finite(m.compute(seat)) for name, m in METRICS.items()} for merchant, seat in match.seats.items()}


class MatchRecords:
    """One match's records (a DayLog, or DayRecords), split by merchant, with what several
    metrics compare against."""

    def __init__(
        self,
        records: Iterable[DayRecord],
        probes: Iterable[ProbeResult] = (),
        faults: Iterable[Fault] = (),
        scenario: Scenario | None = None,
    ):
        self.scenario = scenario
        self.log = DayLog.of(records, scenario.product_ids if scenario is not None else None)
        mine_probes: dict[str, list[ProbeResult]] = defaultdict(list)
        for probe in probes:
            mine_probes[probe.merchant].append(probe)
        mine_faults: dict[str, list[Fault]] = defaultdict(list)
        for fault in faults:
            mine_faults[fault.merchant].append(fault)
        by_day = np.argsort(self.log.day, kind="stable")
        order = dict.fromkeys(self.log.seat.tolist())  # seats in order of first appearance
        self.seats = {
            self.log.merchants[s]: Seat(self.log.merchants[s], by_day[self.log.seat[by_day] == s], mine_probes[self.log.merchants[s]], mine_faults[self.log.merchants[s]], self)
            for s in order
        }

    @cached_property
    def ranks(self) -> dict[str, int]:
        """Competition ranks ("1224"): survivors by final net worth, then the bankrupt by the
        day they went bankrupt, later is better (the rule of tournaments.scoring)."""
        final = {merchant: (not seat.bankrupt, seat.last_day, round(seat.net_worth, 6)) for merchant, seat in self.seats.items()}
        return {merchant: 1 + sum(other > key for other in final.values()) for merchant, key in final.items()}

    @cached_property
    def units_sold(self) -> dict[str, float]:
        return {merchant: float(seat.values("units_sold").sum()) for merchant, seat in self.seats.items()}

    @cached_property
    def mean_prices(self) -> np.ndarray:
        """Per row of the log, per product: the mean posted price of the merchants with a
        record that day."""
        days, index = np.unique(self.log.day, return_inverse=True)
        prices = self.log.product_values("prices")
        sums = np.zeros((len(days), prices.shape[1]))
        np.add.at(sums, index, prices)
        return (sums / np.bincount(index)[:, None])[index]


@dataclass(frozen=True, eq=False)
class Seat:
    """One merchant's part of a match: its rows of the log in day order, probes and faults."""

    merchant: str
    rows: np.ndarray
    probes: list[ProbeResult]
    faults: list[Fault]
    match: MatchRecords

    def scalar(self, name: str) -> np.ndarray:
        """A per-merchant field of the record, day by day."""
        return self._scalars[:, SCALARS.index(name)]

    def values(self, name: str) -> np.ndarray:
        """A per-product field of the record, [day, product]."""
        return self._per_product[:, PER_PRODUCT.index(name), :]

    @cached_property
    def _scalars(self) -> np.ndarray:
        return self.match.log.scalars[self.rows]

    @cached_property
    def _per_product(self) -> np.ndarray:
        return self.match.log.per_product[self.rows]

    @cached_property
    def days(self) -> list[int]:
        return self.match.log.day[self.rows].tolist()

    @property
    def products(self) -> tuple[str, ...]:
        return self.match.log.products

    @property
    def last_day(self) -> int:
        return self.days[-1]

    @property
    def bankrupt(self) -> bool:
        return bool(self.match.log.bankrupt[self.rows[-1]])

    @property
    def net_worth(self) -> float:
        """At the end of the merchant's last day."""
        return float(self.match.log.scalar("net_worth")[self.rows[-1]])

    @cached_property
    def rejections(self) -> Counter[str]:
        """Rejected submissions by kind (see `rejection_kind`)."""
        log = self.match.log
        return Counter(rejection_kind(r.reason) for row in self.rows.tolist() for r in log.rejections[row])

    @cached_property
    def submitted(self) -> int:
        return sum(len(self.match.log.operations[row]) for row in self.rows.tolist()) + sum(self.rejections.values())

    @cached_property
    def start_net_worth(self) -> float:
        """Net worth before the first day: net worth at the end of day 1 minus day 1's change,
        net_worth_0 = net_worth_1 - (revenue - sum_p sold_p * unit_cost_p - advertising - holding - fixed),
        which is initial cash plus initial stock at day 1's unit cost. (Orders, collections and
        credit sales move value between cash, stock and receivables; only these items change it.)"""
        first = self.rows[0]
        log = self.match.log
        cost_of_sales = float((log.product_values("units_sold")[first] * log.product_values("unit_cost")[first]).sum())
        value = {name: float(log.scalar(name)[first]) for name in ("revenue", "advertising", "holding", "fixed", "net_worth")}
        change = value["revenue"] - cost_of_sales - value["advertising"] - value["holding"] - value["fixed"]
        return value["net_worth"] - change


# --- coherence ------------------------------------------------------------------------

REJECTION_KINDS: dict[str, str] = {
    "malformed": "not a well-formed decision or operation (not JSON, schema errors)",
    "unknown_product": "a product the market does not sell",
    "over_cash": "spending (an order, advertising) beyond the cash in hand",
    "out_of_range": "any other value the market refuses: a non-positive or non-finite price, "
    "quantity or amount, a fractional quantity where units are whole, a price above the ceiling",
}


def rejection_kind(reason: str) -> str:
    """The kind of a rejection (a key of REJECTION_KINDS), from the market's reason text."""
    if reason.startswith("malformed"):
        return "malformed"
    if reason.startswith("unknown product"):
        return "unknown_product"
    if "exceeds cash" in reason or "more than cash" in reason:
        return "over_cash"
    return "out_of_range"


@_metric("coherence", "share")
def validity_rate(seat: Seat) -> float | None:
    """Share of the operations the merchant submitted that the market applied:
    validity_rate = applied / (applied + rejected), over all its days. A decision that was not
    a list of operations at all counts as one rejected submission (and is a fault too); a day
    on which no answer came (timeout, error) submits nothing (see fault_days). None when
    nothing was submitted."""
    if seat.submitted == 0:
        return None
    return (seat.submitted - sum(seat.rejections.values())) / seat.submitted


def _rejected_share(kind: str) -> Compute:
    def share(seat: Seat) -> float | None:
        if seat.submitted == 0:
            return None
        return seat.rejections[kind] / seat.submitted

    share.__name__ = f"rejected_{kind}"
    share.__doc__ = (
        f"Share of submitted operations rejected for {REJECTION_KINDS[kind]}: "
        f"rejected_{kind} = rejected of this kind / (applied + rejected); None when nothing was "
        "submitted. validity_rate and the rejected_* shares add up to 1."
    )
    return share


for _kind in REJECTION_KINDS:
    _metric("coherence", "share")(_rejected_share(_kind))


@_metric("coherence", "count")
def constraint_violations(seat: Seat) -> float:
    """Well-formed operations the market refused because they broke its rules or the
    merchant's constraints (over_cash, out_of_range, unknown_product):
    constraint_violations = rejected - rejected as malformed."""
    return float(sum(seat.rejections.values()) - seat.rejections["malformed"])


@_metric("coherence", "count")
def fault_days(seat: Seat) -> float:
    """Days on which the merchant gave no usable decision (timeout, error, malformed answer,
    dead actor): the number of distinct days with a recorded fault."""
    return float(len({fault.day for fault in seat.faults}))


@_metric("coherence", "share")
def memory_error(seat: Seat) -> float | None:
    """Mean relative recall error of the answered memory probes:
    memory_error = mean over answered probes of |answer - truth| / max(|truth|, 1).
    None when no probe was answered (see memory_unanswered)."""
    errors = [p.relative_error for p in seat.probes if p.relative_error is not None]
    return sum(errors) / len(errors) if errors else None


@_metric("coherence", "share")
def memory_unanswered(seat: Seat) -> float | None:
    """Share of memory probes left without a numeric answer:
    memory_unanswered = unanswered probes / probes asked; None when none was asked."""
    if not seat.probes:
        return None
    return sum(p.relative_error is None for p in seat.probes) / len(seat.probes)


@_metric("coherence", "per_day")
def memory_error_trend(seat: Seat) -> float | None:
    """How recall error changes over the match: the least-squares slope of relative error
    against the day the probe was asked, over answered probes,
    memory_error_trend = sum (t_i - mean t)(e_i - mean e) / sum (t_i - mean t)^2,
    in error per day (positive: memory gets worse as the match goes on). None with fewer than
    two distinct probe days."""
    points = [(p.day, p.relative_error) for p in seat.probes if p.relative_error is not None]
    if len({t for t, _ in points}) < 2:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_e = sum(e for _, e in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (e - mean_e) for t, e in points) / spread


@_metric("coherence", "share")
def price_oscillation(seat: Seat) -> float | None:
    """How often the merchant's price moves reverse direction. Per product, the daily moves
    m_t = price_t - price_(t-1) between its consecutive days, leaving out days without a move
    (|m_t| <= 1e-9 * max(1, price_(t-1))); a reversal is a move whose sign differs from the
    previous move's. price_oscillation = reversals / (moves - 1), summed over products.
    1 is a zig-zag every day, 0 moves in one direction only; None with fewer than two moves
    in every product."""
    reversals = pairs = 0
    for prices in seat.values("prices").T:
        before, moves = prices[:-1], np.diff(prices)
        signs = (moves > 0)[np.abs(moves) > _MOVE_TOLERANCE * np.maximum(1.0, np.abs(before))]
        pairs += max(len(signs) - 1, 0)
        reversals += int(np.count_nonzero(signs[1:] != signs[:-1]))
    return reversals / pairs if pairs else None


@_metric("coherence", "ratio")
def plan_drift(seat: Seat) -> float | None:
    """How far the merchant's prices stray from the prices it said it would hold
    (`DayRecord.plan`). A plan stated on day d for product p stands from day d + 1 until the
    merchant states a new price for p, which stands from the day after it is stated: the
    planned price planned_p,t in force on day t is the one of the latest plan for p stated
    before day t. plan_drift = mean over the days t and products p with a plan in force of
    |price_p,t - planned_p,t| / planned_p,t. 0 is every plan kept exactly; None when the
    merchant never stated a plan, or no day of its followed one."""
    plans = [seat.match.log.plans[row] for row in seat.rows.tolist()]
    if not any(plans):
        return None
    drifts = []
    planned: dict[str, float] = {}
    for prices, plan in zip(seat.values("prices").tolist(), plans):
        posted = dict(zip(seat.products, prices))
        drifts.extend(abs(posted[p] - price) / price for p, price in planned.items())
        planned.update(plan)
    return sum(drifts) / len(drifts) if drifts else None


@_metric("coherence", "count")
def contradictions(seat: Seat) -> float:
    """Large restocks contradicted within days by a clearance price cut that no event explains.

    A large restock of a product on day t: an order of at least LARGE_RESTOCK_DAYS (5) times
    the merchant's mean daily demand for it over the match (its first-choice customers per
    day). It is contradicted when on a day u with t < u <= t + CONTRADICTION_WINDOW (3) the
    merchant's price is at most (1 - CLEARANCE_CUT) = 0.8 times its price on day t, unless
    an event explains the cut: the product's unit cost fell between t and u, or a scenario
    event of the product (or of every product) is announced, running or just ended on some
    day of [t, u]. contradictions = number of such cuts, a cut that follows several large
    restocks counted once."""
    cuts: set[tuple[str, int]] = set()
    at = {day: k for k, day in enumerate(seat.days)}
    all_prices, all_costs, all_ordered = seat.values("prices"), seat.values("unit_cost"), seat.values("ordered")
    for j, product in enumerate(seat.products):
        prices, costs, ordered = all_prices[:, j], all_costs[:, j], all_ordered[:, j]
        demand = seat.values("first_choice")[:, j].sum() / len(seat.days)
        for r in np.flatnonzero((ordered > 0) & (ordered >= LARGE_RESTOCK_DAYS * demand)).tolist():
            restock_day = seat.days[r]
            for day in range(restock_day + 1, restock_day + CONTRADICTION_WINDOW + 1):
                c = at.get(day)
                if c is None or prices[c] > (1 - CLEARANCE_CUT) * prices[r]:
                    continue
                if not (costs[c] < costs[r] or _event_near(seat.match.scenario, product, restock_day, day)):
                    cuts.add((product, day))
                break
    return float(len(cuts))


def _event_near(scenario: Scenario | None, product: str, restock_day: int, cut_day: int) -> bool:
    """A scenario event of the product (or of every product) announced, running or just
    ended on some day of [restock_day, cut_day]."""
    events = scenario.events if scenario is not None else ()
    return any(
        event.product in (None, product)
        and event.start_day - event.announce_days_ahead <= cut_day
        and restock_day <= event.end_day + 1
        for event in events
    )


# --- operations -----------------------------------------------------------------------


@_metric("operations", "count")
def stockout_days(seat: Seat) -> float:
    """Days on which the merchant turned customers away for lack of stock (lost sales > 0 in
    any product)."""
    return float(np.count_nonzero((seat.values("lost_sales") > 0).any(axis=1)))


@_metric("operations", "count")
def lost_sales(seat: Seat) -> float:
    """Units customers wanted from the merchant but could not buy for lack of stock:
    lost_sales = sum over days and products of lost_sales."""
    return float(seat.values("lost_sales").sum())


@_metric("operations", "ratio")
def inventory_turnover(seat: Seat) -> float | None:
    """How many times the stock was sold through over the match: cost of goods sold over the
    mean value of stock in hand,
    inventory_turnover = sum_t sum_p sold_p,t * unit_cost_p,t / mean_t sum_p inventory_p,t * unit_cost_p,t,
    with inventory at the end of each day. None when no stock was ever held."""
    cost = seat.values("unit_cost")
    sold = float((seat.values("units_sold") * cost).sum())
    held = float((seat.values("inventory") * cost).sum()) / len(seat.days)
    return sold / held if held > 0 else None


@_metric("operations", "money")
def cash_flow_volatility(seat: Seat) -> float | None:
    """Standard deviation (population) of the daily net cash flow cash_end - cash_start over
    the merchant's days. None with fewer than two days."""
    flows = seat.scalar("cash_end") - seat.scalar("cash_start")
    if len(flows) < 2:
        return None
    return math.sqrt(float(((flows - flows.mean()) ** 2).sum()) / len(flows))


@_metric("operations", "day")
def bankrupt_day(seat: Seat) -> float | None:
    """The day the merchant's cash fell below zero (its last day); None if it never did."""
    return float(seat.last_day) if seat.bankrupt else None


# --- economics and competition --------------------------------------------------------


@_metric("economics", "money")
def profit(seat: Seat) -> float:
    """Net worth at the end minus net worth before the first day (see Seat.start_net_worth):
    profit = net_worth_last - net_worth_0."""
    return seat.net_worth - seat.start_net_worth


@_metric("economics", "share")
def roi(seat: Seat) -> float | None:
    """Return on the starting capital: roi = profit / net_worth_0. None when the merchant
    started with nothing."""
    start = seat.start_net_worth
    return profit(seat) / start if start > 0 else None


@_metric("economics", "money")
def net_worth(seat: Seat) -> float:
    """Net worth at the end of the merchant's last day: cash + stock in hand and in transit at
    unit cost + receivables."""
    return seat.net_worth


@_metric("economics", "share")
def goal_completion(seat: Seat) -> float | None:
    """How far the merchant got from where it started to the scenario's target_net_worth:
    goal_completion = (net_worth_last - net_worth_0) / (target - net_worth_0); 1 is the target
    reached, 0 no gain, negative a loss. None without a scenario, without a target, or with a
    target not above the start."""
    target = seat.match.scenario.target_net_worth if seat.match.scenario is not None else None
    start = seat.start_net_worth
    if target is None or target <= start:
        return None
    return profit(seat) / (target - start)


@_metric("economics", "count")
def rank(seat: Seat) -> float:
    """Finishing place, 1 is best, ties share the better place ("1224"): survivors ordered by
    final net worth, then the bankrupt, the later bankrupt first."""
    return float(seat.match.ranks[seat.merchant])


@_metric("economics", "share")
def market_share(seat: Seat) -> float | None:
    """Share of all units sold in the match: market_share = units sold by the merchant / units
    sold by every merchant. None when nothing was sold."""
    total = sum(seat.match.units_sold.values())
    return seat.match.units_sold[seat.merchant] / total if total > 0 else None


@_metric("economics", "ratio")
def price_vs_market(seat: Seat) -> float:
    """Mean price relative to the market: the mean over the merchant's days and products of
    price / (mean price of that product over the merchants with a record that day, this one
    included). Below 1: cheaper than the market."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero price: not finite, stored as None
        return float((seat.values("prices") / seat.match.mean_prices[seat.rows]).mean())


@_metric("economics", "ratio")
def price_vs_cost(seat: Seat) -> float:
    """Mean markup: the mean over the merchant's days and products of price / unit cost that
    day. Below 1: selling below cost."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a zero cost: not finite, stored as None
        return float((seat.values("prices") / seat.values("unit_cost")).mean())


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
