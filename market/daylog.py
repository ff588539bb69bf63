"""A match's day records, column by column.

The market writes each day's records as arrays, one row per merchant that played: numbers
in two float matrices (per merchant, and per merchant and product), the applied operations
as columns too (`Operations`), the decision's rejections, plan and message as Python lists
beside them (a day of a market where nobody talks adds no messages: they are "" for all).
A whole match is then a handful of arrays however many merchant-days it has, which is what
makes a match cheap to score, to send between processes and to store (see
results.storage.daylog_codec). `DayRecord` objects, one per merchant-day, are made from the columns
only when something asks for them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, NamedTuple, TypeVar, overload

import numpy as np

from market.types import KIND_INDEX, OPERATION_KINDS, VALUE_FIELDS, DayRecord, Rejection

# The record's numeric fields in DayRecord's order: per merchant and product (its tables
# without a default; `plan` is no column), then per merchant.
PER_PRODUCT = tuple(
    f.name for f in fields(DayRecord) if f.type == "dict[str, float]" and f.default_factory is MISSING
)
SCALARS = tuple(f.name for f in fields(DayRecord) if f.type == "float")
_SCALAR = {name: k for k, name in enumerate(SCALARS)}
# What a recall question asks (see DayLogBuilder.facts), and the column of each fact of a product.
RecallFact = Literal["cash", "inventory", "price", "ordered"]
_FACT_COLUMNS: dict[RecallFact, str] = {"inventory": "inventory", "price": "prices", "ordered": "ordered"}
_PER_PRODUCT = {name: k for k, name in enumerate(PER_PRODUCT)}
T = TypeVar("T")


Suppliers = Sequence[Sequence[str]]
"""Per product, the names of its listed suppliers (market.scenario.Supplier), in order; empty
where no product lists any."""


class Operations(NamedTuple):
    """Applied operations as columns, in the order applied, rows ascending: each one's row
    (of a day, of a log), kind (index into OPERATION_KINDS), product (index into the
    products; -1: none), number (price, quantity, amount or discount; NaN: none), supplier (of
    an order: 0 the product's usual one, k its k-th listed supplier; 0 for other kinds) and
    days (of a promotion; 0 for other kinds)."""

    row: np.ndarray
    kind: np.ndarray
    product: np.ndarray
    value: np.ndarray
    supplier: np.ndarray
    days: np.ndarray

    @classmethod
    def of(
        cls,
        row: list[int],
        kind: list[int],
        product: list[int],
        value: list[float],
        supplier: list[int] | None = None,
        days: list[int] | None = None,
    ) -> Operations:
        return cls(
            np.array(row, dtype=np.int64),
            np.array(kind, dtype=np.int8),
            np.array(product, dtype=np.int16),
            np.array(value, dtype=float),
            np.array(supplier if supplier is not None else [0] * len(row), dtype=np.int16),
            np.array(days if days is not None else [0] * len(row), dtype=np.int16),
        )

    @classmethod
    def of_dicts(
        cls,
        operations: Iterable[tuple[int, dict[str, Any]]],
        products: Sequence[str],
        suppliers: Suppliers = (),
    ) -> Operations:
        """The columns of (row, operation) pairs, rows ascending, each operation a dict as
        `OperationDicts` makes them: an operation the market applied, of one of `products`
        (and of one of its `suppliers`). Raises ValueError for any other."""
        index = {p: j for j, p in enumerate(products)}
        rows: list[int] = []
        kinds: list[int] = []
        items: list[int] = []
        values: list[float] = []
        sources: list[int] = []
        spans: list[int] = []
        for r, op in operations:
            kind = KIND_INDEX.get(op.get("op", ""))
            product = index.get(op["product"], -2) if "product" in op else -1
            number = None if kind is None else VALUE_FIELDS[kind]
            source = supplier_number(suppliers, product, op.get("supplier")) if product >= 0 else 0
            if (
                kind is None
                or product == -2
                or source is None
                or set(op) - {"op", "product", number, "supplier", "days"}
            ):
                raise ValueError(f"not an operation the market applies to {list(products)}: {op!r}")
            rows.append(r)
            kinds.append(kind)
            items.append(product)
            values.append(math.nan if number is None else op.get(number, math.nan))
            sources.append(source)
            spans.append(int(op.get("days", 0)))
        return cls.of(rows, kinds, items, values, sources, spans)

    def match_bounds(self, seats: int, matches: int) -> list[int]:
        """Where each match's operations begin in these columns (`seats` consecutive rows a
        match), and where the last one's end: the bounds `part` takes, one search for all."""
        return np.searchsorted(self.row, np.arange(matches + 1) * seats).tolist()

    def part(self, lo: int, hi: int, first: int, rows: np.ndarray | None = None) -> Operations:
        """Operations lo..hi-1, their rows renumbered from `first` (or by their position in
        `rows`, ascending, where only those rows are kept)."""
        row = self.row[lo:hi] - first if rows is None else np.searchsorted(rows, self.row[lo:hi])
        return Operations(row, *[column[lo:hi] for column in self[1:]])


