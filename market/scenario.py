"""A scenario: the rules of one market, as read from a YAML file: one of those shipped with
the package (market/scenarios/NAME.yaml, by name) or any other by its path.

Every field has a default so a scenario file states only what makes it different.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from common.errors import FieldError
from common.yaml_files import FileModel, load_model

if TYPE_CHECKING:
    from market.types import EventNotice

SHIPPED_SCENARIOS = Path(__file__).with_name("scenarios")  # package data: installed with the package
PRICE_CEILING_FACTOR = 100.0  # a posted price above reference_price * this is rejected

# The widest ranges of a scenario's numbers (each field states its own, within these): far
# beyond any market studied, and where the market's arithmetic stays exact and finite.
MAX_DAYS = 3650  # a match of ten years
MAX_MERCHANTS_PER_MATCH = 16
MAX_MONEY = 1e12  # an amount of money (a price, a cost, cash), in the scenario's currency
MAX_UNITS = 1e9  # units in stock, or ordered
MAX_CUSTOMERS = 1e8  # customers of a product on its busiest day: numpy draws among fewer than 1e9
MAX_TOTAL = 1e15  # a bound on a match's totals (a goal's, the target net worth)
MAX_UTILITY = 1000.0  # a weight or term of customers' utility: choices are certain long before
MAX_FACTOR = 1000.0  # a multiplier (an event's, a weekday's, a price ratio)
MAX_SCALE = 1e6  # what `scale` may multiply a file's money by

Day = Annotated[int, Field(ge=1, le=MAX_DAYS)]
Factor = Annotated[float, Field(ge=0, le=MAX_FACTOR)]
Utility = Annotated[float, Field(ge=-MAX_UTILITY, le=MAX_UTILITY)]


class Supplier(FileModel):
    """Another supplier of a product, besides its usual one (the product's own unit_cost and
    lead_time, always on time): an order names it to buy at its unit cost with its lead time;
    a share 1 - reliability of its orders arrives late_days later than that."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    unit_cost: float = Field(gt=0, le=MAX_MONEY)
    lead_time: int = Field(0, ge=0, le=60)
    reliability: float = Field(1.0, ge=0, le=1, description="the share of its orders that arrive on time")
    late_days: int = Field(2, ge=1, le=60, description="how much later a late order arrives")


class Product(FileModel):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    name: str = ""
    unit_cost: float = Field(gt=0, le=MAX_MONEY, description="what the supplier charges per unit")
    reference_price: float = Field(gt=0, le=MAX_MONEY, description="the price customers judge prices against")
    quality: Utility = Field(0.0, description="enters customers' utility times choice.quality_weight")
    base_demand: float = Field(
        ge=0, le=MAX_CUSTOMERS, description="customers per day wanting this product, before effects"
    )
    holding_cost: float = Field(0.0, ge=0, le=MAX_MONEY, description="cost per unit held overnight")
    lead_time: int = Field(0, ge=0, le=60, description="days from order to arrival; 0 arrives at once")
    initial_stock: float = Field(0.0, ge=0, le=MAX_UNITS)
    initial_price: float | None = Field(None, gt=0, le=MAX_MONEY, description="defaults to reference_price")
    shelf_life: int | None = Field(
        None,
        ge=1,
        le=365,
        description="days a unit can be sold, counting the day it arrives; then it spoils. None: it keeps",
    )
    suppliers: tuple[Supplier, ...] = Field((), description="suppliers besides the usual one")
    returns_resellable: float = Field(
        1.0, ge=0, le=1, description="share of returned units fit to sell again; the rest are written off"
    )

    @model_validator(mode="after")
    def _suppliers_named_once(self) -> Product:
        names = [s.name for s in self.suppliers]
        if len(set(names)) != len(names):
            raise ValueError(f"product {self.id!r}: supplier names must be unique")
        return self

    @property
    def price_ceiling(self) -> float:
        """The highest price the market accepts for the product."""
        return self.reference_price * PRICE_CEILING_FACTOR

    @property
    def start_price(self) -> float:
        return self.initial_price if self.initial_price is not None else self.reference_price


