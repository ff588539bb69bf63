"""The game theory of a scenario's logit market: the one-shot Bertrand-Nash prices and the
prices that maximise the merchants' joint profit (monopoly, or a perfect cartel), per product.

Each product is a separate price game at expected demand with no stock limits and every
reputation at its initial value: seat i sells D * share_i(p) units at price p_i and margin
p_i - c_i, where D is the product's base demand and share_i the customers' logit choice
(market.demand.choice_shares, the market's own). The shares have one price coefficient
b = price_sensitivity / reference_price, which gives both solutions in closed form up to a
root:
- Nash: each seat's first-order condition is p_i - c_i = 1 / (b (1 - share_i)); the seats'
  best responses (each a root, scipy.optimize.brentq) are iterated to their fixed point;
- joint profit: every markup is the same m, with m = 1 / (b share_0), share_0 the no-purchase
  share, a single root (brentq again).
A scenario's fixed-price competitors (market.competitors) are part of buying from no merchant,
at their standing prices; one that undercuts reacts, and leaves no fixed game (EquilibriumError).
Both are verified before they are returned (`verify`): at Nash no seat gains by deviating to
any price on a fine grid, and at the joint optimum no small move of the prices raises the
joint profit. A failed check raises EquilibriumError rather than returning a wrong benchmark.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np

from market.competitors import price_game_choice, reacting
from market.demand import choice_shares
from market.scenario import Choice, Product, Scenario


class EquilibriumError(RuntimeError):
    """The scenario's price game has no equilibrium the solver can find and verify."""


@dataclass(frozen=True)
class Outcome:
    """Prices and profits per day (at base demand), in seat order."""

    prices: tuple[float, ...]
    profits: tuple[float, ...]

    def as_dict(self) -> dict[str, list[float]]:
        return {"prices": list(self.prices), "profits": list(self.profits)}


@dataclass(frozen=True)
class Benchmarks:
    """One product's reference points: competition (nash) and collusion (monopoly)."""

    nash: Outcome
    monopoly: Outcome


@dataclass(frozen=True)
class PriceGame:
    """One product's one-shot price game between the seats."""

    scenario: Scenario
    product: Product
    costs: np.ndarray  # [seat]
    quality: np.ndarray  # [seat]
    choice: Choice  # the scenario's, its fixed-price competitors in the no-purchase option

    @property
    def seats(self) -> int:
        return len(self.costs)

    @property
    def price_coefficient(self) -> float:
        """b: how much a unit of price lowers utility."""
        return self.choice.price_sensitivity / self.product.reference_price

    def shares(self, prices: np.ndarray, selling: np.ndarray | None = None) -> np.ndarray:
        """Shares of all customers [..., seat, then no purchase] at prices [..., seat], with
        only the seats `selling` [..., seat] to choose from (all, if not given)."""
        reputation = np.full(self.seats, self.scenario.reputation.initial)
        return choice_shares(
            self.choice, prices, self.product.reference_price, reputation, self.quality, selling
        )

    def profits(self, prices: np.ndarray, selling: np.ndarray | None = None) -> np.ndarray:
        """Profit per day of each seat [..., seat]: D * (p_i - c_i) * share_i, with the shares
        of `shares`."""
        return self.product.base_demand * (prices - self.costs) * self.shares(prices, selling)[..., :-1]

    def outcome(self, prices: np.ndarray) -> Outcome:
        return Outcome(tuple(prices.tolist()), tuple(self.profits(prices).tolist()))


@dataclass(frozen=True)
class SeatBenchmarks:
    """Every seat's benchmarks, each [seat, product] in seat order and the scenario's product
    order: the Nash and joint-profit (monopoly) prices, the profits per day they give at base
    demand, and the unit costs of the game (markups are prices less these)."""

    nash_price: np.ndarray
    monopoly_price: np.ndarray
    nash_profit: np.ndarray
    monopoly_profit: np.ndarray
    unit_cost: np.ndarray


