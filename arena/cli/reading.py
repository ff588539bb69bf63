"""The commands that read the record: the `leaderboard` (and `rate`, which rates results from
elsewhere as it does), the stored `tournaments` and `matches`, and one match (`show`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy import Engine

from arena.cli.application import ARENA, command
from arena.cli.exits import user_errors
from arena.cli.options import AllOption, AnchorOption, DbOption, JsonOption, TournamentsOption, with_db
from arena.cli.printing import as_text, drawn, out, out_print
from arena.cli.selection import Selection, none_stored, scoring, select
from common.errors import UserError
from market.daylog import DayLog
from results import leaderboard
from results.presentation import conduct_tables, views
from results.presentation.conduct_tables import conduct_json, stored_conduct
from results.presentation.match_summary import (
    both_paths_table,
    calls_made_table,
    day_json,
    days_table,
    match_json,
    recalls_table,
)
from results.presentation.sweep_records import cell_records
from results.presentation.transcript import step_lines
from results.records import TranscriptRecord
from results.scoring.conduct import TOO_FEW_JUDGES, MatchConduct
from results.scoring.ratings import standings
from results.scoring.sweeps import KEY_METRICS
from results.storage import store
from results.storage.db import engine_for
from results.storage.results_csv import read_results
from results.storage.schema import LARGEST_ID, MatchRow, row_json, stored_id
from results.sweep_summary import by_cell
from tournaments.config import MAX_DAYS, load_weights

_ScenarioOption = Annotated[
    str | None,
    typer.Option("--scenario", metavar="NAME", help="Only matches of this scenario.", show_default=False),
]
_ContestantsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--contestant",
        metavar="NAME",
        help="Only matches where two of these met, and their solo ones; only their seats (repeatable).",
        show_default=False,
    ),
]
_WeightsOption = Annotated[
    Path | None,
    typer.Option(
        "--weights",
        metavar="FILE",
        help="YAML weights of the composite score (default: the tournament's scoring: section).",
        show_default=False,
    ),
]
_ByOption = Annotated[
    list[str] | None,
    typer.Option(
        "--by",
        metavar="FACTOR",
        help="A sweep's factor (as named in its file, e.g. qlearning.alpha): instead of ratings, a "
        "row per value with each metric's mean over its sessions (seeds) and its 95% interval "
        "(repeatable: a row per combination). Reads one tournament.",
        show_default=False,
    ),
]
_MetricsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        metavar="NAME",
        help="Instead of ratings, each metric's mean over the sessions (seeds) and its 95% interval, "
        f"by cell of a sweep (repeatable; with --by, default: {', '.join(KEY_METRICS)}). "
        "Reads one tournament.",
        show_default=False,
    ),
]


@command("leaderboard --tournament 1 --tournament 2", name="leaderboard")
def leaderboard_command(
    db: DbOption = None,
    tournament: TournamentsOption = None,
    pool_all: AllOption = False,
    scenario: _ScenarioOption = None,
    contestant: _ContestantsOption = None,
    anchor: AnchorOption = None,
    weights: _WeightsOption = None,
    by: _ByOption = None,
    metric: _MetricsOption = None,
    as_json: JsonOption = False,
) -> None:
    """The table of the latest tournament, of those named, or of all of them pooled (--all):
    rating with 95% interval and rank, online Elo, results, validity, memory error, tokens, cost
    and the composite score. Its title says which tournament it reads, or how many it pools.

    With --by, a sweep's results by cell instead (see docs/tournaments.md, "Sweeps")."""
    with user_errors():
        engine = engine_for(db, create=False)
        chosen_weights = load_weights(weights) if weights is not None else None
        chosen = select(engine, db, tournament, pool_all)
    if by or metric:
        _sweep_leaderboard(engine, chosen, by or [], metric or [], as_json)
        return
    with user_errors():
        composite, confidence = scoring(chosen, chosen_weights)
        rows = leaderboard.leaderboard(
            engine,
            chosen.ids,
            scenario=scenario,
            contestants=contestant or None,
            anchor=anchor,
            weights=composite,
            confidence=confidence,
        )
        ended = {t: store.run_end(engine, t) for t in chosen.ids}
        agreements = {
            t: found for t in chosen.ids if (found := conduct_tables.tournament_agreement(engine, t))
        }
    if as_json:
        agreement = {str(t): {k: a.model_dump() for k, a in found.items()} for t, found in agreements.items()}
        whole = {**chosen.as_json(), "rows": views.leaderboard_records(rows), "agreement": agreement}
        print(json.dumps(whole, indent=2))
        return
    title = chosen.title() + (f", scenario {scenario}" if scenario else "")
    out.print(drawn(views.leaderboard_table(rows, title)))
    for tournament_id, found in agreements.items():
        if any(a.why != TOO_FEW_JUDGES for a in found.values()):
            whose = "" if len(chosen.ids) == 1 else f"Tournament {tournament_id}: "
            out_print(whose + conduct_tables.agreement_line(found) + ".")
    for tournament_id, reason in ended.items():
        if reason:
            whose = "Its run" if len(chosen.ids) == 1 else f"Tournament {tournament_id}'s run"
            out_print(f"{whose} ended early: {reason}.")
    if note := chosen.note():
        out_print(note)


