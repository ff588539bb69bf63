"""A transcript's step as people read it (the CLI's `show --day` and the viewer's day page)."""

from __future__ import annotations

from results.records import TranscriptRecord


def step_lines(step: TranscriptRecord) -> list[tuple[str, str]]:
    """One step as (who, what) lines, as people read it: what was sent that was new, the
    reasoning shown, the model's words, its tool calls and their results; or the server's
    refusal of a request too long."""
    lines: list[tuple[str, str]] = [(m.role, m.content) for m in step.sent]
    if step.refused is not None:
        return [*lines, ("refused", step.refused)]
    assert step.answer is not None
    if step.answer.reasoning:
        lines.append(("reasoning", step.answer.reasoning))
    if step.answer.content:
        lines.append(("model", step.answer.content))
    lines += [("tool call", f"{c.name} {c.arguments}") for c in step.answer.tool_calls]
    lines += [("result", m.content) for m in step.results]
    return lines
