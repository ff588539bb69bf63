"""What a language-model merchant is shown of its past, day after day.

- stateless: the rules and today's report, nothing else;
- window: also the last `k` days of conversation (report and answer);
- notes: also the notes it wrote in its own decisions (its plan and insights), and nothing
  of its earlier reports;
- plans: also two notes it rewrites every day in fields of its decision, its plans and its
  insights (as the pricing agents of Fish, Gonczarowski and Shorrer, 2024, rewrite a PLANS
  and an INSIGHTS file): only the last ones written are shown, and nothing of its earlier
  reports.
"""

from __future__ import annotations

from collections import deque
from typing import Literal

from contestants.calls.types import Message
from contestants.llm.prompts import with_plans

MemoryKind = Literal["stateless", "window", "notes", "plans"]
MAX_NOTES_CHARS = 4000  # older notes are dropped beyond this, so a prompt cannot grow without end


class Memory:
    def __init__(self, kind: MemoryKind, window: int = 5):
        self.kind = kind
        self.turns: deque[tuple[str, str]] = deque(maxlen=window if kind == "window" else 0)
        self.notes: deque[str] = deque()
        self.plans = self.insights = ""  # as last written (plans memory)

    @property
    def templates(self) -> tuple[str, ...]:
        """The templates that word what this memory adds to a prompt (their versions are
        stored with each call)."""
        return ("plans_kept",) if self.kind == "plans" else ()

    def messages(self, system: str, report: str, days: int | None = None) -> tuple[Message, ...]:
        """The conversation for today's call, with the last `days` of the days window memory
        keeps (None: all of them; fewer fit a smaller window). The notes go before today's
        report, not into the system message, so the system message stays the same all match: a
        provider can keep it evaluated (the local model) or cached (prompt caching) from one day
        to the next."""
        if self.kind == "notes" and self.notes:
            report = "Your notes so far:\n" + "\n".join(self.notes) + "\n\n" + report
        elif self.kind == "plans":
            report = with_plans(report, self.plans, self.insights)
        turns = list(self.turns)
        kept = turns if days is None else turns[max(0, len(turns) - days) :]
        history = [
            Message(role=role, content=text)
            for turn in kept
            for role, text in zip(("user", "assistant"), turn)
        ]
        return (Message(role="system", content=system), *history, Message(role="user", content=report))

    def remember(
        self,
        day: int,
        report: str,
        answer: str,
        note: str | None,
        plans: str | None = None,
        insights: str | None = None,
    ) -> None:
        """Keep what today's kind of memory keeps of the day just decided. Plans and insights
        replace the kept ones (None: the answer wrote none, the last ones stand)."""
        self.turns.append((report, answer))
        if self.kind == "notes" and note:
            self.notes.append(f"day {day}: {note.strip()}")
            while sum(len(n) for n in self.notes) > MAX_NOTES_CHARS and len(self.notes) > 1:
                self.notes.popleft()
        if self.kind == "plans":
            self.plans = self.plans if plans is None else plans
            self.insights = self.insights if insights is None else insights
