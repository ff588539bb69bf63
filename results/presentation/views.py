"""The tables that both `arena` (leaderboard, show) and the HTML report show, each defined once:
its columns (a header, how a row's value is written), or for a table whose columns are a
match's merchants, the function that builds it. A `TableModel` holds only text, so the two fronts
show the same headers and the same text in every cell: arena/cli/printing.py draws it with rich,
results/presentation/report_page.py through its template.

A measure that does not apply for a reason (results.scoring.match_records.NotApplicable: a collusion
measure where its benchmarks are too close) is written NOT_APPLICABLE in its cell, and its
reason once in the table's notes, under it (`not_applicable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar

from common.people import PERSON_KIND
from market.daylog import CompetitorDays, Said
from results.records import (
    WINDOW_TITLES,
    DeviationPath,
    GoalResult,
    MarketScores,
    MerchantConduct,
    MerchantResult,
    MetricNote,
    ModelCallRecord,
    shown_value,
    total_cost,
    window_days,
)
from results.scoring.deviation import DEVIATION_METRICS
from results.scoring.match_records import Unit
from results.scoring.metrics import MARKET_METRICS, METRICS
from results.scoring.ratings import LeaderboardRow, Standing
from results.scoring.sweeps import CellResult, MeanInterval, factors_of
from results.storage.schema import MatchRow, TournamentRow

Row = TypeVar("Row", contravariant=True)


@dataclass(frozen=True)
class Header:
    """A column as shown: `numeric` columns are aligned right (by the report), `whole` ones are
    never wrapped, and a `contestant` column names a contestant (the report shows its colour)."""

    text: str
    numeric: bool = False
    whole: bool = False
    contestant: bool = False


@dataclass(frozen=True)
class TableModel:
    """A table as text: its rows in sections (a line is drawn between two), each row one text
    per header, and notes shown under it (why its "n/a" cells are)."""

    title: str
    headers: list[Header]
    sections: list[list[list[str]]]
    notes: list[str] = field(default_factory=list)


def _always(rows: Sequence[object]) -> bool:
    return True


@dataclass(frozen=True)
class Column(Generic[Row]):
    """A column of a table of `Row`s: its header, the text of a row's cell, and whether the
    column is shown for the rows at hand (a column with nothing to say is left out)."""

    header: Header
    cell: Callable[[Row], str]
    shown: Callable[[Sequence[Row]], bool] = _always


def tabulate(title: str, columns: Sequence[Column[Row]], rows: Sequence[Row]) -> TableModel:
    """One row per element of `rows`, in one section, under the columns shown for them."""
    kept = [column for column in columns if column.shown(rows)]
    return TableModel(title, [c.header for c in kept], [[[c.cell(row) for c in kept] for row in rows]])


# How values are written ----------------------------------------------------------------------


def blank(value: float | None, fmt: str, missing: str = "") -> str:
    """`value` written with `fmt`, or `missing` for None."""
    return missing if value is None else fmt.format(value)


def money(value: float) -> str:
    return f"{value:,.2f}"


def moment(value: datetime) -> str:
    """A moment (UTC) to the minute."""
    return value.strftime("%Y-%m-%d %H:%M UTC")


def per_product(values: Mapping[str, float], fmt: str = "{:g}") -> str:
    """Values by product: the value alone for one product, `product=value` each for more."""
    if len(values) == 1:
        return fmt.format(next(iter(values.values())))
    return " ".join(f"{k}={fmt.format(v)}" for k, v in values.items())


NOT_APPLICABLE = "n/a"  # a measure's cell where it does not apply, its reason in the table's notes


def not_applicable(noted: Iterable[tuple[str, str, str]]) -> list[str]:
    """The notes under a table that say why its NOT_APPLICABLE cells are, from (measure, whose
    cell, reason) in the table's order: one line per measure and reason, naming whose cells
    ("profit_gain n/a for m0, m1: Nash and monopoly profits 5.4% apart, ..."; no one: a
    measure of the market)."""
    whose: dict[tuple[str, str], list[str]] = {}
    for measure, who, reason in noted:
        whose.setdefault((measure, reason), []).append(who)
    return [
        f"{measure} {NOT_APPLICABLE}{' for ' + ', '.join(w for w in who if w) if any(who) else ''}: {reason}"
        for (measure, reason), who in whose.items()
    ]


def reasons(noted: Iterable[tuple[str, str]]) -> str | None:
    """Why a mean over seats leaves some out, from each such seat's (scenario of its match,
    reason): one text of "scenario: reason" each once, sorted so that it is the same whatever
    order the seats come in, joined by "; "; None where no seat is left out. The leaderboard
    (its table and --json) and the report's table of means write their notes with it."""
    return "; ".join(sorted({f"{scenario}: {reason}" for scenario, reason in noted})) or None


