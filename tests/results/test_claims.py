"""Claims checked against the record (results.scoring.claims): promises kept, broken or released,
facts true or false, on day records written by hand. Each expected outcome is worked out in a
comment from the module's rules and the numbers of the test."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.conduct import PricePromise, StatedFact
from market.types import DayRecord
from results.scoring.claims import check_claims
from tests.property_examples import examples


@pytest.fixture(name="posted", scope="module")
def posted_fixture(day_record):
    def posted(merchant: str, prices: dict[int, float], product: str = "tea") -> list[DayRecord]:
        """`merchant`'s records of the days given, posting `prices[day]` for `product`."""
        return [
            day_record(merchant=merchant, day=day, prices={product: price}) for day, price in prices.items()
        ]

    return posted


def promise(price: float, product: str = "tea", floor: float | None = None) -> PricePromise:
    return PricePromise(product=product, price=price, while_rivals_at_least=floor)


def outcomes(claims, days) -> list[tuple[str, int | None, float | None]]:
    return [(c.outcome, c.on_day, c.recorded) for c in check_claims(claims, days)]


# ---- promises -------------------------------------------------------------------------------


def test_a_promise_held_every_covered_day_is_kept_and_one_missed_is_broken_on_that_day(posted):
    # m0 posts 2.00 on days 1-4, then 1.80 on day 5. Written on day 1: covers days 2-5 (no later
    # promise), day 5 is off: broken on 5 at 1.80. Written on day 2 at 2.00 over the record
    # of days 1-4 only: kept, the last covered day 4.
    days = posted("m0", {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.0, 5: 1.8})
    assert outcomes([("m0", 1, promise(2.0))], days) == [("broken", 5, 1.8)]
    assert outcomes([("m0", 1, promise(2.0))], days[:4]) == [("kept", 4, None)]


@pytest.mark.parametrize(
    ("recorded", "said", "outcome"),
    [
        (0.80, 0.805, "kept"),  # 0.5% of 0.80 is 0.004: the half cent rules, 0.005 off is within
        (0.80, 0.795, "kept"),
        (0.80, 0.8051, "broken"),  # 0.0051 off
        (0.80, 0.7949, "broken"),
        (400.0, 401.99, "kept"),  # 0.5% of 400 is 2.00, above the half cent: 1.99 off is within
        (400.0, 402.0, "kept"),  # exactly 2.00 off
        (400.0, 402.01, "broken"),
        (400.0, 397.9, "broken"),
    ],
)
def test_the_tolerance_is_half_a_cent_or_half_a_percent_of_the_record(posted, recorded, said, outcome):
    days = posted("m0", {1: recorded, 2: recorded})
    assert check_claims([("m0", 1, promise(said))], days)[0].outcome == outcome
    fact = StatedFact(subject="price", product="tea", value=said)
    assert check_claims([("m0", 2, fact)], days)[0].outcome == {"kept": "true", "broken": "false"}[outcome]


def test_the_window_ends_on_the_day_of_the_next_promise_that_day_included(posted):
    # promises on day 1 (2.00) and day 3 (2.50). The first covers days 2-3 (3 included: the price
    # posted with the new words was under the old one), the second days 4-5.
    on_time = posted("m0", {1: 2.0, 2: 2.0, 3: 2.0, 4: 2.5, 5: 2.5})
    claims = [("m0", 1, promise(2.0)), ("m0", 3, promise(2.5))]
    assert outcomes(claims, on_time) == [("kept", 3, None), ("kept", 5, None)]
    # moving to 2.50 on day 3, the day it says so, breaks the first promise on day 3
    early = posted("m0", {1: 2.0, 2: 2.0, 3: 2.5, 4: 2.5, 5: 2.5})
    assert outcomes(claims, early) == [("broken", 3, 2.5), ("kept", 5, None)]
    # the windows come from the days written, not from the order the claims are given in
    assert outcomes(claims[::-1], early) == [("kept", 5, None), ("broken", 3, 2.5)]


