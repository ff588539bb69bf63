"""Behaviour of the rule-based merchants in contestants/baselines.py and talking.py."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from contestants.base import ContestantConfigError
from contestants.baselines import RuleMerchant
from contestants.kinds import contestant_class, create, kinds, validate_params
from contestants.talking import Friendly
from market.engine import Market
from market.equilibrium import equilibria
from market.scenario import Choice, Competitor, Demand, Product, Scenario
from market.types import (
    Collect,
    EventNotice,
    Observation,
    Order,
    PublicCompetitor,
    SetPrice,
    _Op,
    parse_decision,
)
from tests.doubles import CHAOS, LATENCY

BASELINE_KINDS = sorted(
    kind
    for kind, cls in kinds().items()
    if issubclass(cls, RuleMerchant) and cls.__module__ in ("contestants.baselines", "contestants.talking")
)  # not the tests' own kinds
INSTANT_KINDS = [kind for kind in BASELINE_KINDS if not kinds()[kind].needs_actor]


def started(kind: str, scenario: Scenario, seed: int = 7, **params):
    merchant = create(kind, params)
    merchant.reset(merchant="me", scenario=scenario, seed=seed)
    return merchant


def operations_of(decision: list | dict) -> list:
    """A rule merchant answers with a list of operation models that the market takes whole
    (one that talks: a dict of them and its message)."""
    listed = decision["operations"] if isinstance(decision, dict) else decision
    assert isinstance(listed, list) and all(isinstance(op, _Op) for op in listed)
    operations, rejections, *_ = parse_decision(decision)
    assert rejections == []
    return [op for _, op in operations]


def prices_of(decision: list) -> dict[str, float]:
    return {op.product: op.price for op in operations_of(decision) if isinstance(op, SetPrice)}


def orders_of(decision: list) -> dict[str, float]:
    return {op.product: op.quantity for op in operations_of(decision) if isinstance(op, Order)}


# ---- registry and parameters ----------------------------------------------------------------


def test_all_baseline_kinds_are_registered():
    expected = {
        "fixed_price",
        "random",
        "reorder_point",
        "undercut",
        "cost_plus",
        "best_response",
        "tit_for_tat",
        "grim_trigger",
        "cartel",
        "bluffer",
        "friendly",
    }
    assert expected <= set(BASELINE_KINDS)
    assert not any(kinds()[kind].needs_actor for kind in BASELINE_KINDS)


def test_each_kind_is_registered_under_its_own_name():
    assert all(cls.kind == kind for kind, cls in kinds().items())


@pytest.mark.parametrize("kind", BASELINE_KINDS)
def test_unknown_parameter_is_a_config_error(kind):
    with pytest.raises(ContestantConfigError) as caught:
        create(kind, {"no_such_knob": 1})
    assert caught.value.field == "no_such_knob"


@pytest.mark.parametrize(
    ("kind", "params", "field"),
    [
        ("fixed_price", {"price": 0}, "price"),
        ("fixed_price", {"markup": -1}, "markup"),
        ("fixed_price", {"reorder_level": 50, "target_stock": 40}, None),
        ("fixed_price", {"markup": 0.2, "price": 12}, None),
        ("random", {"min_markup": 0.5, "max_markup": 0.1}, None),
        ("random", {"max_order": -1}, "max_order"),
        ("undercut", {"step": 0}, "step"),
        ("best_response", {"grid_points": 1}, "grid_points"),
        ("tit_for_tat", {"opening_price": 0}, "opening_price"),
        ("grim_trigger", {"tolerance": 1}, "tolerance"),
        (LATENCY, {"latency_s": -0.1}, "latency_s"),
        (CHAOS, {"fault": "explode"}, "fault"),
        (CHAOS, {"every": 0}, "every"),
    ],
)
def test_bad_parameter_values_are_config_errors(kind, params, field):
    with pytest.raises(ContestantConfigError) as caught:
        validate_params(kind, params)
    assert caught.value.field == field


def test_unknown_kind_is_a_config_error_naming_the_known_ones():
    with pytest.raises(
        ContestantConfigError, match=r"unknown contestant kind 'oracle' \(known: .*fixed_price.*llm"
    ) as caught:
        create("oracle", {})
    assert caught.value.field == "kind"


def test_a_kind_is_imported_when_it_is_first_asked_for():
    """Only the kinds a run plays are imported (the language model's SDKs are heavy)."""
    check = (
        "import sys; from contestants.kinds import contestant_class; "
        "assert 'contestants.baselines' not in sys.modules; contestant_class('fixed_price'); "
        "assert 'contestants.baselines' in sys.modules and 'contestants.llm.merchant' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", check], check=True, cwd=Path(__file__).resolve().parents[2])


