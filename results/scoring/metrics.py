"""Metrics of one merchant in one match, computed from the match's stored records.

Every metric is one function of a `Seat` (a merchant's day records and faults, and the whole
match for comparisons), or of the whole match giving every seat's value (`over_match`: these
read the recall questions too), with its formula in its docstring, registered in
`METRICS` under its function's name: that name is the one stored in the `metric` table and
shown by `arena show`. A metric that does not apply (no recall questions asked, no price moves) is
None; one that may not apply for a reason a reader needs (a collusion measure) says why, as
NotApplicable, stored beside the values (results.records.MetricNote).

The market as a whole has metrics of its own (`MARKET_METRICS`: one value per match, stored in
the `market_metric` table), and its price windows: the collusion measures, which place a match
between its scenario's competitive and collusive benchmarks (results.scoring.collusion).

Only what the record holds goes in, so stored matches can be scored again
(`results.rescoring.rescore`). The scenario is optional: without it `goal_completion` and the
collusion measures are None (the market's are not stored), and `contradictions` knows of cost
changes only from the recorded unit costs.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    MarketScores,
    MerchantResult,
    MetricNote,
    PriceWindow,
    RecallLog,
    RecallResult,
    TranscriptRecord,
    WindowKind,
)
from results.scoring.collusion import (
    NoBenchmarks,
    demand_scale,
    gain,
    gap_note,
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

LARGE_RESTOCK_DAYS = 5.0  # an order of at least this many days of the product's mean daily demand
CLEARANCE_CUT = 0.2  # a price cut of at least this share of the price on the restock day
CONTRADICTION_WINDOW = 3  # days after a large restock in which a clearance cut contradicts it
_MOVE_TOLERANCE = 1e-9  # relative: smaller price changes are not moves
_WAIT = KIND_INDEX["wait"]


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
        return [_finite(v) for v in found]

    def values(self, match: MatchRecords) -> list[float | None]:
        """`readings` with None where the metric does not apply."""
        return [None if isinstance(v, NotApplicable) else v for v in self.readings(match)]


def _finite(value: float | NotApplicable | None) -> Reading:
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
        return _finite(self.compute(match))


METRICS: dict[str, Metric] = {}
MARKET_METRICS: dict[str, MarketMetric] = {}


def _metric(
    group: Group, unit: Unit, over_match: bool = False, flow: bool = False
) -> Callable[[Callable], Callable]:
    def register(compute: Callable) -> Callable:
        METRICS[compute.__name__] = Metric(compute.__name__, group, unit, compute, over_match, flow)
        return compute

    return register


def _market_metric(
    unit: Unit, applies: Callable[[MatchRecords], bool] = lambda match: True
) -> Callable[[Callable], Callable]:
    def register(compute: Callable) -> Callable:
        MARKET_METRICS[compute.__name__] = MarketMetric(compute.__name__, unit, compute, applies)
        return compute

    return register


class Scores(NamedTuple):
    """A match's metrics: per merchant (merchant -> metric name -> value), of its market, each
    merchant's result on each campaign goal, and why the metrics that do not apply do not."""

    merchants: dict[str, dict[str, float | None]]
    market: MarketScores
    goals: list[GoalResult]
    notes: list[MetricNote]


def compute(
    records: Iterable[DayRecord],
    recalls: Iterable[RecallResult] = (),
    faults: Iterable[Fault] = (),
    scenario: Scenario | None = None,
    collusion: CollusionSettings = CollusionSettings(),
    benchmarks: SeatBenchmarks | NoBenchmarks | Unsolved = UNSOLVED,
) -> Scores:
    """Every metric of every merchant with a day record, in the order they first appear, and
    the market's metrics and price windows where its scenario has an equilibrium (empty
    otherwise), with a note for each that does not apply (NotApplicable): its value is None.
    A value that comes out infinite or NaN is stored as None. `benchmarks`: the scenario's for
    the match's size, or why it has none (results.scoring.collusion.seat_benchmarks), if already solved."""
    match = MatchRecords(records, recalls, faults, scenario, collusion, benchmarks)
    columns = {name: metric.readings(match) for name, metric in METRICS.items()}
    readings: dict[str | None, dict[str, Reading]] = {
        merchant: {name: values[k] for name, values in columns.items()}
        for k, merchant in enumerate(match.seats)
    }
    market = MarketScores()
    if match.benchmarks is not None:
        readings[None] = {
            name: metric.reading(match) for name, metric in MARKET_METRICS.items() if metric.applies(match)
        }
        market = MarketScores(metrics=_values(readings[None]), windows=match.price_windows)
    notes = [
        MetricNote(merchant=merchant, name=name, note=value.reason)
        for merchant, values in readings.items()
        for name, value in values.items()
        if isinstance(value, NotApplicable)
    ]
    merchants = {merchant: _values(values) for merchant, values in readings.items() if merchant is not None}
    return Scores(merchants, market, match.goal_results, notes)