def test_a_conditional_promise_is_released_by_a_rival_s_cut_from_the_next_day_on(posted):
    # m0 promises 2.00 on day 1 as long as no rival posts below 1.90, and posts 1.85 on day 3.
    mine = posted("m0", {1: 2.0, 2: 2.0, 3: 1.85})
    conditional = [("m0", 1, promise(2.0, floor=1.9))]
    # m1 cuts to 1.85 on day 2: m0 may answer on day 3: released, on the day of the cut, at its price
    assert outcomes(conditional, mine + posted("m1", {1: 2.0, 2: 1.85, 3: 1.85})) == [("released", 2, 1.85)]
    # a cut on the day the words were written releases it as well (read on day 2)
    assert outcomes(conditional, mine + posted("m1", {1: 1.7, 2: 2.0, 3: 2.0})) == [("released", 1, 1.7)]
    # m1 cuts on day 3 only, the day m0 moves: m0 could not have seen it: broken
    assert outcomes(conditional, mine + posted("m1", {1: 2.0, 2: 2.0, 3: 1.5})) == [("broken", 3, 1.85)]
    # 1.891 is below 1.90 by 0.009, within half a percent of 1.891 (0.00946): no cut
    assert outcomes(conditional, mine + posted("m1", {1: 2.0, 2: 1.891, 3: 2.0})) == [("broken", 3, 1.85)]
    # of two rivals cutting the same day, the lower price is recorded
    both = mine + posted("m1", {1: 2.0, 2: 1.8}) + posted("m2", {1: 2.0, 2: 1.6})
    assert outcomes(conditional, both) == [("released", 2, 1.6)]
    # the same promise without the condition is broken whatever rivals do
    assert outcomes([("m0", 1, promise(2.0))], both) == [("broken", 3, 1.85)]
    # m0's own price below 1.90 on day 1 is no rival's: broken
    assert outcomes(conditional, posted("m0", {1: 1.5, 2: 1.5})) == [("broken", 2, 1.5)]
    # a promise kept is kept, whatever rivals post
    kept = posted("m0", {1: 2.0, 2: 1.5, 3: 2.0}) + posted("m1", {1: 1.5, 2: 1.5, 3: 1.5})
    assert outcomes([("m0", 2, promise(2.0, floor=1.9))], kept) == [("kept", 3, None)]


def test_untested_and_uncheckable_promises(posted):
    days = posted("m0", {1: 2.0, 2: 2.0})
    # written on m0's last day: no day covered. About coffee, which the market does not sell.
    assert outcomes([("m0", 2, promise(2.0)), ("m0", 1, promise(2.0, "coffee"))], days) == [
        ("untested", None, None),
        ("uncheckable", None, None),
    ]


def test_promises_about_several_products_have_windows_of_their_own(day_record):
    days = [
        day_record(merchant="m0", day=day, prices={"tea": tea, "jam": jam})
        for day, tea, jam in ((1, 2.0, 5.0), (2, 2.0, 5.0), (3, 2.0, 4.0), (4, 3.0, 4.0))
    ]
    # tea at 2.00 on day 1 runs to day 4 (the jam promise of day 2 does not end it): broken on 4
    # at 3.00; jam at 5.00 on day 2 covers 3-4: broken on 3 at 4.00; jam at 4.00 on day 3: kept
    claims = [("m0", 1, promise(2.0)), ("m0", 2, promise(5.0, "jam")), ("m0", 3, promise(4.0, "jam"))]
    assert outcomes(claims, days) == [("broken", 4, 3.0), ("broken", 3, 4.0), ("kept", 4, None)]