RIVAL_CUT = 18.0  # what the rival of test_every_kind_decides_with_default_params posts on day 1


def _default_rule(
    kind: str, day: int, seen: Observation, scenario: Scenario
) -> tuple[dict[str, float], dict[str, float], str]:
    """What `kind`'s rule, as its docstring states it, does with its default params on `day`
    of test_every_kind_decides_with_default_params, seeing `seen`: its target prices, the
    units it orders and what it says. Worked out from the scenario's numbers (widget: unit
    cost 10, reference and start price 20, lead time 2, none in stock; the rival posts 20 on
    day 1, then RIVAL_CUT), not by the kind's code."""
    rival = seen.market[1].prices["widget"]
    assert rival == (20.0 if day == 1 else RIVAL_CUT)
    # restocking (s, S) = (15, 40): nothing in stock or on its way on day 1; 40 on its way on day 2
    restock = {"widget": 40.0} if day == 1 else {}
    solved = equilibria(scenario, 2)["widget"]
    monopoly, nash = solved.monopoly.prices[0], solved.nash.prices[0]
    undercut_by_the_rival = day == 2 and monopoly * (1 - 0.01) > RIVAL_CUT  # tolerance 0.01
    match kind:
        case "fixed_price":
            return {"widget": 10.0 * 1.5}, restock, ""
        case "reorder_point":
            return {"widget": 20.0}, restock, ""
        case "cost_plus":
            return {"widget": 10.0 * 1.3}, restock, ""
        case "undercut":
            return {"widget": rival * 0.98}, restock, ""
        case "tit_for_tat":  # opens at the start price, then copies
            return {"widget": 20.0 if day == 1 else RIVAL_CUT}, restock, ""
        case "grim_trigger" | "cartel":
            price = nash if undercut_by_the_rival else monopoly
            if kind == "grim_trigger":
                said = ""
            elif undercut_by_the_rival:
                said = f"You undercut me: I price widget at {nash:.2f} for good."
            else:
                said = (
                    f"I will price widget at {monopoly:.2f} as long as you do not undercut it; "
                    f"if you do, I will price widget at {nash:.2f} for good."
                )
            return {"widget": price}, restock, said
        case "friendly":  # fixed_price's, and its greeting of the day
            return {"widget": 10.0 * 1.5}, restock, Friendly.GREETINGS[day - 1]
        case "bluffer":  # Nash, and a promise of monopoly with its cost of 10 said as 12.50
            said = f"I will price widget at {monopoly:.2f} from tomorrow. My unit cost of widget is 12.50."
            return {"widget": nash}, restock, said
        case "best_response":  # the best of 60 prices from cost to 3 x reference, stock for 2 + 3 days
            grid = np.linspace(10.0, 60.0, 60)
            profit = _expected_profit(scenario, grid, [(rival, seen.market[1].reputation)], seen.reputation)
            best = int(np.argmax(profit))
            customers = 50.0 * profit[best] / (grid[best] - 10.0)
            units = math.ceil(customers * (2 + 3)) - seen.products[0].in_transit
            return {"widget": grid[best]}, ({"widget": units} if units > 0 else {}), ""
    raise AssertionError(f"no rule written down for {kind}")