LEFT_OUT = f"*: the mean of the seats where it applies; the others ({NOT_APPLICABLE}) are left out"


def noted_mean(
    mean: float | None, note: str | None, written: Callable[[float], str], missing: str = ""
) -> str:
    """A mean over seats as a table shows it: the mean `written`, with '*' where a `note` says
    why some seats are left out (LEFT_OUT); NOT_APPLICABLE where it applies to none; `missing`
    where no seat has a value and none says why."""
    if mean is None:
        return missing if note is None else NOT_APPLICABLE
    return written(mean) + ("*" if note is not None else "")


def mean_notes(noted: Sequence[tuple[str, str, str]], partial: bool) -> list[str]:
    """The notes under a table of means: `not_applicable`'s, then LEFT_OUT where some mean
    leaves seats out (`partial`)."""
    return not_applicable(noted) + ([LEFT_OUT] if partial else [])


def metric_value(value: float | None, unit: Unit, note: str | None = None) -> str:
    """A metric's value in its unit (results.scoring.match_records.Metric.unit); NOT_APPLICABLE where it has
    none for a reason (`note`)."""
    if value is None:
        return "—" if note is None else NOT_APPLICABLE
    if unit == "share":
        return f"{value:.1%}"
    if unit == "money":
        return money(value)
    if unit == "day":
        return f"day {value:g}"
    if unit == "per_day":
        return f"{value:+.4f}/day"
    return f"{value:g}" if unit == "count" else f"{value:.2f}"


def metric_unit(name: str) -> Unit | None:
    """The unit of a metric of a merchant or of the market; None for a deviation measure or a
    value a merchant reported of itself."""
    found = METRICS.get(name) or MARKET_METRICS.get(name)
    return None if found is None else found.unit


def mean_value(number: float, unit: Unit | None) -> str:
    """A mean of a metric's values in its unit (of counts: with a fraction; of no known unit:
    three figures, or whole above a thousand)."""
    if unit is None:
        return f"{number:,.0f}" if abs(number) >= 1000 else f"{number:.3g}"
    return f"{number:.1f}" if unit == "count" else metric_value(number, unit)


def mean_and_interval(value: MeanInterval | None, unit: Unit | None) -> str:
    """`0.85 [0.83, 0.87]`: a mean in its unit with its interval, when it has one."""
    if value is None:
        return "—"
    if value.low is None or value.high is None:
        return mean_value(value.mean, unit)
    return f"{mean_value(value.mean, unit)} [{mean_value(value.low, unit)}, {mean_value(value.high, unit)}]"


def reported_value(value: float | None) -> str:
    """A value a merchant reported of itself, of no known unit: whole numbers in full."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if value.is_integer() else f"{value:g}"


# The leaderboard -----------------------------------------------------------------------------


def _given(*fields: str) -> Callable[[Sequence[LeaderboardRow]], bool]:
    """Shown when some row has a value for one of `fields`."""
    return lambda rows: any(getattr(row, f) is not None for row in rows for f in fields)


_GAINS = {"profit_gain": "profit gain", "price_gain": "price gain"}  # field: header


def gain_note(row: LeaderboardRow, field: str) -> str | None:
    """Why some or all of the row's seats have no `field` (a gain of _GAINS): `reasons`."""
    return reasons(row.not_applicable.get(field, ()))


