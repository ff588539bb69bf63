"""The equilibrium benchmarks: the published figures of Calvano et al. (2020), an independent
computation where none is published, deviation checks on random asymmetric markets, and the
seats that make markets asymmetric."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples
from typer.testing import CliRunner

from arena.cli import app
from common.yaml_files import ConfigError
from market.engine import Market
from market.equilibrium import Benchmarks, EquilibriumError, Outcome, equilibria, price_games, verify
from market.scenario import Choice, Product, Scenario, Seat, load_scenario

CALVANO = load_scenario("calvano")

# The inputs of the authors' replication package (A_InputParameters.txt of table I, table A4,
# table IV and table A5): Nash and cooperative prices, 5 decimals.
PUBLISHED = [
    # (seats' unit costs, seats' a_i), Nash prices, monopoly prices
    (([1, 1], [2, 2]), [1.47293, 1.47293], [1.92498, 1.92498]),
    (([1, 1, 1], [2, 2, 2]), [1.37016] * 3, [2.0] * 3),
    (([1, 0.875], [2, 2]), [1.44135, 1.39588], [1.97674, 1.85174]),
    (([1, 0.75], [2, 2]), [1.4142, 1.32539], [2.04051, 1.79051]),
    (([1, 0.625], [2, 2]), [1.39133, 1.26145], [2.11503, 1.74003]),
    (([1, 0.5], [2, 2]), [1.37233, 1.20377], [2.1984, 1.6984]),
    (([1, 0.25], [2, 2]), [1.34369, 1.10519], [2.38411, 1.63411]),
    (([1, 1], [2, 2.125]), [1.44135, 1.52088], [1.97674, 1.97674]),
    (([1, 1], [2, 2.25]), [1.4142, 1.57539], [2.04051, 2.04051]),
    (([1, 1], [2, 2.5]), [1.37233, 1.70377], [2.1984, 2.1984]),
    (([1, 1], [2, 2.75]), [1.34369, 1.85519], [2.38411, 2.38411]),
]


def calvano_seats(costs: list[float], qualities: list[float]) -> Scenario:
    seats = tuple(Seat(unit_cost={"good": c}, quality={"good": a}) for c, a in zip(costs, qualities))
    return CALVANO.model_copy(update={"seats": seats})


@pytest.mark.parametrize(("seats", "nash", "monopoly"), PUBLISHED)
def test_the_published_benchmarks_of_calvano_et_al_are_reproduced_to_a_thousandth(seats, nash, monopoly):
    solved = equilibria(calvano_seats(*seats), len(nash))["good"]
    assert solved.nash.prices == pytest.approx(nash, rel=1e-3)
    assert solved.monopoly.prices == pytest.approx(monopoly, rel=1e-3)
    assert solved.nash.prices == pytest.approx(nash, abs=6e-6)  # in fact to the 5 decimals published


def test_the_baseline_profits_are_the_published_ones_and_the_three_firm_cartel_is_worth_a_quarter():
    baseline = equilibria(CALVANO, 2)["good"]
    assert baseline.nash.profits == pytest.approx([0.22293] * 2, abs=1e-5)
    assert baseline.monopoly.profits == pytest.approx([0.33749] * 2, abs=1e-5)
    # three firms at p = 2 = a: every option has utility 0, so each sells 1/4 at a margin of 1
    assert equilibria(CALVANO, 3)["good"].monopoly.profits == pytest.approx([0.25] * 3, rel=1e-9)


def _symmetric_by_bisection(seats: int) -> tuple[float, float]:
    """Calvano's symmetric market (a = 2, c = 1, mu = 0.25, a_0 = 0), solved apart from the
    solver: the Nash price is the root of p - c = mu / (1 - q(p)) with q the share of one of
    n firms at a common price, by bisection; the cartel's price maximises n (p - c) q(p),
    found by golden-section search."""

    def share(price: float) -> float:
        inside = math.exp((2 - price) / 0.25)
        return inside / (seats * inside + 1)

    low, high = 1.0, 3.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if (middle - 1) - 0.25 / (1 - share(middle)) < 0 else (low, middle)
    nash = low
    a, b = 1.0, 4.0
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(200):
        left, right = b - ratio * (b - a), a + ratio * (b - a)
        a, b = (a, right) if (left - 1) * share(left) > (right - 1) * share(right) else (left, b)
    return nash, (a + b) / 2


@pytest.mark.parametrize("seats", [2, 3, 4, 6])
def test_symmetric_markets_agree_with_an_independent_solution(seats):
    """The paper publishes no prices for four firms; bisection and golden-section search do."""
    nash, monopoly = _symmetric_by_bisection(seats)
    solved = equilibria(CALVANO, seats)["good"]
    assert solved.nash.prices == pytest.approx([nash] * seats, rel=1e-9)
    assert solved.monopoly.prices == pytest.approx([monopoly] * seats, rel=1e-7)


def _logit_profits(
    prices: np.ndarray, costs: np.ndarray, a: np.ndarray, b: float, outside: float, size: float
) -> np.ndarray:
    """D (p_i - c_i) exp(a_i - b p_i) / (exp(outside) + sum_j exp(a_j - b p_j)): the test's own logit."""
    weights = np.exp(a - b * prices)
    return size * (prices - costs) * weights / (math.exp(outside) + weights.sum(axis=-1, keepdims=True))


