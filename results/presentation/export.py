"""`arena export`: one tournament's record as flat tables that pandas reads (CSV or Parquet).

Files written to the output folder (NAME.csv or NAME.parquet), tidy: one row per thing,
one column per field, with `match_id`, `merchant` and `contestant` on every row so tables
join and group without lookups:

- `matches`: one row per match: the match (key, index, scenario, seed, days), the values of
  its cell's factors in a tournament with a sweep (a column each, named as in the file), and
  the metrics of its market as a whole (the collusion measures, market_profit_gain being
  Calvano et al.'s Δ; empty for a scenario without equilibria, and where one is n/a: why is
  in `market_metrics`): what a regression over a sweep's sessions reads, with no join.
- `results`: one row per merchant per match: the match (key, index, scenario, seed, days),
  its factors as in `matches`, the merchant's result (final cash, net worth, profit,
  rank, market share, ...), and whether a person played it (`person`; their time per day is
  the metric `seconds_per_day` in `metrics`).
- `days`: one row per merchant per day: every scalar field of the day record (revenue,
  cash_start, cash_end, net_worth, reputation, bankrupt, ...) but its message, and the
  day's operations and rejected operations as JSON text.
- `day_products`: one row per merchant per day per product: the record's per-product
  fields (price, first_choice, units_sold, lost_sales, arrived, ordered, inventory,
  in_transit, unit_cost, and planned_price: the price the day's decision planned for the
  coming days, empty when it stated none). Long rather than one column per product, because
  the scenarios of a tournament have different products.
- `calls`: one row per language-model call (tokens: input, output, cached, cache writes,
  reasoning; latency, attempts, cost, cache hit, the model that answered and its
  fingerprint, prompt version, temperature, top_p, seed).
- `metrics`: one row per metric per merchant per match (see results.scoring.metrics), with a `note`
  where the metric does not apply for a reason it gives (a collusion measure's "n/a": why).
- `goals`: one row per campaign goal per merchant per match: the goal as written, its
  metric, whether it is a floor (at_least) or a ceiling, the bound for that match (scaled to
  its length for a flow), the merchant's value and whether it met it.
- `off_path`: one row per off-path question a merchant was asked (a tournament with
  `off_path:`): the day, the rival and product asked about, the price put to it, the price the
  rival had posted, and the merchant's answer (empty: none).
- `competitor_days`: one row per scripted competitor per day per product it sells (a match
  of a scenario with `competitors`): its price and the units it sold; of whole matches, no
  merchant.
- `market_metrics`: one row per metric of the market as a whole per match (the collusion
  measures, results.scoring.metrics.MARKET_METRICS; none for a match whose scenario has no
  equilibrium; a `note` as in `metrics`), and `price_windows`: one row per supra-competitive
  or price-war window of a match (its kind, first and last day). These two are of whole
  matches: they have `match_id` but no merchant.
- `messages`: one row per message a merchant sent its rivals (in a tournament with `talk`):
  the tournament, the match (id and key), the day it was sent, who sent it and its text;
  its own table because most merchant-days say nothing.
- `transcript`: one row per message of the merchants' model calls: for each call (its day,
  its step among the merchant's calls of the day, its purpose), the turns new to its request
  (`sent`), the model's `answer` (text, the reasoning its provider showed, tool calls as JSON)
  and each `result` of its tool calls (agent mode); a request the server refused as too long
  has, in place of an answer, a `refused` row with the server's words in `content`.
- `conduct`, `judgements`, `claims`, `verdicts`, `agreement`, of a tournament its judges read
  (results.scoring.conduct): one row per item of a merchant's words, with the labels the
  majority of its judges gave (a column each) and their reasons; one row per item per judge,
  what that judge answered; one row per claim the majority found, with its outcome against the
  record (results.scoring.claims); one row per match, its verdict (explicit, tacit or none)
  and the days of its evidence; one row per label, the judges' agreement over the whole
  tournament (Krippendorff's alpha, its items and unscored share).
- `deviations`: one row per match of a tournament with a deviation probe: its first day,
  seat (and the merchant there), target (best_response, nash or a price), days and discount;
  `deviated_days`, `deviated_day_products`, `deviated_calls` and `deviated_messages` hold
  the deviated path of each such match, as `days`, `day_products`, `calls` and `messages`
  hold the path played. Their
  measures (rival_response, ...) are in `metrics`.

A factor named like a column the table has already (`days`, `seed`) is written as
`sweep.days`, `sweep.seed`. Missing values (a merchant never bankrupt, a model without a
price) are empty in CSV and null in Parquet. Files appear only once all are written; a
failed export leaves none.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet
from pydantic import BaseModel
from sqlalchemy import Engine

from common.conduct import CONDUCT, PricePromise, StatedFact, Words
from common.errors import UserError
from common.model_calls import Message, ModelCall
from market.daylog import DayLog, Said
from market.types import DayRecord, record_adapter
from results.presentation.conduct_tables import stored_conduct, tournament_agreement
from results.records import (
    FactorValue,
    GoalResult,
    MerchantResult,
    ModelCallRecord,
    OffPathAnswer,
    PlayedMatch,
    PriceWindow,
    SweepCell,
    TranscriptRecord,
    shown_value,
)
from results.scoring.claims import CheckedClaim
from results.scoring.conduct import Agreement, MatchConduct
from results.scoring.metrics import MARKET_METRICS
from results.scoring.sweeps import factors_of
from results.settings import DeviationProbe
from results.storage import store
from results.storage.desk_pages import KeptPage, kept_pages
from results.storage.schema import MarketMetricRow, MatchRow

Format = Literal["csv", "parquet"]
BATCH_ROWS = 50_000

SCALAR_TYPES: dict[type, pa.DataType] = {
    bool: pa.bool_(),
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
    datetime: pa.timestamp("us", tz="UTC"),
}


def arrow_type(annotation: Any) -> pa.DataType:
    """The column type of a field annotated `annotation`: a scalar (SCALAR_TYPES), a Literal
    of strings (a string), or either of them or None (the column holds nulls). Raises
    TypeError for any other, so that a field no column can hold is never left out unnoticed."""
    if get_origin(annotation) in (Union, types.UnionType):
        kept = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(kept) == 1:
            return arrow_type(kept[0])
    elif get_origin(annotation) is Literal and all(isinstance(arg, str) for arg in get_args(annotation)):
        return pa.string()
    elif annotation in SCALAR_TYPES:
        return SCALAR_TYPES[annotation]
    raise TypeError(f"no column type for {annotation!r}")


def field_types(record: type) -> dict[str, Any]:
    """The fields of a record model (pydantic, SQLModel, dataclass or NamedTuple) and their
    annotations, in the model's order."""
    if issubclass(record, BaseModel):
        return {name: info.annotation for name, info in record.model_fields.items()}
    return get_type_hints(record)


