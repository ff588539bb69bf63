"""MarketEnv: the market (market/engine.py) as a PettingZoo ParallelEnv, one match.

Observations are `Observation` models (or flat arrays with numeric=True, for RL code).
Actions are anything `parse_decision` accepts, or a dict of arrays from `action_space`.
Rewards are the day's change in net worth. The last day truncates everyone; a merchant
whose cash falls below zero is terminated (bankrupt).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from market.engine import Market
from market.scenario import Scenario
from market.types import Advertise, MarketView, Order, ParsedDecision, Rejection, RejectionCode, SetPrice


class MarketEnv(ParallelEnv):
    metadata = {"name": "arena_market_v0", "render_modes": []}

    def __init__(self, scenario: Scenario, merchants: list[str] | int = 2, days: int | None = None, numeric: bool = False, talk: bool = False):
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

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Dict:
        m, p = len(self.possible_agents), len(self.scenario.products)
        big = np.float32(1e12)
        return spaces.Dict(
            {
                "day": spaces.Box(0, self.days + 1, (1,), np.float32),
                "cash": spaces.Box(-big, big, (1,), np.float32),
                "reputation": spaces.Box(0, 1, (1,), np.float32),
                "inventory": spaces.Box(0, big, (p,), np.float32),
                "in_transit": spaces.Box(0, big, (p,), np.float32),
                "unit_cost": spaces.Box(0, big, (p,), np.float32),
                "prices": spaces.Box(0, big, (m, p), np.float32),
            }
        )

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Dict:
        p = len(self.scenario.products)
        reference = np.array([pr.reference_price for pr in self.scenario.products])
        return spaces.Dict(
            {
                "price": spaces.Box(0, (reference * 3).astype(np.float32), (p,), np.float32),
                "order": spaces.Box(0, 100, (p,), np.float32),
                "advertise": spaces.Box(0, 100, (1,), np.float32),
            }
        )

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.market.reset([seed])
        self.agents = list(self.possible_agents)
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        market = self.market
        playing = list(self.agents)
        change = market.advance(decisions={self._index[a]: self._decision(action) for a, action in actions.items() if a in self._index})
        played = market.logs[0].day(market.day - 1)
        records = dict(zip((self.possible_agents[s] for s in played.seat.tolist()), played.records()))
        last_day = market.day - 1 >= self.days
        self.agents = [a for a in self.possible_agents if market.playing[self._index[a]]]
        rewards = {a: float(change[self._index[a]]) for a in playing}
        terminations = {a: records[a].bankrupt for a in playing}
        truncations = {a: last_day for a in playing}
        infos = {a: {"record": records[a]} for a in playing}
        return self._observations(playing), rewards, terminations, truncations, infos

    def _observations(self, agents: list[str] | None = None) -> dict[str, Any]:
        agents = self.agents if agents is None else agents
        view = self.market.view()
        rows = [self._index[a] for a in agents]
        if self.numeric:
            return {a: _numbers(view, i) for a, i in zip(agents, rows)}
        return dict(zip(agents, self.market.observations(view, rows)))

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
            return ParsedDecision([], [Rejection(-1, repr(action)[:500], reason, RejectionCode.MALFORMED_DECISION)], [])
        return ops


def _numbers(view: MarketView, i: int) -> dict[str, np.ndarray]:
    """Merchant i's observation as arrays; rivals' prices the scenario hides read 0."""
    f32 = np.float32
    prices = np.nan_to_num(view.board.prices, nan=0.0)
    prices[i] = view.prices[i]
    return {
        "day": np.array([view.day], f32),
        "cash": np.array([view.cash[i]], f32),
        "reputation": np.array([view.reputation[i]], f32),
        "inventory": view.inventory[i].astype(f32),
        "in_transit": view.in_transit[i].astype(f32),
        "unit_cost": view.unit_cost[i].astype(f32),
        "prices": prices.astype(f32),
    }
