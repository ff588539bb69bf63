"""Metrics of one merchant in one match, computed from the match's stored records.

Every metric is one function of a `Seat` (a merchant's day records and faults, and the whole
match for comparisons), or of the whole match giving every seat's value (`over_match`: these
read the memory probes too), with its formula in its docstring, registered in
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from market import accounting
from market.daylog import DayLog
from market.scenario import Scenario
from market.types import DayRecord, RejectionCode
from results.records import Fault, MerchantResult, ProbeLog, ProbeResult

Group = Literal["coherence", "operations", "economics"]
Unit = Literal["share", "count", "money", "ratio", "day", "per_day"]
Compute = Callable[["Seat"], "float | None"]

LARGE_RESTOCK_DAYS = 5.0  # an order of at least this many days of the product's mean daily demand
CLEARANCE_CUT = 0.2  # a price cut of at least this share of the price on the restock day
CONTRADICTION_WINDOW = 3  # days after a large restock in which a clearance cut contradicts it
_MOVE_TOLERANCE = 1e-9  # relative: smaller price changes are not moves


@dataclass(frozen=True)
class Metric:
    """A metric and the function that defines it: of one Seat, or (`over_match`) of a whole
    MatchRecords, giving every seat's value at once with numpy (for the metrics that read
    every day's numbers: a match of sixteen merchants is scored in one pass, not sixteen)."""

    name: str
    group: Group
    unit: Unit
    compute: Callable
    over_match: bool = False

    @property
    def formula(self) -> str:
        """The definition, as written in the metric function's docstring."""
        return inspect.getdoc(self.compute) or ""

    def values(self, match: MatchRecords) -> list[float | None]:
        """Every seat's value, in the order of match.seats; one that comes out infinite or NaN
        is None."""
        if self.over_match:
            found = self.compute(match)
            found = found.tolist() if isinstance(found, np.ndarray) else found  # Python floats: cheaper to check
        else:
            found = [self.compute(seat) for seat in match.seats.values()]
        return [float(v) if v is not None and math.isfinite(v) else None for v in found]


METRICS: dict[str, Metric] = {}


def _metric(group: Group, unit: Unit, over_match: bool = False) -> Callable[[Callable], Callable]:
    def register(compute: Callable) -> Callable:
        METRICS[compute.__name__] = Metric(compute.__name__, group, unit, compute, over_match)
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
    columns = {name: metric.values(match) for name, metric in METRICS.items()}
    return {merchant: {name: values[k] for name, values in columns.items()} for k, merchant in enumerate(match.seats)}


