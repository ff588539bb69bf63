"""The conformance kit: checks that a contestant kind keeps the promises a tournament relies on,
as PettingZoo's `api_test` checks an environment. A kind's author runs it in a test:

    from contestants.conformance import check_contestant

    def test_my_kind_conforms():
        check_contestant(MyKind, {"markup": 1.5})

Each rule is a function of its own, raising NonConformance (an AssertionError, so a test shows
it as a failed assertion) that names the rule and says what broke it:

- params refused strictly (`check_params`): the parameter model refuses an unknown key and a
  value of the wrong type for each of its fields, naming the key (what a tournament file's
  mistake is reported by), and takes its own defaults;
- reset determinism (`check_reset_determinism`): reset with the same seed and shown the same
  observations, a contestant decides the same (and asks its models the same), whether it is
  new or has played under another seed since;
- picklable for Ray (`check_pickling`): the contestant and its params survive pickle and
  cloudpickle (what Ray sends objects between processes with), new and in the middle of a
  match, and the copy decides as the original;
- the turn deadline honoured (`check_deadline`): every turn ends within its deadline, and a
  turn told its deadline has passed calls no model and ends within the overrun its kind
  declares (Contestant.turn_seconds, overrun_seconds).

The checks play the kind in every seat of a few days of a real market (market.env.MarketEnv) of
a scenario it plays, reset, prepared and asked as a tournament asks it (`Trial.of`). They need no
network: a kind that calls models is given params that point it at a local one (the embedded
model, a server on 127.0.0.1).
"""

from __future__ import annotations

import contextlib
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from pydantic import ValidationError

from common.errors import Problem, first_problem
from contestants.base import Contestant, ContestantConfigError, DeadlinePassed, Params, RunOptions, Seating
from contestants.desk import BlankDesk
from contestants.kinds import contestant_class
from market.env import MarketEnv
from market.scenario import Scenario, load_scenario, shipped_scenarios
from market.types import Observation, ParsedDecision, parse_decision

SEATS = 2  # merchants of the kind in the market the checks play
DAYS = 3
OTHER_SEED = 1_000  # added to a trial's seed: a seed it was not reset with
AT_ONCE_S = 1.0  # the most a turn may take of a kind that declares no turn seconds (it waits on nobody)
WRONG_TYPES: tuple[Any, ...] = ({"wrong": "type"}, "wrong type", [["wrong", "type"]])  # one fits no field

PARAMS = "params refused strictly"
RESET = "reset determinism"
PICKLING = "picklable for Ray"
DEADLINE = "turn deadline honoured"


class NonConformance(AssertionError):
    """A contestant kind breaks a rule of the kit: `rule` names it, the message says how."""

    def __init__(self, rule: str, why: str):
        super().__init__(f"{rule}: {why}")
        self.rule = rule


class Played(NamedTuple):
    """What the contestant of the first seat did in a trial: the observations it was shown, by
    day, its decisions as the market reads them, and the model requests it made (day, purpose
    and request hash of each)."""

    observations: list[Observation]
    decisions: list[ParsedDecision]
    asked: list[tuple[int, str, str]]


Turn = Callable[[Contestant, Observation], Any]


def _decided(contestant: Contestant, observation: Observation) -> Any:
    """A turn as a contestant played inline takes it: its decision, no deadline."""
    return contestant.decide(observation)


