"""A day's page at a human seat: what the merchant knows this morning (its books, yesterday's
results, the rivals as of yesterday, their messages, the events, the market's rules and the
goal), in tables built from its Observation, then the day's form (contestants.human.form).

The words a model reads are reused where the page says the same thing: the market's rules and
goal (contestants.llm.prompts.market_section) and each event's line (`event_line`). The page is
rendered with autoescaping, so what a rival wrote, or what was typed into the form, is shown as
text, never run; the page itself runs no script.
"""

from __future__ import annotations

from collections.abc import Mapping

from jinja2 import Environment, PackageLoader, StrictUndefined

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


def day_page(
    form: DayForm,
    observation: Observation,
    action: str,
    typed: Mapping[str, str] | None = None,
    refusal: Refusal | None = None,
) -> str:
    """The page of the observation's day, its form posted to `action`; after a `refusal`, its
    message at the top and the fields as `typed`."""
    o = observation
    groups: dict[str, list[FormField]] = {}
    for field in form.fields:
        groups.setdefault(field.group, []).append(field)
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
    )
