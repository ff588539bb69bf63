"""The run's desk as a Ray actor (tournaments.desk): seats asking from processes of their own,
a person's calls from the driver's, every page's outcome kept in the database as it is
settled, a desk started again (a resumed run) answering at once what was kept, and a desk
that is gone stopping the seat that asks it."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from sqlalchemy import Engine, text

from contestants.base import DeskAsk, DeskKey, Submitted
from contestants.desk import OpenPage, PeopleSide, page_digest
from results.storage import store
from results.storage.db import engine_for
from results.storage.desk_pages import KeptPage, kept_pages
from tournaments.desk import GONE, DeskFailed, RemoteDesk, start_desk

pytestmark = pytest.mark.usefixtures("ray_local")

FORM = DeskKey("lab/1", "ann", 1, "day", 0)
LATE = DeskKey("lab/1", "ann", 2, "day", 0)
NEXT = DeskKey("lab/1", "ann", 3, "day", 0)
BLANK = page_digest(DeskAsk(FORM))  # what every page of these shows: nothing


@ray.remote(num_cpus=0)
def seat_asks(desk: RemoteDesk, key: DeskKey, within: float | None) -> Submitted | None:
    """A seat in a process of its own (as a contestant's host is), the desk's handle pickled to it."""
    return desk.ask(DeskAsk(key), within)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = engine_for(f"sqlite:///{tmp_path / 'run.db'}")
    yield engine
    engine.dispose()


@pytest.fixture
def tournament(engine: Engine) -> int:
    return lab(engine)


def lab(engine: Engine) -> int:
    """A tournament of ann's, in `engine`'s database."""
    return store.start_tournament(
        engine,
        name="lab",
        config_path="lab.yaml",
        config_text="",
        config_hash="h",
        seed=1,
        planned_matches=1,
        contestants=[("ann", "human", {})],
    )


def shown(people: PeopleSide) -> OpenPage:
    """The page ann sees, once her seat has asked it (bounded: a desk that never shows it fails)."""
    for _ in range(6000):
        page = people.page("ann")
        if page is not None:
            return page
        threading.Event().wait(0.01)
    raise AssertionError("no page shown")


def test_a_seat_in_another_process_gets_what_a_person_sent_and_a_resumed_desk_answers_it_at_once(
    engine: Engine, tournament: int
):
    run = start_desk(engine, tournament)
    asked = seat_asks.remote(run.desk, FORM, None)
    run.people.join("ann")
    page = shown(run.people)
    assert page.asked.key == FORM and page.seconds_left is None
    assert run.people.joined() == frozenset({"ann"})
    assert run.people.submit(FORM, {"price.widget": "17.5"})
    submitted = ray.get(asked, timeout=60)
    assert submitted is not None and submitted.fields == {"price.widget": "17.5"}
    assert not run.people.submit(FORM, {"price.widget": "1"})  # answered once
    assert ray.get(seat_asks.remote(run.desk, LATE, 0.05), timeout=60) is None  # nobody answers in time
    # both kept as they were settled, the form with the seconds its seat was told
    assert kept_pages(engine, tournament) == [
        KeptPage("lab/1", "ann", 1, "day", 0, BLANK, {"price.widget": "17.5"}, submitted.seconds),
        KeptPage("lab/1", "ann", 2, "day", 0, BLANK, None, None),
    ]
    run.stop()

    resumed = start_desk(engine, tournament)  # a run resumed after a crash
    # answered at once, with no page opened (nobody answers, and neither ask has a deadline)
    assert resumed.desk.ask(DeskAsk(FORM), None) == submitted
    assert resumed.desk.ask(DeskAsk(LATE), None) is None
    assert resumed.people.page("ann") is None and resumed.people.joined() == frozenset()
    waiting = seat_asks.remote(resumed.desk, NEXT, None)  # the next page waits for its person
    assert shown(resumed.people).asked.key == NEXT
    resumed.stop()
    with pytest.raises(DeskFailed) as gone:  # the seat waiting is not left waiting for ever
        ray.get(waiting, timeout=60)
    assert str(gone.value.cause) == GONE  # (Ray's error of the seat's task, as what it raised)
    with pytest.raises(DeskFailed, match=re.escape(GONE)):
        resumed.people.page("ann")
    assert len(kept_pages(engine, tournament)) == 2  # nothing kept again


def test_what_the_desk_cannot_keep_fails_the_submit_leaving_the_page_open_and_stops_a_seat_withdrawn(
    engine: Engine, tournament: int
):
    run = start_desk(engine, tournament)
    with engine.begin() as connection:  # the journal can no longer be written
        connection.execute(text("DROP TABLE desk_page"))
    returned: list = []

    def seat_waits() -> None:
        try:
            returned.append(run.desk.ask(DeskAsk(FORM), None))
        except DeskFailed as exc:
            returned.append(exc)

    seat = threading.Thread(target=seat_waits)
    seat.start()
    assert shown(run.people).asked.key == FORM
    with pytest.raises(DeskFailed, match="cannot keep ann's day 1 form .*no such table: desk_page"):
        run.people.submit(FORM, {"price.widget": "17.5"})
    assert shown(run.people).asked.key == FORM and returned == []  # still open, the seat still waiting
    with pytest.raises(DeskFailed, match="cannot keep ann's day 2 form"):  # the run stops
        run.desk.ask(DeskAsk(LATE), 0.05)
    run.stop()
    seat.join(60)
    assert [str(exc) for exc in returned] == [GONE]  # the seat waiting is let go


def test_a_desk_over_a_database_with_a_password_keeps_what_a_person_sent(postgres):
    """The password reaches the desk's process apart from the URL, which is all Ray describes
    the actor with."""
    engine = engine_for(postgres.fresh_database())
    try:
        tournament = lab(engine)
        run = start_desk(engine, tournament)
        asked = seat_asks.remote(run.desk, FORM, None)
        shown(run.people)
        assert run.people.submit(FORM, {"price.widget": "12"})
        assert ray.get(asked, timeout=60) is not None
        run.stop()
        assert [page.fields for page in kept_pages(engine, tournament)] == [{"price.widget": "12"}]
    finally:
        engine.dispose()
