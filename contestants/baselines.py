"""Rule-based merchants: the yardsticks language models are measured against.

Each kind is one simple, explainable rule applied per product, so a model that cannot beat
it has learnt nothing a spreadsheet could not do. Between them they cover the strategic
corners of the market: a price that never moves (`fixed_price`, `reorder_point`), a price
tied to cost (`cost_plus`), noise (`random`), aggression (`undercut`, which starts price
wars) and a rational myopic player (`best_response`). Two more exist for the machinery, not
for the leaderboard: `latency` is slow on purpose, `chaos` misbehaves on purpose.

What they share lives in `RuleMerchant`: books of their own past (so memory probes are
answered from records, not guesses), collecting receivables as soon as they are due, and
one restocking helper that never orders more than the cash can pay for.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from contestants.base import Contestant, Params, RecallProbe, register
from market.daylog import DayLogBuilder
from market.scenario import Product, Scenario
from market.types import Collect, Observation, Operation, Order, PlainDecision, Position, ProductState, SetPrice

_EPS = 1e-9
_COLLECT = Collect()  # operations are frozen, so every decision can share this one


@dataclass
class _Books:
    """The merchant's own state at the end of one day."""

    cash: float
    inventory: dict[str, float]
    prices: dict[str, float]
    ordered: dict[str, float] | None = None  # known only from the day's record


def affordable_units(wanted: float, unit_cost: float, budget: float) -> int:
    """Whole units to order: `wanted` rounded down, cut to what `budget` pays for at `unit_cost`."""
    if unit_cost <= 0 or budget <= 0 or wanted < 1 - _EPS:
        return 0
    units = min(math.floor(wanted + _EPS), math.floor(budget / unit_cost))
    while units > 0 and units * unit_cost > budget:  # floating point: never exceed the budget
        units -= 1
    return max(units, 0)


def order_up_to(inventory: float, in_transit: float, reorder_level: float, target: float) -> float:
    """The (s, S) rule: when the stock position (in hand + in transit) is at or below
    `reorder_level`, the quantity that brings it back up to `target`; otherwise nothing."""
    position = inventory + in_transit
    return max(target - position, 0.0) if position <= reorder_level + _EPS else 0.0


class RestockParams(Params):
    """An (s, S) restocking policy: at or below `reorder_level` units in hand and in transit,
    order up to `target_stock`."""

    reorder_level: float = Field(15.0, ge=0, description="s: reorder when stock position is at or below this")
    target_stock: float = Field(40.0, gt=0, description="S: order up to this stock position")

    @model_validator(mode="after")
    def _levels(self) -> RestockParams:
        if self.target_stock <= self.reorder_level:
            raise ValueError("target_stock must be above reorder_level")
        return self


