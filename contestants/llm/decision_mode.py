"""Decision mode: one structured answer a day.

Each day the merchant renders its observation as a short report, shows the model the rules,
what its memory keeps and the report, and asks for a decision filling `Decision`'s JSON schema.
An answer that is not a valid decision gets one repair request (the error is shown to the
model); if that fails too, the raw text goes to the market, which rejects it as a malformed
decision and the runner records the fault.

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
  as many days of window memory, then of the table, as leave its answer room
  (`DecisionMode._fitted`).

In a market where merchants talk (its observations carry `messages`), the decision's schema
keeps its `message` field, the system prompt says that rivals read it the next day, and the
daily report shows what they said yesterday; elsewhere neither the schema nor the prompts
change, so the requests (and the cached answers) of a tournament without talk stay the same.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from common.errors import first_problem
from common.model_calls import NOTEBOOKS, CallPurpose
from contestants.base import OffPathQuestion, RecallQuestion
from contestants.calls.types import Completion, CompletionRequest, Message
from contestants.llm.caller import Asking, Caller
from contestants.llm.memory import Memory
from contestants.llm.params import LLMParams
from contestants.llm.prompts import (
    HistoryRow,
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
from contestants.llm.schema import constrained_schema, for_catalog
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
REFLECT_SCHEMA = {
    "type": "object",
    "properties": {"reflection": {"type": "string", "maxLength": 600}},
    "required": ["reflection"],
    "additionalProperties": False,
}
NOTEBOOK_CHARS = 600  # the most the plans and the insights of plans memory may hold, each
# Fields the merchant asks the model for on its own account, set aside before the decision goes
# to the market (market.types.Decision has none of them).
OWN_FIELDS = ("reasoning", *NOTEBOOKS)


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
        properties = {**dict.fromkeys(NOTEBOOKS, notebook), **properties}
    if think:
        properties = {"reasoning": {"type": "string", "maxLength": 800}, **properties}
    return {**DECISION_SCHEMA, "$defs": defs, "properties": properties, "required": list(properties)}


class DecisionMode:
    """A merchant's days in decision mode, in one match: its memory, its table of past days,
    and the questions apart from its decisions (recall, off path), asked with its memory."""

    def __init__(self, params: LLMParams, caller: Caller, merchant: str, scenario: Scenario):
        self.params, self.caller, self.merchant, self.scenario = params, caller, merchant, scenario
        self.memory = Memory(params.memory, params.window)
        self.history: deque[HistoryRow] = deque(maxlen=params.history)
        self.system: str | None = None  # made at the first decision
        p = params
        # the rules, then what they ask for besides: reasoning first, a plan, the plans and
        # insights (and a message: see `start`)
        self.extras = tuple(
            name
            for name, wanted in (("think", p.think), ("plan", p.plan), ("plans", p.memory == "plans"))
            if wanted
        )
        self.schema = self._schema(talk=False)
        self.last_decision: tuple[int, str] | None = None  # (day, what was decided)

    def decide(self, observation: Observation) -> Decision | str:
        """Today's decision, or the answer's text where neither it nor its repair is one."""
        day = observation.day
        if self.system is None:
            self._start(observation)
        row = history_row(observation)
        if row is not None:
            self.history.append(row)  # kept up to `history` rows (none without a table)
        rows, report = list(self.history), daily_report(observation)

        def reported(shown: int) -> str:  # today's report with the table of the last `shown` days
            return with_history(report, rows[len(rows) - shown :]) if shown else report

        reflection = self._reflect(day, reported) if self.params.reflect else None
        prompt_with = reported if reflection is None else lambda k: with_reflection(reported(k), reflection)
        reflected = ("reflection",) if reflection is not None else ()
        completion, asked = self.caller.call(
            "decide", day, self._asking(prompt_with, len(rows), self.schema, "decision", reflected)
        )
        decision, problem = _as_decision(completion)
        if decision is None:
            wrote = Message(role="assistant", content=completion.text)
            repair = Message(role="user", content=repair_request(problem))
            again = self._asking(
                prompt_with, len(rows), self.schema, "decision", (*reflected, "repair"), (wrote, repair)
            )
            completion, _ = self.caller.call("repair", day, again)
            decision, _ = _as_decision(completion)
        self.memory.remember(
            day,
            asked.messages[-1].content,  # the prompt as sent, its table fitted to the window
            completion.text,
            decision.note if decision else None,
            *(completion.text_of(notebook) for notebook in NOTEBOOKS),
        )
        self.last_decision = (day, _as_shown(decision))
        return decision if decision is not None else completion.text

    def recall(self, question: RecallQuestion, today: int) -> float | None:
        return self._answer("recall", recall_question(question), "recall", today)

    def off_path(self, question: OffPathQuestion, today: int) -> float | None:
        return self._answer("off_path", off_path_question(question, today), "off_path", today)

    def _start(self, observation: Observation) -> None:
        """The system prompt, made at the first decision: where merchants talk, the answer may
        carry a message and the rules say who reads it."""
        if observation.messages is not None:
            self.extras, self.schema = (*self.extras, "talk"), self._schema(talk=True)
        self.system = system_prompt(
            self.scenario,
            self.merchant,
            observation.days,
            notes=self.params.memory == "notes",
            extras=self.extras,
            unit_costs=self.scenario.own_values("unit_cost", observation.seat),
            preface=self.params.preface,
        )

    def _answer(self, purpose: CallPurpose, question: str, template: str, today: int) -> float | None:
        """The number its model answers to a question apart from its decision (recall, off
        path), asked with its memory; the question and the answer stay out of that memory."""
        if self.system is None:  # before its first decision
            return None
        asking = self._asking(lambda shown: question, 0, RECALL_SCHEMA, purpose, (template,))
        completion, _ = self.caller.call(purpose, today, asking)
        value = (completion.output or {}).get("value")
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

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
        completion, _ = self.caller.call("reflect", day, asking)
        return completion.text_of("reflection") or None

    def _templates(self, shown: int) -> tuple[str, ...]:
        """The templates of a prompt built on today's memory, with a table of `shown` days: those
        of the system prompt, in order, then memory's and the table's."""
        return (
            *self.params.preface,
            "merchant",
            *self.extras,
            *self.memory.templates,
            *(("history",) if shown else ()),
        )

    def _asking(
        self,
        prompt_with: Callable[[int], str],
        rows: int,
        schema: dict,
        name: str,
        templates: tuple[str, ...],
        after: tuple[Message, ...] = (),
    ) -> Asking:
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
        caller = self.caller
        system, window, days = self.system, caller.window(), len(self.memory.turns)

        def request(kept: int, shown: int) -> CompletionRequest:
            messages = (*self.memory.messages(system, prompt_with(shown), kept), *after)
            return caller.request(messages, schema, name)

        kept = _most(lambda k: caller.fits(request(k, rows), window), days)
        if kept is not None:
            return request(kept, rows), rows
        shown = _most(lambda k: caller.fits(request(0, k), window), rows - 1)
        if shown is None:
            assert window is not None
            raise caller.cannot_fit(request(0, 0), window, "the rules, today's report and its notes")
        return request(0, shown), shown


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


def _as_shown(decision: Decision | None) -> str:
    """A decision as the reflection prompt shows it."""
    if decision is None:
        return "nothing: your answer was not a valid decision"
    return json.dumps(decision.model_dump(mode="json", exclude_none=True))


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
