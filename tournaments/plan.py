"""Each contestant of a tournament resolved once, before anything plays: its kind's class, its
checked parameters, where it plays and how long its turn may take.

Everything that plays matches (the run, the match runners, the instant tasks, the estimate)
reads these plans instead of asking the registry of kinds again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contestants.base import Contestant, Params, RunOptions
from contestants.kinds import contestant_class, validate_params

if TYPE_CHECKING:  # the hosts and runners that unpickle plans need not import the tournament file's models
    from tournaments.config import ContestantEntry, Tournament, TournamentSpec
    from tournaments.schedule import MatchSpec

DEFAULT_DEADLINE_S = 10.0  # a hosted contestant's turn, when neither the tournament nor its kind says
START_ALLOWANCE_S = 30.0  # extra wait for a merchant's first turn: making it may load a model


def turn_wait(deadline: float | None, question: bool, start: bool) -> float | None:
    """How long a match waits for a hosted merchant's turn of `deadline` seconds: twice that on
    a day it answers a `question` first, and START_ALLOWANCE_S more when it is made first;
    None (as long as it takes) for a turn with no deadline."""
    if deadline is None:
        return None
    return deadline * (2 if question else 1) + (START_ALLOWANCE_S if start else 0.0)


@dataclass(frozen=True)
class ContestantPlan:
    """How a run plays one contestant.

    `hosted`: it plays in a Ray actor of its own (a ContestantHost), as its entry's `isolate`
    says, else as its kind needs (it holds a model, is slow, or may crash its process);
    otherwise it plays inside the match loop. `deadline`: seconds a hosted turn may take
    (None: as long as it takes, a person's); `overrun`: how long past it
    the turn may go on (Contestant.overrun_seconds)."""

    name: str
    kind: type[Contestant]
    params: Params
    hosted: bool
    deadline: float | None
    overrun: float = 0.0

    @property
    def longest_turn(self) -> float | None:
        """The longest a hosted turn may go on from when it is asked: the longest a match
        waits for one (`turn_wait`), then its overrun; None: no limit."""
        wait = turn_wait(self.deadline, question=True, start=True)
        return None if wait is None else wait + self.overrun

    @property
    def decides_from_view(self) -> bool:
        """A rule merchant: played inline, it decides with its kind's rule from the market's view."""
        return self.kind.decides_from_view

    @property
    def calls_models(self) -> bool:
        return self.kind.calls_models

    @property
    def seats_a_person(self) -> bool:
        return self.kind.seats_a_person

    @property
    def answers_in_words(self) -> bool:
        """It is asked the questions a merchant answers in words (off-path prices): a model's
        merchant, or a person."""
        return self.kind.calls_models or self.kind.seats_a_person

    @property
    def remembers_the_record(self) -> bool:
        """Its memory is the market's record of its days: recall questions are answered from it."""
        return self.kind.remembers_the_record

    def make(self, options: RunOptions) -> Contestant:
        """A new contestant of this plan, played with the run's `options`."""
        return self.kind(self.params, options.for_contestant(self.name))


def plan_contestants(
    entries: Iterable[ContestantEntry], decision_timeout_s: float | None = None
) -> dict[str, ContestantPlan]:
    """The plans of `entries`, by name. A hosted turn's deadline is `decision_timeout_s` if
    the tournament sets one, else what the contestant's own settings need (a model's
    retries: Contestant.turn_seconds), else DEFAULT_DEADLINE_S. A person's turn has none: the
    tournament's deadline is for machines, and their seat keeps their own `turn_seconds` page by
    page with the run's desk, whose word on what came in time is the one kept and replayed."""
    plans = {}
    for entry in entries:
        kind = contestant_class(entry.kind)
        params = validate_params(entry.kind, entry.params)
        hosted = entry.isolate if entry.isolate is not None else kind.needs_actor
        deadline = (
            None
            if kind.seats_a_person
            else decision_timeout_s or kind.turn_seconds(params) or DEFAULT_DEADLINE_S
        )
        plans[entry.name] = ContestantPlan(
            entry.name, kind, params, hosted, deadline, kind.overrun_seconds(params)
        )
    return plans


def people_of(tournament: Tournament, matches: Iterable[MatchSpec] | None = None) -> list[str]:
    """The contestants a person plays, in the file's order, over every cell of a sweep; of
    those seated in `matches` alone, if given (what a resumed run has left to play)."""
    seated = None if matches is None else {name for match in matches for name in match.seats}
    names: dict[str, None] = {}  # (ordered, without repeats)
    for cell in tournament.each_cell():
        plans = plan_tournament(cell.tournament.spec)
        names.update(
            (name, None)
            for name, plan in plans.items()
            if plan.seats_a_person and (seated is None or name in seated)
        )
    return list(names)


def plan_tournament(spec: TournamentSpec) -> dict[str, ContestantPlan]:
    """The plans of a tournament's contestants, by name."""
    return plan_contestants(spec.contestants, spec.decision_timeout_s)