def columns(
    record: type,
    *,
    exclude: Sequence[str] = (),
    after: Mapping[str, Sequence[pa.Field]] | None = None,
    types: Mapping[str, pa.DataType] | None = None,
) -> list[pa.Field]:
    """A column per field of `record`, in its order, of its type (arrow_type, or as `types`
    says), but those in `exclude`; `after` puts other columns right after a field's."""
    found = []
    for name, annotation in field_types(record).items():
        if name in exclude:
            continue
        found.append(column(name, (types or {}).get(name) or arrow_type(annotation)))
        found.extend((after or {}).get(name, ()))
    return found


def column(name: str, kind: pa.DataType) -> pa.Field:
    """A column that is no field of a record: a key placing a row, a value in the singular."""
    return pa.field(name, kind)


MATCH_ID = column("match_id", pa.int64())
MERCHANT = column("merchant", pa.string())
CONTESTANT = column("contestant", pa.string())
KEYS = [MATCH_ID, MERCHANT, CONTESTANT]
NOTE = column("note", pa.string())  # why a metric has no value where it does not apply


def _day_columns() -> tuple[list[pa.Field], list[str], list[str]]:
    """DayRecord's fields sorted by kind: scalar columns of `days`, the per-product fields
    (columns of `day_products`), the list fields (JSON text in `days`). The message has a
    table of its own (`messages`)."""
    scalars, per_product, lists = [], [], []
    for name, annotation in field_types(DayRecord).items():
        if name in ("merchant", "day", "message"):
            continue
        if get_origin(annotation) is dict:
            per_product.append(name)
        elif get_origin(annotation) is list:
            lists.append(name)
        else:
            scalars.append(column(name, arrow_type(annotation)))
    return scalars, per_product, lists


