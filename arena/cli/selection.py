"""The stored tournaments a reading command reads (--tournament, --all, else the latest), and
their files read again for what was played and how it is scored, with a warning where a file
no longer says it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Engine

from arena.cli.application import ARENA
from arena.cli.options import with_db
from arena.cli.printing import warning
from common.errors import UserError
from results.errors import NotFound
from results.records import PlayedScenarios
from results.scoring.composite import ScoringWeights
from results.scoring.rating_fit import LEVEL
from results.storage import store
from results.storage.schema import TournamentRow, stored_id
from tournaments.config import (
    ConfigError,
    StoredTournament,
    played_scenarios,
    stored_tournament,
)
from tournaments.load import load_tournament


@dataclass(frozen=True)
class Selection:
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
            return tournament_title(self.tournaments[0])
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


def tournament_title(tournament: TournamentRow) -> str:
    return f"tournament {tournament.id} ({tournament.name}, {tournament.config_path})"


def select(engine: Engine, db: str | None, named: list[int] | None, pool_all: bool) -> Selection:
    """The tournaments named, all of them, or the latest; a UserError for an unknown id, for
    both --tournament and --all, and for a database that holds no tournament."""
    if named and pool_all:
        raise UserError("--all pools every tournament, --tournament names the ones to read: give one of them")
    stored = store.list_tournaments(engine)
    listing = with_db(f"{ARENA} tournaments", engine, db)
    if named:
        chosen = [store.get_tournament(engine, t) for t in dict.fromkeys(named)]
        return Selection(chosen, "named", len(stored), listing)
    if not stored:
        raise none_stored(engine)
    if pool_all:
        return Selection(stored, "all", len(stored), listing)
    return Selection(stored[-1:], "latest", len(stored), listing)


def none_stored(engine: Engine) -> NotFound:
    return NotFound(
        f"no tournament is stored in {engine.url.render_as_string(hide_password=True)}: "
        f"`{ARENA} run tournaments/round_robin.yaml` plays one"
    )


def scoring(chosen: Selection, weights: ScoringWeights | None) -> tuple[ScoringWeights, float]:
    """The composite's weights (`weights`, a --weights file, else the tournaments' files'
    `scoring:`) and the confidence ties are judged at (their files' `confidence:`): for pooled
    tournaments whose files differ, the defaults, and a warning that says so."""
    files = [stored_file(t) for t in chosen.tournaments]
    scorings = {f.scoring for f in files} if weights is None else {weights}
    confidences = {f.confidence for f in files}
    differ = [
        what for what, values in (("scoring", scorings), ("confidence", confidences)) if len(values) > 1
    ]
    if differ:
        warning(
            f"the pooled tournaments' files set their {' and '.join(differ)} differently: the defaults "
            "are used" + ("; --weights FILE sets the weights" if "scoring" in differ else "")
        )
    return (
        scorings.pop() if len(scorings) == 1 else ScoringWeights(),
        confidences.pop() if len(confidences) == 1 else LEVEL,
    )


def stored_file(tournament: TournamentRow) -> StoredTournament:
    """The tournament with its stored file read again; a warning when that file no longer
    validates, whose settings are then the defaults."""
    stored = stored_tournament(tournament)
    if stored.problem is not None:
        warning(
            f"tournament {tournament.id}: the file stored with it no longer validates "
            f"({stored.problem}); its scoring weights and collusion settings are taken as the defaults"
        )
    return stored


def scenarios_played(tournament: TournamentRow) -> PlayedScenarios:
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
    warning(
        f"tournament {tournament.id}: {tournament.config_path}: {problem}; "
        "metrics that need the scenario (goal_completion, scenario events in contradictions, "
        "the collusion measures) are left without it"
    )
    stored, _ = stored_file(tournament).scenarios()  # the settings of each cell as the record has them
    return PlayedScenarios({label: ({}, collusion) for label, (_, collusion) in stored.cells.items()})
