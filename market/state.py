"""The market as it stands between days: its layout (the matches side by side, a row per
merchant of every match, and the scenario's products as arrays) and every row's books, which
the day's steps (market.engine.Market.advance) read and write.

A new entrant (an intervention of kind entry) is absent, closed and out of play, until the
morning of its day, when it opens with the starting books.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from market import accounting
from market.competitors import Competitors
from market.daylog import DayLogBuilder
from market.operations import OperationRules
from market.scenario import Scenario
from market.supply import Supply

_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper: a dozen of these run every day


class MarketState:
    """A market's matches of one scenario in one set of arrays, and the books of its rows."""

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
        self.base_unit_cost = np.tile(
            scenario.seat_values("unit_cost", self.seats), (matches, 1)
        )  # [row, product]: seats may differ
        self.reference = np.array([p.reference_price for p in products])
        self.quality = np.tile(scenario.seat_values("quality", self.seats), (matches, 1))
        self.holding = np.array([p.holding_cost for p in products])
        self.rules = OperationRules(scenario)
        self.ceiling, self.promotions = self.rules.ceiling, scenario.promotions
        self.supply = Supply(scenario)
        self.shelf_life = np.array([p.shelf_life or 0 for p in products])
        self.resellable_share = np.array([p.returns_resellable for p in products])
        self.perishable = np.flatnonzero(self.shelf_life)  # the products that spoil
        self.product_ids = scenario.product_ids
        self.pid = self.rules.pid
        self.statics = [(p.id, p.lead_time, p.holding_cost) for p in products]
        self.names = [name for roster in self.rosters for name in roster]
        self.match_rows = [slice(b * self.seats, (b + 1) * self.seats) for b in range(len(self.rosters))]
        self.all_rows = np.arange(len(self.names))
        self.seat_numbers = np.arange(self.seats)
        self.opening = np.tile(scenario.opening_days(self.seats), matches)  # per row: the day it opens
        self.entrants = bool((self.opening > 1).any())
        self.competitors = Competitors(scenario)
        # each segment's way of choosing: the scenario's, with its own sensitivities
        self.segment_choices = [
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
        self.rngs = [np.random.default_rng(s) for s in seeds]
        s, m, p = self.scenario, len(self.rosters) * self.seats, len(self.scenario.products)
        self.playing = self.opening <= 1  # per row: in its match today
        self.closed = ~self.playing  # per row: not selling: gone bankrupt, or an entrant not yet open
        self.day = 1
        self.cash, self.reputation, self.due = np.zeros(m), np.zeros(m), np.zeros(m)
        self.inventory, self.prices, self.units_sold = np.zeros((m, p)), np.zeros((m, p)), np.zeros((m, p))
        self.pipeline = np.zeros((m, p, self.supply.horizon))  # [.., k]: arrives in k+1 days
        self.overdue = np.zeros((m, p, self.supply.horizon))  # [.., k]: of it, promised for k+1 days earlier
        self.credit = np.zeros((m, max(s.finance.credit_days, 1)))  # [.., k]: due in k+1 days
        # [.., k]: units in stock that spoil at the end of the k-th day from today (0: tonight)
        self.batches = np.zeros((m, p, int(self.shelf_life.max())))
        self.satisfaction = np.zeros(m)
        # what the optional parts record on a day they do nothing: one array each, never written
        self.none_by_row, self.none_by_product = np.zeros(m), np.zeros((m, p))
        self.discount = np.zeros((m, p))  # of each row's latest promotion of each product
        self.discount_until = np.zeros((m, p), dtype=np.int64)  # and its last day
        self._start_books(self.all_rows)
        self.logs = [
            DayLogBuilder(roster, tuple(self.product_ids), self.competitors.names, self.supply.names)
            for roster in self.rosters
        ]  # one per match
        # [match, competitor, product]: the scripted competitors' prices today, and units sold
        self.competitor_prices = self.competitor_prices_on(1)
        self.competitor_sold = np.zeros_like(self.competitor_prices)
        self.closing: tuple[np.ndarray, np.ndarray] | None = (
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
        self.receive(stocked)

    def open_entrants(self) -> None:
        """The entrants whose day is today open (market.scenario.Intervention, kind entry)."""
        rows = np.flatnonzero(self.opening == self.day)
        if rows.size:
            self._start_books(rows)
            self.closed[rows], self.playing[rows] = False, True
            self.closing = None  # their net worth of last night is not theirs

    def posted_by(self, day: int) -> np.ndarray:
        """Per row: whether it had posted a price by the morning of `day`: every merchant but a
        new entrant, absent or opening that day (the day-1 rows hold the start prices)."""
        return (self.opening == 1) | (self.opening < day)

    @property
    def in_play(self) -> bool:
        """Whether a day is left to play: some merchant plays today, or an entrant is still to
        open (its match goes on while every merchant before it has gone bankrupt)."""
        to_open = (self.opening > self.day) & (self.opening <= self.days)
        return bool(self.playing.any()) or (self.entrants and bool(to_open.any()))

    def name(self, row: int) -> str:
        return self.names[row]

    def offered(self, day: int) -> np.ndarray:
        """The prices customers pay on `day` [row, product]: the posted ones, less the discount
        of a promotion running that day."""
        if self.promotions is None:
            return self.prices
        return np.where(self.discount_until >= day, self.prices * (1 - self.discount), self.prices)

    def competitor_prices_on(self, day: int) -> np.ndarray:
        """The scripted competitors' prices on `day` (market.competitors), from the prices the
        merchants posted the day before."""
        p = len(self.product_ids)
        if not len(self.competitors):
            return np.zeros((len(self.rosters), 0, p))
        cost = np.array([pr.unit_cost for pr in self.scenario.products]) * self.rules.cost_factor(day)
        posted = self.offered(day - 1).reshape(-1, self.seats, p)
        selling = ~self.closed & self.posted_by(day)
        return self.competitors.prices(day, posted, selling.reshape(-1, self.seats), cost)

    def unit_cost_today(self, day: int) -> np.ndarray:
        if not self.scenario.events:
            return self.base_unit_cost
        return self.base_unit_cost * self.rules.cost_factor(day)

    def net_worth(self, unit_cost: np.ndarray | None = None) -> np.ndarray:
        """Every row's net worth (market.accounting), goods at `unit_cost` (default: today's)."""
        cost = self.unit_cost_today(self.day) if unit_cost is None else unit_cost
        return accounting.net_worth(
            self.cash, self.inventory + _sum(self.pipeline, 2), cost, self.due, _sum(self.credit, 1)
        )

    def worth(self, unit_cost: np.ndarray) -> np.ndarray:
        """Every row's net worth as the day starts: yesterday's close when the unit costs are
        the same (nothing moves between days)."""
        if self.closing is not None and self.closing[0] is unit_cost:
            return self.closing[1]
        return self.net_worth(unit_cost)

    def receive(self, units: np.ndarray) -> None:
        """Units [row, product] come into stock today: those of perishable products may be
        sold until the end of the shelf_life-th day from today (today the first)."""
        perishable = self.perishable
        if perishable.size:
            self.batches[:, perishable, self.shelf_life[perishable] - 1] += units[:, perishable]