def _gain_cell(field: str) -> Callable[[LeaderboardRow], str]:
    """A mean gain of the leaderboard (noted_mean)."""
    return lambda row: noted_mean(getattr(row, field), gain_note(row, field), "{:.2f}".format)


def _gain_given(field: str) -> Callable[[Sequence[LeaderboardRow]], bool]:
    """Shown when some row has a value for the gain `field`, or says why it has none."""
    return lambda rows: any(
        getattr(row, field) is not None or gain_note(row, field) is not None for row in rows
    )


def _people_seated(rows: Sequence[LeaderboardRow]) -> bool:
    return any(row.person for row in rows)


PERSON_MARK = "yes"  # the `person` column's cell of a contestant a person plays
PEOPLE_LEGEND = (
    f"person: a person played it (kind {PERSON_KIND}); s per day: the mean seconds a day's pages "
    "waited for them, in place of tokens and cost"
)  # under a table that seats a person


def _models_used(rows: Sequence[LeaderboardRow]) -> bool:
    return any(row.tokens for row in rows)


def _priced(rows: Sequence[LeaderboardRow]) -> bool:
    """Some contestant paid for its calls, or called a model without a price."""
    return any(row.tokens and (row.cost is None or row.cost > 0) for row in rows)


def versus_next(row: Standing) -> str:
    """How settled the order of a contestant and the next in the table is: the share of the
    bootstrap's resamples ordering them so where it is settled ("99%"), else "tied" and the
    matches more estimated to settle it ("tied +40"; Standing.above_next, matches_to_separate)."""
    if row.above_next is None:
        return ""
    if row.matches_to_separate == 0:
        return f"{row.above_next:.0%}"
    more = row.matches_to_separate
    if more is None:
        return "tied"
    return (
        f"tied +{more:,}" if more < 10_000 else f"tied +{more / 1000:,.0f}k" if more < 10**6 else "tied +1M+"
    )


STANDING_COLUMNS: list[Column[Standing]] = [
    Column(Header("rank"), lambda r: blank(r.rank, "{}")),
    Column(Header("contestant", whole=True, contestant=True), lambda r: r.contestant),
    Column(Header("rating", numeric=True, whole=True), lambda r: blank(r.rating, "{:.0f}")),
    Column(
        Header("95% interval", numeric=True, whole=True),
        lambda r: "" if r.low is None or r.high is None else f"{r.low:.0f}–{r.high:.0f}",
    ),
    Column(
        Header("vs next", whole=True),
        versus_next,
        lambda rows: any(row.above_next is not None for row in rows),
    ),
    Column(Header("elo", numeric=True), lambda r: f"{r.elo:.0f}"),
    Column(Header("matches", numeric=True), lambda r: str(r.matches)),
    Column(Header("win rate", numeric=True), lambda r: blank(r.win_rate, "{:.0%}")),
]


CONDUCT_COUNTS: dict[str, Callable[[MerchantConduct], int]] = {
    "judged seats": lambda c: c.seats,
    "proposals": lambda c: c.labels["proposal"],
    "threats": lambda c: c.labels["threat"],
    "promises broken": lambda c: c.promises_broken,
    "false claims": lambda c: c.false_statements,
}  # of a contestant's words as judged, the few the table shows (`--json`: all of them)


def _conduct_count(count: Callable[[MerchantConduct], int]) -> Callable[[LeaderboardRow], str]:
    return lambda row: "" if row.conduct is None else str(count(row.conduct))


