"""A match's charts and sections as the report and the viewer show them: its price, cash, net
worth and share charts (each a Figure, drawn in SVG for the report and with plotly for the
viewer), its tables, its deviated path beside the path played, and one colour per contestant
(Palette) that both keep on a whole page."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup

from market.accounting import market_shares
from market.daylog import CompetitorDays, DayLog
from market.scenario import Event, Scenario
from market.types import DayRecord
from results.presentation import views
from results.presentation.plotly_charts import line_figure
from results.presentation.svg_charts import (
    Band,
    Format,
    Level,
    Series,
    line_chart,
    number,
    percent,
)
from results.records import (
    WINDOW_TITLES,
    Fault,
    MerchantResult,
    PriceWindow,
)
from results.scoring.collusion import NoBenchmarks, seat_benchmarks
from results.storage import store
from results.storage.schema import MatchRow

# Distinct on white and for the common colour-vision deficiencies; beyond ten, hues are spread
# around the colour wheel.
PALETTE = (
    "#2f6db0",
    "#e8891d",
    "#2a9d6f",
    "#7b5ea7",
    "#c8414b",
    "#8c6d46",
    "#d45d9e",
    "#5f7480",
    "#a89018",
    "#1c9fb3",
)


class Palette:
    """One colour per contestant, in the order given (the leaderboard's); a name not given
    takes the next colour when first asked for."""

    def __init__(self, names: Iterable[str]):
        self.colors: dict[str, str] = {}
        for name in names:
            self[name]  # takes the next colour

    def __getitem__(self, name: str) -> str:
        if name not in self.colors:
            n = len(self.colors)
            self.colors[name] = PALETTE[n] if n < len(PALETTE) else f"hsl({(n * 137.5) % 360:.0f} 55% 42%)"
        return self.colors[name]

    def __contains__(self, name: object) -> bool:
        return name in self.colors


@dataclass(frozen=True)
class Figure:
    """A captioned chart of lines over the match's days, with spans shaded and levels drawn:
    in SVG for the report (`svg`), as a plotly figure for the viewer (`plot`), each drawn
    when first asked for."""

    title: str
    series: list[Series]
    spans: list[Band]
    levels: Sequence[Level]
    y_format: Format
    y_from_zero: bool

    @functools.cached_property
    def svg(self) -> Markup:
        return line_chart(
            self.series,
            title=self.title,
            bands=self.spans,
            levels=self.levels,
            y_format=self.y_format,
            y_from_zero=self.y_from_zero,
        )

    @functools.cached_property
    def plot(self) -> dict[str, Any]:
        return line_figure(
            self.series,
            title=self.title,
            bands=self.spans,
            levels=self.levels,
            percent=self.y_format is percent,
            y_from_zero=self.y_from_zero,
        )


@dataclass(frozen=True)
class FaultLine:
    day: int
    who: str
    kind: str
    detail: str


@dataclass(frozen=True)
class DeviationPart:
    """A probed match's two paths around its deviation."""

    who: str
    target: str
    when: str
    day: int
    calls: str  # a sentence on the deviated path's model calls, or ""
    measures: views.TableModel
    charts: list[Figure]
    messages: views.TableModel | None
    faults: list[FaultLine]


@dataclass(frozen=True)
class MatchPart:
    """What the page shows of one match."""

    match: MatchRow
    lineup: list[str]  # contestants, best rank first
    winners: str  # who finished first; none for a merchant alone
    legend: list[tuple[str, str]]  # each seat's label and colour
    results: views.TableModel
    charts: list[Figure]
    messages: views.TableModel | None
    deviation: DeviationPart | None
    metrics: views.TableModel | None
    goals: views.TableModel | None
    market: views.TableModel | None
    calls: views.TableModel | None
    faults: list[FaultLine]

    @property
    def contestants(self) -> str:
        """The match's contestants, as the page's filter reads them."""
        return " ".join(sorted(set(self.lineup)))


def match_part(
    detail: store.MatchDetail,
    scenario: Scenario | None,
    colors: Palette,
    metrics: Sequence[store.MetricValue],
) -> MatchPart:
    """`scenario` (None: not found) gives the events to shade and the benchmark prices."""
    results = sorted(detail.results, key=lambda r: (r.rank, r.merchant))
    events = scenario.events if scenario is not None else ()
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    styles = _series_styles(detail.results, colors)
    levels = benchmark_levels(scenario, len(detail.results))
    said = detail.days.said()
    stored = views.by_merchant((m.merchant, m.name, m.value) for m in metrics)
    notes = views.metric_notes((m.merchant, m.name, m.note) for m in metrics)
    probed = [*intervention_bands(scenario, detail.match.days)]
    probed += [probe_band(detail)] if detail.deviation is not None else []
    return MatchPart(
        match=detail.match,
        lineup=[r.contestant for r in results],
        winners=", ".join(r.contestant for r in results if r.rank == 1) if len(results) > 1 else "",
        legend=[(name, color) for name, color, _ in styles.values()],
        results=views.results_table(detail.match, detail.results, detail.people),
        charts=[
            *price_charts(
                detail.days, events, styles, levels, detail.market.windows, detail.days.competitors, probed
            ),
            _figure(
                "Units sold (all products)",
                day_series(detail.days, styles, lambda d: sum(d.units_sold.values())),
                events,
                bands=probed,
                y_from_zero=True,
            ),
            _figure("Cash", day_series(detail.days, styles, lambda d: d.cash_end), events, bands=probed),
            _figure(
                "Net worth", day_series(detail.days, styles, lambda d: d.net_worth), events, bands=probed
            ),
            _figure(
                "Market share (of units sold to date)",
                share_series(detail.days, styles),
                events,
                bands=probed,
                y_format=percent,
                y_from_zero=True,
            ),
        ],
        messages=views.messages_table(said, "messages") if said else None,
        deviation=(
            deviation_part(detail, events, styles, levels, stored) if detail.deviation is not None else None
        ),
        metrics=views.metrics_table(stored, contestant_of, notes) if stored else None,
        goals=views.goals_table(detail.goals, contestant_of) if detail.goals else None,
        market=views.market_table(detail.market, detail.notes) if detail.market.metrics else None,
        calls=views.calls_table(detail.calls) if detail.calls else None,
        faults=_fault_lines(detail.faults, contestant_of),
    )


def price_charts(
    days: Sequence[DayRecord],
    events: Sequence[Event],
    styles: dict[str, tuple[str, str, bool]],
    levels: Mapping[str, list[Level]],
    windows: Sequence[PriceWindow],
    scripted: CompetitorDays | None = None,
    bands: Sequence[Band] = (),
) -> list[Figure]:
    """One chart per product: every merchant's posted price, day by day, and each `scripted`
    competitor's (grey, dashed), with the product's `levels` (its benchmark prices), the
    match's price windows and `bands` (a probe's days)."""
    products = list(dict.fromkeys(p for d in days for p in d.prices))
    return [
        _figure(
            f"Price: {product}",
            day_series(days, styles, price_of(product)) + _competitor_series(scripted, j),
            [e for e in events if e.product in (None, product)],
            windows,
            bands=bands,
            levels=levels.get(product, []),
        )
        for j, product in enumerate(products)
    ]


SCRIPTED_COLOR = "#888888"


def _competitor_series(scripted: CompetitorDays | None, product: int) -> list[Series]:
    """Each scripted competitor's price of the product, day by day, where it sells it."""
    if scripted is None:
        return []
    lines = [
        Series(
            f"{name} (scripted)",
            SCRIPTED_COLOR,
            [(day, p) for day, p in enumerate(scripted.prices[:, c, product].tolist(), 1) if p == p],
            dashed=True,
        )
        for c, name in enumerate(scripted.names)
    ]
    return [line for line in lines if line.points]


DEVIATION_VIEW = (5, 20)  # days before the deviation and after its end that its charts show


def deviation_part(
    detail: store.MatchDetail,
    events: Sequence[Event],
    styles: dict[str, tuple[str, str, bool]],
    levels: Mapping[str, list[Level]],
    metrics: Mapping[str, Mapping[str, float | None]],
) -> DeviationPart:
    """A probed match's two paths around the deviation (DEVIATION_VIEW, as impulse responses are
    drawn): per product, every merchant's price on path (solid) and on the deviated path
    (dashed, "(deviated)"), the forced days shaded, the product's benchmark `levels`; the
    probe's measures among the match's stored `metrics`, and the messages and faults of the
    deviated path."""
    path = detail.deviation
    assert path is not None
    probe = path.probe
    seats = [r.merchant for r in detail.results]  # results are in seat order
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    who, forced_days = _forced(detail), probe_band(detail)
    deviated_styles = {m: (f"{name} (deviated)", color, True) for m, (name, color, _) in styles.items()}
    solid = {m: (name, color, False) for m, (name, color, _) in styles.items()}
    products = list(dict.fromkeys(p for d in detail.days for p in d.prices))
    first, last = probe.day - DEVIATION_VIEW[0], probe.last_day + DEVIATION_VIEW[1]
    on_path = [d for d in detail.days if first <= d.day <= last]
    deviated = [d for d in path.days_played if first <= d.day <= last]
    charts = [
        _figure(
            f"Price, on path and deviated: {product}",
            [
                *day_series(on_path, solid, price_of(product)),
                *day_series(deviated, deviated_styles, price_of(product)),
            ],
            [e for e in events if e.product in (None, product)],
            bands=[forced_days],
            levels=levels.get(product, []),
        )
        for product in products
    ]
    said = [m for m in DayLog.of(path.days_played).said() if m.day >= probe.day]
    replayed = sum(c.cached for c in path.calls)
    return DeviationPart(
        who=who,
        target=probe.target,
        when=probe.when,
        day=probe.day,
        calls=(
            f" Its model calls: {len(path.calls)}, {replayed} of them answered from the response cache."
            if path.calls
            else ""
        ),
        measures=views.deviation_table(path, seats, metrics),
        charts=charts,
        messages=views.messages_table(said, "messages on the deviated path") if said else None,
        faults=_fault_lines(path.faults, contestant_of),
    )


def _forced(detail: store.MatchDetail) -> str:
    """Who a probed match's deviated path forced."""
    assert detail.deviation is not None
    probe = detail.deviation.probe
    forced = probe.forced([r.merchant for r in detail.results])  # results are in seat order
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    return seat_label(forced, contestant_of[forced]) if forced is not None else f"seat {probe.seat}"


def probe_band(detail: store.MatchDetail) -> Band:
    """The days a probed match's deviated path was forced, as a span of its charts (of both
    paths: on the match's own, where the probe took its path apart)."""
    assert detail.deviation is not None
    probe = detail.deviation.probe
    label = f"{_forced(detail)} forced to {probe.target} ({probe.when})"
    return Band(probe.day - 0.5, probe.last_day + 0.5, label, "deviation")


def intervention_bands(scenario: Scenario | None, days: int) -> list[Band]:
    """The regulator's acts (market.scenario.Intervention) within a match of `days` days, as
    spans of its charts."""
    acts = scenario.interventions if scenario is not None else ()
    return [
        Band(
            act.start_day - 0.5,
            min(act.last_day, days) + 0.5,
            f"{act.name} ({act.kind.replace('_', ' ')}{f' {act.price:g}' if act.price is not None else ''})",
            "intervention",
        )
        for act in acts
        if act.start_day <= days
    ]


def _fault_lines(faults: Sequence[Fault], contestant_of: Mapping[str, str]) -> list[FaultLine]:
    return [
        FaultLine(f.day, seat_label(f.merchant, contestant_of.get(f.merchant, f.merchant)), f.kind, f.detail)
        for f in faults
    ]


def benchmark_levels(scenario: Scenario | None, seats: int) -> dict[str, list[Level]]:
    """Per product, its Nash and monopoly (joint-profit) price for `seats` merchants
    (results.scoring.collusion.seat_benchmarks); with asymmetric seats the mean over them, as the
    label says. None without the scenario or an equilibrium."""
    if scenario is None:
        return {}
    found = seat_benchmarks(scenario, seats)
    if isinstance(found, NoBenchmarks):
        return {}
    return {
        product: [
            _level("Nash", found.nash_price[:, j], "nash"),
            _level("monopoly", found.monopoly_price[:, j], "monopoly"),
        ]
        for j, product in enumerate(scenario.product_ids)
    }


def _level(name: str, seat_prices: np.ndarray, kind: str) -> Level:
    prices: list[float] = seat_prices.tolist()
    mean = sum(prices) / len(prices)
    alike = max(prices) - min(prices) <= 1e-9 * max(1.0, abs(mean))
    return Level(mean, f"{name} {mean:.2f}" + ("" if alike else " (mean of seats)"), kind)


def share_series(days: DayLog, styles: dict[str, tuple[str, str, bool]]) -> list[Series]:
    """Each merchant's market share (market.accounting.market_shares) of the units sold from
    day 1 to each day, from the first sale on, so the last point is the match's."""
    sold_by_day: dict[int, dict[str, float]] = defaultdict(dict)
    for d in days:
        sold_by_day[d.day][d.merchant] = sum(d.units_sold.values())
    scripted = days.competitors
    scripted_by_day = [] if scripted is None else scripted.units_sold.sum(axis=(1, 2)).tolist()
    totals: dict[str, float] = defaultdict(float)
    scripted_total = 0.0
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for day in sorted(sold_by_day):
        for merchant, units in sold_by_day[day].items():
            totals[merchant] += units
        scripted_total += scripted_by_day[day - 1] if scripted_by_day else 0.0
        if not any(totals.values()) and not scripted_total:
            continue
        shares = dict(zip(totals, market_shares(list(totals.values()), scripted_total)))
        for merchant in sold_by_day[day]:
            points[merchant].append((day, shares[merchant]))
    return [
        Series(name, color, points[merchant], dashed) for merchant, (name, color, dashed) in styles.items()
    ]


def price_of(product: str) -> Callable[[DayRecord], float | None]:
    return lambda day: day.prices.get(product)


def day_series(
    days: Sequence[DayRecord],
    styles: dict[str, tuple[str, str, bool]],
    value: Callable[[DayRecord], float | None],
) -> list[Series]:
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for d in days:
        y = value(d)
        if y is not None:
            points[d.merchant].append((d.day, y))
    for line in points.values():
        line.sort()
    return [
        Series(name, color, points[merchant], dashed) for merchant, (name, color, dashed) in styles.items()
    ]


def _series_styles(results: Sequence[MerchantResult], colors: Palette) -> dict[str, tuple[str, str, bool]]:
    """Per seat: its label, its contestant's colour, and dashed when the contestant has an
    earlier seat in the same match."""
    styles: dict[str, tuple[str, str, bool]] = {}
    seen: set[str] = set()
    for r in sorted(results, key=lambda r: r.merchant):
        styles[r.merchant] = (
            seat_label(r.merchant, r.contestant),
            colors[r.contestant],
            r.contestant in seen,
        )
        seen.add(r.contestant)
    return styles


def _figure(
    title: str,
    series: list[Series],
    events: Sequence[Event],
    windows: Sequence[PriceWindow] = (),
    bands: Sequence[Band] = (),
    levels: Sequence[Level] = (),
    y_format: Format = number,
    y_from_zero: bool = False,
) -> Figure:
    """A captioned line chart over the match's days, its events, price windows and `bands` shaded."""
    shaded = [
        Band(
            e.start_day - 0.5,
            e.end_day + 0.5,
            f"{e.name} ({e.kind} {'drifting to ' if e.shape == 'trend' else ''}×{e.multiplier:g})",
            e.kind,
        )
        for e in events
    ]
    shaded += [
        Band(
            w.first_day - 0.5,
            w.last_day + 0.5,
            f"{WINDOW_TITLES[w.kind]} (days {w.first_day}–{w.last_day})",
            w.kind,
        )
        for w in windows
    ]
    return Figure(title, series, [*shaded, *bands], levels, y_format, y_from_zero)


def seat_label(merchant: str, contestant: str) -> str:
    return contestant if merchant == contestant else f"{contestant} ({merchant})"