class RuleMerchant(Contestant):
    """Common base of the rule merchants.

    A kind's `choose` gives the day's target prices and order quantities per product. From an
    Observation (`decide`) they become operations, after the merchant has written down what
    the observation says about the past; a kind whose rule reads only a `Position` (`plain`)
    can also play from the market's arrays (`decide_plain`), which is how a match of such
    merchants alone is played. Either way receivables that are due are collected first.

    The books hold, per day, cash, inventory, prices and units ordered at the end of that
    day: from the observation (the start of day t is the end of day t-1) and, where given,
    from yesterday's `DayRecord`, which wins. The last day of a match is never recorded
    because no observation follows it. In plain play the books are the market's own record
    of the merchant's days, the records `decide` would have written down.

    A kind is `plain` unless it changes `decide` or `choose` (which read observations).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.plain = cls.decide is RuleMerchant.decide and cls.choose is RuleMerchant.choose

    def __init__(self, params: Params):
        super().__init__(params)
        self.merchant = ""
        self.scenario: Scenario | None = None
        self.rng: np.random.Generator | None = None
        self.products: dict[str, Product] = {}
        self._books: dict[int, _Books] = {}
        self._log: DayLogBuilder | None = None

    def reset(self, *, merchant: str, scenario: Scenario, rng: np.random.Generator) -> None:
        self.merchant, self.scenario, self.rng = merchant, scenario, rng
        self.products = {p.id: p for p in scenario.products}
        self._books, self._log = {}, None

    def decide(self, observation: Observation) -> list[Operation]:
        """The day's operations as a plain list of operation models: the market takes them
        as they are, where a `Decision` would validate every one of them again."""
        if self.scenario is None:
            raise RuntimeError(f"{self.kind}: decide() called before reset()")
        self._remember(observation)
        position = Position.of(observation)
        decision = self._plain(position, *self.choose(observation, position))
        ids = [s.product for s in observation.products]
        operations: list[Operation] = [_COLLECT] if decision.collect else []
        operations.extend(SetPrice(product=p, price=float(price)) for p, price in zip(ids, decision.prices) if price is not None)
        operations.extend(Order(product=p, quantity=units) for p, units in zip(ids, decision.orders) if units > 0)
        return operations

    def decide_plain(self, position: Position, log: DayLogBuilder) -> PlainDecision:
        """`decide` from a Position, as a PlainDecision (plain kinds only); `log` becomes
        the books."""
        self._log = log
        return self._plain(position, *self.rule(position))

    def choose(self, observation: Observation, position: Position) -> tuple[list[float | None], list[float]]:
        """Target prices (None: no view, keep the price) and whole units to order, per product."""
        return self.rule(position)

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        """`choose` from the Position alone."""
        raise NotImplementedError(f"{self.kind} decides from whole observations")

    @staticmethod
    def _plain(position: Position, prices: list[float | None], orders: list[float]) -> PlainDecision:
        """Collect what is due; post only the prices that change."""
        changed = [None if price is None or abs(price - now) <= _EPS else price for price, now in zip(prices, position.prices)]
        return PlainDecision(position.receivables_due > 0, changed, orders)

    # -- memory -------------------------------------------------------------------------

    def _remember(self, observation: Observation) -> None:
        """Yesterday's record when there is one (the record's dicts are never changed after
        the market makes them, so they are kept, not copied); else the observation."""
        record = observation.yesterday
        if record is not None:
            self._books[record.day] = _Books(record.cash_end, record.inventory, record.prices, record.ordered)
        else:
            self._books[observation.day - 1] = _Books(
                cash=observation.cash,
                inventory={s.product: s.inventory for s in observation.products},
                prices={s.product: s.price for s in observation.products},
            )

    def recall(self, probe: RecallProbe) -> float | None:
        """The recorded value; None for a day not on the books, an unknown product, or no
        product named in a market with several."""
        books = self._books.get(probe.day) or self._logged(probe.day)
        if books is None:
            return None
        if probe.fact == "cash":
            return books.cash
        product = probe.product
        if product is None and len(self.products) == 1:
            product = next(iter(self.products))
        if product not in self.products:
            return None
        table = {"inventory": books.inventory, "price": books.prices, "ordered": books.ordered}[probe.fact]
        if table is None:
            return None
        value = table.get(product)
        if value is None and probe.fact == "ordered":
            return 0.0  # the record lists what was ordered; a product it omits got no order
        return value

    def _logged(self, day: int) -> _Books | None:
        """The books of `day` from the market's log (plain play), if it holds the day."""
        record = self._log.record(day, self.merchant) if self._log is not None else None
        return _Books(record.cash_end, record.inventory, record.prices, record.ordered) if record is not None else None

    # -- shared pieces of rules -----------------------------------------------------------

    def orders(self, position: Position, wanted: list[float]) -> list[float]:
        """Whole units to order for the wanted quantities, in product order, each cut to what
        the cash left after the earlier ones pays for. A day's fixed cost is kept back so a
        restock does not by itself cause bankruptcy. When sales are not limited by stock
        (units are bought when sold) stock is useless and nothing is ordered."""
        assert self.scenario is not None
        if not self.scenario.demand.stock_limited or not any(wanted):
            return [0.0] * len(wanted)
        budget = position.cash - position.fixed_daily_cost
        result = []
        for units_wanted, unit_cost in zip(wanted, position.unit_cost):
            units = affordable_units(units_wanted, unit_cost, budget)
            result.append(float(units))
            budget -= units * unit_cost
        return result

    def restock(self, position: Position) -> list[float]:
        """The (s, S) policy of `RestockParams`, for every product."""
        params = self.params
        assert isinstance(params, RestockParams)
        wanted = [order_up_to(stock, coming, params.reorder_level, params.target_stock) for stock, coming in zip(position.inventory, position.in_transit)]
        return self.orders(position, wanted)