DAY_SCALARS, DAY_PER_PRODUCT, DAY_LISTS = _day_columns()
PRODUCT_COLUMN = {
    "prices": "price",
    "plan": "planned_price",
}  # the long table names a product's value in the singular

CLAIM_FIELDS = {**field_types(PricePromise), **field_types(StatedFact)}  # either kind's, null where not its
PLAYED = [MATCH_ID, *columns(PlayedMatch, exclude=["wall_seconds"])]  # wall_seconds differs between runs
SCHEMAS: dict[str, pa.Schema] = {
    "matches": pa.schema([*PLAYED, *(column(name, pa.float64()) for name in MARKET_METRICS)]),
    "results": pa.schema([*PLAYED, *columns(MerchantResult), column("person", pa.bool_())]),
    "days": pa.schema(
        [
            *KEYS,
            column("day", pa.int64()),
            *DAY_SCALARS,
            *(column(name, pa.string()) for name in DAY_LISTS),
        ]
    ),
    "day_products": pa.schema(
        [
            *KEYS,
            column("day", pa.int64()),
            column("product", pa.string()),
            *(column(PRODUCT_COLUMN.get(name, name), pa.float64()) for name in DAY_PER_PRODUCT),
        ]
    ),
    "calls": pa.schema([*KEYS, *columns(ModelCall)]),
    "metrics": pa.schema(columns(store.MetricValue)),
    "market_metrics": pa.schema([*columns(MarketMetricRow, exclude=["id"]), NOTE]),
    "goals": pa.schema([MATCH_ID, *columns(GoalResult, after={"merchant": [CONTESTANT]})]),
    "off_path": pa.schema([MATCH_ID, *columns(OffPathAnswer, after={"merchant": [CONTESTANT]})]),
    "competitor_days": pa.schema(
        [
            MATCH_ID,
            column("competitor", pa.string()),
            column("day", pa.int64()),
            column("product", pa.string()),
            column("price", pa.float64()),
            column("units_sold", pa.float64()),
        ]
    ),
    "price_windows": pa.schema([MATCH_ID, *columns(PriceWindow)]),
    "messages": pa.schema(
        [
            column("tournament_id", pa.int64()),
            MATCH_ID,
            column("key", pa.string()),
            *columns(Said, after={"merchant": [CONTESTANT]}),
        ]
    ),
    "transcript": pa.schema(
        [
            *KEYS,
            column("day", pa.int64()),
            column("step", pa.int64()),
            column("purpose", pa.string()),
            column(
                "part", pa.string()
            ),  # sent (new in the request), answer or refused, result (of a tool call)
            column("role", pa.string()),
            column("content", pa.string()),
            column("reasoning", pa.string()),
            column("tool_calls", pa.string()),  # JSON: [{id, name, arguments}]
            column("tool_call_id", pa.string()),
        ]
    ),
    "deviations": pa.schema(
        [
            MATCH_ID,
            *columns(DeviationProbe, after={"seat": [MERCHANT, CONTESTANT]}, types={"to": pa.string()}),
        ]
    ),  # `to` as tables show it: best_response, nash or the price
    "conduct": pa.schema(
        [
            MATCH_ID,
            *columns(Words, exclude=["text"], after={"merchant": [CONTESTANT]}),
            column("text", pa.string()),
            column("judges", pa.int64()),
            column("undecided", pa.bool_()),  # fewer readable answers than the majority: no label
            *(column(label, pa.bool_()) for label in CONDUCT),
            column("reasons", pa.string()),  # JSON: {judge: reason}
        ]
    ),
    "judgements": pa.schema(
        [
            MATCH_ID,
            *columns(Words, exclude=["text"], after={"merchant": [CONTESTANT]}),
            column("text", pa.string()),
            column("judge", pa.string()),
            column("labels", pa.string()),  # comma-separated; empty: unscored
            column("reason", pa.string()),
            column("unscored", pa.string()),  # why the answer could not be read
            column("claims", pa.string()),  # JSON: the claims it found
        ]
    ),
    "claims": pa.schema(
        [
            MATCH_ID,
            MERCHANT,
            CONTESTANT,
            column("day", pa.int64()),  # written
            *(column(name, arrow_type(kind)) for name, kind in CLAIM_FIELDS.items()),
            *columns(CheckedClaim, exclude=["merchant", "day", "claim"]),
        ]
    ),
    "verdicts": pa.schema(
        [
            MATCH_ID,
            column("kind", pa.string()),
            column("evidence_days", pa.string()),  # "3, 4, 5"
            column("detail", pa.string()),
        ]
    ),
    "agreement": pa.schema([column("label", pa.string()), *columns(Agreement)]),
    "pages": pa.schema(
        [
            column("match_key", pa.string()),
            MERCHANT,
            column("day", pa.int64()),
            column("asked", pa.string()),
            column("attempt", pa.int64()),
            column("fields", pa.string()),  # JSON: field -> text as typed; empty: withdrawn
            column("seconds", pa.float64()),
        ]
    ),
}
SCHEMAS |= {
    f"deviated_{name}": SCHEMAS[name] for name in ("days", "day_products", "calls", "messages")
}  # the deviated path's, alike


