"""The viewer's pages over HTTP, as a script or a browser gets them: what each shows, that a
merchant's or a model's words are shown as text, the errors a reader meets (a missing match,
a bad page number, a database that cannot be read), the token, and the record opened for
reading only."""

from __future__ import annotations

import concurrent.futures
import csv
import http.cookiejar
import io
import json
import sqlite3
import threading
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from markupsafe import escape
from older_arena import as_an_older_arena_left_it
from probed_match import store_probed_match
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from results import leaderboard
from results.errors import DatabaseError
from results.scoring.composite import ScoringWeights
from results.storage import store
from results.storage.db import engine_for
from results.storage.schema import utcnow
from tests.viewer.conftest import DAYS, HOSTILE, Stored, note, prices, store_another
from viewer.app import InThread, open_for_reading
from viewer.pages import Leaderboards


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode(), refused.headers


def test_the_pages_link_from_the_tournaments_to_a_merchants_day(viewer: InThread, stored: Stored):
    status, home, _ = get(viewer.address + "/")
    assert status == 200 and f'href="/tournaments/{stored.tournament}"' in home
    status, page, _ = get(f"{viewer.address}/tournaments/{stored.tournament}")
    assert status == 200 and "leaderboard" in page.lower()
    assert all(f'href="/matches/{m}"' in page for m in stored.matches)
    status, page, _ = get(f"{viewer.address}/matches/{stored.matches[0]}")
    assert status == 200
    assert all(f'href="/matches/{stored.matches[0]}/days/{d}"' in page for d in range(1, DAYS + 1))
    status, page, _ = get(f"{viewer.address}/matches/{stored.matches[0]}/days/3")
    assert status == 200 and "accepted: tea at 4.0" in page and "set_price" in page
    assert "<dt>plan</dt><dd>cut to 4 on day 4</dd>" in page  # written on day 2, kept
    _, first_day, _ = get(f"{viewer.address}/matches/{stored.matches[0]}/days/1")
    assert 'class="notes"' not in first_day


def test_the_match_page_lists_what_happened_with_links_to_those_days(viewer: InThread, stored: Stored):
    _, page, _ = get(f"{viewer.address}/matches/{stored.matches[0]}")
    found = page[page.index('id="incidents"') : page.index('id="charts"')]
    # m1's cut from 5 to 4 on day 4 (a fifth, against m0's 5), m0's stock-out on days 2 and 3
    assert f'/matches/{stored.matches[0]}/days/4#m1">day 4</a> · m1 · <b>price cut</b>' in found
    assert (
        f'/matches/{stored.matches[0]}/days/2#m0">days 2–3</a> · m0 · <b>stock-out</b> 6 customers' in found
    )
    assert found.count("<li>") == 2


def test_a_merchants_and_a_models_words_are_shown_as_text(viewer: InThread, stored: Stored):
    for path in (
        f"/tournaments/{stored.tournament}",
        f"/matches/{stored.matches[0]}",
        f"/matches/{stored.matches[0]}/days/4",
    ):
        _, page, _ = get(viewer.address + path)
        assert HOSTILE not in page, path
        assert str(escape(HOSTILE)) in page, path
    _, day, _ = get(f"{viewer.address}/matches/{stored.matches[0]}/days/3")
    assert day.count("&lt;script&gt;") >= 3  # the model's reasoning, what it was sent, a message said


