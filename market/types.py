"""What crosses the market's boundary: decisions in, observations and day records out.

A decision is a list of operations, and optionally a plan (the prices the merchant intends
to hold) and a message (what it tells its rivals, in a market where merchants may talk).
Each operation is validated on its own, so one bad operation is rejected with a reason
while the others still apply. `Decision`'s JSON schema is what a language model is asked
to fill.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal, NamedTuple, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, WithJsonSchema

from common.errors import first_problem


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SetPrice(_Op):
    """Post a new price for a product, effective for today's customers."""

    op: Literal["set_price"] = "set_price"
    product: str
    price: float


class Order(_Op):
    """Buy stock from the supplier, paid now, arriving after the product's lead time."""

    op: Literal["order"] = "order"
    product: str
    quantity: float
    supplier: str | None = Field(
        None,
        description="a supplier listed for the product, at its cost and lead time; none: the usual one",
    )


class Promote(_Op):
    """Put a product on promotion: customers pay the price less the discount (a share of it)
    for `days` days from today, and some are drawn to offers on promotion."""

    op: Literal["promote"] = "promote"
    product: str
    discount: float
    days: int


class Advertise(_Op):
    """Spend cash on advertising today; it lifts reputation with diminishing returns."""

    op: Literal["advertise"] = "advertise"
    amount: float


class Collect(_Op):
    """Collect the receivables that are due (credit sales past their credit days)."""

    op: Literal["collect"] = "collect"


class Wait(_Op):
    """Do nothing."""

    op: Literal["wait"] = "wait"


Operation = Annotated[SetPrice | Order | Advertise | Collect | Wait | Promote, Field(discriminator="op")]
_OPERATION = TypeAdapter(Operation)
# where the market runs no promotions, `promote` is no operation at all (a malformed one, named
# among the kinds there are as it was before promotions existed)
_OPERATION_WITHOUT_PROMOTIONS: TypeAdapter[Any] = TypeAdapter(
    Annotated[SetPrice | Order | Advertise | Collect | Wait, Field(discriminator="op")]
)
OPERATION_TYPES: tuple[type[_Op], ...] = get_args(get_args(Operation)[0])
OPERATION_KINDS: tuple[str, ...] = tuple(t.model_fields["op"].default for t in OPERATION_TYPES)
VALUE_FIELDS: tuple[str | None, ...] = tuple(
    next((f for f in t.model_fields if f not in ("op", "product")), None) for t in OPERATION_TYPES
)
"""Each kind's number (price, quantity, amount; None: it has none), in OPERATION_KINDS' order."""
KIND_INDEX = {name: k for k, name in enumerate(OPERATION_KINDS)}


class PlannedPrice(BaseModel):
    """A price the merchant intends to post for a product in the coming days (not an
    operation: it changes nothing in the market)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    product: str
    price: float


_PLANNED = TypeAdapter(PlannedPrice)

MESSAGE_LIMIT = 280
"""The most characters a message may have: a short post, enough to name a price and a threat."""


class Decision(BaseModel):
    """A merchant's decision for one day."""

    model_config = ConfigDict(extra="forbid")

    operations: list[Operation] = Field(default_factory=list)
    note: str | None = Field(None, description="optional: the merchant's plan or reasoning")
    plan: list[PlannedPrice] | None = Field(
        None,
        description="optional: the price you intend to post for each product in the coming days; "
        "it stands until you state a new plan for that product",
    )
    # The schema bounds the text, the validator does not: a longer message is the market's to
    # refuse (a rejection of the message alone), not a reason to refuse the whole decision.
    message: Annotated[str, WithJsonSchema({"type": "string", "maxLength": MESSAGE_LIMIT})] | None = Field(
        None,
        description=f"optional: a message to your rivals, at most {MESSAGE_LIMIT} characters; "
        "they read it tomorrow (only in a market where merchants may talk)",
    )


