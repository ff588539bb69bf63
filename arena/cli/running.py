"""The commands that play: `run` a tournament, `replicate` a published experiment,
`validate` a file (and foresee its calls) before playing it, and `audit` a stored tournament's
words with judges."""

from __future__ import annotations

import json
import socket
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from arena.cli.application import ARENA, command
from arena.cli.exits import (
    EXIT_BROKEN_MODEL,
    EXIT_BUDGET,
    EXIT_DATABASE,
    EXIT_NOT_REPRODUCED,
    EXIT_USER_ERROR,
    user_errors,
)
from arena.cli.options import DbOption, JsonOption, with_db
from arena.cli.people import RunShown
from arena.cli.printing import drawn, err, err_print, out, out_print, warning
from arena.cli.progress import shown_progress
from arena.cli.selection import tournament_title
from common.errors import UserError
from common.serving import listening
from common.yaml_files import load_model
from contestants.base import RunOptions
from contestants.calls.coordinator import Status
from contestants.kinds import contestant_class, validate_params
from results.presentation import conduct_tables, views
from results.settings import ConductSettings
from results.storage import store
from results.storage.db import describe_failure, engine_for
from results.storage.schema import LARGEST_ID
from tournaments.conduct import JudgingProgress, checked_judges, judge_under_budget
from tournaments.config import MAX_DAYS, MAX_REPETITIONS, Tournament, TournamentSpec, stored_tournament
from tournaments.load import load_tournament
from tournaments.plan import people_of
from tournaments.schedule import MatchSpec, schedule

if TYPE_CHECKING:  # the runner imports Ray, which only a run needs
    from tournaments.estimate import Estimate, Estimates
    from tournaments.replication import Pack
    from tournaments.run import RunSummary


@command("run tournaments/round_robin.yaml")
def run(
    config: Annotated[
        Path, typer.Argument(metavar="CONFIG", help="Tournament YAML file.", show_default=False)
    ],
    db: DbOption = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue the latest unfinished run of this file, skipping finished matches."
        ),
    ] = False,
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            metavar="ADDR",
            help="Join the Ray cluster at ADDR (else $RAY_ADDRESS, else start a local one).",
            show_default=False,
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Language models answer afresh: their response cache is neither read nor written.",
        ),
    ] = False,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Play nothing: foresee the model calls, tokens and cost "
            f"(as `{ARENA} validate --estimate`).",
        ),
    ] = False,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="Where people's pages are served, if the file seats people (kind: human): this "
            "machine alone by default; 0.0.0.0 for every machine that can reach it (a classroom).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="N", min=0, max=65535, help="The people's pages' port (0: any free one)."
        ),
    ] = 0,
) -> None:
    """Play a tournament and print its table.

    Every finished match is saved at once, so an interrupted run loses only the matches in
    flight: run again with --resume to finish it. A file that seats people prints a link for
    each of them before the first match, and plays once all have taken their seats (docs/people.md).
    """
    if estimate:
        validate(config, estimate=True)
        return
    with user_errors():
        tournament = load_tournament(config)
        listener = listening(host, port) if people_of(tournament) else None  # before the database is made
        engine = engine_for(db)
    typed = f"{ARENA} run {config}"
    try:
        summary = _play(tournament, engine, typed, db, resume, address, no_cache, listener, host)
    finally:
        if listener is not None:
            listener.close()
    title = tournament_title(store.get_tournament(engine, summary.tournament_id))
    out.print(drawn(views.leaderboard_table(summary.table, title)))
    if tournament.spec.conduct is not None:  # apart from the merchants', whose are in the table
        judging = store.tournament_calls(engine, summary.tournament_id, purpose="judge")
        out_print(f"The judges' calls: {conduct_tables.CallsTaken.of(judging).line()}.")
    if summary.ended:
        out_print(
            f"Adaptive schedule ended after {summary.played + summary.skipped} matches: {summary.ended}."
        )
    _stopped(summary, typed, engine, db)


