"""`arena report`: one tournament as a single self-contained HTML page.

Everything the page needs is inside it: CSS and a few lines of script in the template
(report_template.html), charts as inline SVG (results/charts.py), no fonts, images or links
to fetch, so it opens offline and no request leaves the machine.

Sections, each an element with a fixed id: `overview`, `leaderboard` (table and forest plot
of the ratings with their intervals), `head-to-head` (win matrix), `metrics` (the stored
metrics, mean per contestant), `usage` (model tokens and cost), `matches` (one collapsible
section per match: results, price trajectories with the scenario's events, cash, net worth,
market share, the messages its merchants sent each other, its metrics, the market's
collusion measures and model calls; the price charts carry the product's Nash and monopoly
prices and the supra-competitive and price-war windows). A contestant keeps one colour on
the whole page.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from itertools import combinations
from pathlib import Path
from string import Template

from sqlalchemy import Engine

from market.accounting import market_shares
from market.daylog import DayLog, Said
from market.errors import UserError
from market.scenario import Event, Scenario
from market.types import DayRecord
from results import store
from results.charts import Band, Interval, Level, Series, forest_plot, line_chart, percent
from results.collusion import seat_benchmarks
from results.composite import ScoringWeights
from results.metrics import MARKET_METRICS
from results.ratings import LeaderboardRow
from results.records import (
    WINDOW_TITLES,
    Fault,
    MarketScores,
    MerchantResult,
    ModelCallRecord,
    PriceWindow,
    total_cost,
    window_days,
)
from results.tables import MatchRow, TournamentRow

TEMPLATE = Path(__file__).with_name("report_template.html")

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


class Html(str):
    """Markup built here, inserted as it is; any other text is escaped."""


def write_report(
    engine: Engine,
    tournament_id: int,
    out: Path,
    scenarios: Mapping[str, Scenario],
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
) -> None:
    """Render the report and write it to `out` in one step: a failure leaves no partial file.

    `scenarios` (by name) give the events to mark, read again from the files the tournament
    named (events are not in the record); `scenario_notes` say which could not be read (see
    tournaments.config.StoredTournament.scenarios); `weights` are the leaderboard's scoring
    weights. Raises NotFound for an unknown tournament, ReportError when `out` cannot be
    written."""
    page = build_report(engine, tournament_id, scenarios, scenario_notes, weights)
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
    scenarios: Mapping[str, Scenario],
    scenario_notes: Sequence[str],
    weights: ScoringWeights = ScoringWeights(),
) -> str:
    tournament = store.get_tournament(engine, tournament_id)
    rows = store.leaderboard(engine, tournament_id, weights=weights)
    colors = Palette([row.contestant for row in rows])
    matches = store.list_matches(engine, tournament_id)
    metrics = _metrics(engine, tournament_id)
    calls = store.tournament_calls(engine, tournament_id)
    head_to_head = HeadToHead()
    sections = []
    for match in matches:
        detail = store.match_detail(engine, match.id)
        head_to_head.add(detail.results)
        sections.append(
            match_section(detail, scenarios.get(match.scenario), colors, metrics.get(match.id, []))
        )
    body = "".join(
        [
            overview_section(tournament, store.contestant_kinds(engine, tournament_id), colors, len(matches)),
            leaderboard_section(rows, colors),
            head_to_head_section(head_to_head, [row.contestant for row in rows], colors),
            metrics_section(metrics),
            usage_section(calls, colors),
            matches_section(sections, matches, scenarios, scenario_notes, [row.contestant for row in rows]),
        ]
    )
    return Template(TEMPLATE.read_text(encoding="utf-8")).substitute(
        title=escape(f"{tournament.name} — arena tournament {tournament.id}"), body=body
    )


class Palette:
    """One colour per contestant, in the order given (the leaderboard's)."""

    def __init__(self, names: Iterable[str]):
        self.colors: dict[str, str] = {}
        for name in names:
            self[name]  # takes the next colour

    def __getitem__(self, name: str) -> str:
        if name not in self.colors:
            n = len(self.colors)
            self.colors[name] = PALETTE[n] if n < len(PALETTE) else f"hsl({(n * 137.5) % 360:.0f} 55% 42%)"
        return self.colors[name]

    def chip(self, name: str) -> Html:
        return Html(f'<span class="chip"><i style="background:{self[name]}"></i>{escape(name)}</span>')


@dataclass
class HeadToHead:
    """For each ordered pair of contestants met in a match: wins, losses and ties by rank."""

    tally: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))

    def add(self, results: Sequence[MerchantResult]) -> None:
        for a, b in combinations(results, 2):
            if a.contestant == b.contestant:
                continue
            outcome = 0 if a.rank < b.rank else 1 if a.rank > b.rank else 2
            self.tally[a.contestant, b.contestant][outcome] += 1
            self.tally[b.contestant, a.contestant][(1 - outcome) if outcome < 2 else 2] += 1

    def record(self, a: str, b: str) -> tuple[int, int, int] | None:
        """(wins, losses, ties) of a against b, or None if they never met."""
        found = self.tally.get((a, b))
        return tuple(found) if found else None