class RejectionCode(StrEnum):
    """Why the market refused an operation, as metrics count it (the message beside it is for
    people and may be reworded)."""

    MALFORMED_DECISION = "malformed_decision"  # not a decision at all (not JSON, no operations list)
    MALFORMED_OPERATION = "malformed_operation"  # an item that is no operation of the schema
    UNKNOWN_PRODUCT = "unknown_product"
    UNKNOWN_SUPPLIER = "unknown_supplier"  # an order naming a supplier its product does not list
    PRICE_NOT_POSITIVE = "price_not_positive"  # zero, negative or not finite
    PRICE_ABOVE_CEILING = "price_above_ceiling"
    PRICE_ABOVE_CAP = "price_above_cap"  # a regulator's price cap in force (market.scenario.Intervention)
    QUANTITY_NOT_POSITIVE = "quantity_not_positive"
    FRACTIONAL_QUANTITY = "fractional_quantity"  # where units are whole
    ORDER_OVER_CASH = "order_over_cash"
    ADVERTISING_NEGATIVE = "advertising_negative"  # or not finite
    ADVERTISING_OVER_CASH = "advertising_over_cash"
    PROMOTION_OUT_OF_RANGE = "promotion_out_of_range"  # a discount or days the market does not allow
    MESSAGE_NOT_TEXT = "message_not_text"  # a decision's message that is not a string
    MESSAGE_TOO_LONG = "message_too_long"  # longer than MESSAGE_LIMIT characters


MESSAGE_INDEX = -2
"""Rejection.index of a decision's message."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """An operation the market did not apply: its code, and why in words.

    index is the operation's position in the decision, -1 for the decision as a whole (not a
    decision at all: the match records a fault), or MESSAGE_INDEX (-2) for its message, which
    was not delivered while the operations still applied.
    """

    index: int
    operation: Any
    reason: str
    code: RejectionCode


class ParsedDecision(NamedTuple):
    """A decision as the market reads it: each well-formed operation with its position in
    the decision, the rejected ones, the well-formed items of its plan, and its message as
    the merchant wrote it (None: none; the market checks it only where merchants talk, see
    `delivered`)."""

    operations: list[tuple[int, Any]]
    rejections: list[Rejection]
    plan: list[PlannedPrice]
    message: Any = None


def parse_decision(raw: Any, promotions: bool = True) -> ParsedDecision:
    """Turn whatever a merchant returned into typed operations, each with its position in
    the decision (so that a later rejection can name it), rejections, and the plan.

    Accepts a Decision, a dict with "operations", a list of operations, a JSON string of
    either, or None (do nothing). Each operation is validated on its own.

    A plan comes with a Decision or a dict with "operations" (its "plan": a list of
    {product, price}); a plan item that is not well-formed is left out, not rejected: it is
    no operation. A message comes the same way (its "message"), unchecked. Without
    `promotions` a promote item is a malformed operation."""
    adapter = _OPERATION if promotions else _OPERATION_WITHOUT_PROMOTIONS
    if raw is None:
        return ParsedDecision([], [], [])
    if isinstance(raw, Decision):
        return ParsedDecision(list(enumerate(raw.operations)), [], raw.plan or [], raw.message)
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            why = getattr(exc, "msg", None) or str(exc)  # UnicodeDecodeError has no .msg
            return _malformed(raw, f"not JSON ({why})")
    plan: list[PlannedPrice] = []
    message = None
    if isinstance(raw, dict):
        if "operations" not in raw:
            return _malformed(raw, "no 'operations' list")
        plan, message = _plan(raw.get("plan")), raw.get("message")
        raw = raw["operations"]
    if not isinstance(raw, list):
        return _malformed(raw, "operations must be a list")
    operations: list[tuple[int, Any]] = []
    rejections: list[Rejection] = []
    for index, item in enumerate(raw):
        if isinstance(item, _Op):
            operations.append((index, item))
            continue
        try:
            operations.append((index, adapter.validate_python(item)))
        except ValidationError as exc:
            rejections.append(
                Rejection(
                    index,
                    _clip(item),
                    f"malformed operation: {first_problem(exc).said_at_path()}",
                    RejectionCode.MALFORMED_OPERATION,
                )
            )
    return ParsedDecision(operations, rejections, plan, message)


def _malformed(raw: Any, why: str) -> ParsedDecision:
    return ParsedDecision(
        [], [Rejection(-1, _clip(raw), f"malformed decision: {why}", RejectionCode.MALFORMED_DECISION)], []
    )


def delivered(message: Any) -> tuple[str, Rejection | None]:
    """What the market delivers of a message where merchants talk: its text ("" for None:
    nothing said), or nothing and the rejection saying why (not text, too long)."""
    if message is None:
        return "", None
    if not isinstance(message, str):
        return "", Rejection(
            MESSAGE_INDEX, _clip(message), "message must be text", RejectionCode.MESSAGE_NOT_TEXT
        )
    if len(message) > MESSAGE_LIMIT:
        why = f"message of {len(message)} characters is longer than {MESSAGE_LIMIT}: not delivered"
        return "", Rejection(MESSAGE_INDEX, _clip(message), why, RejectionCode.MESSAGE_TOO_LONG)
    return message, None


def _plan(raw: Any) -> list[PlannedPrice]:
    """The well-formed items of a plan as a merchant wrote it."""
    if not isinstance(raw, list):
        return []
    plan = []
    for item in raw:
        try:
            plan.append(item if isinstance(item, PlannedPrice) else _PLANNED.validate_python(item))
        except ValidationError:
            continue
    return plan


def _clip(value: Any, limit: int = 500) -> Any:
    """Keep garbage small enough to store."""
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, (dict, list)):
        try:
            if len(json.dumps(value)) <= limit:
                return value
        except (TypeError, ValueError):
            pass
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


# The types below are built many thousands of times a second on the match loop, so they are
# slotted dataclasses rather than pydantic models (which cost ~20 us each to construct).
# pydantic still validates and serialises them through TypeAdapter (see `record_adapter`).


@dataclass(slots=True)
class ProductState:
    """A merchant's own position in one product. spoiling: for a perishable product, the
    units in stock that spoil at the end of today, of tomorrow, ... if they are not sold
    first (sales take the oldest first); None for one that keeps."""

    product: str
    price: float
    unit_cost: float
    inventory: float
    in_transit: float
    lead_time: int
    holding_cost: float
    spoiling: list[float] | None = None
    discount: float = 0.0  # of a promotion running today: customers pay price * (1 - discount)
    discount_until: int = 0  # its last day


@dataclass(slots=True)
class PublicMerchant:
    """What everyone can see of a merchant, as of the end of yesterday.

    Fields the scenario keeps private are None.
    """

    merchant: str
    prices: dict[str, float] | None
    reputation: float | None
    units_sold: dict[str, float] | None
    bankrupt: bool


@dataclass(slots=True)
class PublicCompetitor:
    """A scripted competitor (market.competitors) as the merchants see it in the morning: its
    prices today, of the products it sells, and its reputation; None where the scenario hides
    rivals' prices or reputations."""

    name: str
    prices: dict[str, float] | None
    reputation: float | None


