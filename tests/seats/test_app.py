"""The people's pages served over a LocalDesk, read as a browser reads them: each link shows its
own seat's page and no other, a token that is no seat's is answered alike for every path, the
waiting page shows who has come, a post answers the open page with the fields as typed and
nothing else, a post for any other page is not taken, and every answer forbids scripts."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from email.message import Message
from urllib.parse import urlencode, urlsplit

import pytest

from common.errors import UserError
from common.serving import listening
from contestants.base import ANSWER, DeskAsk, DeskKey, RecallQuestion, Submitted
from contestants.desk import LocalDesk
from contestants.human.form import Refusal, day_form
from market.scenario import load_scenario
from market.types import RivalMessage
from seats.app import COME, LARGEST_POST, NOTICES, UNKEPT, ServedSeats, serve_seats
from seats.pages import key_fields
from tests.contestants.conftest import make_observation
from tests.page_reader import Node, parse
from tests.seats.test_pages import HOSTILE

PRICE_WAR = load_scenario("price_war")  # one product, widget; 30 days
FORM = day_form(PRICE_WAR, talk=True)


def day_asked(merchant: str, day: int = 1, attempt: int = 0, **changes) -> DeskAsk:
    """The day's page of `merchant` in match "m"."""
    observation = make_observation(PRICE_WAR, day=day)
    observation.merchant, observation.messages = merchant, []
    return DeskAsk(DeskKey("m", merchant, day, "day", attempt), observation, FORM, **changes)


class Asking:
    """A seat asking `asked` of the desk on a thread of its own, as a seat waits for its person;
    once it returns, what was submitted (None: nothing in time)."""

    def __init__(self, desk: LocalDesk, asked: DeskAsk, within: float | None = None):
        self.asked, self.answers = asked, list[Submitted | None]()
        self.thread = threading.Thread(
            target=lambda: self.answers.append(desk.ask(asked, within)), daemon=True
        )
        self.thread.start()
        shown = desk.waiting(asked.key.merchant, timeout=60)  # bounded: a page never opened fails here
        assert shown is not None and shown.key == asked.key

    def answer(self) -> Submitted | None:
        self.thread.join(60)
        assert self.answers, "the seat is still waiting"
        return self.answers[0]


class Answer:
    def __init__(self, status: int, headers: Message, body: str):
        self.status, self.headers, self.body = status, headers, body

    @property
    def page(self) -> Node:
        return parse(self.body)


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect is an answer of its own here
        return None


OPENER = urllib.request.build_opener(_Stay())


def fetch(url: str, fields: Mapping[str, str] | None = None, body: bytes | None = None) -> Answer:
    """GET `url`, or POST it `fields` as a browser posts a form (or the raw `body`); redirects
    not followed."""
    data = body if body is not None else None if fields is None else urlencode(fields).encode()
    try:
        with OPENER.open(urllib.request.Request(url, data=data), timeout=30) as answer:
            return Answer(answer.status, answer.headers, answer.read().decode())
    except urllib.error.HTTPError as refused:
        return Answer(refused.code, refused.headers, refused.read().decode())


def posted(asked: DeskAsk, **fields: str) -> dict[str, str]:
    """What the page of `asked` posts with `fields` filled: its key, in hidden fields, beside them."""
    return {**key_fields(asked.key), **fields}


def come(link: str) -> None:
    """The person of `link` takes their seat, with the waiting page's button."""
    taken = fetch(link, COME)
    assert (taken.status, taken.headers["location"]) == (303, urlsplit(link).path)


@contextmanager
def served(desk: LocalDesk, merchants: list[str], seated: bool = True) -> Iterator[ServedSeats]:
    """The pages of `merchants` over `desk`, each person in their seat unless not `seated`."""
    serving = serve_seats(desk, merchants, listening("127.0.0.1", 0))
    try:
        for link in serving.links.values() if seated else ():
            come(link)
        yield serving
    finally:
        serving.stop()