class Choice(FileModel):
    """Multinomial logit: u = -price_sensitivity * price / reference_price
    + reputation_weight * reputation + quality_weight * quality; the outside option has
    utility `no_purchase_utility`."""

    price_sensitivity: float = Field(4.0, ge=0, le=MAX_UTILITY)
    reputation_weight: float = Field(2.0, ge=0, le=MAX_UTILITY)
    quality_weight: float = Field(0.0, ge=0, le=MAX_UTILITY)
    no_purchase_utility: Utility = -2.0
    promotion_response: float = Field(
        0.0, ge=0, le=MAX_UTILITY, description="utility an offer on promotion gains"
    )


class Segment(FileModel):
    """A group of customers: its `share` of every day's customers, and how they choose and
    behave; a field left out is the scenario's choice's. A merchant's sales to it come back
    with probability `return_rate` (the same day, refunded)."""

    name: str = Field(min_length=1)
    share: float = Field(gt=0, le=1)
    price_sensitivity: float | None = Field(None, ge=0, le=MAX_UTILITY)
    promotion_response: float | None = Field(None, ge=0, le=MAX_UTILITY)
    return_rate: float = Field(0.0, ge=0, le=1)


class Goal(FileModel):
    """A campaign goal: a metric of results.scoring.metrics (checked where a tournament is read, as the
    market knows no metrics) that must come out at least, or at most, a bound. Bounds are
    written for the scenario's `days`; where the metric is a flow (revenue, profit) a match
    of another length scales them in proportion."""

    metric: str = Field(min_length=1)
    at_least: float | None = Field(None, ge=-MAX_TOTAL, le=MAX_TOTAL)
    at_most: float | None = Field(None, ge=-MAX_TOTAL, le=MAX_TOTAL)
    scale: float = Field(
        1.0,
        gt=0,
        le=MAX_SCALE,
        description="what a bound on money counts for (the scenario file's `scale` sets it, "
        "as it multiplies every amount of money in the file)",
    )

    @model_validator(mode="after")
    def _one_bound(self) -> Goal:
        bounds = [b for b in (self.at_least, self.at_most) if b is not None]
        if len(bounds) != 1:
            raise ValueError(f"goal {self.metric!r} needs exactly one of at_least and at_most")
        return self

    @model_serializer(mode="wrap")
    def _without_default_scale(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A goal at scale 1 is written without it, so a scenario's or a tournament's
        identity is what it was before goals had a scale."""
        dumped: dict[str, Any] = handler(self)
        if dumped.get("scale") == 1:
            dumped.pop("scale")
        return dumped

    @property
    def bound(self) -> float:
        bound = self.at_least if self.at_least is not None else self.at_most
        assert bound is not None  # the validator saw to it
        return bound

    def label(self, bound: float | None = None) -> str:
        """The goal as people read it, "revenue ≥ 500000", with `bound` in place of its own
        where given (a bound on money, in the currency the scenario plays)."""
        shown = self.bound if bound is None else bound
        return f"{self.metric} {'≥' if self.at_least is not None else '≤'} {shown:g}"


class Satisfaction(FileModel):
    """A customer-satisfaction index per merchant, from 1 to 5, starting at `initial`; each day

        s' = memory * s + (1 - memory) * clip(5 - stockout_weight * stockout_share
                                              - return_weight * return_share
                                              - late_weight * late_share, 1, 5)

    with stockout_share the share of its first-choice customers it turned away, return_share
    the share of its sales brought back, late_share the share of the goods due to it that
    came late (each 0 when there was none). Customers' utility of buying from it gains
    demand_weight * (s - initial)."""

    initial: float = Field(4.0, ge=1, le=5)
    memory: float = Field(0.9, ge=0, le=1)
    stockout_weight: float = Field(4.0, ge=0, le=MAX_UTILITY)
    return_weight: float = Field(4.0, ge=0, le=MAX_UTILITY)
    late_weight: float = Field(2.0, ge=0, le=MAX_UTILITY)
    demand_weight: float = Field(0.3, ge=0, le=MAX_UTILITY)


class Promotions(FileModel):
    """Merchants may put products on promotion (the `promote` operation) with a discount up to
    `max_discount` for 1 to `max_days` days."""

    max_discount: float = Field(0.5, gt=0, lt=1)
    max_days: int = Field(14, ge=1, le=365)


class Demand(FileModel):
    mode: Literal["stochastic", "expected"] = Field(
        "stochastic",
        description="stochastic: Poisson arrivals and sampled choices; expected: market size "
        "times logit share, no noise",
    )
    stock_limited: bool = Field(
        True,
        description="false (expected mode only): sales are not capped by stock and units are "
        "bought at unit cost when sold, an exact logit price game",
    )
    weekday_factors: tuple[Factor, Factor, Factor, Factor, Factor, Factor, Factor] = (1, 1, 1, 1, 1, 1, 1)
    seasonal_amplitude: float = Field(0.0, ge=0, lt=1)
    seasonal_period: int = Field(30, ge=1, le=MAX_DAYS)

    @model_validator(mode="after")
    def _stock_limit_needs_expected(self) -> Demand:
        if not self.stock_limited and self.mode != "expected":
            raise ValueError("stock_limited: false needs mode: expected")
        return self


class Reputation(FileModel):
    """Reputation in [minimum, maximum]; each day

        r' = clip((1 - memory) * fill_rate + memory * r
                  + advertising_gain * (1 - exp(-spend / advertising_scale)))

    where fill_rate is the share of the merchant's first-choice customers it served."""

    initial: float = Field(0.6, ge=0, le=1)
    memory: float = Field(0.9, ge=0, le=1)
    advertising_gain: float = Field(0.05, ge=0, le=1)
    advertising_scale: float = Field(100.0, gt=0, le=MAX_MONEY)
    minimum: float = Field(0.0, ge=0, le=1)
    maximum: float = Field(1.0, ge=0, le=1)


