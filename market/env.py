"""MarketEnv: the market (market/engine.py) as a PettingZoo ParallelEnv, one match.

Observations are `Observation` models (or flat arrays with numeric=True, for RL code).
Actions are anything `parse_decision` accepts, or a dict of arrays from `action_space`.
Rewards are the day's change in net worth. The last day truncates everyone; a merchant
whose cash falls below zero is terminated (bankrupt). A new entrant (an intervention of kind
entry) joins `agents` on the day it opens, with its first observation.

The observations that reset and step return, and the infos of step, are dicts of every agent
whose values are made when first read (`LazyDict`), from the morning as it was when they
were returned, so a large market pays only for the observations someone reads
(docs/benchmarks.md#scale). A model observation's `yesterday` is the very record its info
holds: copy it before changing it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from market.engine import Market
from market.observations import ObservationMaker
from market.scenario import Scenario
from market.types import Advertise, MarketView, Order, ParsedDecision, Rejection, RejectionCode, SetPrice

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_values


class MarketEnv(ParallelEnv):
    metadata = {"name": "arena_market_v0", "render_modes": []}

    def __init__(
        self,
        scenario: Scenario,
        merchants: list[str] | int = 2,
        days: int | None = None,
        numeric: bool = False,
        talk: bool = False,
    ):
        """`talk`: merchants may send one another messages (market.engine.Market)."""
        if isinstance(merchants, int):
            merchants = [f"m{i}" for i in range(merchants)]
        self.market = Market(scenario, [merchants], days, talk)
        self.scenario = scenario
        self.days = self.market.days
        self.numeric = numeric
        self.possible_agents = list(merchants)
        self.agents: list[str] = []
        self._index = {name: i for i, name in enumerate(merchants)}
        # by agent, made when first asked for: each agent's own, which its own seed draws from
        self._observation_spaces: dict[str, spaces.Dict] = {}
        self._action_spaces: dict[str, spaces.Dict] = {}

    def observation_space(self, agent: str) -> spaces.Dict:
        if agent not in self._observation_spaces:
            self._observation_spaces[agent] = self._new_observation_space()
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Dict:
        if agent not in self._action_spaces:
            self._action_spaces[agent] = self._new_action_space()
        return self._action_spaces[agent]

    def _new_observation_space(self) -> spaces.Dict:
        s = self.scenario
        m, p = len(self.possible_agents), len(s.products)
        big = np.float32(1e12)
        boxes: dict[str, spaces.Space] = {
            "day": spaces.Box(0, self.days + 1, (1,), np.float32),
            "cash": spaces.Box(-big, big, (1,), np.float32),
            "reputation": spaces.Box(0, 1, (1,), np.float32),
            "inventory": spaces.Box(0, big, (p,), np.float32),
            "in_transit": spaces.Box(0, big, (p,), np.float32),
            "unit_cost": spaces.Box(0, big, (p,), np.float32),
            "prices": spaces.Box(0, big, (m, p), np.float32),
        }
        # the parts of the retail world the scenario runs (see _numbers)
        if s.competitors:
            boxes["competitor_prices"] = spaces.Box(0, big, (len(s.competitors), p), np.float32)
        if any(product.shelf_life for product in s.products):
            longest = max(product.shelf_life or 0 for product in s.products)
            boxes["spoiling"] = spaces.Box(0, big, (p, longest), np.float32)
        if s.promotions is not None:
            boxes["discount"] = spaces.Box(0, 1, (p,), np.float32)
        if s.satisfaction is not None:
            boxes["satisfaction"] = spaces.Box(1, 5, (1,), np.float32)
        return spaces.Dict(boxes)

    def _new_action_space(self) -> spaces.Dict:
        p = len(self.scenario.products)
        reference = np.array([pr.reference_price for pr in self.scenario.products])
        return spaces.Dict(
            {
                "price": spaces.Box(0, (reference * 3).astype(np.float32), (p,), np.float32),
                "order": spaces.Box(0, 100, (p,), np.float32),
                "advertise": spaces.Box(0, 100, (1,), np.float32),
            }
        )

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[LazyDict, dict[str, dict[str, Any]]]:
        self.market.reset([seed])
        self.agents = self._open()
        return self._observations(self._observation_maker(), self.agents), {a: {} for a in self.agents}

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[LazyDict, dict[str, float], dict[str, bool], dict[str, bool], LazyDict]:
        market = self.market
        playing, rows = self.agents, np.flatnonzero(market.playing)
        change = market.advance(
            decisions={
                self._index[a]: self._decision(action) for a, action in actions.items() if a in self._index
            }
        )
        last_day = market.day - 1 >= self.days
        self.agents = self._open()
        # an entrant opening tomorrow is given its first observation, and nothing yet to reward
        everyone = playing + [a for a in self.agents if a not in playing]
        rewards = dict.fromkeys(everyone, 0.0)
        rewards.update(zip(playing, change[rows].tolist()))
        terminations = dict.fromkeys(everyone, False)
        # those gone bankrupt today: the others are no longer playing
        for k in np.flatnonzero(market.closed[rows]).tolist():
            terminations[playing[k]] = True
        truncations = dict.fromkeys(everyone, last_day)
        maker = self._observation_maker()
        infos = LazyDict.made_on_read(everyone, lambda a: {"record": maker.yesterday(self._index[a])})
        return self._observations(maker, everyone), rewards, terminations, truncations, infos

    def _open(self) -> list[str]:
        """The agents playing today."""
        return [a for a, on in zip(self.possible_agents, self.market.playing.tolist()) if on]

    def _observation_maker(self) -> ObservationMaker:
        """The merchants' observations of this morning, and their records of the day before,
        made when asked for, from the morning's numbers as they are now."""
        return ObservationMaker(self.market, self.market.view().frozen())

    def _observations(self, maker: ObservationMaker, agents: list[str]) -> LazyDict:
        index = self._index
        if self.numeric:
            view = maker.view
            prices = np.nan_to_num(view.board.prices, nan=0.0)
            return LazyDict.made_on_read(agents, lambda a: _numbers(view, prices, index[a]))
        return LazyDict.made_on_read(agents, lambda a: maker.observation(index[a]))

    def _decision(self, action: Any) -> Any:
        """An action sampled from action_space as operations; anything else as it is."""
        if not (isinstance(action, dict) and "price" in action and "operations" not in action):
            return action
        try:
            ops: list[Any] = []
            for j, product in enumerate(self.scenario.product_ids):
                ops.append(SetPrice(product=product, price=float(action["price"][j])))
                quantity = float(np.floor(action["order"][j]))
                if quantity > 0:
                    ops.append(Order(product=product, quantity=quantity))
            amount = float(np.asarray(action["advertise"]).reshape(-1)[0])
            if amount > 0:
                ops.append(Advertise(amount=amount))
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            reason = f"malformed decision: not an action_space sample ({type(exc).__name__}: {exc})"
            return ParsedDecision(
                [], [Rejection(-1, repr(action)[:500], reason, RejectionCode.MALFORMED_DECISION)], []
            )
        return ops