@dataclass(slots=True)
class EventNotice:
    """An event as merchants are told of it (market.scenario.Event), or a regulator's price
    cap or forced price (market.scenario.Intervention: `kind` price_cap or forced_price, its
    `price`, a multiplier of 1)."""

    name: str
    kind: str
    product: str | None
    start_day: int
    end_day: int
    multiplier: float
    shape: str = "step"
    price: float | None = None


@dataclass(slots=True)
class DayRecord:
    """What happened to one merchant on one day: the decision, what the market did with
    it, and the state after the day. Money identities hold on every record:

    cash_end - cash_start = revenue_cash + collected - purchases - refunds - advertising - holding - fixed
    receivables(today) = receivables(yesterday) + revenue - revenue_cash - bad_debt - collected

    first_choice: customers who chose this merchant (in any round of choosing);
    lost_sales: those of them turned away by a stock-out; spoiled: units of a perishable
    product past their shelf life at the end of the day, written off at the day's unit cost;
    inventory: units in stock at the end of the day (after spoilage); late: units ordered from
    a supplier that were due to arrive today and did not; purchase_savings: what the day's
    orders from listed suppliers cost less than at the product's unit cost (negative: more),
    which goods being valued at that cost adds to net worth; returned: units the day's
    customers brought back (customer segments' return_rate), refunded at the price they paid
    (refunds, from cash); restocked: those of them fit to sell again, back in stock, the rest
    written off at the day's unit cost; discount: the share off the price of a promotion
    running that day (customers paid price * (1 - discount)); satisfaction: the customer-
    satisfaction index at the end of the day (1 to 5; 0 where the scenario keeps none);
    receivables: credit sales
    outstanding at the end of the day;
    net_worth: cash + stock in hand and in transit at unit cost + receivables;
    bad_debt: the day's credit sales that will never be paid (Finance.bad_debt_share), written
    off as they are made, so they never enter the receivables;
    plan: the prices the day's decision planned for the coming days (see Decision.plan), for
    products the market sells and at prices it would accept; empty when it stated none.
    message: what the day's decision told the rivals, who read it the next day (only where
    merchants talk, see Decision.message); empty when it said nothing or was not delivered.
    """

    merchant: str
    day: int
    operations: list[dict]
    rejections: list[Rejection]
    prices: dict[str, float]
    first_choice: dict[str, float]
    units_sold: dict[str, float]
    lost_sales: dict[str, float]
    spoiled: dict[str, float]
    late: dict[str, float]
    returned: dict[str, float]
    restocked: dict[str, float]
    discount: dict[str, float]
    arrived: dict[str, float]
    ordered: dict[str, float]
    inventory: dict[str, float]
    in_transit: dict[str, float]
    unit_cost: dict[str, float]
    revenue: float
    revenue_cash: float
    refunds: float
    bad_debt: float
    collected: float
    purchases: float
    purchase_savings: float
    advertising: float
    holding: float
    fixed: float
    cash_start: float
    cash_end: float
    receivables: float
    reputation: float
    satisfaction: float
    net_worth: float
    bankrupt: bool
    plan: dict[str, float] = field(default_factory=dict)
    message: str = ""


