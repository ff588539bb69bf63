"""`arena run` of a file that seats two people beside a rule merchant, played over HTTP as
their browsers would: the run prints a link for each, waits for both, takes their forms; killed
once a person's page says "sent", it is resumed with `--resume` and each person is back where
they were, nothing they sent lost; the record is what they sent."""

from __future__ import annotations

import asyncio
import csv
import json
import re
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from arena.cli import app
from results.presentation.export import export
from results.storage.db import engine_for
from results.storage.store import match_details
from tests.arena_process import BackgroundRun, kill_session
from tests.page_reader import Node
from tests.seats.test_app import Answer, come, fetch
from tournaments.run import _People

FILE = """\
name: lab
seed: 7
format: round_robin
group_size: 3
scenarios: [price_war]
days: 2
talk: true
contestants:
  - {name: ann, kind: human}
  - {name: bob, kind: human}
  - {name: fixed, kind: fixed_price}
"""
LINK = re.compile(r"^  (ann|bob): (http://127\.0\.0\.1:\d+/seat/\S+)$", re.MULTILINE)


def links(run: BackgroundRun) -> dict[str, str]:
    run.wait_for("the people's links", lambda: len(LINK.findall(run.output())) == 2)
    return dict(LINK.findall(run.output()))


def page_of(run: BackgroundRun, link: str, title: str) -> Node:
    """The page at `link` once its title is `title` (it is the waiting page until then)."""
    shown: list[Answer] = []

    def there() -> bool:
        shown[:] = [fetch(link)]
        return shown[0].page.one("title").content() == title

    run.wait_for(f"the page {title!r}", there)
    return shown[0].page


def send(link: str, page: Node, **fields: str) -> Answer:
    """`fields` posted from `page`, with the key of the page it is in its hidden fields."""
    key = {i.attrs["name"]: i.attrs["value"] for i in page.all("input", type="hidden")}
    return fetch(link, {**key, **fields})


