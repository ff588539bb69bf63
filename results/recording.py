"""A finished match into the record: scored where it was not (a match a tournament plays comes
scored from where it was played; one made by a test or a tool may not), then written by the store."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine

from common.conduct import CONDUCT
from market.scenario import Scenario
from results.presentation.conduct_tables import stored_conduct
from results.records import FinishedMatch, MerchantConduct
from results.scoring import deviation
from results.scoring.metrics import compute as compute_metrics
from results.settings import CollusionSettings
from results.storage import store
from results.storage.judgements import judging, match_conducts, save_match_conduct
from results.storage.schema import stored_id


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


def record_conduct(engine: Engine, match_id: int) -> bool:
    """Keep a judged match's conduct seat by seat (results.storage.judgements.save_match_conduct),
    once every judge of its tournament's latest judging has judged it: a seat whose merchant
    said nothing counts as judged, with nothing. False where it is not judged by them all yet."""
    detail = store.match_detail(engine, match_id, with_calls=False)
    conduct = stored_conduct(engine, detail)
    judged_by = judging(engine, detail.match.tournament_id)
    if conduct is None or judged_by is None:
        return False
    silent = MerchantConduct(labels=dict.fromkeys(CONDUCT, 0))
    seats = [(r.contestant, r.merchant, conduct.merchants.get(r.merchant, silent)) for r in detail.results]
    save_match_conduct(engine, match_id, judged_by, seats)
    return True


def record_tournament_conduct(engine: Engine, tournament_id: int) -> None:
    """`record_conduct` for every match of the tournament whose kept conduct is missing or was
    combined by other judges (a later audit's, or another majority)."""
    kept = match_conducts(engine, [tournament_id])
    for match in store.list_matches(engine, tournament_id):
        if stored_id(match.id) not in kept:
            record_conduct(engine, stored_id(match.id))