def test_days_without_a_record_are_not_covered(posted):
    # m0 is closed on day 3 (no record): a promise of day 1 covers days 2 and 4, kept on 4; one of
    # day 4, its last record, covers nothing. m1's records do not count as m0's.
    days = posted("m0", {1: 2.0, 2: 2.0, 4: 2.0}) + posted("m1", {1: 9.0, 3: 9.0, 5: 9.0})
    assert outcomes([("m0", 1, promise(2.0)), ("m0", 4, promise(2.0))], days) == [
        ("kept", 4, None),
        ("untested", None, None),
    ]


# ---- facts ----------------------------------------------------------------------------------


def test_facts_are_held_against_the_record_of_the_day_they_speak_of(day_record):
    days = [
        day_record(
            merchant="m0",
            day=day,
            prices={"tea": price},
            unit_cost={"tea": cost},
            inventory={"tea": stock},
            cash_start=cash,
        )
        for day, price, cost, stock, cash in ((1, 2.0, 1.0, 30.0, 500.0), (2, 2.2, 1.5, 12.0, 520.0))
    ]

    def fact(subject, value, product="tea"):
        return StatedFact(subject=subject, product=product, value=value)

    claims = [
        ("m0", 2, fact("price", 2.2)),  # day 2's price: true
        ("m0", 2, fact("price", 2.0)),  # yesterday's price, said of today: false
        ("m0", 2, fact("unit_cost", 1.0)),  # day 2's cost is 1.50: false
        ("m0", 1, fact("unit_cost", 1.0)),  # true
        ("m0", 2, fact("stock", 30.0)),  # the stock at the start of day 2: day 1's 30 in the end
        ("m0", 2, fact("stock", 12.0)),  # day 2's own end of day stock: false
        ("m0", 1, fact("stock", 30.0)),  # nothing before day 1
        ("m0", 2, fact("cash", 520.0, None)),  # cash_start of day 2: true
        ("m0", 2, fact("cash", 520.0)),  # cash of a product
        ("m0", 2, fact("price", 2.2, None)),  # a price of no product
        ("m0", 2, fact("price", 2.2, "coffee")),  # not sold
        ("m0", 3, fact("price", 2.2)),  # no record of day 3
        ("m1", 2, fact("price", 2.2)),  # nor of m1
    ]
    assert outcomes(claims, days) == [
        ("true", 2, 2.2),
        ("false", 2, 2.2),
        ("false", 2, 1.5),
        ("true", 1, 1.0),
        ("true", 1, 30.0),
        ("false", 1, 30.0),
        ("uncheckable", None, None),
        ("true", 2, 520.0),
        *[("uncheckable", None, None)] * 5,
    ]


# ---- a property -------------------------------------------------------------------------------


@settings(max_examples=examples(20), deadline=None)
@given(
    said=st.dictionaries(st.integers(1, 12), st.floats(0.5, 500.0), min_size=1, max_size=6),
    after=st.integers(0, 2),
)
def test_posting_the_price_in_force_keeps_every_promise_and_a_shift_breaks_them(posted, said, after):
    """A merchant that posts, each day, the price of its latest promise written before that day
    keeps every promise that covers a day; moved by 1% and a cent, above the tolerance, every
    such promise is broken on its first covered day. The record runs `after` days past the
    last promise."""
    days = max(said) + after
    claims = [("m0", day, promise(price)) for day, price in sorted(said.items())]
    in_force = {
        t: max((d, p) for d, p in said.items() if d < t)[1] for t in range(1, days + 1) if min(said) < t
    }
    records = posted("m0", {t: in_force.get(t, 1.0) for t in range(1, days + 1)})
    first_covered = {day: day + 1 for day in said if day < days}
    assert [c.outcome for c in check_claims(claims, records)] == [
        "kept" if day in first_covered else "untested" for _, day, _ in claims
    ]
    shifted = posted("m0", {t: in_force.get(t, 1.0) * 1.01 + 0.01 for t in range(1, days + 1)})
    assert [(c.outcome, c.on_day) for c in check_claims(claims, shifted)] == [
        ("broken", first_covered[day]) if day in first_covered else ("untested", None) for _, day, _ in claims
    ]
