"""What every metric reads: one match's records split by merchant (MatchRecords, and a
merchant's own, Seat), a metric's definition (Metric, MarketMetric) and the decorators each
family of metrics registers its own with (results.scoring.metrics gathers the families)."""

from __future__ import annotations

import inspect
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Literal, NamedTuple

import numpy as np

from market import accounting
from market.daylog import PER_PRODUCT, DayLog
from market.equilibrium import SeatBenchmarks, payoffs
from market.scenario import Scenario
from market.types import KIND_INDEX, MESSAGE_LIMIT, DayRecord, RejectionCode
from results.records import (
    Fault,
    GoalResult,
    PriceWindow,
    RecallLog,
    RecallResult,
    WindowKind,
)
from results.scoring.collusion import (
    NoBenchmarks,
    demand_scale,
    gain,
    open_seat_benchmarks,
    runs,
    seat_benchmarks,
)
from results.settings import CollusionSettings

Unsolved = Literal["unsolved"]
UNSOLVED: Unsolved = "unsolved"  # a match's benchmarks not given: MatchRecords solves them

Group = Literal["coherence", "operations", "economics", "collusion"]
Unit = Literal["share", "count", "money", "ratio", "day", "per_day"]
Compute = Callable[["Seat"], "float | None"]


class NotApplicable(NamedTuple):
    """A metric's value where it does not apply, with the reason a reader is shown."""

    reason: str


Reading = float | None | NotApplicable

MOVE_TOLERANCE = 1e-9  # relative: smaller price changes are not moves
WAIT = KIND_INDEX["wait"]  # the operation of a merchant that does nothing


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
    flow: bool = False  # it adds up over the days (a goal on it scales with the match's length)

    @property
    def formula(self) -> str:
        """The definition, as written in the metric function's docstring."""
        return inspect.getdoc(self.compute) or ""

    def readings(self, match: MatchRecords) -> list[Reading]:
        """Every seat's value, in the order of match.seats, or NotApplicable; one that comes out
        infinite or NaN is None."""
        if self.over_match:
            found = self.compute(match)
            found = (
                found.tolist() if isinstance(found, np.ndarray) else found
            )  # Python floats: cheaper to check
        else:
            found = [self.compute(seat) for seat in match.seats.values()]
        return [finite(v) for v in found]

    def values(self, match: MatchRecords) -> list[float | None]:
        """`readings` with None where the metric does not apply."""
        return [None if isinstance(v, NotApplicable) else v for v in self.readings(match)]


def finite(value: float | NotApplicable | None) -> Reading:
    if isinstance(value, NotApplicable):
        return value
    return float(value) if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class MarketMetric:
    """A metric of the market as a whole: a function of a whole MatchRecords giving one value,
    or None where it does not apply. A match has them only when its scenario has an
    equilibrium (`MatchRecords.benchmarks`)."""

    name: str
    unit: Unit
    compute: Callable[[MatchRecords], float | NotApplicable | None]
    applies: Callable[[MatchRecords], bool] = lambda match: True  # else the match has no such metric

    formula = Metric.formula

    def reading(self, match: MatchRecords) -> Reading:
        return finite(self.compute(match))


def registering(found: dict[str, Metric]) -> Callable[..., Callable[[Callable], Callable]]:
    """The decorator a family of metrics registers each of its own with, in `found`, under
    its function's name, in the order they are defined."""

    def metric(
        group: Group, unit: Unit, over_match: bool = False, flow: bool = False
    ) -> Callable[[Callable], Callable]:
        def register(compute: Callable) -> Callable:
            found[compute.__name__] = Metric(compute.__name__, group, unit, compute, over_match, flow)
            return compute

        return register

    return metric


def registering_market(found: dict[str, MarketMetric]) -> Callable[..., Callable[[Callable], Callable]]:
    """`registering` for metrics of the market as a whole."""

    def market_metric(
        unit: Unit, applies: Callable[[MatchRecords], bool] = lambda match: True
    ) -> Callable[[Callable], Callable]:
        def register(compute: Callable) -> Callable:
            found[compute.__name__] = MarketMetric(compute.__name__, unit, compute, applies)
            return compute

        return register

    return market_metric


REJECTION_KINDS: dict[str, str] = {
    "malformed": "not a well-formed decision, operation or message "
    "(not JSON, schema errors, a message that is not text)",
    "unknown_product": "a product the market does not sell",
    "over_cash": "spending (an order, advertising) beyond the cash in hand",
    "out_of_range": "any other value the market refuses: a non-positive or non-finite price, "
    "quantity or amount, a fractional quantity where units are whole, a price above the ceiling, "
    f"a message longer than {MESSAGE_LIMIT} characters",
}


