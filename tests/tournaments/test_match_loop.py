"""The day loop on its own, without Ray: seats that answer, fail, stop the run's calls or are
lost, and what the match records of each."""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys

import pytest

from common.model_calls import ModelCall
from contestants.base import Handed, RecallQuestion, RunOptions
from contestants.baselines import FixedPrice, FixedPriceParams
from contestants.calls.coordinator import CallsStopped
from market.scenario import Scenario, load_scenario
from market.types import Observation
from results.records import FinishedMatch, StoppedMatch
from results.scoring.collusion import seat_benchmarks
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchLost, MatchRules, inline_seat, play_here
from tournaments.plan import ContestantPlan, plan_contestants
from tournaments.schedule import MatchSpec
from tournaments.seats import Seat, SeatFault, SeatLost, SeatTurn, TurnStuck

DAYS = 8
SPEC = MatchSpec(key="loop", index=0, scenario="price_war", seed=1, days=DAYS, seats=("fixed", "scripted"))


class Remembering(FixedPrice):
    """A fixed-price merchant asked by its Observations and asked what it remembers (its
    answer: the day asked about)."""

    kind = "remembering_for_tests"
    decides_from_view = False
    remembers_the_record = False

    def recall(self, question: RecallQuestion) -> float:
        return float(question.day)


def plans() -> dict[str, ContestantPlan]:
    scripted = ContestantPlan("scripted", Remembering, FixedPriceParams(), hosted=True, deadline=1.0)
    return {**plan_contestants([ContestantEntry(name="fixed", kind="fixed_price")]), "scripted": scripted}


def call(day: int) -> ModelCall:
    return ModelCall(
        day=day,
        purpose="decide",
        model="scripted/x",
        input_tokens=1,
        output_tokens=1,
        cached_tokens=0,
        latency=0.0,
        attempts=1,
        cost=0.0,
        cached=False,
        request_hash=str(day),
        prompt_version="v",
        temperature=None,
        seed=None,
    )


class ScriptedSeat(Seat):
    """A seat that plays its contestant inline except on the days of `script`: there it
    gives the SeatTurn scripted, or raises the exception scripted. It makes a model call a
    day, and its finish raises `finish_raises` if set."""

    def __init__(self, inner: Seat, script: dict, finish_raises: BaseException | None = None):
        self.inner, self.name, self.script, self.finish_raises = inner, inner.name, script, finish_raises
        self.days: list[int] = []
        self.questions: list[RecallQuestion | None] = []

    async def turn(self, observation: Observation, question: RecallQuestion | None) -> SeatTurn:
        self.days.append(observation.day)
        self.questions.append(question)
        await asyncio.sleep(0)  # a hosted seat waits for its answer
        scripted = self.script.get(observation.day)
        if isinstance(scripted, BaseException):
            raise scripted
        return scripted if scripted is not None else await self.inner.turn(observation, question)

    async def finish(self) -> Handed:
        if self.finish_raises is not None:
            raise self.finish_raises
        return Handed([call(day) for day in self.days], [], {})


def play(script: dict, finish_raises: BaseException | None = None, recall_every: int = 0):
    """The match played with the `scripted` merchant's seat scripted; its seat and the days told."""
    seats: dict[str, ScriptedSeat] = {}

    def make_seat(plan: ContestantPlan, key: str, scenario: Scenario, seed: int, options: RunOptions) -> Seat:
        seat = inline_seat(plan, key, scenario, seed, options)
        if plan.name != "scripted":
            return seat
        seats[plan.name] = ScriptedSeat(seat, script, finish_raises)
        return seats[plan.name]

    rules = MatchRules(seed=3, recall_every=recall_every)
    match = Match(SPEC, load_scenario("price_war"), rules, plans(), make_seat)
    told: list[int] = []
    loop = asyncio.new_event_loop()
    try:
        played = loop.run_until_complete(match.play(lambda: told.append(1)))
    finally:
        loop.close()
    return played, seats["scripted"], len(told)


def alone() -> FinishedMatch:
    played = play_here([Match(SPEC, load_scenario("price_war"), MatchRules(seed=3), plans())])[0]
    assert isinstance(played, FinishedMatch)
    return played


def test_a_seat_that_answers_as_inline_plays_the_match_inline_play_gives():
    played, seat, told = play({})
    reference = alone()
    assert isinstance(played, FinishedMatch)
    assert list(played.days_played) == list(reference.days_played)
    assert seat.days == list(range(1, DAYS + 1)) and told == DAYS
    assert [(c.merchant, c.day) for c in played.calls] == [("scripted", day) for day in range(1, DAYS + 1)]


def test_a_fault_leaves_the_merchant_doing_nothing_that_day_and_is_recorded():
    played, _, _ = play({3: SeatTurn(fault=SeatFault("timeout", "no decision within 1 s"))})
    reference = alone()
    assert isinstance(played, FinishedMatch)
    assert [(f.day, f.merchant, f.kind) for f in played.faults] == [(3, "scripted", "timeout")]
    theirs = {d.day: d for d in played.days_played if d.merchant == "scripted"}
    before = {d.day: d for d in reference.days_played if d.merchant == "scripted"}
    assert theirs[2] == before[2]  # the same until the fault
    assert before[3].operations and theirs[3].operations == []  # it did nothing that day


