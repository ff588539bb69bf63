"""What the market allows an operation, in one place: the engine applies a day's operations
by these rules (market.applying), and an agent's tools ask them of one merchant's operations
before the day closes (`judge_day`), so that the answer a tool gives is the market's own.

An operation is judged on its own (a price within the ceiling, a positive quantity, whole
units where they are, a promotion the market allows) and then, for those that spend or take
money, one after another in the merchant's order against the cash the earlier ones left
(collect first adds the receivables due).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from market.daylog import operation_dict, supplier_number
from market.scenario import Scenario, event_multiplier
from market.types import (
    KIND_INDEX,
    VALUE_FIELDS,
    Observation,
    ParsedDecision,
    Rejection,
    RejectionCode,
    parse_decision,
)

SET_PRICE, ORDER, ADVERTISE, COLLECT, PROMOTE = (
    KIND_INDEX[k] for k in ("set_price", "order", "advertise", "collect", "promote")
)
# Per kind, by KIND_INDEX: a number must be above _LOWEST (a price and a quantity above 0; an
# amount at least 0: above the negative number nearest 0) and at most the price ceiling or _HIGHEST
# (finite); a kind without a number (_FREE) is always valid.
_LOWEST = np.array([{"advertise": -math.ulp(0.0)}.get(kind, 0.0) for kind in KIND_INDEX])
_HIGHEST = np.finfo(float).max
_FREE = np.array([field is None for field in VALUE_FIELDS])
_MOST_DAYS = np.iinfo(np.int16).max
_REASONS = {
    RejectionCode.PRICE_NOT_POSITIVE: "price must be a positive number",
    RejectionCode.PRICE_ABOVE_CEILING: "price {value:.2f} is above the ceiling {ceiling:.2f}",
    RejectionCode.PRICE_ABOVE_CAP: "price {value:.2f} is above the price cap {cap:.2f} in force today",
    RejectionCode.QUANTITY_NOT_POSITIVE: "order quantity must be a positive number",
    RejectionCode.FRACTIONAL_QUANTITY: "order quantity must be a whole number of units",
    RejectionCode.ORDER_OVER_CASH: "order costs {cost:.2f}, more than cash {cash:.2f}",
    RejectionCode.ADVERTISING_NEGATIVE: "advertising amount must be a non-negative number",
    RejectionCode.ADVERTISING_OVER_CASH: "advertising {value:.2f} exceeds cash {cash:.2f}",
    RejectionCode.PROMOTION_OUT_OF_RANGE: "a promotion of {value:g} off for {days} days is not allowed",
}


class Submitted(NamedTuple):
    """Operations to apply, by row and then `position` (in the row's decision); product -1 and
    value NaN for kinds without them; supplier and days as Operations has them."""

    row: np.ndarray
    position: np.ndarray
    kind: np.ndarray
    product: np.ndarray
    value: np.ndarray
    supplier: np.ndarray
    days: np.ndarray


NO_OPERATIONS = Submitted(
    np.zeros(0, np.int64),
    np.zeros(0, np.int64),
    np.zeros(0, np.int8),
    np.zeros(0, np.int16),
    np.zeros(0),
    np.zeros(0, np.int16),
    np.zeros(0, np.int16),
)


class Judged(NamedTuple):
    """The day's operations judged (OperationRules.judge), each: `valid` on its own,
    `accepted` (valid, and with the cash it needs), `cost` of a unit ordered, `spend` (what it
    costs: an order's units at that cost, an advertising amount) and `found` (the cash it
    found, for those that spend or collect); `collected` per row."""

    valid: np.ndarray
    accepted: np.ndarray
    cost: np.ndarray
    spend: np.ndarray
    found: np.ndarray
    collected: np.ndarray
    price_limit: np.ndarray  # [product]: the highest price the market takes that day (ceiling or cap)


class OperationRules:
    """A scenario's rules for operations: the products it sells and their price ceilings,
    the suppliers it lists, whole units, the promotions it allows."""

    def __init__(self, scenario: Scenario):
        products = scenario.products
        self.scenario = scenario
        self.product_ids = scenario.product_ids
        self.pid = {p: j for j, p in enumerate(self.product_ids)}
        self.ceiling = np.array([p.price_ceiling for p in products])
        # [kind, product]: the highest number an operation may carry (_HIGHEST but for a price)
        self.highest = np.full((len(KIND_INDEX), len(products)), _HIGHEST)
        self.highest[SET_PRICE] = self.ceiling
        self.caps = [act for act in scenario.interventions if act.kind == "price_cap"]
        self.promotions = scenario.promotions
        self.highest[PROMOTE] = 0.0 if scenario.promotions is None else scenario.promotions.max_discount
        self.supplier_names = scenario.supplier_names
        listed = 1 + max(len(p.suppliers) for p in products)
        # [product, k]: supplier k's unit cost (k = 0 the usual one: the product's own, which
        # seats may change)
        self.supply_cost = np.full((len(products), listed), math.nan)
        for j, product in enumerate(products):
            for k, supplier in enumerate(product.suppliers, 1):
                self.supply_cost[j, k] = supplier.unit_cost

    def price_limit(self, day: int) -> np.ndarray:
        """The highest price of each product the market takes on `day` [product]: its ceiling,
        or the lowest price cap in force (market.scenario.Intervention)."""
        limit = self.ceiling
        for cap in self.caps:
            if cap.running(day):
                assert cap.price is not None  # a price_cap has one (Intervention)
                capped = np.array(
                    [cap.price if cap.product in (None, p) else math.inf for p in self.product_ids]
                )
                limit = np.minimum(limit, capped)
        return limit

    def cost_factor(self, day: int) -> np.ndarray:
        """What the cost events multiply each product's unit costs by on `day` [product]."""
        return np.array(
            [event_multiplier(self.scenario.events, "cost", p.id, day) for p in self.scenario.products]
        )

    def columns(self, parsed: Mapping[int, ParsedDecision], unknown: dict[int, list[Rejection]]) -> Submitted:
        """The operations of parsed decisions (by row, ascending) as columns; the rejections
        of those naming a product the market does not sell, or a supplier their product does
        not list, go into `unknown`, by row."""
        row, index, kind, product, value, supplier, days = [], [], [], [], [], [], []
        for i, decision in parsed.items():
            for k, op in decision.operations:
                fields = op.__dict__  # not getattr: a pydantic model's missing attribute costs microseconds
                name = fields.get("product")
                j = -1 if name is None else self.pid.get(name)
                named = fields.get("supplier")  # an order's supplier, where it names one
                source = 0 if named is None or j is None else supplier_number(self.supplier_names, j, named)
                if j is None or source is None:
                    given = {key: v for key, v in fields.items() if v is not None}
                    unknown.setdefault(i, []).append(
                        Rejection(k, given, f"unknown product {name!r}", RejectionCode.UNKNOWN_PRODUCT)
                        if j is None
                        else Rejection(
                            k,
                            given,
                            f"{name} has no supplier {named!r}",
                            RejectionCode.UNKNOWN_SUPPLIER,
                        )
                    )
                    continue
                code = KIND_INDEX[op.op]
                row.append(i)
                index.append(k)
                kind.append(code)
                product.append(j)
                number = VALUE_FIELDS[code]
                value.append(getattr(op, number) if number else math.nan)
                supplier.append(source)
                # kept within int16: a promotion of more days than any market allows is refused anyway
                days.append(min(max(fields.get("days", 0), 0), _MOST_DAYS))
        return Submitted(
            np.array(row, dtype=np.int64),
            np.array(index, dtype=np.int64),
            np.array(kind, dtype=np.int8),
            np.array(product, dtype=np.int16),
            np.array(value, dtype=float),
            np.array(supplier, dtype=np.int16),
            np.array(days, dtype=np.int16),
        )

    def judge(
        self, ops: Submitted, day: int, unit_cost: np.ndarray, cash: np.ndarray, due: np.ndarray
    ) -> Judged:
        """Judge the day's operations, each as if one by one in its row's order, against each
        row's `unit_cost` [row, product], `cash` and receivables `due` [row], which it moves as
        the accepted ones spend and collect (in place)."""
        row, kind, product, value, supplier = ops.row, ops.kind, ops.product, ops.value, ops.supplier
        ordering, advertising, collecting = kind == ORDER, kind == ADVERTISE, kind == COLLECT
        item = np.maximum(product, 0)  # for kinds without a product: any column, masked out below
        limit, highest = self.price_limit(day), self.highest
        if limit is not self.ceiling:
            highest = highest.copy()
            highest[SET_PRICE] = limit
        with np.errstate(all="ignore"):
            # within its kind's bounds (NaN, inf and -inf are outside all), or of a kind without a number
            valid = ((value > _LOWEST[kind]) & (value <= highest[kind, item])) | _FREE[kind]
            if self.scenario.whole_units:
                valid &= ~ordering | (value == np.floor(value))
            if self.promotions is not None:  # a promotion for a number of days the market allows
                valid &= (kind != PROMOTE) | ((ops.days >= 1) & (ops.days <= self.promotions.max_days))
            cost = unit_cost[row, item]  # of a unit ordered: from the usual supplier, or a listed one
            if self.supplier_names and supplier.any():
                listed = self.supply_cost[item, supplier] * self.cost_factor(day)[item]
                cost = np.where(supplier > 0, listed, cost)
            spend = np.where(ordering, value * cost, np.where(advertising, value, 0.0))
        accepted = valid.copy()
        collected = np.zeros(len(cash))
        found = np.zeros(len(row))  # the cash each spending operation found
        spending = np.flatnonzero(ordering | advertising | collecting)
        if spending.size:
            rows_spending = row[spending]
            turn = np.arange(len(spending)) - np.searchsorted(
                rows_spending, rows_spending
            )  # k-th spending operation of its row
            for k in range(int(turn.max()) + 1):
                at = spending[turn == k]
                r = row[at]
                takes = collecting[at]
                if takes.any():
                    gain = np.where(takes, due[r], 0.0)
                    cash[r] += gain
                    due[r] -= gain
                    collected[r] += gain
                found[at] = money = cash[r]
                accepted[at] = ok = valid[at] & ((spend[at] <= money) | takes)  # collecting needs no cash
                cash[r] = money - np.where(ok, spend[at], 0.0)
        return Judged(valid, accepted, cost, spend, found, collected, limit)

    def rejection(self, ops: Submitted, judged: Judged, x: int) -> Rejection:
        """Why operation x, which `judged` did not accept, was refused."""
        kind, j, value = int(ops.kind[x]), int(ops.product[x]), float(ops.value[x])
        cash = float(judged.found[x]) if judged.valid[x] else None  # short of cash: what it found
        positive = math.isfinite(value) and value > 0
        if kind == SET_PRICE:
            code = (
                RejectionCode.PRICE_NOT_POSITIVE
                if not positive
                else RejectionCode.PRICE_ABOVE_CEILING
                if value > self.ceiling[j]
                else RejectionCode.PRICE_ABOVE_CAP
            )
        elif kind == ORDER:
            code = (
                RejectionCode.QUANTITY_NOT_POSITIVE
                if not positive
                else RejectionCode.FRACTIONAL_QUANTITY
                if cash is None
                else RejectionCode.ORDER_OVER_CASH
            )
        elif kind == PROMOTE:
            code = RejectionCode.PROMOTION_OUT_OF_RANGE
        else:
            code = RejectionCode.ADVERTISING_NEGATIVE if cash is None else RejectionCode.ADVERTISING_OVER_CASH
        days = int(ops.days[x])
        why = _REASONS[code].format(
            value=value,
            ceiling=float(self.ceiling[j]),
            cap=float(judged.price_limit[j]),
            cost=float(judged.spend[x]),
            cash=cash,
            days=days,
        )
        if kind == PROMOTE:
            allowed = self.promotions
            why = (
                "this market runs no promotions"
                if allowed is None
                else f"{why} (it allows up to {allowed.max_discount:g} off for 1 to {allowed.max_days} days)"
            )
        given = operation_dict(
            kind, j, value, self.product_ids, int(ops.supplier[x]), self.supplier_names, days
        )
        return Rejection(int(ops.position[x]), given, why, code)


class DayJudged(NamedTuple):
    """One merchant's operations so far today as the market will judge them at the close
    (`judge_day`): the rejection of each, by its position (None: accepted), and the cash and
    receivables due left after the accepted ones."""

    rejections: list[Rejection | None]
    cash: float
    due: float


def judge_day(rules: OperationRules, observation: Observation, operations: list[Any]) -> DayJudged:
    """How the market will take a merchant's `operations` (as a decision lists them) at the
    close of the observation's day, by the rules it applies then; a message is not judged."""
    parsed = parse_decision({"operations": operations}, rules.promotions is not None)
    rejections: list[Rejection | None] = [None] * len(operations)
    for refused in parsed.rejections:
        rejections[refused.index] = refused
    unknown: dict[int, list[Rejection]] = {}
    ops = rules.columns({0: parsed}, unknown)
    for refused in unknown.get(0, []):
        rejections[refused.index] = refused
    cash, due = np.array([observation.cash]), np.array([observation.receivables_due])
    unit_cost = np.array([[p.unit_cost for p in observation.products]])
    judged = rules.judge(ops, observation.day, unit_cost, cash, due)
    for x in np.flatnonzero(~judged.accepted).tolist():
        refusal = rules.rejection(ops, judged, x)
        rejections[refusal.index] = refusal
    return DayJudged(rejections, float(cash[0]), float(due[0]))