def _numbers(view: MarketView, prices: np.ndarray, i: int) -> dict[str, np.ndarray]:
    """Merchant i's observation as arrays; `prices`: the board's, rivals' prices the scenario
    hides read 0."""
    f32 = np.float32
    prices = prices.copy()
    prices[i] = view.prices[i]
    numbers = {
        "day": np.array([view.day], f32),
        "cash": np.array([view.cash[i]], f32),
        "reputation": np.array([view.reputation[i]], f32),
        "inventory": view.inventory[i].astype(f32),
        "in_transit": view.in_transit[i].astype(f32),
        "unit_cost": view.unit_cost[i].astype(f32),
        "prices": prices.astype(f32),
    }
    scripted = view.board.competitor_prices
    if scripted is not None and scripted.shape[1]:  # today's; 0 where one does not sell the product
        numbers["competitor_prices"] = np.nan_to_num(scripted[i // view.board.seats], nan=0.0).astype(f32)
    if view.spoiling is not None:  # units in stock by days left before they spoil
        numbers["spoiling"] = view.spoiling[i].astype(f32)
    if view.promotions is not None:  # the discount in force today
        discount, until = view.promotions
        numbers["discount"] = np.where(until[i] >= view.day, discount[i], 0.0).astype(f32)
    if view.satisfaction is not None:
        numbers["satisfaction"] = np.array([view.satisfaction[i]], f32)
    return numbers


K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Unbuilt:
    """The place of a value not yet made, with what makes it."""

    make: Callable[[str], Any]


class LazyDict(dict[str, Any]):
    """A dict of every agent whose values are made when first read (`make(agent)`), so that a
    market of a thousand merchants builds only the observations someone reads. It is a dict,
    as PettingZoo's API asks, with every agent a key; each value is made once, and reading it
    any way a mapping is read (`[]`, get, values, items, iteration, ==, copy, `dict(...)`,
    `{**...}`, pickling) makes it. A plain dict's own C methods called unbound
    (`dict.values(d)`) would see the placeholders. Built as dict(...) builds one (how mapping
    utilities rebuild one, `type(d)(pairs)`), its values are all there."""

    @classmethod
    def made_on_read(cls, agents: Iterable[str], make: Callable[[str], Any]) -> LazyDict:
        return cls(dict.fromkeys(agents, _Unbuilt(make)))

    def __getitem__(self, agent: str) -> Any:
        value = dict.__getitem__(self, agent)
        if isinstance(value, _Unbuilt):
            value = value.make(agent)
            dict.__setitem__(self, agent, value)
        return value

    def __iter__(self) -> Iterator[str]:  # defined here, dict(self) and {**self} read through __getitem__
        return dict.__iter__(self)

    def get(self, agent: str, default: Any = None) -> Any:
        if agent not in self:
            return default
        return self[agent]

    def values(self) -> dict_values[str, Any]:
        """The dict's own view, every value made first."""
        self._make_every_value()
        return dict.values(self)

    def items(self) -> dict_items[str, Any]:
        """The dict's own view, every value made first."""
        self._make_every_value()
        return dict.items(self)

    def _make_every_value(self) -> None:
        for agent in self:
            self[agent]

    def pop(self, agent: str, *default: Any) -> Any:
        if agent in self:
            self[agent]
        return dict.pop(self, agent, *default)

    def popitem(self) -> tuple[str, Any]:
        if not self:
            raise KeyError("popitem(): dictionary is empty")
        agent = next(reversed(self))
        return agent, self.pop(agent)

    def setdefault(self, agent: str, default: Any = None) -> Any:
        return self[agent] if agent in self else dict.setdefault(self, agent, default)

    def copy(self) -> dict[str, Any]:
        """A plain dict of every value, made."""
        return {agent: self[agent] for agent in self}

    def __eq__(self, other: object) -> bool:
        return self.copy() == (other.copy() if isinstance(other, LazyDict) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __or__(self, other: dict[K, V]) -> dict[str | K, Any | V]:
        return self.copy() | other

    def __ror__(self, other: dict[K, V]) -> dict[str | K, Any | V]:
        return dict(other) | self.copy()

    def __repr__(self) -> str:
        return repr(self.copy())

    def __copy__(self) -> LazyDict:
        """A copy that makes the values not yet made when they are read (PettingZoo's AEC
        wrapper copies the observations and infos of every step)."""
        return LazyDict(dict.items(self))

    def __reduce__(self) -> tuple:  # pickling and deepcopy: a plain dict of every value, made
        return dict, (self.copy(),)