def test_a_charts_data_downloads_as_csv(viewer: InThread, stored: Stored):
    status, body, headers = get(f"{viewer.address}/matches/{stored.matches[0]}/charts/1.csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert "attachment" in headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0][0] == "day" and len(rows) == DAYS + 1
    assert [name.rsplit(" (", 1)[1] for name in rows[0][1:]] == ["m0)", "m1)"]  # a line per seat
    for row in rows[1:]:
        day = int(row[0])
        assert sorted(float(v) for v in row[1:]) == sorted(prices(day, m) for m in ("m0", "m1"))


def test_two_matches_of_the_same_draw_are_compared_on_the_same_charts(viewer: InThread, stored: Stored):
    first, second = stored.matches
    _, page, _ = get(f"{viewer.address}/matches/{first}")
    assert f'href="/compare?a={first}&amp;b={second}"' in page
    status, page, _ = get(f"{viewer.address}/compare?a={first}&b={second}")
    assert status == 200 and f'href="/matches/{second}"' in page
    status, body, _ = get(f"{viewer.address}/compare/charts/1.csv?a={first}&b={second}")
    rows = list(csv.reader(io.StringIO(body)))
    assert status == 200 and len(rows) == DAYS + 1
    assert [name.split(" · ")[0] for name in rows[0][1:]] == [f"match {first}"] * 2 + [f"match {second}"] * 2
    for row in rows[1:]:  # the same prices in both: the same script played them
        assert row[1:3] == row[3:5] and sorted(map(float, row[1:3])) == sorted(
            prices(int(row[0]), m) for m in ("m0", "m1")
        )
    assert get(f"{viewer.address}/compare?a={first}")[0] == 400


def test_what_is_not_there_is_a_404_with_a_way_back(viewer: InThread, stored: Stored):
    for path in (
        "/matches/999",
        "/tournaments/999",
        f"/matches/{stored.matches[0]}/days/{DAYS + 1}",
        "/nowhere",
        f"/matches/{stored.matches[0]}/charts/99.csv",
    ):
        status, page, _ = get(viewer.address + path)
        assert status == 404 and 'href="/"' in page and "Traceback" not in page, path
    status, page, _ = get(f"{viewer.address}/tournaments/{stored.tournament}?page=x")
    assert status == 400 and "page" in page


def test_the_version_of_the_record_changes_when_a_match_is_stored(
    viewer: InThread, stored: Stored, day_record
):
    _, before, _ = get(viewer.address + "/changes")
    _, progress, _ = get(f"{viewer.address}/tournaments/{stored.tournament}/progress.json")
    assert json.loads(progress) | {"time_left": ""} == json.loads(progress) | {
        "status": "running",
        "done": 2,
        "planned": 3,
        "left": 1,
        "time_left": "",
    }
    # this run started 30 s ago with 3 days played, and has played 6 more: 9 left take 45 s
    note(stored, days_played=9, playing=1, started=utcnow() - timedelta(seconds=30), days_at_start=3)
    _, progress, _ = get(f"{viewer.address}/tournaments/{stored.tournament}/progress.json")
    shown = json.loads(progress)
    assert {k: shown[k] for k in ("days_played", "days_planned", "playing", "silent_since")} == {
        "days_played": 9,
        "days_planned": 18,
        "playing": 1,
        "silent_since": "",
    }
    assert shown["time_left"] in ("about 45 s", "about 46 s")  # the second that passes while asked
    store_another(stored, day_record)
    _, after, _ = get(viewer.address + "/changes")
    assert json.loads(before) != json.loads(after)
    _, progress, _ = get(f"{viewer.address}/tournaments/{stored.tournament}/progress.json")
    assert json.loads(progress)["done"] == 3 and json.loads(progress)["left"] == 0


def test_a_database_that_cannot_be_read_gets_a_banner_not_a_traceback(viewer: InThread, stored: Stored):
    stored.path.write_bytes(b"this is no longer a database" * 100)
    for wal in stored.path.parent.glob("arena.db-*"):
        wal.unlink()
    status, page, _ = get(f"{viewer.address}/matches/{stored.matches[0]}")
    assert status == 503 and "database cannot be read" in page and "Traceback" not in page
    status, body, _ = get(viewer.address + "/changes")
    assert status == 503 and "database cannot be read" in json.loads(body)["problem"]


def test_the_viewer_cannot_write_to_the_record(stored: Stored):
    engine = open_for_reading(stored.url)
    try:
        with (
            pytest.raises(OperationalError, match="readonly|read-only|query_only"),
            engine.begin() as connection,
        ):
            connection.execute(text("DELETE FROM match"))
    finally:
        engine.dispose()
    writer = engine_for(stored.url)
    assert len(store.list_matches(writer, stored.tournament)) == 2
    writer.dispose()


def test_a_viewer_with_a_token_lets_in_only_who_shows_it(stored: Stored):
    """The token once in the address: a cookie (not the token) and the same address without
    it; then the cookie, or the token as a bearer, lets in."""
    engine = open_for_reading(stored.url)
    serving = InThread(engine, token="s3cret-token")
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    try:
        status, page, _ = get(serving.address + f"/matches/{stored.matches[0]}")
        assert status == 401 and "token" in page and "s3cret-token" not in page and "/changes" not in page
        assert get(serving.address + "/changes")[0] == 401
        assert get(serving.address + "/?token=wrong")[0] == 401
        with browser.open(
            serving.address + f"/matches/{stored.matches[0]}?token=s3cret-token&page=1"
        ) as answer:
            assert (
                answer.status == 200
                and answer.url == serving.address + f"/matches/{stored.matches[0]}?page=1"
            )
        [cookie] = list(jar)
        port = serving.address.rsplit(":", 1)[1]
        assert cookie.name == f"arena_token_{port}" and "s3cret-token" not in cookie.value
        with browser.open(serving.address + "/changes") as answer:
            assert answer.status == 200
        assert get(serving.address + "/changes", {"authorization": "Bearer s3cret-token"})[0] == 200
        assert get(serving.address + "/changes", {"authorization": "bearer s3cret-token"})[0] == 200
    finally:
        serving.stop()
        engine.dispose()


def test_on_loopback_only_this_machines_own_names_are_answered(viewer: InThread):
    """A website whose name was pointed at 127.0.0.1 (DNS rebinding) is not answered."""
    assert get(viewer.address + "/", {"host": "evil.example"})[0] == 400
    assert get(viewer.address.replace("127.0.0.1", "localhost") + "/")[0] == 200


def test_ids_no_database_could_hold_and_numbers_that_are_not_ascii_are_refused(viewer: InThread):
    assert get(viewer.address + "/matches/99999999999999999999999")[0] == 404
    assert get(viewer.address + "/matches/99999999999999999999999/days/1")[0] == 404
    assert get(viewer.address + "/tournaments/1?page=%C2%B2")[0] == 400  # a superscript two
    assert get(viewer.address + "/compare?a=%C2%B2&b=1")[0] == 400
    assert get(viewer.address + "/tournaments/1?page=" + "9" * 5000)[0] == 400  # past int()'s own limit
    assert get(viewer.address + "/matches/" + "9" * 5000)[0] == 404
    assert get(viewer.address + "/matches/abc")[0] == 404


def test_a_leaderboard_is_computed_once_a_version_and_brought_up_to_date_in_the_background(
    stored: Stored, day_record
):
    engine = open_for_reading(stored.url)
    leaderboards = Leaderboards(engine)
    try:
        rows, current = leaderboards.rows(stored.tournament, ScoringWeights(), 0.95)
        assert current and {r.matches for r in rows} == {2}
        assert leaderboards.rows(stored.tournament, ScoringWeights(), 0.95)[0] is rows  # not computed again
        store_another(stored, day_record)
        stale, current = leaderboards.rows(stored.tournament, ScoringWeights(), 0.95)
        assert stale is rows and not current  # at once, while a thread computes the new one
        for _ in range(500):
            if leaderboards.refreshed:
                break
            threading.Event().wait(0.02)
        fresh, current = leaderboards.rows(stored.tournament, ScoringWeights(), 0.95)
        assert leaderboards.refreshed == 1 and current and {r.matches for r in fresh} == {3}
    finally:
        engine.dispose()


def test_a_probed_matchs_deviated_path_is_charted_beside_it(tmp_path):
    """A fixed price against tit-for-tat, the fixed seat forced to 1.3 on day 3 of the
    deviated path: its chart's data has that price on that day, on the deviated line only."""
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    _, match = store_probed_match(url)
    reader = open_for_reading(url)
    serving = InThread(reader)
    try:
        _, page, _ = get(f"{serving.address}/matches/{match}")
        section = page[page.index("<h4>Deviation probe</h4>") :]
        first = int(section.split('id="chart-')[1].split('"')[0])
        _, body, _ = get(f"{serving.address}/matches/{match}/charts/{first}.csv")
        rows = list(csv.reader(io.StringIO(body)))
        deviated = [i for i, name in enumerate(rows[0]) if name.startswith("fixed") and "deviated" in name]
        on_path = [i for i, name in enumerate(rows[0]) if name.startswith("fixed") and "deviated" not in name]
        day3 = next(row for row in rows[1:] if row[0] == "3")
        assert [float(day3[i]) for i in deviated] == [1.3] and [float(day3[i]) for i in on_path] == [1.8]
    finally:
        serving.stop()
        reader.dispose()


def test_a_leaderboard_asked_for_by_many_at_once_is_computed_once(stored: Stored, monkeypatch):
    computed = []
    real = leaderboard.leaderboard
    monkeypatch.setattr(leaderboard, "leaderboard", lambda *a, **k: computed.append(1) or real(*a, **k))
    engine = open_for_reading(stored.url)
    leaderboards = Leaderboards(engine)
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
            answers = list(
                pool.map(lambda _: leaderboards.rows(stored.tournament, ScoringWeights(), 0.95), range(10))
            )
    finally:
        engine.dispose()
    assert len(computed) == 1 and all(rows is answers[0][0] and current for rows, current in answers)


def test_an_older_record_is_refused_in_one_line_and_left_as_it_was(stored: Stored):
    """A database from before the transcript and run_progress tables, with the tables and
    columns renamed and added since (results.storage.db.RENAMED_TABLES, ADDED_COLUMNS) as they were,
    not in WAL mode: the viewer, which may create nothing, says what it lacks and how to add
    it, and changes nothing in it, not even its journal mode."""
    as_an_older_arena_left_it(stored.url)
    with sqlite3.connect(stored.path) as old:
        old.execute("PRAGMA journal_mode=DELETE")
        old.execute("DROP TABLE transcript")
        old.execute("DROP TABLE run_progress")
    before = stored.path.read_bytes()
    with pytest.raises(DatabaseError) as refused:
        open_for_reading(stored.url)
    lacks = (
        "lacks what this arena reads (recall_question, run_progress, transcript, match_result.length_refusals"
    )
    assert lacks in str(refused.value)
    assert "`uv run arena matches --db URL`" in str(refused.value)
    assert stored.path.read_bytes() == before
    with sqlite3.connect(stored.path) as old:
        assert old.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    engine_for(stored.url, create=False).dispose()  # what any other command does: the tables added
    open_for_reading(stored.url).dispose()
