"""An adaptive tournament played on real Ray: it ends by its own rule and a confirmation
round and says why, the table says which neighbours are tied, and a run that lost its last
matches is resumed into the uninterrupted run's matches and table."""

from __future__ import annotations

import sqlite3
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from results import leaderboard
from results.scoring.rating_fit import fit
from results.storage import store
from results.storage.db import engine_for
from tournaments.adaptive import AdaptiveSchedule
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")

FIELD = """
name: adaptive_field
seed: 5
format: adaptive
scenarios: [price_war]
repetitions: 10
days: 10
recall_every: 0
max_concurrent_matches: 4
contestants:
  - {name: low, kind: random, params: {min_markup: 0.0, max_markup: 0.3}}
  - {name: mid, kind: random, params: {min_markup: 0.2, max_markup: 0.6}}
  - {name: high, kind: random, params: {min_markup: 0.5, max_markup: 1.0}}
  - {name: steady, kind: cost_plus}
"""


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The field played to its end: its file, database and run summary."""
    folder = tmp_path_factory.mktemp("adaptive")
    path = folder / "field.yaml"
    path.write_text(textwrap.dedent(FIELD))
    db = folder / "whole.db"
    summary = run_tournament(load_tournament(path), engine_for(f"sqlite:///{db}"))
    return path, db, summary


def stored(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as connection:
        return sorted(connection.execute('select "index", key from match').fetchall())


def test_it_plays_the_rounds_its_schedule_chooses_and_says_why_it_ended(whole, tmp_path):
    path, db, summary = whole
    engine = engine_for(f"sqlite:///{db}", create=False)
    ended = (
        "every two contestants next to each other in the table are ordered at 95% confidence; the "
        "intervals include a confirmation round of 18 fresh matches of neighbours played after that"
    )
    assert summary.ended == ended and summary.stopped is None
    assert store.run_end(engine, summary.tournament_id) == ended
    # the rounds chosen again from the stored rankings are the matches stored, index for index
    again, rankings = (
        AdaptiveSchedule(load_tournament(path)),
        leaderboard.rankings(engine, summary.tournament_id),
    )
    chosen = []
    while (round_ := again.next_round([m.ranks for m in rankings if m.order[1] < len(chosen)])).matches:
        chosen += round_.matches
    assert [(m.index, m.key) for m in chosen] == stored(db)
    assert len(chosen) < len(load_tournament(path).spec.contestants) ** 2 * 10  # far below the round robin
    # its last 18: the confirmation round, each two neighbours of the table at the stop 6 times;
    # the stored table is fitted on them too, every seat counted
    at_stop = fit([m.ranks for m in rankings if m.order[1] < len(chosen) - 18]).ratings
    table = sorted(at_stop, key=lambda name: -at_stop[name].rating)
    neighbours = {frozenset(pair): 6 for pair in zip(table, table[1:])}
    assert Counter(frozenset(m.seats) for m in chosen[-18:]) == neighbours
    assert sum(row.matches for row in summary.table) == 2 * len(chosen)
    shown = CliRunner().invoke(app, ["leaderboard", "--db", f"sqlite:///{db}", "--tournament", "1"])
    assert shown.exit_code == 0, shown.output
    assert "vs next" in shown.stdout and f"Its run ended early: {ended}." in shown.stdout
    page = tmp_path / "report.html"
    written = CliRunner().invoke(app, ["report", "1", "--db", f"sqlite:///{db}", "--out", str(page)])
    assert written.exit_code == 0, written.output
    assert f"<dt>ended early</dt><dd>{ended}</dd>" in page.read_text()
    # ordered for the schedule at 1 - 0.05 / 3 of the resamples: so at the table's 0.95 too
    assert all(row.matches_to_separate == 0 for row in summary.table[:-1])


def test_a_run_that_lost_its_last_matches_resumes_into_the_whole_runs_table(whole, tmp_path):
    """The run as a kill would leave it, its last five matches not stored: --resume chooses
    the rounds again from what is stored, plays exactly the five, and ends as the whole run."""
    path, db, summary = whole
    cut = tmp_path / "cut.db"
    with sqlite3.connect(db) as source, sqlite3.connect(cut) as copy:
        source.backup(copy)
    last = stored(db)[-5:]
    with sqlite3.connect(cut) as connection:
        connection.execute("pragma foreign_keys = on")
        connection.executemany("delete from match where key = ?", [(key,) for _, key in last])
        connection.execute("update tournament set status = 'stopped'")
        connection.execute("delete from run_end")
    resumed = run_tournament(load_tournament(path), engine_for(f"sqlite:///{cut}"), resume=True)
    assert resumed.resumed and resumed.skipped == len(stored(db)) - 5 and resumed.played == 5
    assert stored(cut) == stored(db) and resumed.ended == summary.ended
    assert [row.model_dump() for row in resumed.table] == [row.model_dump() for row in summary.table]