def by_seat(scenario: Scenario, merchants: int) -> SeatBenchmarks:
    """`equilibria` as arrays [seat, product] (raises as it does)."""
    solved = [equilibria(scenario, merchants)[p.id] for p in scenario.products]

    def column(outcome: str, field: str) -> np.ndarray:
        return np.array([getattr(getattr(game, outcome), field) for game in solved]).T

    return SeatBenchmarks(
        column("nash", "prices"),
        column("monopoly", "prices"),
        column("nash", "profits"),
        column("monopoly", "profits"),
        np.array(scenario.seat_values("unit_cost", merchants), dtype=float),
    )


def by_open_seat(scenario: Scenario, merchants: int, day: int) -> SeatBenchmarks:
    """`by_seat` of the price game between the seats open on `day`, every seat but a new
    entrant not yet open (Scenario.opening_days), as arrays [seat, product] for all
    `merchants` seats, NaN in the rows of those not open (raises as by_seat does)."""
    opening = scenario.opening_days(merchants)
    open_now = [seat for seat in range(merchants) if opening[seat] <= day]
    if len(open_now) == merchants:
        return by_seat(scenario, merchants)
    incumbents = scenario.model_copy(
        update={
            "seats": tuple(scenario.seats[seat] for seat in open_now) if scenario.seats else (),
            "interventions": (),  # no act changes the price game, and the entrants are left out
        }
    )
    found = by_seat(incumbents, len(open_now))

    def spread(values: np.ndarray) -> np.ndarray:
        every = np.full((merchants, values.shape[1]), np.nan)
        every[open_now] = values
        return every

    return replace(found, **{f.name: spread(getattr(found, f.name)) for f in fields(found)})


def payoffs(scenario: Scenario, merchants: int, prices: np.ndarray, selling: np.ndarray) -> np.ndarray:
    """[..., seat, product]: each seat's profit per day at base demand in the scenario's price
    games (PriceGame.profits) when the seats post `prices` [..., seat, product] and customers
    choose among the seats `selling` [..., seat] alone (a seat gone bankrupt, or a new entrant
    not yet open, is no option: its entries are 0, its prices ignored)."""
    games = price_games(scenario, merchants).values()
    posted = np.where(selling[..., None], prices, 0.0)
    return np.stack([game.profits(posted[..., j], selling) for j, game in enumerate(games)], -1)


def price_games(scenario: Scenario, merchants: int) -> dict[str, PriceGame]:
    """Each product's price game between `merchants` seats (ValueError if the scenario's
    seats need another number)."""
    costs = np.array(scenario.seat_values("unit_cost", merchants))
    quality = np.array(scenario.seat_values("quality", merchants))
    return {
        p.id: PriceGame(scenario, p, costs[:, j], quality[:, j], price_game_choice(scenario, j))
        for j, p in enumerate(scenario.products)
    }


def equilibria(scenario: Scenario, merchants: int) -> dict[str, Benchmarks]:
    """Per product id, the verified Nash and joint-profit benchmarks of `merchants` seats.
    EquilibriumError when customers ignore prices (no finite optimum)."""
    return _solved(scenario.model_dump_json(), merchants)


@functools.lru_cache(maxsize=64)
def _solved(scenario_json: str, merchants: int) -> dict[str, Benchmarks]:
    scenario = Scenario.model_validate_json(scenario_json)
    if scenario.choice.price_sensitivity <= 0:
        raise EquilibriumError(
            f"scenario {scenario.name!r}: customers ignore prices (price_sensitivity 0), "
            "so no price is optimal"
        )
    if scenario.segments:
        raise EquilibriumError(
            f"scenario {scenario.name!r}: its customer segments make the price game a mixed logit, "
            "whose benchmarks arena does not solve"
        )
    if reacting(scenario):
        raise EquilibriumError(
            f"scenario {scenario.name!r}: competitor {reacting(scenario)[0]!r} sets its prices by the "
            "merchants', so the price game has no fixed benchmarks"
        )
    solved = {}
    for pid, game in price_games(scenario, merchants).items():
        benchmarks = Benchmarks(game.outcome(nash_prices(game)), game.outcome(joint_prices(game)))
        problems = verify(game, benchmarks)
        if problems:
            raise EquilibriumError(f"scenario {scenario.name!r}, product {pid!r}: " + "; ".join(problems))
        solved[pid] = benchmarks
    return solved