@st.composite
def asymmetric_markets(draw):
    seats = draw(st.integers(2, 5))
    money = st.floats(0.5, 20)
    costs = [draw(money) for _ in range(seats)]
    qualities = [draw(st.floats(-2, 2)) for _ in range(seats)]
    choice = Choice(
        price_sensitivity=draw(st.floats(0.5, 8)),
        reputation_weight=draw(st.floats(0, 3)),
        quality_weight=draw(st.floats(0, 2)),
        no_purchase_utility=draw(st.floats(-4, 2)),
    )
    product = Product(id="x", unit_cost=1.0, reference_price=draw(money), base_demand=draw(st.floats(1, 500)))
    scenario = Scenario(
        name="random",
        products=(product,),
        choice=choice,
        seats=tuple(Seat(unit_cost={"x": c}, quality={"x": q}) for c, q in zip(costs, qualities)),
    )
    return scenario, np.array(costs), np.array(qualities)


@settings(max_examples=examples(40), deadline=None)
@given(asymmetric_markets(), st.integers(0, 2**32 - 1))
def test_nobody_gains_by_deviating_from_nash_and_no_joint_move_raises_the_cartels_profit(market, seed):
    scenario, costs, qualities = market
    seats, product, choice = len(costs), scenario.products[0], scenario.choice
    solved = equilibria(scenario, seats)["x"]
    b = choice.price_sensitivity / product.reference_price
    a = choice.reputation_weight * scenario.reputation.initial + choice.quality_weight * qualities

    def profits(prices):
        return _logit_profits(
            np.asarray(prices, dtype=float), costs, a, b, choice.no_purchase_utility, product.base_demand
        )

    nash, joint = np.array(solved.nash.prices), np.array(solved.monopoly.prices)
    assert np.array(solved.nash.profits) == pytest.approx(profits(nash), rel=1e-9)
    rng = np.random.default_rng(seed)
    for i in range(seats):  # any other price of one seat, the others at Nash
        deviations = np.tile(nash, (4000, 1))
        deviations[:, i] = np.concatenate(
            [np.linspace(costs[i], nash[i] + 30 / b, 2000), nash[i] * (1 + rng.uniform(-0.05, 0.05, 2000))]
        )
        assert profits(deviations)[:, i].max() <= profits(nash)[i] * (1 + 1e-9)
    moves = joint * rng.uniform(-1e-3, 1e-3, (500, seats))  # any small move of the cartel's prices
    assert profits(joint + moves).sum(axis=1).max() <= profits(joint).sum() * (1 + 1e-12)
    assert np.all(
        joint >= nash * (1 - 1e-9)
    )  # colluding raises every price (barely, beside a rival that sells next to nothing)


def test_the_checks_find_a_wrong_nash_price_and_a_wrong_cartel_price():
    game = price_games(CALVANO, 2)["good"]
    right = equilibria(CALVANO, 2)["good"]
    off = np.array(right.nash.prices) + [0.01, 0.0]
    wrong_nash = Benchmarks(game.outcome(off), right.monopoly)
    assert any("seat 0 gains" in problem for problem in verify(game, wrong_nash))
    wrong_cartel = Benchmarks(right.nash, game.outcome(np.array(right.monopoly.prices) * 0.99))
    assert verify(game, wrong_cartel) == ["a small move of the joint-profit prices raises joint profit"]
    assert verify(game, right) == []


def test_a_market_where_price_does_not_matter_has_no_equilibrium():
    indifferent = CALVANO.model_copy(update={"choice": Choice(price_sensitivity=0.0, reputation_weight=0.0)})
    with pytest.raises(EquilibriumError, match="ignore prices"):
        equilibria(indifferent, 2)


