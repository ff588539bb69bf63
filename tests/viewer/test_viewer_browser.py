"""The viewer as a person uses it, in Debian's Chromium driven by Playwright: links followed
from the tournaments to a merchant's day, charts drawn, hostile words shown and never run, a
running tournament's progress followed without a reload, and many pages at once."""

from __future__ import annotations

import concurrent.futures
import socket
import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from results.presentation.chromium import binary
from results.storage.schema import utcnow
from tests.viewer.conftest import HOSTILE, Stored, fill, judge, note, served, store_another
from viewer.app import InThread

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=binary(), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def context(browser):
    """One browser context for the module: its cache keeps plotly.js (4.8 MB) from one page
    of the shared viewer to the next, as a reader's browser does."""
    opened = browser.new_context(viewport={"width": 1280, "height": 900})
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def shared(tmp_path_factory, day_record) -> Stored:
    """The stored tournament of the tests that only read it (those that change it have their own),
    judged: its pages show the conduct of its first match, hostile words among them."""
    path = tmp_path_factory.mktemp("shared") / "arena.db"
    stored = fill(f"sqlite:///{path}", day_record, path)
    judge(stored)
    return stored


@pytest.fixture(scope="module")
def shared_viewer(shared: Stored) -> Iterator[InThread]:
    with served(shared.url) as serving:
        yield serving


@pytest.fixture
def page(context) -> Iterator[Page]:
    opened = context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda error: problems.append(str(error)))
    # a script's error fails the test; an answer of 404 or 503 the browser logs is the test's to judge
    opened.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and not message.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield opened
    opened.close()
    assert problems == []


def shows_hostile_words_without_running_them(page: Page, where: str) -> None:
    """The page, once loaded, shows the hostile name as words and ran none of its script; in
    its charts too, where plotly.js would read links and bold in names, which come escaped."""
    page.wait_for_load_state("networkidle")
    assert page.evaluate("window.hacked") is None, where
    assert HOSTILE in page.locator("main").inner_text(), where
    if page.locator(".plot").count():
        expect(page.locator("#chart-1 .legend").first).to_be_visible()
        assert page.locator(".plot a, .plot b").count() == 0, where
        assert HOSTILE in (page.locator("#chart-1 .legend").first.text_content() or ""), where


def test_a_reader_follows_links_to_a_merchants_day_and_hostile_words_are_shown_and_never_run(
    page: Page, shared_viewer: InThread, shared: Stored
):
    """From the tournaments to a match, the comparison of the two matches of one draw (both
    on the same charts) and back, and on to a merchant's day; every page that shows a
    merchant's words shows the hostile name and runs none of it (the pages with charts are the
    costly ones for the browser: the reader's path opens each once)."""
    first, second = shared.matches
    page.goto(shared_viewer.address + "/")
    page.get_by_role("link", name="spring").click()
    expect(page.locator("#leaderboard table")).to_contain_text("steady")
    shows_hostile_words_without_running_them(page, "the tournament")
    page.locator(f'a[href="/matches/{first}"]').click()
    expect(page.locator("h1")).to_contain_text("corner-shop")
    expect(page.locator("#chart-1 .main-svg").first).to_be_visible()
    charts = page.locator(".plot").count()
    assert charts >= 5 and page.locator(".plot:has(.main-svg)").count() == charts  # plotly drew each
    shows_hostile_words_without_running_them(page, "the match")
    page.get_by_role("link", name=f"compare with match {second}").click()
    expect(page.locator("h1")).to_contain_text(f"Match {first} and match {second}")
    expect(page.locator("#chart-1 .legend .traces")).to_have_count(4)  # two seats of each match
    shows_hostile_words_without_running_them(page, "the comparison")
    page.go_back()
    page.get_by_role("link", name="day 4").first.click()  # where m1 cut its price
    expect(page.locator("h1")).to_have_text("Day 4 of 6")
    expect(page.locator("#m1 .operations")).to_contain_text('"price": 4.0')
    page.get_by_role("link", name="‹ day 3").click()
    expect(page.locator("#m1 .steps")).to_contain_text("accepted: tea at 4.0")
    shows_hostile_words_without_running_them(page, "day 3")


def test_a_running_tournaments_page_follows_its_progress(
    page: Page, viewer: InThread, stored: Stored, day_record
):
    page.goto(f"{viewer.address}/tournaments/{stored.tournament}")
    expect(page.locator('[data-progress="done"]')).to_have_text("2")
    note(stored, days_played=14, playing=1, started=utcnow())
    expect(page.locator('[data-progress="days_played"]')).to_have_text("14", timeout=10_000)  # no reload
    expect(page.locator('[data-progress="playing"]')).to_have_text("1")
    store_another(stored, day_record)
    expect(page.locator('[data-progress="done"]')).to_have_text("3", timeout=10_000)
    expect(page.locator('[data-progress="left"]')).to_have_text("0")


def test_a_hundred_pages_at_once_and_a_reader_who_leaves_mid_download(
    shared_viewer: InThread, shared: Stored
):
    host, port = shared_viewer.address.removeprefix("http://").split(":")
    for _ in range(5):  # ask for the 4.8 MB script and hang up after its first bytes
        with socket.create_connection((host, int(port))) as hung_up:
            hung_up.sendall(b"GET /static/plotly.min.js HTTP/1.1\r\nHost: x\r\n\r\n")
            hung_up.recv(1024)

    def load(n: int) -> int:
        path = f"/matches/{shared.matches[n % 2]}" if n % 3 else f"/tournaments/{shared.tournament}"
        with urllib.request.urlopen(shared_viewer.address + path, timeout=60) as answer:
            return answer.status

    with concurrent.futures.ThreadPoolExecutor(max_workers=100) as pool:
        statuses = list(pool.map(load, range(100)))
    assert statuses == [200] * 100


def test_a_match_that_is_not_there_and_a_database_that_goes_away(
    page: Page, viewer: InThread, stored: Stored
):
    answer = page.goto(f"{viewer.address}/matches/999")
    assert answer is not None and answer.status == 404
    page.get_by_role("link", name="Back to the tournaments").click()
    expect(page.locator("h1")).to_have_text("Tournaments")
    expect(page.locator("#banner")).to_be_hidden()  # every page's banner: this one's, as it is open
    stored.path.write_bytes(b"this is no longer a database" * 100)
    for journal in stored.path.parent.glob("arena.db-*"):
        journal.unlink()
    expect(page.locator("#banner")).to_contain_text("The database cannot be read", timeout=10_000)
