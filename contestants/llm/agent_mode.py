"""Agent mode's driver: the merchant's days worked with tools (contestants.llm.agent), each
step one call, and the conversation compacted, a summary in place of its oldest part, while the
next step would not fit the model's window."""

from __future__ import annotations

from typing import Any, NamedTuple

from common.model_calls import CallPurpose
from contestants.base import OffPathQuestion, RecallQuestion
from contestants.calls.types import Completion, CompletionRequest, Message, Tool, parse_object
from contestants.llm.agent import ANSWER, AgentTools, Conversation, as_text, summary_turn, work
from contestants.llm.caller import Caller
from contestants.llm.params import LLMParams
from contestants.llm.prompts import (
    agent_prompt,
    compaction_request,
    off_path_question,
    recall_question,
    versions,
)
from contestants.llm.providers import written
from market.scenario import Scenario
from market.types import Observation

MOST_SUMMARY_CHARS = 2_000  # the most a compaction's summary may hold
SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "maxLength": MOST_SUMMARY_CHARS}},
    "required": ["summary"],
    "additionalProperties": False,
}


class DayWorked(NamedTuple):
    """How an agent's day went (contestants.llm.agent.Workday), kept for its reported metrics."""

    steps: int
    tool_errors: int
    loops: int
    ended: bool  # by end_day, not by its steps running out