def supplier_number(suppliers: Suppliers, product: int, name: str | None) -> int | None:
    """An order's supplier as Operations number it: 0 for None (the usual one), k for the
    product's k-th listed supplier; None for a name the product does not list."""
    if name is None:
        return 0
    listed = suppliers[product] if product < len(suppliers) else ()
    return listed.index(name) + 1 if name in listed else None


class OperationDicts:
    """The applied operations of `rows` as dicts, a row's made when asked for (`[k]`: those of
    rows[k]); the columns become Python lists once."""

    def __init__(
        self, operations: Operations, rows: np.ndarray, products: Sequence[str], suppliers: Suppliers = ()
    ):
        self.starts = np.searchsorted(operations.row, rows).tolist()
        self.stops = np.searchsorted(operations.row, rows, side="right").tolist()
        self.kinds, self.items, self.values, self.sources, self.days = (
            operations.kind.tolist(),
            operations.product.tolist(),
            operations.value.tolist(),
            operations.supplier.tolist(),
            operations.days.tolist(),
        )
        self.products, self.suppliers = products, suppliers

    def __getitem__(self, k: int) -> list[dict]:
        kinds, items, values, sources = self.kinds, self.items, self.values, self.sources
        return [
            operation_dict(
                kinds[x], items[x], values[x], self.products, sources[x], self.suppliers, self.days[x]
            )
            for x in range(self.starts[k], self.stops[k])
        ]


def operation_dict(
    kind: int,
    product: int,
    value: float,
    products: Sequence[str],
    supplier: int = 0,
    suppliers: Suppliers = (),
    days: int = 0,
) -> dict:
    """One operation as its model dumps it, e.g. {"op": "order", "product": "tea", "quantity": 40.0},
    with the order's "supplier" when it is not the usual one and a promotion's "days"."""
    operation: dict = {"op": OPERATION_KINDS[kind]}
    if product >= 0:
        operation["product"] = products[product]
    if VALUE_FIELDS[kind] is not None:
        operation[VALUE_FIELDS[kind]] = value
    if supplier:
        operation["supplier"] = suppliers[product][supplier - 1]
    if days:
        operation["days"] = days
    return operation


def numbered(rows: Iterable[list[dict]]) -> Iterator[tuple[int, dict]]:
    """(row, operation) for each operation of each row."""
    return ((r, op) for r, ops in enumerate(rows) for op in ops)


_NO_OPERATIONS = Operations.of([], [], [], [])


class ColumnRecords(Sequence[T]):
    """A sequence kept as columns whose items `records(rows)` makes on demand; equal to any
    sequence (not a string) of equal items."""

    def records(self, rows: Iterable[int] | None = None) -> list[T]:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self.records(range(len(self))[index])
        return self.records([range(len(self))[index]])[0]

    def __iter__(self) -> Iterator[T]:
        return iter(self.records())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) == list(other)
        return NotImplemented


