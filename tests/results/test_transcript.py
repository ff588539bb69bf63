"""The stored transcript read back: every step as it was kept, and an agent's notes replayed
from the note tools it called, as far as each call was carried out."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from common.model_calls import Message, ToolCall
from results.records import TranscriptRecord
from results.storage.transcript_codec import day_rows, notes_kept, steps_of

KEYS = st.sampled_from(["plan", "stock", "error", "rival"])
CALLS = st.lists(
    st.tuples(
        st.sampled_from(["write_note", "delete_note", "read_books"]), KEYS, st.text(max_size=8), st.booleans()
    ),
    max_size=12,
)


def step(day: int, n: int, name: str, key: str, text: str, done: bool) -> TranscriptRecord:
    """One call of `name`; its result carries it out (`done`) or refuses it with an error."""
    call = ToolCall(id=f"call_{day}_{n}", name=name, arguments=json.dumps({"key": key, "text": text}))
    result = {"kept": key} if done else {"error": f"no note {key!r}"}
    return TranscriptRecord(
        merchant="agent",
        day=day,
        step=n + 1,
        purpose="step",
        sent=(Message(role="user", content=f"day {day}"),),
        answer=Message(role="assistant", content="", tool_calls=(call,)),
        results=(Message(role="tool", tool_call_id=call.id, content=json.dumps(result)),),
    )


@given(first=CALLS, second=CALLS)
def test_notes_are_the_note_calls_carried_out_in_order(first, second):
    steps = [step(1, n, *c) for n, c in enumerate(first)] + [step(2, n, *c) for n, c in enumerate(second)]
    rows = list(day_rows(steps))
    assert [s for row in rows for s in steps_of(row["merchant"], row["day"], row["words"])] == steps
    expected: dict[str, str] = {}  # the tools' own rules, done by hand
    for name, key, text, done in [*first, *second]:
        if done and name == "write_note":
            expected[key] = text
        elif done and name == "delete_note":
            expected.pop(key, None)
    assert notes_kept(row["words"] for row in rows) == expected