def test_each_link_shows_its_own_seats_page_and_a_token_of_no_seat_is_answered_alike():
    desk = LocalDesk()
    with served(desk, ["ann", "bob"]) as serving:
        links = serving.links
        ann = Asking(desk, day_asked("ann"))
        question = RecallQuestion(day=1, fact="cash")
        bob = Asking(desk, DeskAsk(DeskKey("m", "bob", 2, "recall", 0), question=question))
        seen = fetch(links["ann"])
        assert seen.status == 200 and seen.page.one("h1").content() == "Day 1 of 30: ann"
        assert seen.page.one(id="match").content() == "m"
        hidden = {i.attrs["name"]: i.attrs["value"] for i in seen.page.all("input", type="hidden")}
        assert hidden == {"page.match": "m", "page.day": "1", "page.asked": "day", "page.attempt": "0"}
        assert "bob" not in seen.body and "recall" not in seen.body
        asked = fetch(links["bob"]).page
        assert asked.one("h1").content() == "Day 2: a question for bob"
        assert asked.one("label", **{"for": ANSWER}).content() == "your cash at the end of day 1"
        assert "ann" not in fetch(links["bob"]).body
        # another token, a token cut short or grown, another path, another method: one answer
        root = links["ann"].rsplit("/seat/", 1)[0]
        token = links["ann"].rsplit("/", 1)[1]
        strangers = [
            fetch(url)
            for url in (f"{root}/seat/x", f"{root}/seat/{token[:-1]}", f"{root}/seat/{token}a", f"{root}/")
        ]
        strangers.append(fetch(f"{root}/seat/{token[:-1]}", {"price.widget": "1"}))
        assert {(s.status, s.body) for s in strangers} == {(404, strangers[0].body)}
        assert not any(name in strangers[0].body for name in ("ann", "bob", token))
        assert desk.joined() == {"ann", "bob"}  # the strangers made nobody come
        # nothing was submitted: both pages are still open
        assert desk.page("ann") is not None and desk.page("bob") is not None
        for seat in (ann, bob):
            desk.submit(seat.asked.key, {})


def test_the_waiting_page_shows_who_has_come_and_looks_again():
    """Opening a link seats nobody (a chat that fetches it for a preview must not): the
    person's click on the page's button does."""
    desk = LocalDesk()
    with served(desk, ["ann", "bob", "cal"], seated=False) as serving:
        links = serving.links
        asked = Asking(desk, day_asked("ann"))  # her first page, which she sees once seated
        first = fetch(links["ann"]).page
        assert first.one("h1").content() == "Waiting: ann" and first.one("button").content() == "Take my seat"
        assert first.all("meta", **{"http-equiv": "refresh"}) == []  # no reload to race her click
        people = [[cell.content() for cell in row.children] for row in first.one(id="people").all("tr")]
        assert people == [["seat", "here"], ["ann", "not yet"], ["bob", "not yet"], ["cal", "not yet"]]
        assert desk.joined() == set()
        come(links["ann"])
        assert fetch(links["ann"]).page.one("h1").content() == "Day 1 of 30: ann"
        desk.submit(asked.asked.key, {})
        come(links["cal"])
        again = fetch(links["ann"]).page
        assert again.all("button") == []
        rows = [[cell.content() for cell in row.children] for row in again.one(id="people").all("tr")]
        assert rows[1:] == [["ann", "joined"], ["bob", "not yet"], ["cal", "joined"]]
        path = urlsplit(links["ann"]).path
        assert again.one("meta", **{"http-equiv": "refresh"}).attrs["content"] == f"1; url={path}"


def test_a_post_answers_the_open_page_with_its_fields_as_typed_and_nothing_else():
    desk = LocalDesk()
    with served(desk, ["ann"]) as serving:
        seat = Asking(desk, day_asked("ann"))
        typed = {"price.widget": " 12,5 ", "order.widget": "", "message": HOSTILE, "collect": "on"}
        # the merchant named in the form and a field of no page: neither is the seat's to read
        sent = fetch(serving.links["ann"], posted(seat.asked, **typed, merchant="bob", other="1"))
        path = urlsplit(serving.links["ann"]).path
        assert (sent.status, sent.headers["location"]) == (303, f"{path}?said=sent")
        answer = seat.answer()
        # as typed: the spaces, the comma, the empty field, the words; price_war collects nothing,
        # so its form has no box for it
        assert answer is not None and answer.fields == {
            "price.widget": " 12,5 ",
            "order.widget": "",
            "message": HOSTILE,
        }
        # a question's page: its one field, as typed, and no field of a day's form
        question = RecallQuestion(day=1, fact="price", product="widget")
        asked = Asking(desk, DeskAsk(DeskKey("m", "ann", 2, "recall", 0), question=question))
        shown = fetch(serving.links["ann"]).page
        assert shown.one("label", **{"for": ANSWER}).content() == "your price of widget at the end of day 1"
        fetch(serving.links["ann"], posted(asked.asked, **{ANSWER: " 12.5 ", "price.widget": "3"}))
        answered = asked.answer()
        assert answered is not None and answered.fields == {ANSWER: " 12.5 "}
        after = fetch(serving.links["ann"] + "?said=sent").page
        assert (
            after.one(id="notice").content() == NOTICES["sent"]
            and after.one("h1").content() == "Waiting: ann"
        )