class Finance(FileModel):
    initial_cash: float = Field(10_000.0, ge=0, le=MAX_MONEY)
    fixed_daily_cost: float = Field(0.0, ge=0, le=MAX_MONEY)
    credit_share: float = Field(0.0, ge=0, le=1, description="share of revenue, less refunds, sold on credit")
    credit_days: int = Field(0, ge=0, le=60, description="days until a credit sale may be collected")
    bad_debt_share: float = Field(
        0.0, ge=0, le=1, description="share of credit sales never paid: written off on the day of the sale"
    )


class Event(FileModel):
    """A change of demand or unit cost: a `step` multiplies by `multiplier` from start_day to
    end_day; a `trend` (a downturn, an inflation) drifts there linearly from 1 on start_day
    to `multiplier` on end_day and stays there (see `event_factor`)."""

    name: str
    kind: Literal["demand", "cost"]
    start_day: Day
    end_day: Day
    multiplier: float = Field(gt=0, le=MAX_FACTOR)
    shape: Literal["step", "trend"] = "step"
    product: str | None = Field(None, description="None: every product")
    announce_days_ahead: int = Field(
        0, ge=0, le=MAX_DAYS, description="shown to merchants this many days early"
    )
    announced: bool = True

    @model_validator(mode="after")
    def _ordered(self) -> Event:
        if self.end_day < self.start_day:
            raise ValueError("end_day is before start_day")
        return self


class Intervention(FileModel):
    """A regulator's act on the market from `start_day` to `end_day` (both included):

    - `price_cap`: no posted price of `product` (None: every product) above `price`. The
      market refuses a price above it as above a ceiling, and lowers a price posted before
      to it on the day the cap starts; prices stand where they are when it ends.
    - `forced_price`: the merchants in `seats` (None: every seat) post `price` for `product`
      on those days, whatever they decide (as a deviation probe forces a seat).
    - `memory_reset`: on `start_day` the learners in `seats` forget what they learnt: their
      Q-tables start again from Q0 and their exploration from its first period
      (contestants.qlearning); other merchants are unchanged. It has no price and lasts a day.
    - `entry`: the merchants in `seats` open on `start_day`, a new entrant's. Before it they are
      absent: neither asked to decide, nor selling, nor paying, nor listed among the others'
      rivals, nor in the day records; they open with the scenario's starting books (cash,
      stock, prices, reputation). It has no price, no product and no end_day.

    Merchants are told of an announced price cap or forced price (their observation's
    `interventions`) from `announce_days_ahead` days before it starts to its end; an entrant
    is not announced: the others see it among their rivals from its first day."""

    name: str
    kind: Literal["price_cap", "forced_price", "memory_reset", "entry"]
    start_day: Day
    end_day: Day | None = Field(None, description="None: the start day alone")
    price: float | None = Field(None, gt=0, le=MAX_MONEY)
    product: str | None = Field(None, description="None: every product")
    seats: tuple[Annotated[int, Field(ge=0, lt=MAX_MERCHANTS_PER_MATCH)], ...] | None = Field(
        None,
        min_length=1,
        description="forced_price, memory_reset: None: every seat; entry: the seats that open (from 0)",
    )
    announce_days_ahead: int = Field(0, ge=0, le=MAX_DAYS)
    announced: bool = True

    @model_validator(mode="after")
    def _coherent(self) -> Intervention:
        if self.end_day is not None and self.end_day < self.start_day:
            raise ValueError("end_day is before start_day")
        if self.kind in ("memory_reset", "entry"):
            if (
                self.price is not None
                or self.product is not None
                or self.end_day not in (None, self.start_day)
            ):
                article = "an" if self.kind == "entry" else "a"
                raise ValueError(
                    f"{article} {self.kind} has no price, no product and no end_day: it is one day's act"
                )
            if self.kind == "entry" and (self.seats is None or self.start_day < 2):
                raise ValueError("an entry names its seats and opens on day 2 or later")
            if self.kind == "entry" and self.announce_days_ahead:
                raise ValueError("an entry is not announced: its seats appear among the rivals on its day")
        elif self.price is None:
            raise ValueError(f"a {self.kind} needs a price")
        if self.kind == "price_cap" and self.seats is not None:
            raise ValueError("a price_cap binds every seat: it has no seats")
        return self

    @property
    def last_day(self) -> int:
        return self.start_day if self.end_day is None else self.end_day

    def running(self, day: int) -> bool:
        return self.start_day <= day <= self.last_day

    def binds(self, seat: int) -> bool:
        return self.seats is None or seat in self.seats


