"""The language-model merchant: kind `llm`.

Each day it renders its observation as a short report, shows the model the rules, what its
memory keeps and the report, and asks for a decision filling `Decision`'s JSON schema. An
answer that is not a valid decision gets one repair request (the error is shown to the
model); if that fails too, the raw text goes to the market, which rejects it as a malformed
decision and the runner records the fault. A call that fails for good (retries exhausted)
raises, which the runner records as an `error` fault for the day; a request the server refuses
as too long is asked again shorter (`_call`), and only a conversation that cannot fit the
window at its smallest stops the run.

Two optional steps make the model deliberate (both cost tokens):
- `think`: the decision's schema gets a `reasoning` field before the operations, so the
  model writes its reasoning first and then decides, in the same call;
- `reflect`: from day 2, a `reflect` call first shows the model yesterday's decision and
  today's report (its outcome) and asks what worked; the answer goes with today's report
  into the decision prompt.

With `plan`, the decision's schema keeps its `plan` field and the system prompt asks the model
to state there the prices it intends to hold; the market records the plan with the day.

For pricing games in the manner of Fish, Gonczarowski and Shorrer (2024, "Algorithmic
Collusion by Large Language Models"):
- `preset`: a paragraph before the rules on how to play (`profit_first`: long-run profit, mind
  how rivals respond, no price cut without a reason; `explore`: try a wide range of prices
  first, then settle), in the spirit of the paper's two prompt prefixes;
- `memory: plans`: the schema gets two fields, `plans` and `insights`, which the model
  rewrites every day and is shown the next (they are the merchant's, not the market's: they
  are set aside before the decision goes to the market);
- `history`: the daily report ends with a table of the last days as the merchant saw them
  (own prices, units sold and profit, rivals' prices). Where the window is known (the
  embedded model's, `context_tokens`, the catalogue's, or one a refusal named), a call keeps
  as many days of window memory, then of the table, as leave its answer room (`_fitted`).

In a market where merchants talk (its observations carry `messages`), the decision's schema
keeps its `message` field, the system prompt says that rivals read it the next day, and the
daily report shows what they said yesterday; elsewhere neither the schema nor the prompts
change, so the requests (and the cached answers) of a tournament without talk stay the same.

Every call is logged with its purpose, tokens, latency, attempts, cost, the prompt
templates' versions, temperature and seed (`calls()`).
"""

from __future__ import annotations

import json
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np
from pydantic import ConfigDict, Field, ValidationError, model_validator

from common.errors import first_problem
from common.model_calls import CallPurpose, ModelCall, TranscriptStep
from contestants.base import (
    CallsOutlook,
    Contestant,
    ContestantConfigError,
    OffPathQuestion,
    Params,
    Ping,
    RecallQuestion,
    RunOptions,
)
from contestants.calls.cache import request_key
from contestants.calls.coordinator import SLACK_S
from contestants.calls.errors import CallsStopped
from contestants.calls.types import Completion, CompletionRequest, Message, Tool, parse_object
from contestants.llm.agent import ANSWER, END_DAY, AgentTools, Conversation, as_text, summary_turn, work
from contestants.llm.errors import ProviderConfigError, ProviderError
from contestants.llm.memory import Memory, MemoryKind
from contestants.llm.pricing import is_free, price_of, prices_from
from contestants.llm.prompts import (
    HistoryRow,
    agent_prompt,
    compaction_request,
    daily_report,
    history_row,
    off_path_question,
    recall_question,
    reflect_question,
    repair_request,
    system_prompt,
    versions,
    with_history,
    with_reflection,
)
from contestants.llm.providers import Provider, get_provider, validate_settings, written
from contestants.llm.rehearsal import Outlook, Rehearsal
from contestants.llm.schema import constrained_schema, for_catalog
from contestants.llm.too_long import TooLong
from market.scenario import Scenario
from market.types import Decision, Observation