def test_the_market_charges_each_seat_its_own_cost_and_customers_see_its_own_quality():
    """One day at fixed prices: each seat's profit is (p_i - c_i) q_i with Calvano's demand."""
    costs, qualities, prices = [1.0, 0.75], [2.0, 2.25], [1.8, 1.6]
    market = Market(calvano_seats(costs, qualities), [["a", "b"], ["c", "d"]])
    market.reset([1, 2])
    change = market.advance(
        decisions={
            i: {"operations": [{"op": "set_price", "product": "good", "price": prices[i % 2]}]}
            for i in range(4)
        }
    )
    weights = [math.exp((a - p) / 0.25) for a, p in zip(qualities, prices)]
    expected = [(p - c) * w / (sum(weights) + 1) for p, c, w in zip(prices, costs, weights)]
    assert change.tolist() == pytest.approx(expected * 2, rel=1e-12)
    assert market.logs[1].build().product_values("unit_cost")[:, 0].tolist() == costs


def test_a_match_needs_as_many_merchants_as_the_scenario_has_seats():
    with pytest.raises(ValueError, match="has 2 seats, so its matches need 2 merchants, not 3"):
        Market(calvano_seats([1, 1], [2, 2]), [["a", "b", "c"]])


def test_seats_may_only_name_the_scenarios_products_and_positive_costs(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nproducts: [{id: x, unit_cost: 1, reference_price: 2, base_demand: 5}]\n"
        "seats: [{unit_cost: {y: 1}}]\n"
    )
    with pytest.raises(ConfigError, match=r"s\.yaml: seats\[0\]: names unknown product 'y'"):
        load_scenario(path)
    path.write_text(
        "name: s\nproducts: [{id: x, unit_cost: 1, reference_price: 2, base_demand: 5}]\n"
        "seats: [{unit_cost: {x: 0}}]\n"
    )
    with pytest.raises(
        ConfigError, match=r"s\.yaml: seats\[0\]\.unit_cost\.x: Input should be greater than 0"
    ):
        load_scenario(path)


def test_a_tournament_whose_matches_do_not_fill_the_seats_is_refused(tmp_path):
    from tournaments.load import load_tournament

    (tmp_path / "duo.yaml").write_text(
        CALVANO.model_copy(update={"name": "duo", "seats": (Seat(), Seat())}).model_dump_json()
    )
    (tmp_path / "t.yaml").write_text(
        "name: t\nformat: free_for_all\nscenarios: [duo.yaml]\n"
        "contestants: [{name: a, kind: fixed_price}, {name: b, kind: fixed_price}, "
        "{name: c, kind: fixed_price}]\n"
    )
    with pytest.raises(
        ConfigError,
        match=r"scenarios\[0\].*has 2 seats, so its matches need 2 merchants, "
        r"not 3 \(free_for_all puts 3 in each\)",
    ):
        load_tournament(tmp_path / "t.yaml")


def test_arena_equilibrium_prints_the_benchmarks_as_json_in_seat_order(tmp_path):
    path = tmp_path / "asym.yaml"
    path.write_text(calvano_seats([1, 0.5], [2, 2]).model_copy(update={"name": "asym"}).model_dump_json())
    result = CliRunner().invoke(app, ["equilibrium", str(path), "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    solved = equilibria(load_scenario(path), 2)["good"]
    assert printed == {
        "scenario": "asym",
        "merchants": 2,
        "products": {
            "good": {"nash": Outcome.as_dict(solved.nash), "monopoly": Outcome.as_dict(solved.monopoly)}
        },
    }
    assert printed["products"]["good"]["nash"]["prices"] == pytest.approx([1.37233, 1.20377], abs=1e-5)
    table = CliRunner().invoke(app, ["equilibrium", "calvano", "--merchants", "3"])
    assert table.exit_code == 0 and "1.37016" in table.stdout and "2.00000" in table.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["equilibrium", "calvano_typo"], "no shipped scenario is named 'calvano_typo'"),
        (["equilibrium", "{tmp}/missing.yaml"], "missing.yaml: no such file"),
        (
            ["equilibrium", "{tmp}/asym.yaml", "--merchants", "3"],
            "has 2 seats, so its matches need 2 merchants, not 3",
        ),
        (["equilibrium", "{tmp}/flat.yaml"], "customers ignore prices"),
    ],
)
def test_arena_equilibrium_refuses_a_mistake_in_one_line_with_status_2(tmp_path, arguments, message):
    (tmp_path / "asym.yaml").write_text(calvano_seats([1, 0.5], [2, 2]).model_dump_json())
    (tmp_path / "flat.yaml").write_text(
        CALVANO.model_copy(update={"choice": Choice(price_sensitivity=0)}).model_dump_json()
    )
    result = CliRunner().invoke(app, [a.format(tmp=tmp_path) for a in arguments])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
