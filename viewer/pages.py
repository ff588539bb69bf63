"""What each page of the viewer shows, read from the record (results.storage.store,
results.leaderboard) and laid out by the tables and charts the CLI and the report use
(results.presentation.views and .match_charts). Each function returns its template's context;
a match or tournament that is not there raises results.errors.NotFound."""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine

from market.types import DayRecord
from results import leaderboard
from results.errors import NotFound
from results.presentation import views
from results.presentation.incidents import incidents
from results.presentation.match_charts import Palette, day_series, match_part, price_of, seat_label
from results.presentation.plotly_charts import line_figure
from results.presentation.report_page import LabelledWords
from results.report import conduct_part, sweep_part
from results.scoring import sweeps
from results.scoring.composite import ScoringWeights
from results.scoring.ratings import LeaderboardRow
from results.storage import store
from results.storage.schema import RunProgressRow, stored_id
from tournaments.config import stored_tournament

PAGE_SIZE = 50  # matches or days a page lists
SILENCE_SECONDS = 60  # a run that has written nothing for this long may have died


@dataclass(frozen=True)
class Pages:
    """Page `number` (from 1) of `total` items shown `PAGE_SIZE` at a time."""

    number: int
    total: int

    @property
    def count(self) -> int:
        return max(1, math.ceil(self.total / PAGE_SIZE))

    @property
    def offset(self) -> int:
        return (self.number - 1) * PAGE_SIZE

    def check(self, what: str) -> Pages:
        if self.number > self.count:
            raise NotFound(f"{what} has {self.count} pages, not {self.number}")
        return self


@dataclass(frozen=True)
class Progress:
    """Where a tournament's run stands: matches stored of planned, matches in play and days
    played (as the run last noted them: RunProgressRow), what it paid against its budget, and
    while it runs the time left at its pace so far."""

    status: str
    done: int
    planned: int
    playing: int
    days_played: int | None  # None: the run never noted its days (an older arena's)
    days_planned: int | None
    tokens: int
    cost: float
    budget: str  # what the budget allows, or "" without one
    time_left: str  # an estimate while it runs, else ""
    silent_since: str  # while it is said to run: when the run last wrote where it stood, if long ago

    @property
    def left(self) -> int:
        return max(self.planned - self.done, 0)

    def as_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "left": self.left, "cost": round(self.cost, 6)}


def home(engine: Engine) -> dict[str, Any]:
    tournaments = store.list_tournaments(engine)
    return {
        "title": "arena",
        "follow": True,
        "tournaments": [(t, store.count_matches(engine, stored_id(t.id))) for t in reversed(tournaments)],
    }


def progress(engine: Engine, tournament_id: int, now: datetime | None = None) -> Progress:
    row = store.get_tournament(engine, tournament_id)
    done = store.count_matches(engine, tournament_id)
    run = store.run_progress(engine, tournament_id)
    tokens, cost = store.spent(engine, tournament_id)
    spec = stored_tournament(row).spec
    budget = spec.budget if spec is not None else None
    allowed = []
    if budget is not None and budget.cost_usd is not None:
        allowed.append(f"USD {budget.cost_usd:,.2f}")
    if budget is not None and budget.tokens is not None:
        allowed.append(f"{budget.tokens:,} tokens")
    running = row.status == "running"
    now = now or datetime.now(UTC)
    silent = run is not None and running and (now - run.updated_at).total_seconds() > SILENCE_SECONDS
    return Progress(
        status=row.status,
        done=done,
        planned=row.planned_matches,
        playing=run.matches_playing if run is not None and running else 0,
        days_played=run.days_played if run is not None else None,
        days_planned=run.days_planned if run is not None else None,
        tokens=tokens,
        cost=cost,
        budget=" or ".join(allowed),
        time_left=_time_left(run, now) if run is not None and running and not silent else "",
        silent_since=f"{run.updated_at:%Y-%m-%d %H:%M:%S} UTC" if run is not None and silent else "",
    )


def _time_left(run: RunProgressRow, now: datetime) -> str:
    """At this run's pace so far (the days tell it better than the matches, which end in
    bursts): the time since it started over the days it played, times the days left."""
    played = run.days_played - run.days_at_start
    if played <= 0 or run.days_played >= run.days_planned:
        return ""
    seconds = (now - run.started_at).total_seconds() / played * (run.days_planned - run.days_played)
    if seconds < 90:
        return f"about {max(round(seconds), 1)} s"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


