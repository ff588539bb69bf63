"""The report's page: one tournament, as results.report read it (ReportRecord), rendered as a
single self-contained HTML page.

Everything the page needs is inside it: CSS and a few lines of script in the template
(templates/report.html.j2), charts as inline SVG (results/presentation/svg_charts.py), no
fonts, images or links to fetch, so it opens offline and no request leaves the machine. The
template is rendered with autoescaping: every text of the record is escaped where it is put in
the page, and only the charts' SVG, built by svg_charts with its own texts escaped, goes in as
markup.

Sections, each an element with a fixed id: `overview`, `leaderboard` (table and forest plot
of the ratings with their intervals), `head-to-head` (win matrix), `metrics` (the stored
metrics, mean per contestant), `usage` (model tokens and cost), `conduct` (a judged
tournament's verdicts, a match a row), `matches` (one collapsible section per match: results,
price trajectories with the scenario's events, cash, net worth, market share, the messages its
merchants sent each other, its metrics, the market's collusion measures and model calls, and
in a judged tournament its conduct; the price charts carry the product's Nash and monopoly
prices and the supra-competitive and price-war windows). The tables that `arena` shows too
are those of results.presentation.views, a match's section that of .match_charts. A contestant
keeps one colour on the whole page.
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from common.conduct import Words
from common.errors import UserError
from results.presentation import conduct_tables, views
from results.presentation.incidents import spans, words_anchor
from results.presentation.match_charts import Palette, match_part
from results.presentation.svg_charts import (
    Interval,
    Point,
    cost_plot,
    forest_plot,
)
from results.readings import RankedMatch
from results.records import (
    ModelCallRecord,
    PlayedScenarios,
    SweepCell,
    shown_value,
    total_cost,
)
from results.scoring import sweeps
from results.scoring.conduct import Combined, MatchConduct
from results.scoring.ratings import LeaderboardRow, cost_front
from results.scoring.sweeps import CellResult
from results.storage.schema import MatchRow, TournamentRow, stored_id
from results.storage.store import MatchDetail, MetricValue

PAGES = Environment(
    loader=PackageLoader("results.presentation", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


class ReportError(UserError):
    """The report cannot be written where it was asked to be (one line)."""


@dataclass(frozen=True)
class ReportRecord:
    """What the report shows of a tournament, as read from the record (results.report): its
    table (`rows`), contestants' kinds, stored metrics, matches (each read when it is reached),
    rankings (solo matches ranked against one another's), why its run ended early (None: it did
    not), model calls and sweep; `scenarios` give each match's events to mark and
    `scenario_notes` say which could not be read."""

    tournament: TournamentRow
    rows: Sequence[LeaderboardRow]
    kinds: Mapping[str, str]
    metrics: Sequence[MetricValue]
    details: Iterable[MatchDetail]
    rankings: Iterable[RankedMatch]
    ended: str | None
    calls: Sequence[ModelCallRecord]
    sweep: SweepPart | None
    scenarios: PlayedScenarios
    scenario_notes: Sequence[str]
    conduct: Callable[[MatchDetail], ConductPart | None]


def render(record: ReportRecord) -> str:
    """The report's page."""
    tournament, rows, scenarios = record.tournament, record.rows, record.scenarios
    names = [row.contestant for row in rows]
    colors = Palette(record.kinds)  # as the viewer colours them
    metrics: dict[int, list[MetricValue]] = defaultdict(list)
    for value in record.metrics:
        metrics[value.match_id].append(value)
    parts, conducts = [], {}
    for detail in record.details:
        parts.append(match_part(detail, scenarios.of(detail.match), colors, metrics[detail.match_id]))
        conduct = record.conduct(detail)
        if conduct is not None:
            conducts[detail.match_id] = conduct
    head_to_head = HeadToHead()
    for ranked in record.rankings:
        head_to_head.add(ranked.ranks)
    matches = [part.match for part in parts]
    scenario_names = sorted({m.scenario for m in matches})
    finished = views.moment(tournament.finished_at) if tournament.finished_at else "—"
    ended = record.ended  # an adaptive run's says what its intervals hold
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
        kinds=record.kinds,
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
        sweep=record.sweep,
        metrics=metric_means_table(
            [m for per_match in metrics.values() for m in per_match],
            {stored_id(m.id): m.scenario for m in matches},
        ),
        usage=usage_table(record.calls),
        verdicts=verdicts_table(
            [
                (part.match, conducts[stored_id(part.match.id)])
                for part in parts
                if stored_id(part.match.id) in conducts
            ]
        ),
        conducts=conducts,
        scenarios=[scenario for scenario in scenarios.listed() if scenario.name in scenario_names],
        notes=record.scenario_notes,
        contestants=names,
        scenario_names=scenario_names,
        matches=parts,
    )


def write_page(out: Path, page: str) -> None:
    """Write the page to `out` in one step: a failure leaves no partial file. ReportError when
    `out` cannot be written."""
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
        """One match's (contestant, rank) of every seat (results.readings.RankedMatch)."""
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


# Conduct -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledWords:
    """An item of words its judges labelled, as a page shows it: its labels as a cell
    (conduct_tables.said_labels: "undecided" where too few judges could be read), its id on its
    day's page (incidents.words_anchor) and each readable judge's reason."""

    words: Words
    said: Combined

    @property
    def labels(self) -> str:
        return conduct_tables.said_labels(self.said)

    @property
    def anchor(self) -> str:
        return words_anchor(self.words)

    @property
    def reasons(self) -> str:
        return "; ".join(f"{judge}: {reason}" for judge, reason in self.said.reasons.items())