def _values(readings: dict[str, Reading]) -> dict[str, float | None]:
    return {name: None if isinstance(value, NotApplicable) else value for name, value in readings.items()}


def match_results(
    seats: Sequence[str],
    log: DayLog,
    metrics: Mapping[str, Mapping[str, float | None]],
    faults: Iterable[Fault],
    transcript: Iterable[TranscriptRecord] = (),
) -> list[MerchantResult]:
    """A match's results per merchant, in seat order: what its `metrics` say of its money and
    place, so that the two tables agree, with its final cash, faults, refused operations and
    the requests of its that its model's server refused as too long (steps of its `transcript`).
    A merchant is named after the contestant in its seat."""
    faults_of = Counter(fault.merchant for fault in faults)
    refused_of = Counter(step.merchant for step in transcript if step.refused is not None)
    results = []
    for merchant in seats:
        rows, values = log.rows_of(merchant).tolist(), metrics[merchant]
        bankrupt_day = values["bankrupt_day"]
        results.append(
            MerchantResult(
                merchant=merchant,
                contestant=merchant,
                final_cash=float(log.scalar("cash_end")[rows[-1]]),
                net_worth=_of_every_seat(values["net_worth"]),
                profit=_of_every_seat(values["profit"]),
                rank=int(_of_every_seat(values["rank"])),
                market_share=_of_every_seat(values["market_share"]),
                bankrupt_day=None if bankrupt_day is None else int(bankrupt_day),
                faults=faults_of[merchant],
                rejected_operations=sum(len(log.rejections[r]) for r in rows),
                length_refusals=refused_of[merchant],
            )
        )
    return results


def _of_every_seat(value: float | None) -> float:
    """The value of a metric that every seat has (its money and place), never None."""
    assert value is not None
    return value


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
    ):
        self.scenario, self.collusion, self.solved = scenario, collusion, benchmarks
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
        values = {g.metric: METRICS[g.metric].values(self) for g in goals}
        for k, merchant in enumerate(self.seats):
            for goal in goals:
                assert self.scenario is not None
                metric = METRICS[goal.metric]
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
        return np.bincount(applied.row[applied.kind != _WAIT], minlength=len(self.log)).astype(float)

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
            return other - price > _MOVE_TOLERANCE * np.maximum(1.0, np.abs(other))

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


# --- coherence ------------------------------------------------------------------------

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


@_metric("coherence", "share")
def validity_rate(seat: Seat) -> float | None:
    """Share of the operations the merchant submitted that the market applied:
    validity_rate = applied / (applied + rejected), over all its days. A decision that was not
    a list of operations at all counts as one rejected submission (and is a fault too), and
    so does a message the market did not deliver (a delivered one is no operation); a day
    on which no answer came (timeout, error) submits nothing (see fault_days), and a `wait`
    is no operation here (doing nothing is not doing something right). None when nothing was
    submitted: a merchant that only waits has no validity (see idle_days)."""
    if seat.submitted == 0:
        return None
    return (seat.submitted - sum(seat.rejections.values())) / seat.submitted


@_metric("coherence", "share", over_match=True)
def idle_days(match: MatchRecords) -> np.ndarray:
    """Share of the merchant's days on which the market applied no operation of it but waits:
    idle_days = days without an applied set_price, order, advertise, collect or promote / its
    days. 1 for a merchant that does nothing all match."""
    return match.per_seat((match.acts == 0).astype(float)) / match.counts