@dataclass(frozen=True)
class Trial:
    """What the checks play: `kind` with `params` in each of SEATS seats of a market of
    `scenario` for `days` days, the market's seed `seed` and seat i's contestant's seed + i,
    each contestant made with `options` (a kind that seats a person, given no desk, plays with a
    BlankDesk: a person who submits every page blank at once)."""

    kind: type[Contestant]
    params: Params
    scenario: Scenario
    days: int
    seed: int
    options: RunOptions

    @classmethod
    def of(
        cls,
        kind: str | type[Contestant],
        params: dict[str, Any] | None = None,
        *,
        scenario: str | Scenario | None = None,
        days: int = DAYS,
        seed: int = 1,
        options: RunOptions | None = None,
    ) -> Trial:
        """The trial of `kind` (a kind's name, or its class) with `params` (its defaults: none
        given) on `scenario` (a shipped scenario's name, a scenario file, or a Scenario; None:
        the first shipped scenario the kind plays with these params). Raises pydantic's
        ValidationError for params that do not validate, and ContestantConfigError for a
        scenario the kind does not play."""
        played = contestant_class(kind) if isinstance(kind, str) else kind
        validated = played.params_model.model_validate(params or {})
        if scenario is None:
            chosen = _first_played(played, validated)
        else:
            chosen = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
            played.check_scenario(validated, chosen, SEATS)
        given = options or RunOptions()
        if played.seats_a_person and given.desk is None:  # a person who submits every page blank at once
            given = given.model_copy(update={"desk": BlankDesk()})
        return cls(played, validated, chosen, days, seed, given)

    @cached_property
    def reference(self) -> Played:
        """The trial played by new contestants: what the checks compare with."""
        return self.play(self.seated(self.seed))

    def make(self) -> Contestant:
        return self.kind(self.params, self.options)

    def seated(self, seed: int) -> list[Contestant]:
        """A new contestant in every seat, reset and prepared."""
        seats = [self.make() for _ in range(SEATS)]
        for seat, contestant in enumerate(seats):
            contestant.reset(merchant=f"m{seat}", scenario=self.scenario, seed=seed + seat)
        self._prepare(seats, range(SEATS), seed)
        return seats

    def ready(self, contestant: Contestant, seed: int) -> Contestant:
        """`contestant` reset and prepared for the first seat."""
        contestant.reset(merchant="m0", scenario=self.scenario, seed=seed)
        self._prepare([contestant], [0], seed)
        return contestant

    def _prepare(self, contestants: Sequence[Contestant], seats: Sequence[int], seed: int) -> None:
        """The kind's work before a match, as a tournament has it done for merchants played
        inline (a kind that needs an actor is hosted, and its hosts prepare nothing)."""
        if self.kind.needs_actor:
            return
        lineup = ((self.kind.kind, self.params),) * SEATS
        self.kind.prepare([Seating(c, s, lineup, self.scenario, seed) for c, s in zip(contestants, seats)])

    def play(self, seats: Sequence[Contestant], turn: Turn = _decided) -> Played:
        """The market played with `seats` (as `seated` makes them), each turn taken by `turn`."""
        named = {f"m{seat}": contestant for seat, contestant in enumerate(seats)}
        env = MarketEnv(self.scenario, list(named), self.days)
        observations, _ = env.reset(seed=self.seed)
        shown, decisions = [], []
        while env.agents:
            actions = {agent: turn(named[agent], observations[agent]) for agent in env.agents}
            if "m0" in actions:
                shown.append(observations["m0"])
                decisions.append(parse_decision(actions["m0"]))
            observations, *_ = env.step(actions)
        return Played(shown, decisions, _asked(seats[0]))

    def replay(self, contestant: Contestant, observations: Sequence[Observation]) -> Played:
        """The first seat's days again, `contestant` shown the same `observations`."""
        decisions = [parse_decision(contestant.decide(observation)) for observation in observations]
        return Played(list(observations), decisions, _asked(contestant))


def _asked(contestant: Contestant) -> list[tuple[int, str, str]]:
    """The model requests a contestant made since its reset."""
    return [(call.day, call.purpose, call.request_hash) for call in contestant.calls()]


def _first_played(kind: type[Contestant], params: Params) -> Scenario:
    """The first shipped scenario, by name, that `kind` plays with `params`."""
    for name in shipped_scenarios():
        scenario = load_scenario(name)
        try:
            kind.check_scenario(params, scenario, SEATS)
        except ContestantConfigError:
            continue
        return scenario
    raise ContestantConfigError(f"{kind.kind} plays none of the shipped scenarios: give it a scenario")


def check_contestant(
    kind: str | type[Contestant],
    params: dict[str, Any] | None = None,
    *,
    scenario: str | Scenario | None = None,
    days: int = DAYS,
    seed: int = 1,
    options: RunOptions | None = None,
    deadline: float | None = None,
) -> None:
    """Every rule of the kit, checked of `kind` with `params` (see `Trial.of` for the rest, and
    `check_deadline` for `deadline`). Raises NonConformance for the first rule broken."""
    trial = Trial.of(kind, params, scenario=scenario, days=days, seed=seed, options=options)
    check_params(trial)
    check_reset_determinism(trial)
    check_pickling(trial)
    check_deadline(trial, deadline)


# ---- params refused strictly