def test_a_post_for_a_page_no_longer_open_is_not_taken_and_changes_nothing():
    desk = LocalDesk()
    with served(desk, ["ann", "bob"]) as serving:
        link = serving.links["ann"]
        first = Asking(desk, day_asked("ann"))
        assert fetch(link, posted(first.asked, **{"price.widget": "-3"})).status == 303
        taken = first.answer()
        assert taken is not None and taken.fields == {"price.widget": "-3"}
        # the seat refused it and asks again: attempt 1, with the reason and the fields as typed
        refusal = Refusal(("price.widget",), "price of widget: price must be a positive number")
        again = Asking(desk, day_asked("ann", attempt=1, typed={"price.widget": "-3"}, refusal=refusal))
        question = RecallQuestion(day=1, fact="cash")
        bobs = Asking(desk, DeskAsk(DeskKey("m", "bob", 2, "recall", 0), question=question))
        stale = [
            posted(first.asked, **{"price.widget": "12"}),  # a second click, or the tab before the refusal
            posted(day_asked("ann", day=2, attempt=1), **{"price.widget": "12"}),  # another day
            posted(bobs.asked, **{ANSWER: "5"}),  # bob's page, with ann's link
            {"price.widget": "12"},  # no page named
        ]
        for fields in stale:
            refused = fetch(link, fields)
            assert (refused.status, refused.headers["location"]) == (
                303,
                f"{urlsplit(link).path}?said=closed",
            )
        opened = desk.page("ann")
        assert opened is not None and opened.asked is again.asked  # still open, still waiting
        assert desk.page("bob") is not None and bobs.thread.is_alive() and again.thread.is_alive()
        shown = fetch(link + "?said=closed").page
        assert shown.one(id="notice").content() == NOTICES["closed"]
        assert shown.one(role="alert").content() == refusal.message
        assert shown.one(id="price.widget").attrs["value"] == "-3"
        assert shown.one("input", type="hidden", name="page.attempt").attrs["value"] == "1"
        for seat in (again, bobs):
            desk.submit(seat.asked.key, {})
        # a page withdrawn when its time was up: what is sent for it afterwards is not taken
        late = Asking(desk, day_asked("ann", day=2), within=0.05)
        assert late.answer() is None
        assert (
            fetch(link, posted(late.asked, **{"price.widget": "12"})).headers["location"].endswith("closed")
        )
        assert desk.page("ann") is None


def test_every_answer_forbids_scripts_caching_and_framing():
    desk = LocalDesk()
    with served(desk, ["ann"]) as serving:
        link = serving.links["ann"]
        answers = [fetch(link), fetch(link + "x")]  # the waiting page, a stranger's
        seat = Asking(desk, day_asked("ann"))
        answers += [fetch(link), fetch(link, posted(seat.asked))]  # a day's page, a post's redirect
    for answer in answers:
        policy = answer.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy  # no script, from anywhere
        assert "frame-ancestors 'none'" in policy and "form-action 'self'" in policy
        assert answer.headers["cache-control"] == "no-store" and answer.headers["x-frame-options"] == "DENY"