@pytest.mark.parametrize("kind", BASELINE_KINDS)
def test_every_kind_decides_with_default_params(kind, scenario):
    """Each kind with its default params plays two days against a rival that cuts its price
    on day 1, in a market where merchants talk: the market applies its decisions whole (no
    rejection, its message delivered), and they are what the kind's rule says."""
    merchant = started(kind, scenario)
    market = Market(scenario, [["me", "r1"]], talk=True)
    market.reset([3])
    cut = {"operations": [{"op": "set_price", "product": "widget", "price": RIVAL_CUT}]}
    posted: list[float] = []
    for day, rival in ((1, cut), (2, None)):
        seen = market.observations(market.view(), [0])[0]
        decision = merchant.decide(seen)
        market.advance(decisions={0: decision, 1: rival})
        record = market.logs[0].day(day)[0]
        assert record.merchant == "me" and record.rejections == []
        assert record.operations == [op.model_dump(exclude_none=True) for op in operations_of(decision)]
        said = decision.get("message", "") if isinstance(decision, dict) else ""
        assert record.message == said
        if kind == "random":  # a uniform price from cost to twice cost, 0 to 20 whole units
            assert 10.0 <= prices_of(decision)["widget"] <= 20.0
            assert orders_of(decision).get("widget", 0.0) in range(21)
            posted.append(prices_of(decision)["widget"])
            continue
        prices, orders, message = _default_rule(kind, day, seen, scenario)
        changed = {p: price for p, price in prices.items() if price != pytest.approx(seen.products[0].price)}
        assert prices_of(decision) == pytest.approx(changed)
        assert orders_of(decision) == orders
        assert said == message
    assert kind != "random" or posted[0] != posted[1]


# ---- pricing rules ------------------------------------------------------------------------------


def test_fixed_price_keeps_its_price_when_cost_moves(scenario, observe):
    merchant = started("fixed_price", scenario, markup=0.5)
    assert prices_of(merchant.decide(observe(scenario, price={"widget": 20.0}))) == {"widget": 15.0}
    shocked = observe(scenario, day=2, price={"widget": 15.0}, unit_cost={"widget": 14.0})
    assert prices_of(merchant.decide(shocked)) == {}  # already at 15: nothing to change
    assert prices_of(started("fixed_price", scenario, price=17.5).decide(observe(scenario))) == {
        "widget": 17.5
    }


def test_cost_plus_follows_unit_cost(scenario, observe):
    merchant = started("cost_plus", scenario, margin=0.3)
    assert prices_of(merchant.decide(observe(scenario))) == {"widget": pytest.approx(13.0)}
    shocked = observe(scenario, day=2, price={"widget": 13.0}, unit_cost={"widget": 15.0})
    assert prices_of(merchant.decide(shocked)) == {"widget": pytest.approx(19.5)}


def test_reorder_point_prices_at_reference(scenario, observe):
    merchant = started("reorder_point", scenario, price_factor=0.9)
    assert prices_of(merchant.decide(observe(scenario))) == {"widget": pytest.approx(18.0)}


def test_undercut_goes_just_below_cheapest_rival(scenario, observe):
    merchant = started("undercut", scenario, step=0.02)
    obs = observe(scenario, rivals={"r1": {"widget": 16.0}, "r2": {"widget": 14.0}, "r3": None})
    assert prices_of(merchant.decide(obs)) == {"widget": pytest.approx(13.72)}


def test_undercut_raises_to_just_below_the_cheapest_rival(scenario, observe):
    merchant = started("undercut", scenario, step=0.1)
    obs = observe(scenario, price={"widget": 11.0}, rivals={"r1": {"widget": 19.0}})
    assert prices_of(merchant.decide(obs)) == {"widget": pytest.approx(17.1)}


def test_undercut_never_goes_below_its_floor(scenario, observe):
    merchant = started("undercut", scenario, min_markup=0.05)
    obs = observe(scenario, rivals={"r1": {"widget": 10.2}}, unit_cost={"widget": 10.0})
    assert prices_of(merchant.decide(obs)) == {"widget": pytest.approx(10.5)}


def test_undercut_keeps_its_price_without_visible_rivals(scenario, observe):
    merchant = started("undercut", scenario)
    hidden = observe(scenario, rivals={"r1": None, "r2": {"widget": 5.0}}, bankrupt=("r2",))
    assert prices_of(merchant.decide(hidden)) == {}


def test_undercut_prices_each_product_against_its_own_rivals(two_products, observe):
    merchant = started("undercut", two_products, step=0.1, min_markup=0.0)
    obs = observe(two_products, rivals={"r1": {"a": 15.0, "b": 20.0}, "r2": {"a": 18.0, "b": 9.0}})
    assert prices_of(merchant.decide(obs)) == {"a": pytest.approx(13.5), "b": pytest.approx(8.1)}