# Sections -------------------------------------------------------------------------------------


def overview_section(tournament: TournamentRow, kinds: dict[str, str], colors: Palette, played: int) -> str:
    finished = tournament.finished_at.strftime("%Y-%m-%d %H:%M UTC") if tournament.finished_at else "—"
    facts = [
        ("tournament", f"{tournament.id}"),
        ("status", tournament.status),
        ("matches", f"{played} of {tournament.planned_matches} planned"),
        ("seed", str(tournament.seed)),
        ("file", tournament.config_path),
        ("started", tournament.created_at.strftime("%Y-%m-%d %H:%M UTC")),
        ("finished", finished),
    ]
    chips = "".join(
        f'<li>{colors.chip(name)}<span class="muted">{escape(kinds.get(name, ""))}</span></li>'
        for name in colors.colors
    )
    facts_html = "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
    return (
        f'<header id="overview"><p class="eyebrow">arena tournament report</p><h1>{escape(tournament.name)}</h1>'
        f'<dl class="facts">{facts_html}</dl><ul class="contestants">{chips}</ul>'
        f'<details class="config"><summary>tournament file</summary><pre>{escape(tournament.config_text)}</pre></details></header>'
    )


def leaderboard_section(rows: Sequence[LeaderboardRow], colors: Palette) -> str:
    plot = forest_plot(
        [
            Interval(r.contestant, colors[r.contestant], r.rating, r.low, r.high)
            for r in rows
            if r.rating is not None
        ],
        title="Ratings with 95% intervals",
        x_label="rating (Elo scale)",
        reference=1000.0,
    )
    columns = {
        "rank": lambda r: "—" if r.rank is None else r.rank,
        "contestant": lambda r: colors.chip(r.contestant),
        "rating": lambda r: _fixed(r.rating, 0),
        "95% interval": lambda r: "—" if r.low is None else f"{r.low:.0f} – {r.high:.0f}",
        "Elo": lambda r: _fixed(r.elo, 0),
        "matches": lambda r: r.matches,
        "wins": lambda r: r.wins,
        "win rate": lambda r: _share(r.win_rate),
        "mean profit": lambda r: _fixed(r.mean_profit, 0),
        "validity": lambda r: _share(r.validity),
        "memory error": lambda r: _share(r.memory_error),
        "profit gain": lambda r: _fixed(r.profit_gain, 2),
        "price gain": lambda r: _fixed(r.price_gain, 2),
        "tokens": lambda r: f"{r.tokens:,}" if r.tokens else "—",
        "cost $": lambda r: _fixed(r.cost, 4) if r.tokens else "—",
        "composite": lambda r: _fixed(r.composite, 3),
    }
    cells = {name: [get(r) for r in rows] for name, get in columns.items()}
    shown = [
        name for name, values in cells.items() if any(v != "—" for v in values)
    ]  # no column of dashes only
    table = _table(shown, [[cells[name][i] for name in shown] for i in range(len(rows))], numeric_from=2)
    return _section(
        "leaderboard",
        "Leaderboard",
        "Ratings on the Elo scale: 400 points are a factor of 10 in the odds of finishing ahead. "
        "Bars are 95% intervals; the dashed line is the 1000 anchor.",
        Html(f'<div class="figure">{plot}</div>{table}'),
    )