class AgentMode:
    """A merchant's days in agent mode, in one match: its tools and its conversation (`agent`,
    made at the first decision), how each day went, and the questions apart from its work
    (recall, off path), asked at the end of its conversation."""

    def __init__(self, params: LLMParams, caller: Caller, merchant: str, scenario: Scenario):
        self.params, self.caller, self.merchant, self.scenario = params, caller, merchant, scenario
        self.agent: tuple[AgentTools, Conversation] | None = None
        self.days_worked: list[DayWorked] = []

    def decide(self, observation: Observation) -> dict[str, Any]:
        """A day's steps, then its operations as the decision."""
        if self.agent is None:
            self.agent = self._start(observation)
        tools, conversation = self.agent
        templates = versions(*self.params.preface, "agent")

        def step(conversation: Conversation) -> Completion:
            day = observation.day
            return self.caller.call(
                "step", day, lambda: (self._next_step(conversation, tools, day), templates)
            )[0]

        day = work(tools, conversation, observation, self.params.max_steps, step, self.caller.heard_results)
        self.days_worked.append(DayWorked(day.steps, day.tool_errors, day.loops, day.ended))
        return day.decision()

    def recall(self, question: RecallQuestion, today: int) -> float | None:
        return self._answer("recall", recall_question(question, tool=ANSWER.name), "recall_tool", today)

    def off_path(self, question: OffPathQuestion, today: int) -> float | None:
        text = off_path_question(question, today, tool=ANSWER.name)
        return self._answer("off_path", text, "off_path_tool", today)

    def reported_metrics(self) -> dict[str, float]:
        """How its days went (docs/metrics.md): steps and tool errors a day, loops, days its
        steps ran out, compactions."""
        worked = self.days_worked
        if not worked:
            return {}
        return {
            "steps_per_day": sum(d.steps for d in worked) / len(worked),
            "tool_errors_per_day": sum(d.tool_errors for d in worked) / len(worked),
            "loops": float(sum(d.loops for d in worked)),
            "step_limit_days": float(sum(not d.ended for d in worked)),
            "compactions": float(sum(c.purpose == "compact" for c in self.caller.calls)),
        }

    def _start(self, observation: Observation) -> tuple[AgentTools, Conversation]:
        """Its tools and its conversation, begun with the system prompt at the first decision."""
        tools = AgentTools(self.scenario, talk=observation.messages is not None, plan=self.params.plan)
        system = agent_prompt(
            self.scenario,
            self.merchant,
            observation.days,
            self.params.max_steps,
            [t.name for t in tools.tools if t.name in ("promote", "send_message")],
            unit_costs=self.scenario.own_values("unit_cost", observation.seat),
            preface=self.params.preface,
        )
        return tools, Conversation(system)

    def _answer(self, purpose: CallPurpose, question: str, template: str, today: int) -> float | None:
        """Its answer to a question apart from its work (recall, off path), asked at the end of
        its conversation so far with one tool to answer with (the question and the answer stay
        out of the conversation); None before its first day's work."""
        if self.agent is None:
            return None
        tools, conversation = self.agent
        asked = Message(role="user", content=question)
        templates = versions("agent", template)
        completion, _ = self.caller.call(
            purpose,
            today,
            lambda: (self._next_step(conversation, tools, today, asked=asked, offered=(ANSWER,)), templates),
            heard=False,
        )
        for call in completion.tool_calls:
            value = parse_object(call.arguments) if call.name == ANSWER.name else None
            number = (value or {}).get("value")
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return number
        return None

    def _next_step(
        self,
        conversation: Conversation,
        tools: AgentTools,
        day: int,
        asked: Message | None = None,
        offered: tuple[Tool, ...] | None = None,
    ) -> CompletionRequest:
        """The next step's request: the conversation (and a question `asked` after it, with the
        tools `offered` in place of the merchant's), compacted first while it would not fit the
        window (contestants.llm.agent.Conversation.compact). The run stops if it does not fit
        at its shortest: nothing left to compact, and the summary no longer than one written
        anew would be."""

        def request() -> CompletionRequest:
            messages = (*conversation.messages(), *((asked,) if asked is not None else ()))
            return self.caller.request(messages, None, "step", offered or tools.tools)

        while not self.caller.fits(request(), window := self.caller.window()):
            assert window is not None
            if not self._compact(conversation, tools, window, day):
                raise self.caller.cannot_fit(request(), window, "the rules, the tools, its summary and notes")
        return request()

    def _compact(self, conversation: Conversation, tools: AgentTools, window: int, day: int) -> bool:
        """Ask the model to summarise the oldest blocks of the conversation and continue with
        its summary (at most MOST_SUMMARY_CHARS), its notes (their keys alone if they would
        take more than a quarter of the window) and the most recent blocks that take at most
        half of what the rules, the tools, the summary with a quarter of the window for its
        notes (or the summary turn at its longest, if more) and the answer leave (none, if the
        last alone takes more). Where every block is within that, the summary is
        written anew, with no block dropped, if the one there is longer than a new one may be
        (it was written to a looser count, before a refusal: its notes shown whole, say);
        False, and nothing asked, if it is not."""
        blocks, caller = conversation.blocks, self.caller
        provider = caller.provider
        notes_chars = provider.text_chars(window // 4)
        longest = MOST_SUMMARY_CHARS + written(summary_turn("", tools.notes, notes_chars))
        summary_room = max(longest, MOST_SUMMARY_CHARS + notes_chars)
        fixed = provider.most_prompt_tokens(caller.request((conversation.system,), None, "step", tools.tools))
        fixed += provider.most_turn_tokens(summary_room) + self.params.max_tokens
        budget, kept, used = (window - fixed) // 2, 0, 0
        for _, turns in reversed(blocks):
            used += sum(provider.most_turn_tokens(written(m)) for m in turns)
            if used > budget:
                break
            kept += 1
        earlier = [] if conversation.summary is None else [conversation.summary]
        if kept == len(blocks) and all(written(summary) <= longest for summary in earlier):
            return False
        told = as_text([*earlier, *(m for _, turns in blocks[: len(blocks) - kept] for m in turns)])

        def request(text: str) -> CompletionRequest:
            prompt = compaction_request(text, MOST_SUMMARY_CHARS)
            return caller.request(
                (conversation.system, Message(role="user", content=prompt)), SUMMARY_SCHEMA, "summary"
            )

        def asking() -> tuple[CompletionRequest, str]:
            text, window = told, caller.window()
            while not caller.fits(request(text), window):  # the oldest parts go first
                assert window is not None
                if not text:
                    raise caller.cannot_fit(request(text), window, "the rules and the request for a summary")
                text = text[max(1, len(text) // 4) :]
            return request(text), versions("compact")

        completion, _ = caller.call("compact", day, asking, heard=False)
        summary = (completion.text_of("summary") or completion.text)[:MOST_SUMMARY_CHARS]
        conversation.compact(summary, tools.notes, kept, notes_chars)
        return True