@dataclass(slots=True)
class RivalMessage:
    """What a rival of the match told the others yesterday."""

    merchant: str
    text: str


@dataclass(slots=True)
class Observation:
    """Everything one merchant knows at the start of a day.

    day counts from 1 to days; receivables_due may be collected today, receivables_pending
    are not yet due; market lists every merchant, this one included (an entrant from the day
    it opens). messages: None where merchants do not talk; where they do, what the other
    merchants of the match said yesterday (those who said something, in seat order; empty on
    day 1). competitors: the scenario's scripted competitors.
    """

    merchant: str
    day: int
    days: int
    cash: float
    reputation: float
    receivables_due: float
    receivables_pending: float
    products: list[ProductState]
    yesterday: DayRecord | None
    market: list[PublicMerchant]
    events: list[EventNotice]
    fixed_daily_cost: float
    messages: list[RivalMessage] | None = None
    competitors: list[PublicCompetitor] = field(default_factory=list)
    satisfaction: float | None = None  # its customer-satisfaction index (1 to 5); None: none kept
    seat: int = 0  # its seat in the match, from 0 (the seats of a scenario's `seats:` differ)


@dataclass(frozen=True, eq=False)
class Board:
    """What the merchants of each match see of one another as of the end of yesterday: a
    row per merchant, a match's merchants in consecutive rows (`seats` per match), NaN where
    the scenario hides it."""

    seats: int
    prices: np.ndarray  # [row, product]
    reputation: np.ndarray  # [row]
    units_sold: np.ndarray  # [row, product], since the match began
    closed: np.ndarray  # [row] bool: not selling (gone bankrupt, or an entrant not yet open)
    # [match, competitor, product]: the scripted competitors' prices today (market.competitors)
    competitor_prices: np.ndarray | None = None

    @cached_property
    def cheapest_rival(self) -> np.ndarray:
        """Per row and product, the lowest price another merchant of its match that is not
        closed posted, or a scripted competitor posts today; NaN where there is none or
        rivals' prices are hidden."""
        m, p = self.prices.shape
        n = self.seats
        if n < 2:
            cheapest = np.full((m, p), math.inf)
        else:
            posted = np.where(self.closed[:, None] | np.isnan(self.prices), math.inf, self.prices)
            posted = posted.reshape(-1, n, p)  # [match, seat, product]
            # each match's cheapest two merchants, per product
            two = np.argsort(posted, axis=1, kind="stable")[:, :2]
            lowest = np.take_along_axis(posted, two[:, :1], 1)
            second = np.take_along_axis(posted, two[:, 1:], 1)
            cheapest = np.where(np.arange(n)[None, :, None] == two[:, :1], second, lowest).reshape(m, p)
        if self.competitor_prices is not None and self.competitor_prices.shape[1]:
            scripted = np.min(np.nan_to_num(self.competitor_prices, nan=math.inf), axis=1)  # [match, product]
            cheapest = np.minimum(cheapest, np.repeat(scripted, n, axis=0))
        cheapest[cheapest == math.inf] = math.nan  # no rival selling the product
        return cheapest

    def copy(self) -> Board:
        scripted = self.competitor_prices
        return Board(
            self.seats,
            self.prices.copy(),
            self.reputation.copy(),
            self.units_sold.copy(),
            self.closed.copy(),
            None if scripted is None else scripted.copy(),
        )


