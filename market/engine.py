"""The market: one or many matches of one scenario side by side in one set of arrays, a row
per merchant of every match (market.state). Each match's customers choose among its own
merchants with its own generator, so a match plays exactly as alone; a numpy operation costs
the same for 16 rows as for 500, so a day of many small matches costs little more than a day
of one.

One day (`Market.advance`), each step a part of its own: goods ordered earlier arrive and
credit sales fall due (market.stock); every decision (a model's Decision, the rule
merchants' ArrayDecisions, an RL action) is compiled into one table of operation columns
(market.decisions) and applied at once (market.applying): prices, then the k-th spending
operation (collect, order, advertise) of every merchant for k = 1, 2, ..., each checked
against the cash the earlier ones left, and each refused one given a code and a reason; the
regulator's acts and a deviation probe's forced prices (market.pricing); customers choose
(market.clearing, market/demand.py), sales capped by stock; costs are paid, reputation moves,
and a merchant with cash below zero goes bankrupt (market.flows). Each match's days go into
its DayLogBuilder as columns (market.day_logging).

Where merchants talk (`talk`), a decision's message is delivered with the day's record and
shown to the match's other merchants in the next day's observations (market.observations);
elsewhere messages are not even looked at.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from market.applying import apply_operations
from market.day_logging import record
from market.decisions import compile_decisions
from market.flows import trade, update_satisfaction
from market.observations import ObservationMaker
from market.pricing import force_prices, regulate
from market.state import MarketState
from market.stock import deliver
from market.types import ArrayDecisions, MarketView, Observation
from market.view import market_view

_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper


class Market(MarketState):
    """The market's days over its state: the morning's view and observations, and a day
    played with every row's decisions."""

    def view(self) -> MarketView:
        """Every merchant's start of the day (rows of every match). It shares the market's
        arrays: read it before the day is played (`advance`)."""
        return market_view(self)

    def observations(self, view: MarketView, rows: list[int]) -> list[Observation]:
        """The Observations of the merchants at `rows` (playing today), read from today's `view`."""
        return ObservationMaker(self, view).observations(rows)

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
        day, unit_cost = self.day, self.unit_cost_today(self.day)
        worth_start, cash_start = self.worth(unit_cost), self.cash.copy()
        arrived, late = deliver(self)
        compiled = compile_decisions(self, arrays, rows, decisions or {})
        done = apply_operations(self, compiled.columns, unit_cost, compiled.rejected)
        ordered, advertising = done.ordered, done.advertising
        if self.perishable.size or self.scenario.satisfaction is not None:
            came = arrived + done.stocked  # into stock today, on time
            self.receive(came)
        regulate(self, day)
        force_prices(self, forced or {})
        compiled.add_unknown_products()
        said = compiled.delivered(len(self.playing)) if self.talk else None
        paid = _sum(ordered * unit_cost, 1)
        if self.supply.names:
            paid = paid - done.savings
            late = late + done.late
        flows = trade(self, day, unit_cost, paid, advertising)
        if self.scenario.satisfaction is not None:
            update_satisfaction(self, flows, late, came)
        self.closed |= self.cash < 0
        worth_end = self.net_worth(unit_cost)
        self.closing = (unit_cost, worth_end)
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
        record(self, day, values, done.operations, compiled, said)
        self.day += 1
        if day >= self.days:
            self.playing[:] = False
        else:
            self.playing &= ~self.closed
            if self.entrants:
                self.open_entrants()
        if len(self.competitors):
            self.competitor_prices = self.competitor_prices_on(self.day)
        return worth_end - worth_start