def _judged(rows: Sequence[LeaderboardRow]) -> bool:
    return any(row.conduct is not None for row in rows)


def _unless_person(field: str, fmt: str) -> Callable[[LeaderboardRow], str]:
    """A cost of the leaderboard: "unknown" where a model has no price, blank for a person."""
    return lambda row: "" if row.person else blank(getattr(row, field), fmt, "unknown")


LEADERBOARD_COLUMNS: list[Column[LeaderboardRow]] = [
    *STANDING_COLUMNS[:2],
    Column(Header("person"), lambda r: PERSON_MARK if r.person else "", _people_seated),
    *STANDING_COLUMNS[2:],
    Column(
        Header("mean profit", numeric=True), lambda r: blank(r.mean_profit, "{:,.2f}"), _given("mean_profit")
    ),
    Column(
        Header("worst–best profit", numeric=True, whole=True),
        lambda r: (
            ""
            if r.worst_profit is None or r.best_profit is None
            else f"{r.worst_profit:,.2f}–{r.best_profit:,.2f}"
        ),
        _given("worst_profit"),
    ),
    Column(
        Header("variance: market / own", numeric=True),
        lambda r: "" if r.market_share is None else f"{r.market_share:.0%} / {1 - r.market_share:.0%}",
        _given("market_share"),
    ),
    Column(Header("faults", numeric=True), lambda r: str(r.faults), _given("faults")),
    Column(Header("validity", numeric=True), lambda r: blank(r.validity, "{:.1%}"), _given("validity")),
    Column(
        Header("memory error", numeric=True),
        lambda r: blank(r.memory_error, "{:.1%}"),
        _given("memory_error"),
    ),
    *(Column(Header(_GAINS[field], numeric=True), _gain_cell(field), _gain_given(field)) for field in _GAINS),
    Column(Header("goals met", numeric=True), lambda r: blank(r.goals_met, "{:.0%}"), _given("goals_met")),
    *(
        Column(Header(header, numeric=True), _conduct_count(count), _judged)
        for header, count in CONDUCT_COUNTS.items()
    ),
    Column(Header("s per day", numeric=True), lambda r: blank(r.seconds_per_day, "{:,.1f}"), _people_seated),
    Column(Header("tokens", numeric=True), lambda r: blank(r.tokens, "{:,}"), _models_used),
    Column(Header("cost $", numeric=True), _unless_person("cost", "{:.4f}"), _models_used),
    Column(Header("$ per match", numeric=True), _unless_person("cost_per_match", "{:.4f}"), _priced),
    Column(
        Header("rating per $", numeric=True),
        lambda r: blank(r.rating_per_dollar, "{:,.0f}"),
        _priced,
    ),
    Column(Header("composite", numeric=True), lambda r: blank(r.composite, "{:.3f}"), _given("composite")),
]


def leaderboard_table(rows: Sequence[LeaderboardRow], title: str) -> TableModel:
    """The leaderboard; columns without a value for anyone (no model used, no metric stored,
    no person seated) are left out. Its notes say why a gain is n/a for some seats (a '*' on a
    mean that leaves them out), and what a person's columns are where one sits (PEOPLE_LEGEND)."""
    table = tabulate(title, LEADERBOARD_COLUMNS, rows)
    noted = [
        (field, header, row, note)
        for field, header in _GAINS.items()
        for row in rows
        if (note := gain_note(row, field)) is not None
    ]
    notes = mean_notes(
        [(header, row.contestant, note) for _, header, row, note in noted],
        any(getattr(row, field) is not None for field, _, row, _ in noted),
    )
    return TableModel(table.title, table.headers, table.sections, notes + _legend(_people_seated(rows)))


def _legend(people: bool) -> list[str]:
    return [PEOPLE_LEGEND] if people else []


