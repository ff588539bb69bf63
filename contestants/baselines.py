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
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from contestants.base import Contestant, Params, RecallProbe, RunOptions
from market.daylog import DayLogBuilder
from market.scenario import Product, Scenario
from market.types import Observation, Operation, PlainDecisions, Positions, ProductState

_EPS = 1e-9


@dataclass
class _Books:
    """The merchant's own state at the end of one day."""

    cash: float
    inventory: dict[str, float]
    prices: dict[str, float]
    ordered: dict[str, float] | None = None  # known only from the day's record


def affordable_units(wanted: np.ndarray, unit_cost: float, budget: np.ndarray) -> np.ndarray:
    """Whole units to order, per merchant: `wanted` rounded down, cut to what `budget` pays
    for at `unit_cost`."""
    if unit_cost <= 0:
        return np.zeros_like(wanted)
    units = np.minimum(np.floor(wanted + _EPS), np.floor(budget / unit_cost))
    units = np.where(units * unit_cost > budget, units - 1, units)  # floating point: never exceed the budget
    return np.where((budget > 0) & (wanted >= 1 - _EPS), np.maximum(units, 0.0), 0.0)


def order_up_to(stock: np.ndarray, reorder_level: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The (s, S) rule: where the stock position (in hand + in transit) is at or below
    `reorder_level`, the quantity that brings it back up to `target`; elsewhere nothing."""
    return np.where(stock <= reorder_level + _EPS, np.maximum(target - stock, 0.0), 0.0)


def plain_decisions(positions: Positions, prices: np.ndarray, orders: np.ndarray) -> PlainDecisions:
    """Collect what is due; post only the prices that change (NaN: no view, keep it)."""
    kept = np.abs(prices - positions.prices) <= _EPS
    return PlainDecisions(positions.receivables_due > 0, np.where(kept, math.nan, prices), orders)


def orders(scenario: Scenario, positions: Positions, wanted: np.ndarray) -> np.ndarray:
    """Whole units to order for the units wanted [merchant, product], product by product,
    each cut to what the cash left after the earlier ones pays for. A day's fixed cost is
    kept back so a restock does not by itself cause bankruptcy. When sales are not limited by
    stock (units are bought when sold) stock is useless and nothing is ordered."""
    units = np.zeros_like(wanted)
    if not scenario.demand.stock_limited:
        return units
    budget = positions.cash - positions.fixed_daily_cost
    for j, unit_cost in enumerate(positions.unit_cost.tolist()):
        units[:, j] = affordable_units(wanted[:, j], unit_cost, budget)
        budget = budget - units[:, j] * unit_cost
    return units


def plays_plain(kind: type[Contestant]) -> bool:
    """Whether a contestant kind can play from Positions (`PlainPlay`)."""
    return issubclass(kind, RuleMerchant) and kind.plain


def probed_product(probe: RecallProbe, products: Collection[str]) -> str | None:
    """The product `probe` asks about: the one it names, or the only one sold when it names
    none; None when that is no product sold (as for a question about cash, which names none
    in a market of several)."""
    product = probe.product
    if product is None and len(products) == 1:
        product = next(iter(products))
    return product if product in products else None


def recall_plain(probe: RecallProbe, log: DayLogBuilder, seats: np.ndarray) -> np.ndarray:
    """The answers of the rule merchants at `seats` of one match in plain play (NaN: none).
    Their books are the market's log of the match, the records `decide` would have written
    down from observations, so they answer from it."""
    product = probed_product(probe, log.products)
    if product is None and probe.fact != "cash":
        return np.full(len(seats), math.nan)
    return log.facts(probe.day, probe.fact, product, seats)


class Team:
    """Merchants of one rule kind deciding together (those of a PlainPlay, or one merchant
    alone for `decide`): each row of the Positions given to the kind's `rule` is one
    member's, and a parameter is a column over the members."""

    def __init__(self, kind: type[RuleMerchant], members: list[RuleMerchant]):
        self.kind, self.members = kind, members
        scenario = members[0].scenario
        assert scenario is not None, "members are reset before they form a team"
        self.scenario = scenario
        self._columns: dict[str, np.ndarray] = {}

    def column(self, name: str) -> np.ndarray:
        """Parameter `name` of every member, as a column [member, 1] (None: NaN)."""
        if name not in self._columns:
            values = [getattr(member.params, name) for member in self.members]
            self._columns[name] = np.array([[math.nan if v is None else float(v)] for v in values])
        return self._columns[name]

    def restock(self, positions: Positions) -> np.ndarray:
        """The (s, S) policy of `RestockParams`, for every member and product."""
        return order_up_to(positions.inventory + positions.in_transit, self.column("reorder_level"), self.column("target_stock"))


class PlainPlay:
    """Rule merchants deciding together from the market's Positions (plain play): each
    kind's `rule` once for all its merchants, then orders and decisions for all of them at
    once. `seats` are the market's rows (of one match, or of several played side by side).
    Their books are the market's log of their match: see `recall_plain`."""

    def __init__(self, seats: list[RuleMerchant]):
        by_kind: dict[type[RuleMerchant], list[int]] = {}
        for i, merchant in enumerate(seats):
            by_kind.setdefault(type(merchant), []).append(i)
        self.order = np.array([i for rows in by_kind.values() for i in rows])  # seats, kind by kind
        self.seat_order = np.argsort(self.order)
        self.teams: list[tuple[slice, Team]] = []
        for kind, rows in by_kind.items():
            start = len(self.teams) and self.teams[-1][0].stop
            self.teams.append((slice(start, start + len(rows)), Team(kind, [seats[i] for i in rows])))
        self.scenario = self.teams[0][1].scenario

    def decide(self, positions: Positions) -> tuple[PlainDecisions, list[tuple[list[int], Exception]]]:
        """Every seat's decision (rows indexed like the seats), and the teams whose rule
        raised, by their seats, with the exception: those do nothing today."""
        mine = positions.take(self.order)
        prices, wanted = np.full_like(mine.prices, math.nan), np.zeros_like(mine.prices)
        failed: list[tuple[slice, Team, Exception]] = []
        for rows, team in self.teams:
            try:
                prices[rows], wanted[rows] = team.kind.rule(team, mine.take(rows))
            except Exception as exc:  # a contestant's bug is a fault, not a crash
                failed.append((rows, team, exc))
        decisions = plain_decisions(mine, prices, orders(self.scenario, mine, wanted))
        for rows, _, _ in failed:
            decisions.collect[rows] = False
        return decisions.take(self.seat_order), [(self.order[rows].tolist(), exc) for rows, _, exc in failed]


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

    A kind's `choose` gives the day's target prices and units wanted per product. From an
    Observation (`decide`) they become operations, after the merchant has written down what
    the observation says about the past; a kind whose `rule` reads only Positions (`plain`)
    can also play from the market's arrays, all its merchants at once (`PlainPlay`), which
    is how matches of such merchants alone are played. Either way receivables that are due
    are collected first and orders are cut to the cash (`orders`).

    The books hold, per day, cash, inventory, prices and units ordered at the end of that
    day: from the observation (the start of day t is the end of day t-1) and, where given,
    from yesterday's `DayRecord`, which wins. The last day of a match is never recorded
    because no observation follows it. In plain play the books are the market's own record
    of the merchant's days, the records `decide` would have written down (`recall_plain`).

    A kind is `plain` unless it changes `decide` or `choose` (which read observations) or
    `recall` (plain play answers probes from the market's log).
    """

    plain: ClassVar[bool] = False  # the kind's `rule` reads Positions alone: it can play in PlainPlay

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.plain = cls.decide is RuleMerchant.decide and cls.choose is RuleMerchant.choose and cls.recall is RuleMerchant.recall

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self.merchant = ""
        self.scenario: Scenario | None = None
        self.seed = 0
        self._rng: np.random.Generator | None = None
        self.products: dict[str, Product] = {}
        self._books: dict[int, _Books] = {}
        self._team: Team | None = None  # this merchant alone, for `decide`

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.merchant, self.scenario, self.seed, self._rng = merchant, scenario, seed, None
        self.products = {p.id: p for p in scenario.products}
        self._books = {}
        self._team = Team(type(self), [self])

    @property
    def rng(self) -> np.random.Generator:
        """The merchant's generator for the match, made when first drawn from: making one
        costs more than a day of a small match, and most rule kinds never draw."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    def decide(self, observation: Observation) -> list[Operation]:
        """The day's operations as a plain list of operation models: the market takes them
        as they are, where a `Decision` would validate every one of them again."""
        if self._team is None:
            raise RuntimeError(f"{self.kind}: decide() called before reset()")
        self._remember(observation)
        positions = Positions.of(observation)
        prices, wanted = self.choose(observation, positions)
        decisions = plain_decisions(positions, prices, orders(self._team.scenario, positions, wanted))
        return decisions.operations(0, [s.product for s in observation.products])

    def choose(self, observation: Observation, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        """Target prices (NaN: no view, keep the price) and units wanted, per product, as
        rows of one: the kind's `rule` by default."""
        assert self._team is not None
        return self.rule(self._team, positions)

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        """Target prices (NaN: keep) and units wanted [member, product] for a team of this
        kind, from their Positions alone."""
        raise NotImplementedError(f"{cls.kind} decides from whole observations")

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
        product = probed_product(probe, self.products)
        books = self._books.get(probe.day)
        if books is None or (product is None and probe.fact != "cash"):
            return None
        if probe.fact == "cash":
            return books.cash
        table = {"inventory": books.inventory, "price": books.prices, "ordered": books.ordered}[probe.fact]
        if table is None:
            return None
        value = table.get(product)
        if value is None and probe.fact == "ordered":
            return 0.0  # the record lists what was ordered; a product it omits got no order
        return value


# ---- fixed price ---------------------------------------------------------------------------


class FixedPriceParams(RestockParams):
    markup: float = Field(0.5, gt=-1, description="price = scenario unit_cost * (1 + markup)")
    price: float | None = Field(None, gt=0, description="absolute price for every product; replaces markup")

    @model_validator(mode="after")
    def _one_price_rule(self) -> FixedPriceParams:
        if self.price is not None and "markup" in self.model_fields_set:
            raise ValueError("give markup or price, not both")
        return self


class FixedPrice(RuleMerchant):
    """Posts one price and never moves it, whatever rivals or costs do; restocks (s, S).

    The price is the scenario's unit cost plus `markup` (or the absolute `price`), fixed at
    the start: the baseline against which any price movement has to earn its keep.
    """

    kind: ClassVar[str] = "fixed_price"
    params_model: ClassVar[type[Params]] = FixedPriceParams
    params: FixedPriceParams

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        base_cost = np.array([p.unit_cost for p in team.scenario.products])
        price = team.column("price")
        return np.where(np.isnan(price), base_cost * (1 + team.column("markup")), price), team.restock(positions)


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


class RandomMerchant(RuleMerchant):
    """Each day, per product, a uniform random price between today's unit cost times
    (1 + min_markup) and (1 + max_markup), and a uniform random order of 0..max_order units.

    The floor any strategy must clear. Draws come only from the match's generator, so a
    replayed match replays the same noise.
    """

    kind: ClassVar[str] = "random"
    params_model: ClassVar[type[Params]] = RandomParams
    params: RandomParams

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        low = positions.unit_cost * (1 + team.column("min_markup"))
        high = positions.unit_cost * (1 + team.column("max_markup"))
        # each member draws from its own generator: per product, a price and an order
        draws = np.array([member.rng.random((2, low.shape[1])) for member in team.members])
        return low + (high - low) * draws[:, 0], np.floor(draws[:, 1] * (team.column("max_order") + 1))


# ---- reorder point ---------------------------------------------------------------------------


class ReorderPointParams(RestockParams):
    price_factor: float = Field(1.0, gt=0, description="price = reference_price * price_factor")


class ReorderPoint(RuleMerchant):
    """The textbook inventory policy: price at the market's reference price (times
    `price_factor`) and restock (s, S). Tests whether a model manages stock at least as well
    as operations research did in the 1950s."""

    kind: ClassVar[str] = "reorder_point"
    params_model: ClassVar[type[Params]] = ReorderPointParams
    params: ReorderPointParams

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        reference = np.array([p.reference_price for p in team.scenario.products])
        return reference * team.column("price_factor"), team.restock(positions)


# ---- undercut --------------------------------------------------------------------------------


class UndercutParams(RestockParams):
    step: float = Field(0.02, gt=0, lt=1, description="price = cheapest rival * (1 - step)")
    min_markup: float = Field(0.05, gt=-1, description="never below today's unit_cost * (1 + min_markup)")


class Undercut(RuleMerchant):
    """Prices `step` below the cheapest visible rival (upwards too, when every rival is
    dearer), never below its cost floor; restocks (s, S). Two of these start a price war
    that ends at the floor: the aggressive pole of the strategy space. Bankrupt rivals are
    ignored; with no rival price visible it keeps its price."""

    kind: ClassVar[str] = "undercut"
    params_model: ClassVar[type[Params]] = UndercutParams
    params: UndercutParams

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        floor = positions.unit_cost * (1 + team.column("min_markup"))
        return np.maximum(positions.cheapest_rival * (1 - team.column("step")), floor), team.restock(positions)  # NaN stays NaN


# ---- cost plus -------------------------------------------------------------------------------


class CostPlusParams(RestockParams):
    margin: float = Field(0.3, gt=-1, description="price = today's unit_cost * (1 + margin)")


class CostPlus(RuleMerchant):
    """Prices at today's unit cost plus `margin`, re-priced daily, so a cost shock passes
    straight through to customers; restocks (s, S). The naive accountant's rule."""

    kind: ClassVar[str] = "cost_plus"
    params_model: ClassVar[type[Params]] = CostPlusParams
    params: CostPlusParams

    @classmethod
    def rule(cls, team: Team, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        return positions.unit_cost * (1 + team.column("margin")), team.restock(positions)


# ---- best response ---------------------------------------------------------------------------


class BestResponseParams(Params):
    grid_points: int = Field(60, ge=2, le=100_000, description="candidate prices searched per product")
    max_price_factor: float = Field(3.0, gt=0, description="highest candidate = reference_price * this")
    cover_days: float = Field(3.0, ge=0, description="stock for lead_time + cover_days days of expected sales")


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

    def choose(self, observation: Observation, positions: Positions) -> tuple[np.ndarray, np.ndarray]:
        prices = []
        wanted = []
        for state in observation.products:
            product = self.products[state.product]
            grid = self.candidate_prices(state)
            share = self.shares(observation, product, grid)
            best = int(np.argmax((grid - state.unit_cost) * share))
            prices.append(float(grid[best]))
            daily = product.base_demand * self.demand_multiplier(observation, state.product) * float(share[best])
            target = math.ceil(daily * (state.lead_time + self.params.cover_days))
            wanted.append(max(target - state.inventory - state.in_transit, 0.0))
        return np.array([prices]), np.array([wanted])


# ---- for the machinery ---------------------------------------------------------------------


class LatencyParams(FixedPriceParams):
    latency_s: float = Field(0.2, ge=0, description="seconds to sleep before every answer")


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

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self._faults = 0

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
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
