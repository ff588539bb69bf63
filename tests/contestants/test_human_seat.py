"""The `human` kind played in whole matches in this process: people (threads) at a LocalDesk
take each page their seat puts before them and submit what they type, beside a rule merchant.
The stored days are what they submitted; a refused form comes back with the market's reason
and nothing of it applied; a passed deadline is a day of doing nothing with the match's
timeout fault; a message reaches the other seat; a recall question is answered on a page."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import pytest

from common.yaml_files import ConfigError
from contestants.base import (
    ANSWER,
    ContestantConfigError,
    DeadlinePassed,
    Desk,
    DeskAsk,
    DeskKey,
    Handed,
    OffPathQuestion,
    Question,
    RecallQuestion,
    RunOptions,
    Submitted,
)
from contestants.desk import Kept, LocalDesk
from contestants.human.form import day_form
from contestants.kinds import create
from market.operations import OperationRules, judge_day
from market.scenario import Scenario, load_scenario
from market.types import Observation
from results.records import FinishedMatch
from tournaments.config import ContestantEntry
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, inline_seat, play_here
from tournaments.plan import ContestantPlan, plan_contestants, plan_tournament
from tournaments.schedule import MatchSpec
from tournaments.seats import Seat, SeatTurn, late, take_turn

PRICE_WAR = load_scenario("price_war")  # one product, widget: unit cost 10, cash 2,000, no lead time
Person = Callable[[DeskAsk], dict[str, str]]


class ThreadSeat(Seat):
    """A seat whose contestant takes its turns on a thread of this process as a host takes them
    (take_turn, under its plan's deadline), without Ray; a late turn is a timeout fault, as a
    hosted seat records it. Its contestant is told its match's key."""

    def __init__(self, plan: ContestantPlan, key: str, scenario: Scenario, seed: int, options: RunOptions):
        self.contestant, self.name, self.deadline = (
            plan.make(options.for_match(key)),
            plan.name,
            plan.deadline,
        )
        self.contestant.reset(merchant=plan.name, scenario=scenario, seed=seed)

    async def turn(self, observation: Observation, question: Question | None) -> SeatTurn:
        turn = await asyncio.get_running_loop().run_in_executor(
            None, take_turn, self.contestant, observation, question, self.deadline
        )
        if turn.late:
            return SeatTurn(None, turn.recalled, late(self.deadline))
        return SeatTurn(turn.decision, turn.recalled)

    async def finish(self) -> Handed:
        return Handed.of(self.contestant)


def seat(plan: ContestantPlan, key: str, scenario: Scenario, seed: int, options: RunOptions) -> Seat:
    """Hosted kinds (a human) on a thread of their own, the others inline."""
    return (ThreadSeat if plan.hosted else inline_seat)(plan, key, scenario, seed, options)


@contextmanager
def people(desk: LocalDesk, persons: Mapping[str, Person]) -> Iterator[dict[str, list[DeskAsk]]]:
    """A thread per merchant of `persons` answering each page of its seat with what its person
    types, while the block runs; what each was asked, in order. A person that fails submits a
    blank page (so that its seat does not wait for ever), and the block fails after."""
    seen: dict[str, list[DeskAsk]] = {name: [] for name in persons}
    failed: list[str] = []
    done = threading.Event()

    def sit(name: str, person: Person) -> None:
        while not done.is_set():
            asked = desk.waiting(name, timeout=0.05)
            if asked is None:
                continue
            seen[name].append(asked)
            try:
                typed = person(asked)
            except Exception as exc:
                failed.append(f"{name} on {asked.key}: {exc!r}")
                typed = {}
            if not desk.submit(asked.key, typed):
                failed.append(f"{name}'s page {asked.key} was not open")

    threads = [threading.Thread(target=sit, args=item) for item in persons.items()]
    for thread in threads:
        thread.start()
    try:
        yield seen
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert failed == []


def play(spec: MatchSpec, entries: list[ContestantEntry], desk: LocalDesk, **rules) -> FinishedMatch:
    options = RunOptions(desk=desk)
    match = Match(
        spec, PRICE_WAR, MatchRules(seed=3, options=options, **rules), plan_contestants(entries), seat
    )
    played = play_here([match])[0]
    assert isinstance(played, FinishedMatch)
    return played


def ann(asked: DeskAsk) -> dict[str, str]:
    """Day 1 a price, an order, a message and a note; day 2 an order past her cash, then the
    price alone; day 3 the recall question with a word, then a number, and a blank form; day 4
    a price and advertising."""
    script = {
        (1, "day", 0): {"price.widget": "17.5", "order.widget": "30", "message": "hello bob", "note": "n1"},
        (2, "day", 0): {"price.widget": "16", "order.widget": "1000"},
        (2, "day", 1): {"price.widget": "16"},
        (3, "recall", 0): {ANSWER: "plenty"},
        (3, "recall", 1): {ANSWER: "12.5"},
        (3, "day", 0): {},
        (4, "day", 0): {"price.widget": "18", "advertise": "50"},
    }
    k = asked.key
    return script[k.day, k.asked, k.attempt]


def bob(asked: DeskAsk) -> dict[str, str]:
    """A price of 19 every day; the recall question left empty."""
    return {} if asked.question is not None else {"price.widget": "19"}


LAB = MatchSpec(key="lab/1", index=0, scenario="price_war", seed=1, days=4, seats=("ann", "bob", "hi"))
LAB_ENTRIES = [
    ContestantEntry(name=n, kind=k) for n, k in (("ann", "human"), ("bob", "human"), ("hi", "friendly"))
]


def test_two_people_play_a_match_beside_a_rule_merchant_and_their_days_are_what_they_submitted():
    kept: dict[DeskKey, Kept] = {}
    desk = LocalDesk(keep=kept.__setitem__)
    with people(desk, {"ann": ann, "bob": bob}) as seen:
        played = play(LAB, LAB_ENTRIES, desk, talk=True, recall_every=3)
    days = {(d.merchant, d.day): d for d in played.days_played}
    assert played.faults == []
    # what she typed, as operations (the order at the usual supplier: none named)
    assert days["ann", 1].operations == [
        {"op": "set_price", "product": "widget", "price": 17.5},
        {"op": "order", "product": "widget", "quantity": 30.0},
    ]
    assert days["ann", 1].message == "hello bob"
    assert days["ann", 2].operations == [{"op": "set_price", "product": "widget", "price": 16.0}]
    assert days["ann", 2].ordered == {"widget": 0.0}  # nothing of the refused form was applied
    assert days["ann", 3].operations == [] and days["ann", 3].prices == days["ann", 2].prices
    assert days["ann", 4].operations == [
        {"op": "set_price", "product": "widget", "price": 18.0},
        {"op": "advertise", "amount": 50.0},
    ]
    assert [days["bob", day].prices for day in (1, 2, 3, 4)] == [{"widget": 19.0}] * 4
    # each page once, the refused ones again, in the order asked: 5 of ann's, 5 of bob's
    assert [tuple(a.key) for a in seen["ann"]] == [
        ("lab/1", "ann", 1, "day", 0),
        ("lab/1", "ann", 2, "day", 0),
        ("lab/1", "ann", 2, "day", 1),
        ("lab/1", "ann", 3, "recall", 0),
        ("lab/1", "ann", 3, "recall", 1),
        ("lab/1", "ann", 3, "day", 0),
        ("lab/1", "ann", 4, "day", 0),
    ]
    assert [(a.key.day, a.key.asked) for a in seen["bob"]] == [
        (1, "day"),
        (2, "day"),
        (3, "recall"),
        (3, "day"),
        (4, "day"),
    ]
    # her message on bob's page the next morning, beside the rule merchant's greeting
    said = {m.merchant: m.text for m in seen["bob"][1].observation.messages or []}
    assert said["ann"] == "hello bob" and "hi" in said
    # the recall question on its page, her number (after a word refused) its answer, bob's none
    recalled = {r.merchant: r for r in played.recalls}
    question = seen["ann"][3].question
    assert isinstance(question, RecallQuestion) and seen["ann"][4].refusal is not None
    assert (recalled["ann"].asked_day, recalled["ann"].fact) == (question.day, question.fact)
    assert (recalled["ann"].answer, recalled["bob"].answer) == (12.5, None)
    assert played.metrics is not None and "seconds_per_day" in played.metrics["ann"]  # what time took
    # answered from what was kept, by the pages' keys, with nobody at the desk, the match is
    # played again as it was
    again = play(LAB, LAB_ENTRIES, LocalDesk(kept), talk=True, recall_every=3)
    assert list(again.days_played) == list(played.days_played) and again.recalls == played.recalls


def test_a_refused_form_is_asked_again_with_the_markets_reason_and_the_fields_as_typed():
    desk = LocalDesk()
    entries = [ContestantEntry(name="ann", kind="human"), ContestantEntry(name="fixed", kind="fixed_price")]
    spec = MatchSpec(key="refused", index=0, scenario="price_war", seed=1, days=2, seats=("ann", "fixed"))
    script = {(1, 0): {"price.widget": "17.5"}, (2, 0): {"price.widget": "16", "order.widget": "1000"}}

    def person(asked: DeskAsk) -> dict[str, str]:
        return script.get((asked.key.day, asked.key.attempt), {"price.widget": "16"})

    with people(desk, {"ann": person}) as seen:
        play(spec, entries, desk)
    first, again = seen["ann"][1], seen["ann"][2]
    assert first.observation is not None and first.refusal is None
    # 1,000 units at 10 each cost 10,000, past her cash: the market's own reason for that order
    judged = judge_day(
        OperationRules(PRICE_WAR), first.observation, [{"op": "order", "product": "widget", "quantity": 1000}]
    )
    reason = judged.rejections[0]
    assert reason is not None
    assert again.refusal is not None and again.refusal.fields == ("order.widget",)
    assert again.refusal.message == f"units of widget to order from the usual supplier: {reason.reason}"
    assert again.typed == script[2, 0] and again.observation is first.observation


def test_a_deadline_that_passes_is_a_day_of_doing_nothing_with_a_timeout_fault():
    desk = LocalDesk()  # nobody sits at it
    entries = [
        ContestantEntry(name="away", kind="human", params={"turn_seconds": 0.2}),
        ContestantEntry(name="fixed", kind="fixed_price"),
    ]
    spec = MatchSpec(key="away", index=0, scenario="price_war", seed=1, days=2, seats=("away", "fixed"))
    played = play(spec, entries, desk)
    assert [(f.day, f.merchant, f.kind) for f in played.faults] == [
        (1, "away", "timeout"),
        (2, "away", "timeout"),
    ]
    assert [d.operations for d in played.days_played if d.merchant == "away"] == [[], []]
    assert desk.waiting("away", timeout=0) is None  # both pages withdrawn
    assert not desk.submit(DeskKey("away", "away", 1, "day", 0), {"price.widget": "12"})


def test_an_off_path_question_is_a_page_of_one_number_asked_on_the_day_after_the_last_decided(observe):
    desk = LocalDesk()
    human = create("human", {}, RunOptions(desk=desk, match="m"))
    human.reset(merchant="me", scenario=PRICE_WAR, seed=1)
    question = OffPathQuestion(rival="r1", product="widget", price=12.0, posted=15.0)
    typed = {
        (1, "day", 0): {"price.widget": "15"},
        (2, "off_path", 0): {ANSWER: "1e999"},  # a number past any float's range: infinite, refused
        (2, "off_path", 1): {ANSWER: " 14.5 "},
    }
    with people(desk, {"me": lambda asked: typed[asked.key.day, asked.key.asked, asked.key.attempt]}) as seen:
        human.decide(observe(PRICE_WAR, day=1))
        answer = human.off_path(question)
    assert answer == 14.5
    first, again = seen["me"][1], seen["me"][2]
    assert first.key == DeskKey("m", "me", 2, "off_path", 0) and first.question == question
    assert first.observation is None and first.form is None
    assert (
        again.refusal is not None and again.refusal.fields == (ANSWER,) and again.typed == {ANSWER: "1e999"}
    )


class Clocked(Desk):
    """A person who submits at once what `typed` says for each page (by day, what is asked and
    attempt; a page not in it: never, as if its deadline passed), each page said to have waited
    10 s for its first attempt, 20 s for the next, and so on."""

    def __init__(self, typed: dict[tuple[int, str, int], dict[str, str]]):
        self.typed = typed

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        k = asked.key
        fields = self.typed.get((k.day, k.asked, k.attempt))
        return None if fields is None else Submitted(fields, 10.0 * (k.attempt + 1))


def test_the_seconds_a_persons_pages_waited_are_reported_per_day_whose_form_was_taken(observe):
    desk = Clocked(
        {
            (1, "day", 0): {"price.widget": "-1"},  # refused: a price must be positive
            (1, "day", 1): {},
            (2, "recall", 0): {ANSWER: "3"},
            (2, "day", 0): {"price.widget": "12"},
        }
    )
    human = create("human", {}, RunOptions(desk=desk))
    human.reset(merchant="me", scenario=PRICE_WAR, seed=1)
    human.decide(observe(PRICE_WAR, day=1))
    assert human.recall(RecallQuestion(day=1, fact="cash")) == 3.0
    human.decide(observe(PRICE_WAR, day=2))
    with pytest.raises(DeadlinePassed):
        human.decide(observe(PRICE_WAR, day=3))  # nothing submitted: not a day taken
    # day 1: 10 s refused, then 20 s; day 2: 10 s its question, 10 s its form; mean (30 + 20) / 2
    assert human.reported_metrics() == {"seconds_per_day": 25.0}
    human.reset(merchant="me", scenario=PRICE_WAR, seed=1)
    assert human.reported_metrics() == {}


def test_a_human_seat_needs_a_desk_and_a_positive_deadline():
    with pytest.raises(ContestantConfigError, match="desk"):
        create("human", {})
    with pytest.raises(ContestantConfigError):
        create("human", {"turn_seconds": 0}, RunOptions(desk=LocalDesk()))


def test_the_desk_shows_each_person_only_their_own_seats_pages():
    desk = LocalDesk()
    form = day_form(PRICE_WAR, talk=False)
    answers: dict[str, dict[str, str] | None] = {}

    def seat_asks(name: str) -> None:
        submitted = desk.ask(DeskAsk(DeskKey("m", name, 1, "day", 0), None, form), within=None)
        answers[name] = None if submitted is None else submitted.fields

    seats = [threading.Thread(target=seat_asks, args=(name,)) for name in ("a", "b")]
    for thread in seats:
        thread.start()
    for name in ("b", "a"):  # answered in the other order than asked, each by its own person
        asked = desk.waiting(name, timeout=60)  # (bounded: a desk that never shows it fails here)
        assert asked is not None and asked.key.merchant == name
        assert desk.waiting(name, timeout=0) is asked  # shown again until answered, as a page reloaded
        assert desk.submit(asked.key, {"price.widget": f"1{name}"})
        assert not desk.submit(asked.key, {})  # answered once
    for thread in seats:
        thread.join(60)
    assert answers == {"a": {"price.widget": "1a"}, "b": {"price.widget": "1b"}}


@pytest.mark.parametrize(
    ("extra", "entry", "field"),
    [
        ("", ", isolate: false", "contestants[0].isolate"),  # waited for inline, it would hold every seat
        ("deviation: {day: 3, seat: 1, to: best_response}\n", "", "deviation"),  # each match played twice
    ],
)
def test_a_person_where_one_cannot_play_is_refused_in_one_line(tmp_path, extra, entry, field):
    path = tmp_path / "people.yaml"
    path.write_text(
        f"name: people\nscenarios: [calvano]\ndays: 5\n{extra}contestants:\n"
        f"  - {{name: ann, kind: human{entry}}}\n  - {{name: fixed, kind: fixed_price}}\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_tournament(path)
    assert refused.value.field == field and "person" in str(refused.value)


def test_a_tournament_seating_people_loads_and_their_deadline_is_their_own(tmp_path):
    """decision_timeout_s is the machines' deadline: a person has turn_seconds, or none."""
    path = tmp_path / "people.yaml"
    path.write_text(
        "name: people\nscenarios: [calvano]\ndecision_timeout_s: 3\ncontestants:\n"
        "  - {name: ann, kind: human}\n  - {name: bob, kind: human, params: {turn_seconds: 90}}\n"
        "  - {name: fixed, kind: fixed_price, isolate: true}\n"
    )
    plans = plan_tournament(load_tournament(path).spec)
    # a person's seat keeps their turn_seconds itself, page by page
    assert (plans["ann"].deadline, plans["bob"].deadline, plans["fixed"].deadline) == (None, None, 3)
    assert plans["ann"].hosted and plans["ann"].longest_turn is None
    assert plans["ann"].answers_in_words and not plans["fixed"].answers_in_words


class Withdrawing(Desk):
    """A desk that withdraws every page at once, noting the seconds each was given."""

    def __init__(self) -> None:
        self.given: list[tuple[DeskKey, float | None]] = []

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        self.given.append((asked.key, within))
        return None


def test_a_page_with_no_time_left_is_still_asked_so_a_desk_that_keeps_outcomes_keeps_its_withdrawal(observe):
    """A replay takes no time: had the seat given up without asking, the replayed page would
    find time left and be put before the person again."""
    desk = Withdrawing()
    human = create("human", {"turn_seconds": 1e-9}, RunOptions(desk=desk, match="m"))
    human.reset(merchant="me", scenario=PRICE_WAR, seed=1)
    with pytest.raises(DeadlinePassed):
        human.decide(observe(PRICE_WAR, day=1))
    assert desk.given == [(DeskKey("m", "me", 1, "day", 0), 0.0)]


def test_a_person_plays_alone_as_a_solo_merchant_does():
    desk = LocalDesk()
    spec = MatchSpec(key="solo", index=0, scenario="price_war", seed=1, days=2, seats=("ann",))
    with people(desk, {"ann": lambda asked: {"price.widget": f"{14 + asked.key.day}"}}):
        played = play(spec, [ContestantEntry(name="ann", kind="human")], desk)
    assert [d.prices for d in played.days_played] == [{"widget": 15.0}, {"widget": 16.0}]
    assert played.faults == [] and [m.contestant for m in played.merchants] == ["ann"]