def head_to_head_section(tally: HeadToHead, names: Sequence[str], colors: Palette) -> str:
    header = "".join(f'<th scope="col">{colors.chip(n)}</th>' for n in names)
    lines = []
    for a in names:
        cells = []
        for b in names:
            record = tally.record(a, b) if a != b else None
            if a == b:
                cells.append('<td class="self"></td>')
            elif record is None:
                cells.append('<td class="none">·</td>')
            else:
                wins, losses, ties = record
                rate = (wins + 0.5 * ties) / (wins + losses + ties)
                text = f"{wins}–{losses}" + (f"–{ties}" if ties else "")
                cells.append(
                    f'<td class="cell" style="background:{_diverging(rate)}" title="{escape(a)} vs {escape(b)}: '
                    f'{wins} won, {losses} lost, {ties} tied">{text}</td>'
                )
        lines.append(f'<tr><th scope="row">{colors.chip(a)}</th>{"".join(cells)}</tr>')
    matrix = f'<div class="scroll"><table class="matrix"><thead><tr><th></th>{header}</tr></thead><tbody>{"".join(lines)}</tbody></table></div>'
    return _section(
        "head-to-head",
        "Head to head",
        "Row against column: wins–losses(–ties) by final rank, over every match in which both played. "
        "Blue: the row contestant finished ahead more often; red: behind.",
        Html(matrix),
    )


def metrics_section(metrics: dict[int, list[store.MetricValue]]) -> str:
    rows = [m for per_match in metrics.values() for m in per_match]
    if not rows:
        return _section(
            "metrics", "Metrics", "No metrics are stored for this tournament's matches.", Html("")
        )
    return _section(
        "metrics",
        "Metrics",
        "Each metric's mean over the contestant's matches (matches where it does not apply are left out).",
        Html(_metric_table(rows, key=lambda m: m.contestant)),
    )


def usage_section(calls: list[ModelCallRecord], colors: Palette) -> str:
    if not calls:
        return _section("usage", "Model usage", "No language-model calls in this tournament.", Html(""))
    by_contestant: dict[tuple[str, str], list[ModelCallRecord]] = defaultdict(list)
    for call in calls:
        by_contestant[call.contestant, call.model].append(call)
    rows = [
        [colors.chip(contestant), model, *_usage_cells(group)]
        for (contestant, model), group in sorted(by_contestant.items())
    ]
    rows.append([Html("<b>all</b>"), "", *_usage_cells(calls)])
    table = _table(["contestant", "model", *USAGE_COLUMNS], rows, numeric_from=2)
    return _section(
        "usage",
        "Model usage",
        "Language-model calls of every merchant (decisions, repairs, memory probes), on both paths of a probed match. Cost is in USD at the "
        "models' prices (— where a model has none); cache hits were replayed from the response cache and not paid.",
        Html(table),
    )


def matches_section(
    sections: list[str],
    matches: Sequence[MatchRow],
    scenarios: dict[str, Scenario],
    notes: list[str],
    names: Sequence[str],
) -> str:
    scenario_names = sorted({m.scenario for m in matches})
    about = "".join(_scenario_card(scenarios[name]) for name in scenario_names if name in scenarios)
    warnings = "".join(f'<p class="note">{escape(note)}</p>' for note in notes)
    options = "".join(f'<option value="{escape(n)}">{escape(n)}</option>' for n in names)
    scenario_options = "".join(f'<option value="{escape(n)}">{escape(n)}</option>' for n in scenario_names)
    controls = (
        '<div class="controls" id="match-controls">'
        f'<label>contestant <select id="filter-contestant"><option value="">any</option>{options}</select></label>'
        f'<label>scenario <select id="filter-scenario"><option value="">any</option>{scenario_options}</select></label>'
        '<button type="button" id="open-all">expand all</button><button type="button" id="close-all">collapse all</button>'
        f'<span class="muted"><span id="match-count">{len(matches)}</span> shown</span></div>'
    )
    return _section(
        "matches",
        f"Matches ({len(matches)})",
        "Each match in schedule order; open one for its charts. Shaded bands are the scenario's events and, on the price "
        "charts, the market's supra-competitive and price-war windows; dashed lines there are the product's Nash and "
        "monopoly prices (docs/metrics.md, collusion).",
        Html(
            f'<div class="scenarios">{about}</div>{warnings}{controls}<div class="match-list">{"".join(sections)}</div>'
        ),
    )