def match_results(seats: Sequence[str], log: DayLog, metrics: Mapping[str, Mapping[str, float | None]], faults: Iterable[Fault]) -> list[MerchantResult]:
    """A match's results per merchant, in seat order: what its `metrics` say of its money and
    place, so that the two tables agree, with its final cash, faults and refused operations.
    A merchant is named after the contestant in its seat."""
    faults_of = Counter(fault.merchant for fault in faults)
    results = []
    for merchant in seats:
        rows, values = log.rows_of(merchant).tolist(), metrics[merchant]
        bankrupt_day = values["bankrupt_day"]
        results.append(
            MerchantResult(
                merchant=merchant, contestant=merchant, final_cash=float(log.scalar("cash_end")[rows[-1]]), net_worth=values["net_worth"],
                profit=values["profit"], rank=int(values["rank"]), market_share=values["market_share"],
                bankrupt_day=None if bankrupt_day is None else int(bankrupt_day), faults=faults_of[merchant],
                rejected_operations=sum(len(log.rejections[r]) for r in rows),
            )  # fmt: skip
        )
    return results


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
        mine_faults: dict[str, list[Fault]] = defaultdict(list)
        for fault in faults:
            mine_faults[fault.merchant].append(fault)
        log = self.log
        order = list(dict.fromkeys(log.seat.tolist()))  # seats in order of first appearance
        position = np.zeros(len(log.merchants), dtype=np.int64)
        position[order] = np.arange(len(order))
        self.row_seats = position[log.seat]  # each row's seat, as an index into self.seats
        self.by_seat = np.lexsort((log.day, self.row_seats))  # rows by seat, then day
        self.counts = np.bincount(self.row_seats, minlength=len(order))
        ends = np.cumsum(self.counts)
        self.first, self.last = self.by_seat[ends - self.counts], self.by_seat[ends - 1]
        self.seats = {
            log.merchants[s]: Seat(log.merchants[s], k, self.by_seat[ends[k] - self.counts[k] : ends[k]], mine_faults[log.merchants[s]], self)
            for k, s in enumerate(order)
        }
        self.probes = ProbeLog.of(probes)
        seat_of = {m: k for k, m in enumerate(self.seats)}
        merchant_seats = [seat_of.get(m, -1) for m in self.probes.merchants]
        probe_seats = np.array(merchant_seats, dtype=np.int64)[self.probes.seat]
        self.probe_rows = np.flatnonzero(probe_seats >= 0)  # probes of merchants without a day record are left out
        self.probe_seats = probe_seats[self.probe_rows]  # each of those probes' seat, as an index into self.seats

    def per_seat(self, values: np.ndarray, seats: np.ndarray | None = None) -> np.ndarray:
        """Sums per seat of one value per row (of the log, or of rows whose seats are given)."""
        return np.bincount(self.row_seats if seats is None else seats, weights=values, minlength=len(self.counts))

    def answered_probes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The seat, the day it was put and the relative error of each answered probe."""
        rows = self.probe_rows
        errors = self.probes.error[rows]
        answered = ~np.isnan(errors)
        return self.probe_seats[answered], self.probes.day[rows][answered], errors[answered]

    def scalar(self, name: str) -> np.ndarray:
        return self.log.scalar(name)

    def values(self, name: str) -> np.ndarray:
        return self.log.product_values(name)

    @cached_property
    def ranks(self) -> dict[str, int]:
        """Each merchant's place (market.accounting.ranks)."""
        seats = self.seats.values()
        places = accounting.ranks([not s.bankrupt for s in seats], [s.last_day for s in seats], [s.net_worth for s in seats])
        return dict(zip(self.seats, places))

    @cached_property
    def units_sold(self) -> np.ndarray:
        return self.per_seat(_sum(self.values("units_sold"), 1))

    @cached_property
    def mean_prices(self) -> np.ndarray:
        """Per row of the log, per product: the mean posted price of the merchants with a
        record that day."""
        days, index = np.unique(self.log.day, return_inverse=True)
        prices = self.log.product_values("prices")
        sums = np.zeros((len(days), prices.shape[1]))
        for j, column in enumerate(prices.T):
            sums[:, j] = np.bincount(index, weights=column, minlength=len(days))
        return (sums / np.bincount(index)[:, None])[index]

    @cached_property
    def start_net_worth(self) -> np.ndarray:
        """Per seat, net worth before its first day (market.accounting.starting_net_worth)."""
        return accounting.starting_net_worth(self.log, self.first)

    @cached_property
    def profits(self) -> np.ndarray:
        """Per seat (market.accounting.profit)."""
        return accounting.profit(self.log, self.first, self.last)

    @cached_property
    def rejections(self) -> list[Counter[str]]:
        """Per seat, rejected submissions by kind (see `rejection_kind`)."""
        counts: list[Counter[str]] = [Counter() for _ in self.counts]
        for k, row in zip(self.row_seats.tolist(), self.log.rejections):
            if row:
                counts[k].update(rejection_kind(r.code) for r in row)
        return counts

    @cached_property
    def planned(self) -> bool:
        """Whether any merchant stated a plan on any day."""
        return any(self.log.plans)

    @cached_property
    def operations(self) -> np.ndarray:
        """Applied operations per seat."""
        return self.per_seat(np.bincount(self.log.applied.row, minlength=len(self.log)).astype(float))


_sum = np.add.reduce


@dataclass(frozen=True, eq=False)
class Seat:
    """One merchant's part of a match: its rows of the log in day order, and its faults."""

    merchant: str
    index: int  # in match.seats
    rows: np.ndarray
    faults: list[Fault]
    match: MatchRecords

    def values(self, name: str) -> np.ndarray:
        """A per-product field of the record, [day, product]."""
        return self.match.values(name)[self.rows]

    @cached_property
    def days(self) -> list[int]:
        return self.match.log.day[self.rows].tolist()

    @property
    def products(self) -> tuple[str, ...]:
        return self.match.log.products

    @property
    def last_day(self) -> int:
        return int(self.match.log.day[self.rows[-1]])

    @property
    def bankrupt(self) -> bool:
        return bool(self.match.log.bankrupt[self.rows[-1]])

    @property
    def net_worth(self) -> float:
        """At the end of the merchant's last day."""
        return float(self.match.log.scalar("net_worth")[self.rows[-1]])

    @property
    def rejections(self) -> Counter[str]:
        """Rejected submissions by kind (see `rejection_kind`)."""
        return self.match.rejections[self.index]

    @cached_property
    def submitted(self) -> int:
        return int(self.match.operations[self.index]) + sum(self.rejections.values())