def leaderboard_records(rows: Sequence[LeaderboardRow]) -> list[dict[str, Any]]:
    """The leaderboard as `arena leaderboard --json` gives it: each row's fields, with each
    gain's reasons as the one text its table's note gives (`profit_gain_note` after
    `profit_gain`, `price_gain_note` after `price_gain`: gain_note, None where no seat is
    n/a)."""
    records = []
    for row in rows:
        record: dict[str, Any] = {}
        for name, value in row.model_dump(exclude={"not_applicable"}).items():
            record[name] = value
            if name in _GAINS:
                record[f"{name}_note"] = gain_note(row, name)
        records.append(record)
    return records


def standings_table(rows: Sequence[Standing], title: str) -> TableModel:
    """A table rated from match ranks alone (`arena rate`)."""
    return tabulate(title, STANDING_COLUMNS, rows)


# The stored tournaments ----------------------------------------------------------------------


@dataclass(frozen=True)
class ListedTournament:
    """A stored tournament as `arena tournaments` lists it: with its matches stored and the
    command that shows its leaderboard."""

    tournament: TournamentRow
    matches: int
    leaderboard: str

    def as_json(self) -> dict[str, Any]:
        t = self.tournament
        return {
            "id": t.id,
            "name": t.name,
            "file": t.config_path,
            "status": t.status,
            "matches": self.matches,
            "planned_matches": t.planned_matches,
            "started": t.created_at.isoformat(),
            "ended": None if t.finished_at is None else t.finished_at.isoformat(),
            "leaderboard": self.leaderboard,
        }


TOURNAMENT_COLUMNS: list[Column[ListedTournament]] = [
    Column(Header("id", numeric=True), lambda e: str(e.tournament.id)),
    Column(Header("name"), lambda e: e.tournament.name),
    Column(Header("file"), lambda e: e.tournament.config_path),
    Column(Header("status"), lambda e: e.tournament.status),
    Column(
        Header("matches", numeric=True, whole=True),
        lambda e: f"{e.matches} of {e.tournament.planned_matches}",
    ),
    Column(Header("started", whole=True), lambda e: moment(e.tournament.created_at)),
    Column(
        Header("ended", whole=True),
        lambda e: "" if e.tournament.finished_at is None else moment(e.tournament.finished_at),
    ),
    Column(Header("leaderboard", whole=True), lambda e: e.leaderboard),
]


def tournaments_table(listed: Sequence[ListedTournament], title: str) -> TableModel:
    return tabulate(title, TOURNAMENT_COLUMNS, listed)


# A sweep -------------------------------------------------------------------------------------


def sweep_table(cells: Sequence[CellResult], title: str) -> TableModel:
    """A row per group of cells (results.sweep_summary.by_cell): its factors' values, its matches and
    sessions, and each metric's mean over the sessions with its interval (and, in parentheses,
    over how many, when some sessions lack it)."""
    factors = factors_of(cells)
    metrics = list(cells[0].values) if cells else []
    headers = [
        *(Header(factor, whole=True) for factor in factors),
        Header("matches", numeric=True),
        Header("sessions", numeric=True),
        *(Header(metric, numeric=True, whole=True) for metric in metrics),
    ]
    rows = [
        [
            *(shown_value(cell.factors[factor]) for factor in factors),
            str(cell.matches),
            str(cell.sessions),
            *(_of_sessions(cell.values[metric], cell.sessions, metric_unit(metric)) for metric in metrics),
        ]
        for cell in cells
    ]
    return TableModel(title, headers, [rows])


def _of_sessions(value: MeanInterval | None, sessions: int, unit: Unit | None) -> str:
    """mean_and_interval, with the number of sessions it is over when some lack the metric."""
    shown = mean_and_interval(value, unit)
    return shown if value is None or value.n == sessions else f"{shown} ({value.n})"


# One match -----------------------------------------------------------------------------------

