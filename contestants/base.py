"""The one protocol every merchant agent follows; contestants.kinds says which kinds a
tournament file can name.

A judge (`Judge`) reads what merchants wrote and labels their conduct; contestants.kinds makes
one from its settings (`judge_for`).

A contestant is created from its YAML entry (`kind` plus parameters), reset at the start of
each match, prepared with the other merchants of its kind in the matches about to be played
(a learner's learning phase), asked for a decision every day, sometimes asked to recall a past
fact, and asked for its usage (tokens, cost) and what it reports of itself at the end.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from common.conduct import Judgement, Words
from common.errors import UserError
from common.model_calls import ModelCall, TranscriptStep
from common.yaml_files import FileModel
from contestants.calls.coordinator import CallCoordinator
from market.daylog import RecallFact
from market.scenario import Scenario
from market.types import ArrayDecisions, Decision, MarketView, Observation

if TYPE_CHECKING:  # a person's form is carried to the desk, not read here
    from contestants.human.form import DayForm, Refusal


class ContestantConfigError(UserError):
    """A contestant entry that cannot be built: unknown kind or bad parameters.

    `field` names the offending parameter (dotted) where there is one.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class DeadlinePassed(Exception):
    """Raised by a contestant that stopped trying because its turn's time (`begin_turn`) ran
    out before it could answer: the turn is late, as an answer after the deadline is, not a
    failure of the contestant's."""


class Params(FileModel):
    """Base of every contestant's parameter model: unknown keys are errors."""


class RecallQuestion(BaseModel):
    """A question about the merchant's own past: its value of `fact` at the end of `day`."""

    day: int
    fact: RecallFact
    product: str | None = None


class OffPathQuestion(BaseModel):
    """What the merchant would charge for `product` today had `rival` posted `price` for it
    yesterday, where it posted `posted` (None: not shown): asked apart from the day's
    decision, as Fish et al. question their agents off the path of play; the answer never enters
    the market."""

    rival: str
    product: str
    price: float
    posted: float | None = None


Question = RecallQuestion | OffPathQuestion


RehearsedDay = Literal["fewest", "longest"]
"""How a rehearsed agent works through a day (contestants.llm.rehearsal): "fewest", one step
(its operations and end_day); "longest", every step its day allows without ending it."""


class DeskKey(NamedTuple):
    """What a human seat asks its person, named the same in every run of the tournament, so
    that a journal of what was submitted can be keyed on it and a resumed run answered at once:
    the match (its key; None: a run that names none), the seat's merchant, the day, what is
    asked ("day": the day's decision; "recall" or "off_path": the day's question), and the
    attempt (0, then one more after each refusal of what was submitted)."""

    match: str | None
    merchant: str
    day: int
    asked: Literal["day", "recall", "off_path"]
    attempt: int


@dataclass(frozen=True, eq=False)
class DeskAsk:
    """One page put before a person: `key`; for a day, the seat's `observation` and the `form`
    to fill (contestants.human.form), or else the `question` to answer with one number (its
    field: ANSWER); and after a refusal, its reason and the fields as they were typed."""

    key: DeskKey
    observation: Observation | None = None
    form: DayForm | None = None
    question: Question | None = None
    typed: dict[str, str] = field(default_factory=dict)
    refusal: Refusal | None = None


ANSWER = "answer"  # the one field of a question's page


class Submitted(NamedTuple):
    """What a person submitted on a page: the `fields`, by name, and the `seconds` the page
    waited for them, from when it was asked to when it was submitted, as the desk measured it
    (a desk that replays what it kept replays these as they were)."""

    fields: dict[str, str]
    seconds: float


class Desk(ABC):
    """Where the run's human seats put their pages before people and get back what they
    submit: one for the whole run, handed to every contestant by RunOptions.desk, whether the
    contestant plays inline or in an actor (so it must pickle as a handle to the one desk)."""

    @abstractmethod
    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        """What the person submitted for `asked`, once they submit; None if `within` seconds
        (None: no limit) pass first, and `asked` is then withdrawn: what is submitted for it
        later is not taken."""


