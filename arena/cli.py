"""The `arena` command: run tournaments and read their results.

Thin on purpose: parse, call tournaments/ and results/, print. A mistake the user can fix
prints one line (file, field, problem) and exits with status 2.
"""

from __future__ import annotations

import datetime
import json
import secrets
import sys
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from typer.core import TyperCommand, TyperGroup, TyperOption

from common.errors import UserError
from contestants.base import RunOptions
from contestants.kinds import contestant_class, validate_params
from market.daylog import DayLog
from market.scenario import load_scenario
from results.errors import DatabaseError, InputFileError, NotFound
from results.presentation import views
from results.presentation.report import write_report
from results.presentation.transcript import step_lines
from results.records import ModelCallRecord, PlayedScenarios, TranscriptRecord, shown_value
from results.scoring.composite import ScoringWeights
from results.scoring.rating_fit import LEVEL
from results.scoring.ratings import standings
from results.scoring.sweeps import KEY_METRICS, by_cell
from results.storage import store
from results.storage.db import describe_failure, engine_for
from results.storage.results_csv import read_results
from results.storage.schema import LARGEST_ID, TournamentRow, stored_id
from tournaments.config import (
    MAX_DAYS,
    MAX_MERCHANTS_PER_MATCH,
    MAX_REPETITIONS,
    ConfigError,
    StoredTournament,
    Tournament,
    load_weights,
    played_scenarios,
    stored_tournament,
)
from tournaments.load import load_tournament
from tournaments.schedule import schedule

if TYPE_CHECKING:  # the runner imports Ray, which only a run needs
    from tournaments.replication import Comparison
    from tournaments.run import RunSummary


ARENA = "uv run arena"  # how a command is typed: from the clone, with no install step


class _HelpTakesNoValue:
    """Typer's rich help would print `<bool>` beside `--help` as if it took a value."""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        _no_value_shown([option])
        return option


