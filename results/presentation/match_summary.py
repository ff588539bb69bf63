"""One stored match as `arena show` gives it: the whole record as JSON for scripts, a day of it
with its model calls' steps, and the tables of its record that only the command shows (the
others are results.presentation.views', shared with the report and the viewer)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from market.daylog import CompetitorDays
from market.types import record_adapter
from results.presentation import views
from results.records import ModelCallRecord, RecallResult, TranscriptRecord
from results.storage import store
from results.storage.schema import row_json


def match_json(detail: store.MatchDetail, metrics: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    """The match's whole record; `metrics` by merchant and name (views.by_merchant). Each
    result says whether a person played its seat (`person`; their time is the metric
    `seconds_per_day`)."""
    return {
        "match": row_json(detail.match),
        "results": [r.model_dump() | {"person": r.merchant in detail.people} for r in detail.results],
        "metrics": metrics,
        "market": detail.market.model_dump(),
        "not_applicable": [n.model_dump() for n in detail.notes],
        "goals": [g.model_dump() for g in detail.goals],
        "competitors": _competitors_json(detail.days.competitors),
        "faults": [f.model_dump() for f in detail.faults],
        "recall_questions": [r.model_dump() for r in detail.recalls],
        "calls": [c.model_dump() for c in detail.calls],
        "days": [record_adapter.dump_python(d, mode="json") for d in detail.days],
        "deviation": None
        if detail.deviation is None
        else {
            "probe": detail.deviation.probe.model_dump(),
            "faults": [f.model_dump() for f in detail.deviation.faults],
            "calls": [c.model_dump() for c in detail.deviation.calls],
            "days": [record_adapter.dump_python(d, mode="json") for d in detail.deviation.days_played],
        },
    }


def _competitors_json(scripted: CompetitorDays | None) -> dict[str, Any] | None:
    if scripted is None:
        return None
    return {
        "names": list(scripted.names),
        # [day][competitor][product]; null: a product it does not sell
        "prices": [[[None if p != p else p for p in row] for row in day] for day in scripted.prices.tolist()],
        "units_sold": scripted.units_sold.tolist(),
    }


def day_json(detail: store.MatchDetail, day: int, transcript: Sequence[TranscriptRecord]) -> dict[str, Any]:
    """One day of the match: each merchant's record, and every step of its model calls."""
    return {
        "match": row_json(detail.match),
        "day": day,
        "records": [record_adapter.dump_python(d, mode="json") for d in detail.days if d.day == day],
        "transcript": [step.model_dump(mode="json") for step in transcript],
    }


def calls_made_table(calls: Sequence[ModelCallRecord]) -> views.TableModel:
    """Model calls per merchant and purpose, how they were made: what reproduces them (the
    model asked and the one that answered, sampling, seed, prompts)."""
    headers = [
        "merchant",
        "purpose",
        "model",
        "answered by",
        "temperature",
        "top_p",
        "seed",
        "prompt templates",
    ]
    rows = [
        [
            merchant,
            purpose,
            _distinct(c.model for c in mine),
            _distinct(c.served_model for c in mine),
            _distinct(c.temperature for c in mine),
            _distinct(c.top_p for c in mine),
            _distinct(c.seed for c in mine),
            _distinct(c.prompt_version for c in mine),
        ]
        for merchant, purpose, mine in views.calls_by_merchant_and_purpose(calls)
    ]
    return _table("how the calls were made", headers, rows)


def _distinct(values: Iterable[object]) -> str:
    """Each value once, in order of appearance ("—" for None: not sent, not reported)."""
    return ", ".join(
        dict.fromkeys(
            "—" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
            for value in values
        )
    )


def recalls_table(recalls: Sequence[RecallResult]) -> views.TableModel:
    """Each recall question: what was asked, the truth, the answer and its error."""
    rows = []
    for r in recalls:
        when = "on" if r.fact == "ordered" else "at end of"
        asked = f"{r.fact}{'[' + r.product + ']' if r.product else ''} {when} day {r.asked_day}"
        answer = "—" if r.answer is None else f"{r.answer:,.2f}"
        error = "no answer" if r.relative_error is None else f"{r.relative_error:.1%}"
        rows.append([str(r.day), r.merchant, asked, f"{r.truth:,.2f}", answer, error])
    return _table("recall questions", ["day", "merchant", "asked", "truth", "answer", "error"], rows)


def both_paths_table(detail: store.MatchDetail) -> views.TableModel:
    """A probed match's prices on path and on the deviated path, from the day before the
    deviation to the end."""
    path = detail.deviation
    assert path is not None
    on_path = {(d.day, d.merchant): d.prices for d in detail.days}
    rows = [
        [
            str(d.day),
            d.merchant,
            views.per_product(on_path.get((d.day, d.merchant), {}), "{:.2f}"),
            views.per_product(d.prices, "{:.2f}"),
        ]
        for d in path.days_played
        if d.day >= path.probe.day - 1
    ]
    return _table("both paths", ["day", "merchant", "prices on path", "prices deviated"], rows)


def days_table(detail: store.MatchDetail) -> views.TableModel:
    """Every merchant's day: prices, sales, stock, money, reputation, and its fault and the
    operations refused."""
    faults = {(f.day, f.merchant): f for f in detail.faults}
    rows = []
    for d in detail.days:
        notes = [f"{f.kind}: {f.detail}" for f in [faults.get((d.day, d.merchant))] if f]
        notes += [
            r.reason for r in d.rejections if r.index != -1
        ]  # the decision as a whole: its fault says why
        rows.append(
            [
                str(d.day),
                d.merchant,
                views.per_product(d.prices, "{:.2f}"),
                views.per_product(d.units_sold),
                views.per_product(d.lost_sales),
                views.per_product(d.inventory),
                views.money(d.cash_end),
                views.money(d.net_worth),
                f"{d.reputation:.2f}",
                "; ".join(notes),
            ]
        )
    headers = ["day", "merchant", "prices", "sold", "lost", "stock", "cash", "net worth", "rep.", "notes"]
    return _table("day by day", headers, rows)


def _table(title: str, headers: list[str], rows: list[list[str]]) -> views.TableModel:
    return views.TableModel(title, [views.Header(header) for header in headers], [rows])
