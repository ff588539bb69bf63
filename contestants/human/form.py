"""The form a person fills for a day at a human seat, and that form read into a `Decision`.

The form has a field for each operation a merchant of the scenario may make, in the order the
decision lists them: collecting first (its cash counts for what follows), then a price per
product, an order per product and supplier, advertising, a promotion per product, and the
words: a message where merchants talk, a note. An empty field makes no operation: an empty
price keeps the price posted, as a model that posts no price does; a form left empty is a
day of waiting.

Reading a form checks nothing of its own about numbers: the texts typed go into the
operations as a model's JSON would carry them, and the market's rules judge them
(market.operations.judge_day), with the message as the market delivers it
(market.types.delivered). The first field at fault in the form's order becomes one `Refusal`
naming it with the market's reason, but for a text that is no number, which the market words
for a JSON operation and the form words for a person ("'12,5' is not a number (use a point for
decimals)"); otherwise the whole decision is returned. The one rule of the form itself: a
promotion needs both its discount and its days, or neither.

Fields are named for what they fill, the same every day: `collect`, `price.P`, `order.P` (the
usual supplier), `order.P.S` (supplier S), `advertise`, `promote.P.discount` and
`promote.P.days`, `message`, `note` (P a product's id, S a supplier's name: neither has a dot).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from market.operations import OperationRules, judge_day
from market.scenario import Scenario
from market.types import MESSAGE_LIMIT, Decision, Observation, delivered

Entry = Literal["number", "whole", "check", "text"]
"""How a field is typed: a number, a whole number, a box ticked or not, free text."""

TICKED = "on"  # what a browser sends for a ticked box that names no value


@dataclass(frozen=True)
class FormField:
    """One field of the form: `name` stable across days (the page's id and the key it is sent
    under), `label` its words ("price of widget"), `hint` what it takes and what empty means,
    `group` the heading it stands under, `key` the operation's field it fills (None: a box
    whose ticking makes the operation, or a field that is no operation's)."""

    name: str
    label: str
    entry: Entry
    hint: str
    group: str
    key: str | None = None