def _sweep_leaderboard(
    engine: Engine, chosen: Selection, by: list[str], metrics: list[str], as_json: bool
) -> None:
    with user_errors():
        if len(chosen.tournaments) != 1:
            raise UserError("--by and --metric read one tournament's matches: give one --tournament ID")
        cells = by_cell(engine, chosen.ids[0], by, metrics)
    if as_json:
        print(json.dumps({**chosen.as_json(), "cells": cell_records(cells)}, indent=2))
    else:
        grouped = f" by {', '.join(by)}" if by else " by cell" if cells[0].factors else ""
        out.print(drawn(views.sweep_table(cells, f"{chosen.title()}{grouped}")))


@command("rate results.csv --anchor baseline")
def rate(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help="CSV with columns match, contestant, and rank or score (higher better).",
            show_default=False,
        ),
    ],
    anchor: AnchorOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rate results from elsewhere the way the leaderboard rates stored matches."""
    with user_errors():
        rows = standings(read_results(results), anchor=anchor)
    if as_json:
        print(json.dumps([row.model_dump() for row in rows], indent=2))
    else:
        out.print(drawn(views.standings_table(rows, str(results))))


@command("tournaments")
def tournaments(db: DbOption = None, as_json: JsonOption = False) -> None:
    """The stored tournaments, oldest first: id, name, the file each was played from, status
    (running, finished or stopped), matches stored of those planned, when it started and ended,
    and the command that shows its leaderboard."""
    with user_errors():
        engine = engine_for(db, create=False)
        stored = store.list_tournaments(engine)
        if not stored:
            raise none_stored(engine)
        counts = store.match_counts(engine)
    listed = [
        views.ListedTournament(
            t,
            counts.get(stored_id(t.id), 0),
            with_db(f"{ARENA} leaderboard --tournament {t.id}", engine, db),
        )
        for t in stored
    ]
    if as_json:
        print(json.dumps([entry.as_json() for entry in listed], indent=2))
    else:
        out.print(drawn(views.tournaments_table(listed, "tournaments")))


@command("matches --tournament 2")
def matches(
    db: DbOption = None,
    tournament: TournamentsOption = None,
    pool_all: AllOption = False,
    as_json: JsonOption = False,
) -> None:
    """The stored matches of the latest tournament, of those named, or of all (--all), in the
    order they were scheduled: their ids (for `arena show`), scenarios, seeds and keys."""
    with user_errors():
        engine = engine_for(db, create=False)
        chosen = select(engine, db, tournament, pool_all)
        rows = store.list_matches(engine, chosen.ids)
    if as_json:
        print(json.dumps([row_json(row) for row in rows], indent=2))
        return
    out.print(_matches_table(rows, chosen.title()))
    if note := chosen.note():
        out_print(note)


def _matches_table(rows: Sequence[MatchRow], title: str) -> Table:
    table = Table("id", "tournament", "#", "scenario", "seed", "days", "key", "seconds", title=escape(title))
    for row in rows:
        table.add_row(
            str(row.id),
            str(row.tournament_id),
            str(row.index),
            row.scenario,
            str(row.seed),
            str(row.days),
            row.key,
            f"{row.wall_seconds:.2f}",
        )
    return table


@command("show 1 --day 3")
def show(
    match_id: Annotated[
        int,
        typer.Argument(
            metavar="MATCH_ID",
            min=1,
            max=LARGEST_ID,
            help=f"Match id (see `{ARENA} matches`).",
            show_default=False,
        ),
    ],
    day: Annotated[
        int | None,
        typer.Option(
            "--day",
            metavar="N",
            min=1,
            max=MAX_DAYS,
            help="Show one day: each merchant's record and every step of its model calls (what "
            "was sent, the answer, the reasoning shown, tool calls and their results).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One match: its results and metrics, the messages its merchants sent, then a day-by-day
    table of every merchant; with --day, that day in full."""
    with user_errors():
        engine = engine_for(db, create=False)
        detail = store.match_detail(engine, match_id)
        if day is not None:
            if not any(d.day == day for d in detail.days):
                last = max((d.day for d in detail.days), default=0)
                raise UserError(f"--day: match {match_id} has no day {day} (its days: 1 to {last})")
            _show_day(detail, day, store.transcript(engine, match_id, day), as_json)
            return
        stored = store.metrics(engine, match_id=match_id)
        metrics = views.by_merchant((value.merchant, value.name, value.value) for value in stored)
        noted = views.metric_notes((value.merchant, value.name, value.note) for value in stored)
        conduct = stored_conduct(engine, detail)
    if as_json:
        shown = match_json(detail, metrics)
        print(json.dumps(shown | ({"conduct": conduct_json(conduct)} if conduct else {}), indent=2))
    else:
        _show_match(detail, metrics, noted)
        if conduct is not None:
            _show_conduct(detail, conduct)


