"""`arena report`: one tournament as a single self-contained HTML page.

Everything the page needs is inside it: CSS and a few lines of script in the template
(templates/report.html.j2), charts as inline SVG (results/presentation/svg_charts.py), no
fonts, images or links to fetch, so it opens offline and no request leaves the machine. The
template is rendered with autoescaping: every text of the record is escaped where it is put in
the page, and only the charts' SVG, built by svg_charts with its own texts escaped, goes in as
markup.

Sections, each an element with a fixed id: `overview`, `leaderboard` (table and forest plot
of the ratings with their intervals), `head-to-head` (win matrix), `metrics` (the stored
metrics, mean per contestant), `usage` (model tokens and cost), `matches` (one collapsible
section per match: results, price trajectories with the scenario's events, cash, net worth,
market share, the messages its merchants sent each other, its metrics, the market's
collusion measures and model calls; the price charts carry the product's Nash and monopoly
prices and the supra-competitive and price-war windows). The tables that `arena` shows too
are those of results.presentation.views. A contestant keeps one colour on the whole page.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from sqlalchemy import Engine

from common.errors import UserError
from market.accounting import market_shares
from market.daylog import CompetitorDays, DayLog
from market.scenario import Event, Scenario
from market.types import DayRecord
from results import leaderboard, sweep_summary
from results.presentation import views
from results.presentation.plotly_charts import line_figure
from results.presentation.svg_charts import (
    Band,
    Format,
    Interval,
    Level,
    Point,
    Series,
    cost_plot,
    forest_plot,
    line_chart,
    number,
    percent,
)
from results.records import (
    WINDOW_TITLES,
    Fault,
    MerchantResult,
    ModelCallRecord,
    PlayedScenarios,
    PriceWindow,
    shown_value,
    total_cost,
)
from results.scoring import sweeps
from results.scoring.collusion import NoBenchmarks, seat_benchmarks
from results.scoring.composite import ScoringWeights
from results.scoring.rating_fit import LEVEL
from results.scoring.ratings import LeaderboardRow, cost_front
from results.storage import store
from results.storage.schema import MatchRow, stored_id

PAGES = Environment(
    loader=PackageLoader("results.presentation", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

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


class ReportError(UserError):
    """The report cannot be written where it was asked to be (one line)."""


def write_report(
    engine: Engine,
    tournament_id: int,
    out: Path,
    scenarios: PlayedScenarios,
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
    sweep_metric: str | None = None,
    confidence: float = LEVEL,
) -> None:
    """Render the report and write it to `out` in one step: a failure leaves no partial file.

    `scenarios` give each match's events to mark, read again from the files the tournament
    named (events are not in the record); `scenario_notes` say which could not be read (see
    tournaments.config.StoredTournament.scenarios); `weights` are the leaderboard's scoring
    weights; `sweep_metric` the metric of a sweep's heat map (sweep_part). Raises NotFound for
    an unknown tournament or metric, ReportError when `out` cannot be written."""
    page = build_report(engine, tournament_id, scenarios, scenario_notes, weights, sweep_metric, confidence)
    if out.is_dir():
        raise ReportError(f"{out}: is a folder; name the HTML file to write")
    if not out.parent.is_dir():
        raise ReportError(f"{out}: folder {out.parent} does not exist")
    try:
        handle, temporary = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:
        raise ReportError(f"{out}: cannot write in {out.parent} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(page)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; a report is for sharing
        os.replace(temporary, out)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise ReportError(f"{out}: cannot write ({exc.strerror or exc})") from None


def build_report(
    engine: Engine,
    tournament_id: int,
    scenarios: PlayedScenarios,
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
    sweep_metric: str | None = None,
    confidence: float = LEVEL,
) -> str:
    """The report's page; its table weighs the composite with `weights` and judges ties at
    `confidence` (the tournament file's)."""
    tournament = store.get_tournament(engine, tournament_id)
    rows = leaderboard.leaderboard(engine, tournament_id, weights=weights, confidence=confidence)
    names = [row.contestant for row in rows]
    colors = Palette(store.contestant_kinds(engine, tournament_id))  # as the viewer colours them
    metrics: dict[int, list[store.MetricValue]] = defaultdict(list)
    for value in store.metrics(engine, tournament_id):
        metrics[value.match_id].append(value)
    parts = [
        match_part(detail, scenarios.of(detail.match), colors, metrics[detail.match_id])
        for detail in store.match_details(engine, tournament_id)
    ]
    head_to_head = HeadToHead()
    by_goals = weights.objective == "goals"
    for ranked in leaderboard.rankings(
        engine, tournament_id, by_goals
    ):  # solo matches ranked against one another's
        head_to_head.add(ranked.ranks)
    matches = [part.match for part in parts]
    scenario_names = sorted({m.scenario for m in matches})
    finished = views.moment(tournament.finished_at) if tournament.finished_at else "—"
    ended = store.run_end(engine, tournament_id)  # an adaptive run's says what its intervals hold
    return PAGES.get_template("report.html.j2").render(
        title=f"{tournament.name} — arena tournament {tournament.id}",
        tournament=tournament,
        facts=[
            ("tournament", f"{tournament.id}"),
            ("status", tournament.status),
            ("matches", f"{len(matches)} of {tournament.planned_matches} planned"),
            ("seed", str(tournament.seed)),
            ("file", tournament.config_path),
            ("started", views.moment(tournament.created_at)),
            ("finished", finished),
            *([("ended early", ended)] if ended else []),
        ],
        kinds=store.contestant_kinds(engine, tournament_id),
        colors=colors,
        leaderboard=views.leaderboard_table(rows, "leaderboard"),
        ratings=forest_plot(
            [
                Interval(r.contestant, colors[r.contestant], r.rating, r.low, r.high)
                for r in rows
                if r.rating is not None and r.low is not None and r.high is not None
            ],
            title="Ratings with 95% intervals",
            x_label="rating (Elo scale)",
            reference=1000.0,
        ),
        cost=cost_part(rows, colors),
        head_to_head=head_to_head.matrix(names),
        sweep=sweep_part(engine, tournament_id, sweep_metric),
        metrics=metric_means_table(
            [m for per_match in metrics.values() for m in per_match],
            {stored_id(m.id): m.scenario for m in matches},
        ),
        usage=usage_table(store.tournament_calls(engine, tournament_id)),
        scenarios=[scenario for scenario in scenarios.listed() if scenario.name in scenario_names],
        notes=scenario_notes,
        contestants=names,
        scenario_names=scenario_names,
        matches=parts,
    )


def cost_part(rows: Sequence[LeaderboardRow], colors: Palette) -> Markup | None:
    """Rating against cost per match with the front marked (results.scoring.ratings.cost_front), for a
    tournament whose contestants called priced models; None for one that called none."""
    if not any(row.tokens for row in rows):
        return None
    front = cost_front(rows)
    return cost_plot(
        [
            Point(
                row.contestant,
                colors[row.contestant],
                row.cost_per_match,
                row.rating,
                row.contestant in front,
            )
            for row in rows
            if row.rating is not None and row.cost_per_match is not None
        ],
        title="Rating against cost per match",
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
class Cell:
    """A cell of the head-to-head matrix: its text, background and tooltip (None: the
    contestant against itself)."""

    text: str
    background: str | None = None
    tooltip: str | None = None


@dataclass
class HeadToHead:
    """For each ordered pair of contestants met in a match: wins, losses and ties by rank."""

    tally: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))

    def add(self, ranks: Sequence[tuple[str, int]]) -> None:
        """One match's (contestant, rank) of every seat (results.scoring.ratings.RankedMatch)."""
        for (a, rank_a), (b, rank_b) in combinations(ranks, 2):
            if a == b:
                continue
            outcome = 0 if rank_a < rank_b else 1 if rank_a > rank_b else 2
            self.tally[a, b][outcome] += 1
            self.tally[b, a][(1 - outcome) if outcome < 2 else 2] += 1

    def record(self, a: str, b: str) -> tuple[int, int, int] | None:
        """(wins, losses, ties) of a against b, or None if they never met."""
        found = self.tally.get((a, b))
        return (found[0], found[1], found[2]) if found else None

    def matrix(self, names: Sequence[str]) -> list[tuple[str, list[Cell | None]]]:
        """Row against column, in the order of `names`: wins–losses(–ties), coloured by the
        share of points (a tie is half) the row contestant took."""
        rows = []
        for a in names:
            cells: list[Cell | None] = []
            for b in names:
                record = self.record(a, b) if a != b else None
                if a == b:
                    cells.append(None)
                elif record is None:
                    cells.append(Cell("·"))
                else:
                    wins, losses, ties = record
                    rate = (wins + 0.5 * ties) / (wins + losses + ties)
                    cells.append(
                        Cell(
                            f"{wins}–{losses}" + (f"–{ties}" if ties else ""),
                            _diverging(rate),
                            f"{a} vs {b}: {wins} won, {losses} lost, {ties} tied",
                        )
                    )
            rows.append((a, cells))
        return rows