def test_a_rivals_words_and_what_was_typed_are_shown_as_text():
    desk = LocalDesk()
    with served(desk, ["ann"]) as serving:
        asked = day_asked("ann", typed={"message": HOSTILE, "price.widget": HOSTILE})
        asked.observation.messages = [RivalMessage("bob", HOSTILE)]
        refusal = Refusal(("price.widget",), f"price of widget: {HOSTILE[:40]!r} is not a number")
        seat = Asking(desk, replace(asked, refusal=refusal))
        html = fetch(serving.links["ann"]).body
        assert "<script" not in html and "<img" not in html
        page = parse(html)
        assert page.one("span", "said").content() == HOSTILE
        assert (
            page.one(id="message").content() == HOSTILE
            and page.one(id="price.widget").attrs["value"] == HOSTILE
        )
        assert page.one(role="alert").content() == refusal.message
        desk.submit(seat.asked.key, {})


def test_a_page_with_a_deadline_shows_its_seconds_left_and_reloads_when_they_run_out():
    desk = LocalDesk()
    with served(desk, ["ann"]) as serving:
        seat = Asking(desk, day_asked("ann"), within=600)
        page = fetch(serving.links["ann"]).page
        left = int(page.one(id="seconds-left").content())
        assert 1 <= left <= 600  # rounded up, as the page was made
        refresh = page.one("meta", **{"http-equiv": "refresh"}).attrs["content"]
        assert refresh == f"{left}; url={urlsplit(serving.links['ann']).path}"
        desk.submit(seat.asked.key, {})
        # without a deadline: neither
        Asking(desk, day_asked("ann", day=2))
        free = fetch(serving.links["ann"]).page
        assert not free.all(id="seconds-left") and not free.all("meta", **{"http-equiv": "refresh"})
        desk.submit(day_asked("ann", day=2).key, {})


class Unkept(LocalDesk):
    """A desk whose keeping fails: it takes nothing submitted, and says so by raising."""

    def submit(self, key: DeskKey, fields: Mapping[str, str]) -> bool:
        raise OSError("the journal cannot be written")


def test_what_cannot_be_kept_leaves_the_page_open_with_the_fields_as_typed_and_a_form_too_large_is_refused():
    desk = Unkept()
    with served(desk, ["ann"]) as serving:
        seat = Asking(desk, day_asked("ann"))
        answer = fetch(serving.links["ann"], posted(seat.asked, **{"price.widget": "12"}))
        assert answer.status == 503 and answer.page.one(id="notice").content() == UNKEPT
        assert answer.page.one(id="price.widget").attrs["value"] == "12"
        assert answer.page.one("h1").content() == "Day 1 of 30: ann"
        too_large = fetch(serving.links["ann"], body=b"price.widget=" + b"1" * LARGEST_POST)
        assert too_large.status == 413
        assert seat.thread.is_alive() and desk.page("ann") is not None
        LocalDesk.submit(desk, seat.asked.key, {})


class Gone(LocalDesk):
    """A desk out of reach: every call of the people's side fails."""

    def joined(self) -> frozenset[str]:
        raise ConnectionError("the desk at 10.0.0.9 is gone")


def test_a_page_that_fails_says_so_without_detail():
    with served(Gone(), ["ann"], seated=False) as serving:
        failed = fetch(serving.links["ann"])
    assert failed.status == 500 and "10.0.0.9" not in failed.body and "gone" not in failed.body
    assert "default-src 'none'" in failed.headers["content-security-policy"]


def test_serving_gives_a_link_per_seat_on_loopback_and_one_line_where_the_port_is_taken():
    desk = LocalDesk()
    with served(desk, ["ann", "bob"]) as serving:
        ann, bob = urlsplit(serving.links["ann"]), urlsplit(serving.links["bob"])
        assert (ann.scheme, ann.hostname, ann.port) == ("http", "127.0.0.1", bob.port)
        tokens = [ann.path.removeprefix("/seat/"), bob.path.removeprefix("/seat/")]
        assert tokens[0] != tokens[1] and all(len(t) >= 32 for t in tokens)  # 24 random bytes each
        with pytest.raises(UserError, match=f"--host/--port: cannot listen on 127.0.0.1:{ann.port}") as taken:
            listening("127.0.0.1", ann.port or 0)
        assert "\n" not in str(taken.value)
    with pytest.raises(urllib.error.URLError):  # stopped: nobody answers there
        fetch(serving.links["ann"])