def match_section(
    detail: store.MatchDetail, scenario: Scenario | None, colors: Palette, metrics: list[store.MetricValue]
) -> str:
    """`scenario` (None: not found) gives the events to shade and the benchmark prices."""
    match, results = detail.match, sorted(detail.results, key=lambda r: (r.rank, r.merchant))
    events = scenario.events if scenario is not None else ()
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    series_style = _series_styles(detail.results, colors)
    winners = [r.contestant for r in results if r.rank == 1]
    summary = (
        f'<summary><span class="index">#{match.index}</span><span class="scenario">{escape(match.scenario)}</span>'
        f'<span class="muted">seed {match.seed} · {match.days} days</span>'
        f'<span class="lineup">{"".join(colors.chip(r.contestant) for r in results)}</span>'
        f'<span class="winner">won by {escape(", ".join(winners)) or "—"}</span></summary>'
    )
    levels = benchmark_levels(scenario, len(detail.results))
    charts = [
        *price_charts(detail.days, events, series_style, levels, detail.market.windows),
        _figure("Cash", _day_series(detail.days, series_style, lambda d: d.cash_end), events),
        _figure("Net worth", _day_series(detail.days, series_style, lambda d: d.net_worth), events),
        _figure(
            "Market share (of units sold to date)",
            share_series(detail.days, series_style),
            events,
            y_format=percent,
            y_from_zero=True,
        ),
    ]
    legend = "".join(
        f'<span class="chip"><i style="background:{color}"></i>{escape(name)}</span>'
        for name, color, _ in series_style.values()
    )
    parts = [
        f'<div class="legend">{legend}</div>',
        _results_table(results, colors),
        f'<div class="charts">{"".join(charts)}</div>',
    ]
    said = detail.days.said()
    if said:
        parts.append(f"<h4>Messages</h4>{_messages_table(said, contestant_of)}")
    if detail.deviation is not None:
        parts.append(deviation_part(detail, events, series_style, levels))
    if metrics:
        parts.append(
            f"<h4>Metrics</h4>{_metric_table(metrics, key=lambda m: _seat_label(m.merchant, m.contestant))}"
        )
    if detail.market.metrics:
        parts.append(f"<h4>Collusion</h4>{_market_table(detail.market)}")
    if detail.calls:
        parts.append(f"<h4>Model calls</h4>{_match_usage(detail.calls, contestant_of, colors)}")
    if detail.faults:
        parts.append(f"<h4>Faults</h4>{_faults_list(detail.faults, contestant_of)}")
    lineup = " ".join(sorted({r.contestant for r in detail.results}))
    return (
        f'<details class="match" id="match-{match.id}" data-scenario="{escape(match.scenario)}" '
        f'data-contestants="{escape(lineup)}">{summary}<div class="match-body">'
        f'<p class="muted">match {match.id} · key <code>{escape(match.key)}</code> · played in {match.wall_seconds:.1f} s</p>'
        f"{''.join(parts)}</div></details>"
    )


# Charts of one match --------------------------------------------------------------------------


