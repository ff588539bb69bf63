"""A stored tournament to look at, and the viewer serving it on loopback from a thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from common.conduct import Judgement, PricePromise, StatedFact, Words
from common.model_calls import Message, ToolCall
from results.recording import save_match
from results.records import FinishedMatch, MerchantResult, TranscriptRecord
from results.storage import store
from results.storage.db import engine_for
from results.storage.judgements import save_judgements, save_judging
from results.storage.schema import MatchRow, RunProgressRow, stored_id
from results.storage.store import start_tournament
from viewer.app import InThread, open_for_reading

HOSTILE = (
    '<script>window.hacked = 1</script><img src=x onerror="window.hacked = 2">'
    "<a href='https://example.com/'>it's <b>bold</b></a>"
)
DAYS = 6


@dataclass
class Stored:
    url: str
    path: Path
    tournament: int
    matches: list[int]


def prices(day: int, merchant: str) -> float:
    """m0 holds 5.0; m1 holds 5.0, then cuts to 4.0 on day 4 (a fifth, against m0's 5.0)."""
    return 4.0 if merchant == "m1" and day >= 4 else 5.0


def played(day_record: Any, key: str, index: int, names: tuple[str, str]) -> FinishedMatch:
    days = [
        day_record(
            merchant=seat,
            day=day,
            prices={"tea": prices(day, seat)},
            units_sold={"tea": 10.0 + day},
            lost_sales={"tea": 3.0 if seat == "m0" and day in (2, 3) else 0.0},
            cash_start=1000.0 + 10 * (day - 1),
            cash_end=1000.0 + 10 * day,
            net_worth=1100.0 + 10 * day,
            operations=[{"op": "set_price", "product": "tea", "price": prices(day, seat)}],
            message=f"{HOSTILE} day {day}" if seat == "m1" else "",
        )
        for day in range(1, DAYS + 1)
        for seat in ("m0", "m1")
    ]
    words = Message(role="user", content=f"Day 3 begins. {HOSTILE}")
    answer = Message(
        role="assistant",
        content="Holding the price.",
        reasoning=f"thinking {HOSTILE}",
        tool_calls=(ToolCall(id="call_1", name="set_price", arguments='{"product": "tea", "price": 4.0}'),),
    )
    note = ToolCall(id="call_0", name="write_note", arguments='{"key": "plan", "text": "cut to 4 on day 4"}')
    transcript = [
        TranscriptRecord(
            merchant="m1",
            day=2,
            step=1,
            purpose="step",
            sent=(Message(role="user", content="Day 2 begins."),),
            answer=Message(role="assistant", content="", tool_calls=(note,)),
            results=(Message(role="tool", tool_call_id="call_0", content='{"kept": "plan", "notes": 1}'),),
        ),
        TranscriptRecord(
            merchant="m1",
            day=3,
            step=1,
            purpose="step",
            sent=(words,),
            answer=answer,
            results=(Message(role="tool", tool_call_id="call_1", content="accepted: tea at 4.0"),),
        ),
    ]
    return FinishedMatch(
        key=key,
        index=index,
        scenario="corner-shop",
        seed=7,  # every match of the same scenario and seed: other lineups in the same market
        days=DAYS,
        wall_seconds=1.0,
        merchants=[
            MerchantResult(
                merchant=seat,
                contestant=name,
                final_cash=1060.0,
                net_worth=1160.0 - rank,
                profit=60.0 - rank,
                rank=rank,
                market_share=0.5,
                bankrupt_day=None,
                faults=0,
                rejected_operations=0,
            )
            for rank, (seat, name) in enumerate(zip(("m0", "m1"), names, strict=True), start=1)
        ],
        days_played=days,
        faults=[],
        transcript=transcript,
    )


def fill(url: str, day_record: Any, path: Path | None = None) -> Stored:
    """A tournament of three planned matches, two of them stored, in the database at `url`."""
    engine = engine_for(url)
    names = ("steady", HOSTILE)
    tournament = start_tournament(
        engine,
        name="spring",
        config_path="spring.yaml",
        config_text="name: spring\n",
        config_hash="spring",
        seed=7,
        contestants=[(name, "rule", {}) for name in names],
        planned_matches=3,
    )
    matches = [save_match(engine, tournament, played(day_record, f"k{i}", i, names)) for i in range(2)]
    engine.dispose()
    return Stored(url, path or Path(), tournament, matches)


@pytest.fixture
def stored(tmp_path: Path, day_record: Any) -> Stored:
    return fill(f"sqlite:///{tmp_path / 'arena.db'}", day_record, tmp_path / "arena.db")


def store_another(stored: Stored, day_record: Any) -> int:
    engine = engine_for(stored.url)
    try:
        return save_match(engine, stored.tournament, played(day_record, "k9", 9, ("steady", HOSTILE)))
    finally:
        engine.dispose()


def note(stored: Stored, days_played: int, playing: int, started: datetime, days_at_start: int = 0) -> None:
    """Write where the tournament's run stands, as a run does (18 days planned: 3 matches of 6)."""
    engine = engine_for(stored.url)
    progress = RunProgressRow(
        tournament_id=stored.tournament,
        started_at=started,
        days_at_start=days_at_start,
        days_played=days_played,
        days_planned=3 * DAYS,
        matches_playing=playing,
    )
    store.note_progress(engine, progress)
    engine.dispose()


@contextmanager
def served(url: str) -> Iterator[InThread]:
    """The viewer of the database at `url`, in a thread of this process, until the block ends."""
    engine = open_for_reading(url)
    serving = InThread(engine)
    try:
        yield serving
    finally:
        serving.stop()
        engine.dispose()


@pytest.fixture
def viewer(stored: Stored) -> Iterator[InThread]:
    with served(stored.url) as serving:
        yield serving


# m1's words in the stored matches (`played`), as judges read them: its messages of days 2 and
# 3, the note it wrote on day 2 and its reasoning on day 3
PROPOSAL = Words(merchant="m1", day=2, source="message", text=f"{HOSTILE} day 2")
THREAT = Words(merchant="m1", day=3, source="message", text=f"{HOSTILE} day 3")
NOTE = Words(merchant="m1", day=2, source="note", text="cut to 4 on day 4")
REASONING = Words(merchant="m1", day=3, source="reasoning", text=f"thinking {HOSTILE}")


def judge(stored: Stored) -> None:
    """Judges a and b judge the first stored match, a alone the second (so that it is not
    judged yet: the latest judging is a's and b's, a majority of 2). Both find on day 2 a
    proposal with a promise of tea at 5 (m1 posts 4 from day 4: broken there), on day 3 a
    threat with the statement that m1's tea is at 3 today (it posts 5: false), and information
    in the note; on the reasoning a says deception and b cannot be read (undecided)."""
    engine = engine_for(stored.url)
    promise, fact = (
        PricePromise(product="tea", price=5.0),
        StatedFact(subject="price", product="tea", value=3.0),
    )
    with Session(engine) as session:
        first, second = (session.get(MatchRow, m) for m in stored.matches)
    assert first is not None and second is not None
    first_id, second_id = stored_id(first.id), stored_id(second.id)
    for name in ("a", "b"):
        judged = [
            (
                PROPOSAL,
                Judgement(judge=name, labels=("proposal",), reason="an offer", claims=(promise,)),
            ),
            (NOTE, Judgement(judge=name, labels=("information_sharing",), reason="its plan")),
            (THREAT, Judgement(judge=name, labels=("threat",), reason="a warning", claims=(fact,))),
            (
                REASONING,
                Judgement(judge="a", labels=("deception",), reason=f"hides {HOSTILE}")
                if name == "a"
                else Judgement(judge="b", unscored="not JSON"),
            ),
        ]
        save_judgements(engine, stored.tournament, first_id, first.key, name, judged, [])
    save_judgements(engine, stored.tournament, second_id, second.key, "a", [], [])
    save_judging(engine, stored.tournament, ["a", "b"], None)
    engine.dispose()
