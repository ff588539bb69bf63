"""MarketEnv: several merchants in one market, as a PettingZoo ParallelEnv.

One day, in order:
1. goods ordered earlier arrive; credit sales whose credit days have passed become due;
2. each merchant's operations are validated against its own state, in the order given, and
   the valid ones applied (prices, orders paid now, advertising, collecting receivables);
   the decision's plan, if it states one, is recorded, its unknown products and prices a
   set_price could not post left out;
3. customers arrive and choose (market/demand.py); sales are capped by stock;
4. holding and fixed costs are paid, reputation moves, and a merchant whose cash is below
   zero goes bankrupt (terminated). The last day truncates everyone.

Observations are `Observation` models (or flat arrays with numeric=True, for RL code).
Actions are anything `parse_decision` accepts, or a dict of arrays from `action_space`.
Rewards are the day's change in net worth.

Several matches of one scenario with the same number of merchants can also be played side by
side in one set of arrays (`matches`): a row per merchant of every match, each match's
customers choosing among its own merchants with its own generator, so each plays exactly as
it would alone. A numpy operation costs the same for 16 rows as for 500, so a day of many
small matches costs little more than a day of one. Such an env is driven by `advance` with
`PlainDecisions`; the PettingZoo API is for one match.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from itertools import repeat
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from market.daylog import KIND_INDEX, DayLogBuilder, Operations
from market.demand import allocate_markets, demand_factor, utilities
from market.scenario import Scenario
from market.types import (
    Advertise,
    Collect,
    DayRecord,
    EventNotice,
    Observation,
    Order,
    ParsedDecision,
    PlainDecisions,
    PlannedPrice,
    Positions,
    ProductState,
    PublicMerchant,
    Rejection,
    SetPrice,
    Wait,
    parse_decision_indexed,
)

PRICE_CEILING_FACTOR = 100.0  # a posted price above reference_price * this is rejected


class MarketEnv(ParallelEnv):
    metadata = {"name": "arena_market_v0", "render_modes": []}

    def __init__(
        self, scenario: Scenario, merchants: list[str] | int = 2, days: int | None = None, numeric: bool = False,
        matches: list[list[str]] | None = None,
    ):  # fmt: skip
        """`matches`: the merchants of several matches to play side by side (then `merchants`
        is ignored); each match's own seeds come with `reset(options={"seeds": [...]})`."""
        if matches is not None:
            merchants = matches[0]
        elif isinstance(merchants, int):
            merchants = [f"m{i}" for i in range(merchants)]
        rosters = matches if matches is not None else [merchants]
        if not merchants or any(len(set(r)) != len(r) or len(r) != len(merchants) for r in rosters):
            raise ValueError("merchants must be unique names, at least one, as many in every match")
        self.rosters = [tuple(r) for r in rosters]
        self.seats = len(merchants)
        self.scenario = scenario
        self.days = days or scenario.days
        self.numeric = numeric
        self.possible_agents = list(merchants)
        self.agents: list[str] = []
        self._index = {name: i for i, name in enumerate(merchants)}
        self._rngs = [np.random.default_rng() for _ in self.rosters]  # one per match
        products = scenario.products
        self._unit_cost0 = np.array([p.unit_cost for p in products])
        self._reference = np.array([p.reference_price for p in products])
        self._quality = np.array([p.quality for p in products])
        self._holding = np.array([p.holding_cost for p in products])
        self._lead = np.array([p.lead_time for p in products])
        # what validating an operation reads, as Python numbers (numpy scalars are slower)
        self._ceilings = [p.reference_price * PRICE_CEILING_FACTOR for p in products]
        self._ceiling_row = np.array(self._ceilings)
        self._lead_days = [p.lead_time for p in products]
        self._whole_units = scenario.whole_units
        self._product_ids = scenario.product_ids
        self._pid = {p: j for j, p in enumerate(self._product_ids)}
        self._match_rows = [slice(b * self.seats, (b + 1) * self.seats) for b in range(len(self.rosters))]

    # --- PettingZoo API -------------------------------------------------------------

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
        return spaces.Dict(
            {
                "price": spaces.Box(0, (self._reference * 3).astype(np.float32), (p,), np.float32),
                "order": spaces.Box(0, 100, (p,), np.float32),
                "advertise": spaces.Box(0, 100, (1,), np.float32),
            }
        )

    def reset(self, seed: int | None = None, options: dict | None = None):
        """options {"seeds": [one per match]} seeds matches played side by side."""
        seeds = (options or {}).get("seeds")
        if seeds is None and seed is not None:
            seeds = [seed] if len(self.rosters) == 1 else np.random.SeedSequence(seed).spawn(len(self.rosters))
        if seeds is not None:
            if len(seeds) != len(self.rosters):
                raise ValueError(f"{len(seeds)} seeds for {len(self.rosters)} matches")
            self._rngs = [np.random.default_rng(s) for s in seeds]
        s, m, p = self.scenario, len(self.rosters) * self.seats, len(self.scenario.products)
        self.agents = list(self.possible_agents)
        self.playing = np.ones(m, dtype=bool)  # per row: still in its match
        self.day = 1
        self.cash = np.full(m, s.finance.initial_cash)
        self.inventory = np.tile([pr.initial_stock for pr in s.products], (m, 1)).astype(float)
        self.prices = np.tile([pr.start_price for pr in s.products], (m, 1)).astype(float)
        self.reputation = np.full(m, s.reputation.initial)
        self.pipeline = np.zeros((m, p, max(int(self._lead.max()), 1)))  # [.., k]: arrives in k+1 days
        self.credit = np.zeros((m, max(s.finance.credit_days, 1)))  # [.., k]: due in k+1 days
        self.due = np.zeros(m)
        self.bankrupt = np.zeros(m, dtype=bool)
        self.units_sold = np.zeros((m, p))
        self.records: dict[str, DayRecord] = {}  # yesterday's, by merchant (after `step`, not `advance`)
        self.logs = [DayLogBuilder(roster, tuple(self._product_ids)) for roster in self.rosters]  # one per match
        self.log = self.logs[0]
        self._closing: tuple[np.ndarray, np.ndarray] | None = None  # (unit costs, net worth) at the end of the last step
        return self._observations(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        rows, change = self.advance(actions)
        playing = [self.possible_agents[i] for i in rows.tolist()]
        self.records = dict(zip(playing, self.log.day(self.day - 1).records()))
        last_day = self.day - 1 >= self.days
        rewards = {a: change[self._index[a]] for a in playing}
        terminations = {a: record.bankrupt for a, record in self.records.items()}
        truncations = {a: last_day for a in playing}
        infos = {a: {"record": record} for a, record in self.records.items()}
        return self._observations(playing), rewards, terminations, truncations, infos

    def advance(self, actions: dict[str, Any] | PlainDecisions) -> tuple[np.ndarray, list[float]]:
        """Play one day: what `step` does, without building observations or day records
        (the day goes into each match's `logs` as columns). `actions` may also be
        PlainDecisions with a row for every merchant of every match (the rows of merchants no
        longer playing are ignored). Returns the rows that played and every row's change in
        net worth."""
        s = self.scenario
        m, p = len(self.playing), len(s.products)
        day = self.day
        unit_cost = self._unit_cost_today(day)
        if self._closing is not None and self._closing[0] is unit_cost:
            worth_start = self._closing[1]  # nothing moves between days: yesterday's close, same costs
        else:
            worth_start = self.net_worth(unit_cost)
        cash_start = self.cash.copy()

        arrived = self.pipeline[:, :, 0].copy()
        self.inventory += arrived
        _shift_left(self.pipeline)
        self.due += self.credit[:, 0]
        _shift_left(self.credit)

        ordered = np.zeros((m, p))
        advertising = np.zeros(m)
        collected = np.zeros(m)
        costs = unit_cost.tolist()
        rejected: list[list[Rejection]] = [[] for _ in range(m)]
        plans: list[dict[str, float]] = [{} for _ in range(m)]
        rows = np.flatnonzero(self.playing)
        if type(actions) is PlainDecisions:
            applied = self._apply_plain(actions, rows, costs, ordered, collected, rejected)
        elif len(self.rosters) > 1:
            raise ValueError("matches played side by side take PlainDecisions")
        else:
            done: list[tuple[int, dict]] = []  # (row, operation applied)
            for agent in self.agents:
                i = self._index[agent]
                operations, rejections, plan = self._operations(actions.get(agent))
                rejected[i].extend(rejections)
                if plan:
                    plans[i] = self._kept_plan(plan)
                for index, op in operations:
                    reason = self._apply(i, op, costs, ordered, advertising, collected)
                    if reason is None:
                        done.append((i, _as_dict(op)))
                    else:
                        rejected[i].append(Rejection(index=index, operation=_as_dict(op), reason=reason))
            applied = Operations.of_dicts(done, self._product_ids)

        wanted, sold = self._clear_market(day)
        revenue_by_product = sold * self.prices
        revenue = _sum(revenue_by_product, 1)
        on_credit = revenue * s.finance.credit_share
        revenue_cash = revenue - on_credit
        if s.finance.credit_days == 0:
            self.due += on_credit
        else:
            self.credit[:, s.finance.credit_days - 1] += on_credit
        if s.demand.stock_limited:
            self.inventory -= sold
            made_to_order = np.zeros(m)
        else:
            made_to_order = _sum(sold * unit_cost, 1)
        purchases = _sum(ordered * unit_cost, 1) + made_to_order
        holding = _sum(self.inventory * self._holding, 1)
        fixed = np.where(self.bankrupt, 0.0, s.finance.fixed_daily_cost)
        self.cash += revenue_cash - made_to_order - holding - fixed
        self.units_sold += sold
        self._update_reputation(wanted, sold, advertising)

        self.bankrupt |= self.cash < 0
        worth_end = self.net_worth(unit_cost)
        self._closing = (unit_cost, worth_end)

        receivables = self.due + _sum(self.credit, 1)
        # np.array of a tuple copies in C; np.stack would cost more in Python than the copy
        scalars = np.array((revenue, revenue_cash, collected, purchases, advertising, holding, fixed, cash_start, self.cash, receivables, self.reputation, worth_end)).T
        in_transit = _sum(self.pipeline, 2)
        per_product = np.array((self.prices, wanted, sold, wanted - sold, arrived, ordered, self.inventory, in_transit, np.broadcast_to(unit_cost, (m, p)))).transpose(1, 0, 2)
        for log, span in zip(self.logs, self._match_rows):
            seats = np.flatnonzero(self.playing[span])
            if seats.size:
                at = seats + span.start
                pick = at.tolist()
                log.add(seats, day, self.bankrupt[at], scalars[at], per_product[at], applied.take(span.start, span.stop, at), [rejected[i] for i in pick], [plans[i] for i in pick])

        self.day += 1
        if day >= self.days:
            self.playing[:] = False
        else:
            self.playing &= ~self.bankrupt
        if not self.playing.all():
            self.agents = [a for a, on in zip(self.possible_agents, self.playing.tolist()) if on]
        return rows, (worth_end - worth_start).tolist()

    # --- the day's pieces -----------------------------------------------------------

    def _rows_for(self, agents: list[str]) -> Callable[[list], list]:
        """Picks `agents`' entries, in order, from a list indexed like possible_agents."""
        if len(agents) == len(self.possible_agents):  # everyone: agents keeps possible_agents' order
            return _same
        pick = [self._index[a] for a in agents]
        return lambda values: [values[i] for i in pick]

    def _operations(self, action: Any) -> ParsedDecision:
        """(position in the decision, operation) for each well-formed operation, rejections
        and the plan."""
        if isinstance(action, dict) and "price" in action and "operations" not in action:
            try:
                return ParsedDecision(list(enumerate(self._from_arrays(action))), [], [])
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                reason = f"malformed decision: not an action_space sample ({type(exc).__name__}: {exc})"
                return ParsedDecision([], [Rejection(index=-1, operation=repr(action)[:500], reason=reason)], [])
        return parse_decision_indexed(action)

    def _kept_plan(self, plan: list[PlannedPrice]) -> dict[str, float]:
        """product -> planned price, for the plan's products the market sells at prices a
        set_price would be allowed (a later item for the same product wins)."""
        kept = {}
        for item in plan:
            j = self._pid.get(item.product)
            if j is not None and self._price_problem(j, item.price) is None:
                kept[item.product] = item.price
        return kept

    def _from_arrays(self, action: dict) -> list[Any]:
        """An action sampled from action_space, as operations."""
        ops: list[Any] = []
        for j, product in enumerate(self.scenario.product_ids):
            ops.append(SetPrice(product=product, price=float(action["price"][j])))
            quantity = float(np.floor(action["order"][j]))
            if quantity > 0:
                ops.append(Order(product=product, quantity=quantity))
        amount = float(np.asarray(action["advertise"]).reshape(-1)[0])
        if amount > 0:
            ops.append(Advertise(amount=amount))
        return ops

    def _apply(self, i: int, op: Any, unit_cost: list[float], ordered: np.ndarray, advertising: np.ndarray, collected: np.ndarray) -> str | None:
        """Apply one operation to merchant i (unit_cost: today's, per product); return why not, or None when applied."""
        if isinstance(op, Wait):
            return None
        if isinstance(op, Collect):
            self._collect(i, collected)
            return None
        if isinstance(op, Advertise):
            if not math.isfinite(op.amount) or op.amount < 0:
                return "advertising amount must be a non-negative number"
            if op.amount > self.cash[i]:
                return f"advertising {op.amount:.2f} exceeds cash {self.cash[i]:.2f}"
            self.cash[i] -= op.amount
            advertising[i] += op.amount
            return None
        j = self._pid.get(op.product)
        if j is None:
            return f"unknown product {op.product!r}"
        if isinstance(op, SetPrice):
            return self._set_price(i, j, op.price)
        return self._order(i, j, op.quantity, unit_cost, ordered)

    def _apply_plain(
        self, decisions: PlainDecisions, rows: np.ndarray, unit_cost: list[float], ordered: np.ndarray, collected: np.ndarray,
        rejected: list[list[Rejection]],
    ) -> Operations:  # fmt: skip
        """Apply the `rows` of `decisions` all at once, exactly as each row's operations would
        be applied one by one (collect, then prices, then orders in product order, each order
        checked against the cash the earlier ones left); record the rejected ones and return
        the applied ones."""
        collect = decisions.collect[rows]
        takers = rows[collect]
        if takers.size:
            collected[takers] = self.due[takers]
            self.cash[takers] += self.due[takers]
            self.due[takers] = 0.0
        prices = decisions.prices[rows]
        posted = ~np.isnan(prices)
        allowed = (prices > 0) & (prices <= self._ceiling_row)  # NaN, inf and -inf all fail
        self.prices[rows] = np.where(allowed, prices, self.prices[rows])
        quantities = decisions.orders[rows]
        wanted = quantities > 0
        acceptable = wanted & (quantities < math.inf)
        if self._whole_units:
            acceptable &= quantities == np.floor(quantities)
        accepted = np.zeros_like(wanted)
        cash = self.cash[rows]
        refused: dict[tuple[int, int], str] = {}
        for j, cost_j in enumerate(unit_cost):
            cost = quantities[:, j] * cost_j
            accepted[:, j] = ok = acceptable[:, j] & (cost <= cash)
            for k in np.flatnonzero(wanted[:, j] & ~ok).tolist():
                refused[k, j] = self._order_problem(float(quantities[k, j]), float(cost[k]), float(cash[k]))
            cash -= np.where(ok, cost, 0.0)
        self.cash[rows] = cash
        units = np.where(accepted, quantities, 0.0)
        ordered[rows] += units
        for j, lead in enumerate(self._lead_days):
            if lead == 0:
                self.inventory[rows, j] += units[:, j]
            else:
                self.pipeline[rows, j, lead - 1] += units[:, j]
        for k in np.flatnonzero(np.logical_or.reduce((posted & ~allowed) | (wanted & ~accepted), 1)).tolist():
            self._reject_plain(int(rows[k]), bool(collect[k]), prices[k], allowed[k], quantities[k], accepted[k], refused, k, rejected)
        return _plain_operations(rows, collect, prices, posted & allowed, quantities, accepted)

    def _reject_plain(
        self, i: int, collect: bool, prices: np.ndarray, allowed: np.ndarray, quantities: np.ndarray, accepted: np.ndarray,
        refused: dict[tuple[int, int], str], k: int, rejected: list[list[Rejection]],
    ) -> None:  # fmt: skip
        """Record merchant i's rejected plain operations, each with its index among the
        operations its decision stands for (collect, then prices, then orders)."""
        index = int(collect)
        for j, (price, ok) in enumerate(zip(prices.tolist(), allowed.tolist())):
            if price == price:  # not NaN: a set_price
                if not ok:
                    rejected[i].append(Rejection(index, {"op": "set_price", "product": self._product_ids[j], "price": price}, self._price_problem(j, price)))
                index += 1
        for j, (quantity, ok) in enumerate(zip(quantities.tolist(), accepted.tolist())):
            if quantity > 0:
                if not ok:
                    rejected[i].append(Rejection(index, {"op": "order", "product": self._product_ids[j], "quantity": quantity}, refused[k, j]))
                index += 1

    def _collect(self, i: int, collected: np.ndarray) -> None:
        collected[i] += self.due[i]
        self.cash[i] += self.due[i]
        self.due[i] = 0.0

    def _set_price(self, i: int, j: int, price: float) -> str | None:
        problem = self._price_problem(j, price)
        if problem is None:
            self.prices[i, j] = price
        return problem

    def _order(self, i: int, j: int, quantity: float, unit_cost: list[float], ordered: np.ndarray) -> str | None:
        cost = quantity * unit_cost[j]  # Python floats: a huge quantity gives inf, no warning
        problem = self._order_problem(quantity, cost, self.cash[i])
        if problem is not None:
            return problem
        self.cash[i] -= cost
        ordered[i, j] += quantity
        lead = self._lead_days[j]
        if lead == 0:
            self.inventory[i, j] += quantity
        else:
            self.pipeline[i, j, lead - 1] += quantity
        return None

    def _order_problem(self, quantity: float, cost: float, cash: float) -> str | None:
        """Why `quantity` units costing `cost` cannot be ordered with `cash`, or None when they can."""
        if not math.isfinite(quantity) or quantity <= 0:
            return "order quantity must be a positive number"
        if self._whole_units and quantity != int(quantity):
            return "order quantity must be a whole number of units"
        if cost > cash:
            return f"order costs {cost:.2f}, more than cash {cash:.2f}"
        return None

    def _price_problem(self, j: int, price: float) -> str | None:
        """Why product j cannot be priced at `price`, or None when it can."""
        if not math.isfinite(price) or price <= 0:
            return "price must be a positive number"
        ceiling = self._ceilings[j]
        if price > ceiling:
            return f"price {price:.2f} is above the ceiling {ceiling:.2f}"
        return None

    def _clear_market(self, day: int) -> tuple[np.ndarray, np.ndarray]:
        """Each match's customers, product by product, among its own merchants."""
        s = self.scenario
        m, p = self.prices.shape
        wanted, sold = np.zeros((m, p)), np.zeros((m, p))
        factor = demand_factor(s.demand, day)
        stochastic = s.demand.mode == "stochastic"
        utility = utilities(s.choice, self.prices, self._reference, self.reputation[:, None], self._quality)
        utility = np.where(self.bankrupt[:, None], -np.inf, utility)
        running = np.logical_or.reduce(self.playing.reshape(-1, self.seats), 1)  # matches not over
        rngs = [rng for rng, on in zip(self._rngs, running.tolist()) if on]
        by_match = (-1, self.seats, p)
        for j, product in enumerate(s.products):
            mean = product.base_demand * factor * self._event_multiplier("demand", product.id, day)
            customers = np.array([float(rng.poisson(mean)) for rng in rngs]) if stochastic else np.full(len(rngs), mean)
            stock = self.inventory.reshape(by_match)[running, :, j] if s.demand.stock_limited else None
            chose, bought, _ = allocate_markets(customers, utility.reshape(by_match)[running, :, j], s.choice.no_purchase_utility, stock, rngs if stochastic else None)
            wanted.reshape(by_match)[running, :, j], sold.reshape(by_match)[running, :, j] = chose, bought
        return wanted, sold

    def _update_reputation(self, wanted: np.ndarray, sold: np.ndarray, advertising: np.ndarray) -> None:
        r = self.scenario.reputation
        demand, served = _sum(wanted, 1), _sum(sold, 1)
        fill_rate = np.divide(served, demand, out=np.ones(len(served)), where=demand > 0)
        updated = (1 - r.memory) * fill_rate + r.memory * self.reputation
        if advertising.any():  # no spend adds a boost of exactly zero, so it is skipped
            updated += r.advertising_gain * (1.0 - np.exp(-advertising / r.advertising_scale))
        updated = np.minimum(np.maximum(updated, r.minimum), r.maximum)  # np.clip, without its Python wrapper
        self.reputation = np.where(self.bankrupt, self.reputation, updated)

    def _event_multiplier(self, kind: str, product: str, day: int) -> float:
        factor = 1.0
        for event in self.scenario.events:
            if event.kind == kind and event.start_day <= day <= event.end_day and event.product in (None, product):
                factor *= event.multiplier
        return factor

    def _unit_cost_today(self, day: int) -> np.ndarray:
        if not self.scenario.events:
            return self._unit_cost0
        return np.array([p.unit_cost * self._event_multiplier("cost", p.id, day) for p in self.scenario.products])

    def net_worth(self, unit_cost: np.ndarray | None = None) -> np.ndarray:
        """cash + (stock in hand and in transit) at unit cost + receivables."""
        cost = self._unit_cost_today(self.day) if unit_cost is None else unit_cost
        goods = _sum((self.inventory + _sum(self.pipeline, 2)) * cost, 1)
        return self.cash + goods + self.due + _sum(self.credit, 1)

    # --- observations ---------------------------------------------------------------

    def _observations(self, agents: list[str] | None = None) -> dict[str, Any]:
        """Each merchant's view of the new day. Arrays become Python lists once, here, and
        the public board is shared by every observation: this runs for every merchant-day."""
        agents = self.agents if agents is None else agents
        if self.numeric:
            return {a: self._numeric(a) for a in agents}
        s, day, ids = self.scenario, min(self.day, self.days), self._product_ids
        vis = s.visibility
        prices, reputation, bankrupt = self.prices.tolist(), self.reputation.tolist(), self.bankrupt.tolist()
        hidden = repeat(None)
        board = list(
            map(
                PublicMerchant,
                self.possible_agents,
                map(dict, map(zip, repeat(ids), prices)) if vis.rival_prices else hidden,
                reputation if vis.rival_reputation else hidden,
                map(dict, map(zip, repeat(ids), self.units_sold.tolist())) if vis.rival_sales else hidden,
                bankrupt,
            )
        )
        events = [
            EventNotice(
                name=e.name, kind=e.kind, product=e.product, start_day=e.start_day, end_day=e.end_day, multiplier=e.multiplier
            )
            for e in s.events
            if e.announced and e.start_day - e.announce_days_ahead <= day <= e.end_day
        ]
        unit_cost = self._unit_cost_today(day).tolist()
        rows = self._rows_for(agents)
        # credit[:, 0] falls due as the day starts (step 1), so it may be collected today
        due, pending = self.due + self.credit[:, 0], _sum(self.credit[:, 1:], 1)
        statics = [(pr.id, pr.lead_time, pr.holding_cost) for pr in s.products]
        products = [
            [ProductState(pid, price, cost, stock, coming, lead, holding) for (pid, lead, holding), cost, price, stock, coming in zip(statics, unit_cost, *own)]
            for own in zip(rows(prices), rows(self.inventory.tolist()), rows(_sum(self.pipeline, 2).tolist()))
        ]  # fmt: skip
        observations = map(
            Observation, agents, repeat(day), repeat(self.days), rows(self.cash.tolist()), rows(reputation),
            rows(due.tolist()), rows(pending.tolist()), products, map(self.records.get, agents), repeat(board), repeat(events),
            repeat(s.finance.fixed_daily_cost),
        )  # fmt: skip
        return dict(zip(agents, observations))

    def positions(self) -> Positions:
        """Every seat's day in plain numbers (rows indexed like possible_agents): what its
        Observation says of its own books and of the cheapest rival price, from the arrays
        directly (no Observation)."""
        day = min(self.day, self.days)
        return Positions(
            day, self.scenario.finance.fixed_daily_cost, self._unit_cost_today(day), self.cash.copy(),
            self.due + self.credit[:, 0],  # credit[:, 0] falls due as the day starts
            self.prices.copy(), self.inventory.copy(), _sum(self.pipeline, 2), self._cheapest_rivals(),
        )  # fmt: skip

    def _cheapest_rivals(self) -> np.ndarray:
        """Per merchant and product, the lowest price posted by another merchant of its match
        that is not bankrupt; NaN where there is none or rivals' prices are hidden."""
        m, p = self.prices.shape
        n = self.seats
        if not self.scenario.visibility.rival_prices or n < 2:
            return np.full((m, p), math.nan)
        posted = np.where(self.bankrupt[:, None], np.inf, self.prices).reshape(-1, n, p)  # [match, seat, product]
        two = np.argsort(posted, axis=1, kind="stable")[:, :2]  # each match's cheapest two merchants, per product
        lowest, second = np.take_along_axis(posted, two[:, :1], 1), np.take_along_axis(posted, two[:, 1:], 1)
        cheapest = np.where(np.arange(n)[None, :, None] == two[:, :1], second, lowest).reshape(m, p)
        cheapest[cheapest == np.inf] = math.nan  # a product with at most one merchant still selling
        return cheapest

    def _numeric(self, agent: str) -> dict[str, np.ndarray]:
        i = self._index[agent]
        f32 = np.float32
        return {
            "day": np.array([min(self.day, self.days)], f32),
            "cash": np.array([self.cash[i]], f32),
            "reputation": np.array([self.reputation[i]], f32),
            "inventory": self.inventory[i].astype(f32),
            "in_transit": _sum(self.pipeline[i], 1).astype(f32),
            "unit_cost": self._unit_cost_today(min(self.day, self.days)).astype(f32),
            "prices": self.prices.astype(f32),
        }


_sum = np.add.reduce  # ndarray.sum(axis=k) without its Python wrapper: a dozen of these run every day


def _shift_left(buffer: np.ndarray) -> None:
    """Move a ring of future days one day closer, in place: [.., k] <- [.., k+1]."""
    buffer[..., :-1] = buffer[..., 1:]
    buffer[..., -1] = 0.0


def _same(values: list) -> list:
    return values


def _plain_operations(rows: np.ndarray, collect: np.ndarray, prices: np.ndarray, posted: np.ndarray, quantities: np.ndarray, ordered: np.ndarray) -> Operations:
    """The applied operations of plain decisions (each merchant's collect, then its prices,
    then its orders, in product order) as columns, rows numbered like the market's."""
    m, p = prices.shape
    merchant, product = np.divmod(np.arange(m * p), p)
    collecting = np.flatnonzero(collect)
    priced, bought = product[posted.ravel()], product[ordered.ravel()]
    who = np.concatenate([collecting, merchant[posted.ravel()], merchant[ordered.ravel()]])
    kind = np.repeat(np.array([KIND_INDEX["collect"], KIND_INDEX["set_price"], KIND_INDEX["order"]], dtype=np.int8), [len(collecting), len(priced), len(bought)])
    item = np.concatenate([np.full(len(collecting), -1), priced, bought])
    value = np.concatenate([np.full(len(collecting), math.nan), prices[posted], quantities[ordered]])
    place = np.concatenate([np.zeros(len(collecting), dtype=np.int64), 1 + priced, 1 + p + bought])
    order = np.lexsort((place, who))  # by merchant, then in the order applied
    return Operations(rows[who[order]], kind[order], item[order].astype(np.int16), value[order])


def _as_dict(operation: Any) -> dict:
    """`operation.model_dump()`, without the serializer's cost (this runs for every applied
    operation): an operation's fields are plain strings and floats, so a copy of its
    `__dict__` is the same dict."""
    return dict(operation.__dict__)