# Tightened (every field required, lists and strings bounded): a small model decoding under
# a grammar otherwise answers `{}` or repeats one operation until it runs out of tokens.
DECISION_SCHEMA = constrained_schema(Decision.model_json_schema())
RECALL_SCHEMA = {
    "type": "object",
    "properties": {"value": {"type": ["number", "null"]}},
    "required": ["value"],
}
MOST_SUMMARY_CHARS = 2_000  # the most a compaction's summary may hold
SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string", "maxLength": MOST_SUMMARY_CHARS}},
    "required": ["summary"],
    "additionalProperties": False,
}
REFLECT_SCHEMA = {
    "type": "object",
    "properties": {"reflection": {"type": "string", "maxLength": 600}},
    "required": ["reflection"],
    "additionalProperties": False,
}
NOTEBOOK_CHARS = 600  # the most the plans and the insights of plans memory may hold, each
# Fields the merchant asks the model for on its own account, set aside before the decision goes
# to the market (market.types.Decision has none of them).
OWN_FIELDS = ("reasoning", "plans", "insights")


def decision_schema(
    *, think: bool, plan: bool, plans_and_insights: bool = False, talk: bool = False
) -> dict[str, Any]:
    """The decision's schema as the model is asked to fill it. Every property is required, so
    the plan is left out unless `plan` and the message unless merchants `talk` (either would
    cost every answer tokens). JSON generation follows property order, so what the operations
    should follow from comes before them: with `plans_and_insights`, the plans and insights
    that plans memory keeps; before those, with `think`, a reasoning field."""
    properties, defs = dict(DECISION_SCHEMA["properties"]), dict(DECISION_SCHEMA["$defs"])
    if not plan:
        del properties["plan"], defs["PlannedPrice"]
    if not talk:
        del properties["message"]
    if plans_and_insights:
        notebook = {"type": "string", "maxLength": NOTEBOOK_CHARS}
        properties = {"plans": notebook, "insights": notebook, **properties}
    if think:
        properties = {"reasoning": {"type": "string", "maxLength": 800}, **properties}
    return {**DECISION_SCHEMA, "$defs": defs, "properties": properties, "required": list(properties)}