# ---- fixed price ---------------------------------------------------------------------------


class FixedPriceParams(RestockParams):
    markup: float = Field(0.5, gt=-1, description="price = scenario unit_cost * (1 + markup)")
    price: float | None = Field(None, gt=0, description="absolute price for every product; replaces markup")

    @model_validator(mode="after")
    def _one_price_rule(self) -> FixedPriceParams:
        if self.price is not None and "markup" in self.model_fields_set:
            raise ValueError("give markup or price, not both")
        return self


@register
class FixedPrice(RuleMerchant):
    """Posts one price and never moves it, whatever rivals or costs do; restocks (s, S).

    The price is the scenario's unit cost plus `markup` (or the absolute `price`), fixed at
    the start: the baseline against which any price movement has to earn its keep.
    """

    kind: ClassVar[str] = "fixed_price"
    params_model: ClassVar[type[Params]] = FixedPriceParams
    params: FixedPriceParams

    def price_of(self, product: Product) -> float:
        return self.params.price if self.params.price is not None else product.unit_cost * (1 + self.params.markup)

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        return [self.price_of(p) for p in self.products.values()], self.restock(position)


# ---- random ----------------------------------------------------------------------------------


class RandomParams(Params):
    min_markup: float = Field(0.0, gt=-1, description="lowest price = unit_cost * (1 + min_markup)")
    max_markup: float = Field(1.0, gt=-1, description="highest price = unit_cost * (1 + max_markup)")
    max_order: int = Field(20, ge=0, description="order a uniform whole number of units in [0, max_order]")

    @model_validator(mode="after")
    def _range(self) -> RandomParams:
        if self.max_markup < self.min_markup:
            raise ValueError("max_markup is below min_markup")
        return self


@register
class RandomMerchant(RuleMerchant):
    """Each day, per product, a uniform random price between today's unit cost times
    (1 + min_markup) and (1 + max_markup), and a uniform random order of 0..max_order units.

    The floor any strategy must clear. Draws come only from the match's generator, so a
    replayed match replays the same noise.
    """

    kind: ClassVar[str] = "random"
    params_model: ClassVar[type[Params]] = RandomParams
    params: RandomParams

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        assert self.rng is not None
        prices: list[float | None] = []
        wanted = []
        for unit_cost in position.unit_cost:
            low, high = unit_cost * (1 + self.params.min_markup), unit_cost * (1 + self.params.max_markup)
            prices.append(float(self.rng.uniform(low, high)))
            wanted.append(float(self.rng.integers(0, self.params.max_order + 1)))
        return prices, self.orders(position, wanted)


# ---- reorder point ---------------------------------------------------------------------------


class ReorderPointParams(RestockParams):
    price_factor: float = Field(1.0, gt=0, description="price = reference_price * price_factor")


@register
class ReorderPoint(RuleMerchant):
    """The textbook inventory policy: price at the market's reference price (times
    `price_factor`) and restock (s, S). Tests whether a model manages stock at least as well
    as operations research did in the 1950s."""

    kind: ClassVar[str] = "reorder_point"
    params_model: ClassVar[type[Params]] = ReorderPointParams
    params: ReorderPointParams

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        return [p.reference_price * self.params.price_factor for p in self.products.values()], self.restock(position)


