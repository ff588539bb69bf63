"""A sweep's stored matches by cell (`arena sweep`, the report's and the viewer's sweep
sections): the store's metrics of each match, grouped and averaged by results.scoring.sweeps."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sqlalchemy import Engine

from results.errors import NotFound
from results.records import SweepCell
from results.scoring.metrics import MARKET_METRICS
from results.scoring.sweeps import (
    ALL_METRICS,
    KEY_METRICS,
    CellResult,
    Played,
    UnknownName,
    factors_of,
    grouped,
    unknown_metric,
)
from results.storage import store


def check_metric(engine: Engine, tournament_id: int, name: str) -> None:
    """UnknownName unless arena computes a metric `name`, or the tournament's merchants
    reported one of that name (a learner's `converged`)."""
    if name not in ALL_METRICS and name not in (reported := store.metric_names(engine, tournament_id)):
        raise unknown_metric(name, reported)


def by_cell(
    engine: Engine, tournament_id: int, by: Sequence[str] = (), metrics: Sequence[str] = ()
) -> list[CellResult]:
    """The tournament's matches grouped by the values of the factors `by` (default: every
    factor, a group per cell), in the sweep's order, with the mean and interval of each of
    `metrics` (default: KEY_METRICS). A tournament without a sweep is one group of all its
    matches. NotFound for an unknown tournament, or `by` of one without a sweep; UnknownName
    for a factor it does not have or a metric it has not (check_metric)."""
    planned = store.get_tournament(engine, tournament_id).planned_matches  # NotFound if there is none
    cells = store.sweep_cells(engine, tournament_id) or [
        SweepCell(position=0, label="", factors={}, first_index=0, matches=planned)
    ]
    if by and not cells[0].factors:
        raise NotFound(f"tournament {tournament_id} has no sweep: it has no factor {by[0]!r}")
    factors = factors_of(cells)
    for factor in by:
        if factor not in factors:
            raise UnknownName(
                f"tournament {tournament_id} has no factor {factor!r} (its factors: {', '.join(factors)})"
            )
    for metric in metrics:
        check_metric(engine, tournament_id, metric)
    by, metrics = list(by) or factors, list(metrics) or list(KEY_METRICS)
    return grouped(cells, by, metrics, match_values(engine, tournament_id, metrics))


def match_values(engine: Engine, tournament_id: int, metrics: Sequence[str]) -> dict[int, Played]:
    """Each stored match with its value of each of `metrics` it has (see the module), by its
    index in the schedule."""
    market = [m for m in metrics if m in MARKET_METRICS]
    merchant = [m for m in metrics if m not in MARKET_METRICS]  # stored per merchant
    stored = store.match_places(engine, tournament_id)
    played = {index: Played(seed, {}) for index, seed in stored.values()}
    for match_id, name, value in store.market_metric_values(engine, tournament_id, market):
        if value is not None:
            played[stored[match_id][0]].values[name] = value
    seats: dict[tuple[int, str], list[float]] = {}
    for row in store.metrics(engine, tournament_id, names=merchant):
        if row.value is not None:
            seats.setdefault((row.match_id, row.name), []).append(row.value)
    for (match_id, name), seat_values in seats.items():
        played[stored[match_id][0]].values[name] = math.fsum(seat_values) / len(seat_values)
    return played