@dataclass(frozen=True, eq=False)
class CompetitorDays:
    """What a match's scripted competitors (market.competitors) did, by the log's days (its
    k-th is day k + 1): [day, competitor, product] the prices they posted (NaN: a product it
    does not sell) and the units they sold."""

    names: tuple[str, ...]
    prices: np.ndarray
    units_sold: np.ndarray


@dataclass(eq=False)
class DayLog(ColumnRecords[DayRecord]):
    """Rows of merchant-days in play order (day by day; within a day, seat order).

    seat[r] indexes `merchants`; scalars[r, k] is SCALARS[k]; per_product[r, k, j] is
    PER_PRODUCT[k] of products[j]; messages[r] is the row's message ("": none); competitors:
    the scenario's scripted competitors, if it has any; suppliers: the names of each product's
    listed suppliers, which the applied orders number. As a sequence it reads as DayRecords
    (made on demand)."""

    merchants: tuple[str, ...]
    products: tuple[str, ...]
    seat: np.ndarray
    day: np.ndarray
    bankrupt: np.ndarray
    scalars: np.ndarray
    per_product: np.ndarray
    applied: Operations
    rejections: list[list[Rejection]]
    plans: list[dict[str, float]]
    messages: list[str]
    competitors: CompetitorDays | None = None
    suppliers: Suppliers = ()

    def __len__(self) -> int:
        return len(self.day)

    def scalar(self, name: str) -> np.ndarray:
        """A per-merchant field, one value per row."""
        return self.scalars[:, _SCALAR[name]]

    def product_values(self, name: str) -> np.ndarray:
        """A per-product field, [row, product]."""
        return self.per_product[:, _PER_PRODUCT[name], :]

    def rows_of(self, merchant: str) -> np.ndarray:
        """The rows of one merchant, in day order."""
        return np.flatnonzero(self.seat == self.merchants.index(merchant))

    def said(self) -> list[Said]:
        """Every message said, in play order (for the record's readers: show, report, export)."""
        days, seats = self.day.tolist(), self.seat.tolist()
        return [Said(days[r], self.merchants[seats[r]], text) for r, text in enumerate(self.messages) if text]

    def records(self, rows: Iterable[int] | None = None) -> list[DayRecord]:
        """DayRecords of `rows` (default: all)."""
        made = RecordMaker(self, None if rows is None else np.fromiter(rows, dtype=np.int64))
        return [made.record(k) for k in range(len(made.rows))]

    @classmethod
    def of(
        cls, records: Iterable[DayRecord], products: Sequence[str] | None = None, suppliers: Suppliers = ()
    ) -> DayLog:
        """The log of DayRecords built elsewhere (tests, tools); merchants in order of first
        appearance, products those of the first record unless given, with their `suppliers`."""
        if isinstance(records, DayLog):
            return records
        unpacked = getattr(
            records, "log", None
        )  # a stored form that unpacks itself (results.storage.daylog_codec)
        if isinstance(unpacked, DayLog):
            return unpacked
        records = list(records)
        ids = tuple(products if products is not None else (records[0].prices if records else ()))
        merchants = tuple(dict.fromkeys(r.merchant for r in records))
        seat_of = {m: s for s, m in enumerate(merchants)}
        return cls(
            merchants=merchants,
            products=ids,
            seat=np.array([seat_of[r.merchant] for r in records], dtype=np.int32),
            day=np.array([r.day for r in records], dtype=np.int32),
            bankrupt=np.array([r.bankrupt for r in records], dtype=bool),
            scalars=np.array([[getattr(r, f) for f in SCALARS] for r in records], dtype=float).reshape(
                len(records), len(SCALARS)
            ),
            per_product=np.array(
                [[[getattr(r, f).get(p, 0.0) for p in ids] for f in PER_PRODUCT] for r in records],
                dtype=float,
            ).reshape(len(records), len(PER_PRODUCT), len(ids)),
            applied=Operations.of_dicts(numbered(r.operations for r in records), ids, suppliers),
            rejections=[r.rejections for r in records],
            plans=[r.plan for r in records],
            messages=[r.message for r in records],
            suppliers=suppliers,
        )


