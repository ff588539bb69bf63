"""How a match's day log (market.daylog.DayLog) is stored: its arrays as an uncompressed .npz
archive (readable with numpy.load; the applied operations are the arrays op_row, op_kind,
op_product and op_value), and the rest as JSON: names, the columns' order and the operation
kinds, and per row the rejections (index, operation, reason, code), the plan and, in a log of
which some merchant said something, the message ("messages"; without it every row's is "":
a log of a market where nobody talks is stored as before messages existed). A scenario's
scripted competitors add their names ("competitors") and the arrays competitor_prices and
competitor_sold [day, competitor, product].

Older logs still read: those that kept operations as dicts in the JSON, those whose
rejections have no code (it is found from their reason, as the market then worded it), those
from before messages, and those from before a number of the day record existed (bad debt, spoiled goods):
the columns are read by the names stored with them, and a number missing is 0.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from market.daylog import PER_PRODUCT, SCALARS, ColumnRecords, CompetitorDays, DayLog, Operations, numbered
from market.types import KIND_INDEX, OPERATION_KINDS, DayRecord, Rejection, RejectionCode
from results.records import FinishedMatch

OPTIONAL_COLUMNS = ("supplier", "days")  # of the applied operations: stored only where some is not 0


def encode_columns(log: DayLog) -> bytes:
    buffer = io.BytesIO()
    arrays = {
        f"op_{name}": column
        for name, column in log.applied._asdict().items()
        if name not in OPTIONAL_COLUMNS or column.any()  # else all 0, as a log without them reads
    }
    if log.competitors is not None:
        arrays |= {"competitor_prices": log.competitors.prices, "competitor_sold": log.competitors.units_sold}
    np.savez(
        buffer,
        seat=log.seat,
        day=log.day,
        bankrupt=log.bankrupt,
        scalars=log.scalars,
        per_product=log.per_product,
        **arrays,
    )
    return buffer.getvalue()


def encode_text(log: DayLog) -> str:
    return json.dumps(
        {
            "merchants": log.merchants,
            "products": log.products,
            "scalars": SCALARS,
            "per_product": PER_PRODUCT,
            "operation_kinds": OPERATION_KINDS,
            "rejections": [
                [[r.index, r.operation, r.reason, r.code] for r in row] if row else []
                for row in log.rejections
            ],
            "plans": log.plans,
            **({"messages": log.messages} if any(log.messages) else {}),
            **({"competitors": log.competitors.names} if log.competitors is not None else {}),
            **({"suppliers": log.suppliers} if log.suppliers else {}),
        }
    )


def decode(columns: bytes, text: str) -> DayLog:
    """The log `encode_columns` and `encode_text` wrote (or an older version of them)."""
    arrays = np.load(io.BytesIO(columns), allow_pickle=False)
    rest = json.loads(text)
    if "operations" in rest:
        applied = Operations.of_dicts(numbered(rest["operations"]), rest["products"])
    else:
        kinds = np.array(
            [KIND_INDEX[name] for name in rest["operation_kinds"]], dtype=np.int8
        )  # as numbered when written
        optional = [
            arrays[f"op_{name}"] if f"op_{name}" in arrays else np.zeros(len(arrays["op_row"]), np.int16)
            for name in OPTIONAL_COLUMNS
        ]
        applied = Operations(
            arrays["op_row"], kinds[arrays["op_kind"]], arrays["op_product"], arrays["op_value"], *optional
        )
    return DayLog(
        merchants=tuple(rest["merchants"]),
        products=tuple(rest["products"]),
        seat=arrays["seat"],
        day=arrays["day"],
        bankrupt=arrays["bankrupt"],
        scalars=_in_order(arrays["scalars"], rest["scalars"], SCALARS),
        per_product=_in_order(arrays["per_product"], rest["per_product"], PER_PRODUCT),
        applied=applied,
        rejections=[[_rejection(*r) for r in row] for row in rest["rejections"]],
        plans=rest["plans"],
        messages=rest.get("messages") or [""] * len(rest["plans"]),
        competitors=CompetitorDays(
            tuple(rest["competitors"]), arrays["competitor_prices"], arrays["competitor_sold"]
        )
        if "competitors" in rest
        else None,
        suppliers=tuple(tuple(names) for names in rest.get("suppliers", ())),
    )


def _in_order(columns: np.ndarray, stored: Sequence[str], names: Sequence[str]) -> np.ndarray:
    """The `columns` [row, column, ...], stored in the order of `stored`, in the order of
    `names`; a column of `names` stored without it (the log is older than it) is zeros."""
    if list(stored) == list(names):
        return columns
    place = {name: k for k, name in enumerate(stored)}
    ordered = np.zeros((len(columns), len(names), *columns.shape[2:]))
    for k, name in enumerate(names):
        if name in place:
            ordered[:, k] = columns[:, place[name]]
    return ordered


_OLD_WORDS = (
    ("malformed decision", RejectionCode.MALFORMED_DECISION),
    ("malformed operation", RejectionCode.MALFORMED_OPERATION),
    ("unknown product", RejectionCode.UNKNOWN_PRODUCT),
    ("price must", RejectionCode.PRICE_NOT_POSITIVE),
    ("price ", RejectionCode.PRICE_ABOVE_CEILING),
    ("order quantity must be a positive", RejectionCode.QUANTITY_NOT_POSITIVE),
    ("order quantity", RejectionCode.FRACTIONAL_QUANTITY),
    ("order costs", RejectionCode.ORDER_OVER_CASH),
    ("advertising amount", RejectionCode.ADVERTISING_NEGATIVE),
    ("advertising", RejectionCode.ADVERTISING_OVER_CASH),
)


def _rejection(index: int, operation: object, reason: str, code: str | None = None) -> Rejection:
    if code is None:
        code = next((found for start, found in _OLD_WORDS if reason.startswith(start)), None)
        if code is None:
            raise ValueError(
                "a stored rejection with neither a code nor a reason worded as the market words them: "
                f"{reason!r}"
            )
    return Rejection(index, operation, reason, RejectionCode(code))


@dataclass(frozen=True, eq=False)
class PackedDayLog(ColumnRecords[DayRecord]):
    """A DayLog in the form it is stored in.

    A match played in a Ray worker is sent back packed: two strings pickle in no time, the
    JSON is made on the worker's core rather than the writer's, and the writer stores them
    as they are. Read as a sequence it unpacks itself (for tests and tools)."""

    columns: bytes
    decisions: str  # the JSON, named as the day_log table's column

    @cached_property
    def log(self) -> DayLog:
        return decode(self.columns, self.decisions)

    def __len__(self) -> int:
        return len(self.log)

    def records(self, rows: Iterable[int] | None = None) -> list[DayRecord]:
        return self.log.records(rows)


def pack(days: Iterable[DayRecord], products: Sequence[str] | None = None) -> PackedDayLog:
    """`days` (a DayLog, DayRecords, or already packed) in stored form."""
    if isinstance(days, PackedDayLog):
        return days
    log = DayLog.of(days, products)
    return PackedDayLog(encode_columns(log), encode_text(log))


def packed(match: FinishedMatch) -> FinishedMatch:
    """The match with its days (on both paths of a probed one) in stored form: what a Ray
    worker sends back."""
    update: dict = {"days_played": pack(match.days_played)}
    if match.deviation is not None:
        update["deviation"] = match.deviation.model_copy(
            update={"days_played": pack(match.deviation.days_played)}
        )
    return match.model_copy(update=update)