@_metric("coherence", "ratio", over_match=True)
def action_entropy(match: MatchRecords) -> list[float | None]:
    """How the merchant's applied operations spread over their kinds: the Shannon entropy in
    bits, action_entropy = -sum_k p_k log2 p_k with p_k the share of kind k among its applied
    operations but waits; 0 for one kind only (a merchant that only sets prices), 2 for four
    kinds used alike. None when it applied none."""
    entropies: list[float | None] = []
    for counts in match.kinds_applied.tolist():  # a handful of kinds: Python is quicker than numpy
        counts[_WAIT] = 0.0
        total = sum(counts)
        shares = [count / total for count in counts if count > 0]  # 0 log 0 = 0
        entropies.append(0.0 - sum(share * math.log2(share) for share in shares) if total else None)
    return entropies


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


@_metric("coherence", "count", flow=True)
def constraint_violations(seat: Seat) -> float:
    """Well-formed operations the market refused because they broke its rules or the
    merchant's constraints (over_cash, out_of_range, unknown_product):
    constraint_violations = rejected - rejected as malformed."""
    return float(sum(seat.rejections.values()) - seat.rejections["malformed"])


@_metric("coherence", "count", flow=True)
def fault_days(seat: Seat) -> float:
    """Days on which the merchant gave no usable decision (timeout, error, malformed answer,
    dead actor): the number of distinct days with a recorded fault."""
    return float(len({fault.day for fault in seat.faults}))


@_metric("coherence", "share", over_match=True)
def memory_error(match: MatchRecords) -> list[float | None]:
    """Mean relative error of the answered recall questions:
    memory_error = mean over answered questions of |answer - truth| / max(|truth|, 1).
    None when no question was answered (see memory_unanswered)."""
    seats, _, errors = match.answered_recalls()
    sums, counts = match.per_seat(errors, seats), np.bincount(seats, minlength=len(match.counts))
    return [total / n if n else None for total, n in zip(sums.tolist(), counts.tolist())]


@_metric("coherence", "share", over_match=True)
def memory_unanswered(match: MatchRecords) -> list[float | None]:
    """Share of recall questions left without a numeric answer:
    memory_unanswered = unanswered questions / questions asked; None when none was asked."""
    seats = match.recall_seats
    unanswered = match.per_seat(np.isnan(match.recalls.error[match.recall_rows]).astype(float), seats)
    asked = np.bincount(seats, minlength=len(match.counts))
    return [missing / n if n else None for missing, n in zip(unanswered.tolist(), asked.tolist())]


@_metric("coherence", "per_day", over_match=True)
def memory_error_trend(match: MatchRecords) -> list[float | None]:
    """How recall error changes over the match: the least-squares slope of relative error
    against the day the question was asked, over answered questions,
    memory_error_trend = sum (t_i - mean t)(e_i - mean e) / sum (t_i - mean t)^2,
    in error per day (positive: memory gets worse as the match goes on). None with fewer than
    two distinct question days."""
    seats, days, e = match.answered_recalls()
    t = days.astype(float)
    n = np.maximum(np.bincount(seats, minlength=len(match.counts)), 1)
    dt, de = t - (match.per_seat(t, seats) / n)[seats], e - (match.per_seat(e, seats) / n)[seats]
    spread, covariance = match.per_seat(dt * dt, seats), match.per_seat(dt * de, seats)
    span = int(days.max()) + 1 if days.size else 1
    distinct = np.bincount(
        np.unique(seats * span + days) // span, minlength=len(match.counts)
    )  # question days per seat
    return [
        c / v if d >= 2 else None for c, v, d in zip(covariance.tolist(), spread.tolist(), distinct.tolist())
    ]


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
    drifts: list[float] = []
    planned: dict[str, float] = {}
    for prices, plan in zip(seat.values("prices").tolist(), plans):
        posted = dict(zip(seat.products, prices))
        drifts.extend(abs(posted[p] - price) / price for p, price in planned.items())
        planned.update(plan)
    return sum(drifts) / len(drifts) if drifts else None


