"""The market: one or many matches of one scenario side by side in one set of arrays, a row
per merchant of every match. Each match's customers choose among its own merchants with its
own generator, so a match plays exactly as alone; a numpy operation costs the same for 16
rows as for 500, so a day of many small matches costs little more than a day of one.

One day: goods ordered earlier arrive and credit sales fall due; every decision (a model's
Decision, the rule merchants' ArrayDecisions, an RL action) is compiled into one table of
operation columns and applied at once: prices, then the k-th spending operation (collect,
order, advertise) of every merchant for k = 1, 2, ..., each checked against the cash the
earlier ones left, and each refused one given a code and a reason; customers choose
(market/demand.py), sales capped by stock; costs are paid, reputation moves, and a merchant
with cash below zero goes bankrupt. Each match's days go into its DayLogBuilder as columns.
A new entrant (an intervention of kind entry) is absent, closed and out of play, until the
morning of its day, when it opens with the starting books.

Where merchants talk (`talk`), a decision's message is delivered with the day's record and
shown to the match's other merchants in the next day's observations; elsewhere messages are
not even looked at.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np

from market import accounting, elementary
from market.competitors import Competitors
from market.daylog import (
    PER_PRODUCT,
    SCALARS,
    DayLogBuilder,
    Operations,
    RecordMaker,
)
from market.demand import allocate_markets, allocate_segments, demand_factor, utilities
from market.operations import (
    ADVERTISE,
    COLLECT,
    NO_OPERATIONS,
    ORDER,
    PROMOTE,
    SET_PRICE,
    OperationRules,
    Submitted,
)
from market.scenario import Scenario, event_multiplier
from market.types import (
    ArrayDecisions,
    Board,
    DayRecord,
    EventNotice,
    MarketView,
    Observation,
    ParsedDecision,
    PlannedPrice,
    ProductState,
    PublicCompetitor,
    PublicMerchant,
    Rejection,
    RivalMessage,
    delivered,
    parse_decision,
)

T = TypeVar("T")


class Cleared(NamedTuple):
    """What the day's customers did (Market._clear_market), per row and product: the units
    they wanted (first choices) and bought, and of those bought, the units returned and the
    part of them back in stock."""

    wanted: np.ndarray
    sold: np.ndarray
    returned: np.ndarray
    restocked: np.ndarray


class Applied(NamedTuple):
    """What applying a day's operations did (Market._apply): the operations applied, and per
    row the units ordered and those of them in stock at once (orders without lead time that
    came on time), by product, the units due today that a supplier delivers late, what the
    orders from listed suppliers saved against the products' unit costs, the advertising
    spent and the receivables collected."""

    operations: Operations
    ordered: np.ndarray
    stocked: np.ndarray
    late: np.ndarray
    savings: np.ndarray
    advertising: np.ndarray
    collected: np.ndarray


class Market:
    def __init__(
        self,
        scenario: Scenario,
        rosters: Sequence[Sequence[str]],
        days: int | None = None,
        talk: bool = False,
    ):
        """`rosters`: each match's merchants, as many in every match, in seat order (as many
        as the scenario's seats, if it lists them). `talk`: merchants may send one another
        messages (Decision.message)."""
        if (
            not rosters
            or not rosters[0]
            or any(len(set(r)) != len(r) or len(r) != len(rosters[0]) for r in rosters)
        ):
            raise ValueError("merchants must be unique names, at least one, as many in every match")
        scenario.check_merchants(len(rosters[0]))
        self.rosters = [tuple(r) for r in rosters]
        self.seats = len(rosters[0])
        self.scenario = scenario
        self.days = days or scenario.days
        self.talk = talk
        products = scenario.products
        matches = len(self.rosters)
        self._unit_cost0 = np.tile(
            scenario.seat_values("unit_cost", self.seats), (matches, 1)
        )  # [row, product]: seats may differ
        self._reference = np.array([p.reference_price for p in products])
        self._quality = np.tile(scenario.seat_values("quality", self.seats), (matches, 1))
        self._holding = np.array([p.holding_cost for p in products])
        self.rules = OperationRules(scenario)
        self._ceiling, self._promotions = self.rules.ceiling, scenario.promotions
        self._lead = np.array([p.lead_time for p in products])
        # [product, k]: supplier k's lead time, reliability and lateness (k = 0 the usual one,
        # always on time); its unit cost is the rules' (OperationRules.supply_cost)
        listed = 1 + max(len(p.suppliers) for p in products)
        self._supplier_names = scenario.supplier_names
        self._supply_lead = np.tile(self._lead[:, None], (1, listed))  # whole days
        self._reliability = np.ones((len(products), listed))
        self._late_days = np.zeros((len(products), listed), dtype=np.int64)
        for j, product in enumerate(products):
            for k, supplier in enumerate(product.suppliers, 1):
                self._supply_lead[j, k] = supplier.lead_time
                self._reliability[j, k] = supplier.reliability
                self._late_days[j, k] = supplier.late_days if supplier.reliability < 1 else 0
        self._unreliable = bool((self._reliability < 1).any())
        self._horizon = max(int((self._supply_lead + self._late_days).max()), 1)  # days an order may take
        self._shelf_life = np.array([p.shelf_life or 0 for p in products])
        self._resellable_share = np.array([p.returns_resellable for p in products])
        self._perishable = np.flatnonzero(self._shelf_life)  # the products that spoil
        self._product_ids = scenario.product_ids
        self._pid = self.rules.pid
        self._statics = [(p.id, p.lead_time, p.holding_cost) for p in products]
        self._names = [name for roster in self.rosters for name in roster]
        self.match_rows = [slice(b * self.seats, (b + 1) * self.seats) for b in range(len(self.rosters))]
        self._all_rows = np.arange(len(self._names))
        self._seats = np.arange(self.seats)
        self._opening = np.tile(scenario.opening_days(self.seats), matches)  # per row: the day it opens
        self._entrants = bool((self._opening > 1).any())
        self.competitors = Competitors(scenario)
        # each segment's way of choosing: the scenario's, with its own sensitivities
        self._segment_choices = [
            scenario.choice.model_copy(
                update={
                    name: own
                    for name, own in (
                        ("price_sensitivity", g.price_sensitivity),
                        ("promotion_response", g.promotion_response),
                    )
                    if own is not None
                }
            )
            for g in scenario.segments
        ]

    def reset(self, seeds: Sequence[Any]) -> None:
        """A new start, each match's customers drawn from a generator of its seed."""
        if len(seeds) != len(self.rosters):
            raise ValueError(f"{len(seeds)} seeds for {len(self.rosters)} matches")
        self._rngs = [np.random.default_rng(s) for s in seeds]
        s, m, p = self.scenario, len(self.rosters) * self.seats, len(self.scenario.products)
        self.playing = self._opening <= 1  # per row: in its match today
        self.closed = ~self.playing  # per row: not selling: gone bankrupt, or an entrant not yet open
        self.day = 1
        self.cash, self.reputation, self.due = np.zeros(m), np.zeros(m), np.zeros(m)
        self.inventory, self.prices, self.units_sold = np.zeros((m, p)), np.zeros((m, p)), np.zeros((m, p))
        self.pipeline = np.zeros((m, p, self._horizon))  # [.., k]: arrives in k+1 days
        self.overdue = np.zeros((m, p, self._horizon))  # [.., k]: of it, promised for k+1 days earlier
        self.credit = np.zeros((m, max(s.finance.credit_days, 1)))  # [.., k]: due in k+1 days
        # [.., k]: units in stock that spoil at the end of the k-th day from today (0: tonight)
        self.batches = np.zeros((m, p, int(self._shelf_life.max())))
        self.satisfaction = np.zeros(m)
        # what the optional parts record on a day they do nothing: one array each, never written
        self._none_by_row, self._none_by_product = np.zeros(m), np.zeros((m, p))
        self.discount = np.zeros((m, p))  # of each row's latest promotion of each product
        self.discount_until = np.zeros((m, p), dtype=np.int64)  # and its last day
        self._start_books(self._all_rows)
        self.logs = [
            DayLogBuilder(roster, tuple(self._product_ids), self.competitors.names, self._supplier_names)
            for roster in self.rosters
        ]  # one per match
        # [match, competitor, product]: the scripted competitors' prices today, and units sold
        self.competitor_prices = self._competitor_prices(1)
        self.competitor_sold = np.zeros_like(self.competitor_prices)
        self._closing: tuple[np.ndarray, np.ndarray] | None = (
            None  # (unit costs, net worth) at the end of the last day
        )

    def _start_books(self, rows: np.ndarray) -> None:
        """The books of the merchants at `rows` as they open: the scenario's starting cash,
        stock, prices, reputation and satisfaction; nothing ordered, owed, sold or promoted."""
        s = self.scenario
        for books in (
            self.pipeline,
            self.overdue,
            self.credit,
            self.batches,
            self.due,
            self.units_sold,
            self.discount,
            self.discount_until,
        ):
            books[rows] = 0
        self.cash[rows] = s.finance.initial_cash
        self.inventory[rows] = [pr.initial_stock for pr in s.products]
        self.prices[rows] = [pr.start_price for pr in s.products]
        self.reputation[rows] = s.reputation.initial
        self.satisfaction[rows] = s.satisfaction.initial if s.satisfaction is not None else 0.0
        stocked = np.zeros_like(self.inventory)
        stocked[rows] = self.inventory[rows]
        self._receive(stocked)

    def _open_entrants(self) -> None:
        """The entrants whose day is today open (market.scenario.Intervention, kind entry)."""
        rows = np.flatnonzero(self._opening == self.day)
        if rows.size:
            self._start_books(rows)
            self.closed[rows], self.playing[rows] = False, True
            self._closing = None  # their net worth of last night is not theirs

    def _posted_by(self, day: int) -> np.ndarray:
        """Per row: whether it had posted a price by the morning of `day`: every merchant but a
        new entrant, absent or opening that day (the day-1 rows hold the start prices)."""
        return (self._opening == 1) | (self._opening < day)

    @property
    def in_play(self) -> bool:
        """Whether a day is left to play: some merchant plays today, or an entrant is still to
        open (its match goes on while every merchant before it has gone bankrupt)."""
        to_open = (self._opening > self.day) & (self._opening <= self.days)
        return bool(self.playing.any()) or (self._entrants and bool(to_open.any()))

    # --- what the merchants see -----------------------------------------------------

    def view(self) -> MarketView:
        """Every merchant's start of the day (rows of every match). It shares the market's
        arrays: read it before the day is played (`advance`)."""
        s, day = self.scenario, min(self.day, self.days)
        vis = s.visibility
        hidden = np.full_like(self.prices, math.nan)
        paid = self._offered(day - 1)  # what their customers paid
        if self._entrants:  # an entrant, absent or opening today, posted no price yesterday
            paid = np.where(self._posted_by(day)[:, None], paid, math.nan)
        board = Board(
            self.seats,
            paid if vis.rival_prices else hidden,
            self.reputation if vis.rival_reputation else np.full_like(self.reputation, math.nan),
            self.units_sold if vis.rival_sales else hidden,
            self.closed,
            self.competitor_prices if vis.rival_prices else np.full_like(self.competitor_prices, math.nan),
        )
        return MarketView(
            day,
            self.days,
            s.finance.fixed_daily_cost,
            self._unit_cost_today(day),
            self._notices(day),
            self._all_rows,
            self.cash,
            self.reputation,
            self.due
            + self.credit[
                :, 0
            ],  # credit[:, 0] falls due as the day starts (step 1), so it may be collected today
            _sum(self.credit[:, 1:], 1),
            self.prices,
            self.inventory,
            _sum(self.pipeline, 2),
            board,
            self.batches if self._perishable.size else None,
            None if self._promotions is None else (self.discount, self.discount_until),
            None if s.satisfaction is None else self.satisfaction,
        )

    def observations(self, view: MarketView, rows: list[int]) -> list[Observation]:
        """The Observations of the merchants at `rows` (playing today), read from today's `view`."""
        return ObservationMaker(self, view).observations(rows)

    def name(self, row: int) -> str:
        return self._names[row]

    # --- one day ----------------------------------------------------------------------

    def _notices(self, day: int) -> list[EventNotice]:
        """What the merchants are told on `day` of the scenario's events and of its
        regulator's price caps and forced prices (an act on some seats only is not told: every
        merchant sees one list)."""
        s = self.scenario
        return [
            EventNotice(
                name=e.name,
                kind=e.kind,
                product=e.product,
                start_day=e.start_day,
                end_day=e.end_day,
                multiplier=e.multiplier,
                shape=e.shape,
            )
            for e in s.events
            # a trend keeps its level after end_day: merchants keep being told of it
            if e.announced
            and e.start_day - e.announce_days_ahead <= day
            and (day <= e.end_day or e.shape == "trend")
        ] + [
            EventNotice(
                name=act.name,
                kind=act.kind,
                product=act.product,
                start_day=act.start_day,
                end_day=act.last_day,
                multiplier=1.0,
                price=act.price,
            )
            for act in s.interventions
            if act.announced
            and act.kind != "memory_reset"
            and act.seats is None
            and act.start_day - act.announce_days_ahead <= day <= act.last_day
        ]

    def advance(
        self,
        arrays: ArrayDecisions | None = None,
        rows: np.ndarray | None = None,
        decisions: Mapping[int, Any] | None = None,
        forced: Mapping[int, Callable[[np.ndarray], np.ndarray]] | None = None,
    ) -> np.ndarray:
        """Play one day with the decisions of the rows playing: the rule merchants' `arrays`
        for `rows` (ascending; default: every row) and `decisions`, by row, anything
        `parse_decision` accepts or a ParsedDecision; those of rows not playing are ignored.
        Returns every row's change in net worth.

        `forced`, by row: the prices the row posts today whatever it decided (a deviation
        probe), a function of the prices of its match's merchants once their operations are
        applied and the regulator has acted [seat, product] (a closed one's: inf), capped at
        the price ceiling or a price cap in force. Like any
        posted price it stands until the merchant posts another, as the merchant sees the
        next morning (its own price is the forced one)."""
        day, unit_cost = self.day, self._unit_cost_today(self.day)
        worth_start, cash_start = self._worth(unit_cost), self.cash.copy()
        arrived, late = self._deliver()
        orders = self._orders(arrays, rows, decisions or {})
        done = self._apply(orders.columns, unit_cost, orders.rejected)
        ordered, advertising = done.ordered, done.advertising
        if self._perishable.size or self.scenario.satisfaction is not None:
            came = arrived + done.stocked  # into stock today, on time
            self._receive(came)
        self._regulate(day)
        self._force_prices(forced or {})
        orders.add_unknown_products()
        said = self._messages(orders) if self.talk else None
        paid = _sum(ordered * unit_cost, 1)
        if self._supplier_names:
            paid = paid - done.savings
            late = late + done.late
        flows = self._trade(day, unit_cost, paid, advertising)
        if self.scenario.satisfaction is not None:
            self._update_satisfaction(flows, late, came)
        self.closed |= self.cash < 0
        worth_end = self.net_worth(unit_cost)
        self._closing = (unit_cost, worth_end)
        values = {
            **flows,
            "late": late,
            "satisfaction": self.satisfaction,
            "purchase_savings": done.savings,
            "collected": done.collected,
            "advertising": advertising,
            "cash_start": cash_start,
            "cash_end": self.cash,
            "receivables": self.due + _sum(self.credit, 1),
            "reputation": self.reputation,
            "net_worth": worth_end,
            "prices": self.prices,
            "arrived": arrived,
            "ordered": ordered,
            "inventory": self.inventory,
            "in_transit": _sum(self.pipeline, 2),
            "unit_cost": unit_cost,
        }
        self._record(day, values, done.operations, orders, said)
        self.day += 1
        if day >= self.days:
            self.playing[:] = False
        else:
            self.playing &= ~self.closed
            if self._entrants:
                self._open_entrants()
        if len(self.competitors):
            self.competitor_prices = self._competitor_prices(self.day)
        return worth_end - worth_start

    def _satisfaction_bonus(self) -> np.ndarray | float:
        """What each row's satisfaction adds to its customers' utility [row, 1]."""
        kept = self.scenario.satisfaction
        if kept is None or kept.demand_weight == 0:
            return 0.0
        return kept.demand_weight * (self.satisfaction[:, None] - kept.initial)

    def _update_satisfaction(self, flows: dict[str, np.ndarray], late: np.ndarray, came: np.ndarray) -> None:
        """The day's move of the satisfaction index (market.scenario.Satisfaction) of the rows
        still selling, from its stock-outs, returns and late deliveries (`came`: the units
        that arrived on time)."""
        kept = self.scenario.satisfaction
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
        moved = kept.memory * self.satisfaction + (1 - kept.memory) * np.minimum(np.maximum(target, 1.0), 5.0)
        self.satisfaction = np.where(self.closed, self.satisfaction, moved)

    def _offered(self, day: int) -> np.ndarray:
        """The prices customers pay on `day` [row, product]: the posted ones, less the discount
        of a promotion running that day."""
        if self._promotions is None:
            return self.prices
        return np.where(self.discount_until >= day, self.prices * (1 - self.discount), self.prices)

    def _promotion_bonus(self, day: int, response: float) -> np.ndarray | float:
        """What running promotions add to customers' utility [row, product] for customers of
        that `response`."""
        if self._promotions is None or response == 0:
            return 0.0
        return response * (self.discount_until >= day)

    def _competitor_prices(self, day: int) -> np.ndarray:
        """The scripted competitors' prices on `day` (market.competitors), from the prices the
        merchants posted the day before."""
        p = len(self._product_ids)
        if not len(self.competitors):
            return np.zeros((len(self.rosters), 0, p))
        cost = np.array([pr.unit_cost for pr in self.scenario.products]) * self.rules.cost_factor(day)
        posted = self._offered(day - 1).reshape(-1, self.seats, p)
        selling = ~self.closed & self._posted_by(day)
        return self.competitors.prices(day, posted, selling.reshape(-1, self.seats), cost)

    def _worth(self, unit_cost: np.ndarray) -> np.ndarray:
        """Every row's net worth as the day starts: yesterday's close when the unit costs are
        the same (nothing moves between days)."""
        if self._closing is not None and self._closing[0] is unit_cost:
            return self._closing[1]
        return self.net_worth(unit_cost)

    def _receive(self, units: np.ndarray) -> None:
        """Units [row, product] come into stock today: those of perishable products may be
        sold until the end of the shelf_life-th day from today (today the first)."""
        perishable = self._perishable
        if perishable.size:
            self.batches[:, perishable, self._shelf_life[perishable] - 1] += units[:, perishable]

    def _spoil(self, sold: np.ndarray) -> np.ndarray:
        """Take the day's sales [row, product] from the oldest stock of perishable products
        first; what is left at the end of its last day spoils. The units spoiled [row, product]."""
        spoiled = np.zeros_like(sold)
        perishable = self._perishable
        if perishable.size:
            held = self.batches[:, perishable]
            before = np.cumsum(held, 2) - held  # older units than each batch's
            held -= np.minimum(np.maximum(sold[:, perishable, None] - before, 0.0), held)
            spoiled[:, perishable] = held[:, :, 0]
            _shift_left(held)
            self.batches[:, perishable] = held
            self.inventory[:, perishable] = _sum(held, 2)
        return spoiled

    def _deliver(self) -> tuple[np.ndarray, np.ndarray]:
        """Goods ordered earlier arrive and credit sales fall due; the units arrived, and those
        due today that a supplier delivers late [row, product]."""
        arrived = self.pipeline[:, :, 0].copy()
        self.inventory += arrived
        _shift_left(self.pipeline)
        late = self._none_by_product
        if self._unreliable:
            late = self.overdue[:, :, 0].copy()
            _shift_left(self.overdue)
        self.due += self.credit[:, 0]
        _shift_left(self.credit)
        return arrived, late

    def _orders(
        self, arrays: ArrayDecisions | None, rows: np.ndarray | None, decisions: Mapping[int, Any]
    ) -> _Orders:
        """The day's decisions of the rows playing, compiled into one table of operation
        columns, with what they said besides operations."""
        orders = _Orders()
        parts = []
        if arrays is not None:
            rows = self._all_rows if rows is None else rows
            playing = np.flatnonzero(self.playing[rows])
            arrays, rows = arrays.take(playing), rows[playing]
            parts.append(array_columns(arrays, rows))
            if arrays.messages is not None:
                orders.messages += zip(rows.tolist(), arrays.messages.tolist())
        parsed = {
            i: raw if isinstance(raw, ParsedDecision) else parse_decision(raw, self._promotions is not None)
            for i, raw in sorted(decisions.items())
            if self.playing[i]
        }
        for i, decision in parsed.items():
            if decision.rejections:  # not decisions or operations at all: these come first
                orders.rejected[i].extend(decision.rejections)
                orders.malformed[i] = len(decision.rejections)
            if decision.plan:
                orders.plans[i] = self._kept_plan(decision.plan)
            orders.messages.append((i, decision.message))
        if parsed:
            parts.append(self.rules.columns(parsed, orders.unknown))
        orders.columns = _joined(parts)
        return orders

    def _force_prices(self, forced: Mapping[int, Callable[[np.ndarray], np.ndarray]]) -> None:
        """The forced rows' prices of the day (see `advance`), from the prices as the regulator
        left them, within the day's limit (a price cap in force, else the ceiling)."""
        limit = self.rules.price_limit(self.day)
        for i, prices in forced.items():
            if self.playing[i]:
                span = self.match_rows[i // self.seats]
                posted = np.where(
                    self.closed[span, None], math.inf, self.prices[span]
                )  # the closed sell nothing
                self.prices[i] = np.minimum(prices(posted), limit)

    def _regulate(self, day: int) -> None:
        """The regulator's acts of the day on posted prices (market.scenario.Intervention): a
        forced price in its seats, then every price above a cap lowered to it. Before a
        deviation probe's forced prices: a probe deviates in the market as regulated."""
        acts = self.scenario.interventions
        if not acts:
            return
        for act in acts:
            if act.kind == "forced_price" and act.running(day):
                assert act.price is not None  # a forced_price has one (Intervention)
                rows = np.flatnonzero([act.binds(seat) for seat in range(self.seats)] * len(self.rosters))
                columns = slice(None) if act.product is None else self._pid[act.product]
                self.prices[rows, columns] = np.minimum(act.price, self._ceiling[columns])
        limit = self.rules.price_limit(day)
        if limit is not self._ceiling:
            np.minimum(self.prices, limit, out=self.prices)

    def _messages(self, orders: _Orders) -> list[str]:
        """Each row's delivered message ("": none); a message not delivered adds its rejection
        to its row's, after those of the operations."""
        said = [""] * len(self.playing)
        for i, message in orders.messages:
            said[i], refused = delivered(message)
            if refused is not None:
                orders.rejected[i].append(refused)
        return said

    def _trade(
        self, day: int, unit_cost: np.ndarray, paid: np.ndarray, advertising: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Customers buy; the day's sales are paid (in cash or on credit) and its costs taken
        from cash; reputation moves. The day's flows, by DayRecord's names (`paid`: what the
        day's orders cost)."""
        finance = self.scenario.finance
        offered = self._offered(day)
        wanted, sold, returned, restocked = self._clear_market(day, offered)
        revenue = _sum(sold * offered, 1)
        refunds, kept = self._none_by_row, revenue
        if self.scenario.segments:  # customers who return goods get their money back
            refunds = _sum(returned * offered, 1)
            kept = accounting.kept_revenue(revenue, refunds)
        on_credit = kept * finance.credit_share
        revenue_cash = revenue - on_credit
        bad_debt = on_credit * finance.bad_debt_share  # never to be paid: written off at once
        if finance.credit_days == 0:
            self.due += on_credit - bad_debt
        else:
            self.credit[:, finance.credit_days - 1] += on_credit - bad_debt
        if self.scenario.demand.stock_limited:
            self.inventory -= sold
            made_to_order = np.zeros(len(self.playing))
        else:
            made_to_order = _sum(sold * unit_cost, 1)
        if self.scenario.segments:
            self.inventory += restocked
            self._receive(restocked)
        spoiled = self._spoil(sold) if self._perishable.size else self._none_by_product
        holding = np.where(self.closed, 0.0, _sum(self.inventory * self._holding, 1))
        fixed = np.where(self.closed, 0.0, finance.fixed_daily_cost)
        self.cash += revenue_cash - made_to_order - holding - fixed
        if self.scenario.segments:
            self.cash -= refunds
        self.units_sold += sold
        self._update_reputation(wanted, sold, advertising)
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
            "discount": self._none_by_product
            if self._promotions is None
            else np.where(self.discount_until >= day, self.discount, 0.0),
        }

    def _record(
        self,
        day: int,
        values: dict[str, np.ndarray],
        applied: Operations,
        orders: _Orders,
        said: list[str] | None,
    ) -> None:
        """The day into each match's log, for the rows that played it: DayRecord's numbers
        from `values` (the log's columns are in its order), the operations applied, the
        rejections, plans and delivered messages."""
        # np.array of a tuple copies in C; np.stack would cost more in Python than the copy
        scalars = np.array(tuple(values[name] for name in SCALARS)).T
        per_product = np.array(tuple(values[name] for name in PER_PRODUCT)).transpose(1, 0, 2)
        bankrupt = self.closed.copy()  # a row that played today closed only by going bankrupt
        scripted = len(self.competitors) > 0
        everyone = np.logical_and.reduce(self.playing.reshape(-1, self.seats), 1).tolist()  # per match
        rejected_by_seat, plans_by_seat = (
            _by_match(orders.rejected, self.seats),
            _by_match(orders.plans, self.seats),
        )
        single = len(self.logs) == 1
        bounds = [0, len(applied.row)] if single else applied.match_bounds(self.seats, len(self.logs))
        for b, (log, span, whole) in enumerate(zip(self.logs, self.match_rows, everyone)):
            if whole:  # all its merchants played: the match's rows as they are (views of today's arrays)
                log.add(
                    self._seats,
                    day,
                    bankrupt[span],
                    scalars[span],
                    per_product[span],
                    applied if single else applied.part(bounds[b], bounds[b + 1], span.start),
                    rejected_by_seat.get(b, {}),
                    plans_by_seat.get(b, {}),
                    None if said is None else said[span],
                )
                if scripted:
                    self._record_competitors(log, b)
                continue
            seats = np.flatnonzero(self.playing[span])
            if seats.size:
                at = seats + span.start
                position = {s: k for k, s in enumerate(seats.tolist())}  # of each seat among today's rows
                log.add(
                    seats,
                    day,
                    bankrupt[at],
                    scalars[at],
                    per_product[at],
                    applied.part(bounds[b], bounds[b + 1], span.start, at),
                    {position[s]: row for s, row in rejected_by_seat.get(b, {}).items()},
                    {position[s]: row for s, row in plans_by_seat.get(b, {}).items()},
                    None if said is None else [said[i] for i in at.tolist()],
                )
                if scripted:
                    self._record_competitors(log, b)

    def _record_competitors(self, log: DayLogBuilder, b: int) -> None:
        log.add_competitors(self.competitor_prices[b].copy(), self.competitor_sold[b].copy())

    def _apply(
        self, ops: Submitted, unit_cost: np.ndarray, rejected: defaultdict[int, list[Rejection]]
    ) -> Applied:
        """Apply the day's operations, each as if one by one in its row's order; record each
        refused one in `rejected` (after those already there, in the order given)."""
        m, p = self.prices.shape
        row, kind, product, value, supplier = ops.row, ops.kind, ops.product, ops.value, ops.supplier
        judged = self.rules.judge(ops, self.day, unit_cost, self.cash, self.due)
        valid, accepted, cost = judged.valid, judged.accepted, judged.cost
        priced = np.flatnonzero((kind == SET_PRICE) & valid)
        if priced.size:  # a later price for the same product wins
            cells = row[priced] * p + product[priced]
            if not (cells[1:] > cells[:-1]).all():
                priced = priced[len(priced) - 1 - np.unique(cells[::-1], return_index=True)[1]]
            self.prices[row[priced], product[priced]] = value[priced]
        if self._promotions is not None:  # a later promotion replaces an earlier one
            for x in np.flatnonzero((kind == PROMOTE) & valid).tolist():
                self.discount[row[x], product[x]] = value[x]
                self.discount_until[row[x], product[x]] = self.day + int(ops.days[x]) - 1
        ordering, advertising = kind == ORDER, kind == ADVERTISE
        buying = np.flatnonzero(ordering & accepted)
        r, j, units, source = row[buying], product[buying], value[buying], supplier[buying]
        ordered = np.bincount(r * p + j, weights=units, minlength=m * p).reshape(m, p)
        savings, late_today = self._none_by_row, self._none_by_product
        lead: np.ndarray = self._lead[j]
        if self._supplier_names:
            savings = np.zeros(m)
            np.add.at(savings, r, units * (unit_cost[r, j] - cost[buying]))
            lead = self._supply_lead[j, source].astype(np.int64)
        late = self._late_units(r, j, units, source) if self._unreliable else None
        if late is not None:
            units = units - late
        now = lead == 0  # one by one, in the order given: two orders of a product add up as they would apart
        np.add.at(self.inventory, (r[now], j[now]), units[now])
        np.add.at(self.pipeline, (r[~now], j[~now], lead[~now] - 1), units[~now])
        stocked: np.ndarray = self._none_by_product
        if self._perishable.size or self.scenario.satisfaction is not None:  # who needs to know
            stocked = np.bincount(r[now] * p + j[now], weights=units[now], minlength=m * p).reshape(m, p)
        if late is not None and late.any():
            late_today = np.zeros((m, p))
            np.add.at(self.pipeline, (r, j, lead + self._late_days[j, source] - 1), late)
            np.add.at(self.overdue, (r[~now], j[~now], lead[~now] - 1), late[~now])
            np.add.at(late_today, (r[now], j[now]), late[now])
        adverts = np.flatnonzero(advertising & accepted)
        spent = (
            np.bincount(row[adverts], weights=value[adverts], minlength=m) if adverts.size else np.zeros(m)
        )
        for x in np.flatnonzero(~accepted).tolist():
            rejected[int(row[x])].append(self.rules.rejection(ops, judged, x))
        keep = np.flatnonzero(accepted)
        applied = Operations(
            row[keep], kind[keep], product[keep], value[keep], supplier[keep], ops.days[keep]
        )
        return Applied(applied, ordered, stocked, late_today, savings, spent, judged.collected)

    def _late_units(
        self, row: np.ndarray, product: np.ndarray, units: np.ndarray, supplier: np.ndarray
    ) -> np.ndarray:
        """Of each order placed (by row, product, units and supplier), the units that will
        arrive late: the whole order with probability 1 - reliability where units are whole
        (drawn from its match's generator), that share of it where flows are expected (asked
        only where some supplier is unreliable)."""
        late = np.zeros(len(units))
        reliability = self._reliability[product, supplier]
        unsure = np.flatnonzero(reliability < 1)
        if not self.scenario.whole_units:
            late[unsure] = units[unsure] * (1 - reliability[unsure])
            return late
        for x in unsure.tolist():
            if self._rngs[int(row[x]) // self.seats].random() >= reliability[x]:
                late[x] = units[x]
        return late

    def _kept_plan(self, plan: list[PlannedPrice]) -> dict[str, float]:
        """product -> planned price, for the plan's products the market sells at prices a
        set_price would be allowed (a later item for the same product wins)."""
        kept = {}
        for item in plan:
            j = self._pid.get(item.product)
            if j is not None and math.isfinite(item.price) and 0 < item.price <= self._ceiling[j]:
                kept[item.product] = item.price
        return kept

    def _clear_market(self, day: int, offered: np.ndarray) -> Cleared:
        """Each match's customers, product by product, among its own merchants at the prices
        they `offered` and the scripted competitors (their sales go to `competitor_sold`)."""
        s = self.scenario
        m, p = self.prices.shape
        wanted, sold = np.zeros((m, p)), np.zeros((m, p))
        factor = demand_factor(s.demand, day)
        stochastic = s.demand.mode == "stochastic"
        if s.segments:
            return self._clear_segments(day, offered, factor, stochastic)
        utility = utilities(s.choice, offered, self._reference, self.reputation[:, None], self._quality)
        if self._promotions is not None or s.satisfaction is not None:
            utility = (
                utility + self._promotion_bonus(day, s.choice.promotion_response) + self._satisfaction_bonus()
            )
        utility = np.where(self.closed[:, None], -np.inf, utility)
        running = np.logical_or.reduce(self.playing.reshape(-1, self.seats), 1)  # matches not over
        rngs = [rng for rng, on in zip(self._rngs, running.tolist()) if on]
        if len(rngs) == len(running):
            running = slice(None)  # every match: views rather than copies
        by_match = (-1, self.seats, p)
        rivals = len(self.competitors)
        if rivals:
            rival_utility = self.competitors.utilities(self.competitor_prices)[running]
            self.competitor_sold = np.zeros_like(self.competitor_prices)
        for j, product in enumerate(s.products):
            mean = product.base_demand * factor * event_multiplier(s.events, "demand", product.id, day)
            customers = (
                np.array([float(rng.poisson(mean)) for rng in rngs])
                if stochastic
                else np.full(len(rngs), mean)
            )
            stock = self.inventory.reshape(by_match)[running, :, j] if s.demand.stock_limited else None
            options = utility.reshape(by_match)[running, :, j]
            if rivals:  # never sold out
                options = np.concatenate([options, rival_utility[:, :, j]], axis=1)
                if stock is not None:
                    stock = np.concatenate([stock, np.full((len(stock), rivals), math.inf)], axis=1)
            chose, bought, _ = allocate_markets(
                customers, options, s.choice.no_purchase_utility, stock, rngs if stochastic else None
            )
            if rivals:
                self.competitor_sold[running, :, j] = bought[:, self.seats :]
                chose, bought = chose[:, : self.seats], bought[:, : self.seats]
            wanted.reshape(by_match)[running, :, j], sold.reshape(by_match)[running, :, j] = chose, bought
        return Cleared(wanted, sold, self._none_by_product, self._none_by_product)

    def _clear_segments(self, day: int, offered: np.ndarray, factor: float, stochastic: bool) -> Cleared:
        """`_clear_market` with customer segments: each segment's share of the day's customers
        chooses by its own utilities, all share the merchants' stock
        (market.demand.allocate_segments), and each segment returns its return_rate of what it
        bought, of which the product's returns_resellable share goes back to stock (where
        units are whole, one multinomial draw per match sorts every unit sold into kept,
        returned to stock and returned to be written off)."""
        s = self.scenario
        m, p = self.prices.shape
        seats, segments = self.seats, s.segments
        wanted, sold, returned, restocked = (np.zeros((m, p)) for _ in range(4))
        running = np.flatnonzero(np.logical_or.reduce(self.playing.reshape(-1, seats), 1))
        if not running.size:
            return Cleared(wanted, sold, returned, restocked)
        rngs = [self._rngs[b] for b in running.tolist()]
        shares = np.array([g.share for g in segments])
        rates = np.array([g.return_rate for g in segments])
        choices = self._segment_choices
        # [row, segment, product] and [match, segment, competitor, product]
        utility = np.stack(
            [
                utilities(c, offered, self._reference, self.reputation[:, None], self._quality)
                + self._promotion_bonus(day, c.promotion_response)
                + self._satisfaction_bonus()
                for c in choices
            ],
            axis=1,
        )
        utility = np.where(self.closed[:, None, None], -np.inf, utility)
        rivals = len(self.competitors)
        if rivals:
            scripted = np.stack(
                [self.competitors.utilities(self.competitor_prices, c) for c in choices], axis=1
            )
            self.competitor_sold = np.zeros_like(self.competitor_prices)
        rows = (running[:, None] * seats + np.arange(seats)).ravel()
        mean = np.array(
            [
                product.base_demand * factor * event_multiplier(s.events, "demand", product.id, day)
                for product in s.products
            ]
        )
        customers = np.broadcast_to(mean[:, None] * shares, (len(rngs), p, len(segments)))
        # [match, product, segment, seat or competitor]
        options = utility[rows].reshape(len(rngs), seats, len(segments), p).transpose(0, 3, 2, 1)
        stock = None
        if s.demand.stock_limited:
            stock = self.inventory[rows].reshape(len(rngs), seats, p).transpose(0, 2, 1)
        if rivals:  # never sold out
            options = np.concatenate([options, scripted[running].transpose(0, 3, 1, 2)], axis=3)
            if stock is not None:
                stock = np.concatenate([stock, np.full((len(rngs), p, rivals), math.inf)], axis=2)
        chose, bought, _ = allocate_segments(
            customers, options, s.choice.no_purchase_utility, stock, rngs if stochastic else None
        )
        if rivals:
            self.competitor_sold[running] = bought[..., seats:].sum(axis=2).transpose(0, 2, 1)
            chose, bought = chose[..., :seats], bought[..., :seats]
        if rates.any():
            resellable = rates[:, None] * self._resellable_share  # [segment, product]
            if stochastic:  # per unit sold: [back to stock, written off, kept]
                kept = np.broadcast_to(1 - rates[:, None], resellable.shape)
                fates = np.stack([resellable, rates[:, None] - resellable, kept], -1)
                fates = fates.transpose(1, 0, 2)[:, :, None, :]  # [product, segment, 1, fate]
                drawn = np.array(
                    [rng.multinomial(units.astype(np.int64), fates) for rng, units in zip(rngs, bought)]
                )
                back, fit = drawn[..., 0] + drawn[..., 1], drawn[..., 0]
            else:
                back, fit = bought * rates[:, None], bought * resellable.T[:, :, None]
            returned[rows] = back.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
            restocked[rows] = fit.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
        wanted[rows] = chose.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
        sold[rows] = bought.sum(axis=2).transpose(0, 2, 1).reshape(-1, p)
        return Cleared(wanted, sold, returned, restocked)

    def _update_reputation(self, wanted: np.ndarray, sold: np.ndarray, advertising: np.ndarray) -> None:
        r = self.scenario.reputation
        demand, served = _sum(wanted, 1), _sum(sold, 1)
        fill_rate = np.divide(served, demand, out=np.ones(len(served)), where=demand > 0)
        updated = (1 - r.memory) * fill_rate + r.memory * self.reputation
        if advertising.any():  # no spend adds a boost of exactly zero, so it is skipped
            updated += r.advertising_gain * (1.0 - elementary.exp(-advertising / r.advertising_scale))
        updated = np.minimum(np.maximum(updated, r.minimum), r.maximum)  # np.clip, without its Python wrapper
        self.reputation = np.where(self.closed, self.reputation, updated)

    def _unit_cost_today(self, day: int) -> np.ndarray:
        if not self.scenario.events:
            return self._unit_cost0
        return self._unit_cost0 * self.rules.cost_factor(day)

    def net_worth(self, unit_cost: np.ndarray | None = None) -> np.ndarray:
        """Every row's net worth (market.accounting), goods at `unit_cost` (default: today's)."""
        cost = self._unit_cost_today(self.day) if unit_cost is None else unit_cost
        return accounting.net_worth(
            self.cash, self.inventory + _sum(self.pipeline, 2), cost, self.due, _sum(self.credit, 1)
        )


@dataclass(eq=False)
class _Orders:
    """The day's decisions compiled (Market._orders): the operations to apply, as columns, and
    by row what they said besides: the rejections known before applying them (a decision that
    was none, `malformed`: how many of its row's rejections), the operations naming products
    the market does not sell (`unknown`), plans, and messages as given."""

    columns: Submitted = field(default_factory=lambda: NO_OPERATIONS)
    rejected: defaultdict[int, list[Rejection]] = field(default_factory=lambda: defaultdict(list))
    malformed: dict[int, int] = field(default_factory=dict)
    unknown: dict[int, list[Rejection]] = field(default_factory=dict)
    plans: dict[int, dict[str, float]] = field(default_factory=dict)
    messages: list[tuple[int, Any]] = field(default_factory=list)

    def add_unknown_products(self) -> None:
        """The rejections of operations naming unknown products, among those of the applied
        operations in the order given, after the malformed ones."""
        for i, refused in self.unknown.items():
            first = self.malformed.get(i, 0)
            self.rejected[i][first:] = sorted(self.rejected[i][first:] + refused, key=lambda r: r.index)


class ObservationMaker:
    """The Observations of the merchants of one morning of the market, read from its view,
    and their records of the day before, each made when asked for. What the merchants of a
    match share is made once, when the first of them asks (`_SharedParts`).

    It keeps reading that morning after the market has moved on if the view is `frozen`
    (the market's days before are never changed)."""

    def __init__(self, market: Market, view: MarketView):
        self.market, self.view = market, view
        self.logs, self.day_before = market.logs, market.day - 1  # as they are now: a reset makes new logs
        self._shared: dict[int, _SharedParts] = {}
        self._records: dict[int, DayRecord | None] = {}

    def observations(self, rows: Sequence[int]) -> list[Observation]:
        return [self.observation(i) for i in rows]

    def observation(self, i: int) -> Observation:
        """The Observation of the merchant at market row `i`."""
        market, view = self.market, self.view
        s = i % market.seats
        shared = self._shared_parts(i)
        cash, reputation, due, pending, unit_cost, prices, stock, coming = shared.books[s]
        products = [
            ProductState(pid, price, cost, held, due_in, lead, holding)
            for (pid, lead, holding), cost, price, held, due_in in zip(
                market._statics, unit_cost, prices, stock, coming
            )
        ]
        if view.spoiling is not None:
            for j in market._perishable.tolist():
                products[j].spoiling = view.spoiling[i, j, : market._shelf_life[j]].tolist()
        if view.promotions is not None:
            discount, until = view.promotions
            for j in np.flatnonzero(until[i] >= view.day).tolist():
                products[j].discount, products[j].discount_until = float(discount[i, j]), int(until[i, j])
        heard = [message for seat, message in shared.said if seat != s] if market.talk else None
        return Observation(
            market._names[i],
            view.day,
            market.days,
            cash,
            reputation,
            due,
            pending,
            products,
            self.yesterday(i),
            shared.board,
            view.events,
            view.fixed_daily_cost,
            heard,
            shared.competitors if market.competitors.names else [],
            None if view.satisfaction is None else float(view.satisfaction[i]),
            s,
        )

    def yesterday(self, i: int) -> DayRecord | None:
        """The record of the day before of the merchant at market row `i` (None on day 1)."""
        if i not in self._records:
            self._records[i] = self._shared_parts(i).yesterday(i % self.market.seats)
        return self._records[i]

    def _shared_parts(self, i: int) -> _SharedParts:
        """What the merchant at market row `i` shares with the others of its match."""
        b = i // self.market.seats
        shared = self._shared.get(b)
        if shared is None:
            shared = self._shared[b] = _SharedParts(self, b)
        return shared


class _SharedParts:
    """What the merchants of match b share in their observations of a morning, each part made
    when first needed: the public board (one list in all their observations), their books by
    seat, the day before's records as lists (a merchant's record is made from them when asked
    for) and messages."""

    def __init__(self, maker: ObservationMaker, b: int):
        self.market, self.view, self.span = maker.market, maker.view, maker.market.match_rows[b]
        self.log, self.day_before = maker.logs[b], maker.day_before

    @functools.cached_property
    def books(self) -> list[tuple]:
        """By seat: cash, reputation, receivables due and pending, and per product unit cost,
        price, inventory and units in transit."""
        view = self.view
        own = [
            view.cash,
            view.reputation,
            view.receivables_due,
            view.receivables_pending,
            view.unit_cost,
            view.prices,
            view.inventory,
            view.in_transit,
        ]
        return list(zip(*(values[self.span].tolist() for values in own)))

    @functools.cached_property
    def board(self) -> list[PublicMerchant]:
        """The match's merchants as everyone sees them, an entrant not yet open left out."""
        ids, board, span = self.market._product_ids, self.view.board, self.span
        shown = zip(
            self.market._names[span],
            board.prices[span].tolist(),
            board.reputation[span].tolist(),
            board.units_sold[span].tolist(),
            board.closed[span].tolist(),
            (self.market._opening[span] <= self.view.day).tolist(),
        )
        return [
            PublicMerchant(name, _table(ids, price), None if rep != rep else rep, _table(ids, units), out)
            for name, price, rep, units, out, opened in shown
            if opened
        ]

    @functools.cached_property
    def competitors(self) -> list[PublicCompetitor]:
        market, b = self.market, self.span.start // self.market.seats
        prices = self.view.board.competitor_prices
        if prices is None or not prices.shape[1]:
            return []
        visible = market.scenario.visibility
        return [
            PublicCompetitor(
                name,
                {p: price for p, price in zip(market._product_ids, today.tolist()) if price == price}
                if visible.rival_prices
                else None,
                reputation if visible.rival_reputation else None,
            )
            for name, today, reputation in zip(
                market.competitors.names, prices[b], market.competitors.reputation.tolist()
            )
        ]

    @functools.cached_property
    def played(self) -> tuple[RecordMaker, dict[int, int]] | None:
        """The records of the day before, and the row of each seat among them (None on day 1)."""
        if self.day_before < 1:
            return None
        log = self.log.day(self.day_before)
        return RecordMaker(log), {s: r for r, s in enumerate(log.seat.tolist())}

    def yesterday(self, seat: int) -> DayRecord | None:
        if self.played is None:
            return None
        made, row_of_seat = self.played
        row = row_of_seat.get(seat)  # None: the seat did not play the day before
        return None if row is None else made.record(row)

    @functools.cached_property
    def said(self) -> list[tuple[int, RivalMessage]]:
        """(seat, message) of what the merchants said the day before."""
        if self.played is None:
            return []
        log = self.played[0].log
        return [
            (s, RivalMessage(log.merchants[s], text))
            for s, text in zip(log.seat.tolist(), log.messages)
            if text
        ]


def array_columns(decisions: ArrayDecisions, rows: np.ndarray) -> Submitted:
    """ArrayDecisions (a row for each of the market's `rows`, ascending) as operation columns:
    each merchant's collect, then its prices, then its orders, in product order."""
    m, p = decisions.prices.shape
    given = np.concatenate(
        [decisions.collect[:, None], ~np.isnan(decisions.prices), decisions.orders > 0], axis=1
    )  # [merchant, slot]
    at = np.flatnonzero(given)
    merchant, slot = np.divmod(at, 1 + 2 * p)
    values = np.concatenate([np.full((m, 1), math.nan), decisions.prices, decisions.orders], axis=1)
    index = np.arange(len(at)) - np.searchsorted(
        merchant, merchant
    )  # as the row's decision would number them
    kinds, products = _slots(p)
    if decisions.suppliers is None:
        supplier = np.zeros(len(at), dtype=np.int16)
    else:  # orders' suppliers in the order slots, none in the others
        sources = np.concatenate(
            [np.zeros((m, 1 + p), np.int16), decisions.suppliers.astype(np.int16)], axis=1
        )
        supplier = sources.ravel()[at]
    days = np.zeros(len(at), dtype=np.int16)
    return Submitted(rows[merchant], index, kinds[slot], products[slot], values.ravel()[at], supplier, days)


@functools.cache
def _slots(p: int) -> tuple[np.ndarray, np.ndarray]:
    """What each of an ArrayDecisions row's 1 + 2p slots holds, with p products: its kind
    and product (collect; a price per product; an order per product)."""
    return np.array([COLLECT] + [SET_PRICE] * p + [ORDER] * p, dtype=np.int8), np.array(
        [-1, *range(p), *range(p)], dtype=np.int16
    )


def _joined(parts: list[Submitted]) -> Submitted:
    """The operations of several parts in one table, by row and then in each row's order."""
    if len(parts) < 2:
        return parts[0] if parts else NO_OPERATIONS
    joined = Submitted(*(np.concatenate(column) for column in zip(*parts)))
    order = np.lexsort((joined.position, joined.row))
    return Submitted(*(column[order] for column in joined))


_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper: a dozen of these run every day


def _by_match(by_row: Mapping[int, T], seats: int) -> dict[int, dict[int, T]]:
    """Entries by market row as {match: {seat: entry}}, for the matches that have any."""
    split: dict[int, dict[int, T]] = {}
    for i, entry in by_row.items():
        split.setdefault(i // seats, {})[i % seats] = entry
    return split


def _shift_left(buffer: np.ndarray) -> None:
    """Move a ring of future days one day closer, in place: [.., k] <- [.., k+1]."""
    buffer[..., :-1] = buffer[..., 1:]
    buffer[..., -1] = 0.0


def _table(ids: Sequence[str], values: list[float]) -> dict[str, float] | None:
    """product -> value, or None when the scenario hides the values (NaN)."""
    return None if values and values[0] != values[0] else dict(zip(ids, values))
