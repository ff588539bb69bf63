"""Whole matches played by people in Debian's Chromium, driven by Playwright: two people, each in a
browser context of their own, beside a rule merchant, their seats' pages served by the seats'
app over a LocalDesk in this process (the match played as tests/contestants/test_human_seat.py
plays it). They find every field by its label; one leaves mid-match and comes back to the same
day; a bad price shows the market's reason and nothing of it is applied; a deadline passes while
a person does nothing. The stored days are then what was clicked.

Every wait here is for something to happen (a page's heading, a match's end), bounded only so
that a broken build fails rather than hangs."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from common.serving import listening
from contestants.base import DeskKey
from contestants.desk import Kept, LocalDesk
from market.operations import OperationRules, judge_day
from results.presentation.chromium import binary
from results.records import FinishedMatch
from seats.app import NOTICES, ServedSeats, serve_seats
from tests.contestants.conftest import make_observation
from tests.contestants.test_human_seat import PRICE_WAR, play
from tests.seats.test_pages import HOSTILE
from tournaments.config import ContestantEntry
from tournaments.schedule import MatchSpec

pytestmark = pytest.mark.slow

BOUND_MS = 30_000  # the longest any one wait may take before the test fails


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=binary(), args=["--no-sandbox"])
        yield launched
        launched.close()


class Person:
    """A person in a browser context of their own, with their seat's link; what the browser
    reports as an error (a script's, a resource the page's policy refused) is kept in `problems`."""

    def __init__(self, browser: Browser, link: str):
        self.context: BrowserContext = browser.new_context()
        self.link, self.problems = link, list[str]()
        self.page = self.open()

    def open(self) -> Page:
        """Their link opened in a new tab."""
        page = self.context.new_page()
        page.on("pageerror", lambda error: self.problems.append(str(error)))
        page.on("console", lambda message: message.type == "error" and self.problems.append(message.text))
        page.goto(self.link)
        return page

    def takes_their_seat(self, name: str) -> None:
        """Clicks the waiting page's button: opening the link alone seats nobody."""
        self.sees(f"Waiting: {name}")
        self.page.get_by_role("button", name="Take my seat").click()
        expect(self.page.get_by_role("button", name="Take my seat")).to_have_count(0, timeout=BOUND_MS)

    def sees(self, heading: str) -> None:
        """Waits until their page's heading reads `heading` (it reloads itself meanwhile)."""
        expect(self.page.locator("h1")).to_have_text(heading, timeout=BOUND_MS)

    def send(self, day: int, **typed: str) -> None:
        """Types each of `typed` into the field labelled so (a label may not be a keyword:
        underscores for spaces) and submits the day."""
        for label, text in typed.items():
            self.page.get_by_label(label.replace("_", " "), exact=True).fill(text)
        self.page.get_by_role("button", name=f"Submit day {day}").click()


class Played:
    """A match played on a thread of this process while the people click."""

    def __init__(self, spec: MatchSpec, entries: list[ContestantEntry], desk: LocalDesk, **rules):
        self.result: list[FinishedMatch] = []
        self.thread = threading.Thread(
            target=lambda: self.result.append(play(spec, entries, desk, **rules)), daemon=True
        )
        self.thread.start()

    def finished(self) -> FinishedMatch:
        self.thread.join(BOUND_MS / 1000)
        assert self.result, "the match did not end"
        return self.result[0]


@pytest.fixture
def seated(browser: Browser) -> Iterator[tuple[dict[DeskKey, Kept], LocalDesk, ServedSeats]]:
    kept: dict[DeskKey, Kept] = {}  # each page's outcome, by its key
    desk = LocalDesk(keep=kept.__setitem__)
    serving = serve_seats(desk, ["ann", "bob"], listening("127.0.0.1", 0))
    yield kept, desk, serving
    serving.stop()


SET = "set_price"
LAB = MatchSpec(key="lab/1", index=0, scenario="price_war", seed=1, days=3, seats=("ann", "bob", "hi"))


