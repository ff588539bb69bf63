"""What a language-model merchant is shown of its past, day after day.

- stateless: the rules and today's report, nothing else;
- window: also the last `k` days of conversation (report and answer);
- notes: also the notes it wrote in its own decisions (its plan and insights), and nothing
  of its earlier reports.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

from contestants.llm.types import Message

MemoryKind = Literal["stateless", "window", "notes"]
MAX_NOTES_CHARS = 4000  # older notes are dropped beyond this, so a prompt cannot grow without end


class Memory:
    def __init__(self, kind: MemoryKind, window: int = 5):
        self.kind = kind
        self.turns: deque[tuple[str, str]] = deque(maxlen=window if kind == "window" else 0)
        self.notes: deque[str] = deque()

    def messages(self, system: str, report: str) -> tuple[Message, ...]:
        """The conversation for today's call. The notes go before today's report, not into the
        system message, so the system message stays the same all match: a provider can keep
        it evaluated (the local model) or cached (prompt caching) from one day to the next."""
        if self.kind == "notes" and self.notes:
            report = "Your notes so far:\n" + "\n".join(self.notes) + "\n\n" + report
        history = [Message(role=role, content=text) for turn in self.turns for role, text in zip(("user", "assistant"), turn)]
        return (Message(role="system", content=system), *history, Message(role="user", content=report))

    def remember(self, day: int, report: str, answer: str, note: str | None) -> None:
        """Keep what today's kind of memory keeps of the day just decided."""
        self.turns.append((report, answer))
        if self.kind == "notes" and note:
            self.notes.append(f"day {day}: {note.strip()}")
            while sum(len(n) for n in self.notes) > MAX_NOTES_CHARS and len(self.notes) > 1:
                self.notes.popleft()
