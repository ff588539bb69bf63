"""`arena equilibrium`: the prices a scenario's market is judged against."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Column, Table

from arena.cli.application import command
from arena.cli.exits import user_errors
from arena.cli.options import JsonOption
from arena.cli.printing import out
from market.scenario import load_scenario
from results.errors import InputFileError
from tournaments.config import MAX_MERCHANTS_PER_MATCH

if TYPE_CHECKING:
    from market.equilibrium import Benchmarks


@command("equilibrium calvano --merchants 3")
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
    from market.equilibrium import EquilibriumError, equilibria  # scipy: half a second only this needs

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
    out.print(_benchmarks_table(benchmarks, f"{loaded.name}: {seats} merchants"))


def _benchmarks_table(benchmarks: dict[str, Benchmarks], title: str) -> Table:
    """Per product a row per seat: its Nash and monopoly price and profit a day."""
    table = Table(
        "product",
        "seat",
        Column("Nash price", justify="right"),
        Column("Nash profit/day", justify="right"),
        Column("monopoly price", justify="right"),
        Column("monopoly profit/day", justify="right"),
        title=title,
    )
    for pid, b in benchmarks.items():
        for seat, row in enumerate(zip(b.nash.prices, b.nash.profits, b.monopoly.prices, b.monopoly.profits)):
            table.add_row(pid if seat == 0 else "", str(seat), *(f"{value:.5f}" for value in row))
    return table