class Leaderboards:
    """Each tournament's leaderboard as of a version of the record (store.changes), computed
    once a version: its bootstrap intervals take a second or two on a large record, far more
    than any other part of a page. A page asked for while the record has moved on gets the
    last one computed at once, marked as being brought up to date, while a thread computes
    the new one; `refreshed` counts those, so that a page open in a browser reads itself
    again when one is done."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.refreshed = 0
        self._kept: dict[tuple[int, ScoringWeights, float], tuple[tuple[int, ...], list[LeaderboardRow]]] = {}
        self._busy: set[tuple[int, ScoringWeights, float]] = set()
        self._first: dict[tuple[int, ScoringWeights, float], threading.Lock] = {}
        self._lock = threading.Lock()

    def rows(
        self, tournament_id: int, weights: ScoringWeights, confidence: float
    ) -> tuple[list[LeaderboardRow], bool]:
        """The rows (ties judged at `confidence`), and whether they are those of the record as it is now."""
        key, version = (tournament_id, weights, confidence), store.changes(self.engine)
        with self._lock:
            kept = self._kept.get(key)
            first = self._first.setdefault(key, threading.Lock())
        if kept is None:
            with first:  # the first is computed once, however many ask for it meanwhile
                with self._lock:
                    kept = self._kept.get(key)
                if kept is None:
                    rows = leaderboard.leaderboard(
                        self.engine, tournament_id, weights=weights, confidence=confidence
                    )
                    with self._lock:
                        self._kept[key] = (version, rows)
                    return rows, True
        with self._lock:
            if kept[0] != version and key not in self._busy:
                self._busy.add(key)
                threading.Thread(target=self._refresh, args=(key, version), daemon=True).start()
        return kept[1], kept[0] == version

    def warm(self) -> None:
        """Compute every tournament's leaderboard now: no reader of a tournament's page then
        waits for one (while a run adds matches, the last one is shown as the next is made)."""
        for row in reversed(store.list_tournaments(self.engine)):
            stored = stored_tournament(row)
            self.rows(stored_id(row.id), stored.scoring, stored.confidence)

    def _refresh(self, key: tuple[int, ScoringWeights, float], version: tuple[int, ...]) -> None:
        try:
            rows = leaderboard.leaderboard(self.engine, key[0], weights=key[1], confidence=key[2])
            with self._lock:
                self._kept[key] = (version, rows)
                self.refreshed += 1
        finally:
            with self._lock:
                self._busy.discard(key)


def tournament(
    engine: Engine, leaderboards: Leaderboards, tournament_id: int, page: int, metric: str | None = None
) -> dict[str, Any]:
    """The tournament's page; a sweep's heat map of `metric` (results.report.sweep_part)."""
    row = store.get_tournament(engine, tournament_id)
    stored = stored_tournament(row)
    rows, current = leaderboards.rows(tournament_id, stored.scoring, stored.confidence)
    pages = Pages(page, store.count_matches(engine, tournament_id)).check(f"tournament {tournament_id}")
    matches = store.list_matches(engine, tournament_id, pages.offset, PAGE_SIZE)
    return {
        "title": f"{row.name}: tournament {tournament_id}",
        "follow": True,
        "tournament": row,
        "colors": _colors(engine, tournament_id),
        "leaderboard": views.leaderboard_table(rows, "leaderboard"),
        "leaderboard_current": current,
        "sweep": sweep_part(engine, tournament_id, metric),
        "sweep_metrics": sweeps.ALL_METRICS,
        "progress": progress(engine, tournament_id),
        "matches": matches,
        "lineups": store.lineups(engine, [stored_id(m.id) for m in matches]),
        "pages": pages,
        "problem": stored.problem,
    }


def match(engine: Engine, match_id: int, page: int, with_calls: bool = True) -> dict[str, Any]:
    detail = store.match_detail(engine, match_id, with_calls)
    row = store.get_tournament(engine, detail.match.tournament_id)
    scenarios, notes = stored_tournament(row).scenarios()
    colors = _colors(engine, detail.match.tournament_id)
    part = match_part(detail, scenarios.of(detail.match), colors, store.metrics(engine, match_id=match_id))
    last = int(detail.days.day.max()) if len(detail.days) else 0
    pages = Pages(page, last).check(f"match {match_id}")
    same = store.same_draw(engine, detail.match)
    lineups = store.lineups(engine, [stored_id(m.id) for m in same])
    shown = range(pages.offset + 1, min(pages.offset + PAGE_SIZE, last) + 1)
    conduct = conduct_part(engine, detail)
    return {
        "title": f"match {match_id}: {detail.match.scenario}",
        "tournament": row,
        "colors": colors,
        "part": part,
        "notes": notes,
        "conduct": conduct,
        "incidents": incidents(
            detail.days, detail.faults, detail.goals, conduct.conduct if conduct is not None else None
        ),
        "same_draw": [(m, lineups[stored_id(m.id)]) for m in same],
        "days": _days_table(detail.days.records(_rows_of_days(detail.days, shown))),
        "pages": pages,
        "last_day": last,
    }


def compare(engine: Engine, first: int, second: int) -> dict[str, Any]:
    """Two matches' seats on the same charts: the first match's lines solid, the second's dashed."""
    shown = [store.match_detail(engine, m, with_calls=False) for m in (first, second)]
    colors = _colors(engine, *{d.match.tournament_id for d in shown})
    styles = [
        {
            r.merchant: (
                f"match {d.match_id} · {seat_label(r.merchant, r.contestant)}",
                colors[r.contestant],
                n == 1,
            )
            for r in sorted(d.results, key=lambda r: r.merchant)
        }
        for n, d in enumerate(shown)
    ]
    products = dict.fromkeys(p for d in shown for p in d.days.products)
    paths: list[tuple[str, Any]] = [
        *((f"Price: {product}", price_of(product)) for product in products),
        ("Units sold (all products)", lambda r: sum(r.units_sold.values())),
        ("Net worth", lambda r: r.net_worth),
    ]
    return {
        "title": f"matches {first} and {second}",
        "matches": shown,
        "colors": colors,
        "results": [views.results_table(d.match, d.results, d.people) for d in shown],
        "charts": [
            line_figure(
                [
                    series
                    for d, style in zip(shown, styles, strict=True)
                    for series in day_series(d.days, style, value)
                ],
                title=title,
            )
            for title, value in paths
        ],
    }