def _show_match(
    detail: store.MatchDetail, metrics: dict[str, dict[str, float | None]], noted: dict[tuple[str, str], str]
) -> None:
    """The match's tables, those of views as the report shows them, the rest of its record
    (calls made, recall questions, day by day) cutting a word too long for its column short."""
    contestants = {r.merchant: r.contestant for r in detail.results}
    out.print(drawn(views.results_table(detail.match, detail.results, detail.people)))
    if metrics:
        out.print(drawn(views.metrics_table(metrics, contestants, noted)))
    else:
        out.print(
            f"No metrics stored for this match: `{ARENA} rescore` computes them.",
            markup=False,
            highlight=False,
        )
    if detail.goals:
        out.print(drawn(views.goals_table(detail.goals, contestants)))
    if detail.market.metrics:
        out.print(drawn(views.market_table(detail.market, detail.notes)))
    if detail.deviation is not None:
        _show_deviation(detail, metrics)
    if detail.calls:
        out.print(drawn(views.calls_table(detail.calls)), drawn(calls_made_table(detail.calls), "ellipsis"))
    if detail.recalls:
        out.print(drawn(recalls_table(detail.recalls), "ellipsis"))
    said = detail.days.said()
    if said:
        out.print(drawn(views.messages_table(said, "messages (each read by the rivals the next day)")))
    if detail.days.competitors is not None:
        out.print(drawn(views.competitors_table(detail.days.competitors, detail.days.products)))
    out.print(drawn(days_table(detail), "ellipsis"))


def _show_conduct(detail: store.MatchDetail, conduct: MatchConduct) -> None:
    """What the judges made of the match's words: its verdict, the words they labelled, each
    merchant's counts, its claims as checked, and how far they agreed (two judges or more)."""
    contestants = {r.merchant: r.contestant for r in detail.results}
    out.print(conduct_tables.verdict_line(conduct), markup=False, highlight=False)
    labelled = conduct_tables.labelled_table(conduct)
    tables = [labelled] if labelled.sections[0] else []  # none labelled: the counts say so
    tables.append(conduct_tables.merchants_table(conduct.merchants, contestants))
    if conduct.claims:
        tables.append(conduct_tables.claims_table(conduct))
    if len(conduct.judges) > 1:
        tables.append(conduct_tables.agreement_table(conduct.agreement))
    out.print(*(drawn(table, "ellipsis") for table in tables))


def _show_deviation(detail: store.MatchDetail, metrics: dict[str, dict[str, float | None]]) -> None:
    """The probe's measures, a column per merchant; then both paths' prices from the day
    before the deviation to the end, and the messages on the deviated path."""
    path = detail.deviation
    assert path is not None
    measures = views.deviation_table(path, [r.merchant for r in detail.results], metrics)
    said = [m for m in DayLog.of(path.days_played).said() if m.day >= path.probe.day]
    messages = views.messages_table(said, f"messages on the deviated path, from day {path.probe.day}")
    out.print(
        drawn(measures), drawn(both_paths_table(detail), "ellipsis"), *([drawn(messages)] if said else [])
    )


def _show_day(detail: store.MatchDetail, day: int, transcript: list[TranscriptRecord], as_json: bool) -> None:
    """One day of a match: each merchant's record, then what its model calls said and heard."""
    if as_json:
        print(json.dumps(day_json(detail, day, transcript), indent=2, ensure_ascii=False))
        return
    for d in (d for d in detail.days if d.day == day):
        done = "; ".join(json.dumps(op) for op in d.operations) or "nothing"
        refused = "".join(f"\n  refused: {r.reason}" for r in d.rejections)
        out.print(
            f"[bold]{as_text(d.merchant)}[/bold], day {day}: {as_text(done + refused)}", highlight=False
        )
    if not transcript:
        out.print("No model calls this day.", markup=False, highlight=False)
    for merchant in dict.fromkeys(step.merchant for step in transcript):
        table = Table("step", "who", "said", title=f"{as_text(merchant)}: day {day}", show_lines=True)
        for step in (s for s in transcript if s.merchant == merchant):
            for line, (who, what) in enumerate(step_lines(step)):
                table.add_row("" if line else f"{step.step} {step.purpose}", who, as_text(what))
        out.print(table)