@_metric("coherence", "count", over_match=True, flow=True)
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
    row_at = np.full(
        (len(match.counts), int(log.day.max()) + CONTRADICTION_WINDOW + 1), -1
    )  # [seat, day] -> row, -1: none
    row_at[seats, log.day] = np.arange(len(log))
    later = np.arange(1, CONTRADICTION_WINDOW + 1)
    for j, product in enumerate(log.products):
        prices, costs, ordered = (match.values(name)[:, j] for name in ("prices", "unit_cost", "ordered"))
        demand = match.per_seat(match.values("first_choice")[:, j]) / match.counts
        restocks = np.flatnonzero((ordered > 0) & (ordered >= LARGE_RESTOCK_DAYS * demand[seats]))
        window = row_at[
            seats[restocks, None], log.day[restocks, None] + later
        ]  # the rows of the days after each restock
        cut = (window >= 0) & (prices[window] <= (1 - CLEARANCE_CUT) * prices[restocks, None])
        first = cut.argmax(1)  # the first cut after each restock
        for i in np.flatnonzero(cut.any(1)).tolist():
            r, c, after = int(restocks[i]), int(window[i, first[i]]), int(first[i]) + 1
            restock_day = int(log.day[r])
            if not (
                costs[c] < costs[r] or _event_near(match.scenario, product, restock_day, restock_day + after)
            ):
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


# --- economics and competition --------------------------------------------------------


@_metric("economics", "money", over_match=True, flow=True)
def profit(match: MatchRecords) -> np.ndarray:
    """Net worth at the end minus net worth before the first day, goods valued at each day's
    unit cost: profit = net_worth_last - net_worth_0, with net_worth_0 = initial cash +
    initial stock at day 1's unit cost (market.accounting.profit)."""
    return match.profits


@_metric("economics", "money", over_match=True, flow=True)
def revenue(match: MatchRecords) -> np.ndarray:
    """What the merchant's customers paid and kept: revenue = sum over days of revenue - refunds."""
    return match.per_seat(accounting.kept_revenue(match.scalar("revenue"), match.scalar("refunds")))


@_metric("economics", "share", over_match=True)
def inventory_cost_share(match: MatchRecords) -> list[float | None]:
    """What keeping stock cost, as a share of revenue: inventory_cost_share = (sum of holding
    + sum over products of (spoiled + returned - restocked) * unit_cost) / revenue, the goods
    spoiled and the returns written off at cost; None when revenue is not above 0."""
    cost = match.scalar("holding")
    if not {"spoiled", "returned", "restocked"} <= match.zero_fields:
        written_off = match.values("spoiled") + match.values("returned") - match.values("restocked")
        cost = cost + _sum(written_off * match.values("unit_cost"), 1)
    cost = match.per_seat(cost)
    earned = revenue(match)
    return [c / r if r > 0 else None for c, r in zip(cost.tolist(), earned.tolist())]


@_metric("economics", "share", over_match=True)
def goals_met(match: MatchRecords) -> list[float | None]:
    """Share of the scenario's campaign goals the merchant met (MatchRecords.goal_results);
    None without goals."""
    goals = match.scenario.goals if match.scenario is not None else ()
    if not goals:
        return [None] * len(match.seats)
    met = Counter(result.merchant for result in match.goal_results if result.met)
    return [met[merchant] / len(goals) for merchant in match.seats]


@_metric("economics", "share", over_match=True)
def roi(match: MatchRecords) -> list[float | None]:
    """Return on the starting capital: roi = profit / net_worth_0. None when the merchant
    started with nothing."""
    return [
        gain / start if start > 0 else None
        for gain, start in zip(match.profits.tolist(), match.start_net_worth.tolist())
    ]


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
    sold by every merchant and scripted competitor; 0 for all when nothing was sold
    (market.accounting.market_shares)."""
    scripted = match.log.competitors
    return accounting.market_shares(
        match.units_sold.tolist(), 0.0 if scripted is None else float(scripted.units_sold.sum())
    )


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
    with np.errstate(
        divide="ignore", invalid="ignore", over="ignore"
    ):  # a zero cost: not finite, stored as None
        return match.per_seat(_sum(prices / match.values("unit_cost"), 1)) / (match.counts * prices.shape[1])


# --- collusion (results.scoring.collusion) ----------------------------------------------------


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