def test_a_lost_seat_stops_the_match_that_day_and_it_is_lost_with_the_calls_made():
    played = None
    with pytest.raises(MatchLost) as lost:
        played = play({4: SeatLost("a host of its merchants was on a node that died (10.0.0.9)")})
    assert played is None
    assert str(lost.value) == "a host of its merchants was on a node that died (10.0.0.9)"
    assert [c.day for c in lost.value.calls] == [1, 2, 3, 4]  # paid, though the match is not stored


def test_a_seat_found_lost_as_the_match_ends_loses_it():
    with pytest.raises(MatchLost) as lost:
        play({}, finish_raises=SeatLost("lost at the end"))
    assert str(lost.value) == "lost at the end"


def test_a_merchant_whose_last_turn_does_not_end_stops_the_match():
    """Its seat's finish says the turn outlasted every bound (TurnStuck): the match is stopped
    with that reason, as when the run's calls stop, and the other seats' calls are kept."""
    played, _, told = play({}, finish_raises=TurnStuck("the turn of scripted in match loop had not ended"))
    assert isinstance(played, StoppedMatch) and told == DAYS
    assert played.reason == "the turn of scripted in match loop had not ended"


def test_calls_that_stop_leave_the_match_stopped_with_its_calls():
    played, seat, told = play({5: CallsStopped("token budget reached")})
    assert isinstance(played, StoppedMatch)
    assert played.reason == "token budget reached"
    assert seat.days == [1, 2, 3, 4, 5] and told == 4
    assert [c.day for c in played.calls] == [1, 2, 3, 4, 5]


def test_the_recall_question_reaches_the_seats_on_question_days_and_is_scored():
    played, seat, _ = play({}, recall_every=3)
    asked = [(day, question.day) for day, question in zip(seat.days, seat.questions) if question is not None]
    assert [day for day, _ in asked] == [3, 6]
    assert all(1 <= about <= day - 2 for day, about in asked)  # at least two days back
    assert isinstance(played, FinishedMatch)
    answers = [(p.merchant, p.day, p.answer) for p in played.recalls.records()]
    assert sorted(a for a in answers if a[0] == "scripted") == [("scripted", d, float(q)) for d, q in asked]


SCORE_ELSEWHERE = """
import pickle, sys
from tournaments.match import Match, play_here
spec, scenario, rules, plans = pickle.loads(sys.stdin.buffer.read())
[finished] = play_here([Match(spec, scenario, rules, plans)])
imported = [name for name in ("scipy", "sqlalchemy", "sqlmodel") if name in sys.modules]
sys.stdout.buffer.write(pickle.dumps((finished.metrics, finished.market, imported)))
"""


@pytest.mark.slow  # a process of its own, to see what it imports
def test_a_match_scored_with_the_benchmarks_of_its_rules_scores_as_if_it_solved_them_without_scipy():
    """A runner gets its scenarios' price equilibria with the rules (solved once, by the
    driver): it scores its matches with them as it would have with its own, and never imports
    SciPy (a third of a second of every runner's start), nor SQLAlchemy (half a second: the
    records are pydantic data, their tables the driver's)."""
    scenario = load_scenario("calvano")
    spec = MatchSpec(key="k", index=0, scenario="calvano", seed=1, days=6, seats=("a", "b"))
    plans = plan_contestants(
        [ContestantEntry(name="a", kind="fixed_price"), ContestantEntry(name="b", kind="undercut")]
    )
    rules = MatchRules(seed=1, benchmarks={"calvano": seat_benchmarks(scenario, 2)})
    [solved_here] = play_here([Match(spec, scenario, MatchRules(seed=1), plans)])
    child = subprocess.run(
        [sys.executable, "-c", SCORE_ELSEWHERE],
        input=pickle.dumps((spec, scenario, rules, plans)),
        capture_output=True,
        check=True,
    )
    metrics, market, imported = pickle.loads(child.stdout)
    assert market.metrics and market.metrics == solved_here.market.metrics  # the collusion measures
    assert metrics == solved_here.metrics
    assert imported == []


def test_solo_matches_of_a_scenario_and_seed_start_from_the_same_draws():
    """Merchants playing alone are ranked against the others alone on their scenario and seed
    (results.scoring.ratings.ranked_matches), so those matches start from the same draws: two of one
    kind, customers counted one by one, end with the same books whatever their names, and on
    another seed with other books."""
    price_war = load_scenario("price_war")
    counted = price_war.model_copy(
        update={"demand": price_war.demand.model_copy(update={"mode": "stochastic"})}
    )
    entries = [ContestantEntry(name=name, kind="fixed_price") for name in ("ann", "bob")]
    plans = plan_contestants(entries)

    def alone(name: str, seed: int) -> list[float]:
        spec = MatchSpec(f"price_war/seed={seed}/{name}", 0, "price_war", seed, DAYS, (name,))
        played = play_here([Match(spec, counted, MatchRules(seed=4), plans)])[0]
        assert isinstance(played, FinishedMatch)
        return [played.merchants[0].net_worth, played.merchants[0].market_share, played.merchants[0].profit]

    assert alone("ann", 1) == alone("bob", 1)
    assert alone("ann", 1) != alone("ann", 2)