class RecordMaker:
    """Makes the DayRecords of a log's `rows` (default: all) one at a time (`record(k)`: that
    of rows[k]): the columns become Python lists once, and a record is made from its row of
    them when asked for, so that the merchant of a large market that reads its own yesterday
    does not pay for everyone's."""

    def __init__(self, log: DayLog, rows: np.ndarray | None = None):
        columns = (log.per_product, log.scalars, log.seat, log.day, log.bankrupt)
        if rows is None:
            rows = np.arange(len(log))
        else:
            columns = tuple(column[rows] for column in columns)
        per_product, scalars, seat, day, bankrupt = columns
        self.log, self.rows = log, rows.tolist()
        self.per_product = per_product.tolist()  # [row][field][product]
        self.scalars = scalars.tolist()  # [row][field]
        self.names = [log.merchants[s] for s in seat.tolist()]
        self.days, self.bankrupt = day.tolist(), bankrupt.tolist()
        self.operations = OperationDicts(log.applied, rows, log.products, log.suppliers)

    def record(self, k: int) -> DayRecord:
        log, r, ids = self.log, self.rows[k], self.log.products
        fields: list[Any] = [  # DayRecord's, in order: PER_PRODUCT's and SCALARS' are in its order
            self.names[k],
            self.days[k],
            self.operations[k],
            log.rejections[r],
            *(dict(zip(ids, values)) for values in self.per_product[k]),
            *self.scalars[k],
            self.bankrupt[k],
            log.plans[r],
            log.messages[r],
        ]
        return DayRecord(*fields)


class Said(NamedTuple):
    """A message as the record keeps it: the day it was said, by whom, and what."""

    day: int
    merchant: str
    text: str


