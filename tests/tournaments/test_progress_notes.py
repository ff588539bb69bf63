"""Where a run stands, written for the record's readers by a thread of the run: the latest
figures written, the last ones at the end, and a database that fails told once and never
raised into the run."""

from __future__ import annotations

import logging

from results.storage import store
from results.storage.db import engine_for
from tournaments.run import _ProgressNotes


def test_the_last_figures_are_written_and_a_failing_database_is_told_once(tmp_path, caplog, monkeypatch):
    engine = engine_for(f"sqlite:///{tmp_path / 'arena.db'}")
    tournament = store.start_tournament(engine, "t", "t.yaml", "name: t\n", "h", 1, [], 3)
    notes = _ProgressNotes(engine, tournament, days_at_start=4, days_planned=30)
    for day in range(5, 20):
        notes(day, 2)
    notes(21, 0)
    notes.close()
    written = store.run_progress(engine, tournament)
    assert written is not None
    assert (written.days_at_start, written.days_played, written.days_planned, written.matches_playing) == (
        4,
        21,
        30,
        0,
    )

    def failing(*args: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store, "note_progress", failing)
    notes = _ProgressNotes(engine, tournament, days_at_start=0, days_planned=30)
    with caplog.at_level(logging.WARNING):
        notes(1, 1)
        notes.close()
        notes = _ProgressNotes(engine, tournament, days_at_start=0, days_planned=30)
        notes(2, 1)
        notes(3, 1)
        notes.close()
    assert (
        sum("could not be recorded (disk full)" in r.getMessage() for r in caplog.records) == 2
    )  # once a run
    engine.dispose()