class RunOptions(BaseModel):
    """How this run plays its contestants, apart from what each one's entry says. The same
    options reach every contestant, inline or in an actor, named for it by `for_contestant`.

    no_cache: language models answer afresh; their response cache is neither read nor written.
    prices: the tournament's `prices:` (USD per million tokens by provider/model), under each
    contestant's own.
    call_coordinator: what this run's model calls check in with (budget, limits, cache;
    contestants.calls.coordinator); None: the process's own.
    contestant: the name of the contestant these options are for.
    rehearse: no model is called; each answers itself with an answer of the usual size, so
    that the calls' tokens and cost can be counted beforehand (contestants.llm.rehearsal), an
    agent taking one step a day ("fewest") or every step its days allow ("longest"); None: a
    real run.
    desk: where human seats ask their people (Desk); None: a run that seats none.
    match: the key of the match the contestant plays (for_match), which a human seat names
    what it asks by; None: not said.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    no_cache: bool = False
    prices: dict[str, Any] = Field(default_factory=dict)
    call_coordinator: CallCoordinator | None = None
    contestant: str | None = None
    rehearse: RehearsedDay | None = None
    desk: Desk | None = None
    match: str | None = None

    def for_contestant(self, name: str) -> RunOptions:
        return self.model_copy(update={"contestant": name})

    def for_match(self, key: str) -> RunOptions:
        return self.model_copy(update={"match": key})


@dataclass(frozen=True, eq=False)
class Seating:
    """A merchant's place in a match about to be played, as its kind's `prepare` sees it:
    its seat, the kind and parameters of every seat (its own included) and the seed of the
    match's repetition: the same for every match of the tournament played with the same
    seed, so that work a kind's merchants share across those matches (a learner's self-play)
    is the same in all of them."""

    contestant: Contestant
    seat: int
    lineup: tuple[tuple[str, Params], ...]
    scenario: Scenario
    seed: int


@dataclass(frozen=True)
class Ping:
    """The smallest call that shows whether what a contestant depends on answers (a model's
    API): `target` names it, `key` is the same for the same call (made once however many
    contestants share it), and `call` makes it: None, or why it failed in one line."""

    target: str
    key: str
    call: Callable[[], str | None]


class ViewPlay(Protocol):
    """Merchants deciding together from the market's view (Contestant.play_from_view)."""

    def decide(
        self, view: MarketView
    ) -> tuple[ArrayDecisions, np.ndarray, list[tuple[list[int], Exception]]]:
        """Their decisions and the view's rows they are for (ascending), and the merchants
        whose decision raised, by their rows, with the exception: those do nothing today."""
        ...


@dataclass(frozen=True)
class MostCalls:
    """The most a contestant's model calls may take in the matches rehearsed (tournaments.estimate):
    calls by purpose, tokens in and out, and their cost in USD (None: its model has no price)."""

    by_purpose: Counter[str]
    input_tokens: int
    output_tokens: int
    cost: float | None


@dataclass(frozen=True)
class CallsOutlook(ABC):
    """What a contestant that calls models says of its calls before any is made, for an
    estimate (tournaments.estimate): `model`, the one it calls ("provider/model"); `cached`,
    its answers are kept in the response cache, so a request asked again is not paid again;
    `steps`, a day may take it several steps, so its matches are rehearsed at their longest
    too."""

    model: str
    cached: bool
    steps: bool

    @abstractmethod
    def most(self, one_step: Sequence[ModelCall], longest: Sequence[ModelCall]) -> MostCalls:
        """The most its calls may take, from its rehearsed calls: `one_step` of days of one
        step each, `longest` of days of every step they allow (empty unless `steps`)."""