def check_params(trial: Trial) -> None:
    """The kind's parameter model refuses a key it does not know and, for each of its fields, a
    value of a type the field does not take, each time naming the key (as the problem's
    field, which a tournament reports as ContestantConfigError's, or in its message); and it
    takes its defaults: the trial's params with every field that has a default left out."""
    model, given = trial.kind.params_model, trial.params.model_dump(exclude_unset=True)
    unknown = "no_such_parameter"
    _refused(model, {**given, unknown: 1}, unknown, f"an unknown key {unknown!r}")
    for name in model.model_fields:
        problems = [_problem(model, {**given, name: value}) for value in WRONG_TYPES]
        if all(problem is None for problem in problems):
            raise NonConformance(
                PARAMS, f"{name!r} takes any of {WRONG_TYPES}: give it a type that refuses wrong values"
            )
        _refused(model, {**given, name: next(v for v, p in zip(WRONG_TYPES, problems) if p)}, name, "")
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    defaults = {key: value for key, value in given.items() if key in required}
    if (problem := _problem(model, defaults)) is not None:
        raise NonConformance(PARAMS, f"its defaults do not validate: {problem}")


def _refused(model: type[Params], params: dict[str, Any], key: str, what: str) -> None:
    """`model` refuses `params`, naming `key`; `what` is wrong with them (empty: a value of the
    wrong type for `key`)."""
    what = what or f"{params[key]!r} for {key!r}"
    try:
        model.model_validate(params)
    except ValidationError as exc:
        problem = first_problem(exc)
        if key not in (problem.field or "").split(".") and key not in problem.explained:
            raise NonConformance(PARAMS, f"{what} is refused without naming it: {_said(problem)}") from None
        return
    raise NonConformance(PARAMS, f"{what} is accepted (refuse it: a mistake in a tournament file)")


def _problem(model: type[Params], params: dict[str, Any]) -> str | None:
    """Why `model` refuses `params`, in the words a tournament reports; None: it takes them."""
    try:
        model.model_validate(params)
    except ValidationError as exc:
        return _said(first_problem(exc))
    return None


def _said(problem: Problem) -> str:
    """A refusal of params in the words a tournament reports it."""
    return f"{problem.field}: {problem.explained}" if problem.field else problem.explained


# ---- reset determinism


def check_reset_determinism(trial: Trial) -> None:
    """The first seat's days played again by a new contestant, reset with the seed it had
    and shown the observations it was, are decided the same (with the same model requests);
    and again by a contestant that played the whole trial, then a day reset with another
    seed, then reset with its own. (Under another seed it may decide otherwise: nothing is
    asked of that day.)"""
    reference = trial.reference
    fresh = trial.ready(trial.make(), trial.seed)
    _same(
        RESET,
        "a new contestant reset with the same seed",
        trial.replay(fresh, reference.observations),
        reference,
    )
    seats = trial.seated(trial.seed)
    trial.play(seats)
    used = seats[0]
    trial.replay(trial.ready(used, trial.seed + OTHER_SEED), reference.observations[:1])
    again = trial.replay(trial.ready(used, trial.seed), reference.observations)
    _same(
        RESET,
        "a contestant reset with its seed again, after a match and a day under another",
        again,
        reference,
    )


def _same(rule: str, who: str, played: Played, reference: Played) -> None:
    """`played` decided its days as `reference` decided them, and made the same model requests
    in them; `who` says whose days they are."""
    decisions = {
        observation.day: decision
        for observation, decision in zip(reference.observations, reference.decisions)
    }
    for observation, decision in zip(played.observations, played.decisions):
        first = decisions[observation.day]
        if repr(decision) != repr(first):  # repr: NaN is NaN
            raise NonConformance(
                rule,
                f"{who} decided {_shown(decision)} on day {observation.day} "
                f"where the first decided {_shown(first)}",
            )
    days = {observation.day for observation in played.observations}
    if played.asked != [request for request in reference.asked if request[0] in days]:
        raise NonConformance(rule, f"{who} asked its models other requests than the first did")


def _shown(decision: ParsedDecision) -> str:
    """A decision in a line: its operations, or all of it if the market rejects some."""
    operations = [operation for _, operation in decision.operations]
    return repr(operations if not decision.rejections else decision)[:300]


# ---- picklable for Ray


