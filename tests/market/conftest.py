"""Shared pieces of the market tests: the shipped scenarios, the day-record checker, a match
runner that checks every record it sees, and a generator of random (often invalid) decisions.

Everything is handed to tests as fixtures rather than imported, so this conftest never clashes
with another test folder's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scenario_params import SCENARIO_FILES

from market.env import MarketEnv
from market.scenario import PRICE_CEILING_FACTOR, Scenario, load_scenario
from market.types import MESSAGE_INDEX, DayRecord, Decision, Observation, Rejection

TOLERANCE = 1e-6  # relative


def state_of(observation, product_id: str):
    """The observing merchant's ProductState of `product_id`."""
    return next(state for state in observation.products if state.product == product_id)


def vary(scenario: Scenario, **changes: Any) -> Scenario:
    """A validated copy of `scenario`: changes are top-level fields, or "section.field", or
    "products.field" (applied to every product)."""
    data = scenario.model_dump()
    for key, value in changes.items():
        if "." not in key:
            data[key] = value
            continue
        section, field = key.split(".", 1)
        targets = data["products"] if section == "products" else [data[section]]
        for target in targets:
            target[field] = value
    return Scenario.model_validate(data)


# --- the checker -----------------------------------------------------------------------------


def _close(a: float, b: float, *scale: float) -> bool:
    size = max([1.0, abs(a), abs(b)] + [abs(x) for x in scale])
    return abs(a - b) <= TOLERANCE * size


def expected_unit_cost(scenario: Scenario, product_id: str, day: int) -> float:
    """The product's unit cost on `day`: base cost times every cost event running that day."""
    product = next(p for p in scenario.products if p.id == product_id)
    cost = product.unit_cost
    for event in scenario.events:
        if event.kind != "cost" or event.product not in (None, product_id) or day < event.start_day:
            continue
        if event.shape == "trend":  # a straight line from 1 to the multiplier, then level
            reached = min(1.0, (day - event.start_day) / max(event.end_day - event.start_day, 1))
            cost *= 1.0 + reached * (event.multiplier - 1.0)
        elif day <= event.end_day:
            cost *= event.multiplier
    return cost


def _given_items(decision: Any) -> list[Any] | None:
    """The operations a decision lists, or None when it is not a well-formed list of them."""
    if isinstance(decision, Decision):
        return list(decision.operations)
    if isinstance(decision, (str, bytes)):
        try:
            decision = json.loads(decision)
        except ValueError:
            return None
    if isinstance(decision, dict):
        decision = decision.get("operations")
    return decision if isinstance(decision, list) else None


def _op_name(item: Any) -> Any:
    if isinstance(item, dict):
        return item.get("op")
    return getattr(item, "op", None)


_NOT_GIVEN = object()


