"""What happened in a match, as a reader asks it: the days worth opening. A merchant's price
falling sharply against its rivals' (where a price war may start), stock-outs, spoiled goods,
faults and goals missed, each a run of days with the merchant and a line on what happened;
in a judged match, its conduct too: what merchants proposed, accepted, threatened or divided in
their messages, the promises they broke and the false things they told their rivals."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from common.conduct import Label, Words
from market.daylog import DayLog
from results.presentation.conduct_tables import claim_text
from results.records import Fault, GoalResult
from results.scoring.conduct import MatchConduct

SHARP_CUT = 0.10  # a price that falls by a tenth or more in a day against the rivals' mean price
SPOKEN: tuple[Label, ...] = ("proposal", "acceptance", "threat", "market_division")
"""The labels of coordination in words: a message that carries one is an incident."""
QUOTED = 100  # characters of a merchant's words an incident quotes


@dataclass(frozen=True)
class Incident:
    """Days `first` to `last` of `merchant`: what `kind` of thing happened, and a line on it."""

    first: int
    last: int
    merchant: str
    kind: str  # "price cut", "stock-out", "spoiled", "fault", "goal missed", a label, "promise broken", ...
    text: str
    anchor: str | None = None  # the words' id on the day's page (words_anchor); None: the merchant's

    @property
    def days(self) -> str:
        return f"day {self.first}" if self.first == self.last else f"days {self.first}–{self.last}"


def incidents(
    days: DayLog, faults: list[Fault], goals: list[GoalResult], conduct: MatchConduct | None = None
) -> list[Incident]:
    """Every incident of a match (with `conduct`, a judged match's: conduct_incidents), by
    first day, then merchant."""
    found = [
        *_price_cuts(days),
        *_runs(days, "lost_sales", "stock-out", "{total:g} customers of {product} turned away: out of stock"),
        *_runs(days, "spoiled", "spoiled", "{total:g} units of {product} spoiled"),
        *_fault_runs(faults),
        *(_missed(goal, int(days.day.max()) if len(days) else 0) for goal in goals if not goal.met),
        *(conduct_incidents(conduct) if conduct is not None else ()),
    ]
    return sorted(found, key=lambda i: (i.first, i.merchant, i.kind))


def words_anchor(words: Words) -> str:
    """The id of an item of words on its day's page: merchant, source and index tell the items
    of one day apart."""
    return f"words-{words.merchant}-{words.source}-{words.index}"


def conduct_incidents(conduct: MatchConduct) -> Iterator[Incident]:
    """A judged match's conduct as incidents, each on the day it happened:

    - a message its judges labelled with coordination in words (SPOKEN: a proposal, an
      acceptance, a threat, a division of markets), on the day it was sent, kind the labels
      given, quoting it; words no rival reads (notes, reasoning) are no incident, as they are
      not in the verdict: the day's page marks them;
    - a promise broken, on the first day that did not post the price (on_day), naming the day
      it was made and the price posted;
    - a false statement, on the day it was told, with the record's value.
    Each points at its words on the day's page (words_anchor), a broken promise at the merchant."""
    for words, said in conduct.items.items():
        spoken = [label for label in said.labels if label in SPOKEN]
        if words.source == "message" and spoken:
            kind = ", ".join(label.replace("_", " ") for label in spoken)
            yield Incident(
                words.day, words.day, words.merchant, kind, _quoted(words.text), words_anchor(words)
            )
    told = {(w.merchant, w.day): w for w in conduct.items if w.source == "message"}
    for checked in conduct.claims:
        said_in = told.get((checked.merchant, checked.day))
        recorded = "" if checked.recorded is None else f"{checked.recorded:g}"
        if checked.outcome == "broken" and checked.on_day is not None:
            text = f"{claim_text(checked.claim)} (made on day {checked.day}); posted {recorded}"
            yield Incident(checked.on_day, checked.on_day, checked.merchant, "promise broken", text)
        elif checked.outcome == "false":
            text = f"told its rivals {claim_text(checked.claim)}; the record: {recorded}"
            anchor = None if said_in is None else words_anchor(said_in)
            yield Incident(checked.day, checked.day, checked.merchant, "false statement", text, anchor)


def _quoted(text: str) -> str:
    """A merchant's words in quotes, cut to QUOTED characters."""
    return f"“{text if len(text) <= QUOTED else text[: QUOTED - 1] + '…'}”"


def _by_seat(days: DayLog, values: np.ndarray) -> np.ndarray:
    """values[row] laid out as [seat, day - 1], NaN where a merchant has no row that day."""
    table = np.full((len(days.merchants), int(days.day.max()) if len(days) else 0), np.nan)
    table[days.seat, days.day - 1] = values
    return table


def _price_cuts(days: DayLog) -> Iterator[Incident]:
    """Days on which a merchant's price of a product fell by SHARP_CUT or more against the
    mean of its rivals' (all of them selling it that day and the day before) and fell itself."""
    if len(days.merchants) < 2 or not len(days):
        return
    for j, product in enumerate(days.products):
        prices = _by_seat(days, days.product_values("prices")[:, j])
        prices[prices <= 0] = np.nan  # not selling it
        for seat, merchant in enumerate(days.merchants):
            rivals = np.delete(prices, seat, axis=0).mean(axis=0)  # NaN where a rival is missing
            relative = prices[seat] / rivals
            with np.errstate(invalid="ignore"):  # NaN compares as no cut
                cut = (relative[1:] <= relative[:-1] * (1 - SHARP_CUT)) & (
                    prices[seat, 1:] < prices[seat, :-1]
                )
            for d in np.flatnonzero(cut) + 2:  # the day of the cut (days count from 1)
                before, after = prices[seat, d - 2], prices[seat, d - 1]
                against = relative[d - 1] / relative[d - 2] - 1
                yield Incident(
                    int(d),
                    int(d),
                    merchant,
                    "price cut",
                    f"cut {product} from {before:g} to {after:g} ({after / before - 1:+.0%}; "
                    f"{against:+.0%} against its rivals' mean, {rivals[d - 1]:.4g})",
                )


def _runs(days: DayLog, field: str, kind: str, text: str) -> Iterator[Incident]:
    """Each run of consecutive days on which a merchant's `field` of a product was positive."""
    values = days.product_values(field)
    for j, product in enumerate(days.products):
        table = _by_seat(days, values[:, j])
        for seat, merchant in enumerate(days.merchants):
            for first, last in spans(np.flatnonzero(table[seat] > 0) + 1):
                total = float(np.nansum(table[seat, first - 1 : last]))
                yield Incident(
                    first, last, merchant, kind, text.format(total=round(total, 2), product=product)
                )


def _fault_runs(faults: list[Fault]) -> Iterator[Incident]:
    by_what: dict[tuple[str, str], list[Fault]] = {}
    for fault in faults:
        by_what.setdefault((fault.merchant, str(fault.kind)), []).append(fault)
    for (merchant, kind), found in by_what.items():
        details = {f.day: f.detail for f in found}
        for first, last in spans(np.array(sorted(details))):
            count = last - first + 1
            more = f" (and {count - 1} more day{'s' if count > 2 else ''})" if count > 1 else ""
            what = f"{kind}: {details[first]}{more}"
            yield Incident(first, last, merchant, "fault", what)


def _missed(goal: GoalResult, last_day: int) -> Incident:
    value = "no value" if goal.value is None else f"{goal.value:,.4g}"
    return Incident(last_day, last_day, goal.merchant, "goal missed", f"{goal.goal}: reached {value}")


def spans(days: np.ndarray) -> Iterator[tuple[int, int]]:
    """Runs of consecutive days in a sorted array, as (first, last)."""
    if not len(days):
        return
    breaks = np.flatnonzero(np.diff(days) > 1)
    starts = [int(days[0]), *(int(days[b + 1]) for b in breaks)]
    ends = [*(int(days[b]) for b in breaks), int(days[-1])]
    yield from zip(starts, ends, strict=True)