def price_charts(
    days: Sequence[DayRecord],
    events: Sequence[Event],
    styles: dict[str, tuple[str, str, bool]],
    levels: Mapping[str, list[Level]],
    windows: Sequence[PriceWindow],
) -> list[str]:
    """One chart per product: every merchant's posted price, day by day, with the product's
    `levels` (its benchmark prices) and the match's price windows."""
    products = list(dict.fromkeys(p for d in days for p in d.prices))
    return [
        _figure(
            f"Price: {product}",
            _day_series(days, styles, lambda d, p=product: d.prices.get(p)),
            [e for e in events if e.product in (None, product)],
            windows,
            levels=levels.get(product, []),
        )
        for product in products
    ]


DEVIATION_VIEW = (
    5,
    20,
)  # days before the deviation and after its end that its charts show, as impulse responses are drawn


def deviation_part(
    detail: store.MatchDetail,
    events: Sequence[Event],
    styles: dict[str, tuple[str, str, bool]],
    levels: Mapping[str, list[Level]],
) -> str:
    """A probed match's two paths around the deviation (DEVIATION_VIEW): per product, every
    merchant's price on path (solid) and on the deviated path (dashed, "(deviated)"), the
    forced days shaded, the product's benchmark `levels`; the faults of the deviated path."""
    path = detail.deviation
    assert path is not None
    probe = path.probe
    contestant_of = {r.merchant: r.contestant for r in detail.results}
    forced = probe.forced([r.merchant for r in detail.results])  # results are in seat order
    who = _seat_label(forced, contestant_of[forced]) if forced is not None else f"seat {probe.seat}"
    deviated_styles = {m: (f"{name} (deviated)", color, True) for m, (name, color, _) in styles.items()}
    solid = {m: (name, color, False) for m, (name, color, _) in styles.items()}
    products = list(dict.fromkeys(p for d in detail.days for p in d.prices))
    forced_days = Band(
        probe.day - 0.5, probe.last_day + 0.5, f"{who} forced to {probe.target} ({probe.when})", "deviation"
    )
    first, last = probe.day - DEVIATION_VIEW[0], probe.last_day + DEVIATION_VIEW[1]
    around = (
        [d for d in detail.days if first <= d.day <= last],
        [d for d in path.days_played if first <= d.day <= last],
    )
    charts = [
        _figure(
            f"Price, on path and deviated: {product}",
            [
                *_day_series(around[0], solid, lambda d, p=product: d.prices.get(p)),
                *_day_series(around[1], deviated_styles, lambda d, p=product: d.prices.get(p)),
            ],
            [e for e in events if e.product in (None, product)],
            bands=[forced_days],
            levels=levels.get(product, []),
        )
        for product in products
    ]
    said = [m for m in DayLog.of(path.days_played).said() if m.day >= probe.day]
    messages = (
        f"<h5>Messages on the deviated path, from day {probe.day}</h5>{_messages_table(said, contestant_of)}"
        if said
        else ""
    )
    replayed = sum(c.cached for c in path.calls)
    calls = (
        f" Its model calls: {len(path.calls)}, {replayed} of them answered from the response cache."
        if path.calls
        else ""
    )
    return (
        f'<h4>Deviation probe</h4><p class="muted">The match played again with the same seeds, {escape(who)} forced to '
        f"{escape(probe.target)} on {probe.when}; the measures are among the metrics below (definitions: results/deviation.py).{calls}</p>"
        f'<div class="charts">{"".join(charts)}</div>{messages}'
        + (_faults_list(path.faults, contestant_of) if path.faults else "")
    )


def _faults_list(faults: Sequence[Fault], contestant_of: Mapping[str, str]) -> str:
    items = "".join(
        f"<li>day {f.day} · {escape(_seat_label(f.merchant, contestant_of.get(f.merchant, f.merchant)))} · <b>{escape(f.kind)}</b> {escape(f.detail)}</li>"
        for f in faults
    )
    return f'<ul class="faults">{items}</ul>'


def _messages_table(said: Sequence[Said], contestant_of: Mapping[str, str]) -> str:
    rows = [[m.day, _seat_label(m.merchant, contestant_of.get(m.merchant, m.merchant)), m.text] for m in said]
    return _table(["day", "merchant", "message (read by the rivals the next day)"], rows, numeric_from=3)


