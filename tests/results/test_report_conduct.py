"""The report of a judged tournament: a conduct section of verdicts (a match a row, "not
judged yet" for a match not every judge of the latest judging has judged) and, in each judged
match, its verdict, labelled words, counts and claims; nothing of conduct in a tournament never
judged. The judgements are tests/viewer/conftest.py's `judge`, its outcomes worked out there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import escape

from results.presentation.report_page import usage_table
from results.records import ModelCallRecord, PlayedScenarios
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


def test_the_judges_calls_are_counted_apart_from_the_merchants_in_the_model_usage():
    """Two merchants' calls (one model each) and a judge's two: the merchants' total counts 2
    calls and $0.0030, the judges' 2 and $0.0004 (their costs, added by hand)."""

    def made(contestant: str, purpose: str, cost: float) -> ModelCallRecord:
        return ModelCallRecord(
            day=1,
            purpose=purpose,  # type: ignore[arg-type]  # (a CallPurpose)
            model="openai/gpt-4.1-mini",
            input_tokens=100,
            output_tokens=10,
            cached_tokens=0,
            latency=0.5,
            attempts=1,
            cost=cost,
            cached=False,
            request_hash="h",
            prompt_version="v",
            temperature=0.0,
            seed=0,
            merchant=contestant,
            contestant=contestant,
        )

    table = usage_table(
        [made("ann", "decide", 0.001), made("bob", "decide", 0.002), made("j", "judge", 0.0002)]
        + [made("j", "judge", 0.0002)]
    )
    assert table is not None
    totals = [section[-1] for section in table.sections if section[-1][0].startswith("all")]
    assert [(row[0], row[2], row[-1]) for row in totals] == [
        ("all merchants", "2", "0.0030"),
        ("all judges", "2", "0.0004"),
    ]