def nash_prices(game: PriceGame, tolerance: float = 1e-13, rounds: int = 100_000) -> np.ndarray:
    """Prices at which each seat's price is its best response to the others': its markup
    solves m (b (1 - share_i)) = 1, the first-order condition of its own profit. Found by
    letting every seat answer the others' prices of the round before (the logit price game's
    best responses are a contraction, so this converges from any start) until no price moves
    by `tolerance`."""
    prices = game.costs + 1.0 / game.price_coefficient
    for _ in range(rounds):
        before = prices.copy()
        # all against the same prices, so seats alike get the same price to the last bit
        for i in range(game.seats):
            prices[i] = best_response(game, before, i)
        if np.abs(prices - before).max() <= tolerance * prices.max():
            return prices
    raise EquilibriumError(f"product {game.product.id!r}: best responses did not settle in {rounds} rounds")


def best_response(game: PriceGame, prices: np.ndarray, seat: int) -> float:
    """The price that maximises `seat`'s profit of the day when the others keep `prices`
    (its own entry is ignored): its markup solves m (b (1 - share_i)) = 1."""
    b = game.price_coefficient
    return float(game.costs[seat] + _root(lambda m: m * b * (1.0 - _share(game, prices, seat, m)) - 1.0, b))


def _share(game: PriceGame, prices: np.ndarray, seat: int, markup: float) -> float:
    """Seat's share of customers when its markup is `markup` and the others keep `prices`."""
    trial = prices.copy()
    trial[seat] = game.costs[seat] + markup
    return float(game.shares(trial)[seat])


def _root(condition: Callable[[float], float], b: float) -> float:
    """The markup m > 0 at which `condition`, rising from -1 at m = 0, crosses zero."""
    # imported here: a process that only reads benchmarks solved elsewhere need not import it
    from scipy import optimize

    high = 1.0 / b
    while condition(high) < 0:
        high *= 2.0
    return optimize.brentq(condition, 0.0, high, xtol=1e-15, rtol=4 * np.finfo(float).eps)


def joint_prices(game: PriceGame) -> np.ndarray:
    """Prices that maximise the seats' joint profit: every markup m with m b share_0 = 1
    (share_0 rises with m from below 1/(b m) at m -> 0 to 1, so the root is unique)."""
    b = game.price_coefficient

    return game.costs + _root(lambda m: m * b * float(game.shares(game.costs + m)[-1]) - 1.0, b)


def verify(
    game: PriceGame, benchmarks: Benchmarks, grid_points: int = 20_001, step: float = 1e-4
) -> list[str]:
    """What is wrong with `benchmarks` (nothing: []).

    Nash: no seat earns more than its Nash profit at any of `grid_points` prices from its cost
    to its Nash price plus 20 / b (a margin at which it sells next to nothing), with the
    others at their Nash prices. Joint profit: no move of `step` * (its price) of one seat's
    price, or of all prices together, up or down, raises the total."""
    problems = []
    nash, joint = np.array(benchmarks.nash.prices), np.array(benchmarks.monopoly.prices)
    profits = np.array(benchmarks.nash.profits)
    for i in range(game.seats):
        profiles = np.tile(nash, (grid_points, 1))
        profiles[:, i] = np.linspace(game.costs[i], nash[i] + 20.0 / game.price_coefficient, grid_points)
        best = float(game.profits(profiles)[:, i].max())
        if best > profits[i] * (1 + 1e-9) + 1e-12:
            problems.append(f"seat {i} gains by leaving the Nash price ({best:.6g} > {profits[i]:.6g})")
    total = float(np.sum(benchmarks.monopoly.profits))
    moves = np.vstack([np.eye(game.seats), np.ones((1, game.seats))]) * step * joint
    for move in np.vstack([moves, -moves]):
        if float(np.sum(game.profits(joint + move))) > total * (1 + 1e-12) + 1e-15:
            problems.append("a small move of the joint-profit prices raises joint profit")
            break
    return problems