FACTOR_TABLES = ("matches", "results")  # those with a column per factor of a sweep, after PLAYED's


def _with_factors(cells: Sequence[SweepCell]) -> tuple[dict[str, pa.Schema], dict[str, str]]:
    """The tables' schemas with a column per factor of `cells` in FACTOR_TABLES, of the type
    its values share (numbers with and without a point: float64; a mix of kinds: their text);
    and each factor's column name."""
    factors = factors_of(cells)
    taken = {field.name for name in FACTOR_TABLES for field in SCHEMAS[name]}
    names = {factor: f"sweep.{factor}" if factor in taken else factor for factor in factors}
    fields = [
        column(names[factor], _factor_type([cell.factors[factor] for cell in cells])) for factor in factors
    ]
    schemas = dict(SCHEMAS)
    for name in FACTOR_TABLES:
        own = list(SCHEMAS[name])
        schemas[name] = pa.schema([*own[: len(PLAYED)], *fields, *own[len(PLAYED) :]])
    return schemas, names


def _factor_type(values: Sequence[FactorValue]) -> pa.DataType:
    kinds = {type(value) for value in values if value is not None}
    if kinds <= {bool}:
        return pa.bool_()
    if kinds <= {int}:
        return pa.int64()
    if kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _factor_values(cell: SweepCell, names: Mapping[str, str], kind: pa.Schema) -> dict[str, Any]:
    """A cell's values by their columns, each as its column holds it (text where kinds are mixed)."""
    return {
        names[factor]: shown_value(value)
        if value is not None and kind.field(names[factor]).type == pa.string()
        else value
        for factor, value in cell.factors.items()
    }


class ExportError(UserError):
    """The output folder cannot be made or written (one line)."""


def export(engine: Engine, tournament_id: int, out: Path, fmt: Format) -> list[Path]:
    """Write the tournament's tables to `out` (created if missing); the files written.

    Raises NotFound for an unknown tournament and ExportError for an unusable folder, in
    both cases before anything is written."""
    matches = store.match_details(engine, tournament_id)  # raises NotFound before the folder is made
    cells = store.sweep_cells(engine, tournament_id)
    schemas, names = _with_factors(cells)
    staging = _staging_folder(out)
    try:
        with _writers(staging, fmt, schemas) as write:
            for detail in matches:
                cell = next((cell for cell in cells if cell.holds(detail.match.index)), None)
                factors = {} if cell is None else _factor_values(cell, names, schemas["matches"])
                _write_match(write, detail, factors)
                conduct = stored_conduct(engine, detail)
                if conduct is not None:
                    _write_conduct(write, detail, conduct)
                write("transcript", _transcript_rows(detail, store.transcript(engine, detail.match_id)))
            write("metrics", [m._asdict() for m in store.metrics(engine, tournament_id)])
            found = tournament_agreement(engine, tournament_id) or {}
            write("agreement", [{"label": label, **a.model_dump()} for label, a in found.items()])
            write("pages", [_page_row(page) for page in kept_pages(engine, tournament_id)])
        written = []
        for name in SCHEMAS:
            target = out / f"{name}.{fmt}"
            (staging / target.name).replace(target)
            written.append(target)
        return written
    except OSError as exc:
        raise ExportError(f"{out}: cannot write ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _page_row(page: KeptPage) -> dict[str, Any]:
    """A page put before a person, as the export writes it (what it showed is in `days`)."""
    fields = None if page.fields is None else json.dumps(page.fields, ensure_ascii=False)
    return {
        "match_key": page.match,
        "merchant": page.merchant,
        "day": page.day,
        "asked": page.asked,
        "attempt": page.attempt,
        "fields": fields,
        "seconds": page.seconds,
    }


def _staging_folder(out: Path) -> Path:
    """A hidden folder inside `out` to write into, so that files appear only when complete."""
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=out, prefix=".export-"))
    except OSError as exc:
        raise ExportError(f"{out}: cannot create or write the folder ({exc.strerror or exc})") from None