def _rows_of_days(days: Any, shown: range) -> list[int]:
    return [r for r, day in enumerate(days.day.tolist()) if day in shown]


def _days_table(records: Sequence[DayRecord]) -> list[dict[str, Any]]:
    """A row per merchant-day: what it posted and sold, and its money."""
    return [
        {
            "day": r.day,
            "merchant": r.merchant,
            "prices": views.per_product(r.prices),
            "sold": views.per_product(r.units_sold),
            "lost": views.per_product(r.lost_sales),
            "cash": views.money(r.cash_end),
            "net_worth": views.money(r.net_worth),
            "refused": len(r.rejections),
        }
        for r in records
    ]


def day(engine: Engine, match_id: int, day_number: int) -> dict[str, Any]:
    detail = store.match_detail(engine, match_id, with_calls=False)
    last = int(detail.days.day.max()) if len(detail.days) else 0
    if not 1 <= day_number <= last:
        raise NotFound(f"match {match_id} has no day {day_number} (its days: 1 to {last})")
    records = detail.days.records(_rows_of_days(detail.days, range(day_number, day_number + 1)))
    steps = store.transcript(engine, match_id, day_number)
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    said = detail.days.said()
    conduct = conduct_part(engine, detail)
    return {
        "title": f"match {match_id}, day {day_number}",
        "not_judged": conduct is not None and conduct.conduct is None,
        "match": detail.match,
        "day": day_number,
        "last_day": last,
        "colors": _colors(engine, detail.match.tournament_id),
        "merchants": [
            {
                "name": r.merchant,
                "contestant": contestant_of.get(r.merchant, r.merchant),
                "record": r,
                "books": _books(r),
                "steps": [s for s in steps if s.merchant == r.merchant],
                "notes": store.notes(engine, match_id, r.merchant, day_number),
                "faults": [f for f in detail.faults if f.merchant == r.merchant and f.day == day_number],
                "labelled": conduct.on_day(r.merchant, day_number) if conduct is not None else [],
            }
            for r in records
        ],
        "heard": [s for s in said if s.day == day_number - 1],
        "said": [s for s in said if s.day == day_number],
    }


def marked(text: str, labelled: Sequence[LabelledWords]) -> list[tuple[str, LabelledWords | None]]:
    """`text` as shown on a day's page cut where it holds the words of a labelled item, so that
    the page can mark them: (piece, the item it is, or None) in order, the pieces joined being
    `text`. An item's words are found as written or as JSON writes them inside a string (a
    decision's note, a tool call's arguments); where two overlap, the one that starts first
    (then the longer) is marked. Words the page shows only in another form (a plan rendered
    as words) are found nowhere: the list of the merchant's labelled words shows them."""
    found: list[tuple[int, int, LabelledWords]] = []
    for item in labelled:
        said = item.words.text
        forms = (said, json.dumps(said, ensure_ascii=False)[1:-1], json.dumps(said)[1:-1])
        for form in dict.fromkeys(form for form in forms if form):  # (empty words are found nowhere)
            start = text.find(form)
            while start >= 0:
                found.append((start, start + len(form), item))
                start = text.find(form, start + len(form))
    pieces: list[tuple[str, LabelledWords | None]] = []
    at = 0
    for start, end, item in sorted(found, key=lambda f: (f[0], -f[1])):
        if start < at:
            continue
        if start > at:
            pieces.append((text[at:start], None))
        pieces.append((text[start:end], item))
        at = end
    if at < len(text) or not pieces:
        pieces.append((text[at:], None))
    return pieces


def _books(r: DayRecord) -> list[tuple[str, str]]:
    """The merchant's books of the day, as its observation the next morning reads them."""
    return [
        ("cash", f"{views.money(r.cash_start)} → {views.money(r.cash_end)}"),
        ("net worth", views.money(r.net_worth)),
        ("receivables", views.money(r.receivables)),
        ("revenue", views.money(r.revenue)),
        ("prices", views.per_product(r.prices)),
        ("units sold", views.per_product(r.units_sold)),
        ("turned away", views.per_product(r.lost_sales)),
        ("in stock", views.per_product(r.inventory)),
        ("in transit", views.per_product(r.in_transit)),
        ("spoiled", views.per_product(r.spoiled)),
    ]


def _colors(engine: Engine, *tournament_ids: int) -> Palette:
    """A colour for each contestant of the tournaments, in the order their files list them:
    a contestant keeps its colour on every page of its tournament."""
    return Palette(
        dict.fromkeys(name for t in sorted(tournament_ids) for name in store.contestant_kinds(engine, t))
    )
