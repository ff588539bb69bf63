"""The pages of a human seat. A day's page: what the merchant knows this morning (its books,
yesterday's results, the rivals as of yesterday, their messages, the events, the market's rules
and the goal), in tables built from its Observation, then the day's form
(contestants.human.form). A question's page: a recall or off-path question and one number to
answer it with. A waiting page: who of the session's people have come to their seats.

Every page stands in a frame (`Frame`): its match, the outcome of the person's last post, the
seconds left to send it, and a reload when they run out (a meta refresh: the pages run no
script). A page's form carries the page's key (contestants.base.DeskKey) in hidden fields
(`key_fields`), so that what is posted can be told to be for the page open now.

The words a model reads are reused where the page says the same thing: the market's rules and
goal (contestants.llm.prompts.market_section) and each event's line (`event_line`). The page is
rendered with autoescaping, so what a rival wrote, or what was typed into the form, is shown as
text, never run; the page itself runs no script.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from jinja2 import Environment, PackageLoader, StrictUndefined

from contestants.base import ANSWER, DeskAsk, DeskKey, OffPathQuestion, Question
from contestants.desk import OpenPage
from contestants.human.form import DayForm, FormField, Refusal
from contestants.llm.prompts import event_line, market_section
from market.types import Observation

TEMPLATES = Environment(
    loader=PackageLoader("seats", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.filters["money"] = lambda value: "hidden" if value is None else f"{value:,.2f}"
TEMPLATES.filters["units"] = lambda value: f"{value:g}"

HEADINGS = {
    "collecting": "Collecting",
    "prices": "Prices",
    "orders": "Orders",
    "advertising": "Advertising",
    "promotions": "Promotions",
    "words": "Words",
}
"""The heading of each group of fields (FormField.group), in the form's order: the page reads
top to bottom as the market judges the operations (cash spent in that order)."""


LOOK_AGAIN_SECONDS = 1
"""How often a waiting page reloads itself to look for the person's next page."""


@dataclass(frozen=True)
class Frame:
    """What a page shows beside its own content: the `match` it is of (None: not said), the
    `notice` of the person's last post (None: none), the `seconds_left` to send it (None: no
    deadline), after how many seconds it reloads itself (`reload`; None: never), and the
    `hidden` fields its form carries."""

    match: str | None = None
    notice: str | None = None
    seconds_left: int | None = None
    reload: int | None = None
    hidden: Mapping[str, str] = field(default_factory=dict)


KEY_FIELDS = ("page.match", "page.day", "page.asked", "page.attempt")
"""The hidden fields that name the page a form is for: no field of a form has such a name
(contestants.human.form names them for what they fill, and a question's is ANSWER)."""


def key_fields(key: DeskKey) -> dict[str, str]:
    """The page's key as its form carries it; the seat's merchant is not among them (it is the
    link's), nor a match that is None."""
    named = {"page.day": str(key.day), "page.asked": key.asked, "page.attempt": str(key.attempt)}
    return named if key.match is None else {"page.match": key.match, **named}


def open_page(
    opened: OpenPage, action: str, notice: str | None = None, typed: Mapping[str, str] | None = None
) -> str:
    """The page `opened` as its person sees it, its form posted to `action`: with its key in
    hidden fields, its seconds left, rounded up, and a reload when they have run out. With
    `typed` (what was sent for it and not taken), its fields as typed there and no refusal."""
    asked = opened.asked
    if typed is not None:
        asked = replace(asked, typed=dict(typed), refusal=None)
    left = None if opened.seconds_left is None else math.ceil(opened.seconds_left)
    frame = Frame(
        asked.key.match, notice, left, None if left is None else max(left, 1), key_fields(asked.key)
    )
    if asked.question is not None:
        return question_page(asked, action, frame)
    assert asked.form is not None and asked.observation is not None, "a day's page has its form"
    return day_page(asked.form, asked.observation, action, asked.typed, asked.refusal, frame)


def day_page(
    form: DayForm,
    observation: Observation,
    action: str,
    typed: Mapping[str, str] | None = None,
    refusal: Refusal | None = None,
    frame: Frame = Frame(),
) -> str:
    """The page of the observation's day, its form posted to `action`; after a `refusal`, its
    message at the top and the fields as `typed`."""
    o = observation
    groups: dict[str, list[FormField]] = {}
    for entry in form.fields:
        groups.setdefault(entry.group, []).append(entry)
    return TEMPLATES.get_template("day.html.j2").render(
        o=o,
        action=action,
        products=[p.product for p in o.products],
        rivals=[m for m in o.market if m.merchant != o.merchant],
        events=[event_line(e) for e in o.events],
        market=market_section(form.scenario, o.days, [p.unit_cost for p in o.products]),
        groups=[(HEADINGS[group], fields) for group, fields in groups.items()],
        typed=typed or {},
        refusal=refusal,
        invalid=set(refusal.fields) if refusal else set(),
        frame=frame,
    )


def question_page(asked: DeskAsk, action: str, frame: Frame = Frame()) -> str:
    """The page of the question `asked` (before the day's form of its key's day), its one field
    (ANSWER) labelled with what it asks; after a refusal, its message and the answer as typed."""
    assert asked.question is not None, "a question's page has its question"
    said, label = question_words(asked.question)
    answer = FormField(ANSWER, label, "number", "a number; empty: you do not know", "question")
    return TEMPLATES.get_template("question.html.j2").render(
        day=asked.key.day,
        merchant=asked.key.merchant,
        said=said,
        f=answer,
        action=action,
        typed=asked.typed,
        refusal=asked.refusal,
        invalid=set(asked.refusal.fields) if asked.refusal else set(),
        frame=frame,
    )


def question_words(question: Question) -> tuple[str, str]:
    """What the question's page says of it, and its field's label (what the number is)."""
    if isinstance(question, OffPathQuestion):
        q = question
        was = "" if q.posted is None else f" (it posted {q.posted:g})"
        return (
            f"Suppose {q.rival} had posted {q.price:g} for {q.product} yesterday{was}. What price "
            f"would you post for {q.product} today? Your answer is not posted: your decision "
            "for today comes next.",
            f"the price you would post for {q.product}",
        )
    d, p = question.day, question.product
    label = {
        "cash": f"your cash at the end of day {d}",
        "inventory": f"units of {p} in your stock at the end of day {d}",
        "price": f"your price of {p} at the end of day {d}",
        "ordered": f"units of {p} you ordered on day {d}",
    }[question.fact]
    return f"From memory, before your decision for today: {label}?", label


def waiting_page(
    merchant: str, people: Sequence[tuple[str, bool]], action: str, notice: str | None, come: bool
) -> str:
    """The page of a seat with nothing to fill now (before its match, between its pages): the
    session's `people`, each seat's merchant and whether its person has come, in their order,
    and, until its own person has (`come`), the button that says they have; once they have, it
    reloads itself to `action` every LOOK_AGAIN_SECONDS."""
    # until they have come, no reload: it would race their click on the button
    frame = Frame(notice=notice, reload=LOOK_AGAIN_SECONDS if come else None)
    return TEMPLATES.get_template("waiting.html.j2").render(
        merchant=merchant, people=people, action=action, frame=frame, refusal=None, come=come
    )