def _expected_profit(
    scenario: Scenario, prices: np.ndarray, rivals: list[tuple[float, float]], reputation: float
):
    """Brute force, written independently of the merchant: (p - c) * logit share of all customers."""
    product, choice = scenario.products[0], scenario.choice

    def u(price, rep):
        return -choice.price_sensitivity * price / product.reference_price + choice.reputation_weight * rep

    rest = math.exp(choice.no_purchase_utility) + sum(math.exp(u(p, r)) for p, r in rivals)
    own = np.exp(u(prices, reputation))
    return (prices - product.unit_cost) * own / (own + rest)


def test_best_response_picks_the_profit_maximising_price(scenario, observe):
    merchant = started("best_response", scenario, grid_points=60, max_price_factor=3.0)
    obs = observe(
        scenario,
        reputation=0.7,
        rivals={"r1": {"widget": 18.0}, "r2": {"widget": 22.0}},
        rival_reputation=0.5,
    )
    chosen = prices_of(merchant.decide(obs))["widget"]

    low, high = 10.0, 60.0
    fine = np.linspace(low, high, 200_001)
    profit = _expected_profit(scenario, fine, [(18.0, 0.5), (22.0, 0.5)], 0.7)
    best = fine[np.argmax(profit)]
    step = (high - low) / 59
    assert abs(chosen - best) <= step
    coarse = np.linspace(low, high, 60)
    chosen_profit = _expected_profit(scenario, np.array([chosen]), [(18.0, 0.5), (22.0, 0.5)], 0.7)[0]
    assert chosen_profit >= _expected_profit(scenario, coarse, [(18.0, 0.5), (22.0, 0.5)], 0.7).max() - 1e-9


def test_best_response_raises_its_price_when_rivals_do(scenario, observe):
    merchant = started("best_response", scenario, grid_points=400)
    cheap = prices_of(merchant.decide(observe(scenario, rivals={"r1": {"widget": 12.0}})))["widget"]
    dear = prices_of(merchant.decide(observe(scenario, day=2, rivals={"r1": {"widget": 30.0}})))["widget"]
    assert dear > cheap


def test_best_response_treats_a_hidden_price_as_the_reference_price(observe):
    """The widget's reference price (20), its start price (26), the merchant's own (23) and its
    cost (10) all differ, and the grid is fine enough that a rival at any of them, or no rival
    at all, calls for another best price: only a hidden price read as the reference price
    gives the answer to a rival shown at 20."""
    widget = Product(
        id="widget", unit_cost=10.0, reference_price=20.0, initial_price=26.0, base_demand=50.0, lead_time=2
    )
    scenario = Scenario(name="test", products=(widget,))

    def best_price(rivals: dict[str, dict[str, float] | None]) -> float:
        merchant = started("best_response", scenario, grid_points=4001)
        return prices_of(merchant.decide(observe(scenario, price={"widget": 23.0}, rivals=rivals)))["widget"]

    hidden = best_price({"r1": None})
    assert hidden == best_price({"r1": {"widget": 20.0}})
    for other in (26.0, 23.0, 10.0):
        assert best_price({"r1": {"widget": other}}) != hidden
    assert best_price({}) != hidden


def test_best_response_stocks_for_expected_demand_over_lead_time(scenario, observe):
    merchant = started("best_response", scenario, cover_days=3)
    decision = merchant.decide(observe(scenario))
    target = orders_of(decision)["widget"]
    surge = [EventNotice(name="fair", kind="demand", product=None, start_day=1, end_day=3, multiplier=2.0)]
    bigger = orders_of(
        started("best_response", scenario, cover_days=3).decide(observe(scenario, events=surge))
    )["widget"]
    # lead time 2 + 3 cover days of 50 customers a day at a share strictly between 0 and 1
    assert 0 < target < 50 * 5
    assert bigger == pytest.approx(2 * target, abs=1)


# ---- tit for tat and grim trigger (in the market: tests/tournaments/test_repeated_price_game.py) -----