def test_two_people_play_a_match_in_their_browsers_and_the_record_is_what_they_clicked(browser, seated):
    kept, desk, serving = seated
    ann = Person(browser, serving.links["ann"])
    ann.sees("Waiting: ann")
    assert ann.page.locator("#people").inner_text().split("\n")[1:] == ["ann\tnot yet", "bob\tnot yet"]
    ann.takes_their_seat("ann")
    assert ann.page.locator("#people").inner_text().split("\n")[1:] == ["ann\tjoined", "bob\tnot yet"]
    bob = Person(browser, serving.links["bob"])
    bob.takes_their_seat("bob")
    ann.page.reload()
    assert ann.page.locator("#people").inner_text().split("\n")[1:] == ["ann\tjoined", "bob\tjoined"]
    entries = [
        ContestantEntry(name="ann", kind="human", params={"turn_seconds": 60}),
        ContestantEntry(name="bob", kind="human", params={"turn_seconds": 60}),
        ContestantEntry(name="hi", kind="friendly"),
    ]
    match = Played(LAB, entries, desk, talk=True)

    # day 1: ann types a price with a comma, an order and words a rival could not run
    ann.sees("Day 1 of 3: ann")
    ann.send(1, price_of_widget="12,5", units_of_widget_to_order_from_the_usual_supplier="30")
    alert = ann.page.get_by_role("alert")
    expect(alert).to_have_text(
        "price of widget: '12,5' is not a number (use a point for decimals)", timeout=BOUND_MS
    )
    # the page again, its fields as typed; she fixes the price and says something
    expect(ann.page.get_by_label("units of widget to order from the usual supplier")).to_have_value("30")
    ann.send(1, price_of_widget="12.5", message_to_your_rivals=HOSTILE)
    expect(ann.page.locator("#notice")).to_have_text(NOTICES["sent"], timeout=BOUND_MS)
    bob.sees("Day 1 of 3: bob")
    bob.send(1, price_of_widget="19")

    # day 2: ann leaves with a price typed and not sent, and comes back to the same day
    ann.sees("Day 2 of 3: ann")
    ann.page.get_by_label("price of widget", exact=True).fill("1")
    ann.page.close()
    ann.page = ann.open()
    ann.sees("Day 2 of 3: ann")
    expect(ann.page.get_by_label("price of widget", exact=True)).to_have_value(
        ""
    )  # what was not sent is not kept
    ann.send(2, price_of_widget="14")
    # bob reads her words as words, and runs none of them
    bob.sees("Day 2 of 3: bob")
    expect(bob.page.locator("ul.messages")).to_contain_text(HOSTILE)
    assert bob.page.evaluate("window.hacked") is None
    bob.send(2, price_of_widget="18", amount_to_spend_on_advertising="50")

    # day 3: ann sends an empty form (a day of waiting); bob a negative price, refused, then 17
    ann.sees("Day 3 of 3: ann")
    ann.send(3)
    bob.sees("Day 3 of 3: bob")
    bob.send(3, price_of_widget="-3")
    expect(bob.page.get_by_role("alert")).to_contain_text("price of widget: ", timeout=BOUND_MS)
    refused_with = bob.page.get_by_role("alert").inner_text()
    expect(bob.page.get_by_label("price of widget", exact=True)).to_have_value("-3")
    bob.send(3, price_of_widget="17")
    played = match.finished()
    ann.sees("Waiting: ann")  # nothing more to fill

    days = {(d.merchant, d.day): d for d in played.days_played}
    assert played.faults == []
    assert days["ann", 1].operations == [
        {"op": SET, "product": "widget", "price": 12.5},
        {"op": "order", "product": "widget", "quantity": 30.0},
    ]
    assert days["ann", 1].message == HOSTILE and days["ann", 1].ordered == {"widget": 30.0}  # ordered once
    assert days["ann", 2].operations == [{"op": SET, "product": "widget", "price": 14.0}]
    assert days["ann", 3].operations == [] and days["ann", 3].prices == {"widget": 14.0}
    assert [days["bob", day].operations for day in (1, 2, 3)] == [
        [{"op": SET, "product": "widget", "price": 19.0}],
        [{"op": SET, "product": "widget", "price": 18.0}, {"op": "advertise", "amount": 50.0}],
        [{"op": SET, "product": "widget", "price": 17.0}],  # nothing of the refused -3
    ]
    # the market's own reason for a price of -3 was on bob's page, as its judge words it
    judged = judge_day(
        OperationRules(PRICE_WAR),
        make_observation(PRICE_WAR),
        [{"op": SET, "product": "widget", "price": -3}],
    )
    reason = judged.rejections[0]
    assert reason is not None and refused_with == f"price of widget: {reason.reason}"
    # one page a day each, one more for each refused form, taken as sent: the one she left unsent
    # was no page of its own
    sent = {
        (k.merchant, k.day, k.attempt): s.outcome.fields for k, s in kept.items() if s.outcome is not None
    }
    assert sorted(sent) == [
        ("ann", 1, 0),
        ("ann", 1, 1),
        ("ann", 2, 0),
        ("ann", 3, 0),
        ("bob", 1, 0),
        ("bob", 2, 0),
        ("bob", 3, 0),
        ("bob", 3, 1),
    ]
    assert sent["ann", 1, 0]["price.widget"] == "12,5" and sent["bob", 3, 0]["price.widget"] == "-3"
    assert ann.problems == [] and bob.problems == []


def test_a_deadline_passes_while_a_person_does_nothing(browser, seated):
    _, desk, serving = seated
    bob = Person(browser, serving.links["bob"])
    bob.takes_their_seat("bob")
    entries = [
        ContestantEntry(name="bob", kind="human", params={"turn_seconds": 3}),
        ContestantEntry(name="fixed", kind="fixed_price"),
    ]
    spec = MatchSpec(key="away/1", index=0, scenario="price_war", seed=1, days=2, seats=("bob", "fixed"))
    match = Played(spec, entries, desk)
    bob.sees("Day 1 of 2: bob")
    assert 0 <= int(bob.page.locator("#seconds-left").inner_text()) <= 3
    # he does nothing: his pages reload as their time runs out, until the match has ended
    played = match.finished()
    bob.sees("Waiting: bob")
    assert [(f.day, f.merchant, f.kind) for f in played.faults] == [
        (1, "bob", "timeout"),
        (2, "bob", "timeout"),
    ]
    assert [d.operations for d in played.days_played if d.merchant == "bob"] == [[], []]
    assert bob.problems == []