@dataclass(slots=True, eq=False)  # slotted: a team of rule merchants takes its rows from it every day
class MarketView:
    """The start of a day as the merchants at `rows` of the market see it, in numbers: their
    own books (a row each, columns per product in the scenario's order) and the board of
    their matches. The market makes one for all its merchants each day; their Observations
    are read from it, and the rule merchants decide from it directly. `MarketView.of` reads
    it back from one merchant's Observation.

    receivables_due may be collected today; receivables_pending are not yet due; events are
    the announced ones not yet over (or trends); spoiling [row, product, k]: the units in
    stock that spoil at the end of the k-th day from today (0: tonight) unless sold, zero for
    products that keep, None where none perishes; promotions: each row's latest promotion of
    each product, its discount and its last day [row, product], None where the scenario runs
    none; satisfaction [row]: the customer-satisfaction index, None where none is kept."""

    day: int
    days: int
    fixed_daily_cost: float
    unit_cost: np.ndarray  # [row, product], today's
    events: list[EventNotice]
    rows: np.ndarray  # of the market (and of the board)
    cash: np.ndarray
    reputation: np.ndarray
    receivables_due: np.ndarray
    receivables_pending: np.ndarray
    prices: np.ndarray  # [row, product]
    inventory: np.ndarray
    in_transit: np.ndarray
    board: Board
    spoiling: np.ndarray | None = None
    promotions: tuple[np.ndarray, np.ndarray] | None = None
    satisfaction: np.ndarray | None = None

    @property
    def cheapest_rival(self) -> np.ndarray:
        return self.board.cheapest_rival[self.rows]

    def take(self, rows: np.ndarray | slice) -> MarketView:
        """The view of the merchants at `rows` (positions in this view) alone, in that order."""
        return MarketView(
            self.day,
            self.days,
            self.fixed_daily_cost,
            self.unit_cost[rows],
            self.events,
            self.rows[rows],
            self.cash[rows],
            self.reputation[rows],
            self.receivables_due[rows],
            self.receivables_pending[rows],
            self.prices[rows],
            self.inventory[rows],
            self.in_transit[rows],
            self.board,
            None if self.spoiling is None else self.spoiling[rows],
            None if self.promotions is None else (self.promotions[0][rows], self.promotions[1][rows]),
            None if self.satisfaction is None else self.satisfaction[rows],
        )

    def frozen(self) -> MarketView:
        """This view with arrays of its own: the market's view shares its arrays, which the
        next day changes in place; this one keeps reading the morning it was made."""
        return MarketView(
            self.day,
            self.days,
            self.fixed_daily_cost,
            self.unit_cost.copy(),
            list(self.events),
            self.rows.copy(),
            self.cash.copy(),
            self.reputation.copy(),
            self.receivables_due.copy(),
            self.receivables_pending.copy(),
            self.prices.copy(),
            self.inventory.copy(),
            self.in_transit.copy(),
            self.board.copy(),
            None if self.spoiling is None else self.spoiling.copy(),
            None if self.promotions is None else (self.promotions[0].copy(), self.promotions[1].copy()),
            None if self.satisfaction is None else self.satisfaction.copy(),
        )

    @classmethod
    def of(cls, observation: Observation) -> MarketView:
        """One merchant's view, from its Observation."""
        own, market = observation.products, observation.market
        ids = [s.product for s in own]

        def table(tables: list[dict[str, float] | None]) -> np.ndarray:
            """The board's column of `tables` [merchant, product]; what the scenario hides: NaN."""
            return np.array(
                [[math.nan if t is None else t.get(pid, math.nan) for pid in ids] for t in tables],
                dtype=float,
            ).reshape(len(tables), len(ids))

        reputation = np.array(
            [math.nan if m.reputation is None else m.reputation for m in market], dtype=float
        )
        board = Board(
            len(market),
            table([m.prices for m in market]),
            reputation,
            table([m.units_sold for m in market]),
            np.array([m.bankrupt for m in market]),
            table([c.prices for c in observation.competitors])[None],
        )
        me = np.array([[m.merchant for m in market].index(observation.merchant)])
        spoiling = None
        if any(s.spoiling is not None for s in own):
            width = max(len(s.spoiling or ()) for s in own)
            spoiling = np.zeros((1, len(own), width))
            for j, s in enumerate(own):
                spoiling[0, j, : len(s.spoiling or ())] = s.spoiling or ()
        return cls(
            observation.day,
            observation.days,
            observation.fixed_daily_cost,
            np.array([[s.unit_cost for s in own]]),
            observation.events,
            me,
            np.array([observation.cash]),
            np.array([observation.reputation]),
            np.array([observation.receivables_due]),
            np.array([observation.receivables_pending]),
            np.array([[s.price for s in own]]),
            np.array([[s.inventory for s in own]]),
            np.array([[s.in_transit for s in own]]),
            board,
            spoiling,
            (np.array([[s.discount for s in own]]), np.array([[s.discount_until for s in own]])),
            None if observation.satisfaction is None else np.array([observation.satisfaction]),
        )


