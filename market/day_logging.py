"""The day into each match's log (market.daylog.DayLogBuilder), for the rows that played it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import numpy as np

from market.daylog import PER_PRODUCT, SCALARS, DayLogBuilder, Operations
from market.decisions import CompiledDecisions
from market.state import MarketState

T = TypeVar("T")


def record(
    market: MarketState,
    day: int,
    values: dict[str, np.ndarray],
    applied: Operations,
    compiled: CompiledDecisions,
    said: list[str] | None,
) -> None:
    """The day into each match's log, for the rows that played it: DayRecord's numbers
    from `values` (the log's columns are in its order), the operations applied, the
    rejections, plans and delivered messages."""
    # np.array of a tuple copies in C; np.stack would cost more in Python than the copy
    scalars = np.array(tuple(values[name] for name in SCALARS)).T
    per_product = np.array(tuple(values[name] for name in PER_PRODUCT)).transpose(1, 0, 2)
    bankrupt = market.closed.copy()  # a row that played today closed only by going bankrupt
    scripted = len(market.competitors) > 0
    everyone = np.logical_and.reduce(market.playing.reshape(-1, market.seats), 1).tolist()  # per match
    rejected_by_seat, plans_by_seat = (
        _by_match(compiled.rejected, market.seats),
        _by_match(compiled.plans, market.seats),
    )
    single = len(market.logs) == 1
    bounds = [0, len(applied.row)] if single else applied.match_bounds(market.seats, len(market.logs))
    for b, (log, span, whole) in enumerate(zip(market.logs, market.match_rows, everyone)):
        if whole:  # all its merchants played: the match's rows as they are (views of today's arrays)
            log.add(
                market.seat_numbers,
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
                _record_competitors(market, log, b)
            continue
        seats = np.flatnonzero(market.playing[span])
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
                _record_competitors(market, log, b)


def _record_competitors(market: MarketState, log: DayLogBuilder, b: int) -> None:
    log.add_competitors(market.competitor_prices[b].copy(), market.competitor_sold[b].copy())


def _by_match(by_row: Mapping[int, T], seats: int) -> dict[int, dict[int, T]]:
    """Entries by market row as {match: {seat: entry}}, for the matches that have any."""
    split: dict[int, dict[int, T]] = {}
    for i, entry in by_row.items():
        split.setdefault(i // seats, {})[i % seats] = entry
    return split
