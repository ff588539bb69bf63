"""The merchants' Observations of a morning of the market, read from its view (MarketView),
and their records of the day before, each made only when asked for: a large market pays only
for the observations someone reads (docs/benchmarks.md#scale)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from market.daylog import RecordMaker
from market.state import MarketState
from market.types import (
    DayRecord,
    MarketView,
    Observation,
    ProductState,
    PublicCompetitor,
    PublicMerchant,
    RivalMessage,
)


class ObservationMaker:
    """The Observations of the merchants of one morning of the market, read from its view,
    and their records of the day before, each made when asked for. What the merchants of a
    match share is made once, when the first of them asks (`_SharedParts`).

    It keeps reading that morning after the market has moved on if the view is `frozen`
    (the market's days before are never changed)."""

    def __init__(self, market: MarketState, view: MarketView):
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
                market.statics, unit_cost, prices, stock, coming
            )
        ]
        if view.spoiling is not None:
            for j in market.perishable.tolist():
                products[j].spoiling = view.spoiling[i, j, : market.shelf_life[j]].tolist()
        if view.promotions is not None:
            discount, until = view.promotions
            for j in np.flatnonzero(until[i] >= view.day).tolist():
                products[j].discount, products[j].discount_until = float(discount[i, j]), int(until[i, j])
        heard = [message for seat, message in shared.said if seat != s] if market.talk else None
        return Observation(
            market.names[i],
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
        ids, board, span = self.market.product_ids, self.view.board, self.span
        shown = zip(
            self.market.names[span],
            board.prices[span].tolist(),
            board.reputation[span].tolist(),
            board.units_sold[span].tolist(),
            board.closed[span].tolist(),
            (self.market.opening[span] <= self.view.day).tolist(),
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
                {p: price for p, price in zip(market.product_ids, today.tolist()) if price == price}
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


def _table(ids: Sequence[str], values: list[float]) -> dict[str, float] | None:
    """product -> value, or None when the scenario hides the values (NaN)."""
    return None if values and values[0] != values[0] else dict(zip(ids, values))