# --- coherence ------------------------------------------------------------------------

REJECTION_KINDS: dict[str, str] = {
    "malformed": "not a well-formed decision or operation (not JSON, schema errors)",
    "unknown_product": "a product the market does not sell",
    "over_cash": "spending (an order, advertising) beyond the cash in hand",
    "out_of_range": "any other value the market refuses: a non-positive or non-finite price, "
    "quantity or amount, a fractional quantity where units are whole, a price above the ceiling",
}


_KIND_OF_CODE = {
    RejectionCode.MALFORMED_DECISION: "malformed", RejectionCode.MALFORMED_OPERATION: "malformed",
    RejectionCode.UNKNOWN_PRODUCT: "unknown_product",
    RejectionCode.ORDER_OVER_CASH: "over_cash", RejectionCode.ADVERTISING_OVER_CASH: "over_cash",
}  # fmt: skip


def rejection_kind(code: RejectionCode) -> str:
    """The kind of a rejection (a key of REJECTION_KINDS) by its code: every code not named
    above is out_of_range."""
    return _KIND_OF_CODE.get(code, "out_of_range")


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


@_metric("coherence", "share", over_match=True)
def memory_error(match: MatchRecords) -> list[float | None]:
    """Mean relative recall error of the answered memory probes:
    memory_error = mean over answered probes of |answer - truth| / max(|truth|, 1).
    None when no probe was answered (see memory_unanswered)."""
    seats, _, errors = match.answered_probes()
    sums, counts = match.per_seat(errors, seats), np.bincount(seats, minlength=len(match.counts))
    return [total / n if n else None for total, n in zip(sums.tolist(), counts.tolist())]


@_metric("coherence", "share", over_match=True)
def memory_unanswered(match: MatchRecords) -> list[float | None]:
    """Share of memory probes left without a numeric answer:
    memory_unanswered = unanswered probes / probes asked; None when none was asked."""
    seats = match.probe_seats
    unanswered = match.per_seat(np.isnan(match.probes.error[match.probe_rows]).astype(float), seats)
    asked = np.bincount(seats, minlength=len(match.counts))
    return [missing / n if n else None for missing, n in zip(unanswered.tolist(), asked.tolist())]