# ---- undercut --------------------------------------------------------------------------------


class UndercutParams(RestockParams):
    step: float = Field(0.02, gt=0, lt=1, description="price = cheapest rival * (1 - step)")
    min_markup: float = Field(0.05, gt=-1, description="never below today's unit_cost * (1 + min_markup)")


@register
class Undercut(RuleMerchant):
    """Prices `step` below the cheapest visible rival (upwards too, when every rival is
    dearer), never below its cost floor; restocks (s, S). Two of these start a price war
    that ends at the floor: the aggressive pole of the strategy space. Bankrupt rivals are
    ignored; with no rival price visible it keeps its price."""

    kind: ClassVar[str] = "undercut"
    params_model: ClassVar[type[Params]] = UndercutParams
    params: UndercutParams

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        step, markup = self.params.step, self.params.min_markup
        prices = [
            None if cheapest is None else max(cheapest * (1 - step), unit_cost * (1 + markup))
            for cheapest, unit_cost in zip(position.cheapest_rival, position.unit_cost)
        ]
        return prices, self.restock(position)


# ---- cost plus -------------------------------------------------------------------------------


class CostPlusParams(RestockParams):
    margin: float = Field(0.3, gt=-1, description="price = today's unit_cost * (1 + margin)")


@register
class CostPlus(RuleMerchant):
    """Prices at today's unit cost plus `margin`, re-priced daily, so a cost shock passes
    straight through to customers; restocks (s, S). The naive accountant's rule."""

    kind: ClassVar[str] = "cost_plus"
    params_model: ClassVar[type[Params]] = CostPlusParams
    params: CostPlusParams

    def rule(self, position: Position) -> tuple[list[float | None], list[float]]:
        return [unit_cost * (1 + self.params.margin) for unit_cost in position.unit_cost], self.restock(position)


# ---- best response ---------------------------------------------------------------------------


class BestResponseParams(Params):
    grid_points: int = Field(60, ge=2, le=100_000, description="candidate prices searched per product")
    max_price_factor: float = Field(3.0, gt=0, description="highest candidate = reference_price * this")
    cover_days: float = Field(3.0, ge=0, description="stock for lead_time + cover_days days of expected sales")


@register
class BestResponse(RuleMerchant):
    """Myopic best response under the scenario's own logit choice model.

    Per product, it takes rivals' prices and reputations as they stood yesterday (a hidden
    price counts as the reference price, a hidden reputation as the scenario's initial one;
    bankrupt rivals are gone) and picks, from `grid_points` prices between today's unit cost
    and `max_price_factor` * reference price, the one maximising expected profit per
    customer (price - unit_cost) * share(price). It then orders up to the expected sales of
    lead_time + cover_days days (base demand, times announced demand events in force, times
    that share). It knows the rules exactly but not that rivals react: the Bertrand-Nash
    player of the price game, and the benchmark for tacit collusion (prices above it).
    """

    kind: ClassVar[str] = "best_response"
    params_model: ClassVar[type[Params]] = BestResponseParams
    params: BestResponseParams

    def candidate_prices(self, state: ProductState) -> np.ndarray:
        low = state.unit_cost
        high = max(self.products[state.product].reference_price * self.params.max_price_factor, 2 * low)
        return np.linspace(low, high, self.params.grid_points)

    def shares(self, observation: Observation, product: Product, prices: np.ndarray) -> np.ndarray:
        """Share of all customers (the outside option included) this merchant would win at each price."""
        assert self.scenario is not None
        choice = self.scenario.choice

        def utility(price: np.ndarray | float, reputation: float) -> np.ndarray | float:
            return (
                -choice.price_sensitivity * np.asarray(price) / product.reference_price
                + choice.reputation_weight * reputation
                + choice.quality_weight * product.quality
            )

        others = math.exp(choice.no_purchase_utility)
        for rival in observation.rivals():
            if rival.bankrupt:
                continue
            price = (rival.prices or {}).get(product.id)
            reputation = rival.reputation if rival.reputation is not None else self.scenario.reputation.initial
            others += math.exp(float(utility(price if price is not None else product.reference_price, reputation)))
        own = np.exp(utility(prices, observation.reputation))
        return own / (own + others)

    def demand_multiplier(self, observation: Observation, product_id: str) -> float:
        multiplier = 1.0
        for event in observation.events:
            if event.kind == "demand" and event.product in (None, product_id) and event.start_day <= observation.day <= event.end_day:
                multiplier *= event.multiplier
        return multiplier

    def choose(self, observation: Observation, position: Position) -> tuple[list[float | None], list[float]]:
        prices: list[float | None] = []
        wanted = []
        for state in observation.products:
            product = self.products[state.product]
            grid = self.candidate_prices(state)
            share = self.shares(observation, product, grid)
            best = int(np.argmax((grid - state.unit_cost) * share))
            prices.append(float(grid[best]))
            daily = product.base_demand * self.demand_multiplier(observation, state.product) * float(share[best])
            target = math.ceil(daily * (state.lead_time + self.params.cover_days))
            wanted.append(order_up_to(state.inventory, state.in_transit, target, target))
        return prices, self.orders(position, wanted)


