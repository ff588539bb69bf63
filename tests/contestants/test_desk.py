"""The LocalDesk's journal (contestants.desk), in this process: seats ask from threads, people
submit from the test's. Each page's outcome is kept as it is settled (what was sent before
submit says so, a withdrawal as None), settled once, and a desk made with what was kept
answers those pages at once, their seconds as they were, and waits on the next."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from types import SimpleNamespace
from typing import Any

import pytest

import contestants.desk
from contestants.base import DeskAsk, DeskKey, OffPathQuestion, RecallQuestion, Submitted
from contestants.desk import Kept, LocalDesk, page_digest

FORM = DeskKey("m", "ann", 1, "day", 0)
QUESTION = DeskKey("m", "ann", 2, "recall", 0)
NEXT = DeskKey("m", "ann", 2, "day", 0)
BOUND_S = 60  # no wait here comes near it: a desk that never shows a page or answers fails there
TINY_S = 0.05  # a deadline nobody answers within


class Journal:
    """A desk's journal: the outcomes kept, in order, each with how many of the seats' asks
    had returned (`returned`) when it was kept; the first `failures` outcomes are refused."""

    def __init__(self, failures: int = 0):
        self.failures = failures
        self.returned: list[Any] = []
        self.kept: list[tuple[DeskKey, Submitted | None, int]] = []

    def __call__(self, key: DeskKey, kept: Kept) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")
        self.kept.append((key, kept.outcome, len(self.returned)))


def seat_asking(
    desk: LocalDesk, key: DeskKey, returned: list[Any], within: float | None = None
) -> AbstractContextManager[None]:
    """A seat asking the page `key` (showing nothing) on a thread of its own while the block runs."""
    return seat_asking_page(desk, DeskAsk(key), returned, within)


@contextmanager
def seat_asking_page(
    desk: LocalDesk, asked: DeskAsk, returned: list[Any], within: float | None = None
) -> Iterator[None]:
    """A seat asking `asked` on a thread of its own while the block runs; what its ask returns
    (or raises) is appended to `returned`, which holds it after the block."""

    def ask() -> None:
        try:
            returned.append(desk.ask(asked, within))
        except Exception as exc:
            returned.append(exc)

    thread = threading.Thread(target=ask)
    thread.start()
    try:
        yield
    finally:
        thread.join(BOUND_S)


def shown(desk: LocalDesk, merchant: str = "ann") -> DeskKey:
    """The key of the page `merchant`'s person sees, once there is one."""
    asked = desk.waiting(merchant, timeout=BOUND_S)
    assert asked is not None
    return asked.key