RESULT_COLUMNS: list[Column[MerchantResult]] = [
    Column(Header("rank"), lambda r: str(r.rank)),
    Column(Header("merchant"), lambda r: r.merchant),
    Column(Header("net worth", numeric=True), lambda r: money(r.net_worth)),
    Column(Header("profit", numeric=True), lambda r: money(r.profit)),
    Column(Header("cash", numeric=True), lambda r: money(r.final_cash)),
    Column(Header("share", numeric=True), lambda r: f"{r.market_share:.0%}"),
    Column(Header("bankrupt"), lambda r: "" if r.bankrupt_day is None else f"day {r.bankrupt_day}"),
    Column(Header("faults", numeric=True), lambda r: str(r.faults)),
    Column(Header("rejected", numeric=True), lambda r: str(r.rejected_operations)),
    Column(
        Header("length refusals", numeric=True),
        lambda r: str(r.length_refusals),
        lambda rows: any(r.length_refusals for r in rows),
    ),
]


def results_table(
    match: MatchRow, results: Sequence[MerchantResult], people: Mapping[str, float | None] | None = None
) -> TableModel:
    """The match's merchants, best rank first; where `people` (by merchant: its seconds per
    day, results.storage.store.MatchDetail.people) sit, a `person` column marks them and an `s
    per day` column gives their time, explained under the table (PEOPLE_LEGEND)."""
    seated = people or {}
    ranked = sorted(results, key=lambda r: r.rank)
    title = f"match {match.id}: {match.key}"
    if not seated:
        return tabulate(title, RESULT_COLUMNS, ranked)
    columns = [
        *RESULT_COLUMNS[:2],
        Column(Header("person"), lambda r: PERSON_MARK if r.merchant in seated else ""),
        *RESULT_COLUMNS[2:],
        Column(Header("s per day", numeric=True), lambda r: blank(seated.get(r.merchant), "{:,.1f}")),
    ]
    table = tabulate(title, columns, ranked)
    return TableModel(table.title, table.headers, table.sections, _legend(True))


def by_merchant(values: Iterable[tuple[str, str, float | None]]) -> dict[str, dict[str, float | None]]:
    """(merchant, metric, value) rows as metric values by merchant, in the order given."""
    found: dict[str, dict[str, float | None]] = {}
    for merchant, name, value in values:
        found.setdefault(merchant, {})[name] = value
    return found


def metrics_table(
    metrics: Mapping[str, Mapping[str, float | None]],
    contestants: Mapping[str, str],
    notes: Mapping[tuple[str, str], str] | None = None,
) -> TableModel:
    """One row per metric (a section per group: coherence, operations, economics, collusion),
    one column per merchant of `metrics`, headed with its contestant where that is another
    name; then what merchants reported of themselves (a learner's convergence), by its stored
    name. `notes` by (merchant, metric): why one does not apply. The deviation measures have a
    table of their own (deviation_table)."""
    merchants, notes = list(metrics), notes or {}
    headers = [m if contestants.get(m, m) == m else f"{m} ({contestants[m]})" for m in merchants]
    sections: list[list[list[str]]] = []
    group = None
    for name, definition in METRICS.items():
        if definition.group != group:
            sections.append([])
            group = definition.group
        sections[-1].append(
            [
                name,
                *(
                    metric_value(metrics[m].get(name), definition.unit, notes.get((m, name)))
                    for m in merchants
                ),
            ]
        )
    reported = [
        name
        for name in dict.fromkeys(n for values in metrics.values() for n in values)
        if name not in METRICS and name not in DEVIATION_METRICS
    ]
    if reported:
        sections.append(
            [[name, *(reported_value(metrics[m].get(name)) for m in merchants)] for name in reported]
        )
    return TableModel(
        "metrics (definitions: docs/metrics.md)",
        [Header("metric"), *(Header(h, numeric=True) for h in headers)],
        sections,
        not_applicable(
            (name, merchant, notes[merchant, name])
            for name in METRICS
            for merchant in merchants
            if (merchant, name) in notes and metrics[merchant].get(name) is None
        ),
    )