def test_tit_for_tat_copies_yesterdays_cheapest_visible_rival_per_product(two_products, observe):
    rivals = {
        "r1": {"a": 15.0, "b": 20.0},
        "r2": {"a": 18.0, "b": 9.0},
        "r3": {"a": 5.0, "b": 5.0},
        "r4": None,
    }
    obs = observe(two_products, day=2, rivals=rivals, bankrupt=("r3",))
    assert prices_of(started("tit_for_tat", two_products).decide(obs)) == {"a": 15.0, "b": 9.0}


def test_tit_for_tat_posts_its_opening_price_on_day_1_and_when_rivals_hide_their_prices(
    two_products, observe
):
    visible = {"r1": {"a": 15.0, "b": 9.0}}
    assert (
        prices_of(started("tit_for_tat", two_products).decide(observe(two_products, rivals=visible))) == {}
    )  # the start prices: no change
    assert prices_of(
        started("tit_for_tat", two_products, opening_price=30.0).decide(observe(two_products, rivals=visible))
    ) == {"a": 30.0, "b": 30.0}
    hidden = observe(two_products, day=5, price={"a": 15.0, "b": 9.0}, rivals={"r1": None})
    assert prices_of(started("tit_for_tat", two_products, opening_price=30.0).decide(hidden)) == {
        "a": 30.0,
        "b": 30.0,
    }


def test_grim_trigger_remembers_a_defection_per_product_until_it_is_reset(two_products, observe):
    """Asked alone, from its Observations: a cut in one product sends that product to its
    Nash price for good, the other stays at the monopoly price; a new match forgets."""
    solved = equilibria(two_products, 2)
    monopoly = {pid: b.monopoly.prices for pid, b in solved.items()}
    nash = {pid: b.nash.prices[0] for pid, b in solved.items()}
    merchant = started("grim_trigger", two_products, tolerance=0.01)

    def day(d: int, a: float, b: float) -> dict[str, float]:
        return prices_of(merchant.decide(observe(two_products, day=d, rivals={"r1": {"a": a, "b": b}})))

    cut_a = monopoly["a"][1] * 0.98
    assert day(1, cut_a, 1.0) == {
        "a": monopoly["a"][0],
        "b": monopoly["b"][0],
    }  # day 1's board holds start prices: ignored
    assert day(2, monopoly["a"][1], monopoly["b"][1] * 0.995) == {
        "a": monopoly["a"][0],
        "b": monopoly["b"][0],
    }  # within tolerance
    assert day(3, cut_a, monopoly["b"][1]) == {"a": nash["a"], "b": monopoly["b"][0]}
    assert day(4, monopoly["a"][1], monopoly["b"][1]) == {
        "a": nash["a"],
        "b": monopoly["b"][0],
    }  # the rival came back: too late
    merchant.reset(merchant="me", scenario=two_products, seed=7)
    assert day(2, monopoly["a"][1], monopoly["b"][1]) == {"a": monopoly["a"][0], "b": monopoly["b"][0]}


def test_grim_trigger_refuses_a_scenario_without_price_equilibria(scenario):
    blind = scenario.model_copy(update={"choice": Choice(price_sensitivity=0.0)})
    with pytest.raises(
        ContestantConfigError,
        match=r"grim_trigger needs the scenario's Nash and monopoly prices; .*price_sensitivity 0",
    ):
        contestant_class("grim_trigger").check_scenario(validate_params("grim_trigger", {}), blind, 2)
    contestant_class("grim_trigger").check_scenario(validate_params("grim_trigger", {}), scenario, 2)
    contestant_class("tit_for_tat").check_scenario(
        validate_params("tit_for_tat", {}), blind, 2
    )  # copying needs no equilibrium
    dear = scenario.model_copy(
        update={
            "choice": Choice(price_sensitivity=4.0, reputation_weight=0.0, quality_weight=1000.0),
            "products": (scenario.products[0].model_copy(update={"quality": 2.0}),),
        }
    )
    with pytest.raises(
        ContestantConfigError, match=r"monopoly price .* above the market's ceiling"
    ):  # customers who would pay far above the reference price
        contestant_class("grim_trigger").check_scenario(validate_params("grim_trigger", {}), dear, 2)