@dataclass(frozen=True)
class ConductPart:
    """A match's conduct as the report and the viewer show it: `conduct` None where the judges
    of its tournament's latest judging have not all judged it yet (the rest empty); else the
    days of its verdict's evidence as runs (first, last), the words its judges labelled
    (conduct_tables.labelled_items) and the tables of each merchant's counts, of its claims as
    checked (where it has any) and of the judges' agreement (two judges or more), as `arena
    show` prints them."""

    conduct: MatchConduct | None
    evidence: list[tuple[int, int]] = field(default_factory=list)
    labelled: list[LabelledWords] = field(default_factory=list)
    tables: list[views.TableModel] = field(default_factory=list)

    def on_day(self, merchant: str, day: int) -> list[LabelledWords]:
        """The labelled words `merchant` wrote on `day`."""
        return [item for item in self.labelled if item.words.merchant == merchant and item.words.day == day]


def conduct_section(conduct: MatchConduct | None, contestants: Mapping[str, str]) -> ConductPart:
    """A match's conduct (results.presentation.conduct_tables.stored_conduct; None: not judged
    yet) as ConductPart, its merchants' contestants from `contestants` (merchant: contestant)."""
    if conduct is None:
        return ConductPart(None)
    tables = [conduct_tables.merchants_table(conduct.merchants, contestants)]
    if conduct.claims:
        tables.append(conduct_tables.claims_table(conduct))
    if len(conduct.judges) > 1:
        tables.append(conduct_tables.agreement_table(conduct.agreement))
    return ConductPart(
        conduct,
        list(spans(np.array(conduct.verdict.evidence_days, dtype=int))),
        [LabelledWords(words, said) for words, said in conduct_tables.labelled_items(conduct)],
        tables,
    )


def days_text(runs: Sequence[tuple[int, int]]) -> str:
    """Runs of days as a cell, "1, 4–9"."""
    return ", ".join(str(first) if first == last else f"{first}–{last}" for first, last in runs)


def verdicts_table(judged: Sequence[tuple[MatchRow, ConductPart]]) -> views.TableModel | None:
    """A judged tournament's verdicts, a match a row (its index, scenario and seed; its verdict,
    days of evidence and what they show); "not judged yet" for a match its latest judges have
    not all judged. None: no match of a judged tournament is stored."""
    if not judged:
        return None
    rows = [
        [f"#{match.index}", match.scenario, str(match.seed), "not judged yet", "", ""]
        if part.conduct is None
        else [
            f"#{match.index}",
            match.scenario,
            str(match.seed),
            part.conduct.verdict.kind,
            days_text(part.evidence),
            part.conduct.verdict.detail,
        ]
        for match, part in judged
    ]
    headers = [
        views.Header("match", numeric=True),
        views.Header("scenario"),
        views.Header("seed", numeric=True),
        views.Header("verdict"),
        views.Header("days of evidence"),
        views.Header("detail"),
    ]
    return views.TableModel("verdicts", headers, [rows])


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

    table: views.TableModel
    metric: str
    heat_map: HeatMap | None


def key_metric(every_cell: Sequence[CellResult]) -> str:
    """The metric of a sweep's heat map unless one is asked for: the first of
    sweeps.KEY_METRICS its matches have."""
    return next(
        (m for m in sweeps.KEY_METRICS if any(c.values[m] is not None for c in every_cell)),
        sweeps.KEY_METRICS[-1],
    )


def varying_factors(cells: Sequence[SweepCell]) -> list[str]:
    """The factors of a sweep that take more than one value, in its order."""
    return [f for f in sweeps.factors_of(cells) if len({shown_value(c.factors[f]) for c in cells}) > 1]


def sweep_section(
    every_cell: Sequence[CellResult], metric: str, varying: Sequence[str], grouped: Sequence[CellResult]
) -> SweepPart:
    """A sweep's table by cell (`every_cell`) and, when two factors vary, a heat map of `metric`
    over the first two (`grouped` by them)."""
    table = views.sweep_table(every_cell, "by cell")
    if len(varying) < 2:
        return SweepPart(table, metric, None)
    down, across = varying[:2]
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
    return SweepPart(table, metric, HeatMap(metric, down, across, columns, rows, list(varying[2:])))


# The tournament's own tables ------------------------------------------------------------------


def metric_means_table(
    values: Sequence[MetricValue], scenarios: Mapping[int, str]
) -> views.TableModel | None:
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
    return views.TableModel("metrics", headers, [rows], notes)


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


def usage_table(calls: Sequence[ModelCallRecord]) -> views.TableModel | None:
    """The tournament's model calls by contestant and model, then all of them; its judges'
    calls (a `conduct:` section's) apart, by judge and model, then all of theirs (None: no
    call)."""
    if not calls:
        return None
    judging = [call for call in calls if call.purpose == "judge"]
    playing = [call for call in calls if call.purpose != "judge"]
    sections: list[list[list[str]]] = []
    for who, made in (("merchants", playing), ("judges", judging)):
        if made:
            groups: dict[tuple[str, str], list[ModelCallRecord]] = defaultdict(list)
            for call in made:
                groups[call.contestant, call.model].append(call)
            sections.append(
                [
                    [contestant, model, *(cell(group) for _, cell in USAGE_COLUMNS)]
                    for (contestant, model), group in sorted(groups.items())
                ]
            )
            total = f"all {who}" if judging else "all"
            sections.append([[total, "", *(cell(made) for _, cell in USAGE_COLUMNS)]])
    headers = [
        views.Header("contestant", contestant=True),
        views.Header("model"),
        *(views.Header(header, numeric=True) for header, _ in USAGE_COLUMNS),
    ]
    return views.TableModel("model usage", headers, sections)


# Formatting -----------------------------------------------------------------------------------


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