def check_day(
    prev_record: DayRecord | None,
    record: DayRecord,
    scenario: Scenario,
    decision: Any = _NOT_GIVEN,
    reward: float | None = None,
) -> None:
    """Assert every identity one merchant's day record must satisfy.

    prev_record is the same merchant's record of the day before (None on day 1). When the
    decision the merchant gave is passed, the operations and rejections are checked against it;
    when the env's reward is passed, it must be the day's change in net worth.
    """
    s, r = scenario, record
    stochastic = s.demand.mode == "stochastic"
    products = {p.id: p for p in s.products}
    assert set(r.units_sold) == set(products), r.units_sold
    assert r.day == (prev_record.day + 1 if prev_record else 1)

    # --- the rejections and the applied operations (a message's rejection is of no operation)
    for rejection in r.rejections:
        assert isinstance(rejection, Rejection)
        assert isinstance(rejection.reason, str) and rejection.reason.strip(), rejection
        assert rejection.index >= -1 or rejection.index == MESSAGE_INDEX
    of_operations = [x for x in r.rejections if x.index != MESSAGE_INDEX]
    indices = [x.index for x in of_operations]
    assert len(indices) == len(set(indices)), f"two rejections share a position: {r.rejections}"
    if -1 in indices:
        assert len(r.rejections) == 1 and not r.operations, "a rejected decision applies nothing"
    kinds = {"set_price", "order", "advertise", "collect", "wait"} | (
        {"promote"} if s.promotions is not None else set()
    )
    for op in r.operations:
        assert isinstance(op, dict) and op.get("op") in kinds, op
    if decision is not _NOT_GIVEN:
        is_arrays = isinstance(decision, dict) and "price" in decision and "operations" not in decision
        items = _given_items(decision)
        if decision is None:
            assert not r.operations and not r.rejections
        elif items is not None:
            assert len(r.operations) + len(of_operations) == len(items), (
                decision,
                r.operations,
                r.rejections,
            )
            assert all(0 <= i < len(items) for i in indices), (indices, len(items))
            for rejection in of_operations:
                if isinstance(rejection.operation, dict):
                    assert rejection.operation.get("op") == _op_name(items[rejection.index]), (
                        "rejection names the wrong position"
                    )
        elif not is_arrays:
            assert not r.operations and len(r.rejections) == 1 and r.rejections[0].index == -1, (
                decision,
                r.rejections,
            )
    ordered_by_ops = dict.fromkeys(products, 0.0)
    # units of the day's orders without lead time: at most all of them in stock at once, at
    # least those from suppliers that are always on time
    instant_most, instant_least = dict.fromkeys(products, 0.0), dict.fromkeys(products, 0.0)
    price_by_ops: dict[str, float] = {}
    advertised = cost_of_orders = savings = 0.0
    for op in r.operations:
        if op["op"] == "order":
            pid, units = op["product"], op["quantity"]
            ordered_by_ops[pid] += units
            product = products[pid]
            supplier = next((x for x in product.suppliers if x.name == op.get("supplier")), None)
            assert supplier is not None or "supplier" not in op, op
            factor = expected_unit_cost(s, pid, r.day) / product.unit_cost  # the cost events'
            paid = r.unit_cost[pid] if supplier is None else supplier.unit_cost * factor
            cost_of_orders += units * paid
            savings += units * (r.unit_cost[pid] - paid)
            if (product.lead_time if supplier is None else supplier.lead_time) == 0:
                instant_most[pid] += units
                instant_least[pid] += units if supplier is None or supplier.reliability == 1 else 0.0
        elif op["op"] == "set_price":
            price_by_ops[op["product"]] = op["price"]
        elif op["op"] == "advertise":
            advertised += op["amount"]
    assert _close(r.advertising, advertised)
    assert r.advertising >= 0 and r.collected >= 0

    assert _close(r.purchase_savings, savings, cost_of_orders)

    # --- per product: prices, costs, stock and flows
    goods = refunds = 0.0
    made_to_order = 0.0
    holding = 0.0
    revenue = 0.0
    for pid, product in products.items():
        previous_price = prev_record.prices[pid] if prev_record else product.start_price
        price = r.prices[pid]
        assert price == price_by_ops.get(pid, previous_price), (pid, price, price_by_ops, previous_price)
        assert 0 < price <= product.reference_price * PRICE_CEILING_FACTOR
        unit_cost = r.unit_cost[pid]
        assert _close(unit_cost, expected_unit_cost(s, pid, r.day))

        sold, wanted, lost = r.units_sold[pid], r.first_choice[pid], r.lost_sales[pid]
        ordered, arrived = r.ordered[pid], r.arrived[pid]
        inventory, in_transit = r.inventory[pid], r.in_transit[pid]
        spoiled, late, returned, restocked = r.spoiled[pid], r.late[pid], r.returned[pid], r.restocked[pid]
        assert 0 <= restocked <= returned <= sold + TOLERANCE * max(1.0, sold), (
            pid,
            restocked,
            returned,
            sold,
        )
        assert returned == 0 or any(g.return_rate > 0 for g in s.segments), (pid, returned)
        assert spoiled >= 0 and (spoiled == 0 or product.shelf_life is not None), f"{pid} spoiled {spoiled}"
        unreliable = any(x.reliability < 1 for x in product.suppliers)
        assert late >= 0 and (late == 0 or unreliable), f"{pid} late {late}"
        assert _close(ordered, ordered_by_ops[pid])
        assert min(sold, wanted, ordered, arrived, in_transit) >= 0, r
        assert inventory >= 0, f"negative inventory {inventory} of {pid}"
        assert sold <= wanted + TOLERANCE * max(1.0, wanted)
        assert _close(lost, wanted - sold, wanted)
        if stochastic:
            for name, value in (
                ("sold", sold),
                ("first_choice", wanted),
                ("ordered", ordered),
                ("arrived", arrived),
            ):
                assert float(value).is_integer(), f"{name} of {pid} is {value}, not a whole number"

        stock_start = prev_record.inventory[pid] if prev_record else product.initial_stock
        transit_start = prev_record.in_transit[pid] if prev_record else 0.0
        instant = instant_most[pid]
        if instant_least[pid] < instant_most[pid]:  # as many of them as came on time
            instant = inventory - stock_start - arrived + sold + spoiled - restocked
            assert instant_least[pid] - TOLERANCE <= instant <= instant_most[pid] + TOLERANCE
        available = stock_start + arrived + instant
        if product.lead_time == 0 and not product.suppliers:
            assert arrived == 0 and in_transit == 0
        assert _close(in_transit, transit_start + (ordered - instant) - arrived, transit_start, ordered)
        if s.demand.stock_limited:
            assert sold <= available + TOLERANCE * max(1.0, available), (
                f"sold {sold} of {pid} with {available} available"
            )
            assert _close(inventory, available - sold - spoiled + restocked, available)
        else:
            assert _close(inventory, available, available)
            made_to_order += sold * unit_cost

        goods += (inventory + in_transit) * unit_cost
        holding += inventory * product.holding_cost
        discount = r.discount[pid]  # of a promotion running: customers paid less
        allowed = s.promotions.max_discount if s.promotions is not None else 0.0
        assert 0 <= discount <= allowed, (pid, discount)
        revenue += sold * price * (1 - discount)
        refunds += returned * price * (1 - discount)

    # --- money
    cash_start = prev_record.cash_end if prev_record else s.finance.initial_cash
    assert r.cash_start == cash_start
    assert _close(r.revenue, revenue)
    assert _close(r.refunds, refunds, r.revenue)
    # a sale returned is neither paid for nor owed: credit is a share of the sales kept
    assert _close(r.revenue_cash, r.revenue - (r.revenue - r.refunds) * s.finance.credit_share, r.revenue)
    assert _close(r.purchases, cost_of_orders + made_to_order)
    assert _close(r.holding, holding)
    assert r.fixed == s.finance.fixed_daily_cost
    flows = (
        r.cash_start,
        r.revenue_cash,
        r.collected,
        r.purchases,
        r.refunds,
        r.advertising,
        r.holding,
        r.fixed,
    )
    assert _close(
        r.cash_end - r.cash_start,
        r.revenue_cash + r.collected - r.purchases - r.refunds - r.advertising - r.holding - r.fixed,
        *flows,
    ), f"cash identity broken on day {r.day}: {r}"
    on_credit = r.revenue - r.revenue_cash
    assert _close(r.bad_debt, on_credit * s.finance.bad_debt_share, r.revenue)
    receivables_start = prev_record.receivables if prev_record else 0.0
    assert r.receivables >= -TOLERANCE * max(1.0, receivables_start)
    assert _close(
        r.receivables,
        receivables_start + on_credit - r.bad_debt - r.collected,
        receivables_start,
        r.revenue,
    )
    assert _close(r.net_worth, r.cash_end + goods + r.receivables, r.cash_end, goods, r.receivables)
    if reward is not None:
        stock_start = {
            pid: (prev_record.inventory[pid] + prev_record.in_transit[pid])
            if prev_record
            else p.initial_stock
            for pid, p in products.items()
        }
        worth_start = (
            cash_start + receivables_start + sum(stock_start[pid] * r.unit_cost[pid] for pid in products)
        )
        assert _close(reward, r.net_worth - worth_start, r.net_worth, worth_start)

    # --- reputation and bankruptcy
    assert s.reputation.minimum - 1e-12 <= r.reputation <= s.reputation.maximum + 1e-12
    assert r.bankrupt == (r.cash_end < 0)