# ---- for the machinery ---------------------------------------------------------------------


class LatencyParams(FixedPriceParams):
    latency_s: float = Field(0.2, ge=0, description="seconds to sleep before every answer")


@register
class Latency(FixedPrice):
    """A fixed-price merchant that sleeps `latency_s` seconds before each answer: a stand-in
    for a slow language model when benchmarking the runner (deadlines, actor overlap)."""

    kind: ClassVar[str] = "latency"
    params_model: ClassVar[type[Params]] = LatencyParams
    needs_actor: ClassVar[bool] = True
    params: LatencyParams

    def decide(self, observation: Observation) -> list[Operation]:
        time.sleep(self.params.latency_s)
        return super().decide(observation)


class ChaosParams(FixedPriceParams):
    fault: Literal["raise", "hang", "garbage", "crash"] = Field("raise", description="how it misbehaves")
    every: int = Field(1, ge=1, description="misbehave on days where day % every == 0")
    hang_s: float = Field(30.0, ge=0, description="how long 'hang' sleeps before answering nothing")


_GARBAGE: tuple[Any, ...] = (
    "{not json",
    {"operations": [{"op": "teleport", "to": "moon"}, {"op": "set_price", "price": "cheap"}]},
)


@register
class Chaos(FixedPrice):
    """A merchant that misbehaves on purpose, for robustness tests of the runner.

    On days where day % `every` == 0 it does its `fault`: "raise" raises RuntimeError,
    "hang" sleeps `hang_s` seconds then returns None, "garbage" returns something that is
    not a decision (alternately unparseable JSON text and a dict of bogus operations),
    "crash" kills its own process with os._exit(1) — hence it always runs in an actor. On
    other days it is a fixed-price merchant.
    """

    kind: ClassVar[str] = "chaos"
    params_model: ClassVar[type[Params]] = ChaosParams
    needs_actor: ClassVar[bool] = True
    params: ChaosParams

    def __init__(self, params: Params):
        super().__init__(params)
        self._faults = 0

    def reset(self, *, merchant: str, scenario: Scenario, rng: np.random.Generator) -> None:
        super().reset(merchant=merchant, scenario=scenario, rng=rng)
        self._faults = 0

    def decide(self, observation: Observation) -> Any:
        if observation.day % self.params.every != 0:
            return super().decide(observation)
        self._remember(observation)
        self._faults += 1
        fault = self.params.fault
        if fault == "raise":
            raise RuntimeError(f"chaos merchant {self.merchant!r} raises on day {observation.day}")
        if fault == "hang":
            time.sleep(self.params.hang_s)
            return None
        if fault == "garbage":
            return _GARBAGE[(self._faults - 1) % len(_GARBAGE)]
        os._exit(1)