class _FlagsTakeNoValue(_HelpTakesNoValue, TyperCommand):
    """A command whose help shows no value beside a flag (`--json`), `--help` included."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _no_value_shown(self.params)


def _no_value_shown(params: Iterable[object]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""  # what the help shows for the option's value


class _OneLineErrors(_HelpTakesNoValue, TyperGroup):
    """The `arena` command: a mistake in its options or arguments that Typer finds itself (a
    number out of its range, a choice it does not offer, an unknown option or command, one
    missing) is one line and exit status 2, as every mistake a user can fix is, not a usage box.
    `arena` alone still shows the help."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        given = list(sys.argv[1:] if args is None else args)
        if not standalone_mode or not given:
            return super().main(given, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            status = super().main(given, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:  # what Typer's parser raises: a usage error
            _error_line(_usage_problem(exc))
            sys.exit(getattr(exc, "exit_code", EXIT_USER_ERROR))
        except typer.Abort:
            err.print("Aborted!", markup=False, highlight=False)
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


def _usage_problem(exc: typer.TyperException) -> str:
    """A usage error in one line, naming the option or argument as the usage line shows it (an
    argument by its metavar): `--day: Input should be ...`, `MATCH_ID: Input should be ...`."""
    if isinstance(exc, typer.BadParameter) and exc.param is not None and exc.message:
        named = exc.param.get_error_hint().replace("'", "")
        problem = f"{named}: {exc.message.removeprefix('Value error, ')}"
    else:
        problem = exc.format_message()
    return " ".join(problem.split())


app = typer.Typer(
    cls=_OneLineErrors,
    help="Tournaments of merchant agents in one shared market, recorded in SQLite and rated on the Elo "
    "scale.\n\n"
    "Start with: uv run arena run tournaments/round_robin.yaml\n\n"
    "An interrupted run continues with: uv run arena run FILE --resume. "
    "To play on an existing Ray cluster: uv run arena run FILE --address ADDR.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # a docstring's paragraphs are rewrapped to the terminal, not broken where the source is
    rich_markup_mode="markdown",
    epilog=f"Example: `{ARENA} run tournaments/round_robin.yaml`",
)


def _command(example: str, name: str | None = None) -> Any:
    """Register an `arena` command whose help ends with `example` (its arguments after
    `uv run arena`)."""
    return app.command(name, cls=_FlagsTakeNoValue, epilog=f"Example: `{ARENA} {example}`")


# Piped into a file or another program, rich would squeeze tables into 80 columns, leaving
# "…" for numbers; a log reads better with whole lines.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True)

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="URL",
        help="SQLAlchemy database URL; default: $ARENA_DB, else sqlite:///arena.db",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")]
TournamentsOption = Annotated[
    list[int] | None,
    typer.Option(
        "--tournament",
        min=1,
        max=LARGEST_ID,
        metavar="ID",
        help=f"This tournament's matches (repeat it to pool several; `{ARENA} tournaments` lists them); "
        "default: the latest tournament.",
        show_default=False,
    ),
]
AllOption = Annotated[bool, typer.Option("--all", help="Every stored tournament's matches, pooled.")]

EXIT_USER_ERROR = 2  # a mistake in a file or an option
EXIT_BUDGET = 3  # the budget stopped the run: what was played is saved and shown
EXIT_BROKEN_MODEL = 4  # a contestant's model refused its calls (the run, or `validate --ping`)
EXIT_DATABASE = 5  # the database failed during the run
EXIT_NOT_REPRODUCED = 6  # `arena replicate`: a figure fell outside its band


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a mistake the user can fix into one line on stderr and exit status 2."""
    try:
        yield
    except UserError as exc:
        _error_line(str(exc))
        raise typer.Exit(EXIT_USER_ERROR) from None


def _error_line(problem: str) -> None:
    """`error: problem` on stderr, the problem printed as it is (never as rich markup)."""
    err.print(f"[bold red]error:[/] {escape(problem)}", highlight=False, markup=True, soft_wrap=True)


@_command("run tournaments/round_robin.yaml")
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
            "(as `uv run arena validate --estimate`).",
        ),
    ] = False,
) -> None:
    """Play a tournament and print its table.

    Every finished match is saved at once, so an interrupted run loses only the matches in
    flight: run again with --resume to finish it.
    """
    if estimate:
        validate(config, estimate=True)
        return
    with user_errors():
        tournament = load_tournament(config)
        engine = engine_for(db)
    summary = _play(tournament, engine, f"{ARENA} run {config}", db, resume, address, no_cache)
    title = _title(store.get_tournament(engine, summary.tournament_id))
    out.print(_rich(views.leaderboard_table(summary.table, title)))
    if summary.ended:
        out.print(
            f"Adaptive schedule ended after {summary.played + summary.skipped} matches: {summary.ended}.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    _stopped(summary, f"uv run arena run {config}", engine, db)


def _play(
    tournament: Tournament,
    engine: Engine,
    command: str,
    db: str | None,
    resume: bool,
    address: str | None,
    no_cache: bool,
) -> RunSummary:
    """`tournament` played with progress on stderr (`command` is how the user ran it, to say
    how to resume); one line and the exit status for an interrupt, a database gone, a broken
    model."""
    from tournaments.run import run_tournament  # imports Ray: only when a tournament is really played

    again = _again(command, engine, db)
    try:
        with user_errors(), _progress() as observer:
            options = RunOptions(no_cache=no_cache)
            summary = run_tournament(
                tournament, engine, resume=resume, address=address, observer=observer, options=options
            )
    except KeyboardInterrupt:
        err.print(
            f"interrupted: finished matches are saved; `{again}` plays the rest",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except (
        OperationalError
    ) as exc:  # the database went away, and stayed away (results.storage.db.reconnecting)
        err.print(
            f"error: {describe_failure(engine, exc)}; the matches stored before are kept: "
            f"once it is back, `{again}` plays the rest",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_DATABASE) from None
    if summary.broken:
        err.print(
            f"error: {summary.stopped}; finished matches are saved: fix it, then `{again}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_BROKEN_MODEL)
    if summary.resumed:
        out.print(f"Resumed tournament {summary.tournament_id}: {summary.skipped} matches were already done.")
    return summary


def _again(command: str, engine: Engine, db: str | None) -> str:
    """The command that plays the rest of a run of `command`."""
    return _with_db(f"{command} --resume", engine, db)


def _with_db(command: str, engine: Engine, db: str | None) -> str:
    """`command` with the --db the user gave (its password hidden)."""
    return command + (f" --db {engine.url.render_as_string(hide_password=True)}" if db else "")


def _stopped(summary: RunSummary, command: str, engine: Engine, db: str | None) -> None:
    """Exit with EXIT_BUDGET, saying so, if the budget stopped the run."""
    if summary.stopped:
        err.print(
            f"Stopped: {summary.stopped}; the matches not played are left for "
            f"`{_again(command, engine, db)}`"
            + (" (raise the budget first)." if "budget" in summary.stopped else "."),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_BUDGET)


@_command("replicate calvano-baseline")
def replicate(
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", help="A replication pack (see --list).", show_default=False),
    ] = None,
    list_packs: Annotated[
        bool, typer.Option("--list", help="List the packs and what they reproduce.")
    ] = False,
    db: DbOption = None,
    tournament: Annotated[
        int | None,
        typer.Option(
            "--tournament",
            metavar="ID",
            min=1,
            max=LARGEST_ID,
            help="Compare this stored run of the pack instead of playing it.",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the latest unfinished run of the pack.")
    ] = False,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME",
            help="Play its language-model merchants with this model.",
            show_default=False,
        ),
    ] = None,
    days: Annotated[
        int | None,
        typer.Option(
            "--days",
            metavar="N",
            min=1,
            max=MAX_DAYS,
            help="Play matches of this many days (a shorter try).",
            show_default=False,
        ),
    ] = None,
    repetitions: Annotated[
        int | None,
        typer.Option(
            "--repetitions",
            metavar="N",
            min=1,
            max=MAX_REPETITIONS,
            help="Play this many sessions per cell.",
            show_default=False,
        ),
    ] = None,
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
    from tournaments.replication import check_cells, compare, load_pack, packs, played_text

    if list_packs or name is None:
        if name is None and not list_packs:
            err.print(
                "error: name a pack (uv run arena replicate --list shows them)", markup=False, highlight=False
            )
            raise typer.Exit(EXIT_USER_ERROR)
        with user_errors():
            listed = [load_pack(known) for known in packs()]
        if as_json:
            shown = [{"name": p.name, "title": p.figures.title, "source": p.figures.source} for p in listed]
            print(json.dumps(shown, indent=2))
        else:
            for each in listed:
                out_print(f"{each.name}: {each.figures.title} ({len(each.figures.figures)} figures)")
        return
    with user_errors():
        pack = load_pack(name)
        shorter = [
            flag
            for flag, value in (("--days", days), ("--repetitions", repetitions), ("--model", model))
            if value
        ]
        if tournament is not None and (shorter or resume):
            raise UserError(
                f"{(shorter or ['--resume'])[0]}: says how to play the pack; --tournament plays nothing"
            )
        if tournament is None:  # checked before the database is made
            played = load_tournament(pack.tournament, played_text(pack, days, repetitions, model))
            check_cells(pack, [cell.factors for cell in played.each_cell()])
        engine = engine_for(db, create=tournament is None)
    if tournament is None:
        command = f"uv run arena replicate {name}" + "".join(
            f" --{flag} {value}"
            for flag, value in (("model", model), ("days", days), ("repetitions", repetitions))
            if value is not None
        )
        summary = _play(played, engine, command, db, resume, address, no_cache)
        _stopped(summary, command, engine, db)
        tournament = summary.tournament_id
    with user_errors():
        compared = compare(engine, tournament, pack.figures)
    if as_json:
        print(
            json.dumps(
                {
                    "pack": name,
                    "tournament": tournament,
                    "figures": [
                        {
                            **c.figure.model_dump(),
                            "arena": None if c.arena is None else asdict(c.arena),
                            "sessions": c.sessions,
                            "within": c.within,
                            "published_in_interval": c.published_in_interval,
                        }
                        for c in compared
                    ],
                },
                indent=2,
            )
        )
    else:
        out.print(_rich(_replication_table(compared, f"{pack.figures.title} (tournament {tournament})")))
        if pack.figures.note:
            out_print(pack.figures.note)
    outside = [c.figure.name for c in compared if not c.within]
    if outside:
        err.print(
            f"not reproduced: {', '.join(outside)} fell outside the band",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_NOT_REPRODUCED)


def _replication_table(compared: list[Comparison], title: str) -> views.Table:
    headers = [
        views.Header("figure"),
        views.Header("cell", whole=True),
        views.Header("published", numeric=True),
        views.Header("band", numeric=True, whole=True),
        views.Header("arena [95% interval]", numeric=True, whole=True),
        views.Header("sessions", numeric=True),
        views.Header("within"),
        views.Header("published in interval"),
        views.Header("source"),
    ]
    rows = [
        [
            c.figure.name,
            ", ".join(f"{factor}={shown_value(value)}" for factor, value in c.figure.where.items()) or "all",
            f"{c.figure.published:g}",
            f"{c.figure.band[0]:g} to {c.figure.band[1]:g}",
            views.mean_and_interval(c.arena, views.metric_unit(c.figure.metric)),
            str(c.sessions if c.arena is None or c.arena.n == c.sessions else f"{c.arena.n} of {c.sessions}"),
            "yes" if c.within else "NO",
            {True: "yes", False: "no", None: "—"}[c.published_in_interval],
            c.figure.source,
        ]
        for c in compared
    ]
    return views.Table(title, headers, [rows])


@_command("validate tournaments/round_robin.yaml --estimate")
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
    parameter it refuses); --estimate foresees the model calls of the whole tournament.
    """
    with user_errors():
        tournament = load_tournament(config)
    matches = schedule(tournament)
    spec = tournament.spec
    summary = {
        "file": str(config),
        "contestants": len(spec.contestants),
        "scenarios": len(tournament.scenarios),
        "seeds": len(spec.seed_list),
        "format": spec.format,
        "cells": len(tournament.each_cell()),
        "matches": len(matches),
        "market_days": sum(m.days for m in matches),
    }
    failures = _ping(tournament) if ping else []
    estimates = _estimate(tournament) if estimate else []
    if as_json:
        print(
            json.dumps(
                {
                    **summary,
                    "ping": failures if ping else None,
                    "estimate": [asdict(e) for e in estimates] if estimate else None,
                },
                indent=2,
            )
        )
    else:
        cells = f", {len(tournament.cells)} cells of {' x '.join(spec.sweep)}" if spec.sweep else ""
        out_print(
            f"{config}: ok — {len(spec.contestants)} contestants, {len(tournament.scenarios)} scenarios, "
            f"{len(spec.seed_list)} seeds, {spec.format}{cells}: "
            f"{'at most ' if spec.format == 'adaptive' else ''}{len(matches)} matches, "
            f"{summary['market_days']} market days"
        )
        for failure in failures:
            err.print(
                f"error: {failure['contestant']}: {failure['error']}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        if estimate:
            out.print(_estimate_table(estimates))
    _estimate_warnings(estimates)
    if failures:
        raise typer.Exit(EXIT_BROKEN_MODEL)


@_command("equilibrium calvano --merchants 3")
def equilibrium(
    scenario: Annotated[
        str,
        typer.Argument(
            metavar="SCENARIO",
            help="Scenario YAML file, or the name of a shipped scenario (e.g. calvano).",
            show_default=False,
        ),
    ],
    merchants: Annotated[
        int | None,
        typer.Option(
            "--merchants",
            metavar="N",
            min=1,
            max=MAX_MERCHANTS_PER_MATCH,
            help="Seats in the market; default: the scenario's seats, else 2.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The benchmarks prices are judged against: per product, the one-shot Bertrand-Nash prices
    and profits per seat (competition) and those that maximise the seats' joint profit
    (monopoly, or a perfect cartel).

    They are exact for the scenario's logit market at base demand, with no stock limits and
    every reputation at its initial value, and checked: at Nash no seat gains by moving its
    price to any point of a fine grid, and at the joint optimum no small move of the prices
    raises the joint profit. Profits are per day.
    """
    from market.equilibrium import (
        EquilibriumError,
        equilibria,
    )  # scipy: half a second that only this command needs

    with user_errors():
        try:
            loaded = load_scenario(scenario)
            seats = merchants or len(loaded.seats) or 2
            benchmarks = equilibria(loaded, seats)
        except (ValueError, EquilibriumError) as exc:
            raise InputFileError(f"{scenario}: {exc}") from None
    if as_json:
        products = {
            pid: {"nash": b.nash.as_dict(), "monopoly": b.monopoly.as_dict()} for pid, b in benchmarks.items()
        }
        print(json.dumps({"scenario": loaded.name, "merchants": seats, "products": products}, indent=2))
        return
    table = Table(
        "product",
        "seat",
        Column("Nash price", justify="right"),
        Column("Nash profit/day", justify="right"),
        Column("monopoly price", justify="right"),
        Column("monopoly profit/day", justify="right"),
        title=f"{loaded.name}: {seats} merchants",
    )
    for pid, b in benchmarks.items():
        for seat, row in enumerate(zip(b.nash.prices, b.nash.profits, b.monopoly.prices, b.monopoly.profits)):
            table.add_row(pid if seat == 0 else "", str(seat), *(f"{value:.5f}" for value in row))
    out.print(table)


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


def _estimate(tournament: Tournament) -> list[Any]:
    from tournaments.estimate import (
        estimate,
    )  # rehearses matches: imports what plays them, Ray's errors among it

    with user_errors(), err.status("rehearsing every match"):
        return estimate(tournament)


def _estimate_table(estimates: list[Any]) -> Table:
    """tournaments.estimate.Estimate rows: every figure from one step a day to the most."""
    table = Table(
        "contestant",
        "model",
        "calls",
        "by purpose",
        "input tokens",
        "output tokens",
        "cost $",
        title="model calls the tournament will need, from one step a day to the most "
        "(estimated: see docs/tournaments.md, Before a run)",
    )
    for e in estimates:
        table.add_row(
            e.contestant,
            escape(e.model),
            _span(e.calls),
            ", ".join(f"{purpose} {_span(n)}" for purpose, n in e.by_purpose.items()),
            _span(e.input_tokens),
            _span(e.output_tokens),
            "no price" if e.cost is None else _span(e.cost, "{:.4f}"),
        )
    return table


def _span(span: tuple[float, float], fmt: str = "{:,}") -> str:
    """`low to high`, or the one figure where they are the same."""
    low, high = (fmt.format(value) for value in span)
    return low if low == high else f"{low} to {high}"


def _estimate_warnings(estimates: list[Any]) -> None:
    """A line for each contestant whose rehearsal went bankrupt, and one for each whose turn
    failed on rehearsed days: its figures leave out those days (tournaments.estimate.Estimate)."""
    for e in estimates[:-1]:
        if e.bankrupt:
            _warning(
                f"{e.contestant}: the rehearsal went bankrupt in {e.bankrupt} of its matches: "
                "the estimate leaves out the days after"
            )
        if e.failed:
            _warning(
                f"{e.contestant}: its turn failed on {e.failed} rehearsed days (the first: {e.failure}): "
                "the estimate leaves out what they would have called"
            )


def _warning(text: str) -> None:
    """`warning: text` on stderr, printed as it is."""
    err.print(f"warning: {text}", markup=False, highlight=False, soft_wrap=True)


AnchorOption = Annotated[
    str | None,
    typer.Option(
        "--anchor",
        metavar="NAME",
        help="Rate this contestant 1000 (default: the mean rating is 1000).",
        show_default=False,
    ),
]


@_command("leaderboard --tournament 1 --tournament 2", name="leaderboard")
def leaderboard_command(
    db: DbOption = None,
    tournament: TournamentsOption = None,
    pool_all: AllOption = False,
    scenario: Annotated[
        str | None,
        typer.Option("--scenario", metavar="NAME", help="Only matches of this scenario.", show_default=False),
    ] = None,
    contestant: Annotated[
        list[str] | None,
        typer.Option(
            "--contestant",
            metavar="NAME",
            help="Only matches where two of these met, and their solo ones; only their seats (repeatable).",
            show_default=False,
        ),
    ] = None,
    anchor: AnchorOption = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            "--weights",
            metavar="FILE",
            help="YAML weights of the composite score (default: the tournament's scoring: section).",
            show_default=False,
        ),
    ] = None,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            metavar="FACTOR",
            help="A sweep's factor (as named in its file, e.g. qlearning.alpha): instead of ratings, a "
            "row per value with each metric's mean over its sessions (seeds) and its 95% interval "
            "(repeatable: a row per combination). Reads one tournament.",
            show_default=False,
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            metavar="NAME",
            help="Instead of ratings, each metric's mean over the sessions (seeds) and its 95% interval, "
            f"by cell of a sweep (repeatable; with --by, default: {', '.join(KEY_METRICS)}). "
            "Reads one tournament.",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """The table of the latest tournament, of those named, or of all of them pooled (--all):
    rating with 95% interval and rank, online Elo, results, validity, memory error, tokens, cost
    and the composite score. Its title says which tournament it reads, or how many it pools.

    With --by, a sweep's results by cell instead (see docs/tournaments.md, "Sweeps")."""
    with user_errors():
        engine = engine_for(db, create=False)
        chosen_weights = load_weights(weights) if weights is not None else None
        chosen = _select(engine, db, tournament, pool_all)
    if by or metric:
        _sweep_leaderboard(engine, chosen, by or [], metric or [], as_json)
        return
    with user_errors():
        scoring, confidence = _scoring(chosen, chosen_weights)
        rows = store.leaderboard(
            engine,
            chosen.ids,
            scenario=scenario,
            contestants=contestant or None,
            anchor=anchor,
            weights=scoring,
            confidence=confidence,
        )
        ended = {t: store.run_end(engine, t) for t in chosen.ids}
    if as_json:
        print(json.dumps({**chosen.as_json(), "rows": views.leaderboard_records(rows)}, indent=2))
        return
    title = chosen.title() + (f", scenario {scenario}" if scenario else "")
    out.print(_rich(views.leaderboard_table(rows, title)))
    for tournament_id, reason in ended.items():
        if reason:
            whose = "Its run" if len(chosen.ids) == 1 else f"Tournament {tournament_id}'s run"
            out_print(f"{whose} ended early: {reason}.")
    if note := chosen.note():
        out_print(note)


@dataclass(frozen=True)
class _Selection:
    """The tournaments a reading command reads: those named with --tournament, every one
    (--all), or the latest (the one started last, which has the highest id); `stored`: how
    many the database holds; `listing`: the command that lists them, with the --db given."""

    tournaments: list[TournamentRow]
    how: Literal["named", "all", "latest"]
    stored: int
    listing: str

    @property
    def ids(self) -> list[int]:
        return [stored_id(t.id) for t in self.tournaments]

    def title(self) -> str:
        """`tournament 3 (round_robin, tournaments/round_robin.yaml)`, or how many are pooled."""
        if len(self.tournaments) == 1:
            return _title(self.tournaments[0])
        if self.how == "all":
            return f"pooled over all {len(self.tournaments)} tournaments"
        return f"pooled over {len(self.tournaments)} tournaments ({', '.join(map(str, self.ids))})"

    def note(self) -> str | None:
        """A line under the table of the latest tournament when there are others."""
        if self.how != "latest" or self.stored == 1:
            return None
        return (
            f"The latest of {self.stored} tournaments: `{self.listing}` lists them, "
            "--tournament ID chooses one, --all pools them."
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "selection": self.how,
            "tournaments": [{"id": t.id, "name": t.name, "file": t.config_path} for t in self.tournaments],
        }


def _title(tournament: TournamentRow) -> str:
    return f"tournament {tournament.id} ({tournament.name}, {tournament.config_path})"


def _select(engine: Engine, db: str | None, named: list[int] | None, pool_all: bool) -> _Selection:
    """The tournaments named, all of them, or the latest; a UserError for an unknown id, for
    both --tournament and --all, and for a database that holds no tournament."""
    if named and pool_all:
        raise UserError("--all pools every tournament, --tournament names the ones to read: give one of them")
    stored = store.list_tournaments(engine)
    listing = _with_db(f"{ARENA} tournaments", engine, db)
    if named:
        chosen = [store.get_tournament(engine, t) for t in dict.fromkeys(named)]
        return _Selection(chosen, "named", len(stored), listing)
    if not stored:
        raise _none_stored(engine)
    if pool_all:
        return _Selection(stored, "all", len(stored), listing)
    return _Selection(stored[-1:], "latest", len(stored), listing)


def _none_stored(engine: Engine) -> NotFound:
    return NotFound(
        f"no tournament is stored in {engine.url.render_as_string(hide_password=True)}: "
        f"`{ARENA} run tournaments/round_robin.yaml` plays one"
    )


def _scoring(chosen: _Selection, weights: ScoringWeights | None) -> tuple[ScoringWeights, float]:
    """The composite's weights (`weights`, a --weights file, else the tournaments' files'
    `scoring:`) and the confidence ties are judged at (their files' `confidence:`): for pooled
    tournaments whose files differ, the defaults, and a warning that says so."""
    files = [_stored(t) for t in chosen.tournaments]
    scorings = {f.scoring for f in files} if weights is None else {weights}
    confidences = {f.confidence for f in files}
    differ = [
        what for what, values in (("scoring", scorings), ("confidence", confidences)) if len(values) > 1
    ]
    if differ:
        _warning(
            f"the pooled tournaments' files set their {' and '.join(differ)} differently: the defaults "
            "are used" + ("; --weights FILE sets the weights" if "scoring" in differ else "")
        )
    return (
        scorings.pop() if len(scorings) == 1 else ScoringWeights(),
        confidences.pop() if len(confidences) == 1 else LEVEL,
    )


def _sweep_leaderboard(
    engine: Engine, chosen: _Selection, by: list[str], metrics: list[str], as_json: bool
) -> None:
    with user_errors():
        if len(chosen.tournaments) != 1:
            raise UserError("--by and --metric read one tournament's matches: give one --tournament ID")
        cells = by_cell(engine, chosen.ids[0], by, metrics)
    if as_json:
        shown = [
            {
                "factors": cell.factors,
                "matches": cell.matches,
                "sessions": cell.sessions,
                "metrics": {
                    name: None if value is None else asdict(value) for name, value in cell.values.items()
                },
            }
            for cell in cells
        ]
        print(json.dumps({**chosen.as_json(), "cells": shown}, indent=2))
    else:
        grouped = f" by {', '.join(by)}" if by else " by cell" if cells[0].factors else ""
        out.print(_rich(views.sweep_table(cells, f"{chosen.title()}{grouped}")))


@_command("rate results.csv --anchor baseline")
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
        out.print(_rich(views.standings_table(rows, str(results))))


@_command("tournaments")
def tournaments(db: DbOption = None, as_json: JsonOption = False) -> None:
    """The stored tournaments, oldest first: id, name, the file each was played from, status
    (running, finished or stopped), matches stored of those planned, when it started and ended,
    and the command that shows its leaderboard."""
    with user_errors():
        engine = engine_for(db, create=False)
        stored = store.list_tournaments(engine)
        if not stored:
            raise _none_stored(engine)
        counts = store.match_counts(engine)
    listed = [
        views.ListedTournament(
            t,
            counts.get(stored_id(t.id), 0),
            _with_db(f"{ARENA} leaderboard --tournament {t.id}", engine, db),
        )
        for t in stored
    ]
    if as_json:
        print(json.dumps([entry.as_json() for entry in listed], indent=2))
    else:
        out.print(_rich(views.tournaments_table(listed, "tournaments")))


@_command("matches --tournament 2")
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
        chosen = _select(engine, db, tournament, pool_all)
        rows = store.list_matches(engine, chosen.ids)
    if as_json:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
        return
    table = Table(
        "id", "tournament", "#", "scenario", "seed", "days", "key", "seconds", title=escape(chosen.title())
    )
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
    out.print(table)
    if note := chosen.note():
        out_print(note)


@_command("show 1 --day 3")
def show(
    match_id: Annotated[
        int,
        typer.Argument(
            metavar="MATCH_ID",
            min=1,
            max=LARGEST_ID,
            help="Match id (see `uv run arena matches`).",
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
    scripted = detail.days.competitors
    if as_json:
        from market.types import record_adapter

        print(
            json.dumps(
                {
                    "match": detail.match.model_dump(mode="json"),
                    "results": [r.model_dump() for r in detail.results],
                    "metrics": metrics,
                    "market": detail.market.model_dump(),
                    "not_applicable": [n.model_dump() for n in detail.notes],
                    "goals": [g.model_dump() for g in detail.goals],
                    "competitors": None
                    if scripted is None
                    else {
                        "names": list(scripted.names),
                        # [day][competitor][product]; null: a product it does not sell
                        "prices": [
                            [[None if p != p else p for p in row] for row in day]
                            for day in scripted.prices.tolist()
                        ],
                        "units_sold": scripted.units_sold.tolist(),
                    },
                    "faults": [f.model_dump() for f in detail.faults],
                    "recall_questions": [r.model_dump() for r in detail.recalls],
                    "calls": [c.model_dump() for c in detail.calls],
                    "days": [record_adapter.dump_python(d, mode="json") for d in detail.days],
                    "deviation": None
                    if detail.deviation is None
                    else {
                        "probe": detail.deviation.probe.model_dump(),
                        "faults": [f.model_dump() for f in detail.deviation.faults],
                        "calls": [c.model_dump() for c in detail.deviation.calls],
                        "days": [
                            record_adapter.dump_python(d, mode="json") for d in detail.deviation.days_played
                        ],
                    },
                },
                indent=2,
            )
        )
        return
    out.print(_rich(views.results_table(detail.match, detail.results)))
    if metrics:
        out.print(
            _rich(views.metrics_table(metrics, {r.merchant: r.contestant for r in detail.results}, noted))
        )
    else:
        out.print(
            "No metrics stored for this match: `uv run arena rescore` computes them.",
            markup=False,
            highlight=False,
        )
    if detail.goals:
        out.print(_rich(views.goals_table(detail.goals, {r.merchant: r.contestant for r in detail.results})))
    if detail.market.metrics:
        out.print(_rich(views.market_table(detail.market, detail.notes)))
    if detail.deviation is not None:
        out.print(*_deviation_tables(detail, metrics))
    if detail.calls:
        out.print(_rich(views.calls_table(detail.calls)), _calls_made_table(detail.calls))
    if detail.recalls:
        recalls = Table("day", "merchant", "asked", "truth", "answer", "error", title="recall questions")
        for r in detail.recalls:
            when = "on" if r.fact == "ordered" else "at end of"
            asked = f"{r.fact}{'[' + r.product + ']' if r.product else ''} {when} day {r.asked_day}"
            answer = "—" if r.answer is None else f"{r.answer:,.2f}"
            error = "no answer" if r.relative_error is None else f"{r.relative_error:.1%}"
            recalls.add_row(str(r.day), r.merchant, escape(asked), f"{r.truth:,.2f}", answer, error)
        out.print(recalls)
    said = detail.days.said()
    if said:
        out.print(_rich(views.messages_table(said, "messages (each read by the rivals the next day)")))
    if scripted is not None:
        out.print(_rich(views.competitors_table(scripted, detail.days.products)))
    days = Table(
        "day",
        "merchant",
        "prices",
        "sold",
        "lost",
        "stock",
        "cash",
        "net worth",
        "rep.",
        "notes",
        title="day by day",
    )
    faults = {(f.day, f.merchant): f for f in detail.faults}
    for d in detail.days:
        notes = [f"{f.kind}: {f.detail}" for f in [faults.get((d.day, d.merchant))] if f]
        notes += [
            r.reason for r in d.rejections if r.index != -1
        ]  # the decision as a whole: its fault says why
        days.add_row(
            str(d.day),
            d.merchant,
            views.per_product(d.prices, "{:.2f}"),
            views.per_product(d.units_sold),
            views.per_product(d.lost_sales),
            views.per_product(d.inventory),
            views.money(d.cash_end),
            views.money(d.net_worth),
            f"{d.reputation:.2f}",
            "; ".join(notes),
        )
    out.print(days)


@_command("report 1 --out report.html")
def report(
    tournament_id: Annotated[
        int,
        typer.Argument(
            metavar="TOURNAMENT_ID",
            min=1,
            max=LARGEST_ID,
            help=f"Tournament id (`{ARENA} tournaments` lists them).",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    db: DbOption = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            metavar="NAME",
            help="A sweep's heat map shows this metric (default: market_profit_gain where matches have it, "
            "else profit).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """One self-contained HTML page of a tournament: ratings, head to head, a sweep's results by
    cell, metrics, model usage and every match's charts. It opens offline: nothing is fetched
    from anywhere."""
    with user_errors():
        engine = engine_for(db, create=False)
        stored = _stored(store.get_tournament(engine, tournament_id))
        write_report(
            engine,
            tournament_id,
            out,
            *stored.scenarios(),
            weights=stored.scoring,
            sweep_metric=metric,
            confidence=stored.confidence,
        )
    out_print(f"wrote {out}")


@_command("serve --port 8765")
def serve(
    db: DbOption = None,
    port: Annotated[
        int, typer.Option("--port", metavar="N", min=0, max=65535, help="The port (0: any free one).")
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="ADDR",
            help="The address to listen on. On any other than 127.0.0.1 or localhost (say 0.0.0.0), "
            "a token is asked for, printed once here.",
        ),
    ] = "127.0.0.1",
) -> None:
    """A web view of the database, read only, while a tournament writes to it or afterwards:
    the leaderboard and progress of each tournament, every match's charts (hover, zoom, PNG
    and CSV downloads) and what happened in it, and each day of a match with every step of
    its merchants' model calls. Stop it with Ctrl+C."""
    from viewer.app import LOOPBACK, create_app, listening, open_for_reading, server

    with user_errors():
        engine = open_for_reading(db)
        try:
            listener = listening(host, port)
        except OSError as exc:
            raise UserError(
                f"--host/--port: cannot listen on {host}:{port} ({exc.strerror or exc})"
            ) from None
    token = None if host in LOOPBACK else secrets.token_urlsafe(24)
    err.print("arena serve: computing the leaderboards…", markup=False, highlight=False)
    with user_errors():
        try:  # browsers that come meanwhile wait in the listener's queue
            app = create_app(engine, token, warm=True)
        except SQLAlchemyError as exc:
            raise DatabaseError(describe_failure(engine, exc)) from None
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{listener.getsockname()[1]}/" + (f"?token={token}" if token else "")
    out_print(f"arena serve: {address}")
    if token:
        out_print("(the token is asked for because the viewer listens beyond this machine; it is not stored)")
    server(app).run(sockets=[listener])


class ExportFormat(StrEnum):
    csv = "csv"
    parquet = "parquet"


@_command("export 1 --out tables --format parquet", name="export")
def export_command(
    tournament_id: Annotated[
        int,
        typer.Argument(
            metavar="TOURNAMENT_ID", min=1, max=LARGEST_ID, help="Tournament id.", show_default=False
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="DIR",
            help="Folder to write the tables into (created if missing).",
            show_default=False,
        ),
    ],
    fmt: Annotated[ExportFormat, typer.Option("--format", help="File format.")] = ExportFormat.csv,
    db: DbOption = None,
) -> None:
    """A tournament's record as tables for pandas: results, days, day_products, calls,
    transcript, metrics, market_metrics, price_windows, messages; with a deviation probe, deviations and the
    deviated path's deviated_days, deviated_day_products, deviated_calls and deviated_messages
    (every file is written, empty or not)."""
    from results.presentation.export import export  # pyarrow: seconds to import, that only this command needs

    with user_errors():
        files = export(engine_for(db, create=False), tournament_id, out, fmt.value)
    out_print(f"wrote {', '.join(str(file) for file in files)}")


def out_print(text: str) -> None:
    out.print(text, markup=False, highlight=False, soft_wrap=True)


@_command("rescore --tournament 1", name="rescore")
def rescore_command(
    db: DbOption = None,
    tournament: Annotated[
        list[int] | None,
        typer.Option(
            "--tournament",
            min=1,
            max=LARGEST_ID,
            metavar="ID",
            help="This tournament's matches (repeatable); default: every stored tournament's.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Compute the metrics of stored matches again from their day records, e.g. after a
    metric's definition changed: of every stored tournament, unless --tournament names some.

    The scenarios come from the tournament's file, read again; if it is gone or no longer
    what was played, the metrics that need the scenario are left empty (a warning says so).
    """
    with user_errors():
        engine = engine_for(db, create=False, writes=True)
        chosen = _select(engine, db, tournament, pool_all=not tournament)
        rescored = sum(
            store.rescore(engine, stored_id(t.id), _played_scenarios(t)) for t in chosen.tournaments
        )
    out.print(f"Rescored {rescored} matches of {len(chosen.ids)} tournaments.")


def _stored(tournament: TournamentRow) -> StoredTournament:
    """The tournament with its stored file read again; a warning when that file no longer
    validates, whose settings are then the defaults."""
    stored = stored_tournament(tournament)
    if stored.problem is not None:
        err.print(
            f"warning: tournament {tournament.id}: the file stored with it no longer validates "
            f"({stored.problem}); its scoring weights and collusion settings are taken as the defaults",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return stored


def _played_scenarios(tournament: TournamentRow) -> PlayedScenarios:
    """The scenarios and collusion settings of a stored tournament's cells, from its file if
    that still is what was played (else none, and the file's stored collusion settings)."""
    try:
        loaded = load_tournament(tournament.config_path)
    except ConfigError as exc:
        problem = f"cannot read it again ({exc})"
    else:
        if loaded.config_hash == tournament.config_hash:
            return played_scenarios(loaded)
        problem = "it changed since the tournament was played"
    err.print(
        f"warning: tournament {tournament.id}: {tournament.config_path}: {problem}; "
        "metrics that need the scenario (goal_completion, scenario events in contradictions, "
        "the collusion measures) are left without it",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    stored, _ = _stored(tournament).scenarios()  # the settings of each cell as the record has them
    return PlayedScenarios({label: ({}, collusion) for label, (_, collusion) in stored.cells.items()})


def _deviation_tables(
    detail: store.MatchDetail, metrics: dict[str, dict[str, float | None]]
) -> list[RenderableType]:
    """The probe's measures, a column per merchant; then both paths' prices from the day
    before the deviation to the end."""
    path = detail.deviation
    assert path is not None
    probe = path.probe
    measures = views.deviation_table(path, [r.merchant for r in detail.results], metrics)
    both = Table("day", "merchant", "prices on path", "prices deviated", title="both paths")
    on_path = {(d.day, d.merchant): d.prices for d in detail.days}
    for d in path.days_played:
        if d.day >= probe.day - 1:
            both.add_row(
                str(d.day),
                d.merchant,
                views.per_product(on_path.get((d.day, d.merchant), {}), "{:.2f}"),
                views.per_product(d.prices, "{:.2f}"),
            )
    said = [m for m in DayLog.of(path.days_played).said() if m.day >= probe.day]
    messages = views.messages_table(said, f"messages on the deviated path, from day {probe.day}")
    return [_rich(measures), both, *([_rich(messages)] if said else [])]


def _calls_made_table(calls: list[ModelCallRecord]) -> Table:
    """Model calls per merchant and purpose, how they were made: what reproduces them (the
    model asked and the one that answered, sampling, seed, prompts)."""
    made = Table(
        "merchant",
        "purpose",
        "model",
        "answered by",
        "temperature",
        "top_p",
        "seed",
        "prompt templates",
        title="how the calls were made",
    )
    for merchant, purpose, mine in views.calls_by_merchant_and_purpose(calls):
        made.add_row(
            merchant,
            purpose,
            escape(_distinct(c.model for c in mine)),
            escape(_distinct(c.served_model for c in mine)),
            _distinct(c.temperature for c in mine),
            _distinct(c.top_p for c in mine),
            _distinct(c.seed for c in mine),
            escape(_distinct(c.prompt_version for c in mine)),
        )
    return made


def _distinct(values: Iterable[object]) -> str:
    """Each value once, in order of appearance ("—" for None: not sent, not reported)."""
    return ", ".join(
        dict.fromkeys(
            "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
            for value in values
        )
    )


def _show_day(detail: store.MatchDetail, day: int, transcript: list[TranscriptRecord], as_json: bool) -> None:
    """One day of a match: each merchant's record, then what its model calls said and heard."""
    from market.types import record_adapter

    records = [d for d in detail.days if d.day == day]
    if as_json:
        shown = {
            "match": detail.match.model_dump(mode="json"),
            "day": day,
            "records": [record_adapter.dump_python(d, mode="json") for d in records],
            "transcript": [step.model_dump(mode="json") for step in transcript],
        }
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return
    for d in records:
        done = "; ".join(json.dumps(op) for op in d.operations) or "nothing"
        refused = "".join(f"\n  refused: {r.reason}" for r in d.rejections)
        out.print(
            f"[bold]{_as_text(d.merchant)}[/bold], day {day}: {_as_text(done + refused)}", highlight=False
        )
    if not transcript:
        out.print("No model calls this day.", markup=False, highlight=False)
    for merchant in dict.fromkeys(step.merchant for step in transcript):
        table = Table("step", "who", "said", title=f"{_as_text(merchant)}: day {day}", show_lines=True)
        for step in (s for s in transcript if s.merchant == merchant):
            for line, (who, what) in enumerate(step_lines(step)):
                table.add_row("" if line else f"{step.step} {step.purpose}", who, _as_text(what))
        out.print(table)


def _as_text(text: str) -> str:
    """A model's or a merchant's words as rich shows them: as text, never as markup, and
    without the control characters (terminal escapes among them) a terminal would act on."""
    return escape("".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc"))


def _rich(table: views.Table) -> RenderableType:
    """A table of results.presentation.views drawn by rich: a line between its sections, every text as it is
    (no rich markup) and whole (a path or a command too long for its column folds onto the next
    line rather than losing its end), its notes on lines of their own under it."""
    drawn = Table(
        *(Column(escape(header.text), no_wrap=header.whole, overflow="fold") for header in table.headers),
        title=escape(table.title),
    )
    for number, section in enumerate(table.sections):
        if number:
            drawn.add_section()
        for row in section:
            drawn.add_row(*map(escape, row))
    return Group(drawn, *(Text(note) for note in table.notes)) if table.notes else drawn


class _RichObserver:
    def __init__(self, progress: Progress):
        self.progress = progress
        self.bars: tuple[TaskID, TaskID] | None = None  # matches, market days: from `started` on

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.bars = (
            self.progress.add_task(f"tournament {tournament_id}: matches", total=matches, completed=skipped),
            self.progress.add_task("market days", total=days),
        )

    def advanced(self, matches_done: int, days_done: int) -> None:
        assert self.bars is not None  # a run starts before it advances
        matches, days = self.bars
        self.progress.update(matches, completed=matches_done)
        self.progress.update(days, completed=days_done)

    def lost(self, match_key: str, reason: str) -> None:
        self.progress.console.print(
            _lost_line(match_key, reason), markup=False, highlight=False, soft_wrap=True
        )


def _lost_line(match_key: str, reason: str) -> str:
    return f"match {match_key} lost, {reason}: playing it again from its start"


class _LogLines:
    """Progress for a log (stderr is not a terminal: nohup, CI, a pipe), where bars would be
    drawn once, at the end: a line when the run starts, then one each time another
    twentieth of the market days has been played, or a minute has passed with some played,
    and one when every match is done. The days count those of the matches in play: more
    days than the finished matches had means that a match is under way."""

    STEPS = 20
    QUIET_SECONDS = 60.0

    def __init__(self, console: Console):
        self.console = console
        self.told: tuple[int, int] | None = None
        self.told_step = 0

    def started(self, tournament_id: int, matches: int, days: int, skipped: int) -> None:
        self.tournament_id, self.matches, self.days = tournament_id, matches, days
        self.begun = self.told_at = time.monotonic()
        done = f", {skipped} of them done before" if skipped else ""
        self._line(f"{matches} matches, {days:,} market days{done}")

    def advanced(self, matches_done: int, days_done: int) -> None:
        now, step = time.monotonic(), days_done * self.STEPS // max(self.days, 1)
        news = (
            step > self.told_step or matches_done == self.matches or now - self.told_at >= self.QUIET_SECONDS
        )
        if (matches_done, days_done) == self.told or not news:
            return
        self.told, self.told_step, self.told_at = (matches_done, days_done), step, now
        elapsed = datetime.timedelta(seconds=round(now - self.begun))
        self._line(
            f"{matches_done} of {self.matches} matches, {days_done:,} of {self.days:,} market days "
            f"after {elapsed}"
        )

    def lost(self, match_key: str, reason: str) -> None:
        self._line(_lost_line(match_key, reason))

    def _line(self, text: str) -> None:
        self.console.print(
            f"tournament {self.tournament_id}: {text}", markup=False, highlight=False, soft_wrap=True
        )


@contextmanager
def _progress() -> Iterator[_RichObserver | _LogLines]:
    if not err.is_terminal:
        yield _LogLines(err)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
    )
    with progress:
        yield _RichObserver(progress)