# --- playing matches -------------------------------------------------------------------------

Policy = Callable[[dict[str, Any]], dict[str, Any]]


def run_match(
    env: MarketEnv, policy: Policy, seed: int | None = None, days: int | None = None, check: bool = True
) -> list[dict[str, DayRecord]]:
    """Reset `env` and play it to the end (or for `days` days); policy(observations) -> actions.

    Returns, per day, {agent: DayRecord}. With check, every record goes through check_day,
    and terminations, truncations, rewards and env.agents are checked against the records.
    """
    observations, infos = env.reset(seed=seed)
    assert set(observations) == set(env.possible_agents) == set(env.agents)
    previous: dict[str, DayRecord] = {}
    history: list[dict[str, DayRecord]] = []
    while env.agents and (days is None or len(history) < days):
        playing = list(env.agents)
        actions = policy(observations)
        observations, rewards, terminations, truncations, infos = env.step(actions)
        records = {agent: infos[agent]["record"] for agent in playing}
        if check:
            assert set(infos) == set(rewards) == set(terminations) == set(truncations) == set(playing)
            last = records[playing[0]].day == env.days
            for agent, record in records.items():
                check_day(
                    previous.get(agent),
                    record,
                    env.scenario,
                    decision=actions.get(agent),
                    reward=rewards[agent],
                )
                assert terminations[agent] == record.bankrupt
                assert truncations[agent] == last
            survivors = [] if last else [a for a in playing if not terminations[a]]
            assert env.agents == survivors
        previous.update(records)
        history.append(records)
    return history


