"""`arena rescore`: a tournament's stored matches scored again from their stored records."""

from __future__ import annotations

from sqlalchemy import Engine

from results.records import PlayedScenarios
from results.scoring import deviation
from results.scoring.metrics import METRICS
from results.scoring.metrics import compute as compute_metrics
from results.storage import store


def rescore(engine: Engine, tournament_id: int, played: PlayedScenarios) -> int:
    """Compute the metrics of a tournament's stored matches again from their stored records,
    replacing the stored ones (the market's and its price windows too). `played` gives each
    match's scenario, for the metrics that need it, and its settings of the collusion
    measures (the defaults where it has none); a probed match's deviation measures are
    computed again from its two stored paths. What merchants reported of themselves (stored
    with the metrics under names that are no metric of results.scoring.metrics) is not in the
    records and is kept. Each match is rewritten in its own transaction; returns how many were."""
    computed = [*METRICS, *deviation.DEVIATION_METRICS]  # not what merchants reported
    rescored = 0
    for detail in store.match_details(engine, tournament_id):
        scores = compute_metrics(
            detail.days,
            detail.recalls,
            detail.faults,
            played.of(detail.match),
            played.collusion(detail.match),
        )
        measured = scores.merchants
        if detail.deviation is not None:
            path = detail.deviation
            measured = deviation.with_measures(measured, detail.days, path.days_played, path.probe)
        store.replace_scores(
            engine,
            detail.match_id,
            detail.results,
            measured,
            scores.market,
            scores.goals,
            scores.notes,
            computed,
        )
        rescored += 1
    return rescored