def event_multiplier(events: Iterable[Event | EventNotice], kind: str, product: str, day: int) -> float:
    """What the events of `kind` ("demand": customers, "cost": unit cost) multiply `product`'s
    base value by on `day`: the product of the `event_factor`s of those for the product or for
    every product. The market applies it to every event, a merchant to the events it has been
    told of."""
    factor = 1.0
    for event in events:
        if event.kind == kind and event.product in (None, product) and event.start_day <= day:
            factor *= event_factor(event, day)
    return factor


def event_factor(event: Event | EventNotice, day: int) -> float:
    """A step's multiplier from start_day to end_day, 1 on other days; a trend's
    1 + (multiplier - 1) * min(1, (day - start_day) / (end_day - start_day)) from start_day on
    (its multiplier from end_day on, and at once if the two are the same day), 1 before."""
    if day < event.start_day:
        return 1.0
    if event.shape == "step":
        return event.multiplier if day <= event.end_day else 1.0
    span = event.end_day - event.start_day
    done = 1.0 if day >= event.end_day else (day - event.start_day) / span
    return 1.0 + (event.multiplier - 1.0) * done


class PriceCut(FileModel):
    """A scripted competitor's sudden cut: its prices times `multiplier` from `start_day` to
    `end_day` (None: to the end of the match)."""

    start_day: Day
    end_day: Day | None = None
    multiplier: float = Field(gt=0, le=MAX_FACTOR, description="below 1 a cut, above 1 a rise")

    @model_validator(mode="after")
    def _ordered(self) -> PriceCut:
        if self.end_day is not None and self.end_day < self.start_day:
            raise ValueError("end_day is before start_day")
        return self

    def running(self, day: int) -> bool:
        return self.start_day <= day and (self.end_day is None or day <= self.end_day)