# ---- restocking -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inventory", "in_transit", "expected"),
    [(15, 0, 25), (5, 10, 25), (0, 0, 40), (16, 0, None), (10, 6, None)],
)
def test_reorder_point_orders_up_to_S_only_at_or_below_s(scenario, observe, inventory, in_transit, expected):
    merchant = started("reorder_point", scenario, reorder_level=15, target_stock=40)
    decision = merchant.decide(observe(scenario, inventory=inventory, in_transit=in_transit))
    assert orders_of(decision).get("widget") == expected


@pytest.mark.parametrize("kind", INSTANT_KINDS)
def test_orders_never_exceed_cash(kind, two_products, observe):
    params = {"max_order": 1000} if kind == "random" else {}
    if kind in ("fixed_price", "reorder_point", "undercut", "cost_plus"):
        params = {"target_stock": 1000}
    for cash in (0.0, 6.5, 55.0, 123.4):
        merchant = started(kind, two_products, **params)
        decision = merchant.decide(observe(two_products, cash=cash))
        orders = orders_of(decision)
        costs = {"a": 10.0, "b": 7.0}
        assert all(q == int(q) and q > 0 for q in orders.values())
        assert sum(q * costs[p] for p, q in orders.items()) <= cash
        if kind != "random" and cash >= 55:
            assert orders  # a cash-limited merchant still spends what it can


def test_restocking_keeps_back_the_fixed_daily_cost(scenario, observe):
    merchant = started("reorder_point", scenario)
    assert orders_of(merchant.decide(observe(scenario, cash=100.0, fixed_daily_cost=35.0))) == {"widget": 6.0}


def test_no_orders_when_sales_are_not_limited_by_stock(observe):
    game = Scenario(
        name="game",
        products=(Product(id="widget", unit_cost=10.0, reference_price=20.0, base_demand=50.0),),
        demand=Demand(mode="expected", stock_limited=False),
    )
    assert orders_of(started("reorder_point", game).decide(observe(game))) == {}


def test_collects_receivables_when_due(scenario, observe):
    merchant = started("cost_plus", scenario)
    assert not any(isinstance(op, Collect) for op in operations_of(merchant.decide(observe(scenario))))
    assert any(
        isinstance(op, Collect)
        for op in operations_of(merchant.decide(observe(scenario, day=2, receivables_due=50.0)))
    )


# ---- random ------------------------------------------------------------------------------------


def _random_run(scenario: Scenario, observe, seed: int) -> list[list]:
    merchant = started("random", scenario, seed=seed, max_order=50)
    return [operations_of(merchant.decide(observe(scenario, day=day))) for day in range(1, 6)]


def test_random_is_reproducible_and_seed_dependent(two_products, observe):
    first = _random_run(two_products, observe, seed=1)
    assert first == _random_run(two_products, observe, seed=1)
    assert first != _random_run(two_products, observe, seed=2)
    for day in first:
        for op in day:
            if isinstance(op, SetPrice):
                cost = {"a": 10.0, "b": 7.0}[op.product]
                assert cost <= op.price <= 2 * cost


def test_random_does_not_touch_global_random_state(scenario, observe):
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    _random_run(scenario, observe, seed=3)
    assert np.random.random() == before


@pytest.mark.parametrize("shown", [True, False])
def test_best_response_counts_the_scripted_competitors_as_rivals(scenario, observe, shown):
    """A shop at 0.8 x reference (16) with reputation 0.8 is one more option in the customers'
    choice; a price the scenario hides counts as the shop's standing price, the same 16."""
    with_shop = scenario.model_copy(
        update={"competitors": (Competitor(name="shop", price_ratio=0.8, reputation=0.8),)}
    )
    merchant = started("best_response", with_shop, grid_points=60, max_price_factor=3.0)
    obs = observe(with_shop, reputation=0.7, rivals={"r1": {"widget": 18.0}}, rival_reputation=0.5)
    obs.competitors = [PublicCompetitor("shop", {"widget": 16.0} if shown else None, 0.8 if shown else None)]
    chosen = prices_of(merchant.decide(obs))["widget"]
    rivals = [(18.0, 0.5), (16.0, 0.8)]
    coarse = np.linspace(10.0, 60.0, 60)
    assert _expected_profit(with_shop, np.array([chosen]), rivals, 0.7)[0] == pytest.approx(
        _expected_profit(with_shop, coarse, rivals, 0.7).max()
    )
    alone = started("best_response", scenario, grid_points=60, max_price_factor=3.0)
    assert chosen < prices_of(alone.decide(obs))["widget"]  # the shop takes customers at high prices