@dataclass(frozen=True)
class Slot:
    """One operation the form may make: its fixed part (`operation`: its kind, product,
    supplier), the fields that fill the rest, and its name in words for a refusal."""

    what: str
    operation: dict[str, str]
    fields: tuple[FormField, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class Refusal:
    """Why a form cannot be taken: `fields` at fault (their names) and one message naming them."""

    fields: tuple[str, ...]
    message: str


@dataclass(frozen=True, eq=False)
class DayForm:
    """The form of a seat in `scenario` (the same every day of a match): its operation slots in
    the decision's order, the message field where merchants talk (None elsewhere), the note."""

    scenario: Scenario
    rules: OperationRules
    slots: tuple[Slot, ...]
    message: FormField | None
    note: FormField

    @property
    def fields(self) -> tuple[FormField, ...]:
        """Every field: the operations' in the decision's order, then the words."""
        words = (self.note,) if self.message is None else (self.message, self.note)
        return (*(f for slot in self.slots for f in slot.fields), *words)

    def read(self, submitted: Mapping[str, str], observation: Observation) -> Decision | Refusal:
        """The decision the `submitted` fields make (by name; names not of the form are not
        read, a field not sent is empty) on the observation's day, or the refusal of the first
        field at fault in the form's order: all of it, or nothing."""
        operations: list[dict[str, Any]] = []
        made: list[tuple[int, Slot]] = []  # each operation's slot, by its place in the form
        faults: list[tuple[int, Refusal]] = []
        for place, slot in enumerate(self.slots):
            typed = {f.key: submitted.get(f.name, "").strip() for f in slot.fields}
            if not any(typed.values()):
                continue
            if not all(typed.values()):
                wanted = " and ".join(f.label for f in slot.fields)
                faults.append((place, Refusal(slot.names, f"{slot.what}: give {wanted}, or neither")))
                continue
            operations.append({**slot.operation, **{k: v for k, v in typed.items() if k is not None}})
            made.append((place, slot))
        judged = judge_day(self.rules, observation, operations)
        faults += [
            (place, Refusal(slot.names, _said(slot, submitted) or f"{slot.what}: {refused.reason}"))
            for (place, slot), refused in zip(made, judged.rejections)
            if refused is not None
        ]
        if faults:
            return min(faults, key=lambda fault: fault[0])[1]  # the first in the form's order
        message = None
        if self.message is not None:
            message = _words(submitted, self.message)
            _, unsent = delivered(message)
            if unsent is not None:
                return Refusal((self.message.name,), f"{self.message.label}: {unsent.reason}")
        note = _words(submitted, self.note)
        return Decision.model_validate({"operations": operations, "message": message, "note": note})

    def fill(self, decision: Decision) -> dict[str, str]:
        """The fields as they read into `decision`, by name (empty ones left out); raises
        ValueError for what the form has no field for (a second price of one product, a wait,
        a plan, a message where merchants do not talk)."""
        slots = {_identity(slot.operation): slot for slot in self.slots}
        filled: dict[str, str] = {}
        for index, op in enumerate(decision.operations):
            fields = op.__dict__
            slot = slots.pop(_identity(fields), None)
            if slot is None:
                raise ValueError(f"operation {index} ({op.op}) has no field of its own in this form")
            for f in slot.fields:
                filled[f.name] = TICKED if f.key is None else _number(fields[f.key])
        if decision.plan:
            raise ValueError("the form has no field for a plan")
        if decision.message is not None:
            if self.message is None:
                raise ValueError("merchants do not talk here: the form has no message")
            filled[self.message.name] = decision.message
        if decision.note is not None:
            filled[self.note.name] = decision.note
        return {name: filled[name] for name in (f.name for f in self.fields) if filled.get(name)}


def day_form(scenario: Scenario, talk: bool) -> DayForm:
    """The form of a seat in `scenario`, with a message field where merchants `talk` (a seat
    knows it from its observation: `messages` is None where they do not)."""
    slots = [*_spending_slots(scenario), *_promotion_slots(scenario)]
    message = (
        FormField(
            "message",
            "message to your rivals",
            "text",
            f"at most {MESSAGE_LIMIT} characters; they read it tomorrow; empty: say nothing",
            "words",
        )
        if talk
        else None
    )
    note = FormField(
        "note", "note to yourself", "text", "no rival sees it (kept in the session's record)", "words"
    )
    return DayForm(scenario, OperationRules(scenario), tuple(slots), message, note)


def _spending_slots(scenario: Scenario) -> list[Slot]:
    """Collecting (where some sales are on credit), the prices, the orders, advertising."""
    slots = []
    if scenario.finance.credit_share > 0:
        collect = FormField(
            "collect", "collect the receivables due", "check", "adds them to cash first", "collecting"
        )
        slots.append(Slot("collecting", {"op": "collect"}, (collect,)))
    for p in scenario.products:
        field = FormField(
            f"price.{p.id}", f"price of {p.id}", "number", "empty: keep today's price", "prices", "price"
        )
        slots.append(Slot(field.label, {"op": "set_price", "product": p.id}, (field,)))
    units: Entry = "whole" if scenario.whole_units else "number"
    how = "whole units" if scenario.whole_units else "units (fractions allowed)"
    for p in scenario.products:
        usual = FormField(
            f"order.{p.id}",
            f"units of {p.id} to order from the usual supplier",
            units,
            f"{how} at today's unit cost, arriving in {p.lead_time} days; empty: no order",
            "orders",
            "quantity",
        )
        slots.append(Slot(usual.label, {"op": "order", "product": p.id}, (usual,)))
        for s in p.suppliers:
            on_time = f", {s.reliability:.0%} on time" if s.reliability < 1 else ""
            listed = FormField(
                f"order.{p.id}.{s.name}",
                f"units of {p.id} to order from {s.name}",
                units,
                f"{how} at {s.unit_cost:g} each, arriving in {s.lead_time} days{on_time}; empty: no order",
                "orders",
                "quantity",
            )
            slots.append(Slot(listed.label, {"op": "order", "product": p.id, "supplier": s.name}, (listed,)))
    ads = FormField(
        "advertise", "amount to spend on advertising", "number", "empty: none", "advertising", "amount"
    )
    slots.append(Slot(ads.label, {"op": "advertise"}, (ads,)))
    return slots


def _promotion_slots(scenario: Scenario) -> list[Slot]:
    """A promotion per product, where the scenario runs them."""
    allowed = scenario.promotions
    if allowed is None:
        return []
    slots = []
    for p in scenario.products:
        discount = FormField(
            f"promote.{p.id}.discount",
            f"discount on {p.id}",
            "number",
            f"a share of the price, at most {allowed.max_discount:g}",
            "promotions",
            "discount",
        )
        days = FormField(
            f"promote.{p.id}.days",
            f"days of the promotion of {p.id}",
            "whole",
            f"1 to {allowed.max_days}, from today",
            "promotions",
            "days",
        )
        slots.append(Slot(f"promotion of {p.id}", {"op": "promote", "product": p.id}, (discount, days)))
    return slots


def _identity(operation: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """What tells an operation's slot from the others': its kind, product and supplier (None:
    none named)."""
    return operation["op"], operation.get("product"), operation.get("supplier")


def _said(slot: Slot, submitted: Mapping[str, str]) -> str | None:
    """A refusal worded for a person where a number field of `slot` holds no number (the
    market's own words speak of a JSON operation's fields): "price of widget: '12,5' is not a
    number (use a point for decimals)"; None where every number is one."""
    for field in slot.fields:
        text = submitted.get(field.name, "").strip()
        if field.entry in ("number", "whole") and typed_number(text) is None:
            return f"{field.label}: {no_number(text)}"
    return None


def typed_number(text: str) -> float | None:
    """The number a person typed, read as the market reads one in an operation (market.types:
    "1e3" and "12.5" are, "12,5" and "twelve" are not); None where it is none."""
    try:
        return _NUMBER.validate_python(text)
    except ValidationError:
        return None


def no_number(text: str) -> str:
    """Why `text` is refused where a number is wanted, in a person's words."""
    point = " (use a point for decimals)" if "," in text else ""
    return f"{text[:40]!r} is not a number{point}"


_NUMBER = TypeAdapter(float)


def _words(submitted: Mapping[str, str], field: FormField) -> str | None:
    """A text field as written (a browser sends a text area's line breaks as CR LF: read as LF);
    empty: None."""
    text = submitted.get(field.name, "").replace("\r\n", "\n")
    return text or None


def _number(value: float | int) -> str:
    """A number as the form shows it: the shortest text that reads back to the same number."""
    return repr(value)