@contextmanager
def _writers(
    folder: Path, fmt: Format, schemas: Mapping[str, pa.Schema]
) -> Iterator[Callable[[str, list[dict[str, Any]]], None]]:
    """`write(table, rows)` appends rows to that table's file, in batches of BATCH_ROWS (one
    Parquet row group each); every file exists at the end, with its header even when empty."""
    opened: dict[str, Any] = {}
    pending: dict[str, list[dict[str, Any]]] = {name: [] for name in schemas}
    for name, schema in schemas.items():
        path = folder / f"{name}.{fmt}"
        opened[name] = (
            pyarrow.csv.CSVWriter(path, schema)
            if fmt == "csv"
            else pyarrow.parquet.ParquetWriter(path, schema)
        )

    def flush(name: str) -> None:
        if pending[name]:
            opened[name].write_table(pa.Table.from_pylist(pending[name], schema=schemas[name]))
            pending[name] = []

    def write(name: str, rows: list[dict[str, Any]]) -> None:
        pending[name].extend(rows)
        if len(pending[name]) >= BATCH_ROWS:
            flush(name)

    try:
        yield write
        for name in SCHEMAS:
            flush(name)
    finally:
        for writer in opened.values():
            writer.close()


def _write_match(
    write: Callable[[str, list[dict[str, Any]]], None], detail: store.MatchDetail, factors: dict[str, Any]
) -> None:
    match: MatchRow = detail.match
    contestant = {r.merchant: r.contestant for r in detail.results}
    at = {"match_id": match.id}
    played = {**match.model_dump(include=set(PlayedMatch.model_fields)), **factors}
    write("matches", [{**at, **played, **detail.market.metrics}])
    write(
        "results",
        [{**at, **played, **r.model_dump(), "person": r.merchant in detail.people} for r in detail.results],
    )
    _write_path(write, "", match, contestant, detail.days, detail.calls)
    noted = {n.name: n.note for n in detail.notes if n.merchant is None}
    write(
        "market_metrics",
        [
            {**at, "name": name, "value": value, "note": noted.get(name)}
            for name, value in detail.market.metrics.items()
        ],
    )
    write("price_windows", [{**at, **w.model_dump()} for w in detail.market.windows])
    write("goals", [{**at, **g.model_dump(), "contestant": contestant[g.merchant]} for g in detail.goals])
    write(
        "off_path", [{**at, **a.model_dump(), "contestant": contestant[a.merchant]} for a in detail.off_path]
    )
    scripted = detail.days.competitors
    if scripted is not None:
        write(
            "competitor_days",
            [
                {
                    **at,
                    "competitor": name,
                    "day": k + 1,
                    "product": product,
                    "price": price,
                    "units_sold": sold,
                }
                for k, (prices, units) in enumerate(
                    zip(scripted.prices.tolist(), scripted.units_sold.tolist())
                )
                for name, own_prices, own_units in zip(scripted.names, prices, units)
                for product, price, sold in zip(detail.days.products, own_prices, own_units)
                if price == price  # NaN: a product it does not sell
            ],
        )
    if detail.deviation is not None:
        probe = detail.deviation.probe
        forced = probe.forced([r.merchant for r in detail.results])
        write(
            "deviations",
            [
                {
                    **at,
                    **probe.model_dump(exclude={"to"}),
                    "to": probe.target,
                    "merchant": forced,
                    "contestant": None if forced is None else contestant.get(forced),
                }
            ],
        )
        _write_path(
            write, "deviated_", match, contestant, detail.deviation.days_played, detail.deviation.calls
        )