def metric_notes(values: Iterable[tuple[str, str, str | None]]) -> dict[tuple[str, str], str]:
    """(merchant, metric, note) rows as the notes metrics_table reads, those without one left out."""
    return {(merchant, name): note for merchant, name, note in values if note is not None}


def goals_table(goals: Sequence[GoalResult], contestants: Mapping[str, str]) -> TableModel:
    """One row per campaign goal, one column per merchant: its value against the bound for this
    match, and whether it met it."""
    merchants = list(dict.fromkeys(g.merchant for g in goals))
    headers = [m if contestants.get(m, m) == m else f"{m} ({contestants[m]})" for m in merchants]
    unit = {g.goal: METRICS[g.metric].unit for g in goals}
    rows: dict[str, dict[str, str]] = {}
    bounds: dict[str, str] = {}
    for g in goals:
        bounds[g.goal] = f"{'≥' if g.at_least else '≤'} {metric_value(g.bound, unit[g.goal])}"
        shown = metric_value(g.value, unit[g.goal])
        rows.setdefault(g.goal, {})[g.merchant] = f"{'met' if g.met else 'missed'} ({shown})"
    return TableModel(
        "campaign goals (bounds for this match's length)",
        [Header("goal"), Header("bound", numeric=True), *(Header(h) for h in headers)],
        [[[goal, bounds[goal], *(row.get(m, "") for m in merchants)] for goal, row in rows.items()]],
    )


def market_table(market: MarketScores, notes: Iterable[MetricNote] = ()) -> TableModel:
    """The market's metrics, then its price windows, one row per kind; `notes` (the match's)
    say why a metric of the market does not apply."""
    why = {n.name: n.note for n in notes if n.merchant is None}
    shown = [name for name in MARKET_METRICS if name in market.metrics]
    measured = [
        [name, metric_value(market.metrics[name], MARKET_METRICS[name].unit, why.get(name))] for name in shown
    ]
    windows = [
        [f"{title} windows", window_days(market.windows, kind)] for kind, title in WINDOW_TITLES.items()
    ]
    return TableModel(
        "the market as a whole (definitions: docs/metrics.md)",
        [Header("market"), Header("value", numeric=True)],
        [measured, windows],
        not_applicable(
            (name, "", why[name]) for name in shown if name in why and market.metrics[name] is None
        ),
    )


DEVIATION_SHOWN: dict[str, Callable[[float], str]] = {
    "rival_response": lambda v: f"{v:+.1%}",
    "recovery_days": lambda v: f"{v:g}",
    "deviation_profitable": lambda v: "yes" if v else "no",
    "prefix_replayed": lambda v: "yes" if v else "no",
}  # how each measure of results.scoring.deviation.DEVIATION_METRICS is written


def deviation_table(
    path: DeviationPath, seats: Sequence[str], metrics: Mapping[str, Mapping[str, float | None]]
) -> TableModel:
    """A probed match's deviation measures, a column per merchant of `seats` (in seat order),
    then the faults and model calls of its deviated path."""
    probe = path.probe
    title = (
        f"deviation probe: {probe.forced(seats) or f'seat {probe.seat}'} forced to {probe.target} "
        f"on {probe.when} (definitions: docs/metrics.md)"
    )

    def measure(merchant: str, name: str) -> str:
        if name not in metrics.get(merchant, {}):
            return ""
        value = metrics[merchant][name]
        return "—" if value is None else DEVIATION_SHOWN[name](value)

    measures = [[name, *(measure(m, name) for m in seats)] for name in DEVIATION_METRICS]
    along = [
        ["faults on the deviated path", *(str(sum(f.merchant == m for f in path.faults)) for m in seats)]
    ]
    if path.calls:
        calls = [[c for c in path.calls if c.merchant == m] for m in seats]
        along.append(
            [
                "its model calls (from the cache)",
                *(f"{len(c)} ({sum(x.cached for x in c)})" if c else "" for c in calls),
            ]
        )
    return TableModel(
        title, [Header("measure"), *(Header(m, numeric=True) for m in seats)], [measures, along]
    )


