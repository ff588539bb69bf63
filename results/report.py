"""`arena report`: a tournament read from the record, its leaderboard and sweep computed, and
its page rendered (results.presentation.report_page) and written; the viewer shows the same
sweep section (`sweep_part`) and a match's conduct the same way (`conduct_part`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine

from results import leaderboard, sweep_summary
from results.presentation import report_page
from results.presentation.conduct_tables import stored_conduct
from results.presentation.report_page import ConductPart, ReportRecord, SweepPart
from results.records import PlayedScenarios
from results.scoring.composite import ScoringWeights
from results.scoring.rating_fit import LEVEL
from results.storage import store
from results.storage.judgements import judging


def write_report(
    engine: Engine,
    tournament_id: int,
    out: Path,
    scenarios: PlayedScenarios,
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
    sweep_metric: str | None = None,
    confidence: float = LEVEL,
) -> None:
    """Render the report and write it to `out` in one step: a failure leaves no partial file.

    `scenarios` give each match's events to mark, read again from the files the tournament
    named (events are not in the record); `scenario_notes` say which could not be read (see
    tournaments.config.StoredTournament.scenarios); `weights` are the leaderboard's scoring
    weights; `sweep_metric` the metric of a sweep's heat map (sweep_part). Raises NotFound for
    an unknown tournament or metric, ReportError when `out` cannot be written."""
    page = build_report(engine, tournament_id, scenarios, scenario_notes, weights, sweep_metric, confidence)
    report_page.write_page(out, page)


def build_report(
    engine: Engine,
    tournament_id: int,
    scenarios: PlayedScenarios,
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
    sweep_metric: str | None = None,
    confidence: float = LEVEL,
) -> str:
    """The report's page; its table weighs the composite with `weights` and judges ties at
    `confidence` (the tournament file's)."""
    tournament = store.get_tournament(engine, tournament_id)
    return report_page.render(
        ReportRecord(
            tournament=tournament,
            rows=leaderboard.leaderboard(engine, tournament_id, weights=weights, confidence=confidence),
            kinds=store.contestant_kinds(engine, tournament_id),
            metrics=store.metrics(engine, tournament_id),
            details=store.match_details(engine, tournament_id),
            rankings=leaderboard.rankings(engine, tournament_id, weights.objective == "goals"),
            ended=store.run_end(engine, tournament_id),
            calls=store.tournament_calls(engine, tournament_id),
            sweep=sweep_part(engine, tournament_id, sweep_metric),
            scenarios=scenarios,
            scenario_notes=scenario_notes,
            conduct=lambda detail: conduct_part(engine, detail),
        )
    )


def conduct_part(engine: Engine, detail: store.MatchDetail) -> ConductPart | None:
    """A stored match's conduct as the report and the viewer show it: None where its
    tournament has never been judged (nothing of conduct is shown), "not judged yet"
    (ConductPart without conduct) where the judges of its latest judging have not all judged
    the match, else what they made of it (results.presentation.conduct_tables.stored_conduct)."""
    if judging(engine, detail.match.tournament_id) is None:
        return None
    contestants = {r.merchant: r.contestant for r in detail.results}
    return report_page.conduct_section(stored_conduct(engine, detail), contestants)


def sweep_part(engine: Engine, tournament_id: int, metric: str | None = None) -> SweepPart | None:
    """The tournament's sweep as the report and the viewer show it (None without one), its heat
    map of `metric` (default: report_page.key_metric). UnknownName for a metric arena does not
    compute."""
    cells = store.sweep_cells(engine, tournament_id)
    if not cells:
        return None
    every_cell = sweep_summary.by_cell(engine, tournament_id)
    metric = report_page.key_metric(every_cell) if metric is None else metric
    sweep_summary.check_metric(engine, tournament_id, metric)
    varying = report_page.varying_factors(cells)
    grouped = sweep_summary.by_cell(engine, tournament_id, varying[:2], [metric]) if len(varying) > 1 else []
    return report_page.sweep_section(every_cell, metric, varying, grouped)