@_metric("coherence", "per_day", over_match=True)
def memory_error_trend(match: MatchRecords) -> list[float | None]:
    """How recall error changes over the match: the least-squares slope of relative error
    against the day the probe was asked, over answered probes,
    memory_error_trend = sum (t_i - mean t)(e_i - mean e) / sum (t_i - mean t)^2,
    in error per day (positive: memory gets worse as the match goes on). None with fewer than
    two distinct probe days."""
    seats, days, e = match.answered_probes()
    t = days.astype(float)
    n = np.maximum(np.bincount(seats, minlength=len(match.counts)), 1)
    dt, de = t - (match.per_seat(t, seats) / n)[seats], e - (match.per_seat(e, seats) / n)[seats]
    spread, covariance = match.per_seat(dt * dt, seats), match.per_seat(dt * de, seats)
    span = int(days.max()) + 1 if days.size else 1
    distinct = np.bincount(np.unique(seats * span + days) // span, minlength=len(match.counts))  # probe days per seat
    return [c / v if d >= 2 else None for c, v, d in zip(covariance.tolist(), spread.tolist(), distinct.tolist())]


@_metric("coherence", "share", over_match=True)
def price_oscillation(match: MatchRecords) -> list[float | None]:
    """How often the merchant's price moves reverse direction. Per product, the daily moves
    m_t = price_t - price_(t-1) between its consecutive days, leaving out days without a move
    (|m_t| <= 1e-9 * max(1, price_(t-1))); a reversal is a move whose sign differs from the
    previous move's. price_oscillation = reversals / (moves - 1), summed over products.
    1 is a zig-zag every day, 0 moves in one direction only; None with fewer than two moves
    in every product."""
    n = len(match.counts)
    reversals, pairs = np.zeros(n), np.zeros(n)
    seat = match.row_seats[match.by_seat]
    same = seat[1:] == seat[:-1]  # consecutive days of one merchant
    for prices in match.values("prices")[match.by_seat].T:
        before, moves = prices[:-1], np.diff(prices)
        moved = np.flatnonzero(same & (np.abs(moves) > _MOVE_TOLERANCE * np.maximum(1.0, np.abs(before))))
        signs, who = moves[moved] > 0, seat[1:][moved]
        pairs += np.maximum(np.bincount(who, minlength=n) - 1, 0)
        reversed_ = (who[1:] == who[:-1]) & (signs[1:] != signs[:-1])
        reversals += np.bincount(who[1:][reversed_], minlength=n)
    return [r / q if q else None for r, q in zip(reversals.tolist(), pairs.tolist())]


@_metric("coherence", "ratio")
def plan_drift(seat: Seat) -> float | None:
    """How far the merchant's prices stray from the prices it said it would hold
    (`DayRecord.plan`). A plan stated on day d for product p stands from day d + 1 until the
    merchant states a new price for p, which stands from the day after it is stated: the
    planned price planned_p,t in force on day t is the one of the latest plan for p stated
    before day t. plan_drift = mean over the days t and products p with a plan in force of
    |price_p,t - planned_p,t| / planned_p,t. 0 is every plan kept exactly; None when the
    merchant never stated a plan, or no day of its followed one."""
    if not seat.match.planned:
        return None
    plans = [seat.match.log.plans[row] for row in seat.rows.tolist()]
    drifts = []
    planned: dict[str, float] = {}
    for prices, plan in zip(seat.values("prices").tolist(), plans):
        posted = dict(zip(seat.products, prices))
        drifts.extend(abs(posted[p] - price) / price for p, price in planned.items())
        planned.update(plan)
    return sum(drifts) / len(drifts) if drifts else None


@_metric("coherence", "count", over_match=True)
def contradictions(match: MatchRecords) -> list[float]:
    """Large restocks contradicted within days by a clearance price cut that no event explains.

    A large restock of a product on day t: an order of at least LARGE_RESTOCK_DAYS (5) times
    the merchant's mean daily demand for it over the match (its first-choice customers per
    day). It is contradicted when on a day u with t < u <= t + CONTRADICTION_WINDOW (3) the
    merchant's price is at most (1 - CLEARANCE_CUT) = 0.8 times its price on day t, unless
    an event explains the cut: the product's unit cost fell between t and u, or a scenario
    event of the product (or of every product) is announced, running or just ended on some
    day of [t, u]. contradictions = number of such cuts, a cut that follows several large
    restocks counted once."""
    log, seats = match.log, match.row_seats
    cuts: list[set[tuple[str, int]]] = [set() for _ in match.counts]
    if not len(log):
        return []
    row_at = np.full((len(match.counts), int(log.day.max()) + CONTRADICTION_WINDOW + 1), -1)  # [seat, day] -> row, -1: none
    row_at[seats, log.day] = np.arange(len(log))
    later = np.arange(1, CONTRADICTION_WINDOW + 1)
    for j, product in enumerate(log.products):
        prices, costs, ordered = (match.values(name)[:, j] for name in ("prices", "unit_cost", "ordered"))
        demand = match.per_seat(match.values("first_choice")[:, j]) / match.counts
        restocks = np.flatnonzero((ordered > 0) & (ordered >= LARGE_RESTOCK_DAYS * demand[seats]))
        window = row_at[seats[restocks, None], log.day[restocks, None] + later]  # the rows of the days after each restock
        cut = (window >= 0) & (prices[window] <= (1 - CLEARANCE_CUT) * prices[restocks, None])
        first = cut.argmax(1)  # the first cut after each restock
        for i in np.flatnonzero(cut.any(1)).tolist():
            r, c, after = int(restocks[i]), int(window[i, first[i]]), int(first[i]) + 1
            restock_day = int(log.day[r])
            if not (costs[c] < costs[r] or _event_near(match.scenario, product, restock_day, restock_day + after)):
                cuts[int(seats[r])].add((product, restock_day + after))
    return [float(len(c)) for c in cuts]


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


@_metric("operations", "count", over_match=True)
def stockout_days(match: MatchRecords) -> np.ndarray:
    """Days on which the merchant turned customers away for lack of stock (lost sales > 0 in
    any product)."""
    return match.per_seat((match.values("lost_sales") > 0).any(axis=1).astype(float))


@_metric("operations", "count", over_match=True)
def lost_sales(match: MatchRecords) -> np.ndarray:
    """Units customers wanted from the merchant but could not buy for lack of stock:
    lost_sales = sum over days and products of lost_sales."""
    return match.per_seat(_sum(match.values("lost_sales"), 1))


@_metric("operations", "ratio", over_match=True)
def inventory_turnover(match: MatchRecords) -> list[float | None]:
    """How many times the stock was sold through over the match: cost of goods sold over the
    mean value of stock in hand,
    inventory_turnover = sum_t sum_p sold_p,t * unit_cost_p,t / mean_t sum_p inventory_p,t * unit_cost_p,t,
    with inventory at the end of each day. None when no stock was ever held."""
    cost = match.values("unit_cost")
    sold = match.per_seat(_sum(match.values("units_sold") * cost, 1))
    held = match.per_seat(_sum(match.values("inventory") * cost, 1)) / match.counts
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
    return [float(day) if bankrupt else None for day, bankrupt in zip(match.log.day[last].tolist(), match.log.bankrupt[last].tolist())]


# --- economics and competition --------------------------------------------------------


@_metric("economics", "money", over_match=True)
def profit(match: MatchRecords) -> np.ndarray:
    """Net worth at the end minus net worth before the first day, goods valued at each day's
    unit cost: profit = net_worth_last - net_worth_0, with net_worth_0 = initial cash +
    initial stock at day 1's unit cost (market.accounting.profit)."""
    return match.profits


@_metric("economics", "share", over_match=True)
def roi(match: MatchRecords) -> list[float | None]:
    """Return on the starting capital: roi = profit / net_worth_0. None when the merchant
    started with nothing."""
    return [gain / start if start > 0 else None for gain, start in zip(match.profits.tolist(), match.start_net_worth.tolist())]


@_metric("economics", "money", over_match=True)
def net_worth(match: MatchRecords) -> np.ndarray:
    """Net worth at the end of the merchant's last day: cash + stock in hand and in transit at
    unit cost + receivables."""
    return match.scalar("net_worth")[match.last]


@_metric("economics", "share", over_match=True)
def goal_completion(match: MatchRecords) -> list[float | None]:
    """How far the merchant got from where it started to the scenario's target_net_worth:
    goal_completion = (net_worth_last - net_worth_0) / (target - net_worth_0); 1 is the target
    reached, 0 no gain, negative a loss. None without a scenario, without a target, or with a
    target not above the start."""
    target = match.scenario.target_net_worth if match.scenario is not None else None
    return [
        None if target is None or target <= start else gain / (target - start)
        for gain, start in zip(match.profits.tolist(), match.start_net_worth.tolist())
    ]


@_metric("economics", "count")
def rank(seat: Seat) -> float:
    """Finishing place, 1 is best, ties share the better place ("1224"): survivors ordered by
    final net worth, then the bankrupt, the later bankrupt first."""
    return float(seat.match.ranks[seat.merchant])


@_metric("economics", "share", over_match=True)
def market_share(match: MatchRecords) -> list[float]:
    """Share of all units sold in the match: market_share = units sold by the merchant / units
    sold by every merchant; 0 for all when nothing was sold (market.accounting.market_shares)."""
    return accounting.market_shares(match.units_sold.tolist())


@_metric("economics", "ratio", over_match=True)
def price_vs_market(match: MatchRecords) -> np.ndarray:
    """Mean price relative to the market: the mean over the merchant's days and products of
    price / (mean price of that product over the merchants with a record that day, this one
    included). Below 1: cheaper than the market."""
    prices = match.values("prices")
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero price: not finite, stored as None
        return match.per_seat(_sum(prices / match.mean_prices, 1)) / (match.counts * prices.shape[1])


@_metric("economics", "ratio", over_match=True)
def price_vs_cost(match: MatchRecords) -> np.ndarray:
    """Mean markup: the mean over the merchant's days and products of price / unit cost that
    day. Below 1: selling below cost."""
    prices = match.values("prices")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a zero cost: not finite, stored as None
        return match.per_seat(_sum(prices / match.values("unit_cost"), 1)) / (match.counts * prices.shape[1])
