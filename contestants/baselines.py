"""Rule-based merchants: the yardsticks language models are measured against.

Each kind is one simple, explainable rule applied per product, so a model that cannot beat
it has learnt nothing a spreadsheet could not do. Between them they cover the strategic
corners of the market: a price that never moves (`fixed_price`, `reorder_point`), a price
tied to cost (`cost_plus`), noise (`random`), aggression (`undercut`, which starts price
wars), a rational myopic player (`best_response`) and the two classic strategies of the
repeated game, which answer what rivals did (`tit_for_tat`, `grim_trigger`). The rule kinds
that talk to their rivals (`cartel`, `bluffer`) are contestants.talking's, built on these.

What they share lives in `RuleMerchant`: collecting receivables as soon as they are due,
one restocking helper that never orders more than the cash can pay for, and a perfect
memory (their books are the market's record of their days). Each kind is one `rule` over
the merchants' MarketView, for all the merchants of that kind at once, and a kind that
talks one `say` besides.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

import numpy as np
from pydantic import Field, model_validator

from contestants.base import Contestant, ContestantConfigError, Params, RunOptions
from market.competitors import Competitors
from market.demand import choice_shares, demand_factor
from market.scenario import MAX_DAYS, MAX_FACTOR, MAX_MONEY, MAX_UNITS, Scenario, event_multiplier
from market.types import ArrayDecisions, MarketView, Observation, Operation

if TYPE_CHECKING:
    from market.equilibrium import SeatBenchmarks

_EPS = 1e-9


def affordable_units(wanted: np.ndarray, unit_cost: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Whole units to order, per merchant: `wanted` rounded down, cut to what `budget` pays
    for at `unit_cost` (above 0, as scenarios require)."""
    units = np.minimum(np.floor(wanted + _EPS), np.floor(budget / unit_cost))
    units = np.where(units * unit_cost > budget, units - 1, units)  # floating point: never exceed the budget
    return np.where((budget > 0) & (wanted >= 1 - _EPS), np.maximum(units, 0.0), 0.0)


