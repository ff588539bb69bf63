"""What the collusion measures share: their settings (a tournament file's `collusion:` section),
a match's benchmarks by seat, and the arithmetic of the normalised gain and of runs of days.

The measures themselves are metrics, each one function of results.scoring.metrics with its formula:
`profit_gain` and `price_gain` per merchant, `market_profit_gain`, `market_price_gain`,
`supra_competitive_days` and `price_war_days` of the market as a whole. They place a match
between the two benchmarks of its scenario's price game (market.equilibrium): the one-shot
Bertrand-Nash outcome (competition, 0) and the outcome that maximises the seats' joint profit
(monopoly, or a perfect cartel, 1), as Calvano, Calzolari, Denicolo and Pastorello (AER 2020)
measure collusion between Q-learners. A gain is measured only where the two benchmarks are far
enough apart for the scale between them to mean something (`apart`); elsewhere it is not
applicable, and `gap_note` says why.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from market.demand import demand_factor
from market.equilibrium import EquilibriumError, SeatBenchmarks, by_open_seat, by_seat
from market.scenario import Scenario, event_multiplier


class NoBenchmarks(NamedTuple):
    """Why a match's seats have no price benchmarks, as a reader is shown it."""

    reason: str


def seat_benchmarks(scenario: Scenario, seats: int) -> SeatBenchmarks | NoBenchmarks:
    """The benchmarks of `seats` merchants playing `scenario` (market.equilibrium.by_seat), or
    why there are none: its price game has no equilibrium (customers ignore prices), or the
    scenario's seats are not the match's (its file changed since). Solved once: the reason
    comes from the same attempt."""
    try:
        return by_seat(scenario, seats)
    except (EquilibriumError, ValueError) as exc:
        return NoBenchmarks(f"no price benchmarks: {str(exc).removeprefix(f'scenario {scenario.name!r}: ')}")


def open_seat_benchmarks(scenario: Scenario, seats: int, day: int) -> SeatBenchmarks | None:
    """The benchmarks of the price game between the seats open on `day`
    (market.equilibrium.by_open_seat: NaN in the rows of a new entrant not yet open); None
    where seat_benchmarks would give a reason."""
    try:
        return by_open_seat(scenario, seats, day)
    except (EquilibriumError, ValueError):
        return None


def demand_scale(scenario: Scenario, last_day: int) -> np.ndarray:
    """[day - 1, product]: what the market multiplies each product's base demand by on days 1 to
    `last_day`, the demand factor (weekday and season) times the demand events running that day
    (market.demand.demand_factor, market.scenario.event_multiplier), as the market's customers
    per day are base_demand times both."""
    factors = demand_factor(scenario.demand, np.arange(1, last_day + 1))[:, None]
    if not scenario.events:
        return np.repeat(factors, len(scenario.products), axis=1)
    return factors * np.array(
        [
            [event_multiplier(scenario.events, "demand", p.id, day) for p in scenario.products]
            for day in range(1, last_day + 1)
        ]
    ).reshape(last_day, -1)


# Benchmarks that are one point in theory (a merchant alone: its best response is the monopoly
# price) come out of their solvers (market.equilibrium) equal to about 1e-13 of their size, not
# exactly; a monopoly benchmark closer than this above Nash is the same point.
SAME_BENCHMARK = 1e-9


def apart(
    nash: np.ndarray, monopoly: np.ndarray, zero: np.ndarray | float = 0.0, min_gap: float = 0.0
) -> np.ndarray:
    """Whether a gain can be measured between the benchmarks: the monopoly one is above Nash by
    at least `min_gap` of its distance from `zero` (where the quantity is nothing: no profit,
    or a price at unit cost), and by more than SAME_BENCHMARK of its size.

    Why a gap: every gain is (value - nash) / (monopoly - nash), and a value of `zero` (a seat
    that sells nothing, or sells at cost) reads 1 - 1 / g with g = (monopoly - nash) /
    (monopoly - zero). In Calvano et al.'s market g is 0.34 for profits (two firms), and the
    scale runs from about -2 to 1; as g shrinks the scale stretches without end (price_war's
    two seats: g = 0.054, a seat selling nothing at -17.5), and a small difference of price
    reads as many times the whole way from competition to a cartel."""
    gap = monopoly - nash
    with np.errstate(invalid="ignore"):
        return (gap > SAME_BENCHMARK * np.abs(monopoly)) & (gap >= min_gap * (monopoly - zero))


def gain(
    value: np.ndarray,
    nash: np.ndarray,
    monopoly: np.ndarray,
    zero: np.ndarray | float = 0.0,
    min_gap: float = 0.0,
) -> np.ndarray:
    """Where `value` sits between the benchmarks: (value - nash) / (monopoly - nash), 0 at Nash,
    1 at the joint-profit optimum, negative below Nash; NaN where they are not `apart` (the
    same point, as for a merchant alone; closer than `min_gap`; or, with asymmetric seats, a
    seat that would earn less in the cartel than competing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(apart(nash, monopoly, zero, min_gap), (value - nash) / (monopoly - nash), np.nan)


def gap_note(what: str, nash: float, monopoly: float, zero: float, min_gap: float) -> str | None:
    """Why no gain is measured between these benchmarks of `what` ("profits", "markups on
    widget"); None where one is (`apart`)."""
    if bool(apart(np.array(nash), np.array(monopoly), zero, min_gap)):
        return None
    if not (math.isfinite(nash) and math.isfinite(monopoly)):
        return f"no Nash and monopoly {what} on some of its days (no equilibrium among the seats then open)"
    if abs(monopoly - nash) <= SAME_BENCHMARK * abs(monopoly):
        return f"Nash and monopoly {what} are one point: nothing to measure between them"
    if monopoly < nash:
        return f"monopoly {what} below Nash {what}: the cartel would pay this seat less than competing"
    share = (monopoly - nash) / (monopoly - zero)
    return (
        f"Nash and monopoly {what} {share:.1%} apart, less than the {min_gap:.0%} "
        "a gain needs (collusion: min_gap)"
    )


def runs(flagged: np.ndarray, min_days: int) -> list[tuple[int, int]]:
    """(first day, last day) of each run of at least `min_days` consecutive flagged days, with
    flagged[d - 1] the flag of day d."""
    padded = np.zeros(len(flagged) + 2, dtype=bool)
    padded[1:-1] = flagged
    edges = np.flatnonzero(padded[1:] != padded[:-1]).tolist()  # a run's first day - 1, then its last day
    return [(a + 1, b) for a, b in zip(edges[::2], edges[1::2]) if b - a >= min_days]
