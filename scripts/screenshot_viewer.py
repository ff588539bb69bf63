"""Screenshots of `arena serve`'s main pages, for docs/ and for people to look at.

    uv run python scripts/screenshot_viewer.py                       # plays scripts/report_demo.yaml
    uv run python scripts/screenshot_viewer.py --db sqlite:///arena.db --tournament 3 --out shots

Without --tournament it plays the demo tournament in this process (as
scripts/screenshot_report.py does) into a fresh SQLite file in the output folder. The viewer
then serves it on loopback and Debian's Chromium, driven by Playwright, takes the tournament's
page, a match of the seasonal scenario (its events shaded), a day of it, and the match beside
another lineup's of the same scenario and seed: OUT/viewer-*.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from screenshot_report import play_here  # noqa: E402

from results.presentation import chromium  # noqa: E402
from results.storage import store  # noqa: E402
from viewer.app import InThread, open_for_reading  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a stored record (default: play the demo into OUT/viewer.db)")
    parser.add_argument("--tournament", type=int)
    parser.add_argument("--out", type=Path, default=ROOT / "viewer-screenshot")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    url = args.db
    tournament = args.tournament
    if tournament is None:
        path = args.out / "viewer.db"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
        tournament = play_here(ROOT / "scripts" / "report_demo.yaml", url)
    engine = open_for_reading(url)
    matches = store.list_matches(engine, tournament)
    seasonal = next((m for m in matches if m.scenario == "seasonal"), matches[0])
    serving = InThread(engine)
    other = next(
        (
            m
            for m in matches
            if (m.scenario, m.seed) == (seasonal.scenario, seasonal.seed) and m.id != seasonal.id
        ),
        seasonal,
    )
    pages = {
        "viewer-tournament.png": f"/tournaments/{tournament}",
        "viewer-match.png": f"/matches/{seasonal.id}#charts",
        "viewer-day.png": f"/matches/{seasonal.id}/days/{seasonal.days // 2}",
        "viewer-compare.png": f"/compare?a={seasonal.id}&b={other.id}#charts",
    }
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium.binary(), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name, path in pages.items():
                page.goto(serving.address + path)
                page.wait_for_load_state("networkidle")
                page.screenshot(path=str(args.out / name))
                print(args.out / name)
            browser.close()
    finally:
        serving.stop()
        engine.dispose()


if __name__ == "__main__":
    main()
