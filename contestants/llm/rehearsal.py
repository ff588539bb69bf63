"""A rehearsal: a merchant plays with its real prompts, memory, recall questions and
reflections, but its provider answers every request itself with an answer of the usual size, so
that a tournament's calls, tokens and cost can be estimated before anything is paid (`arena
validate --estimate`), and that each merchant's first day fits its model's window is seen
before a run starts (tournaments.first_day). It fits its requests to the window as a run does,
and stops where a run would stop.

The prompt's tokens are counted as the provider counts them (the embedded model with its own
tokenizer and chat template, hosted models at about four characters a token); the answer is
what a model typically writes into the schema (`typical_answer`), and reasoning models' hidden
reasoning is not foreseen (the estimate's upper bound allows every call its max_tokens). The
answer's operations are those of the myopic best response (contestants.baselines.BestResponse)
to the merchant's own observation: it knows the scenario's costs and customers, so the merchant
stays in business to the match's last day and every day's calls are counted. Made-up prices and
orders that do not fit the scenario's costs, or none at all (fixed costs with no sales), would
send it bankrupt, and a match cut short would be an estimate cut short. What a real run's calls
may take at most, beyond what a rehearsal counts, is the merchant's `Outlook`.

A judge (contestants.llm.judge) is rehearsed the same way: it reads the words of the rehearsed
matches with its real prompts, counted as its provider counts them, and is answered a typical
judgement.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from common.model_calls import NOTEBOOKS, ModelCall
from contestants.base import CallsOutlook, MostCalls, RehearsedDay
from contestants.baselines import BestResponse, BestResponseParams
from contestants.calls.budget import Price
from contestants.calls.cache import request_key
from contestants.calls.coordinator import CallsStopped, who
from contestants.calls.types import Completion, CompletionRequest, TokenUsage, ToolCall, parse_object
from contestants.llm.agent import ANSWER
from contestants.llm.pricing import cost
from contestants.llm.providers import Provider
from market.scenario import Scenario
from market.types import Observation

NOTE_CHARS = 60  # what a note usually holds, where the schema allows as much
MESSAGE_CHARS = 120  # a message to rivals: a price and a condition
REFLECTION_CHARS = 300
SUMMARY_CHARS = 1_000  # what an agent's summary of its oldest turns usually holds
REASONING_CHARS = 400
JUDGE_REASON_CHARS = 100  # a judge's reason: one short sentence
NOTEBOOK_CHARS = 200  # what plans and insights (plans memory) usually hold, each
RECALLED = 1234.56  # a number answered to a recall or off-path question


class Rehearsal:
    """Answers in place of `provider` (with its name, price and count of tokens) and calls
    nothing; the merchant counts its requests with the provider itself, as in a run. Its
    answers make the operations of the best response to the observation the merchant was last
    given (`observe`); as an agent's model, it works through each day as `day` says."""

    def __init__(self, provider: Provider, day: RehearsedDay):
        self.provider, self.day = provider, day
        self.label = provider.label
        self.stand_in = BestResponse(BestResponseParams())
        self.operations: list[dict[str, Any]] = []  # today's, as a decision lists them

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.stand_in.reset(merchant=merchant, scenario=scenario, seed=seed)

    def observe(self, observation: Observation) -> None:
        """Today's operations: the best response to `observation`."""
        decided = self.stand_in.decide(observation)
        assert isinstance(decided, list)  # the best response says nothing to rivals
        self.operations = [op.model_dump(mode="json", exclude_none=True) for op in decided]

    def stop(self, request: CompletionRequest, reason: str) -> Exception:
        """The rehearsal stops where the run would (Provider.stop), with the line the run's
        call coordinator gives, but tells no coordinator: it stops only the rehearsed match."""
        return CallsStopped(f"{who(self.provider.contestant, self.label)}: {reason}")

    def complete(self, request: CompletionRequest, deadline: float | None = None) -> Completion:
        calls: tuple[ToolCall, ...] = ()
        if request.json_schema is None:  # a step of agent mode
            text, calls = "", typical_step(request, self.day, self.operations)
            written = "".join(call.name + call.arguments for call in calls)
        else:
            text = written = typical_answer(
                request.schema_name, self.provider.answer_schema(request.json_schema), self.operations
            )
        usage = TokenUsage(
            input_tokens=self.provider.prompt_tokens(request),
            output_tokens=self.provider.answer_tokens(written),
        )
        return Completion(
            text=text,
            usage=usage,
            tool_calls=calls,
            provider=self.provider.name,
            model=self.provider.model,
            output=parse_object(text),
            cost=cost(self.label, usage, self.provider.settings.prices),
            latency=0.0,
            attempts=0,
            request_hash=request_key(
                self.provider.cache_identity(), request
            ),  # as the real call's: a replay is found by it
        )


