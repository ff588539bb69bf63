"""What `arena run` prints, its table, and `arena matches`, read as a user reads them: the
rows, their order and their numbers, checked against the schedule and against the store read
with SQL (not through the code that printed them)."""

from __future__ import annotations

import io
import json
import re
import sqlite3
import textwrap
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from arena.cli import app, printing, progress
from tournaments.load import load_tournament
from tournaments.schedule import schedule

CONTESTANTS = ["fixed", "cost_plus", "undercut", "best_response"]


@pytest.fixture(scope="module")
def played(tmp_path_factory, ray_local) -> tuple[Path, Path, str, str]:
    """A small tournament played with `arena run`: its file, its database, what it printed
    (on stdout, and on stderr, which is not a terminal here)."""
    folder = tmp_path_factory.mktemp("run_tables")
    config = folder / "tiny.yaml"
    config.write_text(
        textwrap.dedent(
            """
            name: tiny
            seed: 8
            scenarios: [price_war]
            seeds: [1, 2]
            days: 15
            contestants:
              - {name: fixed, kind: fixed_price, params: {markup: 0.5}}
              - {name: cost_plus, kind: cost_plus}
              - {name: undercut, kind: undercut}
              - {name: best_response, kind: best_response}
            """
        )
    )
    db = folder / "tiny.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(printing.out, "width", 200)  # as printed to a log
        ran = CliRunner().invoke(app, ["run", str(config), "--db", f"sqlite:///{db}"])
    assert ran.exit_code == 0, ran.output
    return config, db, ran.stdout, ran.stderr


def table_rows(printed: str) -> list[dict[str, str]]:
    """The rows of the one table in `printed` (rich's box drawing), by column header."""
    lines = [line for line in printed.splitlines() if "│" in line or "┃" in line]
    header, *rows = ([cell.strip() for cell in re.split("[│┃]", line)[1:-1]] for line in lines)
    return [dict(zip(header, row)) for row in rows]


def store(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(sql).fetchall()


def test_the_run_prints_one_row_per_contestant_with_its_results_from_the_store(played):
    _, db, printed, _ = played
    rows = table_rows(printed)
    assert sorted(row["contestant"] for row in rows) == sorted(CONTESTANTS)
    seats = defaultdict(list)  # contestant: (match, its rank, its profit, its faults) of each match it played
    for match_id, contestant, rank, profit, faults in store(
        db, "select match_id, contestant, rank, profit, faults from match_result"
    ):
        seats[contestant].append((match_id, rank, profit, faults))
    best = dict(store(db, "select match_id, min(rank) from match_result group by match_id"))
    for row in rows:
        mine = seats[row["contestant"]]
        wins = sum(rank == best[match_id] for match_id, rank, _, _ in mine)
        assert row["matches"] == str(len(mine)) == "6"  # the three others, on each of two seeds
        assert row["win rate"] == f"{wins / len(mine):.0%}"
        assert row["mean profit"] == f"{sum(profit for _, _, profit, _ in mine) / len(mine):,.2f}"
        assert row["faults"] == str(sum(faults for *_, faults in mine))


def test_the_run_prints_the_contestants_in_rating_order_with_their_ratings(played):
    config, db, printed, _ = played
    rows = table_rows(printed)
    board = json.loads(
        CliRunner()
        .invoke(app, ["leaderboard", "--db", f"sqlite:///{db}", "--tournament", "1", "--json"])
        .stdout
    )
    ratings = {entry["contestant"]: entry["rating"] for entry in board["rows"]}
    assert len(set(ratings.values())) == len(CONTESTANTS)  # no ties: one right order
    shown = [row["contestant"] for row in rows]
    assert shown == sorted(ratings, key=lambda name: -ratings[name])  # best first
    assert [row["rating"] for row in rows] == [f"{ratings[name]:.0f}" for name in shown]
    ranks = {entry["contestant"]: entry["rank"] for entry in board["rows"]}
    assert [row["rank"] for row in rows] == [str(ranks[name]) for name in shown]
    assert f"tournament 1 (tiny, {config})" in printed


def test_matches_lists_each_scheduled_match_once_as_stored(played, monkeypatch):
    config, db, _, _ = played
    monkeypatch.setattr(printing.out, "width", 200)
    listed = CliRunner().invoke(app, ["matches", "--db", f"sqlite:///{db}"])
    assert listed.exit_code == 0, listed.output
    rows = table_rows(listed.stdout)
    plan = schedule(load_tournament(config))
    assert len(rows) == len(plan) == 12
    shown = [(int(row["#"]), row["scenario"], int(row["seed"]), int(row["days"]), row["key"]) for row in rows]
    assert shown == [
        (m.index, m.scenario, m.seed, m.days, m.key) for m in sorted(plan, key=lambda m: m.index)
    ]
    stored = {
        key: (match_id, seconds)
        for match_id, key, seconds in store(db, "select id, key, wall_seconds from match")
    }
    for row in rows:
        assert (int(row["id"]), row["tournament"]) == (stored[row["key"]][0], "1")
        assert row["seconds"] == f"{stored[row['key']][1]:.2f}"


def test_in_a_log_the_progress_is_a_few_plain_lines(played):
    """stderr is not a terminal: no bars, but a line at the start, one for each twentieth of
    the market days played (of 180: a line at most every 9 days; here they come 15 days a
    match at a time), and one when all the matches are done."""
    *_, logged = played
    lines = logged.splitlines()
    assert lines[0] == "tournament 1: 12 matches, 180 market days"
    assert re.fullmatch(
        r"tournament 1: 12 of 12 matches, 180 of 180 market days after \d+:\d\d:\d\d", lines[-1]
    )
    days = [int(re.search(r"(\d+) of 180 market days", line)[1]) for line in lines[1:-1]]
    assert len(days) <= 20 and all(
        later * 20 // 180 > earlier * 20 // 180 for earlier, later in zip(days, days[1:])
    )


def test_a_log_line_comes_at_each_twentieth_of_the_days_or_after_a_quiet_minute(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress, "time", SimpleNamespace(monotonic=lambda: now[0]))
    written = io.StringIO()
    lines = progress.LogLines(Console(file=written, width=300))
    lines.started(7, matches=10, days=200, skipped=2)
    for days in range(1, 201):  # a day at a time, a second each, of the 8 matches left
        now[0] += 1.0
        lines.advanced(2 + days // 25, days)
    told = written.getvalue().splitlines()
    assert told[0] == "tournament 7: 10 matches, 200 market days, 2 of them done before"
    assert [re.search(r"(\d+) of 200 market days", line)[1] for line in told[1:]] == [
        str(d) for d in range(10, 201, 10)
    ]
    assert told[-1] == "tournament 7: 10 of 10 matches, 200 of 200 market days after 0:03:20"
    now[0] += 61
    lines.advanced(10, 200)  # nothing new, even after a minute: nothing told
    assert len(written.getvalue().splitlines()) == len(told)
    lines = progress.LogLines(Console(file=written, width=300))
    lines.started(8, matches=1, days=10_000, skipped=0)
    for days in (1, 2, 3):  # far from a twentieth, a minute apart
        now[0] += 60
        lines.advanced(0, days)
    assert written.getvalue().splitlines()[-3:] == [
        f"tournament 8: 0 of 1 matches, {d} of 10,000 market days after {t}"
        for d, t in ((1, "0:01:00"), (2, "0:02:00"), (3, "0:03:00"))
    ]
