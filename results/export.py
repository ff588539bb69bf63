"""`arena export`: one tournament's record as flat tables that pandas reads (CSV or Parquet).

Files written to the output folder (NAME.csv or NAME.parquet), tidy: one row per thing,
one column per field, with `match_id`, `merchant` and `contestant` on every row so tables
join and group without lookups:

- `results`: one row per merchant per match: the match (key, index, scenario, seed, days)
  and the merchant's result (final cash, net worth, profit, rank, market share, ...).
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
- `metrics`: one row per metric per merchant per match (see results.metrics).
- `market_metrics`: one row per metric of the market as a whole per match (the collusion
  measures, results.metrics.MARKET_METRICS; none for a match whose scenario has no
  equilibrium), and `price_windows`: one row per supra-competitive or price-war window of a
  match (its kind, first and last day). These two are of whole matches: they have
  `match_id` but no merchant.
- `messages`: one row per message a merchant sent its rivals (in a tournament with `talk`):
  the tournament, the match (id and key), the day it was sent, who sent it and its text;
  its own table because most merchant-days say nothing.
- `deviations`: one row per match of a tournament with a deviation probe: its first day,
  seat (and the merchant there), target (best_response, nash or a price), days and discount;
  `deviated_days`, `deviated_day_products`, `deviated_calls` and `deviated_messages` hold
  the deviated path of each such match, as `days`, `day_products`, `calls` and `messages`
  hold the path played. Their
  measures (rival_response, ...) are in `metrics`.

Missing values (a merchant never bankrupt, a model without a price) are empty in CSV and
null in Parquet. Files appear only once all are written; a failed export leaves none.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.csv
import pyarrow.parquet
from sqlalchemy import Engine

from market.daylog import DayLog
from market.errors import UserError
from market.types import DayRecord, record_adapter
from results import store
from results.tables import MatchRow

Format = Literal["csv", "parquet"]
BATCH_ROWS = 50_000

KEYS = [("match_id", pa.int64()), ("merchant", pa.string()), ("contestant", pa.string())]


def _day_columns() -> tuple[list[tuple[str, pa.DataType]], list[str], list[str]]:
    """DayRecord's fields sorted by kind, from its annotations: scalar columns of `days`, the
    per-product fields (columns of `day_products`), the list fields (JSON text in `days`).
    The message has a table of its own (`messages`)."""
    scalar_types = {"float": pa.float64(), "int": pa.int64(), "bool": pa.bool_(), "str": pa.string()}
    scalars, per_product, lists = [], [], []
    for f in fields(DayRecord):
        if f.name in ("merchant", "day", "message"):
            continue
        if f.type in scalar_types:
            scalars.append((f.name, scalar_types[f.type]))
        elif f.type.startswith("dict["):
            per_product.append(f.name)
        elif f.type.startswith("list["):
            lists.append(f.name)
        else:
            raise TypeError(f"DayRecord.{f.name}: no column type for {f.type!r}")
    return scalars, per_product, lists


DAY_SCALARS, DAY_PER_PRODUCT, DAY_LISTS = _day_columns()
PRODUCT_COLUMN = {
    "prices": "price",
    "plan": "planned_price",
}  # the long table names a product's value in the singular

SCHEMAS: dict[str, pa.Schema] = {
    "results": pa.schema(
        [
            ("match_id", pa.int64()),
            ("key", pa.string()),
            ("index", pa.int64()),
            ("scenario", pa.string()),
            ("seed", pa.int64()),
            ("days", pa.int64()),
            ("merchant", pa.string()),
            ("contestant", pa.string()),
            ("final_cash", pa.float64()),
            ("net_worth", pa.float64()),
            ("profit", pa.float64()),
            ("rank", pa.int64()),
            ("market_share", pa.float64()),
            ("bankrupt_day", pa.int64()),
            ("faults", pa.int64()),
            ("rejected_operations", pa.int64()),
        ]
    ),
    "days": pa.schema(
        [*KEYS, ("day", pa.int64()), *DAY_SCALARS, *((name, pa.string()) for name in DAY_LISTS)]
    ),
    "day_products": pa.schema(
        [
            *KEYS,
            ("day", pa.int64()),
            ("product", pa.string()),
            *((PRODUCT_COLUMN.get(name, name), pa.float64()) for name in DAY_PER_PRODUCT),
        ]
    ),
    "calls": pa.schema(
        [
            *KEYS,
            ("day", pa.int64()),
            ("purpose", pa.string()),
            ("model", pa.string()),
            ("input_tokens", pa.int64()),
            ("output_tokens", pa.int64()),
            ("cached_tokens", pa.int64()),
            ("cache_write_tokens", pa.int64()),
            ("reasoning_tokens", pa.int64()),
            ("latency", pa.float64()),
            ("attempts", pa.int64()),
            ("cost", pa.float64()),
            ("cached", pa.bool_()),
            ("request_hash", pa.string()),
            ("served_model", pa.string()),
            ("fingerprint", pa.string()),
            ("prompt_version", pa.string()),
            ("temperature", pa.float64()),
            ("top_p", pa.float64()),
            ("seed", pa.int64()),
        ]
    ),
    "metrics": pa.schema([*KEYS, ("name", pa.string()), ("value", pa.float64())]),
    "market_metrics": pa.schema([("match_id", pa.int64()), ("name", pa.string()), ("value", pa.float64())]),
    "price_windows": pa.schema(
        [("match_id", pa.int64()), ("kind", pa.string()), ("first_day", pa.int64()), ("last_day", pa.int64())]
    ),
    "messages": pa.schema(
        [
            ("tournament_id", pa.int64()),
            ("match_id", pa.int64()),
            ("key", pa.string()),
            ("day", pa.int64()),
            ("merchant", pa.string()),
            ("contestant", pa.string()),
            ("text", pa.string()),
        ]
    ),
    "deviations": pa.schema(
        [
            ("match_id", pa.int64()),
            ("day", pa.int64()),
            ("seat", pa.int64()),
            ("merchant", pa.string()),
            ("contestant", pa.string()),
            ("to", pa.string()),
            ("days", pa.int64()),
            ("discount", pa.float64()),
        ]
    ),
}
SCHEMAS |= {
    f"deviated_{name}": SCHEMAS[name] for name in ("days", "day_products", "calls", "messages")
}  # the deviated path's, alike


class ExportError(UserError):
    """The output folder cannot be made or written (one line)."""


def export(engine: Engine, tournament_id: int, out: Path, fmt: Format) -> list[Path]:
    """Write the tournament's tables to `out` (created if missing); the files written.

    Raises NotFound for an unknown tournament and ExportError for an unusable folder, in
    both cases before anything is written."""
    matches = store.list_matches(engine, tournament_id)
    staging = _staging_folder(out)
    try:
        with _writers(staging, fmt) as write:
            for match in matches:
                _write_match(write, store.match_detail(engine, match.id))
            write("metrics", [m._asdict() for m in store.metrics(engine, tournament_id)])
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
def _writers(folder: Path, fmt: Format) -> Iterator[Callable[[str, list[dict[str, Any]]], None]]:
    """`write(table, rows)` appends rows to that table's file, in batches of BATCH_ROWS (one
    Parquet row group each); every file exists at the end, with its header even when empty."""
    opened: dict[str, Any] = {}
    pending: dict[str, list[dict[str, Any]]] = {name: [] for name in SCHEMAS}
    for name, schema in SCHEMAS.items():
        path = folder / f"{name}.{fmt}"
        opened[name] = (
            pyarrow.csv.CSVWriter(path, schema)
            if fmt == "csv"
            else pyarrow.parquet.ParquetWriter(path, schema)
        )

    def flush(name: str) -> None:
        if pending[name]:
            opened[name].write_table(pa.Table.from_pylist(pending[name], schema=SCHEMAS[name]))
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


def _write_match(write: Callable[[str, list[dict[str, Any]]], None], detail: store.MatchDetail) -> None:
    match: MatchRow = detail.match
    contestant = {r.merchant: r.contestant for r in detail.results}
    at = {"match_id": match.id}
    write(
        "results",
        [
            {
                **at,
                "key": match.key,
                "index": match.index,
                "scenario": match.scenario,
                "seed": match.seed,
                "days": match.days,
                **r.model_dump(),
            }
            for r in detail.results
        ],
    )
    _write_path(write, "", match, contestant, detail.days, detail.calls)
    write(
        "market_metrics",
        [{**at, "name": name, "value": value} for name, value in detail.market.metrics.items()],
    )
    write("price_windows", [{**at, **w.model_dump()} for w in detail.market.windows])
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
                    "contestant": contestant.get(forced),
                }
            ],
        )
        _write_path(
            write, "deviated_", match, contestant, detail.deviation.days_played, detail.deviation.calls
        )


def _write_path(
    write: Callable[[str, list[dict[str, Any]]], None],
    prefix: str,
    match: MatchRow,
    contestant: dict[str, str],
    records,
    calls,
) -> None:
    """The days, day_products, calls and messages of one path of a match, into the tables named with `prefix`."""
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
                **{name: data[name] for name, _ in DAY_SCALARS},
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
                "day": s.day,
                "merchant": s.merchant,
                "contestant": contestant.get(s.merchant),
                "text": s.text,
            }
            for s in DayLog.of(records).said()
        ],
    )