def stored(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(sql).fetchall()


def test_two_people_play_in_a_run_that_is_killed_and_resumed_and_lose_nothing_they_sent(
    tmp_path, cluster_env
):
    config, db = tmp_path / "lab.yaml", tmp_path / "lab.db"
    config.write_text(FILE)
    args = ("run", str(config), "--db", f"sqlite:///{db}")
    with BackgroundRun(*args, cwd=tmp_path, env=cluster_env, log=tmp_path / "first.log") as run:
        first = links(run)
        assert first["ann"] != first["bob"]
        come(first["ann"])
        waiting = fetch(first["ann"]).page  # she has come; bob not yet: the match waits for him
        assert [r.content() for r in waiting.one("table", id="people").all("td")] == [
            "ann",
            "joined",
            "bob",
            "not yet",
        ]
        come(first["bob"])
        day = page_of(run, first["bob"], "Day 1 of 2: bob")  # both have come: it starts
        assert send(first["bob"], day, **{"price.widget": "19"}).status == 303
        day = page_of(run, first["ann"], "Day 1 of 2: ann")
        send(first["ann"], day, **{"price.widget": "12,5"})  # refused, asked again with the reason
        again = page_of(run, first["ann"], "Day 1 of 2: ann")
        assert "'12,5' is not a number" in again.one("p", id="refusal").content()
        send(first["ann"], again, **{"price.widget": "17", "message": "hi bob"})
        day = page_of(run, first["ann"], "Day 2 of 2: ann")
        sent = send(first["ann"], day, **{"price.widget": "16"})
        assert sent.status == 303 and sent.headers["location"].endswith("?said=sent")
        kill_session(run.process.pid)  # the moment her page says sent: bob has not sent day 2
    assert stored(db, "select count(*) from match") == [(0,)]
    kept = stored(db, "select merchant, day, attempt from desk_page order by id")
    assert kept == [("bob", 1, 0), ("ann", 1, 0), ("ann", 1, 1), ("ann", 2, 0)]

    with BackgroundRun(*args, "--resume", cwd=tmp_path, env=cluster_env, log=tmp_path / "resumed.log") as run:
        second = links(run)
        assert second["ann"] != first["ann"]  # new links: the old tokens went with the process
        come(second["ann"])
        come(second["bob"])
        day = page_of(run, second["bob"], "Day 2 of 2: bob")  # back where he was, her message there
        assert "hi bob" in day.content()
        assert fetch(second["ann"]).page.one("title").content() == "Waiting: ann"  # she had sent hers
        send(second["bob"], day, **{"price.widget": "18"})
        run.wait_for("the run's end", lambda: run.process.poll() is not None)
        assert run.process.returncode == 0, run.output()
        assert "Resumed tournament 1: 0 matches were already done." in run.output()
    # the record: what they sent, the refused form nowhere, their message delivered
    (match,) = match_details(engine_for(f"sqlite:///{db}", create=False), 1)
    days = {(d.merchant, d.day): d for d in match.days}
    assert [days["ann", day].prices for day in (1, 2)] == [{"widget": 17.0}, {"widget": 16.0}]
    assert [days["bob", day].prices for day in (1, 2)] == [{"widget": 19.0}, {"widget": 18.0}]
    assert days["ann", 1].message == "hi bob" and match.faults == []
    assert sorted(match.people) == ["ann", "bob"]  # their seats marked as people's
    assert len(stored(db, "select * from desk_page")) == 5  # bob's day 2 kept too, nothing twice
    # exported for analysis: every page, attempt by attempt, as typed, in the order settled
    export(engine_for(f"sqlite:///{db}", create=False), 1, tmp_path / "tables", "csv")
    with (tmp_path / "tables" / "pages.csv").open() as pages:
        rows = [
            (p["merchant"], p["day"], p["attempt"], json.loads(p["fields"])) for p in csv.DictReader(pages)
        ]
    assert rows == [
        ("bob", "1", "0", {"price.widget": "19"}),
        ("ann", "1", "0", {"price.widget": "12,5"}),
        ("ann", "1", "1", {"price.widget": "17", "message": "hi bob"}),
        ("ann", "2", "0", {"price.widget": "16"}),
        ("bob", "2", "0", {"price.widget": "18"}),
    ]


def test_pages_that_cannot_be_served_where_asked_stop_the_run_before_it_starts(tmp_path):
    """A host that is no address of this machine: one line, exit 2, no database made."""
    config, db = tmp_path / "lab.yaml", tmp_path / "lab.db"
    config.write_text(FILE)
    result = CliRunner().invoke(app, ["run", str(config), "--db", f"sqlite:///{db}", "--host", "192.0.2.1"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --host/--port: cannot listen on 192.0.2.1:0 (Cannot assign requested address)"
    ]
    assert not db.exists()


def test_a_person_plays_one_match_at_a_time_and_others_play_meanwhile():
    """Four matches started at once: those sharing a person take turns (in the order asked),
    the one without anyone's person in it plays beside them."""
    people = _People(["ann", "bob"])
    playing, started = list[tuple[str, ...]](), list[tuple[str, ...]]()
    met: list[tuple[tuple[str, ...], ...]] = []  # who was playing together, each time one started

    async def play(seats: tuple[str, ...]) -> None:
        async with people.seated(seats):
            playing.append(seats)
            started.append(seats)
            met.append(tuple(playing))
            for _ in range(3):  # others may start meanwhile
                await asyncio.sleep(0)
            playing.remove(seats)

    async def all_at_once() -> None:
        await asyncio.gather(*map(play, [("ann", "x"), ("bob", "ann"), ("y", "z"), ("bob", "w")]))

    asyncio.run(all_at_once())
    for together in met:
        for person in ("ann", "bob"):
            assert sum(person in seats for seats in together) <= 1, together
    # (bob, ann) waits for ann's seat first (names in order), holding none: (bob, w) goes before it
    assert started == [("ann", "x"), ("y", "z"), ("bob", "w"), ("bob", "ann")]
    assert any(len(together) > 1 for together in met)  # matches without a shared person overlap