MESSAGE_COLUMNS: list[Column[Said]] = [
    Column(Header("day", numeric=True), lambda m: str(m.day)),
    Column(Header("merchant"), lambda m: m.merchant),
    Column(Header("message"), lambda m: m.text),
]


def competitors_table(scripted: CompetitorDays, products: Sequence[str]) -> TableModel:
    """Day by day, each scripted competitor's prices and units sold of the products it sells
    (as `product=value`, or the value alone in a market of one product)."""

    def per_product(values: Sequence[float], selling: Sequence[bool], fmt: str) -> str:
        shown = [(pid, fmt.format(v)) for pid, v, on in zip(products, values, selling) if on]
        return shown[0][1] if len(products) == 1 and shown else " ".join(f"{pid}={v}" for pid, v in shown)

    rows = []
    for k, (prices, sold) in enumerate(zip(scripted.prices.tolist(), scripted.units_sold.tolist())):
        for name, price, units in zip(scripted.names, prices, sold):
            selling = [p == p for p in price]  # NaN: a product it does not sell
            rows.append(
                [str(k + 1), name, per_product(price, selling, "{:.2f}"), per_product(units, selling, "{:g}")]
            )
    return TableModel(
        "scripted competitors, day by day",
        [Header("day", numeric=True), Header("competitor"), Header("prices"), Header("sold")],
        [rows],
    )


def messages_table(said: Sequence[Said], title: str) -> TableModel:
    return tabulate(title, MESSAGE_COLUMNS, said)


TOKEN_COLUMNS = {
    "input tokens": "input_tokens",
    "cached": "cached_tokens",
    "cache writes": "cache_write_tokens",
    "output tokens": "output_tokens",
    "reasoning": "reasoning_tokens",
}  # header: field of ModelCall summed


class CallGroup(NamedTuple):
    """A merchant's model calls of one purpose."""

    merchant: str
    purpose: str
    calls: list[ModelCallRecord]


def calls_by_merchant_and_purpose(calls: Iterable[ModelCallRecord]) -> list[CallGroup]:
    """`calls` grouped by merchant and purpose, in order of first appearance."""
    groups: dict[tuple[str, str], list[ModelCallRecord]] = {}
    for call in calls:
        groups.setdefault((call.merchant, call.purpose), []).append(call)
    return [CallGroup(merchant, purpose, mine) for (merchant, purpose), mine in groups.items()]


def _summed(field: str) -> Callable[[CallGroup], str]:
    return lambda group: f"{sum(getattr(c, field) for c in group.calls):,}"


CALL_COLUMNS: list[Column[CallGroup]] = [
    Column(Header("merchant"), lambda g: g.merchant),
    Column(Header("purpose"), lambda g: g.purpose),
    Column(Header("calls", numeric=True), lambda g: str(len(g.calls))),
    *(Column(Header(header, numeric=True), _summed(field)) for header, field in TOKEN_COLUMNS.items()),
    Column(Header("cache hits", numeric=True), lambda g: str(sum(c.cached for c in g.calls))),
    Column(Header("retries", numeric=True), lambda g: str(sum(max(c.attempts - 1, 0) for c in g.calls))),
    Column(Header("seconds", numeric=True), lambda g: f"{sum(c.latency for c in g.calls):.1f}"),
    Column(Header("cost $", numeric=True), lambda g: blank(total_cost(g.calls), "{:.4f}", "unknown")),
]


def calls_table(calls: Sequence[ModelCallRecord]) -> TableModel:
    """A match's model calls per merchant and purpose: what they consumed."""
    return tabulate("model calls", CALL_COLUMNS, calls_by_merchant_and_purpose(calls))