def benchmark_levels(scenario: Scenario | None, seats: int) -> dict[str, list[Level]]:
    """Per product, its Nash and monopoly (joint-profit) price for `seats` merchants
    (results.collusion.seat_benchmarks); with asymmetric seats the mean over them, as the
    label says. None without the scenario or an equilibrium."""
    found = seat_benchmarks(scenario, seats) if scenario is not None else None
    if found is None:
        return {}
    return {
        product: [
            _level("Nash", found.nash_price[:, j], "nash"),
            _level("monopoly", found.monopoly_price[:, j], "monopoly"),
        ]
        for j, product in enumerate(scenario.product_ids)
    }


def _level(name: str, prices: Sequence[float], kind: str) -> Level:
    mean = sum(prices) / len(prices)
    alike = max(prices) - min(prices) <= 1e-9 * max(1.0, abs(mean))
    return Level(float(mean), f"{name} {mean:.2f}" + ("" if alike else " (mean of seats)"), kind)


def share_series(days: Sequence[DayRecord], styles: dict[str, tuple[str, str, bool]]) -> list[Series]:
    """Each merchant's market share (market.accounting.market_shares) of the units sold from
    day 1 to each day, from the first sale on, so the last point is the match's."""
    sold_by_day: dict[int, dict[str, float]] = defaultdict(dict)
    for d in days:
        sold_by_day[d.day][d.merchant] = sum(d.units_sold.values())
    totals: dict[str, float] = defaultdict(float)
    points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for day in sorted(sold_by_day):
        for merchant, units in sold_by_day[day].items():
            totals[merchant] += units
        if not any(totals.values()):
            continue
        shares = dict(zip(totals, market_shares(list(totals.values()))))
        for merchant in sold_by_day[day]:
            points[merchant].append((day, shares[merchant]))
    return [
        Series(name, color, points[merchant], dashed) for merchant, (name, color, dashed) in styles.items()
    ]