def typical_step(
    request: CompletionRequest, day: RehearsedDay, operations: list[dict[str, Any]]
) -> tuple[ToolCall, ...]:
    """The next step of a rehearsed agent's day, from the steps it has taken since the day's
    report: with `day` "fewest", its `operations` and end_day at once; with "longest", its books
    and its operations first, then a sum at every step after. Asked a question with the answer
    tool alone (recall, off path), it answers a number."""
    taken = 0
    for message in request.messages:
        if message.role == "user" and message.content.startswith("Day "):
            taken = 0
        elif message.tool_calls:
            taken += 1
    made = [(op["op"], {k: v for k, v in op.items() if k != "op"}) for op in operations]
    named: list[tuple[str, dict[str, Any]]]
    if [tool.name for tool in request.tools] == [ANSWER.name]:  # a question apart from the day's work
        named = [(ANSWER.name, {"value": RECALLED})]
    elif day == "fewest":
        named = [*made, ("end_day", {})]
    elif taken == 0:
        named = [("read_books", {}), *made]
    else:
        named = [("calculator", {"expression": "20*19.99"})]
    return tuple(
        ToolCall(
            id=f"rehearsal_{taken}_{k}", name=name, arguments=json.dumps(arguments, separators=(",", ":"))
        )
        for k, (name, arguments) in enumerate(named)
    )


def typical_answer(name: str, schema: dict[str, Any], operations: list[dict[str, Any]]) -> str:
    """The compact JSON of a usual answer to `schema` (a decision: its reasoning, plans and
    insights where asked for, `operations` (as many as the schema allows), a note, a plan and a
    message where the schema has them; a memory or an off-path answer; a reflection; an agent's
    summary; a judge's judgement: one label, a reason of a sentence and one claim, a promise,
    with every key of a claim's schema)."""
    properties = schema.get("properties", {})
    if name in ("recall", "off_path"):  # a number
        answer: dict[str, Any] = {"value": RECALLED}
    elif name == "judgement":  # contestants.llm.judge's schema
        claims = properties.get("claims", {})
        claim: dict[str, Any] = dict.fromkeys(_defined(schema, claims.get("items", {})).get("properties", {}))
        claim.update(kind="promise", product=_products(schema)[0], price=19.99)  # the rest null
        answer = {
            "labels": ["none"],
            "reason": "x" * _chars(properties.get("reason", {}), JUDGE_REASON_CHARS),
            "claims": [claim][: claims.get("maxItems", 1)],
        }
    elif name == "reflection":
        answer = {"reflection": "x" * _chars(properties.get("reflection", {}), REFLECTION_CHARS)}
    elif name == "summary":  # an agent's compaction
        answer = {"summary": "x" * _chars(properties.get("summary", {}), SUMMARY_CHARS)}
    else:
        answer = {}
        if "reasoning" in properties:
            answer["reasoning"] = "x" * _chars(properties["reasoning"], REASONING_CHARS)
        # two texts, as a model's plans and insights are: a judge reads them as two items
        for notebook, letter in zip(NOTEBOOKS, "xy"):
            if notebook in properties:
                answer[notebook] = letter * _chars(properties[notebook], NOTEBOOK_CHARS)
        answer["operations"] = operations[: properties.get("operations", {}).get("maxItems", len(operations))]
        answer["note"] = "x" * _chars(_string_of(properties.get("note", {})), NOTE_CHARS)
        if "plan" in properties:
            answer["plan"] = [{"product": p, "price": 19.99} for p in _products(schema)]
        if "message" in properties:
            answer["message"] = "x" * _chars(_string_of(properties["message"]), MESSAGE_CHARS)
    return json.dumps(answer, separators=(",", ":"))


def _chars(schema: dict[str, Any], usual: int) -> int:
    return min(schema.get("maxLength", usual), usual)


def _string_of(schema: dict[str, Any]) -> dict[str, Any]:
    """The string branch of an optional string's schema."""
    return next((branch for branch in schema.get("anyOf", [schema]) if branch.get("type") == "string"), {})


def _defined(schema: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """`part` of `schema`, or the definition it refers to ("$ref": "#/$defs/Name")."""
    reference = part.get("$ref")
    return part if reference is None else schema.get("$defs", {}).get(reference.rsplit("/", 1)[-1], {})


def _products(schema: dict[str, Any]) -> list[str]:
    """The products an answer's plan or claim may name (an enum of its definitions), or a
    stand-in where none is named."""
    for definition in schema.get("$defs", {}).values():
        enum = _string_of(definition.get("properties", {}).get("product", {})).get("enum")
        if enum:
            return list(enum)
    return ["product"]


@dataclass(frozen=True)
class Outlook(CallsOutlook):
    """A language-model merchant's calls for an estimate: each answer at most `max_tokens`
    long, priced at `prices` (the tournament's under its own)."""

    max_tokens: int
    prices: dict[str, Price]

    def most(self, one_step: Sequence[ModelCall], longest: Sequence[ModelCall]) -> MostCalls:
        """An agent's days of all their steps (`longest`), every answer max_tokens long; a
        decision's every call writing max_tokens and every decision asked again with its
        answer (a repair)."""
        if self.steps:
            high: Counter[str] = Counter(c.purpose for c in longest)
            most_input = sum(c.input_tokens for c in longest)
        else:
            decisions = [c for c in one_step if c.purpose == "decide"]
            high = Counter(c.purpose for c in one_step) + Counter(repair=len(decisions))
            asked = sum(c.input_tokens for c in [*one_step, *decisions])
            most_input = asked + self.max_tokens * len(decisions)
        worst = TokenUsage(input_tokens=most_input, output_tokens=self.max_tokens * high.total())
        return MostCalls(high, worst.input_tokens, worst.output_tokens, cost(self.model, worst, self.prices))