# A sweep -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeatMap:
    """A metric's mean by cell over two factors of a sweep: `down` by row, `across` by
    column (their values as labels show them), the sweep's other factors pooled."""

    metric: str
    down: str
    across: str
    columns: list[str]
    rows: list[tuple[str, list[Cell]]]
    pooled: list[str]


@dataclass(frozen=True)
class SweepPart:
    """A sweep's results as the report and the viewer show them: a row per cell with the key
    metrics (results.scoring.sweeps), and a heat map of `metric` over the first two factors that take
    more than one value, when two do."""

    table: views.Table
    metric: str
    heat_map: HeatMap | None


def sweep_part(engine: Engine, tournament_id: int, metric: str | None = None) -> SweepPart | None:
    """The tournament's sweep (None without one), its heat map of `metric` (default: the first
    of sweeps.KEY_METRICS its matches have). UnknownName for a metric arena does not compute."""
    cells = store.sweep_cells(engine, tournament_id)
    if not cells:
        return None
    every_cell = sweep_summary.by_cell(engine, tournament_id)
    if metric is None:
        metric = next(
            (m for m in sweeps.KEY_METRICS if any(c.values[m] is not None for c in every_cell)),
            sweeps.KEY_METRICS[-1],
        )
    table = views.sweep_table(every_cell, "by cell")
    varying = [f for f in sweeps.factors_of(cells) if len({shown_value(c.factors[f]) for c in cells}) > 1]
    sweep_summary.check_metric(engine, tournament_id, metric)
    if len(varying) < 2:
        return SweepPart(table, metric, None)
    down, across = varying[:2]
    grouped = sweep_summary.by_cell(engine, tournament_id, [down, across], [metric])
    means = [value.mean for g in grouped if (value := g.values[metric]) is not None]
    low, high = (min(means), max(means)) if means else (0.0, 0.0)
    unit = views.metric_unit(metric)
    columns = list(dict.fromkeys(shown_value(g.factors[across]) for g in grouped))
    found = {(shown_value(g.factors[down]), shown_value(g.factors[across])): g for g in grouped}
    rows = []
    for row in dict.fromkeys(shown_value(g.factors[down]) for g in grouped):
        cells_of_row = []
        for column in columns:
            group = found.get((row, column))
            value = None if group is None else group.values[metric]
            if group is None or value is None:
                cells_of_row.append(Cell("·"))
                continue
            share = 0.5 if high == low else (value.mean - low) / (high - low)
            cells_of_row.append(
                Cell(
                    views.mean_value(value.mean, unit),
                    _sequential(share),
                    f"{down}={row}, {across}={column}: {metric} {views.mean_and_interval(value, unit)} "
                    f"over {value.n} sessions",
                )
            )
        rows.append((row, cells_of_row))
    return SweepPart(table, metric, HeatMap(metric, down, across, columns, rows, varying[2:]))


