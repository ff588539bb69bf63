"""A day's decisions compiled into one table of operation columns: a model's Decision (or
anything `parse_decision` accepts), the rule merchants' ArrayDecisions, an RL action, each
row's operations in its own order, and beside them what the decisions said besides
operations (rejections known before applying, plans, messages)."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market.operations import COLLECT, NO_OPERATIONS, ORDER, SET_PRICE, Submitted
from market.state import MarketState
from market.types import ArrayDecisions, ParsedDecision, PlannedPrice, Rejection, delivered, parse_decision


@dataclass(eq=False)
class CompiledDecisions:
    """The day's decisions compiled (`compile_decisions`): the operations to apply, as
    columns, and by row what they said besides: the rejections known before applying them (a
    decision that was none, `malformed`: how many of its row's rejections), the operations
    naming products the market does not sell (`unknown`), plans, and messages as given."""

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

    def delivered(self, rows: int) -> list[str]:
        """Each of the market's `rows` rows' delivered message ("": none); a message not
        delivered adds its rejection to its row's, after those of the operations."""
        said = [""] * rows
        for i, message in self.messages:
            said[i], refused = delivered(message)
            if refused is not None:
                self.rejected[i].append(refused)
        return said


def compile_decisions(
    market: MarketState,
    arrays: ArrayDecisions | None,
    rows: np.ndarray | None,
    decisions: Mapping[int, Any],
) -> CompiledDecisions:
    """The day's decisions of the rows playing (`arrays` for `rows`, default: every row;
    `decisions` by row), compiled into one table of operation columns, with what they said
    besides operations."""
    compiled = CompiledDecisions()
    parts = []
    if arrays is not None:
        rows = market.all_rows if rows is None else rows
        playing = np.flatnonzero(market.playing[rows])
        arrays, rows = arrays.take(playing), rows[playing]
        parts.append(_array_columns(arrays, rows))
        if arrays.messages is not None:
            compiled.messages += zip(rows.tolist(), arrays.messages.tolist())
    parsed = {
        i: raw if isinstance(raw, ParsedDecision) else parse_decision(raw, market.promotions is not None)
        for i, raw in sorted(decisions.items())
        if market.playing[i]
    }
    for i, decision in parsed.items():
        if decision.rejections:  # not decisions or operations at all: these come first
            compiled.rejected[i].extend(decision.rejections)
            compiled.malformed[i] = len(decision.rejections)
        if decision.plan:
            compiled.plans[i] = _kept_plan(market, decision.plan)
        compiled.messages.append((i, decision.message))
    if parsed:
        parts.append(market.rules.columns(parsed, compiled.unknown))
    compiled.columns = _joined(parts)
    return compiled


def _kept_plan(market: MarketState, plan: list[PlannedPrice]) -> dict[str, float]:
    """product -> planned price, for the plan's products the market sells at prices a
    set_price would be allowed (a later item for the same product wins)."""
    kept = {}
    for item in plan:
        j = market.pid.get(item.product)
        if j is not None and math.isfinite(item.price) and 0 < item.price <= market.ceiling[j]:
            kept[item.product] = item.price
    return kept


def _array_columns(decisions: ArrayDecisions, rows: np.ndarray) -> Submitted:
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
