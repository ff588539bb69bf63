"""The report of a judged tournament: a conduct section of verdicts (a match a row, "not
judged yet" for a match not every judge of the latest judging has judged) and, in each judged
match, its verdict, labelled words, counts and claims; nothing of conduct in a tournament never
judged. The judgements are tests/viewer/conftest.py's `judge`, its outcomes worked out there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import escape

from results.records import PlayedScenarios
from results.report import build_report
from results.storage.db import engine_for
from tests.viewer.conftest import HOSTILE, fill, judge
from tests.viewer.test_viewer_conduct import rows, section


def test_a_judged_tournaments_report_has_its_verdicts_and_each_matchs_conduct(
    tmp_path: Path, day_record: Any
):
    path = tmp_path / "arena.db"
    stored = fill(f"sqlite:///{path}", day_record, path)
    judge(stored)
    unjudged = fill(stored.url, day_record, path)
    engine = engine_for(stored.url)
    page = build_report(engine, stored.tournament, PlayedScenarios({}), [])
    verdicts = rows(section(page, "conduct"))
    assert verdicts[0] == ["match", "scenario", "seed", "verdict", "days of evidence", "detail"]
    # the first match: no prices above Nash (no equilibrium), the proposal of day 2 as evidence
    assert verdicts[1][:5] == ["#0", "corner-shop", "7", "none", "2"]
    assert verdicts[2] == ["#1", "corner-shop", "7", "not judged yet", "", ""]  # judge b has not judged it
    first = page[
        page.index(f'id="match-{stored.matches[0]}"') : page.index(f'id="match-{stored.matches[1]}"')
    ]
    assert "verdict: <b>none</b>" in first and "days of evidence: 2</p>" in first
    shown = rows(first[first.index("<h4>Conduct</h4>") :])
    assert ["3", "m1", "reasoning", "undecided", f"thinking {HOSTILE}", f"a: hides {HOSTILE}"] in shown
    assert ["2", "m1", "promise: tea at 5", "broken", "4", "4"] in shown
    assert HOSTILE not in page and f"thinking {escape(HOSTILE)}" in page
    second = page[page.index(f'id="match-{stored.matches[1]}"') :]
    assert "Conduct: not judged yet" in second and "verdict:" not in second

    never = build_report(engine, unjudged.tournament, PlayedScenarios({}), [])
    assert 'id="conduct"' not in never and "judged" not in never and "verdict:" not in never
    engine.dispose()
