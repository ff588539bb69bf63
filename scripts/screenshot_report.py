"""Render a tournament report and screenshots of it, for people to look at.

    uv run python scripts/screenshot_report.py                    # plays scripts/report_demo.yaml
    uv run python scripts/screenshot_report.py --db sqlite:///arena.db --tournament 3

Without --tournament it plays the demo tournament (or --config FILE) in this process, no Ray,
into a fresh SQLite file in the output folder. Writes OUT/report.html, OUT/report.png (the top
of the page) and OUT/report-match.png (a match with events opened, the sections above
hidden). Needs Debian's chromium.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import leaderboard, recording  # noqa: E402
from results.presentation import chromium  # noqa: E402
from results.report import write_report  # noqa: E402
from results.storage import store  # noqa: E402
from results.storage.db import engine_for  # noqa: E402
from tournaments.config import stored_tournament  # noqa: E402


def play_here(config: Path, db_url: str) -> int:
    """Play every match of the tournament file in this process; the tournament's id."""
    from tournaments.load import load_tournament
    from tournaments.match import Match, MatchRules, play_here
    from tournaments.plan import plan_tournament
    from tournaments.schedule import schedule

    tournament = load_tournament(config)
    spec = tournament.spec
    plan = schedule(tournament)
    engine = engine_for(db_url)
    tournament_id = store.start_tournament(
        engine,
        name=spec.name,
        config_path=str(config),
        config_text=tournament.text,
        config_hash=tournament.config_hash,
        seed=spec.seed,
        contestants=[(c.name, c.kind, c.params) for c in spec.contestants],
        planned_matches=len(plan),
    )
    rules = MatchRules.of(spec)
    plans = plan_tournament(spec)
    for match in plan:
        scenario = tournament.scenarios[match.scenario]
        recording.save_match(
            engine, tournament_id, play_here([Match(match, scenario, rules, plans)])[0], scenario
        )
    leaderboard.finish_tournament(engine, tournament_id, "finished")
    return tournament_id


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", help="database URL of an existing record (with --tournament)")
    parser.add_argument("--tournament", type=int, help="report this stored tournament instead of playing one")
    parser.add_argument(
        "--config", type=Path, default=ROOT / "scripts" / "report_demo.yaml", help="tournament file to play"
    )
    parser.add_argument("--out", type=Path, default=Path("report-screenshot"), help="output folder")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    if args.tournament is None:
        db_file = args.out / "demo.db"
        db_file.unlink(missing_ok=True)
        db_url = f"sqlite:///{db_file}"
        tournament_id = play_here(args.config, db_url)
    else:
        db_url, tournament_id = args.db, args.tournament
    engine = engine_for(db_url, create=False)
    page = args.out / "report.html"
    stored = stored_tournament(store.get_tournament(engine, tournament_id))
    write_report(engine, tournament_id, page, *stored.scenarios(), weights=stored.scoring)
    chromium.screenshot(page.resolve().as_uri(), args.out / "report.png")
    match_view = args.out / "report-match.html"
    match_view.write_text(_first_match_only(page.read_text(encoding="utf-8")), encoding="utf-8")
    chromium.screenshot(match_view.resolve().as_uri(), args.out / "report-match.png")
    print(f"wrote {page}, {args.out / 'report.png'}, {args.out / 'report-match.png'}")


def _first_match_only(html: str) -> str:
    """The page with its first match that has scenario events opened (else its first match),
    and the sections above hidden, to look at the charts."""
    head, *matches = html.split('<details class="match"')
    chosen = next((i for i, m in enumerate(matches) if 'class="band ' in m.split("</details>")[0]), 0)
    matches[chosen] = " open" + matches[chosen]
    html = '<details class="match"'.join([head, *matches])
    return html.replace("</style>", "header, section:not(#matches), .scenarios { display: none; }</style>", 1)


if __name__ == "__main__":
    main()