# ---- the retail world ---------------------------------------------------------------------------


def _retail(**product) -> Scenario:
    """One product whose customers come 40 a day to two merchants (20 each, expected)."""
    return Scenario(
        name="retail",
        products=(
            Product(
                id="widget", unit_cost=10.0, reference_price=20.0, base_demand=40.0, lead_time=3, **product
            ),
        ),
        demand=Demand(mode="expected"),
    )


@pytest.mark.parametrize(
    ("stock", "supplier"),
    [
        (200.0, "farm"),  # 10 days of sales: the farm (6 days) comes in time and is cheaper
        (80.0, None),  # 4 days: only the usual supplier (3 days) comes in time
        (10.0, None),  # half a day: none in time, the quickest (the usual one)
    ],
)
def test_the_reorder_point_rule_orders_from_the_cheaper_supplier_that_comes_in_time(observe, stock, supplier):
    scenario = _retail(suppliers=({"name": "farm", "unit_cost": 8.0, "lead_time": 6},))
    merchant = started("reorder_point", scenario, reorder_days=12, target_days=20)
    decision = merchant.decide(observe(scenario, inventory=stock))
    (order,) = [op for op in operations_of(decision) if isinstance(op, Order)]
    assert order.supplier == supplier
    assert order.quantity == 20 * 20 - stock  # up to 20 days of 20 a day


def test_an_unreliable_supplier_is_judged_by_when_its_orders_come_on_average(observe):
    """The farm takes 3 days, but a half of its orders 4 more: 5 days expected, beyond 4 days of stock."""
    scenario = _retail(
        suppliers=({"name": "farm", "unit_cost": 8.0, "lead_time": 3, "reliability": 0.5, "late_days": 4},)
    )
    merchant = started("reorder_point", scenario, reorder_days=12, target_days=20)
    (order,) = [
        op
        for op in operations_of(merchant.decide(observe(scenario, inventory=80.0)))
        if isinstance(op, Order)
    ]
    assert order.supplier is None


def test_no_rule_stocks_more_of_a_perishable_than_sells_before_it_spoils(observe):
    """Juice keeps 3 days and 20 a day sell: at most 60 in stock and coming, whatever the rule wants."""
    scenario = _retail(shelf_life=3)
    for kind, params in (
        ("reorder_point", {"reorder_level": 50, "target_stock": 500}),
        ("best_response", {"cover_days": 30}),
    ):
        merchant = started(kind, scenario, **params)
        orders = orders_of(merchant.decide(observe(scenario, inventory=15.0, in_transit=5.0)))
        assert orders.get("widget", 0) <= 60 - 20, kind


def test_stock_levels_in_days_follow_the_expected_sales(observe):
    scenario = _retail()
    merchant = started("reorder_point", scenario, reorder_days=2, target_days=5)
    assert orders_of(merchant.decide(observe(scenario, inventory=41.0))) == {}  # above 2 days (40)
    assert orders_of(merchant.decide(observe(scenario, day=2, inventory=40.0))) == {
        "widget": 60.0
    }  # up to 100


def test_expected_sales_are_shared_only_with_rivals_still_in_business(observe):
    """Of three seats one is bankrupt: the 40 customers a day are shared by two, 20 each, so
    2 days of sales is 40 units and 5 days 100 (shared by three it would be 13.3 a day)."""
    scenario = _retail()
    merchant = started("reorder_point", scenario, reorder_days=2, target_days=5)
    rivals = {"r1": {"widget": 20.0}, "r2": {"widget": 20.0}}
    seen = observe(scenario, day=2, inventory=40.0, rivals=rivals, bankrupt=("r2",))
    assert orders_of(merchant.decide(seen)) == {"widget": 60.0}


@pytest.mark.parametrize(
    ("params", "problem"),
    [({"reorder_days": 2}, "go together"), ({"reorder_days": 5, "target_days": 5}, "above")],
)
def test_stock_levels_in_days_are_checked(params, problem):
    with pytest.raises(ContestantConfigError, match=problem):
        validate_params("reorder_point", params)
