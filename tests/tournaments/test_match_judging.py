"""Judging stored matches in this process (tournaments.conduct: MatchJudging, judge_tournament),
without Ray: every pair judged once, its progress told in order, each match's conduct kept once
all its judges are done; the first failure stops the other pairs, is what the judging raises,
and leaves the calls it paid for recorded; no pair is given after it.

The matches are tests/viewer/conftest.py's `fill`; the judges, the OpenAI stand-in answering
"none" to everything."""

from __future__ import annotations

from typing import Any

import pytest
from api_keys import OPENAI_KEY
from sqlmodel import Session, select

from contestants.base import JudgeFailed, RunOptions
from results.scoring.conduct import words_of
from results.settings import ConductSettings
from results.storage import store
from results.storage.db import engine_for
from results.storage.judgements import judged, match_conducts
from results.storage.schema import ModelCallRow, stored_id
from tests.viewer.conftest import fill
from tournaments import conduct
from tournaments.conduct import JudgingProgress, MatchJudging, judge_tournament

NONE = {"labels": ["none"], "reason": "nothing of conduct", "claims": []}


def settings(fake: Any, *names: str) -> ConductSettings:
    entries = [
        {
            "model": "openai/gpt-4.1-mini",
            "name": name,
            "base_url": fake.base_url,
            "api_key_env": "ARENA_OPENAI_KEY",
            "max_retries": 0,
        }
        for name in names
    ]
    return ConductSettings(judges=entries)


@pytest.fixture
def stored(tmp_path, day_record, monkeypatch):
    monkeypatch.setenv("ARENA_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.chdir(tmp_path)  # the response cache's folder
    return fill(f"sqlite:///{tmp_path / 'arena.db'}", day_record, tmp_path / "arena.db")


def items(engine: Any, match_id: int) -> int:
    return len(words_of(store.match_detail(engine, match_id).days, store.transcript(engine, match_id)))


def test_every_pair_is_judged_once_told_in_order_and_each_match_s_conduct_kept(stored):
    from fakes.openai_api import FakeOpenAI

    engine, told = engine_for(stored.url), []
    with FakeOpenAI(api_key=OPENAI_KEY, answer=lambda call, schema: NONE) as fake:
        progress = JudgingProgress(lambda *n: told.append(n))
        fresh = RunOptions(no_cache=True)  # the matches say the same: each item asked of each judge
        done = judge_tournament(engine, stored.tournament, settings(fake, "a", "b"), fresh, progress)
        asked = len(fake.calls)
    words = sum(items(engine, match_id) for match_id in stored.matches)
    pairs = 2 * len(stored.matches)
    assert (done.judged, done.skipped, done.items) == (pairs, 0, 2 * words)  # every item once per judge
    assert done.calls.calls == asked == 2 * words and done.calls.cached == 0
    assert told == [(n, pairs) for n in range(1, pairs + 1)]
    assert set(match_conducts(engine, [stored.tournament])) == set(stored.matches)
    again = judge_tournament(engine, stored.tournament, settings(fake, "a", "b"))
    assert (again.judged, again.skipped) == (0, pairs)
    engine.dispose()


def test_the_first_failure_stops_the_other_pairs_and_keeps_what_it_paid(stored, monkeypatch):
    """One pair at a time: the judge's second call is refused (a 400), so the first pair stops
    there and no other starts; its first call is recorded, its match not judged."""
    from fakes.openai_api import FakeOpenAI, Refusal

    monkeypatch.setattr(conduct, "JUDGING_THREADS", 1)
    engine = engine_for(stored.url)

    def then_refuse(call: Any, schema: Any) -> dict[str, Any]:
        if len(fake.calls) > 1:
            raise Refusal(400, "The stand-in refuses every call after the first.")
        return NONE

    with FakeOpenAI(api_key=OPENAI_KEY, answer=then_refuse) as fake:
        quiet = JudgingProgress(lambda *n: None)
        judging = MatchJudging(engine, stored.tournament, settings(fake, "a"), RunOptions(), quiet)
        given = [(stored_id(match.id), match.key) for match in store.list_matches(engine, stored.tournament)]
        judging.judge(given)
        with pytest.raises(JudgeFailed, match="a"):
            judging.finish()
        judging.judge(given)  # none given now
        assert len(fake.calls) == 2 and not judging.pending
    with Session(engine) as session:
        paid = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
    assert [call.match_id for call in paid] == [stored.matches[0]]
    assert judged(engine, stored.tournament) == set()
    engine.dispose()