def _play(
    tournament: Tournament,
    engine: Engine,
    typed: str,
    db: str | None,
    resume: bool,
    address: str | None,
    no_cache: bool,
    listener: socket.socket | None = None,
    host: str = "127.0.0.1",
) -> RunSummary:
    """`tournament` played with progress on stderr (`typed` is how the user ran it, to say
    how to resume), its people's pages served on `listener` (bound on `host`) if it seats
    people; one line and the exit status for an interrupt, a database gone, a broken model."""
    from tournaments.run import run_tournament  # imports Ray: only when a tournament is really played

    again = _again(typed, engine, db)
    try:
        with user_errors(), shown_progress() as progress:
            summary = run_tournament(
                tournament,
                engine,
                resume=resume,
                address=address,
                observer=RunShown(progress, listener, host),
                options=RunOptions(no_cache=no_cache),
            )
    except KeyboardInterrupt:
        err_print(f"interrupted: finished matches are saved; `{again}` plays the rest")
        raise typer.Exit(130) from None
    except OperationalError as exc:  # the database went away, and stayed away (storage.db.reconnecting)
        err_print(
            f"error: {describe_failure(engine, exc)}; the matches stored before are kept: "
            f"once it is back, `{again}` plays the rest"
        )
        raise typer.Exit(EXIT_DATABASE) from None
    if summary.broken:
        err_print(f"error: {summary.stopped}; finished matches are saved: fix it, then `{again}`")
        raise typer.Exit(EXIT_BROKEN_MODEL)
    if summary.resumed:
        out.print(f"Resumed tournament {summary.tournament_id}: {summary.skipped} matches were already done.")
    return summary


def _again(typed: str, engine: Engine, db: str | None) -> str:
    """The command that plays the rest of a run typed as `typed`."""
    return with_db(f"{typed} --resume", engine, db)


def _stopped(summary: RunSummary, typed: str, engine: Engine, db: str | None) -> None:
    """Exit with EXIT_BUDGET, saying so, if the budget stopped the run."""
    if summary.stopped:
        left = "the matches not played are" if not summary.played_all else "the matches not judged are"
        err_print(
            f"Stopped: {summary.stopped}; {left} left for "
            f"`{_again(typed, engine, db)}`"
            + (" (raise the budget first)." if "budget" in summary.stopped else ".")
        )
        raise typer.Exit(EXIT_BUDGET)


_StoredRunOption = Annotated[
    int | None,
    typer.Option(
        "--tournament",
        metavar="ID",
        min=1,
        max=LARGEST_ID,
        help="Compare this stored run of the pack instead of playing it.",
        show_default=False,
    ),
]
_ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="NAME",
        help="Play its language-model merchants with this model.",
        show_default=False,
    ),
]
_DaysOption = Annotated[
    int | None,
    typer.Option(
        "--days",
        metavar="N",
        min=1,
        max=MAX_DAYS,
        help="Play matches of this many days (a shorter try).",
        show_default=False,
    ),
]
_RepetitionsOption = Annotated[
    int | None,
    typer.Option(
        "--repetitions",
        metavar="N",
        min=1,
        max=MAX_REPETITIONS,
        help="Play this many sessions per cell.",
        show_default=False,
    ),
]


