"""What crosses the market's boundary: decisions in, observations and day records out.

A decision is a list of operations. Each operation is validated on its own, so one bad
operation is rejected with a reason while the others still apply. `Decision`'s JSON
schema is what a language model is asked to fill.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


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


Operation = Annotated[Union[SetPrice, Order, Advertise, Collect, Wait], Field(discriminator="op")]
_OPERATION = TypeAdapter(Operation)


class Decision(BaseModel):
    """A merchant's decision for one day."""

    model_config = ConfigDict(extra="forbid")

    operations: list[Operation] = Field(default_factory=list)
    note: str | None = Field(None, description="optional: the merchant's plan or reasoning")

    @classmethod
    def nothing(cls) -> Decision:
        return cls()


class Rejection(BaseModel):
    """An operation the market did not apply, and why."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(description="position in the decision's operations; -1 for the decision")
    operation: Any
    reason: str


def parse_decision(raw: Any) -> tuple[list[Any], list[Rejection]]:
    """Turn whatever a merchant returned into typed operations plus rejections.

    Accepts a Decision, a dict with "operations", a list of operations, a JSON string of
    either, or None (do nothing). Each operation is validated on its own.
    """
    if raw is None:
        return [], []
    if isinstance(raw, Decision):
        return list(raw.operations), []
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            return [], [Rejection(index=-1, operation=_clip(raw), reason=f"malformed decision: not JSON ({exc.msg})")]
    if isinstance(raw, dict):
        if "operations" not in raw:
            return [], [Rejection(index=-1, operation=_clip(raw), reason="malformed decision: no 'operations' list")]
        raw = raw["operations"]
    if not isinstance(raw, list):
        return [], [Rejection(index=-1, operation=_clip(raw), reason="malformed decision: operations must be a list")]
    operations: list[Any] = []
    rejections: list[Rejection] = []
    for index, item in enumerate(raw):
        if isinstance(item, _Op):
            operations.append(item)
            continue
        try:
            operations.append(_OPERATION.validate_python(item))
        except ValidationError as exc:
            rejections.append(Rejection(index=index, operation=_clip(item), reason=f"malformed operation: {_first_error(exc)}"))
    return operations, rejections


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


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


class ProductState(BaseModel):
    """A merchant's own position in one product."""

    product: str
    price: float
    unit_cost: float
    inventory: float
    in_transit: float
    lead_time: int
    holding_cost: float


class PublicMerchant(BaseModel):
    """What everyone can see of a merchant, as of the end of yesterday.

    Fields the scenario keeps private are None.
    """

    merchant: str
    prices: dict[str, float] | None
    reputation: float | None
    units_sold: dict[str, float] | None
    bankrupt: bool


class EventNotice(BaseModel):
    name: str
    kind: str
    product: str | None
    start_day: int
    end_day: int
    multiplier: float


class Observation(BaseModel):
    """Everything one merchant knows at the start of a day."""

    merchant: str
    day: int = Field(description="today, counting from 1")
    days: int = Field(description="length of the match")
    cash: float
    reputation: float
    receivables_due: float = Field(description="credit sales that may be collected today")
    receivables_pending: float = Field(description="credit sales not yet due")
    products: list[ProductState]
    yesterday: DayRecord | None
    market: list[PublicMerchant] = Field(description="every merchant in the market, this one included")
    events: list[EventNotice]
    fixed_daily_cost: float

    def product(self, product_id: str) -> ProductState:
        for state in self.products:
            if state.product == product_id:
                return state
        raise KeyError(product_id)

    def rivals(self) -> list[PublicMerchant]:
        return [m for m in self.market if m.merchant != self.merchant]


class DayRecord(BaseModel):
    """What happened to one merchant on one day: the decision, what the market did with
    it, and the state after the day. Money identities hold on every record:

    cash_end - cash_start = revenue_cash + collected - purchases - advertising - holding - fixed
    """

    merchant: str
    day: int
    operations: list[dict]
    rejections: list[Rejection]
    prices: dict[str, float]
    first_choice: dict[str, float] = Field(description="customers who chose this merchant first")
    units_sold: dict[str, float]
    lost_sales: dict[str, float] = Field(description="first-choice customers turned away by a stock-out")
    arrived: dict[str, float] = Field(description="units from earlier orders that arrived today")
    ordered: dict[str, float]
    inventory: dict[str, float] = Field(description="units in stock at the end of the day")
    in_transit: dict[str, float]
    unit_cost: dict[str, float]
    revenue: float
    revenue_cash: float
    collected: float
    purchases: float
    advertising: float
    holding: float
    fixed: float
    cash_start: float
    cash_end: float
    receivables: float = Field(description="outstanding credit sales at the end of the day")
    reputation: float
    net_worth: float = Field(description="cash + stock and goods in transit at cost + receivables")
    bankrupt: bool


Observation.model_rebuild()