class Competitor(FileModel):
    """A rival that is no contestant: it sells its products from unlimited stock at prices a
    rule sets each morning, and customers choose it like any merchant (its reputation and
    quality fixed). Rules, per product:
    - fixed: price_ratio * reference_price;
    - undercut: (1 - undercut) * the lowest price a merchant of the match still selling posted
      the day before (price_ratio * reference_price when none is), never below
      floor_ratio * today's unit cost;
    then times the multipliers of its running `cuts`."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    rule: Literal["fixed", "undercut"] = "fixed"
    price_ratio: float = Field(
        1.0, gt=0, le=MAX_FACTOR, description="its price as a multiple of the reference price"
    )
    undercut: float = Field(
        0.05, ge=0, lt=1, description="undercut rule: how far below the cheapest merchant"
    )
    floor_ratio: float = Field(
        1.0, ge=0, le=MAX_FACTOR, description="undercut rule: lowest price, a multiple of unit cost"
    )
    reputation: float = Field(0.6, ge=0, le=1)
    quality: Utility | None = Field(None, description="None: each product's quality")
    products: tuple[str, ...] = Field((), description="what it sells; empty: every product")
    cuts: tuple[PriceCut, ...] = ()


class Visibility(FileModel):
    rival_prices: bool = True
    rival_reputation: bool = True
    rival_sales: bool = False


class Seat(FileModel):
    """What is different for the merchant in one seat: its unit cost and its quality, by
    product (the others are the product's). A scenario with seats is a game of asymmetric
    firms, played by exactly as many merchants as it has seats."""

    unit_cost: dict[str, Annotated[float, Field(gt=0, le=MAX_MONEY)]] = Field(
        default_factory=dict, description="product -> what the supplier charges this seat"
    )
    quality: dict[str, Utility] = Field(default_factory=dict, description="product -> this seat's quality")


# The amounts of money a scenario holds, by section and field: what `scale` multiplies.
MONEY_FIELDS = {
    "products": ("unit_cost", "reference_price", "holding_cost", "initial_price", "suppliers"),
    "seats": ("unit_cost",),
    "finance": ("initial_cash", "fixed_daily_cost"),
    "reputation": ("advertising_scale",),
    "interventions": ("price",),
}


def _times(value: object, factor: float) -> object:
    """A number times `factor`; anything else as it is, for validation to judge."""
    return value * factor if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _scaled_section(section: object, fields: tuple[str, ...], factor: float) -> object:
    """One section (a mapping or a model) with its money `fields` times `factor`; a field
    that maps products to amounts (a seat's unit_cost) has each amount multiplied, and one
    that lists sections (a product's suppliers) has each section's unit_cost multiplied."""
    if isinstance(section, BaseModel):
        section = section.model_dump()
    if not isinstance(section, dict):
        return section
    scaled = dict(section)
    for name in fields:
        if name in scaled:
            value = scaled[name]
            if isinstance(value, dict):
                scaled[name] = {k: _times(v, factor) for k, v in value.items()}
            elif isinstance(value, (list, tuple)):
                scaled[name] = [_scaled_section(item, ("unit_cost",), factor) for item in value]
            else:
                scaled[name] = _times(value, factor)
    return scaled


class Scenario(FileModel):
    """A market's rules. A file may give `scale: X`: every amount of money in it (prices, costs,
    cash, the advertising scale, the target, the bounds of goals on money) is multiplied by X
    as it is read, the currency
    of a study of unit invariance; the scenario then holds the amounts it plays with, so
    `scale` is not kept."""

    name: str
    description: str = ""
    days: int = Field(30, ge=1, le=MAX_DAYS, description="default match length")
    products: tuple[Product, ...] = Field(min_length=1)
    choice: Choice = Choice()
    demand: Demand = Demand()
    reputation: Reputation = Reputation()
    finance: Finance = Finance()
    events: tuple[Event, ...] = ()
    interventions: tuple[Intervention, ...] = Field(
        (), description="a regulator's price caps, forced prices and memory resets (Intervention)"
    )
    visibility: Visibility = Visibility()
    target_net_worth: float | None = Field(
        None, ge=-MAX_TOTAL, le=MAX_TOTAL, description="goal a merchant is scored against"
    )
    seats: tuple[Seat, ...] = Field(
        (), description="per seat, in seat order, its own unit costs and qualities; empty: every seat alike"
    )
    competitors: tuple[Competitor, ...] = Field(
        (), description="scripted rivals that take customers without being contestants"
    )
    segments: tuple[Segment, ...] = Field((), description="customer groups; empty: one alike")
    promotions: Promotions | None = Field(None, description="None: no promotions")
    satisfaction: Satisfaction | None = Field(None, description="None: no satisfaction index")
    goals: tuple[Goal, ...] = Field((), description="campaign goals the merchants are scored against")

    @model_validator(mode="before")
    @classmethod
    def _in_its_currency(cls, data: object) -> object:
        if not isinstance(data, dict) or "scale" not in data:
            return data
        data = dict(data)
        factor = data.pop("scale")
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= MAX_SCALE:
            raise ValueError(f"scale must be a number above 0 and at most {MAX_SCALE:g}, not {factor!r}")
        for section, fields in MONEY_FIELDS.items():
            value = data.get(section)
            default = cls.model_fields[section].default
            if value is None and isinstance(default, BaseModel):
                value = default  # a section left out: its defaults are money too
            if isinstance(value, (list, tuple)):
                data[section] = [_scaled_section(item, fields, factor) for item in value]
            elif value is not None:
                data[section] = _scaled_section(value, fields, factor)
        if "target_net_worth" in data:
            data["target_net_worth"] = _times(data["target_net_worth"], factor)
        if isinstance(data.get("goals"), (list, tuple)):  # which goals are on money, results knows
            data["goals"] = [
                {**goal, "scale": _times(goal.get("scale", 1.0), factor)} if isinstance(goal, dict) else goal
                for goal in data["goals"]
            ]
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        ids = [p.id for p in self.products]
        if len(set(ids)) != len(ids):
            raise FieldError("products", "product ids must be unique")
        for k, event in enumerate(self.events):
            if event.product is not None and event.product not in ids:
                raise FieldError(
                    f"events[{k}].product", f"event {event.name!r} names unknown product {event.product!r}"
                )
        for k, act in enumerate(self.interventions):
            if act.product is not None and act.product not in ids:
                raise FieldError(
                    f"interventions[{k}].product",
                    f"intervention {act.name!r} names unknown product {act.product!r}",
                )
        entering = [seat for act in self.interventions if act.kind == "entry" for seat in act.seats or ()]
        if len(set(entering)) != len(entering):
            raise FieldError("interventions", "a seat enters once: two entries name the same seat")
        for k, seat in enumerate(self.seats):
            for named in [*seat.unit_cost, *seat.quality]:
                if named not in ids:
                    raise FieldError(f"seats[{k}]", f"names unknown product {named!r}")
        if self.segments and abs(sum(s.share for s in self.segments) - 1) > 1e-9:
            raise FieldError("segments", "the segments' shares must add up to 1")
        names = [c.name for c in self.competitors]
        if len(set(names)) != len(names):
            raise FieldError("competitors", "competitor names must be unique")
        for k, competitor in enumerate(self.competitors):
            for named in competitor.products:
                if named not in ids:
                    raise FieldError(
                        f"competitors[{k}].products",
                        f"competitor {competitor.name!r} sells unknown product {named!r}",
                    )
            if math.prod(max(cut.multiplier, 1.0) for cut in competitor.cuts) > MAX_FACTOR:
                raise FieldError(
                    f"competitors[{k}].cuts", f"together they raise its prices more than {MAX_FACTOR:g} times"
                )
        for k, product in enumerate(self.products):
            for kind in ("demand", "cost"):
                rise = self._most_raised(kind, product.id)
                if rise > MAX_FACTOR:
                    raise FieldError(
                        "events",
                        f"the {kind} events of product {product.id!r} together multiply its {kind} by up "
                        f"to {rise:g}; at most {MAX_FACTOR:g}",
                    )
            busiest = (
                product.base_demand
                * max(self.demand.weekday_factors)
                * (1 + self.demand.seasonal_amplitude)
                * self._most_raised("demand", product.id)
            )
            if busiest > MAX_CUSTOMERS:
                raise FieldError(
                    f"products[{k}].base_demand",
                    f"with the weekday, seasonal and event factors, up to {busiest:.3g} customers a day; "
                    f"at most {MAX_CUSTOMERS:g}",
                )
        if self.reputation.minimum > self.reputation.maximum:
            raise FieldError("reputation.minimum", "reputation.minimum is above reputation.maximum")
        for k, product in enumerate(self.products):
            if product.shelf_life is not None and not self.demand.stock_limited:
                raise FieldError(
                    f"products[{k}].shelf_life",
                    f"product {product.id!r} has a shelf life, which needs stock_limited: true",
                )
            if self.demand.mode == "stochastic" and not float(product.initial_stock).is_integer():
                raise FieldError(
                    f"products[{k}].initial_stock",
                    f"product {product.id!r}: initial_stock must be whole units in stochastic mode",
                )
        return self

    def _most_raised(self, kind: Literal["demand", "cost"], product: str) -> float:
        """The most the events of `kind` can multiply `product`'s customers or unit cost by:
        every rise among them at once."""
        return math.prod(
            max(event.multiplier, 1.0)
            for event in self.events
            if event.kind == kind and event.product in (None, product)
        )

    @property
    def product_ids(self) -> list[str]:
        return [p.id for p in self.products]

    @property
    def supplier_names(self) -> tuple[tuple[str, ...], ...]:
        """Per product, its listed suppliers' names; () when no product lists any."""
        if not any(p.suppliers for p in self.products):
            return ()
        return tuple(tuple(s.name for s in p.suppliers) for p in self.products)

    def seat_values(self, field: Literal["unit_cost", "quality"], merchants: int) -> list[list[float]]:
        """Per seat (of `merchants`), per product: the product's `field`, or the seat's own."""
        self.check_merchants(merchants)
        return [self.own_values(field, seat) for seat in range(merchants)]

    def own_values(self, field: Literal["unit_cost", "quality"], seat: int) -> list[float]:
        """Per product, the `field` of the merchant in `seat`: its seat's own, or the product's."""
        own = getattr(self.seats[seat], field) if self.seats else {}
        return [own.get(p.id, getattr(p, field)) for p in self.products]

    def identity(self) -> str:
        """The scenario as JSON, for a tournament's identity (tournaments.config): a part added
        after tournaments were first stored (seats, competitors, bad debt, trends, shelf lives,
        suppliers, returns, segments, promotions, satisfaction, goals, interventions)
        counts only when it is used, so a file that does not use it keeps the identity it had
        before the part existed."""
        left_out: dict[str, Any] = {}
        if all(event.shape == "step" for event in self.events):
            left_out["events"] = {"__all__": {"shape"}}
        unused = {
            name
            for name, used in (
                ("shelf_life", any(p.shelf_life is not None for p in self.products)),
                ("suppliers", any(p.suppliers for p in self.products)),
                ("returns_resellable", any(p.returns_resellable != 1 for p in self.products)),
            )
            if not used
        }
        if unused:
            left_out["products"] = {"__all__": unused}
        if self.choice.promotion_response == 0:
            left_out["choice"] = {"promotion_response"}
        for optional in ("promotions", "satisfaction"):
            if getattr(self, optional) is None:
                left_out[optional] = True
        for part in ("seats", "competitors", "segments", "goals", "interventions"):
            if not getattr(self, part):
                left_out[part] = True
        if self.finance.bad_debt_share == 0:
            left_out["finance"] = {"bad_debt_share"}
        return self.model_dump_json(exclude=left_out or None)

    def check_merchants(self, merchants: int) -> None:
        """ValueError unless `merchants` can play the scenario: as many as its seats, if it has
        any, and a seat for each seat an intervention names."""
        seats = len(self.seats)
        if seats and merchants != seats:
            raise ValueError(
                f"scenario {self.name!r} has {seats} seats, so its matches need {seats} merchants, "
                f"not {merchants}"
            )
        for act in self.interventions:
            if act.seats is not None and max(act.seats) >= merchants:
                raise ValueError(
                    f"intervention {act.name!r} names seat {max(act.seats)}, but a match has seats 0 to "
                    f"{merchants - 1}"
                )
        opening = self.opening_days(merchants)
        if min(opening) > 1:
            raise ValueError("every seat enters later: a match needs a merchant open on day 1")

    def opening_days(self, merchants: int) -> list[int]:
        """Per seat (of `merchants`), the day it opens: its entry's start_day, or 1."""
        opening = [1] * merchants
        for act in self.interventions:
            for seat in act.seats or () if act.kind == "entry" else ():
                if seat < merchants:
                    opening[seat] = act.start_day
        return opening

    @property
    def whole_units(self) -> bool:
        """Orders are in whole units: customers are counted one by one (stochastic demand)."""
        return self.demand.mode == "stochastic"


def load_scenario(scenario: str | Path) -> Scenario:
    """A shipped scenario by its name ("price_war"), or a scenario file by its path (a Path, or
    a string that names a file: see names_a_file). An unknown name raises ValueError naming
    the shipped ones; a mistake in a file, ConfigError naming the file and the field."""
    if isinstance(scenario, str) and not names_a_file(scenario):
        scenario = shipped_scenario(scenario)
    return load_model(scenario, Scenario)


def shipped_scenarios() -> list[str]:
    """The names of the scenarios that come with the package."""
    return sorted(path.stem for path in SHIPPED_SCENARIOS.glob("*.yaml"))


def shipped_scenario(name: str) -> Path:
    """The file of the shipped scenario `name`; ValueError naming the shipped ones if there is none."""
    if name not in shipped_scenarios():
        raise ValueError(f"no shipped scenario is named {name!r} (shipped: {', '.join(shipped_scenarios())})")
    return SHIPPED_SCENARIOS / f"{name}.yaml"


def names_a_file(entry: str) -> bool:
    """Whether a scenario entry is a file's path (it ends in .yaml or .yml, or holds a /)
    rather than a name."""
    return entry.endswith((".yaml", ".yml")) or "/" in entry
