"""Deviation probes, as matches play them: every match is played a second time with the same
seeds, one seat's prices forced on the probe's days (the deviated path), and the two paths
are compared (results.scoring.deviation measures them).

Matches whose merchants call models play their deviated paths after their own, so every
answer of a day before the deviation is in the response cache already: those days replay
from it, at no cost. The others play both paths side by side.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from market.scenario import Scenario
from results.records import DeviationPath, FinishedMatch, StoppedMatch
from results.scoring import deviation
from results.settings import DeviationProbe

if TYPE_CHECKING:
    from tournaments.match import Match, Played

DEVIATED_SUFFIX = "/deviated"  # a deviated path's key among its hosted merchants' matches
Prices = Callable[
    [np.ndarray], np.ndarray
]  # the forced seat's prices [product] from those posted [seat, product]
M = TypeVar("M")


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


PlaySideBySide = Callable[[Sequence["Match"], Callable[[], None]], Awaitable[list["Played"]]]


async def play_both_paths(
    matches: Sequence[Match], on_day: Callable[[], None], play: PlaySideBySide
) -> list[FinishedMatch | StoppedMatch]:
    """Each match played on path and deviated (by `play`, which plays matches side by side),
    with its deviated path and the measures that compare the two. `on_day` is told of every
    day of each path. A match lost on its deviated path is lost with the calls of both."""
    from tournaments.match import MatchLost

    twins = [match.deviated() for match in matches]
    if any(match.calls_models for match in matches):
        played = await play(matches, on_day)
        if any(isinstance(p, StoppedMatch) for p in played):
            return [p for p in played if not isinstance(p, DeviationPath)]
        try:
            deviated = await play(twins, on_day)
        except MatchLost as lost:  # the calls of the path played are paid too
            raise MatchLost(lost.reason, [*(call for p in played for call in p.calls), *lost.calls]) from None
    else:

        def both_paths() -> None:  # a day of the group is a day of each path
            on_day()
            on_day()

        both = await play([*matches, *twins], both_paths)
        played, deviated = both[: len(matches)], both[len(matches) :]
    return [_with_deviation(p, d) for p, d in zip(played, deviated)]


def _with_deviation(played: Played, path: Played) -> FinishedMatch | StoppedMatch:
    """The match with its deviated path and their measures; stopped if either path was."""
    if isinstance(played, StoppedMatch) or isinstance(path, StoppedMatch):
        stopped = played if isinstance(played, StoppedMatch) else path
        assert isinstance(stopped, StoppedMatch)
        return stopped.model_copy(update={"calls": [*played.calls, *path.calls]})
    assert isinstance(played, FinishedMatch) and isinstance(path, DeviationPath)
    metrics = deviation.with_measures(played.metrics or {}, played.days_played, path.days_played, path.probe)
    return played.model_copy(update={"deviation": path, "metrics": metrics})