class ArrayDecisions(NamedTuple):
    """Decisions as arrays, one row per merchant: row i stands for the operations
    [collect, if collect[i]] + [set_price for each product whose price is not NaN] +
    [order for each product whose quantity is above 0], in that order: the rule merchants'
    answer, compiled into the market's operation columns without an operation model.
    messages: each row's message ("": none; see Decision.message), or None when no row
    says anything, which is most days of most rules and costs nothing."""

    collect: np.ndarray  # [merchant] bool
    prices: np.ndarray  # [merchant, product], NaN: keep the price
    orders: np.ndarray  # [merchant, product], units
    messages: np.ndarray | None = None  # [merchant] str (an object array)
    suppliers: np.ndarray | None = (
        None  # [merchant, product]: each order's (Operations.supplier); None: usual
    )

    def take(self, rows: np.ndarray) -> ArrayDecisions:
        """The decisions of `rows` alone, in that order."""
        said = None if self.messages is None else self.messages[rows]
        sources = None if self.suppliers is None else self.suppliers[rows]
        return ArrayDecisions(self.collect[rows], self.prices[rows], self.orders[rows], said, sources)

    def operations(
        self, row: int, product_ids: Sequence[str], suppliers: Sequence[Sequence[str]] = ()
    ) -> list[Operation]:
        """Row `row` as operation models (`suppliers`: per product, its listed suppliers' names)."""
        operations: list[Operation] = [Collect()] if self.collect[row] else []
        prices, orders = self.prices[row].tolist(), self.orders[row].tolist()
        sources = [0] * len(orders) if self.suppliers is None else self.suppliers[row].tolist()
        operations.extend(
            SetPrice(product=p, price=price) for p, price in zip(product_ids, prices) if not math.isnan(price)
        )
        operations.extend(
            Order(product=p, quantity=units, supplier=suppliers[j][k - 1] if k else None)
            for j, (p, units, k) in enumerate(zip(product_ids, orders, sources))
            if units > 0
        )
        return operations


record_adapter: TypeAdapter[DayRecord] = TypeAdapter(DayRecord)
