"""Deviation probes, as matches play them: every match is played a second time with the same
seeds (tournaments.match.play_both_paths), one seat's prices forced on the probe's days (the
deviated path), and the two paths are compared (tournaments.outcome.with_deviation;
results.scoring.deviation measures them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from market.scenario import Scenario
from results.settings import DeviationProbe

DEVIATED_SUFFIX = "/deviated"  # a deviated path's key among its hosted merchants' matches
# the forced seat's prices [product] from those posted [seat, product]
Prices = Callable[[np.ndarray], np.ndarray]


def forcing(probe: DeviationProbe, scenario: Scenario, seats: int, day: int) -> Prices | None:
    """On the probe's forced days, the forced seat's prices of the day from the prices its
    match posted (market.engine.Market.advance); None on other days."""
    if not probe.day <= day <= probe.last_day:
        return None
    if probe.to == "best_response":
        from market.equilibrium import best_response, price_games  # scipy: only for a probe

        games = list(price_games(scenario, seats).values())
        return lambda posted: np.array(
            [best_response(game, posted[:, j], probe.seat) for j, game in enumerate(games)]
        )
    if probe.to == "nash":
        from market.equilibrium import by_open_seat

        nash = by_open_seat(scenario, seats, day).nash_price[probe.seat]
        return lambda posted: nash
    price = np.full(len(scenario.products), float(probe.to))
    return lambda posted: price
