"""A human seat's day as a page: the morning's facts from the Observation, what a rival wrote as
text, a label for every field of the form, and a refused form shown with its message and the
fields as typed."""

from __future__ import annotations

import pytest

from contestants.human.form import Refusal, day_form
from contestants.llm.prompts import event_line
from market.types import (
    EventNotice,
    Observation,
    ProductState,
    PublicMerchant,
    Rejection,
    RejectionCode,
    RivalMessage,
)
from seats.pages import day_page
from tests.contestants.test_human_form import SCENARIO  # a widget with a supplier and a gadget
from tests.page_reader import Node, parse

HOSTILE = '<script>window.hacked = 1</script><img src=x onerror="window.hacked = 2"> & "quoted"'
FORM = day_form(SCENARIO, talk=True)
EVENT = EventNotice(name="heat", kind="demand", product="gadget", start_day=3, end_day=5, multiplier=1.5)


@pytest.fixture
def morning(day_record) -> Observation:
    """Day 3 of 10 for "me", with 1,234.5 in cash; rival r1 at 19 and 8.5, sold 40 widgets
    so far; r2 bankrupt and hiding its prices; r1 wrote HOSTILE yesterday."""
    yesterday = day_record(
        merchant="me",
        day=2,
        prices={"widget": 21.0, "gadget": 9.0},
        units_sold={"widget": 17.0, "gadget": 4.0},
        revenue=393.0,
        net_worth=10_400.0,
        rejections=[Rejection(0, {}, "price must be a positive number", RejectionCode.PRICE_NOT_POSITIVE)],
    )
    return Observation(
        merchant="me",
        day=3,
        days=10,
        cash=1_234.5,
        reputation=0.61,
        receivables_due=80.0,
        receivables_pending=20.0,
        products=[
            ProductState("widget", 21.0, 10.0, 30.0, 12.0, 0, 0.0),
            ProductState("gadget", 9.0, 5.0, 8.0, 0.0, 0, 0.0, discount=0.2, discount_until=4),
        ],
        yesterday=yesterday,
        market=[
            PublicMerchant("me", {"widget": 21.0, "gadget": 9.0}, 0.61, None, False),
            PublicMerchant(
                "r1", {"widget": 19.0, "gadget": 8.5}, 0.55, {"widget": 40.0, "gadget": 2.0}, False
            ),
            PublicMerchant("r2", None, None, None, True),
        ],
        events=[EVENT],
        fixed_daily_cost=3.0,
        messages=[RivalMessage("r1", HOSTILE)],
    )


def _cells(page: Node, table: str, first: str) -> list[str]:
    """The cells of the row of table `table` whose first cell reads `first`."""
    rows = [row for row in page.one(id=table).all("tr") if row.children[0].content().strip() == first]
    assert len(rows) == 1, first
    return [cell.content().strip() for cell in rows[0].children]


def test_the_page_shows_the_morning(morning):
    page = parse(day_page(FORM, morning, action="/day"))
    assert page.one("h1").content() == "Day 3 of 10: me"
    assert _cells(page, "books", "cash") == ["cash", "1,234.50"]
    assert _cells(page, "books", "receivables due (collect them)")[1] == "80.00"
    assert _cells(page, "books", "net worth at the end of yesterday")[1] == "10,400.00"
    # price, promotion (0.2 off: 20%), unit cost, in stock, arriving, lead time
    assert _cells(page, "products", "gadget") == [
        "gadget",
        "9.00",
        "20% off until day 4",
        "5.00",
        "8",
        "0",
        "0",
    ]
    assert _cells(page, "products", "widget") == ["widget", "21.00", "", "10.00", "30", "12", "0"]
    # yesterday: price, sold, and nothing turned away, spoiled, late or returned
    assert _cells(page, "sales", "widget") == ["widget", "21.00", "17", "0", "0", "0", "0"]
    assert _cells(page, "money", "revenue") == ["revenue", "393.00"]
    assert [item.content() for item in page.one(id="refused").all("li")] == [
        "price must be a positive number"
    ]
    # the rivals: prices of widget and gadget, reputation, units sold so far
    assert _cells(page, "rivals", "r1") == ["r1", "19.00", "8.50", "0.55", "40", "2"]
    assert _cells(page, "rivals", "r2 (bankrupt)") == ["r2 (bankrupt)", *["hidden"] * 5]
    assert [item.content() for item in page.one(id="events").all("li")] == [event_line(EVENT)]
    assert "Your goal: the highest net worth at the end of day 10" in page.one("pre").content()


def test_a_rivals_words_are_text(morning):
    html = day_page(FORM, morning, action="/day")
    assert (
        "<script" not in html and "<img" not in html
    )  # the page runs nothing, and shows no element of theirs
    said = parse(html).one("ul", "messages").one("span", "said")
    assert said.content() == HOSTILE  # every character of it, as text


def test_without_talk_no_messages_and_no_message_field(morning):
    morning.messages = None
    page = parse(day_page(day_form(SCENARIO, talk=False), morning, action="/day"))
    assert not page.all("ul", "messages") and not page.all(id="message")


def test_every_field_has_its_label(morning):
    page = parse(day_page(FORM, morning, action="/seat/day"))
    form = page.one("form")
    assert form.attrs["action"] == "/seat/day" and form.attrs["method"] == "post"
    entries = [entry for entry in form.all() if entry.tag in ("input", "textarea")]
    # top to bottom as the market judges them: the first field at fault is the first one shown
    assert [e.attrs["id"] for e in entries] == [f.name for f in FORM.fields]
    for field in FORM.fields:
        entry = form.one(id=field.name)
        assert entry.attrs["name"] == field.name
        assert form.one("label", **{"for": field.name}).content() == field.label
        assert form.one(id=entry.attrs["aria-describedby"]).content() == field.hint
    # numbers are typed as text, so that whatever is typed reaches the market's checks
    assert form.one(id="price.widget").attrs["type"] == "text"
    assert form.one(id="collect").attrs["type"] == "checkbox"


def test_a_refused_form_comes_back_with_its_message_and_the_fields_as_typed(morning):
    typed = {"price.widget": f'"{HOSTILE}', "collect": "on", "message": HOSTILE, "order.gadget": "2.5"}
    refusal = Refusal(("order.gadget",), "units of gadget: order quantity must be a whole number of units")
    html = day_page(FORM, morning, action="/day", typed=typed, refusal=refusal)
    assert "<script" not in html
    page = parse(html)
    alert = page.one(role="alert")
    assert alert.content() == refusal.message
    assert page.one("main").children[1] is alert  # at the top, under the day's title
    assert page.one(id="price.widget").attrs["value"] == f'"{HOSTILE}'
    assert page.one(id="order.gadget").attrs["value"] == "2.5"
    assert page.one(id="message").content() == HOSTILE
    assert "checked" in page.one(id="collect").attrs
    assert [e.attrs["id"] for e in page.all(**{"aria-invalid": "true"})] == ["order.gadget"]
    # a fresh page has no message and empty fields
    fresh = parse(day_page(FORM, morning, action="/day"))
    assert not fresh.all(role="alert") and fresh.one(id="price.widget").attrs["value"] == ""
    assert "checked" not in fresh.one(id="collect").attrs
