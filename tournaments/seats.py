"""A seat: a merchant of a match as the day loop reaches it, wherever the merchant lives.

Every day the loop gives each seat its observation (and, on some days, a recall question)
and gets back a SeatTurn: its decision, its answer, or the fault that left it without a
decision. An InlineSeat calls its contestant in this process; a hosted seat
(tournaments.hosts.HostedSeat) asks a ContestantHost actor. A seat whose merchant's state was
lost with a machine raises SeatLost: the merchant is not at fault, and the match is played
again from its start.

Rule merchants that decide from the market's view are not asked seat by seat: inline, the
merchants of a kind decide together (Contestant.play_from_view).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, NamedTuple

from contestants.base import Contestant, DeadlinePassed, Handed, OffPathQuestion, Question
from contestants.calls.coordinator import CallsStopped
from market.types import Observation

if TYPE_CHECKING:  # a host need not import the record models (and SQLModel) for a name
    from results.records import FaultKind


class SeatFault(NamedTuple):
    """Why a seat gave no decision today: it does nothing, and the fault is recorded."""

    kind: FaultKind
    detail: str


class SeatTurn(NamedTuple):
    """A seat's day: its decision (None with a fault), its answer to the day's recall
    question (None: none, or not asked)."""

    decision: Any = None
    recalled: Any = None
    fault: SeatFault | None = None


def late(deadline: float | None) -> SeatFault:
    """The fault of a turn that came too late (its deadline: None for a seat that keeps its own)."""
    return SeatFault(
        "timeout", "no decision in time" if deadline is None else f"no decision within {deadline:g} s"
    )


class SeatLost(Exception):
    """The merchant's state, or the process asked for its turn, was lost with its machine:
    not the merchant's doing. Its match is played again from its start."""


class TurnStuck(CallsStopped):
    """A hosted merchant's turn had not ended long after its deadline
    (tournaments.plan.ContestantPlan.longest_turn), or its host did not answer: its contestant
    outlasts its deadline and its own timeouts. The run stops, as when its calls stop."""


class Seat(ABC):
    """A merchant in one match, asked for its turn once a day."""

    name: str

    @abstractmethod
    async def turn(self, observation: Observation, question: Question | None) -> SeatTurn:
        """Today's turn: the answer to `question` (if any), then the decision. Raises
        CallsStopped (the run's calls have stopped) and SeatLost; any other trouble is a
        fault of the merchant, in the SeatTurn."""

    @abstractmethod
    async def finish(self) -> Handed:
        """After the match's last day: the model calls the merchant made in it and their
        transcript (its state is let go of). Raises SeatLost if a failure on the way turns out
        to have been a lost machine rather than the merchant's, TurnStuck if its last turn
        does not end."""


class InlineSeat(Seat):
    """A contestant played in this process, reset for the match as it is seated. Its turn has
    no deadline: an inline contestant answers at once (one that may not is hosted)."""

    def __init__(self, contestant: Contestant, name: str, scenario: Any, seed: int):
        self.contestant, self.name = contestant, name
        contestant.reset(merchant=name, scenario=scenario, seed=seed)

    async def turn(self, observation: Observation, question: Question | None) -> SeatTurn:
        recalled = recall(self.contestant, question) if question is not None else None
        try:
            return SeatTurn(self.contestant.decide(observation), recalled)
        except CallsStopped:
            raise
        except Exception as exc:  # a contestant's bug is a fault, not a crash
            return SeatTurn(None, recalled, SeatFault("error", describe(exc)))

    async def finish(self) -> Handed:
        return Handed.of(self.contestant)


class Turn(NamedTuple):
    """A contestant's answer for one day under a deadline (`take_turn`): its decision (`late`
    if it took longer than the deadline) and its answer to the day's recall question (None if
    it had none, raised, or took longer than the deadline)."""

    decision: Any
    late: bool
    recalled: Any = None


def take_turn(
    contestant: Contestant,
    observation: Any,
    question: Question | None,
    deadline: float | None,
    arrived: float | None = None,
) -> Turn:
    """A hosted contestant's day, asked at `arrived` (time.monotonic(); default: now): its
    answer to the recall question if there is one, then its decision. Each part has
    `deadline` seconds, counted from when the turn was asked (a turn that waited for the
    merchant's previous one has less left), and the contestant is told when its time is up;
    an answer that raises or comes later is none, a decision that comes later is `late` (and
    none is asked for when no time is left, nor waited for once `decide` raises
    DeadlinePassed); any other exception from `decide` propagates. A `deadline` of None: each
    part as long as it takes."""
    arrived = time.monotonic() if arrived is None else arrived
    recalled = None
    if question is not None:
        contestant.begin_turn(None if deadline is None else arrived + deadline)
        recalled = recall(contestant, question)
        if deadline is not None and time.monotonic() > arrived + deadline:
            recalled = None
        arrived = time.monotonic()
    due = None if deadline is None else arrived + deadline
    if due is not None and time.monotonic() >= due:
        return Turn(None, late=True, recalled=recalled)
    contestant.begin_turn(due)
    try:
        decision = contestant.decide(observation)
    except DeadlinePassed:
        return Turn(None, late=True, recalled=recalled)
    return Turn(decision, late=due is not None and time.monotonic() > due, recalled=recalled)


def recall(contestant: Contestant, question: Question) -> Any:
    """The contestant's answer to a recall or an off-path question; None if it raised."""
    try:
        if isinstance(question, OffPathQuestion):
            return contestant.off_path(question)
        return contestant.recall(question)
    except CallsStopped:  # the run's services stopped (its calls, its desk): not the contestant's doing
        raise
    except Exception:  # a contestant's bug: no answer
        return None


def describe(exc: BaseException) -> str:
    """One line about an exception a contestant raised."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