@command("replicate calvano-baseline")
def replicate(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="A replication pack (see --list).", show_default=False),
    ] = None,
    list_packs: Annotated[
        bool, typer.Option("--list", help="List the packs and what they reproduce.")
    ] = False,
    db: DbOption = None,
    tournament: _StoredRunOption = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the latest unfinished run of the pack.")
    ] = False,
    model: _ModelOption = None,
    days: _DaysOption = None,
    repetitions: _RepetitionsOption = None,
    address: Annotated[
        str | None,
        typer.Option("--address", metavar="ADDR", help="Join the Ray cluster at ADDR.", show_default=False),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Language models answer afresh (no response cache).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Play a published experiment and print, for each figure it reported, the published value,
    arena's mean with its 95% interval over the sessions, whether that mean falls within the
    figure's band (exit status 6 if one does not), and whether the published value lies in
    arena's interval. The figures and their sources: docs/replications.md."""
    from tournaments.replication import load_pack

    if list_packs or name is None:
        _list_packs(listed=list_packs, named=name is not None, as_json=as_json)
        return
    with user_errors():
        pack = load_pack(name)
        played = _pack_played(pack, tournament, resume, model, days, repetitions)
        engine = engine_for(db, create=tournament is None)
    if played is not None:
        typed = f"{ARENA} replicate {name}" + "".join(
            f" --{flag} {value}"
            for flag, value in (("model", model), ("days", days), ("repetitions", repetitions))
            if value is not None
        )
        summary = _play(played, engine, typed, db, resume, address, no_cache)
        _stopped(summary, typed, engine, db)
        tournament = summary.tournament_id
    assert tournament is not None  # given, or just played
    _compared(pack, engine, tournament, as_json)


def _list_packs(listed: bool, named: bool, as_json: bool) -> None:
    """The packs and what each reproduces (--list); a mistake if the command names no pack."""
    from tournaments.replication import load_pack, packs

    if not named and not listed:
        err.print(f"error: name a pack ({ARENA} replicate --list shows them)", markup=False, highlight=False)
        raise typer.Exit(EXIT_USER_ERROR)
    with user_errors():
        shown = [load_pack(known) for known in packs()]
    if as_json:
        print(
            json.dumps(
                [{"name": p.name, "title": p.figures.title, "source": p.figures.source} for p in shown],
                indent=2,
            )
        )
    else:
        for each in shown:
            out_print(f"{each.name}: {each.figures.title} ({len(each.figures.figures)} figures)")


def _pack_played(
    pack: Pack,
    tournament: int | None,
    resume: bool,
    model: str | None,
    days: int | None,
    repetitions: int | None,
) -> Tournament | None:
    """The pack's tournament as it is to be played, checked before the database is made; None
    where --tournament names a stored run to compare instead (with nothing said of playing)."""
    from tournaments.replication import check_cells, played_text

    shorter = [
        flag
        for flag, value in (("--days", days), ("--repetitions", repetitions), ("--model", model))
        if value
    ]
    if tournament is not None:
        if shorter or resume:
            raise UserError(
                f"{(shorter or ['--resume'])[0]}: says how to play the pack; --tournament plays nothing"
            )
        return None
    played = load_tournament(pack.tournament, played_text(pack, days, repetitions, model))
    check_cells(pack, [cell.factors for cell in played.each_cell()])
    return played


def _compared(pack: Pack, engine: Engine, tournament: int, as_json: bool) -> None:
    """The pack's figures beside the tournament's values; EXIT_NOT_REPRODUCED if one is outside its band."""
    from tournaments.replication import compare
    from tournaments.replication_table import comparison_json, comparison_table

    with user_errors():
        compared = compare(engine, tournament, pack.figures)
    if as_json:
        print(json.dumps(comparison_json(pack.name, tournament, compared), indent=2))
    else:
        out.print(drawn(comparison_table(compared, f"{pack.figures.title} (tournament {tournament})")))
        if pack.figures.note:
            out_print(pack.figures.note)
    outside = [c.figure.name for c in compared if not c.within]
    if outside:
        err_print(f"not reproduced: {', '.join(outside)} fell outside the band")
        raise typer.Exit(EXIT_NOT_REPRODUCED)


@command("validate tournaments/round_robin.yaml --estimate")
def validate(
    config: Annotated[
        Path, typer.Argument(metavar="CONFIG", help="Tournament YAML file.", show_default=False)
    ],
    ping: Annotated[
        bool,
        typer.Option(
            "--ping",
            help="Make one small call to each distinct model, and name each that fails (exit status 4).",
        ),
    ] = False,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="Rehearse every match without calling a model: the calls, tokens and cost they will need, "
            "from one step a day to the most.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check a tournament file and its scenarios: nothing is played and nothing is written.

    --ping checks that every model answers (a key refused, a model that does not exist, a
    parameter it refuses); --estimate foresees the model calls of the whole tournament, and
    those of its `conduct:` section's judges apart.
    """
    with user_errors():
        tournament = load_tournament(config)
    matches = schedule(tournament)
    failures = _ping(tournament) if ping else []
    estimates = _estimate(tournament) if estimate else None
    if as_json:
        shown = {
            **_summary(config, tournament, matches),
            "ping": failures if ping else None,
            "estimate": [asdict(e) for e in estimates.contestants] if estimates is not None else None,
        }
        if tournament.spec.conduct is not None:  # the judges' calls, apart from the merchants'
            shown["judging"] = [_judging_row(e) for e in estimates.judges] if estimates is not None else None
        print(json.dumps(shown, indent=2))
    else:
        out_print(_ok_line(config, tournament, matches))
        for failure in failures:
            err_print(f"error: {failure['contestant']}: {failure['error']}")
        if estimates is not None:
            out.print(_estimate_table(estimates.contestants))
            if estimates.judges:
                out.print(_estimate_table(estimates.judges, judges=True))
    _estimate_warnings(estimates.contestants if estimates is not None else [])
    if failures:
        raise typer.Exit(EXIT_BROKEN_MODEL)


def _summary(config: Path, tournament: Tournament, matches: list[MatchSpec]) -> dict[str, Any]:
    """What the file plays, for --json."""
    spec = tournament.spec
    return {
        "file": str(config),
        "contestants": len(spec.contestants),
        "scenarios": len(tournament.scenarios),
        "seeds": len(spec.seed_list),
        "format": spec.format,
        "cells": len(tournament.each_cell()),
        "matches": len(matches),
        "market_days": sum(m.days for m in matches),
    }


def _ok_line(config: Path, tournament: Tournament, matches: list[MatchSpec]) -> str:
    """What the file plays, in a line."""
    spec = tournament.spec
    cells = f", {len(tournament.cells)} cells of {' x '.join(spec.sweep)}" if spec.sweep else ""
    return (
        f"{config}: ok — {len(spec.contestants)} contestants, {len(tournament.scenarios)} scenarios, "
        f"{len(spec.seed_list)} seeds, {spec.format}{cells}: "
        f"{'at most ' if spec.format == 'adaptive' else ''}{len(matches)} matches, "
        f"{sum(m.days for m in matches)} market days"
    )


def _ping(tournament: Tournament) -> list[dict[str, str]]:
    """One call per distinct model of the file's contestants, in every cell of a sweep (the
    first contestant to use it makes it); a line for each that failed."""
    failures, seen = [], set()
    for cell in tournament.each_cell():
        for i, entry in enumerate(cell.tournament.spec.contestants):
            check = contestant_class(entry.kind).ping(validate_params(entry.kind, entry.params))
            if check is None or check.key in seen:
                continue
            seen.add(check.key)
            with err.status(f"asking {check.target}"):
                problem = check.call()
            if problem is not None:
                within = f" (cell {cell.label})" if cell.label else ""
                failures.append(
                    {
                        "contestant": f"contestants[{i}] {entry.name}{within}",
                        "model": check.target,
                        "error": problem,
                    }
                )
    return failures


def _estimate(tournament: Tournament) -> Estimates:
    from tournaments.estimate import (
        estimate,
    )  # rehearses matches: imports what plays them, Ray's errors among it

    with user_errors(), err.status("rehearsing every match"):
        return estimate(tournament)


def _estimate_table(estimates: list[Estimate], judges: bool = False) -> Table:
    """tournaments.estimate.Estimate rows, every figure from one step a day to the most: of the
    contestants, or of the `judges` (one call an item, from answers of the usual size to every
    answer max_tokens long)."""
    title = (
        "the judges' model calls, one an item, apart from the merchants', from answers of the "
        "usual size to max_tokens each (estimated: see docs/conduct.md, Estimates)"
        if judges
        else "model calls the tournament will need, from one step a day to the most "
        "(estimated: see docs/tournaments.md, Before a run)"
    )
    by_purpose = [] if judges else ["by purpose"]
    table = Table("judge" if judges else "contestant", "model", "calls", *by_purpose, title=title)
    for header in ("input tokens", "output tokens", "cost $"):
        table.add_column(header)
    for e in estimates:
        purposes = [] if judges else [", ".join(f"{p} {_span(n)}" for p, n in e.by_purpose.items())]
        table.add_row(
            e.contestant,
            escape(e.model),
            _span(e.calls),
            *purposes,
            _span(e.input_tokens),
            _span(e.output_tokens),
            _cost(e),
        )
    return table


def _judging_row(estimate: Any) -> dict[str, Any]:
    """A judge's Estimate for --json: what of it applies to a judge."""
    return {
        "judge": estimate.contestant,
        **{k: getattr(estimate, k) for k in ("model", "calls", "input_tokens", "output_tokens", "cost")},
    }


def _cost(estimate: Any) -> str:
    """An estimate's cost in USD as a range, or "no price" for a model without one."""
    return "no price" if estimate.cost is None else _span(estimate.cost, "{:.4f}")


def _span(span: tuple[float, float], fmt: str = "{:,}") -> str:
    """`low to high`, or the one figure where they are the same."""
    low, high = (fmt.format(value) for value in span)
    return low if low == high else f"{low} to {high}"


def _estimate_warnings(estimates: list[Any]) -> None:
    """A line for each contestant whose rehearsal went bankrupt, and one for each whose turn
    failed on rehearsed days: its figures leave out those days (tournaments.estimate.Estimate)."""
    for e in estimates[:-1]:
        if e.bankrupt:
            warning(
                f"{e.contestant}: the rehearsal went bankrupt in {e.bankrupt} of its matches: "
                "the estimate leaves out the days after"
            )
        if e.failed:
            warning(
                f"{e.contestant}: its turn failed on {e.failed} rehearsed days (the first: {e.failure}): "
                "the estimate leaves out what they would have called"
            )


@command("audit 1 --conduct judges.yaml")
def audit(
    tournament: Annotated[
        int,
        typer.Argument(
            metavar="TOURNAMENT_ID", min=1, max=LARGEST_ID, help="The stored tournament.", show_default=False
        ),
    ],
    conduct: Annotated[
        Path | None,
        typer.Option(
            "--conduct",
            metavar="FILE",
            help="YAML of a `conduct:` section's keys (judges, majority, read); "
            "default: the tournament file's own `conduct:`.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the judges again rather than replay cached answers.")
    ] = False,
) -> None:
    """Judge a stored tournament's words after the fact, without playing it again: each judge
    reads every item of every match it has not judged yet (a judge is known by its name), so
    an audit stopped midway goes on where it stopped when run again."""
    with user_errors():
        engine = engine_for(db, create=False, writes=True)
        row = store.get_tournament(engine, tournament)
        spec = stored_tournament(row).spec  # its budget, prices and, without --conduct, its judges
        settings = _conduct_settings(tournament, spec, conduct)
        checked_judges(conduct or row.config_path, settings, store.contestant_kinds(engine, tournament))
        with shown_progress() as observer:
            options = RunOptions(no_cache=no_cache)
            done = judge_under_budget(
                engine, tournament, settings, spec, options, JudgingProgress(observer.judged)
            )
        if isinstance(done, Status):
            again = with_db(f"{ARENA} audit {tournament}", engine, db) + (
                f" --conduct {conduct}" if conduct else ""
            )
            fix = "fix it" if done.broken else "raise the budget"
            err_print(f"error: {done.stopped}; the judgements made are saved: {fix}, then `{again}`")
            raise typer.Exit(EXIT_BROKEN_MODEL if done.broken else EXIT_BUDGET)
    pairs, before = done.judged + done.skipped, f" ({done.skipped} done before)" if done.skipped else ""
    said = f"{done.items} items, {done.calls.line()}"
    out.print(f"Judged {done.judged} of {pairs} (match, judge) pairs{before}: {said}.")


def _conduct_settings(tournament: int, spec: TournamentSpec | None, conduct: Path | None) -> ConductSettings:
    """The judges of an audit: a --conduct file's, else the stored tournament file's own (`spec`,
    None where it cannot be read again)."""
    if conduct is not None:
        return load_model(conduct, ConductSettings)
    if spec is None or spec.conduct is None:
        why = "cannot be read again" if spec is None else "has no `conduct:` section"
        raise UserError(f"tournament {tournament}'s file {why}: give the judges with --conduct FILE")
    return spec.conduct
