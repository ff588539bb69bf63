"""The stored form of transcripts: a merchant's steps of one day (common.model_calls.TranscriptStep)
as one compressed JSON list, the `words` of a TranscriptRow. A year of an agent's days
repeats itself (the same tools, the same keys of its books), which zlib takes out."""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from common.model_calls import FORGET_TOOL, NOTE_TOOL
from results.records import TranscriptRecord

LEVEL = 6  # zlib's default: level 9 made 30 days of benchmarks/agent_year.py 1.2% smaller, 7% slower


def day_rows(transcript: Iterable[TranscriptRecord]) -> Iterator[dict[str, Any]]:
    """The transcript's rows, a merchant-day each (the steps as they were taken)."""
    by_day = itertools.groupby(transcript, key=lambda step: (step.merchant, step.day))
    for (merchant, day), steps in by_day:
        dumped = [step.model_dump(mode="json", exclude={"merchant", "day"}) for step in steps]
        words = zlib.compress(json.dumps(dumped, separators=(",", ":"), ensure_ascii=False).encode(), LEVEL)
        yield {"merchant": merchant, "day": day, "steps": len(dumped), "words": words}


def steps_of(merchant: str, day: int, words: bytes) -> list[TranscriptRecord]:
    """A stored row's steps."""
    return [
        TranscriptRecord(merchant=merchant, day=day, **step)
        for step in json.loads(zlib.decompress(words).decode())
    ]


def notes_kept(days_words: Iterable[bytes]) -> dict[str, str]:
    """The notes an agent keeps at the end of the days whose stored `words` are given, in day
    order: its write_note and delete_note calls (contestants.llm.agent) replayed where the tool
    carried them out, as its result says (a result with an error changed nothing)."""
    notes: dict[str, str] = {}
    for words in days_words:
        for step in json.loads(zlib.decompress(words).decode()):
            results = {r.get("tool_call_id"): r.get("content", "") for r in step.get("results", [])}
            for call in (step["answer"] or {}).get("tool_calls", []):  # none in a refused step
                if call["name"] not in (NOTE_TOOL, FORGET_TOOL) or not _carried_out(results.get(call["id"])):
                    continue
                arguments = json.loads(call["arguments"])  # carried out: an object with a key
                key = str(arguments["key"]).strip()
                if call["name"] == NOTE_TOOL:
                    notes[key] = str(arguments.get("text", ""))
                else:
                    notes.pop(key, None)
    return notes


def _carried_out(result: str | None) -> bool:
    """Whether a tool's result says it did what it was asked (it has no error)."""
    try:
        answer = json.loads(result or "")
    except ValueError:
        return False
    return isinstance(answer, dict) and "error" not in answer