def order_up_to(stock: np.ndarray, reorder_level: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The (s, S) rule: where the stock position (in hand + in transit) is at or below
    `reorder_level`, the quantity that brings it back up to `target`; elsewhere nothing."""
    return np.where(stock <= reorder_level + _EPS, np.maximum(target - stock, 0.0), 0.0)


def array_decisions(
    view: MarketView,
    prices: np.ndarray,
    placed: tuple[np.ndarray, np.ndarray | None],
    messages: np.ndarray | None = None,
) -> ArrayDecisions:
    """Collect what is due; post only the prices that change (NaN: no view, keep it); place
    the orders (`orders`: units and their suppliers); say `messages` (None: nothing)."""
    kept = np.abs(prices - view.prices) <= _EPS
    units, suppliers = placed
    return ArrayDecisions(
        view.receivables_due > 0, np.where(kept, math.nan, prices), units, messages, suppliers
    )


def orders(scenario: Scenario, view: MarketView, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Whole units to order for the units wanted [merchant, product], product by product,
    each cut to what the cash left after the earlier ones pays for, and the supplier of each
    (None: all from the usual ones). A day's fixed cost is kept back so a restock does not by
    itself cause bankruptcy. When sales are not limited by stock (units are bought when sold)
    stock is useless and nothing is ordered. Of a perishable product no more is wanted than
    the stock position that sells before it spoils (`daily_sales` times its shelf life);
    where a product lists suppliers, each order goes to `cheapest_in_time`."""
    units = np.zeros_like(wanted)
    if not scenario.demand.stock_limited:
        return units, None
    perishable = [j for j, p in enumerate(scenario.products) if p.shelf_life]
    listed = any(p.suppliers for p in scenario.products)
    cost, suppliers = view.unit_cost, None
    if perishable or listed:
        daily = daily_sales(scenario, view)
        wanted = wanted.copy()
        for j in perishable:
            shelf_life = scenario.products[j].shelf_life or 0
            sells = daily[:, j] * shelf_life - view.inventory[:, j] - view.in_transit[:, j]
            wanted[:, j] = np.minimum(wanted[:, j], np.maximum(sells, 0.0))
        if listed:
            suppliers, cost = cheapest_in_time(scenario, view, daily)
    budget = view.cash - view.fixed_daily_cost
    for j, unit_cost in enumerate(cost.T):
        units[:, j] = affordable_units(wanted[:, j], unit_cost, budget)
        budget = budget - units[:, j] * unit_cost
    return units, suppliers


def daily_sales(scenario: Scenario, view: MarketView) -> np.ndarray:
    """What a merchant may expect to sell a day [merchant, product]: the product's base
    demand times the demand factor and the announced demand events of today, shared alike
    among the match's merchants still in business and the scripted competitors that sell it."""
    board = view.board
    in_business = np.add.reduce(~board.closed.reshape(-1, board.seats), 1)[view.rows // board.seats]
    scripted = [
        sum(not c.products or p.id in c.products for c in scenario.competitors) for p in scenario.products
    ]
    sellers = np.maximum(in_business, 1)[:, None] + np.array(scripted)
    factor = demand_factor(scenario.demand, view.day)
    demand = np.array(
        [
            p.base_demand * factor * event_multiplier(view.events, "demand", p.id, view.day)
            for p in scenario.products
        ]
    )
    return demand / sellers


def cheapest_in_time(
    scenario: Scenario, view: MarketView, daily: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per merchant and product, the supplier to order from (Operations numbers them: 0 the
    usual one) and what a unit costs there: the cheapest of those whose expected delivery
    (lead time, plus late_days times the share of late orders) comes before the stock in hand
    runs out at `daily` sales; the quickest when none does."""
    suppliers = np.zeros(view.inventory.shape, dtype=np.int16)
    cost = view.unit_cost.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        cover = np.where(daily > 0, view.inventory / daily, math.inf)  # days the stock lasts
    for j, product in enumerate(scenario.products):
        if not product.suppliers:
            continue
        factor = event_multiplier(view.events, "cost", product.id, view.day)
        costs = np.column_stack(
            [view.unit_cost[:, j], *(np.full(len(cost), s.unit_cost * factor) for s in product.suppliers)]
        )
        expected = np.array(
            [product.lead_time, *(s.lead_time + (1 - s.reliability) * s.late_days for s in product.suppliers)]
        )
        in_time = expected[None, :] <= cover[:, j, None] + _EPS
        quickest = np.argmin(expected + 1e-9 * costs, axis=1)  # ties: the cheaper
        cheapest = np.argmin(np.where(in_time, costs, math.inf), axis=1)
        chosen = np.where(in_time.any(axis=1), cheapest, quickest)
        suppliers[:, j] = chosen
        cost[:, j] = costs[np.arange(len(cost)), chosen]
    return suppliers, cost


M = TypeVar("M", bound="RuleMerchant")


class Team(Generic[M]):
    """Merchants of one rule kind deciding together (those of a RulePlay, or one merchant
    alone for `decide`): each row of the MarketView given to the kind's `rule` is one
    member's, and a parameter is a column over the members."""

    def __init__(self, kind: type[M], members: list[M]):
        self.kind, self.members = kind, members
        scenario = members[0].scenario
        assert scenario is not None, "members are reset before they form a team"
        self.scenario = scenario
        # a kind that says nothing (RuleMerchant's own `say`) is never asked
        self.speaks = inspect.getattr_static(kind, "say") is not inspect.getattr_static(RuleMerchant, "say")
        self._columns: dict[str, np.ndarray] = {}
        self._benchmarks: dict[tuple[int, ...], SeatBenchmarks] = {}  # by the seats open

    @cached_property
    def competitors(self) -> Competitors:
        """The scenario's scripted competitors, for the kinds that weigh them."""
        return Competitors(self.scenario)

    @cached_property
    def in_days(self) -> np.ndarray | None:
        """Which members hold stock in days of expected sales (RestockParams); None: none."""
        by_days = ~np.isnan(self.column("reorder_days"))
        return by_days if by_days.any() else None

    def column(self, name: str) -> np.ndarray:
        """Parameter `name` of every member, as a column [member, 1] (None: NaN)."""
        if name not in self._columns:
            values = [getattr(member.params, name) for member in self.members]
            self._columns[name] = np.array([[math.nan if v is None else float(v)] for v in values])
        return self._columns[name]

    def base_cost(self, view: MarketView) -> np.ndarray:
        """Each member's unit cost of each product in the scenario, its seat's own where the
        scenario gives seats their own [member, product]: the cost before any cost event."""
        seats = view.board.seats
        return np.array(self.scenario.seat_values("unit_cost", seats))[view.rows % seats]

    def benchmarks(self, seats: int, day: int) -> SeatBenchmarks:
        """The scenario's Nash and monopoly prices of a match of `seats` on `day`, by seat, in
        the price game of the seats open that day (market.equilibrium.by_open_seat: every
        seat's, but before a new entrant opens), looked up once per team and set of seats
        open rather than every day."""
        opening = self.scenario.opening_days(seats)
        open_now = tuple(seat for seat in range(seats) if opening[seat] <= day)
        if open_now not in self._benchmarks:
            # scipy: half a second of importing that only the kinds that need it pay
            from market.equilibrium import by_open_seat

            self._benchmarks[open_now] = by_open_seat(self.scenario, seats, day)
        return self._benchmarks[open_now]

    def restock(self, view: MarketView) -> np.ndarray:
        """The (s, S) policy of `RestockParams`, for every member and product: its levels in
        units, or in days of expected sales for the members that give them so."""
        reorder, target = self.column("reorder_level"), self.column("target_stock")
        if self.in_days is not None:
            daily = daily_sales(self.scenario, view)
            reorder = np.where(self.in_days, self.column("reorder_days") * daily, reorder)
            target = np.where(self.in_days, self.column("target_days") * daily, target)
        return order_up_to(view.inventory + view.in_transit, reorder, target)


class RulePlay:
    """Rule merchants deciding together from the market's view: each kind's `rule` once for
    all its merchants, then orders and decisions for all of them at once. `seats` are the
    merchants at the view's rows `rows` (of one match, or of several played side by side)."""

    def __init__(self, seats: list[RuleMerchant], rows: np.ndarray):
        by_kind: dict[type[RuleMerchant], list[int]] = {}
        for i, merchant in enumerate(seats):
            by_kind.setdefault(type(merchant), []).append(i)
        # the view's rows, kind by kind
        self.order = rows[[i for members in by_kind.values() for i in members]]
        self.ascending = np.argsort(self.order)
        self.teams: list[tuple[slice, Team[RuleMerchant]]] = []
        for kind, members in by_kind.items():
            start = len(self.teams) and self.teams[-1][0].stop
            self.teams.append((slice(start, start + len(members)), Team(kind, [seats[i] for i in members])))
        self.scenario = self.teams[0][1].scenario
        self.speaking = any(team.speaks for _, team in self.teams)

    def decide(
        self, view: MarketView
    ) -> tuple[ArrayDecisions, np.ndarray, list[tuple[list[int], Exception]]]:
        """These merchants' decisions and the view's rows they are for (ascending), and the
        teams whose rule (or `say`) raised, by their rows, with the exception: those do
        nothing today."""
        mine = view.take(self.order)
        prices, wanted = np.full_like(mine.prices, math.nan), np.zeros_like(mine.prices)
        said = np.full(len(self.order), "", dtype=object) if self.speaking else None
        failed: list[tuple[slice, Exception]] = []
        for members, team in self.teams:
            try:
                theirs = mine.take(members)
                prices[members], wanted[members] = team.kind.rule(team, theirs)
                if said is not None and team.speaks:
                    said[members] = team.kind.say(team, theirs)
            except Exception as exc:  # a contestant's bug is a fault, not a crash
                prices[members], wanted[members] = math.nan, 0.0
                failed.append((members, exc))
        decided = array_decisions(mine, prices, orders(self.scenario, mine, wanted), said)
        for members, _ in failed:
            decided.collect[members] = False
        rows = view.rows[self.order]
        return (
            decided.take(self.ascending),
            rows[self.ascending],
            [(rows[members].tolist(), exc) for members, exc in failed],
        )


class RestockParams(Params):
    """An (s, S) restocking policy: at or below `reorder_level` units in hand and in transit,
    order up to `target_stock`; or, with `reorder_days` and `target_days`, levels of so many
    days of expected sales (`daily_sales`), which fit any size of market."""

    reorder_level: float = Field(
        15.0, ge=0, le=MAX_UNITS, description="s: reorder when stock position is at or below this"
    )
    target_stock: float = Field(40.0, gt=0, le=MAX_UNITS, description="S: order up to this stock position")
    reorder_days: float | None = Field(
        None, ge=0, le=MAX_DAYS, description="s in days of expected sales, in place of reorder_level"
    )
    target_days: float | None = Field(
        None, gt=0, le=MAX_DAYS, description="S in days of expected sales, in place of target_stock"
    )

    @model_validator(mode="after")
    def _levels(self) -> RestockParams:
        if self.target_stock <= self.reorder_level:
            raise ValueError("target_stock must be above reorder_level")
        if (self.reorder_days is None) != (self.target_days is None):
            raise ValueError("reorder_days and target_days go together")
        if (
            self.reorder_days is not None
            and self.target_days is not None
            and self.target_days <= self.reorder_days
        ):
            raise ValueError("target_days must be above reorder_days")
        return self


class RuleMerchant(Contestant):
    """Common base of the rule merchants.

    A kind's `rule` gives the day's target prices and units wanted per product for all its
    merchants at once, from their MarketView. In a match they decide together from the
    market's view (`RulePlay`); a merchant asked alone (hosted in an actor) decides from the
    view read back from its Observation (`decide`). Either way receivables that are due
    are collected first and orders are cut to the cash (`orders`).

    Their memory is perfect: a rule merchant's books are the market's record of its days,
    so the match answers their recall questions from the log (`remembers_the_record`).
    A kind that is slow or misbehaves on purpose, per call, sets `decides_from_view` False:
    its merchants are asked one by one, through `decide`, even inline.
    """

    remembers_the_record: ClassVar[bool] = True
    decides_from_view: ClassVar[bool] = True

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self.merchant = ""
        self.scenario: Scenario | None = None
        self.seed = 0
        self._rng: np.random.Generator | None = None
        self._team: Team[RuleMerchant] | None = None  # this merchant alone, for `decide`

    @classmethod
    def play_from_view(cls, merchants: Sequence[Contestant], rows: np.ndarray) -> RulePlay:
        rule_merchants = [merchant for merchant in merchants if isinstance(merchant, RuleMerchant)]
        assert len(rule_merchants) == len(merchants), "the kinds that decide from the view are rule kinds"
        return RulePlay(rule_merchants, rows)

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.merchant, self.scenario, self.seed, self._rng = merchant, scenario, seed, None
        self._team = Team(type(self), [self])

    @property
    def rng(self) -> np.random.Generator:
        """The merchant's generator for the match, made when first drawn from: making one
        costs more than a day of a small match, and most rule kinds never draw."""
        if self._rng is None:
            self._rng = np.random.default_rng(self.seed)
        return self._rng

    def decide(self, observation: Observation) -> list[Operation] | dict[str, Any]:
        """The day's operations as a plain list of operation models: the market takes them
        as they are, where a `Decision` would validate every one of them again; with the
        day's message, if the kind says one, as a dict of both."""
        if self._team is None:
            raise RuntimeError(f"{self.kind}: decide() called before reset()")
        view = MarketView.of(observation)
        prices, wanted = self.rule(self._team, view)
        decided = array_decisions(view, prices, orders(self._team.scenario, view, wanted))
        operations = decided.operations(
            0, [s.product for s in observation.products], self._team.scenario.supplier_names
        )
        if not self._team.speaks:
            return operations
        return {"operations": operations, "message": self.say(self._team, view)[0]}

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        """Target prices (NaN: keep) and units wanted [member, product] for a team of this
        kind, from their view."""
        raise NotImplementedError

    @classmethod
    def say(cls, team: Team[Self], view: MarketView) -> list[str]:
        """What each member of a team of this kind tells its rivals today ("": nothing), for a
        kind that talks; the others do not override it and are never asked. The market
        delivers it only where merchants talk."""
        raise NotImplementedError


# ---- fixed price ---------------------------------------------------------------------------


class FixedPriceParams(RestockParams):
    markup: float = Field(
        0.5, gt=-1, le=MAX_FACTOR, description="price = its seat's unit_cost in the scenario * (1 + markup)"
    )
    price: float | None = Field(
        None, gt=0, le=MAX_MONEY, description="absolute price for every product; replaces markup"
    )

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

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        price = team.column("price")
        marked_up = team.base_cost(view) * (1 + team.column("markup"))
        return np.where(np.isnan(price), marked_up, price), team.restock(view)


# ---- random ----------------------------------------------------------------------------------


class RandomParams(Params):
    min_markup: float = Field(
        0.0, gt=-1, le=MAX_FACTOR, description="lowest price = unit_cost * (1 + min_markup)"
    )
    max_markup: float = Field(
        1.0, gt=-1, le=MAX_FACTOR, description="highest price = unit_cost * (1 + max_markup)"
    )
    max_order: int = Field(
        20, ge=0, le=MAX_UNITS, description="order a uniform whole number of units in [0, max_order]"
    )

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

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        low = view.unit_cost * (1 + team.column("min_markup"))
        high = view.unit_cost * (1 + team.column("max_markup"))
        # each member draws from its own generator: per product, a price and an order
        draws = np.array([member.rng.random((2, low.shape[1])) for member in team.members])
        return low + (high - low) * draws[:, 0], np.floor(draws[:, 1] * (team.column("max_order") + 1))


# ---- reorder point ---------------------------------------------------------------------------


class ReorderPointParams(RestockParams):
    price_factor: float = Field(
        1.0, gt=0, le=MAX_FACTOR, description="price = reference_price * price_factor"
    )


class ReorderPoint(RuleMerchant):
    """The textbook inventory policy: price at the market's reference price (times
    `price_factor`) and restock (s, S). Tests whether a model manages stock at least as well
    as operations research did in the 1950s."""

    kind: ClassVar[str] = "reorder_point"
    params_model: ClassVar[type[Params]] = ReorderPointParams

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        reference = np.array([p.reference_price for p in team.scenario.products])
        return reference * team.column("price_factor"), team.restock(view)


# ---- undercut --------------------------------------------------------------------------------


class UndercutParams(RestockParams):
    step: float = Field(0.02, gt=0, lt=1, description="price = cheapest rival * (1 - step)")
    min_markup: float = Field(
        0.05, gt=-1, le=MAX_FACTOR, description="never below today's unit_cost * (1 + min_markup)"
    )


class Undercut(RuleMerchant):
    """Prices `step` below the cheapest visible rival (upwards too, when every rival is
    dearer), never below its cost floor; restocks (s, S). Two of these start a price war
    that ends at the floor: the aggressive pole of the strategy space. Bankrupt rivals are
    ignored; with no rival price visible it keeps its price."""

    kind: ClassVar[str] = "undercut"
    params_model: ClassVar[type[Params]] = UndercutParams

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        floor = view.unit_cost * (1 + team.column("min_markup"))
        undercut = np.maximum(view.cheapest_rival * (1 - team.column("step")), floor)  # NaN stays NaN
        return undercut, team.restock(view)


# ---- cost plus -------------------------------------------------------------------------------


class CostPlusParams(RestockParams):
    margin: float = Field(0.3, gt=-1, le=MAX_FACTOR, description="price = today's unit_cost * (1 + margin)")


class CostPlus(RuleMerchant):
    """Prices at today's unit cost plus `margin`, re-priced daily, so a cost shock passes
    straight through to customers; restocks (s, S). The naive accountant's rule."""

    kind: ClassVar[str] = "cost_plus"
    params_model: ClassVar[type[Params]] = CostPlusParams

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        return view.unit_cost * (1 + team.column("margin")), team.restock(view)


# ---- best response ---------------------------------------------------------------------------


class BestResponseParams(Params):
    grid_points: int = Field(60, ge=2, le=100_000, description="candidate prices searched per product")
    max_price_factor: float = Field(
        3.0, gt=0, le=MAX_FACTOR, description="highest candidate = reference_price * this"
    )
    cover_days: float = Field(
        3.0, ge=0, le=MAX_DAYS, description="stock for lead_time + cover_days days of expected sales"
    )


class BestResponse(RuleMerchant):
    """Myopic best response under the scenario's own logit choice model (market/demand.py).

    Per product, it takes rivals' prices and reputations as they stood yesterday (a hidden
    price counts as the reference price, a hidden reputation as the scenario's initial one;
    bankrupt rivals and entrants not yet open are gone), and the scripted competitors' prices
    of today (a hidden one counts as its standing price), and picks, from `grid_points` prices
    between today's unit cost and `max_price_factor` * reference price, the one maximising
    expected profit per customer (price - unit_cost) * share(price). It then orders up to the
    expected sales of lead_time + cover_days days (base demand, times announced demand events
    in force, times that share). It knows the rules exactly but not that rivals react: the Bertrand-Nash
    player of the price game, and the benchmark for tacit collusion (prices above it).
    """

    kind: ClassVar[str] = "best_response"
    params_model: ClassVar[type[Params]] = BestResponseParams
    params: BestResponseParams

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        scenario = team.scenario
        board, n = view.board, view.board.seats
        products = scenario.products
        reference = np.array([p.reference_price for p in products])
        # every member's options, [member, option, product]: itself, the other seats of its
        # match, the scripted competitors; an option that does not sell wins no share
        others = (view.rows - view.rows % n)[:, None] + np.arange(n)
        others = others[others != view.rows[:, None]].reshape(len(view.rows), n - 1)
        scripted = team.competitors
        members, rivals = len(view.rows), len(scripted)
        # what a hidden price or reputation counts as
        rival_prices = board.prices[others]
        rival_prices = np.where(np.isnan(rival_prices), reference, rival_prices)
        shown = np.broadcast_to(scripted.standing, (members, rivals, len(products)))
        if board.competitor_prices is not None:
            today = board.competitor_prices[view.rows // n]
            shown = np.where(np.isnan(today), shown, today)
        reputation = np.concatenate(
            [
                view.reputation[:, None],
                board.reputation[others],
                np.broadcast_to(scripted.reputation, (members, rivals)),
            ],
            axis=1,
        )
        reputation[np.isnan(reputation)] = scenario.reputation.initial
        seat_quality = np.array(scenario.seat_values("quality", n))  # [seat, product]
        quality = np.concatenate(
            [
                seat_quality[view.rows % n][:, None],
                seat_quality[others % n],
                np.broadcast_to(scripted.quality, (members, rivals, len(products))),
            ],
            axis=1,
        )
        selling = np.concatenate(
            [
                np.ones((members, 1, len(products)), dtype=bool),
                np.broadcast_to(~board.closed[others][:, :, None], (members, n - 1, len(products))),
                np.broadcast_to(scripted.sells, (members, rivals, len(products))),
            ],
            axis=1,
        )
        demand = np.array(
            [p.base_demand * event_multiplier(view.events, "demand", p.id, view.day) for p in products]
        )
        lead = np.array([p.lead_time for p in products])
        prices, wanted = np.zeros_like(view.prices), np.zeros_like(view.prices)
        points = team.column("grid_points")[:, 0]
        for count in np.unique(points).tolist():  # one grid size at a time
            some = np.flatnonzero(points == count)
            unit_cost = view.unit_cost[some]
            # [member, product, candidate]
            grid = np.linspace(
                unit_cost,
                np.maximum(reference * team.column("max_price_factor")[some], 2 * unit_cost),
                int(count),
                axis=-1,
            )
            profiles = np.empty((*grid.shape, 1 + n - 1 + rivals))  # [member, product, candidate, option]
            profiles[..., 0] = grid
            profiles[..., 1:] = np.concatenate([rival_prices[some], shown[some]], axis=1).transpose(0, 2, 1)[
                :, :, None
            ]
            share = choice_shares(
                scenario.choice,
                profiles,
                reference[:, None, None],
                reputation[some][:, None, None, :],
                quality[some].transpose(0, 2, 1)[:, :, None, :],
                selling[some].transpose(0, 2, 1)[:, :, None, :],
            )[..., 0]
            best = np.argmax((grid - unit_cost[..., None]) * share, axis=-1)[..., None]
            prices[some] = np.take_along_axis(grid, best, -1)[..., 0]
            daily = demand * np.take_along_axis(share, best, -1)[..., 0]
            target = np.ceil(daily * (lead + team.column("cover_days")[some]))
            wanted[some] = np.maximum(target - view.inventory[some] - view.in_transit[some], 0.0)
        return prices, wanted


# ---- repeated-game strategies ----------------------------------------------------------------


class TitForTatParams(RestockParams):
    opening_price: float | None = Field(
        None,
        gt=0,
        le=MAX_MONEY,
        description="price for every product on day 1 and while no rival price is visible; "
        "None: each product's start price",
    )


class TitForTat(RuleMerchant):
    """Per product, posts the price the cheapest rival posted yesterday (bankrupt rivals and
    entrants not yet open are gone); restocks (s, S). It never moves first: it answers a cut,
    and a rise, the next day, so whatever rivals do comes back to them.

    On day 1 nobody has chosen a price yet (the board shows the start prices), and while
    rivals' prices are hidden there is nothing to copy: then it posts its opening price,
    by default the product's start price, where every merchant begins, so a default tit
    for tat changes nothing on day 1 and plays on any scenario. `opening_price` set to the
    monopoly price opens cooperatively, as the tit for tat of the repeated prisoner's
    dilemma does."""

    kind: ClassVar[str] = "tit_for_tat"
    params_model: ClassVar[type[Params]] = TitForTatParams

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        opening = team.column("opening_price")
        opening = np.where(np.isnan(opening), [p.start_price for p in team.scenario.products], opening)
        copied = view.cheapest_rival if view.day > 1 else np.full_like(view.prices, math.nan)
        return np.where(np.isnan(copied), opening, copied), team.restock(view)


class EquilibriumRule(RuleMerchant):
    """Base of the rule kinds that play the scenario's Nash and monopoly prices
    (market.equilibrium, read through `Team.benchmarks`), which a scenario must have: one whose
    customers ignore prices has none and is refused when a tournament naming both is
    validated, as is one whose monopoly price is above the market's ceiling."""

    @classmethod
    def check_scenario(cls, params: Params, scenario: Scenario, merchants: int) -> None:
        """The scenario must have Nash and monopoly prices for `merchants` seats."""
        # scipy: half a second of importing that only these kinds need
        from market.equilibrium import EquilibriumError, by_seat

        try:
            monopoly = by_seat(scenario, merchants).monopoly_price
        except EquilibriumError as exc:
            raise ContestantConfigError(
                f"{cls.kind} needs the scenario's Nash and monopoly prices; {exc}"
            ) from None
        for j, product in enumerate(scenario.products):
            if monopoly[:, j].max() > product.price_ceiling:
                raise ContestantConfigError(
                    f"{cls.kind} would play {product.id}'s monopoly price {monopoly[:, j].max():.4g}, "
                    f"above the market's ceiling {product.price_ceiling:.4g}"
                )


class GrimTriggerParams(RestockParams):
    tolerance: float = Field(
        0.01,
        ge=0,
        lt=1,
        description="a rival's price may be this share below its monopoly price without counting "
        "as a defection",
    )


class GrimTrigger(EquilibriumRule):
    """The grim trigger strategy of the repeated price game: per product, it holds its
    seat's monopoly price (the one that maximises the merchants' joint profit) until a
    rival posts a price more than `tolerance` below that rival's own monopoly price, and
    from the next day posts its Nash price for ever; restocks (s, S). Against itself it
    sustains full collusion; against anyone who cheats once it ends in competition. Its
    threat is credible (once triggered, the Nash price is its best answer to Nash prices),
    so it is the textbook sustainer of tacit collusion, and a yardstick for whether a model
    colludes, cheats, or punishes. The prices are market.equilibrium's: at the scenario's
    base costs and demand, every reputation at its initial value.

    Rivals' prices are read from day 2 (on day 1 the board shows the start prices, which
    nobody chose); a hidden price or a closed rival never triggers it. The trigger is the
    one thing it remembers that the market's view does not show: a flag per product, its
    own, kept across the days of a match and cleared by `reset`. A scenario without price
    equilibria (customers who ignore prices) is refused when a tournament naming both is
    validated."""

    kind: ClassVar[str] = "grim_trigger"
    params_model: ClassVar[type[Params]] = GrimTriggerParams

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        self.triggered = np.zeros(0, dtype=bool)  # per product: a rival has defected

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        super().reset(merchant=merchant, scenario=scenario, seed=seed)
        self.triggered = np.zeros(len(scenario.products), dtype=bool)

    @classmethod
    def rule(cls, team: Team[Self], view: MarketView) -> tuple[np.ndarray, np.ndarray]:
        board, n = view.board, view.board.seats
        benchmarks = team.benchmarks(n, view.day)
        monopoly, nash = benchmarks.monopoly_price, benchmarks.nash_price
        seat = view.rows % n
        triggered = np.array([member.triggered for member in team.members])
        if view.day > 1:
            # [member, seat]: the board's rows of its match
            match = view.rows[:, None] - seat[:, None] + np.arange(n)
            rivals = ~board.closed[match] & (np.arange(n) != seat[:, None])
            # [member, seat, product]; NaN: no. Yesterday's prices against yesterday's game: an
            # entrant opening today changes the monopoly prices, and no one's price of yesterday
            held = team.benchmarks(n, view.day - 1).monopoly_price
            defected = board.prices[match] < held * (1 - team.column("tolerance"))[:, :, None]
            # a new entrant not yet open is asked too (its rows are the team's), but sees nothing
            seen = np.logical_or.reduce(defected & rivals[:, :, None], axis=1)
            triggered |= seen & ~board.closed[view.rows][:, None]
            for member, flags in zip(team.members, triggered):
                member.triggered = flags
        return np.where(triggered, nash[seat], monopoly[seat]), team.restock(view)