_KIND_OF_CODE = {
    RejectionCode.MALFORMED_DECISION: "malformed",
    RejectionCode.MALFORMED_OPERATION: "malformed",
    RejectionCode.MESSAGE_NOT_TEXT: "malformed",
    RejectionCode.UNKNOWN_PRODUCT: "unknown_product",
    RejectionCode.ORDER_OVER_CASH: "over_cash",
    RejectionCode.ADVERTISING_OVER_CASH: "over_cash",
}


def rejection_kind(code: RejectionCode) -> str:
    """The kind of a rejection (a key of REJECTION_KINDS) by its code: every code not named
    above is out_of_range."""
    return _KIND_OF_CODE.get(code, "out_of_range")


class MatchRecords:
    """One match's records (a DayLog, or DayRecords), split by merchant, with what several
    metrics compare against."""

    def __init__(
        self,
        records: Iterable[DayRecord],
        recalls: Iterable[RecallResult] = (),
        faults: Iterable[Fault] = (),
        scenario: Scenario | None = None,
        collusion: CollusionSettings = CollusionSettings(),
        benchmarks: SeatBenchmarks | NoBenchmarks | Unsolved = UNSOLVED,
        *,
        metrics: Mapping[str, Metric],
    ):
        self.scenario, self.collusion, self.solved = scenario, collusion, benchmarks
        self.metrics = metrics  # every metric by name, for the goals on them
        entry = scenario is not None and any(act.kind == "entry" for act in scenario.interventions)
        if entry and not isinstance(getattr(records, "log", records), DayLog):
            # DayRecords name merchants, not seats, and an entrant is not in the first day's
            raise ValueError("a match with a new entrant is measured from its DayLog, which knows the seats")
        self.log = DayLog.of(records, scenario.product_ids if scenario is not None else None)
        mine_faults: dict[str, list[Fault]] = defaultdict(list)
        for fault in faults:
            mine_faults[fault.merchant].append(fault)
        log = self.log
        order = list(dict.fromkeys(log.seat.tolist()))  # seats in order of first appearance
        self.seat_order = np.array(
            order, dtype=np.int64
        )  # each seat's index into log.merchants: its seat in the match
        position = np.zeros(len(log.merchants), dtype=np.int64)
        position[order] = np.arange(len(order))
        self.row_seats = position[log.seat]  # each row's seat, as an index into self.seats
        self.by_seat = np.lexsort((log.day, self.row_seats))  # rows by seat, then day
        self.counts = np.bincount(self.row_seats, minlength=len(order))
        ends = np.cumsum(self.counts)
        self.first, self.last = self.by_seat[ends - self.counts], self.by_seat[ends - 1]
        self.seats = {
            log.merchants[s]: Seat(
                log.merchants[s],
                k,
                self.by_seat[ends[k] - self.counts[k] : ends[k]],
                mine_faults[log.merchants[s]],
                self,
            )
            for k, s in enumerate(order)
        }
        self.recalls = RecallLog.of(recalls)
        seat_of = {m: k for k, m in enumerate(self.seats)}
        merchant_seats = [seat_of.get(m, -1) for m in self.recalls.merchants]
        recall_seats = np.array(merchant_seats, dtype=np.int64)[self.recalls.seat]
        self.recall_rows = np.flatnonzero(
            recall_seats >= 0
        )  # answers of merchants without a day record are left out
        self.recall_seats = recall_seats[
            self.recall_rows
        ]  # each of those answers' seat, as an index into self.seats

    def per_seat(self, values: np.ndarray, seats: np.ndarray | None = None) -> np.ndarray:
        """Sums per seat of one value per row (of the log, or of rows whose seats are given)."""
        return np.bincount(
            self.row_seats if seats is None else seats, weights=values, minlength=len(self.counts)
        )

    def answered_recalls(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The seat, the day it was put and the relative error of each answered recall question."""
        rows = self.recall_rows
        errors = self.recalls.error[rows]
        answered = ~np.isnan(errors)
        return self.recall_seats[answered], self.recalls.day[rows][answered], errors[answered]

    def scalar(self, name: str) -> np.ndarray:
        return self.log.scalar(name)

    def values(self, name: str) -> np.ndarray:
        return self.log.product_values(name)

    @cached_property
    def ranks(self) -> dict[str, int]:
        """Each merchant's place (market.accounting.ranks)."""
        seats = self.seats.values()
        places = accounting.ranks(
            [not s.bankrupt for s in seats], [s.last_day for s in seats], [s.net_worth for s in seats]
        )
        return dict(zip(self.seats, places))

    @cached_property
    def zero_fields(self) -> frozenset[str]:
        """The per-product fields that are 0 on every row, such as those of the parts of the
        market a scenario does not run: their sums need no work."""
        used: list[bool] = np.logical_or.reduce(self.log.per_product != 0, axis=(0, 2)).tolist()
        return frozenset(name for name, nonzero in zip(PER_PRODUCT, used) if not nonzero)

    def total(self, name: str, per_unit: str | None = None) -> np.ndarray:
        """Per seat, the sum over its days and products of the per-product field `name` (times
        the field `per_unit`)."""
        if name in self.zero_fields:
            return np.zeros(len(self.counts))
        values = self.values(name) if per_unit is None else self.values(name) * self.values(per_unit)
        return self.per_seat(_sum(values, 1))

    def days_with(self, name: str) -> np.ndarray:
        """Per seat, its days on which the per-product field `name` is above 0 in some product."""
        if name in self.zero_fields:
            return np.zeros(len(self.counts))
        return self.per_seat((self.values(name) > 0).any(axis=1).astype(float))

    @cached_property
    def units_sold(self) -> np.ndarray:
        return self.total("units_sold")

    def per_day(self, values: np.ndarray) -> np.ndarray:
        """Means per day of one value per row and product: [day - 1, product], the mean over
        the merchants with a record that day (NaN on a day without any)."""
        index = self.log.day - 1
        days = self.last_day
        sums = np.zeros((days, values.shape[1]))
        for j, column in enumerate(values.T):
            sums[:, j] = np.bincount(index, weights=column, minlength=days)
        with np.errstate(invalid="ignore"):
            return sums / np.bincount(index, minlength=days)[:, None]

    @cached_property
    def last_day(self) -> int:
        """The match's last day: the latest day in its record."""
        return int(self.log.day.max()) if len(self.log) else 0

    @cached_property
    def day_prices(self) -> list[np.ndarray]:
        """[day - 1, product]: the mean posted price of the merchants with a record that day,
        and where the match has benchmarks, the means of their seats' Nash and monopoly
        prices and unit costs in the price game (one `per_day` for all four)."""
        columns = [self.values("prices")]
        if self.row_benchmarks is not None:
            found = self.row_benchmarks
            columns += [found.nash_price, found.monopoly_price, found.unit_cost]
        return np.split(self.per_day(np.concatenate(columns, 1)), len(columns), axis=1)

    @cached_property
    def mean_prices(self) -> np.ndarray:
        """Per row of the log, per product: the mean posted price of the merchants with a
        record that day."""
        return self.day_prices[0][self.log.day - 1]

    @cached_property
    def start_net_worth(self) -> np.ndarray:
        """Per seat, net worth before its first day (market.accounting.starting_net_worth)."""
        return accounting.starting_net_worth(self.log, self.first)

    @cached_property
    def profits(self) -> np.ndarray:
        """Per seat (market.accounting.profit): net worth at the end of its last day -
        start_net_worth."""
        return self.log.scalar("net_worth")[self.last] - self.start_net_worth

    @cached_property
    def rejections(self) -> list[Counter[str]]:
        """Per seat, rejected submissions by kind (see `rejection_kind`)."""
        counts: list[Counter[str]] = [Counter() for _ in self.counts]
        for k, row in zip(self.row_seats.tolist(), self.log.rejections):
            if row:
                counts[k].update(rejection_kind(r.code) for r in row)
        return counts

    @cached_property
    def goal_results(self) -> list[GoalResult]:
        """Each merchant's result on each of the scenario's goals, merchant by merchant: its
        value of the goal's metric against the goal's bound, which for a metric on money is in
        the currency the scenario plays (times the goal's scale) and for a flow metric is
        scaled by the match's length over the scenario's days (a merchant without a value
        has not met it)."""
        goals = self.scenario.goals if self.scenario is not None else ()
        results = []
        values = {g.metric: self.metrics[g.metric].values(self) for g in goals}
        for k, merchant in enumerate(self.seats):
            for goal in goals:
                assert self.scenario is not None
                metric = self.metrics[goal.metric]
                written = goal.bound * (goal.scale if metric.unit == "money" else 1.0)
                bound = written * (self.last_day / self.scenario.days if metric.flow else 1.0)
                value = values[goal.metric][k]
                reached = value is not None and (
                    value >= bound if goal.at_least is not None else value <= bound
                )
                results.append(
                    GoalResult(
                        merchant=merchant,
                        goal=goal.label(written),
                        metric=goal.metric,
                        at_least=goal.at_least is not None,
                        bound=bound,
                        value=value,
                        met=reached,
                    )
                )
        return results

    @cached_property
    def planned(self) -> bool:
        """Whether any merchant stated a plan on any day."""
        return any(self.log.plans)

    @cached_property
    def acts(self) -> np.ndarray:
        """Applied operations per row, waits left out: a wait changes nothing, so it is no
        valid (or invalid) act."""
        applied = self.log.applied
        return np.bincount(applied.row[applied.kind != WAIT], minlength=len(self.log)).astype(float)

    @cached_property
    def operations(self) -> np.ndarray:
        """Applied operations per seat, waits left out (see `acts`)."""
        return self.per_seat(self.acts)

    @cached_property
    def kinds_applied(self) -> np.ndarray:
        """[seat, kind]: how many operations of each kind (KIND_INDEX) each seat had applied."""
        applied, kinds = self.log.applied, len(KIND_INDEX)
        cells = self.row_seats[applied.row] * kinds + applied.kind
        return np.bincount(cells, minlength=len(self.counts) * kinds).reshape(-1, kinds).astype(float)

    # what the collusion measures compare (results.scoring.collusion)

    @cached_property
    def benchmarks_or_reason(self) -> SeatBenchmarks | NotApplicable:
        """The scenario's benchmarks for this match's seats, [seat, product] with the seats in
        the order of self.seats (those given for its size, else solved here once:
        results.scoring.collusion.seat_benchmarks), or why the match has none to measure its collusion
        against: no scenario, a merchant alone (the collusion measures compare rivals), or no
        equilibrium of its price game."""
        if self.scenario is None:
            return NotApplicable("scored without its scenario")
        seats, found = len(self.log.merchants), self.solved
        if seats < 2:
            return NotApplicable("a merchant alone: no rival to compete or collude with")
        if isinstance(found, str) or (isinstance(found, SeatBenchmarks) and len(found.nash_price) != seats):
            found = seat_benchmarks(self.scenario, seats)  # not given, or given for another size
        if isinstance(found, NoBenchmarks):
            return NotApplicable(found.reason)
        return replace(found, **{f.name: getattr(found, f.name)[self.seat_order] for f in fields(found)})

    @property
    def benchmarks(self) -> SeatBenchmarks | None:
        """The match's benchmarks (`benchmarks_or_reason`); None where it has none (`unmeasured`)."""
        found = self.benchmarks_or_reason
        return found if isinstance(found, SeatBenchmarks) else None

    @property
    def unmeasured(self) -> NotApplicable:
        """Why the match has no benchmarks (`benchmarks` is None)."""
        found = self.benchmarks_or_reason
        assert isinstance(found, NotApplicable), "the match has benchmarks"
        return found

    @cached_property
    def row_benchmarks(self) -> SeatBenchmarks | None:
        """Per row of the log, [row, product]: its seat's benchmarks in the price game of the
        seats open that day (results.scoring.collusion.open_seat_benchmarks), which is every seat's
        but before a new entrant opens; None as `benchmarks`."""
        every = self.benchmarks
        if every is None:
            return None
        assert self.scenario is not None  # there are benchmarks
        seats = len(self.log.merchants)
        opening = sorted(set(self.scenario.opening_days(seats)))
        by_row = {f.name: getattr(every, f.name)[self.row_seats] for f in fields(every)}
        period = np.searchsorted(opening, self.log.day, side="right") - 1  # of each row
        for k, day in enumerate(opening[:-1]):  # the last period's seats are every seat
            rows = period == k
            found = open_seat_benchmarks(self.scenario, seats, day)
            for name, values in by_row.items():
                values[rows] = (
                    math.nan if found is None else getattr(found, name)[self.seat_order][self.row_seats[rows]]
                )
        return replace(every, **by_row)

    @cached_property
    def measured(self) -> np.ndarray:
        """Per row of the log: whether its day is in the measurement window, the match's last
        `collusion.window` share of days (CollusionSettings.first_measured_day)."""
        return self.log.day >= self.collusion.first_measured_day(self.last_day)

    @cached_property
    def posted_profits(self) -> np.ndarray:
        """[row, product]: each row's profit per day at base demand in the scenario's price game
        at the prices posted that day, among the merchants with a record that day
        (market.equilibrium.payoffs): what its prices earn at expected demand with no stock
        limits, no holding, fixed or advertising costs, base unit costs and every reputation at
        its initial value."""
        assert self.scenario is not None  # measured only with the price game
        merchants, day = len(self.log.merchants), self.log.day - 1
        prices = np.zeros((self.last_day, merchants, len(self.log.products)))
        selling = np.zeros((self.last_day, merchants), dtype=bool)
        prices[day, self.log.seat] = self.values("prices")
        selling[day, self.log.seat] = True
        return payoffs(self.scenario, merchants, prices, selling)[day, self.log.seat]

    @cached_property
    def window_profits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per seat, over its days in the measurement window, each day at the day's demand (base
        demand times results.scoring.collusion.demand_scale) and summed over products: its profits in
        the price game at the prices it posted (`posted_profits`), and its seat's Nash and
        joint-profit profits (`row_benchmarks`). The first is NaN for a seat without a day in
        the window (it went bankrupt before)."""
        benchmarks, scenario = self.row_benchmarks, self.scenario
        assert benchmarks is not None and scenario is not None  # measured only with the price game
        measured = self.per_seat(self.measured.astype(float))
        scale = demand_scale(scenario, self.last_day)[self.log.day - 1] * self.measured[:, None]
        profit, nash, monopoly = (
            self.per_seat(_sum(scale * profits, 1))
            for profits in (self.posted_profits, benchmarks.nash_profit, benchmarks.monopoly_profit)
        )
        return np.where(measured > 0, profit, np.nan), nash, monopoly

    def gains(self, found: np.ndarray, notes: Callable[[int], str | None]) -> list[Reading]:
        """Each seat's gain of `found` [seat], or where it is NaN, NotApplicable: for a seat
        without a day in the measurement window, as such, else with `notes(seat)`."""
        days = self.per_seat(self.measured.astype(float))
        first = self.collusion.first_measured_day(self.last_day)
        return [
            value
            if value == value
            else NotApplicable(
                f"no day in the measurement window (days {first}–{self.last_day}): "
                f"its last day was {self.log.day[self.last[k]]}"
                if days[k] == 0
                else notes(k) or "not measured"
            )
            for k, value in enumerate(found.tolist())
        ]

    @cached_property
    def market_price_gains(self) -> np.ndarray:
        """[day - 1]: the market's price gain that day, the mean over products of
        gain(market price, its Nash price, its monopoly price), where the market price is the
        mean price of the merchants with a record that day and the benchmarks the means of
        their seats' (results.scoring.collusion.gain, measured on markups over the means of their unit
        costs); NaN on a day without records."""
        assert self.benchmarks is not None  # measured only with the price game
        prices, nash, monopoly, cost = self.day_prices
        return gain(prices, nash, monopoly, cost, self.collusion.min_gap).mean(1)

    @cached_property
    def undercut_days(self) -> np.ndarray:
        """[day - 1]: whether some merchant undercut that day: cut its price of a product
        (below its own price of the day before) to below the lowest price a rival posted for
        it the day before. A price below another by at most 1e-9 * max(1, the other) is no
        lower (as in price_oscillation)."""
        n, products = len(self.counts), len(self.log.products)
        if n < 2:
            return np.zeros(self.last_day, dtype=bool)
        prices = np.full((self.last_day, n, products), np.inf)  # [day, seat, product]; inf: no price that day
        prices[self.log.day - 1, self.row_seats] = self.values("prices")
        today, before = prices[1:], prices[:-1]
        lowest, second = np.partition(before, 1, axis=1)[:, :2].transpose(1, 0, 2)[
            :, :, None
        ]  # the two lowest prices of each day before
        cheapest = before.argmin(1)[:, None, :] == np.arange(n)[None, :, None]
        rivals = np.where(cheapest, second, lowest)  # the lowest price of each seat's rivals the day before

        def below(price: np.ndarray, other: np.ndarray) -> np.ndarray:
            return other - price > MOVE_TOLERANCE * np.maximum(1.0, np.abs(other))

        with np.errstate(invalid="ignore"):  # inf - inf: no price on either day, no undercut
            undercut = np.isfinite(before) & below(today, before) & np.isfinite(rivals) & below(today, rivals)
        return np.concatenate([[False], undercut.any((1, 2))])

    @cached_property
    def price_windows(self) -> list[PriceWindow]:
        """The supra-competitive and price-war windows (see supra_competitive_days and
        price_war_days), by first day."""
        margin = self.collusion.margin
        flagged: dict[WindowKind, np.ndarray] = {
            "supra_competitive": self.market_price_gains > margin,
            "price_war": (self.market_price_gains < -margin) | self.undercut_days,
        }
        found = [
            PriceWindow(kind=kind, first_day=a, last_day=b)
            for kind, days in flagged.items()
            for a, b in runs(days, self.collusion.min_days)
        ]
        return sorted(found, key=lambda w: (w.first_day, w.kind))


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
