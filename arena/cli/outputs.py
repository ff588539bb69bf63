"""The commands that make something of the record: an HTML `report`, a web view (`serve`),
tables for pandas (`export`), and its metrics computed again (`rescore`)."""

from __future__ import annotations

import secrets
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.exc import SQLAlchemyError

from arena.cli.application import ARENA, command
from arena.cli.exits import user_errors
from arena.cli.options import DbOption
from arena.cli.printing import err, out, out_print
from arena.cli.selection import scenarios_played, select, stored_file
from results import rescoring
from results.errors import DatabaseError
from results.report import write_report
from results.storage import store
from results.storage.db import describe_failure, engine_for
from results.storage.schema import LARGEST_ID, stored_id


@command("report 1 --out report.html")
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
        stored = stored_file(store.get_tournament(engine, tournament_id))
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


@command("serve --port 8765")
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
    from common.serving import LOOPBACK, address, listening, server
    from viewer.app import create_app, open_for_reading

    with user_errors():
        engine = open_for_reading(db)
        listener = listening(host, port)
    token = None if host in LOOPBACK else secrets.token_urlsafe(24)
    err.print("arena serve: computing the leaderboards…", markup=False, highlight=False)
    with user_errors():
        try:  # browsers that come meanwhile wait in the listener's queue
            app = create_app(engine, token, warm=True)
        except SQLAlchemyError as exc:
            raise DatabaseError(describe_failure(engine, exc)) from None
    out_print(f"arena serve: {address(host, listener)}/" + (f"?token={token}" if token else ""))
    if token:
        out_print("(the token is asked for because the viewer listens beyond this machine; it is not stored)")
    server(app).run(sockets=[listener])


class ExportFormat(StrEnum):
    csv = "csv"
    parquet = "parquet"


@command("export 1 --out tables --format parquet", name="export")
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
    transcript, metrics, market_metrics, price_windows, messages; judged by judges, conduct,
    judgements, claims and verdicts; with a deviation probe, deviations and the deviated path's
    deviated_days, deviated_day_products, deviated_calls and deviated_messages (every file is
    written, empty or not)."""
    from results.presentation.export import export  # pyarrow: seconds to import, that only this command needs

    with user_errors():
        files = export(engine_for(db, create=False), tournament_id, out, fmt.value)
    out_print(f"wrote {', '.join(str(file) for file in files)}")


@command("rescore --tournament 1", name="rescore")
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
        chosen = select(engine, db, tournament, pool_all=not tournament)
        rescored = sum(
            rescoring.rescore(engine, stored_id(t.id), scenarios_played(t)) for t in chosen.tournaments
        )
    out.print(f"Rescored {rescored} matches of {len(chosen.ids)} tournaments.")