def test_what_a_person_sends_is_kept_before_submit_returns_with_the_seconds_since_it_was_asked(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(
        contestants.desk, "time", SimpleNamespace(monotonic=lambda: now[0])
    )  # the desk's clock
    journal = Journal()
    desk = LocalDesk(keep=journal)
    with seat_asking(desk, FORM, journal.returned):
        assert shown(desk) == FORM  # asked at 100
        now[0] = 107.25
        assert desk.submit(FORM, {"price.widget": "17.5"})
        sent = Submitted({"price.widget": "17.5"}, 7.25)
        assert journal.kept == [(FORM, sent, 0)]  # kept before submit returned, the seat still waiting
        assert not desk.submit(FORM, {"price.widget": "1"})  # settled once: a second is refused
    assert journal.returned == [sent]
    assert desk.ask(DeskAsk(FORM), None) == sent  # asked again (its match played again): answered at once
    assert len(journal.kept) == 1  # and kept once


def test_a_page_withdrawn_when_its_time_is_up_is_kept_as_none():
    journal = Journal()
    desk = LocalDesk(keep=journal)
    assert desk.ask(DeskAsk(FORM), TINY_S) is None  # nobody answers
    assert journal.kept == [(FORM, None, 0)]
    assert not desk.submit(FORM, {"price.widget": "12"}) and desk.page("ann") is None
    assert desk.ask(DeskAsk(FORM), None) is None and len(journal.kept) == 1  # withdrawn once, at once


def test_a_desk_made_with_what_was_kept_answers_those_pages_at_once_and_waits_on_the_next():
    sent = Submitted({"answer": "12.5"}, 31.5)
    journal = Journal()
    kept = {
        FORM: Kept(page_digest(DeskAsk(FORM)), None),
        QUESTION: Kept(page_digest(DeskAsk(QUESTION)), sent),
    }
    desk = LocalDesk(kept, journal)
    # neither ask has a deadline and nobody answers: they return only if no page is opened
    assert desk.ask(DeskAsk(FORM), None) is None
    assert desk.ask(DeskAsk(QUESTION), None) == sent  # its seconds as they were kept
    assert desk.page("ann") is None and journal.kept == []
    with seat_asking(desk, NEXT, journal.returned):
        assert shown(desk) == NEXT
        assert desk.submit(NEXT, {})
    assert [key for key, _, _ in journal.kept] == [NEXT] and journal.returned[0].fields == {}


def test_a_kept_page_that_now_shows_something_else_is_asked_afresh_and_kept_anew():
    """A replay gone another way (a rival's model answering afresh) shows the person another
    day under the same key: what they sent for the day they saw is not applied to it."""
    seen = RecallQuestion(day=1, fact="cash")
    journal = Journal()
    desk = LocalDesk(
        {QUESTION: Kept(page_digest(DeskAsk(QUESTION, question=seen)), Submitted({}, 1.0))}, journal
    )
    other = DeskAsk(QUESTION, question=RecallQuestion(day=1, fact="inventory", product="widget"))
    with seat_asking_page(desk, other, journal.returned):
        assert shown(desk) == QUESTION  # opened for the person: not answered from what was kept
        assert desk.submit(QUESTION, {"answer": "40"})
    assert journal.kept == [(QUESTION, Submitted({"answer": "40"}, journal.kept[0][1].seconds), 0)]
    assert page_digest(other) != page_digest(DeskAsk(QUESTION, question=seen))


def test_a_submission_that_cannot_be_kept_fails_and_leaves_the_page_open_to_send_again():
    journal = Journal(failures=1)
    desk = LocalDesk(keep=journal)
    with seat_asking(desk, FORM, journal.returned):
        assert shown(desk) == FORM
        with pytest.raises(OSError, match="disk full"):
            desk.submit(FORM, {"price.widget": "17.5"})
        assert journal.returned == [] and shown(desk) == FORM  # still open, the seat still waiting
        assert desk.submit(FORM, {"price.widget": "18"})
    assert [(key, outcome.fields) for key, outcome, _ in journal.kept] == [(FORM, {"price.widget": "18"})]
    assert journal.returned[0].fields == {"price.widget": "18"}


def test_a_withdrawal_that_cannot_be_kept_fails_the_seats_ask_and_the_page_stays_withdrawn():
    journal = Journal(failures=1)
    desk = LocalDesk(keep=journal)
    with pytest.raises(OSError, match="disk full"):
        desk.ask(DeskAsk(FORM), TINY_S)
    assert desk.page("ann") is None and not desk.submit(FORM, {})
    assert journal.kept == []


def test_a_page_asked_again_while_open_is_taken_over_by_the_later_ask():
    """A seat made afresh after its process died asks the page its earlier self still waits
    on: the earlier ask is let go, as withdrawn but kept as nothing, and the later gets the
    answer."""
    journal = Journal()
    desk = LocalDesk(keep=journal)
    earlier: list[Any] = []
    with seat_asking(desk, FORM, earlier):
        assert shown(desk) == FORM
        with seat_asking(desk, FORM, journal.returned):
            for _ in range(BOUND_S * 100):  # until the later ask has let the earlier go
                if earlier:
                    break
                threading.Event().wait(0.01)
            assert earlier == [None] and journal.kept == []
            assert desk.submit(FORM, {"price.widget": "16"})
    assert journal.returned[0].fields == {"price.widget": "16"} and len(journal.kept) == 1


def test_a_slow_journal_holds_up_no_other_call_and_what_it_keeps_came_in_time():
    """While a sent page is being kept (a database slow to answer), the other people's calls are
    answered, a second send is refused, and the page's time running out meanwhile withdraws
    nothing: what was sent came in time."""
    keeping, done = threading.Event(), threading.Event()
    journal = Journal()

    def slow(key: DeskKey, kept: Kept) -> None:
        keeping.set()
        done.wait(BOUND_S)
        journal(key, kept)

    desk = LocalDesk(keep=slow)
    sent: list[bool] = []
    with seat_asking(desk, FORM, journal.returned, within=TINY_S * 4):
        assert shown(desk) == FORM
        sending = threading.Thread(target=lambda: sent.append(desk.submit(FORM, {"price.widget": "1"})))
        sending.start()
        assert keeping.wait(BOUND_S)
        desk.join("bob")
        assert desk.joined() == {"bob"} and desk.page("bob") is None  # answered meanwhile
        assert not desk.submit(FORM, {"price.widget": "2"})  # the first send is being kept
        threading.Event().wait(TINY_S * 8)  # the page's time runs out while it is kept
        done.set()
        sending.join(BOUND_S)
    assert sent == [True] and [outcome for _, outcome, _ in journal.kept] == [journal.returned[0]]
    assert journal.returned[0] is not None and journal.returned[0].fields == {"price.widget": "1"}


def test_a_pages_digest_is_blind_to_a_numbers_last_bits_and_sees_any_other_change():
    question = RecallQuestion(day=3, fact="price", product="widget")
    seen = OffPathQuestion(rival="bob", product="widget", price=1.7, posted=1.8)
    same = seen.model_copy(update={"price": 1.7 * (1 + 4e-16)})  # another build's last bit
    assert same.price != seen.price
    digest = page_digest(DeskAsk(QUESTION, question=seen))
    assert page_digest(DeskAsk(QUESTION, question=same)) == digest
    for other in (
        seen.model_copy(update={"price": 1.71}),
        seen.model_copy(update={"rival": "cal"}),
        question,
    ):
        assert page_digest(DeskAsk(QUESTION, question=other)) != digest
