"""Agent mode: a merchant that works through each day with tools.

Each morning the model is shown the day's report and then takes steps: in each it may call
tools (look up its books, its history, its rivals; compute; keep notes; make operations),
and each call is answered at once. The day ends when it calls `end_day` or after `max_steps`
steps (answers); the operations it made go to the market as one decision, which the market
applies at the close like any other. The tools are a view of the merchant's observation and of the
market's rules (market.operations.judge_day), never a way into the market: an operation tool
says whether the market will accept the operation at the close, and why not, because it asks
the rules the market applies then.

The conversation runs across days: the system prompt, then each day's report, the model's
turns and the tools' results. When it would not fit the model's window, the merchant has the
model summarise its oldest part (Conversation.compact, contestants.llm.agent_mode).
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from simpleeval import DEFAULT_OPERATORS, InvalidExpression, NumberTooHigh, SimpleEval

from common.model_calls import FORGET_TOOL, NOTE_TOOL, PLAN_TOOL
from contestants.calls.types import Completion, Message, Tool, ToolCall
from contestants.llm.prompts import HistoryRow, daily_report, history_row, history_table
from market.accounting import kept_revenue
from market.operations import OperationRules, judge_day
from market.scenario import Scenario
from market.types import MESSAGE_LIMIT, Observation, Rejection

MOST_KEY_CHARS = 40
MOST_NOTE_CHARS = 1_000
MOST_NOTES = 50
RESULT_CHARS = 4_000  # a tool's answer is cut there: a history of a year must not flood the context
HISTORY_CHARS = 3_600  # the most of the history table an answer holds: its latest days
EXPRESSION_CHARS = 300
NUDGE = "Use a tool. Call end_day when you are done with today."

Step = Callable[["Conversation"], Completion]
"""Asks the model for the next step of the conversation (with the merchant's tools)."""


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A tool's arguments: every property required (a strict schema), none other allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _nullable(kind: str, description: str) -> dict[str, Any]:
    return {"type": [kind, "null"], "description": description}


ANSWER = Tool(
    name="answer",
    description="Answer the question: a number, or null if you do not know.",
    parameters=_object({"value": {"type": ["number", "null"]}}),
)
END_DAY = Tool(name="end_day", description="End today: your operations take effect.", parameters=_object({}))


# The tools to look things up and keep notes, the same in every scenario.
READING_TOOLS = (
    Tool(
        name="read_books",
        description="Your cash, receivables, stock by product, today's operations so far and the goals.",
        parameters=_object({}),
    ),
    Tool(
        name="read_history",
        description="Your past days as a table: prices, units sold, profit and rivals' prices.",
        parameters=_object(
            {
                "first_day": _nullable("integer", "null: from the start"),
                "last_day": _nullable("integer", "null: up to yesterday"),
            }
        ),
    ),
    Tool(
        name="read_rivals",
        description="What you can see of rivals and other shops: prices, reputation, sales, messages.",
        parameters=_object({}),
    ),
    Tool(
        name="calculator",
        description="Arithmetic: + - * / ** %, round, min, max, abs, sqrt, exp, log, floor, ceil.",
        parameters=_object({"expression": {"type": "string", "maxLength": EXPRESSION_CHARS}}),
    ),
    Tool(
        name=NOTE_TOOL,
        description="Keep a note under a key for the rest of the match (replaces the key's note).",
        parameters=_object(
            {
                "key": {"type": "string", "maxLength": MOST_KEY_CHARS},
                "text": {"type": "string", "maxLength": MOST_NOTE_CHARS},
            }
        ),
    ),
    Tool(
        name="read_notes",
        description="Read the note under a key, or all notes.",
        parameters=_object({"key": _nullable("string", "null: all notes")}),
    ),
    Tool(
        name=FORGET_TOOL,
        description="Delete the note under a key.",
        parameters=_object({"key": {"type": "string"}}),
    ),
)


def tools_for(scenario: Scenario, talk: bool, plan: bool = False) -> tuple[Tool, ...]:
    """The tools of a merchant in `scenario`: those of every market, then the operations the
    scenario adds (suppliers to choose, promotions, messages where merchants `talk`), and with
    `plan` one to state the prices it intends to hold."""
    product = {"type": "string", "enum": list(scenario.product_ids)}
    return (
        *READING_TOOLS,
        *_operation_tools(scenario, product),
        *_added_tools(scenario, product, talk, plan),
        END_DAY,
    )


def _operation_tools(scenario: Scenario, product: dict[str, Any]) -> tuple[Tool, ...]:
    """The operations of every market: prices, orders (from the scenario's suppliers), advertising
    and collecting credit sales."""
    units = "whole units" if scenario.whole_units else "units (fractions allowed)"
    suppliers = sorted({name for names in scenario.supplier_names for name in names})
    order = {"product": product, "quantity": {"type": "number", "description": units}}
    if suppliers:
        order["supplier"] = {
            "type": ["string", "null"],
            "enum": [*suppliers, None],
            "description": "a supplier listed for the product; null: the usual one",
        }
    return (
        Tool(
            name="set_price",
            description="Post a product's price from today on (rivals see it tomorrow).",
            parameters=_object({"product": product, "price": {"type": "number"}}),
        ),
        Tool(
            name="order",
            description="Buy stock, paid now; it arrives after the supplier's lead time.",
            parameters=_object(order),
        ),
        Tool(
            name="advertise",
            description="Spend cash on advertising today; it lifts your reputation.",
            parameters=_object({"amount": {"type": "number"}}),
        ),
        Tool(
            name="collect",
            description="Collect the credit sales that are due.",
            parameters=_object({}),
        ),
    )


def _added_tools(scenario: Scenario, product: dict[str, Any], talk: bool, plan: bool) -> list[Tool]:
    """The tools some scenarios or params add: promotions, a stated plan, messages to rivals."""
    tools = []
    if scenario.promotions is not None:
        allowed = scenario.promotions
        tools.append(
            Tool(
                name="promote",
                description=f"Put a product on promotion: customers pay the price less the discount "
                f"(a share, at most {allowed.max_discount:g}) for 1 to {allowed.max_days} days from today.",
                parameters=_object(
                    {"product": product, "discount": {"type": "number"}, "days": {"type": "integer"}}
                ),
            )
        )
    if plan:
        tools.append(
            Tool(
                name=PLAN_TOOL,
                description="State the price you intend to hold for a product in the coming days "
                "(not an operation: it stands until you state another).",
                parameters=_object({"product": product, "price": {"type": "number"}}),
            )
        )
    if talk:
        tools.append(
            Tool(
                name="send_message",
                description=f"Tell your rivals something; they read it tomorrow (one a day, the last "
                f"counts; at most {MESSAGE_LIMIT} characters).",
                parameters=_object({"text": {"type": "string", "maxLength": MESSAGE_LIMIT}}),
            )
        )
    return tools


@dataclass
class Workday:
    """One day of work: the morning's observation, the operations made so far (as a decision
    lists them, refused ones too: the market records its refusals), the message, and how the
    day went (steps taken, calls that failed, `loops`: failed calls that repeated one that had
    failed already that day, word for word; whether the model ended it)."""

    observation: Observation
    operations: list[dict[str, Any]] = field(default_factory=list)
    message: str | None = None
    plan: dict[str, float] = field(default_factory=dict)  # product -> the price it intends to hold
    steps: int = 0
    tool_errors: int = 0
    loops: int = 0
    ended: bool = False
    failed: set[tuple[str, str]] = field(default_factory=set)

    def decision(self) -> dict[str, Any]:
        """The day's operations as the decision the market applies at the close (a dict, as
        parse_decision reads one: an operation the model wrote wrong is the market's to refuse)."""
        decision: dict[str, Any] = {"operations": self.operations}
        if self.message is not None:
            decision["message"] = self.message
        if self.plan:
            decision["plan"] = [{"product": p, "price": price} for p, price in self.plan.items()]
        return decision


class ToolError(Exception):
    """A call the tool could not carry out (bad arguments, unknown key): its result says why."""


def _calculator() -> SimpleEval:
    """An evaluator of arithmetic and a few functions of math; no names but pi and e, no
    random numbers (simpleeval's defaults have them), no attributes, no strings to build.
    Powers are of floats (math.pow), so a huge one overflows at once rather than computing an
    integer of millions of digits."""
    functions = {name: getattr(math, name) for name in ("sqrt", "exp", "log", "log10", "floor", "ceil")} | {
        "abs": abs,
        "round": round,
        "min": min,
        "max": max,
    }
    operators = {**DEFAULT_OPERATORS, ast.Pow: math.pow}
    return SimpleEval(operators=operators, functions=functions, names={"pi": math.pi, "e": math.e})


def _not_a_number(constant: str) -> Any:
    """Arguments may not hold NaN or Infinity, which JSON has no place for."""
    raise ValueError(f"{constant} is not a number")


class AgentTools:
    """The tools of one merchant for a match: its notes and history are kept here, across
    days."""

    def __init__(self, scenario: Scenario, talk: bool, plan: bool = False):
        self.scenario = scenario
        self.rules = OperationRules(scenario)
        self.tools = tools_for(scenario, talk, plan)
        self.names = {tool.name for tool in self.tools}
        self.notes: dict[str, str] = {}
        self.history: list[HistoryRow] = []
        self.revenue = 0.0  # what customers paid and kept, so far (market.accounting.kept_revenue)
        self.net_worth: float | None = None  # at the end of yesterday
        self.calculator = _calculator()

    def run(self, call: ToolCall, day: Workday) -> str:
        """The result of a call, as the model reads it (JSON text); a call that fails (an
        operation refused among them) says why and counts as a tool error, and as a loop if it
        repeats one that failed earlier that day."""
        try:
            if call.name not in self.names:
                raise ToolError(f"no tool named {call.name!r}")
            if day.ended:
                raise ToolError("the day has ended")
            try:
                arguments = json.loads(call.arguments or "{}", parse_constant=_not_a_number)
            except ValueError as exc:
                raise ToolError(f"arguments are not JSON: {exc}") from None
            if not isinstance(arguments, dict):
                raise ToolError("arguments must be a JSON object")
            result = getattr(self, f"_{call.name}")(arguments, day)
        except ToolError as exc:
            result = {"error": str(exc)}
        if "error" in result or result.get("accepted") is False:
            day.tool_errors += 1
            said = (call.name, call.arguments)
            day.loops += said in day.failed
            day.failed.add(said)
        text = json.dumps(result, ensure_ascii=False, allow_nan=False, default=str)
        if len(text) > RESULT_CHARS:  # still JSON, its start kept
            text = json.dumps({"cut_to_characters": RESULT_CHARS, "start": text[: RESULT_CHARS - 60]})
        return text

    # --- looking things up ----------------------------------------------------------------

    def _read_books(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        o = day.observation
        judged = judge_day(self.rules, o, day.operations)
        books: dict[str, Any] = {
            "day": o.day,
            "days": o.days,
            "cash": round(o.cash, 2),
            "receivables_due": round(o.receivables_due, 2),
            "receivables_pending": round(o.receivables_pending, 2),
            "reputation": round(o.reputation, 3),
            "fixed_cost_per_day": o.fixed_daily_cost,
            "products": [
                {
                    "product": p.product,
                    "price": p.price,
                    "unit_cost": round(p.unit_cost, 4),
                    "in_stock": p.inventory,
                    "arriving": p.in_transit,
                    "lead_time": p.lead_time,
                    "holding_cost": p.holding_cost,
                    **({"spoiling_by_day": p.spoiling} if p.spoiling is not None else {}),
                    **({"discount": p.discount, "discount_until": p.discount_until} if p.discount else {}),
                }
                for p in o.products
            ],
            "today": [
                {**operation, **({"refused": r.reason} if r is not None else {"accepted": True})}
                for operation, r in zip(day.operations, judged.rejections)
            ],
            "cash_after_today_operations": round(judged.cash, 2),
        }
        if o.satisfaction is not None:
            books["satisfaction"] = round(o.satisfaction, 2)
        if self.scenario.goals:
            books["goals"] = {
                "as_written_for_days": self.scenario.days,
                "this_match_days": o.days,
                "note": "goals on totals (revenue, profit, units) scale with the match's length",
                "goals": [goal.label() for goal in self.scenario.goals],
                "so_far": self._so_far(),
            }
        return books

    def begin_day(self, observation: Observation) -> None:
        """Take in yesterday's record: the history's row, the totals the books keep."""
        row = history_row(observation)
        y = observation.yesterday
        if row is None or y is None:
            return
        self.history.append(row)
        self.revenue += kept_revenue(y.revenue, y.refunds)
        self.net_worth = y.net_worth

    def _so_far(self) -> dict[str, float | None]:
        """Where the merchant stands on what goals are about, as its own books show it."""
        return {
            "days": len(self.history),
            "revenue": round(self.revenue, 2),
            "units_sold": round(sum(sum(row.units_sold.values()) for row in self.history), 2),
            "trade_profit": round(sum(row.profit for row in self.history), 2),
            "net_worth": None if self.net_worth is None else round(self.net_worth, 2),
        }

    def _read_history(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        first, last = arguments.get("first_day"), arguments.get("last_day")
        for name, value in (("first_day", first), ("last_day", last)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ToolError(f"{name} must be a whole number or null")
        rows = [
            row
            for row in self.history
            if (first is None or row.day >= first) and (last is None or row.day <= last)
        ]
        if not rows:
            return {"table": "", "days": 0}
        table = history_table(rows)
        while len(table) > HISTORY_CHARS and len(rows) > 1:  # the latest days that fit
            rows = rows[len(rows) // 4 or 1 :]
            table = history_table(rows)
        return {"days": len(rows), "first_day": rows[0].day, "last_day": rows[-1].day, "table": table}

    def _read_rivals(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        o = day.observation
        rivals = [
            {
                "merchant": m.merchant,
                "bankrupt": m.bankrupt,
                "prices_yesterday": m.prices,
                "reputation": m.reputation,
                "units_sold_so_far": m.units_sold,
            }
            for m in o.market
            if m.merchant != o.merchant
        ]
        seen: dict[str, Any] = {"rivals": rivals}
        if o.competitors:
            seen["other_shops_today"] = [
                {"name": c.name, "prices": c.prices, "reputation": c.reputation} for c in o.competitors
            ]
        if o.messages is not None:
            seen["messages_yesterday"] = [{"from": m.merchant, "text": m.text} for m in o.messages]
        return seen

    def _calculator(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        expression = arguments.get("expression")
        if not isinstance(expression, str) or not expression.strip():
            raise ToolError("expression must be a non-empty string")
        if len(expression) > EXPRESSION_CHARS:
            raise ToolError(f"expression longer than {EXPRESSION_CHARS} characters")
        try:
            value = self.calculator.eval(expression)
            finite = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
        except (InvalidExpression, NumberTooHigh, SyntaxError, ArithmeticError, TypeError, ValueError) as exc:
            raise ToolError(f"cannot evaluate: {exc}") from None
        if not finite:
            raise ToolError("the expression is not a finite number")
        return {"value": value}

    # --- notes ----------------------------------------------------------------------------

    def _key(self, arguments: dict[str, Any]) -> str:
        key = arguments.get("key")
        if not isinstance(key, str) or not key.strip() or len(key) > MOST_KEY_CHARS:
            raise ToolError(f"key must be text of 1 to {MOST_KEY_CHARS} characters")
        return key.strip()

    def _write_note(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        key, text = self._key(arguments), arguments.get("text")
        if not isinstance(text, str) or len(text) > MOST_NOTE_CHARS:
            raise ToolError(f"text must be at most {MOST_NOTE_CHARS} characters")
        if key not in self.notes and len(self.notes) >= MOST_NOTES:
            raise ToolError(f"{MOST_NOTES} notes already: delete one first")
        self.notes[key] = text
        return {"kept": key, "notes": len(self.notes)}

    def _read_notes(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        if arguments.get("key") is None:
            return {"notes": dict(self.notes)}
        key = self._key(arguments)
        if key not in self.notes:
            raise ToolError(f"no note {key!r}; keys: {sorted(self.notes)}")
        return {key: self.notes[key]}

    def _delete_note(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        key = self._key(arguments)
        if self.notes.pop(key, None) is None:
            raise ToolError(f"no note {key!r}")
        return {"deleted": key}

    # --- operations -----------------------------------------------------------------------

    def _operation(self, kind: str, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        """Make an operation and say what the market will do with it at the close."""
        operation = {**{k: v for k, v in arguments.items() if v is not None}, "op": kind}
        day.operations.append(operation)
        judged = judge_day(self.rules, day.observation, day.operations)
        refused: Rejection | None = judged.rejections[-1]
        if refused is not None:
            return {"accepted": False, "reason": refused.reason}
        return {"accepted": True, "cash_after_today_operations": round(judged.cash, 2)}

    def _set_price(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        return self._operation("set_price", arguments, day)

    def _order(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        return self._operation("order", arguments, day)

    def _advertise(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        return self._operation("advertise", arguments, day)

    def _collect(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        return self._operation("collect", arguments, day)

    def _promote(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        return self._operation("promote", arguments, day)

    def _send_message(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        text = arguments.get("text")
        if not isinstance(text, str) or len(text) > MESSAGE_LIMIT:
            raise ToolError(f"text must be at most {MESSAGE_LIMIT} characters")
        day.message = text
        return {"sent_tomorrow": True}

    def _state_plan(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        product, price = arguments.get("product"), arguments.get("price")
        if product not in self.scenario.product_ids:
            raise ToolError(f"no product {product!r}")
        if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 < price < math.inf:
            raise ToolError("price must be a positive number")
        day.plan[product] = float(price)
        return {"planned": dict(day.plan)}

    def _end_day(self, arguments: dict[str, Any], day: Workday) -> dict[str, Any]:
        day.ended = True
        return {"ended": day.observation.day}


def morning(observation: Observation, max_steps: int) -> str:
    """The user's turn that opens a day: the report and what the day allows."""
    return f"{daily_report(observation)}\nYou have {max_steps} steps today; end_day ends the day."


class Conversation:
    """The conversation of a match: the system prompt, the summary of what was compacted (if
    anything was), then blocks of turns, oldest first, each of one day: a morning's report, or
    one step (the model's turn with its tools' results, or a reminder). Compaction takes whole
    blocks, so that a tool call never loses its result."""

    def __init__(self, system: str):
        self.system = Message(role="system", content=system)
        self.summary: Message | None = None
        self.blocks: list[tuple[int, list[Message]]] = []
        self.day = 0

    def open_day(self, day: int, report: str) -> None:
        self.day = day
        self.blocks.append((day, [Message(role="user", content=report)]))

    def turn(self, answer: Message) -> None:
        """The model's turn opens a block of its own."""
        self.blocks.append((self.day, [answer]))

    def add(self, message: Message) -> None:
        self.blocks[-1][1].append(message)

    def messages(self, first: int = 0) -> tuple[Message, ...]:
        """The system prompt, the summary and the turns of the blocks from `first` on."""
        head = (self.system,) if self.summary is None else (self.system, self.summary)
        return (*head, *(m for _, turns in self.blocks[first:] for m in turns))

    def compact(self, summary: str, notes: dict[str, str], kept: int, notes_chars: int) -> None:
        """Replace all but the last `kept` blocks with the model's `summary` of them and its
        notes (`summary_turn`)."""
        self.summary = summary_turn(summary, notes, notes_chars)
        self.blocks = self.blocks[len(self.blocks) - kept :] if kept else []


def summary_turn(summary: str, notes: dict[str, str], notes_chars: int) -> Message:
    """The turn that stands for a compacted part of the conversation: the model's `summary` of
    it and its notes (their keys alone where they are longer than `notes_chars`)."""
    shown = json.dumps(notes, ensure_ascii=False) if notes else "(none)"
    if len(shown) > notes_chars:
        shown = f"{json.dumps(sorted(notes), ensure_ascii=False)} (read them with read_notes)"
    return Message(
        role="user",
        content=f"Summary of the earlier part of this conversation, written by you:\n{summary}\n\n"
        f"Your notes: {shown}",
    )


def as_text(messages: Iterable[Message]) -> str:
    """Turns written out as lines, for the model to summarise (its tool calls and their
    results among them: a request with them in their own form would need the tools offered)."""
    lines = []
    for m in messages:
        if m.role == "tool":
            lines.append(f"result: {m.content}")
        elif m.role == "assistant":
            if m.content:
                lines.append(f"you: {m.content}")
            lines.extend(f"you called {call.name} {call.arguments}" for call in m.tool_calls)
        else:
            lines.append(m.content)
    return "\n".join(lines)


def work(
    tools: AgentTools,
    conversation: Conversation,
    observation: Observation,
    max_steps: int,
    step: Step,
    answered: Callable[[tuple[Message, ...]], None] = lambda results: None,
) -> Workday:
    """One day of work: the morning report, then the model's steps, each call answered (the
    results told to `answered`), until it calls end_day or has taken `max_steps` steps (one
    step: one answer, with the calls it makes). An answer without calls gets a reminder to use
    the tools."""
    day = Workday(observation)
    tools.begin_day(observation)
    conversation.open_day(observation.day, morning(observation, max_steps))
    while day.steps < max_steps and not day.ended:
        completion = step(conversation)
        day.steps += 1
        conversation.turn(completion.turn())
        if not completion.tool_calls:
            if day.steps < max_steps:
                conversation.add(Message(role="user", content=NUDGE))
            continue
        results = tuple(
            Message(role="tool", content=tools.run(call, day), tool_call_id=call.id)
            for call in completion.tool_calls
        )
        for result in results:
            conversation.add(result)
        answered(results)
    return day
