"""The options several `arena` commands take, each defined once."""

from __future__ import annotations

from typing import Annotated

import typer
from sqlalchemy import Engine

from arena.cli.application import ARENA
from results.storage.schema import LARGEST_ID

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
AnchorOption = Annotated[
    str | None,
    typer.Option(
        "--anchor",
        metavar="NAME",
        help="Rate this contestant 1000 (default: the mean rating is 1000).",
        show_default=False,
    ),
]


def with_db(command: str, engine: Engine, db: str | None) -> str:
    """`command` with the --db the user gave (its password hidden)."""
    return command + (f" --db {engine.url.render_as_string(hide_password=True)}" if db else "")