# The tournament's own tables ------------------------------------------------------------------


def metric_means_table(
    values: Sequence[store.MetricValue], scenarios: Mapping[int, str]
) -> views.Table | None:
    """Metrics down, contestants across; each cell the mean of the values that apply, as the
    leaderboard writes its means (views.noted_mean: why some do not, after the scenario of
    their match, `scenarios` by match id, in the notes). None: no metric is stored."""
    if not values:
        return None
    ordered = sorted(values, key=lambda v: (v.match_id, v.merchant))
    contestants = list(dict.fromkeys(v.contestant for v in ordered))
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    noted: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for v in values:
        if v.value is not None:
            found[v.name, v.contestant].append(v.value)
        elif v.note is not None:
            noted[v.name, v.contestant].append((scenarios[v.match_id], v.note))
    why = {key: text for key, pairs in noted.items() if (text := views.reasons(pairs)) is not None}
    names = list(dict.fromkeys(v.name for v in values))  # as stored: results.scoring.metrics order
    rows = [
        [
            name.replace("_", " "),
            *(
                views.noted_mean(_mean(found.get((name, c), [])), why.get((name, c)), _magnitude, "—")
                for c in contestants
            ),
        ]
        for name in names
    ]
    headers = [views.Header("metric"), *(views.Header(c, numeric=True) for c in contestants)]
    notes = views.mean_notes(
        [
            (name.replace("_", " "), c, why[name, c])
            for name in names
            for c in contestants
            if (name, c) in why
        ],
        any(key in found for key in why),
    )
    return views.Table("metrics", headers, [rows], notes)


