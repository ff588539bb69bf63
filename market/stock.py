"""The goods of a market's rows on their way and in stock: the morning's deliveries, the
day's orders placed with their suppliers (some of them coming late), and perishable stock
sold oldest first and spoiled at the end of its last day."""

from __future__ import annotations

import numpy as np

from market.state import MarketState

_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper


def deliver(market: MarketState) -> tuple[np.ndarray, np.ndarray]:
    """Goods ordered earlier arrive and credit sales fall due; the units arrived, and those
    due today that a supplier delivers late [row, product]."""
    arrived = market.pipeline[:, :, 0].copy()
    market.inventory += arrived
    _shift_left(market.pipeline)
    late = market.none_by_product
    if market.supply.unreliable:
        late = market.overdue[:, :, 0].copy()
        _shift_left(market.overdue)
    market.due += market.credit[:, 0]
    _shift_left(market.credit)
    return arrived, late


def place_orders(
    market: MarketState, r: np.ndarray, j: np.ndarray, units: np.ndarray, lead: np.ndarray, source: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The accepted orders (by row `r`, product `j`, units, `lead` time and supplier
    `source`, in the order given) into stock at once (no lead time) or on their way, each
    unit a supplier delivers late on its way for longer. The units in stock at once that
    came on time, for those who need to know (perishables, satisfaction), and the units due
    today that come late [row, product]."""
    m, p = market.prices.shape
    supply = market.supply
    late = _late_units(market, r, j, units, source) if supply.unreliable else None
    if late is not None:
        units = units - late
    now = lead == 0  # one by one, in the order given: two orders of a product add up as they would apart
    np.add.at(market.inventory, (r[now], j[now]), units[now])
    np.add.at(market.pipeline, (r[~now], j[~now], lead[~now] - 1), units[~now])
    stocked: np.ndarray = market.none_by_product
    if market.perishable.size or market.scenario.satisfaction is not None:  # who needs to know
        stocked = np.bincount(r[now] * p + j[now], weights=units[now], minlength=m * p).reshape(m, p)
    late_today = market.none_by_product
    if late is not None and late.any():
        late_today = np.zeros((m, p))
        np.add.at(market.pipeline, (r, j, lead + supply.late_days[j, source] - 1), late)
        np.add.at(market.overdue, (r[~now], j[~now], lead[~now] - 1), late[~now])
        np.add.at(late_today, (r[now], j[now]), late[now])
    return stocked, late_today


def _late_units(
    market: MarketState, row: np.ndarray, product: np.ndarray, units: np.ndarray, supplier: np.ndarray
) -> np.ndarray:
    """Of each order placed (by row, product, units and supplier), the units that will
    arrive late: the whole order with probability 1 - reliability where units are whole
    (drawn from its match's generator), that share of it where flows are expected (asked
    only where some supplier is unreliable)."""
    late = np.zeros(len(units))
    reliability = market.supply.reliability[product, supplier]
    unsure = np.flatnonzero(reliability < 1)
    if not market.scenario.whole_units:
        late[unsure] = units[unsure] * (1 - reliability[unsure])
        return late
    for x in unsure.tolist():
        if market.rngs[int(row[x]) // market.seats].random() >= reliability[x]:
            late[x] = units[x]
    return late


def spoil(market: MarketState, sold: np.ndarray) -> np.ndarray:
    """Take the day's sales [row, product] from the oldest stock of perishable products
    first; what is left at the end of its last day spoils. The units spoiled [row, product]."""
    spoiled = np.zeros_like(sold)
    perishable = market.perishable
    if perishable.size:
        held = market.batches[:, perishable]
        before = np.cumsum(held, 2) - held  # older units than each batch's
        held -= np.minimum(np.maximum(sold[:, perishable, None] - before, 0.0), held)
        spoiled[:, perishable] = held[:, :, 0]
        _shift_left(held)
        market.batches[:, perishable] = held
        market.inventory[:, perishable] = _sum(held, 2)
    return spoiled


def _shift_left(buffer: np.ndarray) -> None:
    """Move a ring of future days one day closer, in place: [.., k] <- [.., k+1]."""
    buffer[..., :-1] = buffer[..., 1:]
    buffer[..., -1] = 0.0