class LLMParams(Params):
    """A model and how it plays. Keys not listed here are the provider's settings
    (base_url, api_key_env, model_path, timeout, max_retries, max_concurrent_calls, prices,
    no_cache, ...)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model: str = Field(
        "local/smollm2",
        description='"provider/model": openai/..., anthropic/..., local/smollm2, openrouter/...',
    )
    memory: MemoryKind = Field(
        "window", description="stateless | window | notes | plans (plans and insights rewritten every day)"
    )
    window: int = Field(5, ge=1, le=100, description="days of conversation the window memory keeps")
    temperature: float | None = Field(
        None, ge=0, le=2, description="None: the model's default (the embedded model's: 0, greedy)"
    )
    top_p: float | None = Field(None, gt=0, le=1, description="None: the model's default")
    max_tokens: int = Field(400, gt=0, le=32_000)
    think: bool = Field(False, description="write its reasoning before the decision, in the same answer")
    reflect: bool = Field(
        False, description="from day 2, reflect on yesterday's decision against its outcome first"
    )
    plan: bool = Field(
        False,
        description="state in each decision the prices it intends to hold "
        "(the plan that plan_drift measures)",
    )
    preset: Literal["profit_first", "explore"] | None = Field(
        None,
        description="a paragraph before the rules on how to play: profit_first (long-run profit) "
        "or explore (try prices widely first)",
    )
    history: int = Field(
        0,
        ge=0,
        le=100,
        description="days in the daily report's table of the last days "
        "(own prices, sold, profit, rivals' prices); 0: no table",
    )
    mode: Literal["decision", "agent"] = Field(
        "decision",
        description="decision: one structured answer a day; agent: several steps a day with tools "
        "(books, history, rivals, calculator, notes, operations), ended by end_day",
    )
    max_steps: int = Field(20, ge=1, le=200, description="agent mode: the most steps (answers) a day")
    context_tokens: int | None = Field(
        None,
        ge=1000,
        le=10**8,
        description="the most tokens a call may hold (prompt and answer); None: the model's own "
        "where known. Agent mode compacts its conversation to stay within it",
    )

    @model_validator(mode="after")
    def _window_holds_an_answer(self) -> LLMParams:
        if self.context_tokens is not None and self.context_tokens <= self.max_tokens:
            raise ValueError(
                f"context_tokens {self.context_tokens} must be larger than max_tokens {self.max_tokens}: "
                "a call holds the prompt and the answer"
            )
        return self

    @model_validator(mode="after")
    def _provider_settings_are_valid(self) -> LLMParams:
        try:
            validate_settings(self.model, self.provider_settings)
        except ProviderConfigError as exc:  # pydantic reports a ValueError as the model's error
            raise ValueError(str(exc)) from None
        return self

    @property
    def provider_settings(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LLMMerchant(Contestant):
    kind: ClassVar[str] = "llm"
    params_model: ClassVar[type[Params]] = LLMParams
    needs_actor: ClassVar[bool] = True  # holds a model or a client; may be slow
    calls_models: ClassVar[bool] = True

    params: LLMParams

    def __init__(self, params: LLMParams, options: RunOptions = RunOptions()):
        super().__init__(params, options)
        # The provider counts its requests as its model does (and learns from refusals); in a
        # rehearsal, the rehearsal answers them in its place.
        self.provider = provider_for(params, options)
        self.rehearsal = Rehearsal(self.provider, options.rehearse) if options.rehearse is not None else None
        self.deadline: float | None = None
        self._calls: list[ModelCall] = []
        self._transcript: list[TranscriptStep] = []
        self._heard: tuple[Message, ...] = ()  # the conversation as the last call left it

    @classmethod
    def check_scenario(cls, params: Params, scenario: Scenario, merchants: int) -> None:
        resets = [act.name for act in scenario.interventions if act.kind == "memory_reset"]
        if resets:
            raise ContestantConfigError(
                f"intervention {resets[0]!r} is a memory_reset, which resets learners (qlearning); "
                "a language model's memory cannot be reset yet"
            )

    @classmethod
    def preflight(cls, params: Params) -> None:
        """A missing API key or model file, or a request the model would refuse (a temperature
        it does not take, an effort it does not know), is a validation error, not a fault on
        day 1."""
        assert isinstance(params, LLMParams)
        try:
            provider = provider_for(params)
            provider.check_credentials()
            ping = (Message(role="user", content="ping"),)
            provider.check_request(
                _request(params, ping, None, "step", seed=0, tools=(END_DAY,))
                if params.mode == "agent"
                else _request(params, ping, DECISION_SCHEMA, "decision", seed=0)
            )
        except ProviderConfigError as exc:
            raise ContestantConfigError(str(exc), exc.field) from None

    @classmethod
    def ping(cls, params: Params) -> Ping:
        """One call with the contestant's own settings and schema (no cache, one retry): what
        the model refuses (an unknown model, a refused key or parameter) it refuses here."""
        assert isinstance(params, LLMParams)
        settings = validate_settings(params.model, params.provider_settings)
        quick = {
            "no_cache": True,
            "max_retries": min(settings.max_retries, 1),
            "total_timeout": min(settings.total_timeout, 60.0),
        }
        provider = provider_for(type(params).model_validate({**params.model_dump(), **quick}))
        messages = (
            Message(
                role="system",
                content="You run a shop. Answer with today's decision in JSON: do nothing today.",
            ),
            Message(role="user", content="Day 1. Decide."),
        )
        request = _request(
            params,
            messages,
            decision_schema(
                think=params.think, plan=params.plan, plans_and_insights=params.memory == "plans"
            ),
            "decision",
            seed=0,
        )

        def call() -> str | None:
            try:
                provider.complete(request)
            except (ProviderError, ProviderConfigError, CallsStopped) as exc:
                return str(exc)
            return None

        base_url = getattr(settings, "base_url", None)  # a remote provider's (RemoteSettings)
        where = f" at {base_url}" if base_url else ""
        # a key of its own: a call of its own
        reached = {**provider.cache_identity(), "api_key_env": getattr(settings, "api_key_env", None)}
        return Ping(f"{provider.label}{where}", request_key(reached, request), call)

    @classmethod
    def unpriced_model(cls, params: Params, prices: dict[str, Any]) -> str | None:
        assert isinstance(params, LLMParams)
        own = validate_settings(params.model, params.provider_settings).prices
        label = params.model  # "provider/model", as prices are keyed
        return (
            None if is_free(label) or price_of(label, {**prices_from(prices), **own}) is not None else label
        )

    @classmethod
    def calls_outlook(cls, params: Params, prices: dict[str, Any]) -> CallsOutlook:
        assert isinstance(params, LLMParams)
        settings = validate_settings(params.model, params.provider_settings)
        return Outlook(
            model=params.model,
            cached=not settings.no_cache,
            steps=params.mode == "agent",
            max_tokens=params.max_tokens,
            prices={**prices_from(prices), **settings.prices},
        )

    @classmethod
    def turn_seconds(cls, params: Params) -> float:
        """A turn makes at most TURN_CALLS calls in a row (a reflection, the decision, its
        repair), or in agent mode twice max_steps (a compaction before each step at most), each
        of which may take the provider's total_timeout with its retries."""
        assert isinstance(params, LLMParams)
        calls = 2 * params.max_steps if params.mode == "agent" else TURN_CALLS
        return calls * validate_settings(params.model, params.provider_settings).total_timeout

    @classmethod
    def overrun_seconds(cls, params: Params) -> float:
        """Past its deadline a turn starts no call, no attempt and no wait for one: an attempt
        under way ends on its timeout, and then the call reports to the call coordinator,
        and a next call is told it is late, each answered within SLACK_S."""
        assert isinstance(params, LLMParams)
        return validate_settings(params.model, params.provider_settings).timeout + 2 * SLACK_S

    def begin_turn(self, deadline: float | None) -> None:
        self.deadline = deadline

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.merchant, self.scenario = merchant, scenario
        if self.rehearsal is not None:
            self.rehearsal.reset(merchant=merchant, scenario=scenario, seed=seed)
        self.seed = int(np.random.default_rng(seed).integers(2**31 - 1))
        self.memory = Memory(self.params.memory, self.params.window)
        self.history: deque[HistoryRow] = deque(maxlen=self.params.history)
        self.system: str | None = None
        p = self.params
        # how to play, the rules, then what they ask for besides: reasoning first, a plan, the plans
        # and insights (and a message: see `decide`)
        self.preface = (f"preset_{p.preset}",) if p.preset else ()
        self.extras = tuple(
            name
            for name, wanted in (("think", p.think), ("plan", p.plan), ("plans", p.memory == "plans"))
            if wanted
        )
        self.schema = self._schema(talk=False)
        self.last_decision: tuple[int, str] | None = None  # (day, what was decided)
        self.agent: tuple[AgentTools, Conversation] | None = None  # made at the first decision
        self.last_day = 0  # of the last decision asked for
        self.days_worked: list[DayWorked] = []
        self._calls, self._transcript, self._heard = [], [], ()
        self._steps: Counter[int] = Counter()  # the calls kept of each day

    def decide(self, observation: Observation) -> Any:
        self.last_day = observation.day
        if self.rehearsal is not None:  # its answers make the operations that fit the day
            self.rehearsal.observe(observation)
        if self.params.mode == "agent":
            return self._work(observation)
        day = observation.day
        if self.system is None:
            # merchants talk: the answer may carry a message, the rules say who reads it
            if observation.messages is not None:
                self.extras, self.schema = (*self.extras, "talk"), self._schema(talk=True)
            self.system = system_prompt(
                self.scenario,
                self.merchant,
                observation.days,
                notes=self.params.memory == "notes",
                extras=self.extras,
                unit_costs=self.scenario.own_values("unit_cost", observation.seat),
                preface=self.preface,
            )
        row = history_row(observation)
        if row is not None:
            self.history.append(row)  # kept up to `history` rows (none without a table)
        rows, report = list(self.history), daily_report(observation)

        def reported(shown: int) -> str:  # today's report with the table of the last `shown` days
            return with_history(report, rows[len(rows) - shown :]) if shown else report

        reflection = self._reflect(day, reported) if self.params.reflect else None
        prompt_with = reported if reflection is None else lambda k: with_reflection(reported(k), reflection)
        reflected = ("reflection",) if reflection is not None else ()
        completion, asked = self._call(
            "decide", day, self._asking(prompt_with, len(rows), self.schema, "decision", reflected)
        )
        decision, problem = _as_decision(completion)
        if decision is None:
            wrote = Message(role="assistant", content=completion.text)
            repair = Message(role="user", content=repair_request(problem))
            again = self._asking(
                prompt_with, len(rows), self.schema, "decision", (*reflected, "repair"), (wrote, repair)
            )
            completion, _ = self._call("repair", day, again)
            decision, _ = _as_decision(completion)
        self.memory.remember(
            day,
            asked.messages[-1].content,  # the prompt as sent, its table fitted to the window
            completion.text,
            decision.note if decision else None,
            _written(completion, "plans"),
            _written(completion, "insights"),
        )
        self.last_decision = (day, _as_shown(decision))
        return decision if decision is not None else completion.text

    def recall(self, question: RecallQuestion) -> float | None:
        if self.agent is not None:
            return self._answer_in_conversation(
                "recall", recall_question(question, tool=ANSWER.name), "recall_tool"
            )
        return self._answer("recall", recall_question(question), "recall")

    def off_path(self, question: OffPathQuestion) -> float | None:
        today = self.last_day + 1  # asked in the morning, before the day's work
        if self.agent is not None:
            text = off_path_question(question, today, tool=ANSWER.name)
            return self._answer_in_conversation("off_path", text, "off_path_tool")
        return self._answer("off_path", off_path_question(question, today), "off_path")

    def _answer(self, purpose: CallPurpose, question: str, template: str) -> float | None:
        """The number its model answers to a question apart from its decision (recall, off
        path), asked with its memory; the question and the answer stay out of that memory."""
        if self.system is None:  # before its first decision
            return None
        asking = self._asking(lambda shown: question, 0, RECALL_SCHEMA, purpose, (template,))
        completion, _ = self._call(purpose, self.last_day + 1, asking)
        value = (completion.output or {}).get("value")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def calls(self) -> list[ModelCall]:
        return list(self._calls)

    def transcript(self) -> list[TranscriptStep]:
        return list(self._transcript)

    def reported_metrics(self) -> dict[str, float]:
        """In agent mode, how its days went (docs/metrics.md): steps and tool errors a day,
        loops, days its steps ran out, compactions."""
        worked = self.days_worked
        if not worked:
            return {}
        return {
            "steps_per_day": sum(d.steps for d in worked) / len(worked),
            "tool_errors_per_day": sum(d.tool_errors for d in worked) / len(worked),
            "loops": float(sum(d.loops for d in worked)),
            "step_limit_days": float(sum(not d.ended for d in worked)),
            "compactions": float(sum(c.purpose == "compact" for c in self._calls)),
        }

    def _work(self, observation: Observation) -> dict[str, Any]:
        """A day in agent mode (contestants.llm.agent): its steps, then its operations as the decision."""
        if self.agent is None:
            tools = AgentTools(self.scenario, talk=observation.messages is not None, plan=self.params.plan)
            system = agent_prompt(
                self.scenario,
                self.merchant,
                observation.days,
                self.params.max_steps,
                [t.name for t in tools.tools if t.name in ("promote", "send_message")],
                unit_costs=self.scenario.own_values("unit_cost", observation.seat),
                preface=self.preface,
            )
            self.agent = (tools, Conversation(system))
        tools, conversation = self.agent
        templates = versions(*self.preface, "agent")

        def step(conversation: Conversation) -> Completion:
            day = observation.day
            return self._call("step", day, lambda: (self._next_step(conversation, tools, day), templates))[0]

        day = work(tools, conversation, observation, self.params.max_steps, step, self._heard_results)
        self.days_worked.append(DayWorked(day.steps, day.tool_errors, day.loops, day.ended))
        return day.decision()

    @property
    def _answering(self) -> Provider | Rehearsal:
        """What answers its requests, and stops the run (or the rehearsal) where they cannot be
        made: its provider, or the rehearsal in its place."""
        return self.provider if self.rehearsal is None else self.rehearsal

    def _window(self) -> int | None:
        """The tokens a call may hold: `context_tokens` where given, the model's context where
        the provider knows it or a refusal named it, the smallest of those; None: not known."""
        return self.provider.window(self.params.context_tokens)

    def _fits(self, request: CompletionRequest, window: int | None) -> bool:
        """Whether the request and its longest answer fit the window (counted as the model
        counts at most: see Provider.most_prompt_tokens)."""
        return window is None or self.provider.most_prompt_tokens(request) + self.params.max_tokens <= window

    def _answer_in_conversation(self, purpose: CallPurpose, question: str, template: str) -> float | None:
        """An agent's answer to a question apart from its work (recall, off path), asked at the
        end of its conversation so far with one tool to answer with (the question and the
        answer stay out of the conversation)."""
        assert self.agent is not None
        tools, conversation = self.agent
        asked = Message(role="user", content=question)
        today = self.last_day + 1  # a question is asked in the morning, before the day's work
        templates = versions("agent", template)
        completion, _ = self._call(
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
            return _request(self.params, messages, None, "step", self.seed, offered or tools.tools)

        while not self._fits(request(), window := self._window()):
            assert window is not None
            if not self._compact(conversation, tools, window, day):
                raise self._cannot_fit(request(), window, "the rules, the tools, its summary and notes")
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
        blocks = conversation.blocks
        provider = self.provider
        notes_chars = provider.text_chars(window // 4)
        longest = MOST_SUMMARY_CHARS + written(summary_turn("", tools.notes, notes_chars))
        summary_room = max(longest, MOST_SUMMARY_CHARS + notes_chars)
        fixed = provider.most_prompt_tokens(
            _request(self.params, (conversation.system,), None, "step", self.seed, tools.tools)
        )
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
            return _request(
                self.params,
                (conversation.system, Message(role="user", content=prompt)),
                SUMMARY_SCHEMA,
                "summary",
                self.seed,
            )

        def asking() -> tuple[CompletionRequest, str]:
            text, window = told, self._window()
            while not self._fits(request(text), window):  # the oldest parts go first
                assert window is not None
                if not text:
                    raise self._cannot_fit(request(text), window, "the rules and the request for a summary")
                text = text[max(1, len(text) // 4) :]
            return request(text), versions("compact")

        completion, _ = self._call("compact", day, asking, heard=False)
        summary = (_written(completion, "summary") or completion.text)[:MOST_SUMMARY_CHARS]
        conversation.compact(summary, tools.notes, kept, notes_chars)
        return True

    def _cannot_fit(self, request: CompletionRequest, window: int, what: str) -> Exception:
        """What to raise where even the smallest `request` cannot fit the window with the answer's
        max_tokens: it stops the run (Provider.stop), saying what did not fit."""
        return self._answering.stop(
            request,
            f"{what} come to {self.provider.most_prompt_tokens(request):,} tokens as its model counts "
            f"them, which with max_tokens {self.params.max_tokens:,} do not fit its window of "
            f"{window:,} tokens: give it a larger window or a smaller max_tokens",
        )

    def _schema(self, talk: bool) -> dict[str, Any]:
        """The decision's schema for this merchant's params and scenario's catalog."""
        p = self.params
        schema = decision_schema(
            think=p.think, plan=p.plan, plans_and_insights=p.memory == "plans", talk=talk
        )
        scenario = self.scenario
        return for_catalog(
            schema,
            scenario.product_ids,
            scenario.whole_units,
            scenario.supplier_names,
            promotions=scenario.promotions is not None,
        )

    def _reflect(self, day: int, reported: Callable[[int], str]) -> str | None:
        """The model's reflection on yesterday's decision, now that today's report (`reported`,
        with a table of so many days) shows its outcome (None on day 1, after a day without a
        decision, or if the answer has no reflection)."""
        if self.last_decision is None or self.last_decision[0] != day - 1:
            return None
        decided = self.last_decision[1]
        asking = self._asking(
            lambda k: reflect_question(day - 1, decided, reported(k)),
            len(self.history),
            REFLECT_SCHEMA,
            "reflection",
            ("reflect",),
        )
        completion, _ = self._call("reflect", day, asking)
        return _written(completion, "reflection") or None

    @property
    def system_templates(self) -> tuple[str, ...]:
        """The templates of the system prompt, in order."""
        return (*self.preface, "merchant", *self.extras)

    def _templates(self, shown: int) -> tuple[str, ...]:
        """The templates of a prompt built on today's memory, with a table of `shown` days."""
        return (*self.system_templates, *self.memory.templates, *(("history",) if shown else ()))

    def _asking(
        self,
        prompt_with: Callable[[int], str],
        rows: int,
        schema: dict,
        name: str,
        templates: tuple[str, ...],
        after: tuple[Message, ...] = (),
    ) -> Callable[[], tuple[CompletionRequest, str]]:
        """What makes a call's request on today's memory (`_fitted`) and the versions of its
        templates: those of the system prompt and memory, the history table's where the prompt
        shows one, then `templates`."""

        def asking() -> tuple[CompletionRequest, str]:
            request, shown = self._fitted(prompt_with, rows, schema, name, after)
            return request, versions(*self._templates(shown), *templates)

        return asking

    def _fitted(
        self,
        prompt_with: Callable[[int], str],
        rows: int,
        schema: dict,
        name: str,
        after: tuple[Message, ...] = (),
    ) -> tuple[CompletionRequest, int]:
        """The request of a call on today's memory: the system prompt, what memory keeps, the
        prompt `prompt_with(k)` with a table of the last k of `rows` days, and the turns `after`
        it; and k. All of memory and of the table, or, where the window is known and that would
        not fit it with the answer's max_tokens, the most that fit: the oldest days of window
        memory go first, then the table's oldest rows (fewer is shorter, so the most that fit
        are found by bisection). If even the rules, today's report and the notes do not fit,
        the run stops."""
        assert self.system is not None, "the system prompt is made at the first decision"
        system, window, days = self.system, self._window(), len(self.memory.turns)

        def request(kept: int, shown: int) -> CompletionRequest:
            messages = (*self.memory.messages(system, prompt_with(shown), kept), *after)
            return _request(self.params, messages, schema, name, self.seed)

        kept = _most(lambda k: self._fits(request(k, rows), window), days)
        if kept is not None:
            return request(kept, rows), rows
        shown = _most(lambda k: self._fits(request(0, k), window), rows - 1)
        if shown is None:
            assert window is not None
            raise self._cannot_fit(request(0, 0), window, "the rules, today's report and its notes")
        return request(0, shown), shown

    def _call(
        self,
        purpose: CallPurpose,
        day: int,
        asking: Callable[[], tuple[CompletionRequest, str]],
        heard: bool = True,
    ) -> tuple[Completion, CompletionRequest]:
        """The provider's answer to the request `asking` makes (with the versions of the
        templates its prompt is made of), recorded as a call and in the transcript, and that
        request; `heard`: the request continues the conversation (a compaction's stands aside
        from it). A request the server refuses as too long is not sent again: the refusal is
        kept in the transcript, the provider counts tighter from what the server said
        (Provider.learn), so that the refused request no longer fits as counted, and `asking`
        makes the request again, fitted to the window (compacted, trimmed), or stops the run
        where even the smallest would not fit."""
        request, templates = asking()
        while True:
            try:
                completion = self._answering.complete(request, self.deadline)
                break
            except ProviderError as exc:
                if exc.too_long is None:
                    raise
                self._refused(purpose, day, request, exc.too_long, exc.detail)
            again, templates = asking()
            if again == request:  # never sent again: it would be refused again, and again
                raise self._answering.stop(
                    request,
                    f"its {purpose} request, refused by the server as too long, was made again unchanged "
                    "(arena's count of it did not tighten): a fault of arena's",
                )
            request = again
        self._calls.append(
            ModelCall(
                day=day,
                purpose=purpose,
                model=self.params.model,
                **completion.usage.model_dump(),
                **completion.model_dump(
                    include={
                        "latency",
                        "attempts",
                        "cost",
                        "cached",
                        "request_hash",
                        "served_model",
                        "fingerprint",
                        "temperature",
                        "top_p",
                        "seed",
                    }
                ),
                prompt_version=templates,
            )
        )
        self._record(purpose, day, request.messages, completion.turn(), heard)
        return completion, request

    def _refused(
        self, purpose: CallPurpose, day: int, request: CompletionRequest, said: TooLong, detail: str
    ) -> None:
        """Learn from the server's refusal of `request` as too long (`said`, in its words
        `detail`; Provider.learn), and keep it in the transcript: the server's words, and the
        request as now counted."""
        window = self.provider.learn(said, request, self._window())
        self._steps[day] += 1
        told = (
            f"{detail} (counted again, the request is {self.provider.most_prompt_tokens(request):,} "
            f"tokens and max_tokens {self.params.max_tokens:,} for a window of {window:,}: it is asked "
            "again, shorter)"
        )
        sent = _new_turns(self._heard, request.messages)
        self._transcript.append(
            TranscriptStep(
                day=day, step=self._steps[day], purpose=purpose, sent=sent, answer=None, refused=told
            )
        )

    def _record(
        self, purpose: CallPurpose, day: int, messages: tuple[Message, ...], answer: Message, heard: bool
    ) -> None:
        """Keep what the call said and heard (common.model_calls.TranscriptStep)."""
        self._steps[day] += 1
        step = self._steps[day]
        kept = answer.model_copy(update={"carried": ()})
        sent = _new_turns(self._heard, messages)
        self._transcript.append(TranscriptStep(day=day, step=step, purpose=purpose, sent=sent, answer=kept))
        if heard:
            self._heard = (*messages, answer)

    def _heard_results(self, results: tuple[Message, ...]) -> None:
        """The results of the last call's tool calls, kept with it."""
        self._transcript[-1] = self._transcript[-1].model_copy(update={"results": results})
        self._heard = (*self._heard, *results)


class DayWorked(NamedTuple):
    """How an agent's day went (contestants.llm.agent.Workday), kept for its reported metrics."""

    steps: int
    tool_errors: int
    loops: int
    ended: bool  # by end_day, not by its steps running out


TURN_CALLS = 3  # calls a turn makes at most, one after another: reflect, decide, repair


def provider_for(params: LLMParams, options: RunOptions = RunOptions()) -> Provider:
    """The contestant's provider under the run's options: its calls check in with the run's
    call coordinator under its name, with the tournament's prices under its own."""
    settings = params.provider_settings
    settings["prices"] = {**options.prices, **settings.get("prices", {})}
    if options.no_cache:
        settings["no_cache"] = True
    return get_provider(
        params.model, settings, coordinator=options.call_coordinator, contestant=options.contestant
    )


def _request(
    params: LLMParams,
    messages: tuple[Message, ...],
    schema: dict | None,
    name: str,
    seed: int | None,
    tools: tuple[Tool, ...] = (),
) -> CompletionRequest:
    """A request of `messages` for an answer to `schema` or, without one, with `tools`."""
    return CompletionRequest(
        messages=messages,
        json_schema=schema,
        tools=tools,
        schema_name=name,
        temperature=params.temperature,
        top_p=params.top_p,
        seed=seed,
        max_tokens=params.max_tokens,
    )


def _as_decision(completion: Completion) -> tuple[Decision | None, str]:
    """The completion as a Decision (the OWN_FIELDS it has set aside), or None and what is
    wrong with it (one line)."""
    if completion.output is None:
        return None, "not a JSON object"
    fields = {k: v for k, v in completion.output.items() if k not in OWN_FIELDS}
    try:
        return Decision.model_validate(fields), ""
    except ValidationError as exc:
        return None, first_problem(exc).said_at_path()


def _written(completion: Completion, field: str) -> str | None:
    """What the answer wrote in a text field of its own, stripped; None if it wrote none."""
    value = (completion.output or {}).get(field)
    return value.strip() if isinstance(value, str) else None


def _as_shown(decision: Decision | None) -> str:
    """A decision as the reflection prompt shows it."""
    if decision is None:
        return "nothing: your answer was not a valid decision"
    return json.dumps(decision.model_dump(mode="json", exclude_none=True))


def _new_turns(heard: tuple[Message, ...], messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The turns of a request that the conversation so far (`heard`: the last request, its
    answer and its tools' results) did not hold: those after the last of `heard` where the
    request repeats it (older turns may have been left out; a turn repeats another if it says
    the same: memory keeps an answer without its reasoning), or else all but a system prompt
    that is the same as before."""

    def said(m: Message) -> tuple[Any, ...]:
        return m.role, m.content, m.tool_calls, m.tool_call_id

    if heard:
        last = said(heard[-1])
        for k in range(len(messages) - 1, -1, -1):
            if said(messages[k]) == last:
                return messages[k + 1 :]
        if messages[0] == heard[0]:
            return messages[1:]
    return messages


def _most(fits: Callable[[int], bool], most: int) -> int | None:
    """The largest k from 0 to `most` for which `fits(k)`, where it holds up to some k and not
    after: `most` itself if it fits, else found by bisection; None if none fits."""
    if most < 0:
        return None
    if fits(most):
        return most
    if not fits(0):
        return None
    fit, over = 0, most
    while over - fit > 1:
        middle = (fit + over) // 2
        fit, over = (middle, over) if fits(middle) else (fit, middle)
    return fit