def _day_series(days: Sequence[DayRecord], styles: dict[str, tuple[str, str, bool]], value) -> list[Series]:
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
            _seat_label(r.merchant, r.contestant),
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
    **options,
) -> str:
    """A captioned line chart over the match's days, its events, price windows and `bands` shaded."""
    shaded = [
        Band(e.start_day - 0.5, e.end_day + 0.5, f"{e.name} ({e.kind} ×{e.multiplier:g})", e.kind)
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
    svg = line_chart(series, title=title, bands=[*shaded, *bands], **options)
    return f'<figure class="chart-cell"><figcaption>{escape(title)}</figcaption>{svg}</figure>'


# Tables ---------------------------------------------------------------------------------------

USAGE_COLUMNS = [
    "calls",
    "input tokens",
    "output tokens",
    "cached tokens",
    "cache hits",
    "retries",
    "seconds",
    "cost $",
]


def _usage_cells(calls: Sequence[ModelCallRecord]) -> list[str]:
    return [
        f"{len(calls):,}",
        f"{sum(c.input_tokens for c in calls):,}",
        f"{sum(c.output_tokens for c in calls):,}",
        f"{sum(c.cached_tokens for c in calls):,}",
        f"{sum(c.cached for c in calls):,}",
        f"{sum(max(c.attempts - 1, 0) for c in calls):,}",
        f"{sum(c.latency for c in calls):,.1f}",
        _fixed(total_cost(calls), 4),
    ]


def _match_usage(calls: Sequence[ModelCallRecord], contestant_of: dict[str, str], colors: Palette) -> str:
    by_merchant: dict[str, list[ModelCallRecord]] = defaultdict(list)
    for call in calls:
        by_merchant[call.merchant].append(call)
    rows = [
        [colors.chip(contestant_of.get(merchant, merchant)), merchant, *_usage_cells(group)]
        for merchant, group in by_merchant.items()
    ]
    return _table(["contestant", "seat", *USAGE_COLUMNS], rows, numeric_from=2)


def _metric_table(rows: Sequence[store.MetricValue], key) -> str:
    """Metrics down, `key(row)` across; each cell the mean of the values that apply."""
    columns = list(dict.fromkeys(key(r) for r in sorted(rows, key=lambda r: (r.match_id, r.merchant))))
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r.value is not None:
            values[r.name, key(r)].append(r.value)
    names = list(dict.fromkeys(r.name for r in rows))  # as stored: results.metrics order
    body = [
        [name.replace("_", " "), *(_metric_value(_mean(values.get((name, c), []))) for c in columns)]
        for name in names
    ]
    return _table(["metric", *columns], body, numeric_from=1)


def _market_table(market: MarketScores) -> str:
    """The market's metrics, then its price windows by kind."""
    rows = [
        [name.replace("_", " "), _metric_value(market.metrics[name])]
        for name in MARKET_METRICS
        if name in market.metrics
    ]
    rows += [[f"{title} windows", window_days(market.windows, kind)] for kind, title in WINDOW_TITLES.items()]
    return _table(["market", "value"], rows, numeric_from=1)


def _results_table(results: Sequence[MerchantResult], colors: Palette) -> str:
    rows = [
        [
            r.rank,
            colors.chip(r.contestant),
            r.merchant,
            _fixed(r.net_worth, 0),
            _fixed(r.profit, 0),
            _fixed(r.final_cash, 0),
            _share(r.market_share),
            "—" if r.bankrupt_day is None else f"day {r.bankrupt_day}",
            r.faults,
            r.rejected_operations,
        ]
        for r in results
    ]
    return _table(
        [
            "rank",
            "contestant",
            "seat",
            "net worth",
            "profit",
            "cash",
            "share",
            "bankrupt",
            "faults",
            "rejected",
        ],
        rows,
        numeric_from=3,
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], numeric_from: int) -> str:
    """A table whose columns from `numeric_from` on are right-aligned numbers."""

    def cell(tag: str, i: int, value: object) -> str:
        css = ' class="num"' if i >= numeric_from else ""
        text = value if isinstance(value, Html) else escape(str(value))
        return f"<{tag}{css}>{text}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _scenario_card(scenario: Scenario) -> str:
    events = (
        "".join(
            f"<li><b>{escape(e.name)}</b>: {escape(e.kind)} ×{e.multiplier:g}"
            f"{' on ' + escape(e.product) if e.product else ''}, days {e.start_day}–{e.end_day}</li>"
            for e in scenario.events
        )
        or "<li>no scripted events</li>"
    )
    products = ", ".join(p.id for p in scenario.products)
    return (
        f'<div class="scenario-card"><h4>{escape(scenario.name)}</h4><p>{escape(scenario.description)}</p>'
        f'<p class="muted">{scenario.days} days · products: {escape(products)}</p><ul>{events}</ul></div>'
    )


def _section(anchor: str, title: str, lead: str, content: Html) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2><p class="lead">{escape(lead)}</p>{content}</section>'


# Formatting and queries -----------------------------------------------------------------------


def _seat_label(merchant: str, contestant: str) -> str:
    return contestant if merchant == contestant else f"{contestant} ({merchant})"


def _fixed(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _metric_value(value: float | None) -> str:
    """Metrics range from shares to money: whole numbers when large, three decimals when small."""
    if value is None:
        return "—"
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 1:
        return f"{value:.2f}"
    return "0" if value == 0 else f"{value:.3f}" if size >= 0.001 else f"{value:.2e}"


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _diverging(rate: float) -> str:
    """Red (0) through white (0.5) to blue (1), light enough to read dark text on."""
    t = max(-1.0, min(1.0, 2 * rate - 1))
    end = (70, 120, 190) if t > 0 else (205, 75, 75)
    weight = abs(t) * 0.7
    r, g, b = (round(255 + (c - 255) * weight) for c in end)
    return f"rgb({r},{g},{b})"


def _metrics(engine: Engine, tournament_id: int) -> dict[int, list[store.MetricValue]]:
    by_match: dict[int, list[store.MetricValue]] = defaultdict(list)
    for row in store.metrics(engine, tournament_id):
        by_match[row.match_id].append(row)
    return by_match