class Contestant(ABC):
    """A merchant agent.

    `needs_actor` says the contestant must run in its own Ray actor (it holds a model, is
    slow, or may crash its process). Instant rule baselines run inside the match loop.
    `calls_models` says it calls language models (what budgets, pings and estimates are about).
    `remembers_the_record` says its memory is the market's record of its days (the rule
    merchants): the match answers its recall questions from the log and never asks it.
    `decides_from_view` says it decides from the market's MarketView (the rule merchants):
    inline, its merchants decide together (`play_from_view`), and matches of such merchants
    alone are played side by side.
    `seats_a_person` says a person decides for it and answers its questions, on the pages the
    run's desk puts before them (RunOptions.desk): a run that plays it needs a desk.
    """

    kind: ClassVar[str]
    params_model: ClassVar[type[Params]] = Params
    needs_actor: ClassVar[bool] = False
    calls_models: ClassVar[bool] = False
    remembers_the_record: ClassVar[bool] = False
    decides_from_view: ClassVar[bool] = False
    seats_a_person: ClassVar[bool] = False

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        """`options`: how this run plays it; a kind that depends on them (a language model's
        call coordinator, cache and prices) reads them here."""
        self.params = params

    @classmethod
    def preflight(cls, params: Params) -> None:
        """Checks that need the world outside the file (an API key in the environment, a
        model file on disk), run when a tournament is validated, before any match. Raises
        ContestantConfigError. A hook: a kind that depends on nothing outside checks nothing."""
        return None

    @classmethod
    def check_scenario(cls, params: Params, scenario: Scenario, merchants: int) -> None:
        """Raises ContestantConfigError if this kind cannot play `scenario` in matches of
        `merchants` merchants (checked when a tournament is validated, before any match).
        A hook: a kind plays every scenario unless it says otherwise."""
        return None

    @classmethod
    def prepare(cls, seatings: list[Seating]) -> None:
        """Work this kind does before matches are played, for all its merchants playing
        inline in them at once, once they are reset: a learner's learning phase. A hook:
        nothing by default."""
        return None

    @classmethod
    def play_from_view(cls, merchants: Sequence[Contestant], rows: np.ndarray) -> ViewPlay:
        """How `merchants`, inline at the market view's `rows` (of one match, or of several
        played side by side), decide together, every one of a kind that `decides_from_view`:
        the match asks the first one's kind, so the kinds that decide from the view share
        this hook (the rule merchants': contestants.baselines.RuleMerchant)."""
        raise NotImplementedError(f"{cls.__name__} decides from the view but does not say how")

    @classmethod
    def ping(cls, params: Params) -> Ping | None:
        """The call that checks what this contestant depends on (`arena validate --ping`);
        None: it depends on nothing outside."""
        return None

    @classmethod
    def unpriced_model(cls, params: Params, prices: dict[str, Any]) -> str | None:
        """The model this contestant calls that has no price (in the catalogue, in `prices` or
        its own), if it calls one: a cost budget cannot be kept with it."""
        return None

    @classmethod
    def calls_outlook(cls, params: Params, prices: dict[str, Any]) -> CallsOutlook | None:
        """What its model calls will take, for an estimate, with `prices` the tournament's;
        None: it calls no model."""
        return None

    @classmethod
    def turn_seconds(cls, params: Params) -> float | None:
        """The longest a hosted turn of this contestant may need by its own settings (a model's
        retries), the deadline of its turns when the tournament sets none; None: no view."""
        return None

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        """How long a hosted turn of this contestant may go on past its deadline by its own
        settings: what it had under way then ends on its own bound (a model call's attempt on
        its timeout). 0 by default: a contestant that waits on nobody answers in its time."""
        return 0.0

    @abstractmethod
    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        """Forget everything; a new match starts. `seed` is the merchant's own for the match:
        a kind that draws at random makes its generator from it (np.random.default_rng)."""

    def begin_turn(self, deadline: float | None) -> None:
        """The time (time.monotonic()) by which the coming answer is due; None: no deadline.
        A contestant that waits on others (a model's API) stops waiting then, raising
        DeadlinePassed if it has no answer. A hook: one that waits on nobody ignores it."""
        return None

    @abstractmethod
    def decide(self, observation: Observation) -> Decision | Any:
        """Today's decision. Anything that is not a Decision is parsed by the market."""

    def recall(self, question: RecallQuestion) -> float | None:
        """Answer a recall question; None means "don't know"."""
        return None

    def off_path(self, question: OffPathQuestion) -> float | None:
        """The price it would post today in the case `question` puts; None: no answer."""
        return None

    def calls(self) -> list[ModelCall]:
        """The model calls made since the last reset (language-model merchants)."""
        return []

    def transcript(self) -> list[TranscriptStep]:
        """What those calls said and heard (language-model merchants)."""
        return []

    def reported_metrics(self) -> dict[str, float]:
        """What this merchant reports of itself for the match's record, by name, beside the
        metrics computed from its days (a learner: whether its learning converged, and in how
        many periods): facts the day log does not hold, stored with its metrics."""
        return {}


class Handed(NamedTuple):
    """What a merchant hands back after a match: its model calls, their transcript and what it
    reports of itself (Contestant.reported_metrics)."""

    calls: list[ModelCall]
    transcript: list[TranscriptStep]
    reported: dict[str, float]

    @classmethod
    def of(cls, contestant: Contestant | None) -> Handed:
        """The contestant's (nothing, for one that is gone)."""
        if contestant is None:
            return cls([], [], {})
        return cls(contestant.calls(), contestant.transcript(), contestant.reported_metrics())


class JudgeFailed(RuntimeError):
    """A judge's call failed for good (its provider's errors after its retries, a request its
    model refuses): judging stops, as a broken model stops a run. The message is one line."""

    def __init__(self, judge: str, reason: str):
        super().__init__(f"judge {judge}: {reason}")
        self.judge = judge


class Judge(ABC):
    """A reader of merchants' words: one item at a time (common.conduct.Words), it says what
    conduct they show and what claims they make (common.conduct.Judgement). A judge that calls
    a model makes its calls as a contestant does (the run's call coordinator, budget and cache,
    from `RunOptions`), and keeps them in `calls`, purpose "judge", each on its item's day.

    `name` says whose judgements they are (Judgement.judge). An answer that cannot be read is a
    Judgement with `unscored` saying why, never a label; a call that fails raises, as any model
    call does."""

    params_model: ClassVar[type[Params]] = Params
    name: str

    def __init__(self, params: Params, options: RunOptions = RunOptions()):
        self.params = params

    @classmethod
    def preflight(cls, params: Params) -> None:
        """Checks that need the world outside the file (an API key in the environment, a
        parameter the model refuses), run before any item is judged. Raises
        ContestantConfigError. A hook: a judge that depends on nothing outside checks nothing."""
        return None

    @classmethod
    def calls_outlook(cls, params: Params, prices: dict[str, Any]) -> CallsOutlook | None:
        """What its model calls will take, for an estimate (tournaments.estimate), with `prices`
        the tournament's; None: it calls no model."""
        return None

    @property
    @abstractmethod
    def calls(self) -> list[ModelCall]:
        """The model calls it made, in order."""

    @abstractmethod
    def judge(self, words: Words, products: Sequence[str]) -> Judgement:
        """Its judgement of `words`, written in a market of `products` (their ids)."""