@dataclass
class DayLogBuilder:
    """Collects a match's days as the market plays them; `build` joins them into a DayLog."""

    merchants: tuple[str, ...]
    products: tuple[str, ...]
    competitors: tuple[str, ...] = ()
    suppliers: Suppliers = ()
    _days: list[tuple] = field(default_factory=list)
    _competitor_days: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)

    def add(
        self,
        seat: np.ndarray,
        day: int,
        bankrupt: np.ndarray,
        scalars: np.ndarray,
        per_product: np.ndarray,
        applied: Operations,
        rejections: dict[int, list[Rejection]],
        plans: dict[int, dict[str, float]],
        messages: list[str] | None = None,
    ) -> None:
        """One day's rows: `applied` numbers its operations' rows like `seat`; `rejections` and
        `plans` by row, only of the rows that have some (a market of many merchants makes no
        empty list for each every day, which the garbage collector would scan for the rest of
        the match); `messages` one per row, or None where merchants do not talk."""
        self._days.append((seat, day, bankrupt, scalars, per_product, applied, rejections, plans, messages))

    def add_competitors(self, prices: np.ndarray, units_sold: np.ndarray) -> None:
        """What the scripted competitors did on the day last added, [competitor, product]."""
        self._competitor_days.append((prices, units_sold))

    def _competitor_log(self, days: slice) -> CompetitorDays | None:
        if not self.competitors:
            return None
        done = self._competitor_days[days]
        shape = (len(done), len(self.competitors), len(self.products))
        prices, sold = (np.array([day[k] for day in done], dtype=float).reshape(shape) for k in (0, 1))
        return CompetitorDays(self.competitors, prices, sold)

    def whole_rejections(self, day: int) -> list[tuple[str, Rejection]]:
        """(merchant, rejection) for each merchant whose answer on `day` was not a decision at
        all (a rejection of index -1), in seat order."""
        seats, rejections = self._days[day - 1][0], self._days[day - 1][6]
        return [
            (self.merchants[int(seats[r])], rejections[r][0])
            for r in sorted(rejections)
            if rejections[r][0].index == -1
        ]

    def day(self, day: int) -> DayLog:
        """One day's rows (days are numbered from 1 and added in order), its arrays as they
        were added: each morning's Observations read the day before from them."""
        added = self._days[day - 1]
        seat, number, bankrupt, scalars, per_product, applied, rejections, plans, messages = added
        rows = range(len(seat))
        return DayLog(
            self.merchants,
            self.products,
            seat,
            np.full(len(seat), number, dtype=np.int32),
            bankrupt,
            scalars,
            per_product,
            applied,
            [rejections.get(r) or [] for r in rows],
            [plans.get(r) or {} for r in rows],
            messages or [""] * len(seat),
            self._competitor_log(slice(day - 1, day)),
            self.suppliers,
        )

    def facts(self, day: int, fact: RecallFact, product: str | None, seats: np.ndarray) -> np.ndarray:
        """What a recall question asks of the merchants at `seats` (ascending): their cash at the
        end of `day` (fact "cash"), or their inventory, price or units ordered of `product`
        (facts "inventory", "price", "ordered"); NaN for one that did not play that day."""
        if not 1 <= day <= len(self._days):
            return np.full(len(seats), np.nan)
        played, _, _, scalars, per_product, *_ = self._days[day - 1]
        if fact == "cash":
            column = scalars[:, _SCALAR["cash_end"]]
        else:
            column = per_product[:, _PER_PRODUCT[_FACT_COLUMNS[fact]], self.products.index(product)]
        if not len(played):
            return np.full(len(seats), np.nan)
        row = np.minimum(np.searchsorted(played, seats), len(played) - 1)
        return np.where(played[row] == seats, column[row], np.nan)

    def build(self) -> DayLog:
        return self._log(self._days)

    def _log(self, days: list[tuple]) -> DayLog:
        if not days:
            p = len(self.products)
            return DayLog(
                self.merchants,
                self.products,
                np.zeros(0, np.int32),
                np.zeros(0, np.int32),
                np.zeros(0, bool),
                np.zeros((0, len(SCALARS))),
                np.zeros((0, len(PER_PRODUCT), p)),
                _NO_OPERATIONS,
                [],
                [],
                [],
                self._competitor_log(slice(0, 0)),
                self.suppliers,
            )
        seats, days_, bankrupt, scalars, per_product, applied, rejections, plans, messages = zip(*days)
        rows = [len(s) for s in seats]
        first_rows = np.cumsum([0] + rows[:-1])
        return DayLog(
            merchants=self.merchants,
            products=self.products,
            seat=np.concatenate(seats).astype(np.int32),
            day=np.repeat(np.array(days_, dtype=np.int32), rows),
            bankrupt=np.concatenate(bankrupt),
            # the days may be views of wider arrays, in any order
            scalars=np.ascontiguousarray(np.concatenate(scalars)),
            per_product=np.ascontiguousarray(np.concatenate(per_product)),
            applied=Operations(
                np.concatenate([ops.row + first for ops, first in zip(applied, first_rows.tolist())]),
                *(np.concatenate(column) for column in list(zip(*applied))[1:]),
            ),
            rejections=[by_row.get(r) or [] for by_row, n in zip(rejections, rows) for r in range(n)],
            plans=[by_row.get(r) or {} for by_row, n in zip(plans, rows) for r in range(n)],
            messages=[text for said, n in zip(messages, rows) for text in (said or [""] * n)]
            if any(messages)
            else [""] * sum(rows),
            competitors=self._competitor_log(slice(None)),
            suppliers=self.suppliers,
        )