USAGE_COLUMNS: list[tuple[str, Callable[[Sequence[ModelCallRecord]], str]]] = [
    ("calls", lambda calls: f"{len(calls):,}"),
    ("input tokens", lambda calls: f"{sum(c.input_tokens for c in calls):,}"),
    ("output tokens", lambda calls: f"{sum(c.output_tokens for c in calls):,}"),
    ("cached tokens", lambda calls: f"{sum(c.cached_tokens for c in calls):,}"),
    ("cache hits", lambda calls: f"{sum(c.cached for c in calls):,}"),
    ("retries", lambda calls: f"{sum(max(c.attempts - 1, 0) for c in calls):,}"),
    ("seconds", lambda calls: f"{sum(c.latency for c in calls):,.1f}"),
    ("cost $", lambda calls: _fixed(total_cost(calls), 4)),
]


def usage_table(calls: Sequence[ModelCallRecord]) -> views.Table | None:
    """The tournament's model calls by contestant and model, then all of them (None: no call)."""
    if not calls:
        return None
    groups: dict[tuple[str, str], list[ModelCallRecord]] = defaultdict(list)
    for call in calls:
        groups[call.contestant, call.model].append(call)
    by_model = [
        [contestant, model, *(cell(group) for _, cell in USAGE_COLUMNS)]
        for (contestant, model), group in sorted(groups.items())
    ]
    total = [["all", "", *(cell(calls) for _, cell in USAGE_COLUMNS)]]
    headers = [
        views.Header("contestant", contestant=True),
        views.Header("model"),
        *(views.Header(header, numeric=True) for header, _ in USAGE_COLUMNS),
    ]
    return views.Table("model usage", headers, [by_model, total])


# One match ------------------------------------------------------------------------------------


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
    measures: views.Table
    charts: list[Figure]
    messages: views.Table | None
    faults: list[FaultLine]


@dataclass(frozen=True)
class MatchPart:
    """What the page shows of one match."""

    match: MatchRow
    lineup: list[str]  # contestants, best rank first
    winners: str  # who finished first; none for a merchant alone
    legend: list[tuple[str, str]]  # each seat's label and colour
    results: views.Table
    charts: list[Figure]
    messages: views.Table | None
    deviation: DeviationPart | None
    metrics: views.Table | None
    goals: views.Table | None
    market: views.Table | None
    calls: views.Table | None
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
        results=views.results_table(detail.match, detail.results),
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


# Formatting -----------------------------------------------------------------------------------


def seat_label(merchant: str, contestant: str) -> str:
    return contestant if merchant == contestant else f"{contestant} ({merchant})"


def _fixed(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _magnitude(value: float | None) -> str:
    """A mean of metrics of any unit, from shares to money: whole numbers when large, three
    decimals when small."""
    if value is None:
        return "—"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:.2f}"
    return "0" if value == 0 else f"{value:.3f}" if size >= 0.001 else f"{value:.2e}"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _sequential(share: float) -> str:
    """Pale (0) to mid blue (1), light enough to read dark text on."""
    weight = 0.1 + max(0.0, min(1.0, share)) * 0.65
    r, g, b = (round(255 + (c - 255) * weight) for c in (70, 120, 190))
    return f"rgb({r},{g},{b})"


def _diverging(rate: float) -> str:
    """Red (0) through white (0.5) to blue (1), light enough to read dark text on."""
    t = max(-1.0, min(1.0, 2 * rate - 1))
    end = (70, 120, 190) if t > 0 else (205, 75, 75)
    weight = abs(t) * 0.7
    r, g, b = (round(255 + (c - 255) * weight) for c in end)
    return f"rgb({r},{g},{b})"
