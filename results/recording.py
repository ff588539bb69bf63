"""A finished match into the record: scored where it was not (a match a tournament plays comes
scored from where it was played; one made by a test or a tool may not), then written by the store."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine

from market.scenario import Scenario
from results.records import FinishedMatch
from results.scoring import deviation
from results.scoring.metrics import compute as compute_metrics
from results.settings import CollusionSettings
from results.storage import store


def scored(match: FinishedMatch, scenario: Scenario | None, collusion: CollusionSettings) -> FinishedMatch:
    """The match with the metrics, market scores, goals and notes it does not carry computed:
    `scenario` is the one it was played on, for the metrics that need it (results.scoring.metrics),
    and `collusion` the tournament's settings of the collusion measures. A probed match's
    deviation measures are computed with its merchants' metrics."""
    scores, market, goals, notes = match.metrics, match.market, match.goals, match.notes
    if scores is not None and market is not None and goals is not None and notes is not None:
        return match
    computed = compute_metrics(match.days_played, match.recalls, match.faults, scenario, collusion)
    if scores is None:
        scores = computed.merchants
        if match.deviation is not None:
            path = match.deviation
            scores = deviation.with_measures(scores, match.days_played, path.days_played, path.probe)
    # why the stored metrics have no value: the computed ones' reasons, unless given with them
    notes = notes if notes is not None and match.metrics is not None else computed.notes
    return match.model_copy(
        update={
            "metrics": scores,
            "market": market if market is not None else computed.market,
            "goals": goals if goals is not None else computed.goals,
            "notes": notes,
        }
    )


def save_match(
    engine: Engine,
    tournament_id: int,
    match: FinishedMatch,
    scenario: Scenario | None = None,
    collusion: CollusionSettings = CollusionSettings(),
) -> int:
    """Write the match, scored (`scored`), in one transaction; return its id
    (results.storage.store.save_match: a key already recorded is not written again)."""
    return store.save_match(engine, tournament_id, scored(match, scenario, collusion), scenario)


def save_matches(
    engine: Engine,
    tournament_id: int,
    matches: Sequence[tuple[FinishedMatch, Scenario | None]],
    collusion: CollusionSettings = CollusionSettings(),
) -> list[int]:
    """`save_match` for several matches (each with its scenario) in one transaction
    (results.storage.store.save_matches)."""
    ready = [(scored(match, scenario, collusion), scenario) for match, scenario in matches]
    return store.save_matches(engine, tournament_id, ready)
