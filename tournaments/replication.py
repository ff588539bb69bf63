"""Replication packs: a shipped tournament file that plays a published experiment, and the
figures it reported, each with the band arena's value must fall in to count as reproduced.

A pack is a folder of tournaments/replications/: `tournament.yaml`, an ordinary tournament
file (`arena run` plays it too), and `figures.yaml` (`PackFigures`): what the source reported
and where to find it. `compare` reads a played tournament's matches (results.scoring.sweeps) for each
figure: the mean of its metric over the matches of its cell, with the 95% interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field, field_validator, model_validator
from sqlalchemy import Engine

from common.errors import UserError
from common.yaml_files import FileModel, load_model, parse_yaml, read_text
from market.scenario import MAX_TOTAL
from results.records import FactorValue, as_number, same_value
from results.scoring.sweeps import MeanInterval
from results.sweep_summary import by_cell

PACKS = Path(__file__).parent / "replications"


Value = Annotated[float, Field(ge=-MAX_TOTAL, le=MAX_TOTAL)]  # a figure's, or an end of its band


class Figure(FileModel):
    """A published figure: `metric`'s mean over the matches whose cell has the values `where`
    (all matches without it), the value the source gives, and the band [low, high] arena's mean
    must fall in."""

    name: str
    metric: str
    where: dict[str, FactorValue] = Field(default_factory=dict)
    published: Value
    band: tuple[Value, Value]
    source: str = Field(description="where in the source: a table, a figure, a page")

    @field_validator("where", mode="before")
    @classmethod
    def _numbers(cls, where: Any) -> Any:
        return {k: as_number(v) for k, v in where.items()} if isinstance(where, dict) else where

    def finds(self, factors: dict[str, FactorValue]) -> bool:
        """Whether a cell (or group) of these `factors` is the figure's."""
        return factors.keys() == self.where.keys() and all(
            same_value(factors[k]) == same_value(v) for k, v in self.where.items()
        )

    def in_cells(self, cells: list[dict[str, FactorValue]]) -> bool:
        """Whether some cell of a sweep (its factors) has the values `where` names."""
        return any(self.finds({k: cell[k] for k in self.where if k in cell}) for cell in cells)

    @model_validator(mode="after")
    def _ordered(self) -> Figure:
        if self.band[0] > self.band[1]:
            raise ValueError("band: its low end is above its high end")
        return self


class PackFigures(FileModel):
    """A pack's figures.yaml."""

    title: str
    source: str = Field(description="the work, as one cites it")
    note: str = Field("", description="what the pack does not reproduce, and why")
    figures: list[Figure] = Field(min_length=1)


@dataclass(frozen=True)
class Pack:
    name: str
    tournament: Path
    figures: PackFigures


class UnknownPack(UserError):
    """No shipped pack of the name asked for."""


def packs() -> list[str]:
    """The names of the shipped packs."""
    return sorted(path.name for path in PACKS.iterdir() if (path / "figures.yaml").is_file())


def load_pack(name: str) -> Pack:
    folder = PACKS / name
    if name not in packs():
        raise UnknownPack(f"no replication pack is named {name!r} (packs: {', '.join(packs())})")
    return Pack(name, folder / "tournament.yaml", load_model(folder / "figures.yaml", PackFigures))


def check_cells(pack: Pack, cells: list[dict[str, FactorValue]]) -> None:
    """UserError (one line) for a figure of the pack whose cell the tournament of `cells` (each
    cell's factors) does not play: found before anything is played."""
    for figure in pack.figures.figures:
        if not figure.in_cells(cells):
            raise UserError(
                f"pack {pack.name!r}: figure {figure.name!r} reads cell {figure.where}, "
                "which the pack does not play"
            )


def played_text(pack: Pack, days: int | None, repetitions: int | None, model: str | None) -> str:
    """The pack's tournament file as played: as shipped, or with its days, its repetitions or
    its language models' model set (a shorter run, another model), said in a comment first."""
    text = read_text(pack.tournament)
    changes = {"days": days, "repetitions": repetitions, "model": model}
    given = {name: value for name, value in changes.items() if value is not None}
    if not given:
        return text
    data = parse_yaml(pack.tournament, text)
    if days is not None:
        data["days"] = days
    if repetitions is not None:
        data.pop("seeds", None)
        data["repetitions"] = repetitions
    if model is not None:
        models = [entry for entry in data.get("contestants", []) if entry.get("kind") == "llm"]
        if not models:
            raise UserError(f"--model: pack {pack.name!r} plays no language model")
        for entry in models:
            entry["params"] = {**(entry.get("params") or {}), "model": model}
    said = ", ".join(f"{name} {value}" for name, value in given.items())
    return f"# arena replicate {pack.name}, with {said}\n" + yaml.safe_dump(data, sort_keys=False)


@dataclass(frozen=True)
class Comparison:
    """A figure beside arena's value of it: its mean and interval over `sessions` (None: no
    session had the metric), and whether that mean falls within the figure's band."""

    figure: Figure
    arena: MeanInterval | None
    sessions: int

    @property
    def within(self) -> bool:
        low, high = self.figure.band
        return self.arena is not None and low <= self.arena.mean <= high

    @property
    def published_in_interval(self) -> bool | None:
        """Whether the published value lies in arena's 95% interval (None: arena has none)."""
        if self.arena is None or self.arena.low is None or self.arena.high is None:
            return None
        return self.arena.low <= self.figure.published <= self.arena.high


def compare(engine: Engine, tournament_id: int, figures: PackFigures) -> list[Comparison]:
    """Each figure of `figures` against the tournament's matches. UserError (one line) for a
    figure whose cell the tournament did not play."""
    compared = []
    for figure in figures.figures:
        groups = by_cell(engine, tournament_id, list(figure.where), [figure.metric])
        found = [group for group in groups if figure.finds(group.factors)]
        if not found:
            cells = ", ".join(str(group.factors) for group in groups)
            raise UserError(
                f"tournament {tournament_id} played no cell {figure.where} for {figure.name!r} "
                f"(cells: {cells})"
            )
        (group,) = found
        compared.append(Comparison(figure, group.values[figure.metric], group.sessions))
    return compared
