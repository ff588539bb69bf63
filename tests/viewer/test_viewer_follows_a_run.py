"""A tournament followed in the viewer while `arena run` plays it in its own process: the
tournament's page shows the matches stored and the days played growing, without a reload,
and the run's end. The stand-in model holds its answers after the first match until the
page is up, so the run cannot finish before the browser looks (counted, not timed)."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import pytest
from api_keys import OPENAI_KEY
from fakes.openai_api import FakeOpenAI
from fakes.server import Call, Reply
from playwright.sync_api import expect, sync_playwright

from results.presentation.chromium import binary
from tests.arena_process import BackgroundRun, stored_matches
from viewer.app import InThread, open_for_reading

pytestmark = pytest.mark.slow

MATCHES, DAYS = 3, 4
HOLD_S = 120  # the most the stand-in holds an answer: a test that fails does not hang


class HeldOpenAI(FakeOpenAI):
    """The stand-in, answering the first match's DAYS decisions (one a day: recall_every 0)
    at once and every later one only once `released` is set."""

    def __init__(self) -> None:
        super().__init__(api_key=OPENAI_KEY)  # the key the tests' Ray cluster gives the run's hosts
        self.released = threading.Event()

    def handle(self, call: Call) -> Reply:
        if self.calls.index(call) >= DAYS:
            self.released.wait(HOLD_S)
        return super().handle(call)


@pytest.fixture
def openai_api():
    with HeldOpenAI() as fake:
        yield fake


def test_the_viewer_follows_a_tournament_that_is_running(tmp_path: Path, openai_api: HeldOpenAI, cluster_env):
    config = tmp_path / "followed.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            name: followed
            seed: 3
            scenarios: [price_war]
            seeds: [{", ".join(str(n) for n in range(1, MATCHES + 1))}]
            days: {DAYS}
            recall_every: 0
            max_concurrent_matches: 1
            contestants:
              - name: mini
                kind: llm
                isolate: false
                params: {{model: openai/gpt-4.1-mini, base_url: "{openai_api.base_url}",
                         api_key_env: ARENA_OPENAI_KEY, no_cache: true}}
              - {{name: fixed, kind: fixed_price}}
            """
        )
    )
    db = tmp_path / "followed.db"
    env = {**cluster_env, "ARENA_OPENAI_KEY": OPENAI_KEY}  # the run: on the tests' Ray cluster
    with BackgroundRun(
        "run", str(config), "--db", f"sqlite:///{db}", cwd=tmp_path, env=env, log=tmp_path / "run.log"
    ) as run:
        run.wait_for("a match stored", lambda: stored_matches(db) >= 1)
        engine = open_for_reading(f"sqlite:///{db}")
        serving = InThread(engine)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=binary(), args=["--no-sandbox"])
                page = browser.new_page()
                page.goto(serving.address + "/tournaments/1")
                expect(page.locator('[data-progress="status"]')).to_have_text("running")
                done = page.locator('[data-progress="done"]')
                expect(done).to_have_text("1")  # the second match waits for its first answer
                expect(page.locator('[data-progress="days_planned"]')).to_have_text(
                    str(MATCHES * DAYS), timeout=10_000
                )
                openai_api.released.set()
                expect(done).not_to_have_text("1", timeout=60_000)  # more stored, no reload
                run.wait_for("the run's end", lambda: run.process.poll() is not None)
                assert run.process.returncode == 0, run.output()[-2000:]
                expect(page.locator('[data-progress="status"]')).to_have_text("finished", timeout=10_000)
                expect(page.locator('[data-progress="done"]')).to_have_text(str(MATCHES))
                expect(page.locator("#leaderboard table")).to_contain_text("mini")
                browser.close()
        finally:
            openai_api.released.set()
            serving.stop()
            engine.dispose()
