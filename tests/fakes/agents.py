"""A scripted agent for the stand-ins: an answer hook that plays the same steps every day,
whichever of the three APIs' forms the conversation comes in, and writes a summary when it is
asked for one (a compaction)."""

from __future__ import annotations

import json
import re
from typing import Any

from fakes.server import Call, Uses


def today(body: dict[str, Any]) -> list[str]:
    """The results of the tools called since the day's report, in any of the three APIs' forms."""
    items = body.get("messages") or body.get("input") or []
    results: list[str] = []
    for item in items:
        content = item.get("content")
        if item.get("role") == "user" and isinstance(content, str) and content.startswith("Day "):
            results = []  # a new day
        elif item.get("role") == "tool":
            results.append(content)
        elif item.get("type") == "function_call_output":
            results.append(item["output"])
        elif item.get("role") == "user" and isinstance(content, list):  # Anthropic's blocks
            if any(b.get("type") == "text" and b["text"].startswith("Day ") for b in content):
                results = []
            results += [b["content"] for b in content if b.get("type") == "tool_result"]
    return results


SUMMARY = "I hold the price at 11 and order 30 a day; rivals stay near 10."
RECALLED = 42.5  # what the scripted agent answers a recall question with


def offered(body: dict[str, Any]) -> set[str]:
    """The names of the tools a request offers, in any of the three APIs' forms."""
    return {(tool.get("function") or tool).get("name") for tool in body.get("tools") or []}


def day_of(body: dict[str, Any]) -> int:
    """The day of the last morning report in the request (0: none)."""
    days = re.findall(r"Day (\d+) of \d+\.", json.dumps(body))
    return int(days[-1]) if days else 0


def agent(steps: list[list[tuple[str, dict[str, Any]]]]):
    """A stand-in's answer hook that plays `steps` each day: the k-th once the calls of the
    steps before have their results; text once the script is done; SUMMARY where a schema
    asks for a summary."""

    def answer(call: Call, schema: Any) -> Uses | str | dict[str, Any]:
        if schema is not None and "summary" in schema.get("properties", {}):
            return {"summary": SUMMARY}
        if offered(call.body) == {"answer"}:
            return Uses((("answer", {"value": RECALLED}),))
        done = len(today(call.body))
        for step in steps:
            if done == 0:
                return Uses(tuple(step), text="Next.")
            done -= len(step)
        return "I have nothing more to do."

    return answer