# --- random decisions ------------------------------------------------------------------------

MALFORMED_OPERATIONS: list[Any] = [
    {"op": "fly"},
    {"op": "order"},
    {"op": "set_price", "product": "x", "price": "cheap"},
    {"op": "wait", "extra": 1},
    {"operation": "wait"},
    7,
    None,
    "collect",
    [],
]
GARBAGE_DECISIONS: list[Any] = [
    "nonsense",
    "",
    b"\xff",
    {"operations": 3},
    {"operations": {"op": "wait"}},
    {"foo": 1},
    {"price": 3},
    {"price": [1.0], "order": "lots"},
    [{"op": "fly"}],
    None,
    42,
    3.5,
    ("wait",),
]


def random_operation(rng: np.random.Generator, obs: Observation, scenario: Scenario) -> Any:
    """One operation: usually plausible, often invalid (negative, too large, fractional,
    unknown product), sometimes malformed."""
    product = scenario.products[int(rng.integers(len(scenario.products)))]
    pid = product.id if rng.random() > 0.05 else "unicorn"
    state = state_of(obs, product.id)
    cash = max(obs.cash, 0.0)
    kind = rng.choice(
        ["set_price", "order", "advertise", "collect", "wait", "malformed"],
        p=[0.3, 0.3, 0.1, 0.12, 0.08, 0.1],
    )
    if scenario.promotions is not None and rng.random() < 0.1:
        allowed = scenario.promotions
        discount = [round(float(rng.uniform(0.05, allowed.max_discount)), 2), allowed.max_discount + 0.1, 0.0]
        days = [int(rng.integers(1, allowed.max_days + 1)), allowed.max_days + 1, 0]
        pick = [int(rng.choice(3, p=[0.8, 0.1, 0.1])) for _ in range(2)]
        return {"op": "promote", "product": pid, "discount": discount[pick[0]], "days": days[pick[1]]}
    if kind == "set_price":
        plausible = round(float(product.reference_price * rng.uniform(0.3, 3.0)), 2)
        options = [plausible] * 8 + [
            -1.0,
            0.0,
            product.reference_price * (PRICE_CEILING_FACTOR + 1),
            float("nan"),
            1e300,
        ]
        return {"op": "set_price", "product": pid, "price": options[int(rng.integers(len(options)))]}
    if kind == "order":
        affordable = int(cash / state.unit_cost)
        options = [
            int(rng.integers(1, max(2, affordable // 4 + 1))),
            int(rng.integers(1, 20)),
            affordable,  # all the cash
            affordable + 1,  # a little too much
            10 * affordable + 100,  # far too much
            -5,
            0,
            2.5,  # fractional
            float(rng.uniform(0.1, 30)),
            1e308,
            float("inf"),
        ]
        weights = np.array([6, 6, 1, 1, 1, 1, 1, 1, 2, 0.5, 0.5])
        quantity = options[int(rng.choice(len(options), p=weights / weights.sum()))]
        order = {"op": "order", "product": pid, "quantity": quantity}
        if product.suppliers and rng.random() < 0.5:  # a listed supplier, now and then one it does not list
            names = [x.name for x in product.suppliers]
            order["supplier"] = names[int(rng.integers(len(names)))] if rng.random() < 0.9 else "nobody"
        return order
    if kind == "advertise":
        options = [round(float(rng.uniform(0, 300)), 2), -10.0, cash * 2 + 1, float("nan"), 0.0]
        return {
            "op": "advertise",
            "amount": options[int(rng.choice(len(options), p=[0.6, 0.1, 0.1, 0.1, 0.1]))],
        }
    if kind in ("collect", "wait"):
        return {"op": kind}
    return MALFORMED_OPERATIONS[int(rng.integers(len(MALFORMED_OPERATIONS)))]


def random_decision(rng: np.random.Generator, obs: Observation, scenario: Scenario) -> Any:
    """A random decision for one merchant, in any of the shapes merchants send."""
    roll = rng.random()
    if roll < 0.06:
        return GARBAGE_DECISIONS[int(rng.integers(len(GARBAGE_DECISIONS)))]
    operations = [random_operation(rng, obs, scenario) for _ in range(int(rng.integers(0, 7)))]
    if roll < 0.10:
        return {"operations": operations, "note": "plan"}
    if roll < 0.13:
        return json.dumps([op for op in operations if _json_safe(op)])
    if roll < 0.16:
        return Decision()
    return operations


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def random_policy(
    scenario: Scenario, action_seed: int, repertoire: list[Any] | None = None, repertoire_share: float = 0.3
) -> Policy:
    """A policy giving each merchant each day a random decision (or one from `repertoire`)."""
    rng = np.random.default_rng(action_seed)

    def policy(observations: dict[str, Any]) -> dict[str, Any]:
        actions = {}
        for agent, obs in observations.items():
            if repertoire and rng.random() < repertoire_share:
                actions[agent] = repertoire[int(rng.integers(len(repertoire)))]
            else:
                actions[agent] = random_decision(rng, obs, scenario)
        return actions

    return policy


def constant_policy(decisions: dict[str, Any] | Callable[[str, Observation], Any]) -> Policy:
    """Every merchant gives the same decision each day (a dict by merchant, or a function)."""

    def policy(observations: dict[str, Any]) -> dict[str, Any]:
        if callable(decisions):
            return {agent: decisions(agent, obs) for agent, obs in observations.items()}
        return {agent: decisions.get(agent) for agent in observations}

    return policy


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="session", params=SCENARIO_FILES, ids=[p.stem for p in SCENARIO_FILES])
def scenario(request: pytest.FixtureRequest) -> Scenario:
    """Each shipped scenario (market/scenarios/*.yaml) in turn."""
    return load_scenario(request.param)


class Market:
    """The helpers above, as one fixture: market.check_day(...), market.run(...), ..."""

    load = staticmethod(load_scenario)
    vary = staticmethod(vary)
    check_day = staticmethod(check_day)
    run = staticmethod(run_match)
    random_decision = staticmethod(random_decision)
    random_policy = staticmethod(random_policy)
    constant_policy = staticmethod(constant_policy)
    expected_unit_cost = staticmethod(expected_unit_cost)
    garbage_decisions = GARBAGE_DECISIONS
    malformed_operations = MALFORMED_OPERATIONS


@pytest.fixture(scope="session")
def market() -> type[Market]:
    return Market


@pytest.fixture(scope="session", name="check_day")
def check_day_fixture():
    return check_day