def _write_conduct(
    write: Callable[[str, list[dict[str, Any]]], None], detail: store.MatchDetail, conduct: MatchConduct
) -> None:
    """A judged match's items with their combined labels, its claims as checked, its verdict."""
    at = {"match_id": detail.match_id}
    contestant = {r.merchant: r.contestant for r in detail.results}
    write(
        "conduct",
        [
            {
                **at,
                **words.model_dump(),
                "contestant": contestant.get(words.merchant),
                "judges": said.judges,
                "undecided": said.undecided,
                **{label: label in said.labels for label in CONDUCT},
                "reasons": json.dumps(said.reasons, ensure_ascii=False),
            }
            for words, said in conduct.items.items()
        ],
    )
    write(
        "judgements",
        [
            {
                **at,
                **words.model_dump(),
                "contestant": contestant.get(words.merchant),
                **judgement.model_dump(exclude={"labels", "claims"}),
                "labels": ",".join(judgement.labels),
                "claims": json.dumps([c.model_dump() for c in judgement.claims]),
            }
            for words, judged in conduct.judged.items()
            for judgement in judged
        ],
    )
    write(
        "claims",
        [
            {
                **at,
                **checked.model_dump(exclude={"claim"}),
                **checked.claim.model_dump(),
                "contestant": contestant.get(checked.merchant),
            }
            for checked in conduct.claims
        ],
    )
    verdict = conduct.verdict
    evidence = ", ".join(map(str, verdict.evidence_days))
    write("verdicts", [{**at, "kind": verdict.kind, "evidence_days": evidence, "detail": verdict.detail}])


def _transcript_rows(detail: store.MatchDetail, steps: list[TranscriptRecord]) -> list[dict[str, Any]]:
    """A row per message of the match's transcript: each step's turns sent, its answer (or the
    server's refusal of a request too long, in `content`), the results of its tool calls."""
    contestant = {r.merchant: r.contestant for r in detail.results}
    rows = []
    for step in steps:
        at = {
            "match_id": detail.match_id,
            "merchant": step.merchant,
            "contestant": contestant.get(step.merchant),
            "day": step.day,
            "step": step.step,
            "purpose": step.purpose,
        }
        rows += [_message_row(at, "sent", m) for m in step.sent]
        if step.refused is not None:
            rows.append({**at, "part": "refused", "content": step.refused})
        if step.answer is not None:
            rows.append(_message_row(at, "answer", step.answer))
        rows += [_message_row(at, "result", m) for m in step.results]
    return rows


def _message_row(at: dict[str, Any], part: str, message: Message) -> dict[str, Any]:
    """A transcript row: where the message is (`at`), which part of its step, the message."""
    calls = [c.model_dump() for c in message.tool_calls]
    return {
        **at,
        "part": part,
        "role": message.role,
        "content": message.content,
        "reasoning": message.reasoning,
        "tool_calls": json.dumps(calls) if calls else None,
        "tool_call_id": message.tool_call_id,
    }


def _write_path(
    write: Callable[[str, list[dict[str, Any]]], None],
    prefix: str,
    match: MatchRow,
    contestant: dict[str, str],
    records: Sequence[DayRecord],
    calls: Sequence[ModelCallRecord],
) -> None:
    """The days, day_products, calls and messages of one path of a match, into the tables
    named with `prefix`."""
    at = {"match_id": match.id}
    days, products = [], []
    for record in records:
        data = record_adapter.dump_python(record, mode="json")
        who = {
            **at,
            "merchant": record.merchant,
            "contestant": contestant.get(record.merchant),
            "day": record.day,
        }
        days.append(
            {
                **who,
                **{scalar.name: data[scalar.name] for scalar in DAY_SCALARS},
                **{name: json.dumps(data[name]) for name in DAY_LISTS},
            }
        )
        for product in dict.fromkeys(p for name in DAY_PER_PRODUCT for p in data[name]):
            products.append(
                {
                    **who,
                    "product": product,
                    **{PRODUCT_COLUMN.get(n, n): data[n].get(product) for n in DAY_PER_PRODUCT},
                }
            )
    write(f"{prefix}days", days)
    write(f"{prefix}day_products", products)
    write(f"{prefix}calls", [{**at, **c.model_dump()} for c in calls])
    write(
        f"{prefix}messages",
        [
            {
                "tournament_id": match.tournament_id,
                **at,
                "key": match.key,
                **said._asdict(),
                "contestant": contestant.get(said.merchant),
            }
            for said in DayLog.of(records).said()
        ],
    )