def check_pickling(trial: Trial) -> None:
    """Written with pickle and with cloudpickle and read back, the params are equal, and a
    contestant copied new, and one copied after half the first seat's days, decide the
    (remaining) days as the original did."""
    from ray import cloudpickle  # Ray's own, as it ships actors' arguments; heavy: imported here

    reference = trial.reference
    half = len(reference.observations) // 2
    before, after = reference.observations[:half], reference.observations[half:]
    when = f"after day {before[-1].day}" if before else "after its reset"
    for name, module in (("pickle", pickle), ("cloudpickle", cloudpickle)):
        params = _copied(name, module, trial.params, "its params")
        if params != trial.params:
            raise NonConformance(PICKLING, f"its params, copied with {name}, are not equal: {params}")
        new = trial.ready(_copied(name, module, trial.make(), "a new contestant"), trial.seed)
        _same(
            PICKLING,
            f"a new contestant copied with {name}",
            trial.replay(new, reference.observations),
            reference,
        )
        original = trial.ready(trial.make(), trial.seed)
        trial.replay(original, before)
        copy = _copied(name, module, original, f"a contestant {when}")
        who = f"a contestant copied with {name} {when}"
        _same(PICKLING, who, _continued(trial, copy, after), reference)
        _same(PICKLING, "the contestant it was copied from", _continued(trial, original, after), reference)


def _copied(name: str, module: Any, thing: Any, what: str) -> Any:
    """`thing` written with `module` (pickle or cloudpickle) and read back."""
    try:
        return module.loads(module.dumps(thing))
    except Exception as exc:
        raise NonConformance(
            PICKLING, f"{what} cannot be copied with {name}: {type(exc).__name__}: {exc}"
        ) from None


def _continued(trial: Trial, contestant: Contestant, observations: Sequence[Observation]) -> Played:
    """The days of `observations` decided by `contestant`, and the model requests it made in them."""
    made = len(_asked(contestant))
    played = trial.replay(contestant, observations)
    return played._replace(asked=played.asked[made:])


# ---- the turn deadline honoured


def check_deadline(trial: Trial, deadline: float | None = None) -> None:
    """The trial played with a deadline for every turn (`deadline` seconds; None: the kind's
    own, Contestant.turn_seconds, or AT_ONCE_S for a kind that declares none, which waits on
    nobody) told to the contestant (Contestant.begin_turn): each turn ends by its deadline,
    without giving up (DeadlinePassed) before it. Then a new contestant's first turn, told
    its deadline has passed already: it calls no model and ends, with a decision or
    DeadlinePassed, within the overrun its kind declares (Contestant.overrun_seconds) and
    AT_ONCE_S."""
    declared, overrun = trial.kind.turn_seconds(trial.params), trial.kind.overrun_seconds(trial.params)
    if (declared is not None and not declared > 0) or not overrun >= 0:
        raise NonConformance(DEADLINE, f"it declares turns of {declared} s and overruns of {overrun} s")
    seconds = deadline or declared or AT_ONCE_S

    def timed(contestant: Contestant, observation: Observation) -> Any:
        start = time.monotonic()
        contestant.begin_turn(start + seconds)
        try:
            decision = contestant.decide(observation)
        except DeadlinePassed as exc:
            taken = time.monotonic() - start
            raise NonConformance(
                DEADLINE, f"it gave up on day {observation.day} after {taken:.3g} s of its {seconds:g}: {exc}"
            ) from None
        taken = time.monotonic() - start
        if taken > seconds:
            own = "" if declared or deadline else " (a kind that declares no turn_seconds answers at once)"
            raise NonConformance(
                DEADLINE,
                f"its turn on day {observation.day} took {taken:.3g} s, "
                f"past its deadline of {seconds:g} s{own}",
            )
        return decision

    trial.play(trial.seated(trial.seed), timed)
    _late(trial, overrun)


def _late(trial: Trial, overrun: float) -> None:
    """A new contestant's first turn, its deadline passed as it begins."""
    contestant = trial.ready(trial.make(), trial.seed)
    reached = _reached(contestant)
    start = time.monotonic()
    contestant.begin_turn(start)
    with contextlib.suppress(DeadlinePassed):  # as much as an answer: the turn is late
        contestant.decide(trial.reference.observations[0])
    taken = time.monotonic() - start
    if _reached(contestant) > reached:
        raise NonConformance(DEADLINE, "told its deadline had passed, it called a model all the same")
    if taken > overrun + AT_ONCE_S:
        raise NonConformance(
            DEADLINE,
            f"told its deadline had passed, it went on for {taken:.3g} s; it declares overruns of "
            f"{overrun:g} s at most (overrun_seconds)",
        )


def _reached(contestant: Contestant) -> int:
    """The model calls a contestant has made since its reset that reached a model (not answered
    from the response cache)."""
    return sum(not call.cached for call in contestant.calls())
