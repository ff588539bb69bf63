"""Match results from a CSV file, for `arena rate`: results from elsewhere rated the same way.

Columns (a header row, any order, others ignored): `match` (any label; rows with the same label
are one match), `contestant`, and either `rank` (a whole number, 1 best, ties share a rank) or
`score` (a number, higher better; equal scores tie). Matches are rated in the order they first
appear, which only the online Elo column depends on.
"""

from __future__ import annotations

import csv
import math
from _csv import Reader
from pathlib import Path

from results.errors import InputFileError
from results.readings import RankedMatch


def read_results(path: str | Path) -> list[RankedMatch]:
    """The file's matches; raises InputFileError naming the file, row and column of the first problem."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as file:
            return _parse(path, csv.reader(file, strict=True))
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: cannot read: {exc}") from None


def _parse(path: Path, reader: Reader) -> list[RankedMatch]:
    def fail(where: str, problem: str) -> InputFileError:
        return InputFileError(f"{path}: {where}: {problem}")

    try:
        header = [name.strip() for name in next(reader, [])]
        if not any(header):
            raise InputFileError(
                f"{path}: empty file; expected a header row with match, contestant and rank or score"
            )
        for needed in ("match", "contestant"):
            if needed not in header:
                raise fail("row 1", f"no {needed!r} column (columns: {', '.join(header)})")
        measures = [name for name in ("rank", "score") if name in header]
        if len(measures) != 1:
            raise fail(
                "row 1",
                "needs a 'rank' or a 'score' column"
                if not measures
                else "give a 'rank' or a 'score' column, not both",
            )
        measure = measures[0]
        repeated = sorted({name for name in header if name and header.count(name) > 1})
        if repeated:
            raise fail("row 1", f"column {repeated[0]!r} appears twice")
        column = {name: header.index(name) for name in ("match", "contestant", measure)}

        seats: dict[str, dict[str, float]] = {}
        for row in reader:
            line = f"row {reader.line_num}"
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise fail(line, f"{len(row)} fields where the header has {len(header)}")
            match, contestant, text = (row[column[name]].strip() for name in ("match", "contestant", measure))
            for name, cell in (("match", match), ("contestant", contestant), (measure, text)):
                if not cell:
                    raise fail(f"{line}, column {name}", "empty")
            value = _rank(text) if measure == "rank" else _score(text)
            if value is None:
                expected = "a whole number, 1 or more" if measure == "rank" else "a finite number"
                raise fail(f"{line}, column {measure}", f"{text!r} is not {expected}")
            match_seats = seats.setdefault(match, {})
            if contestant in match_seats:
                raise fail(f"{line}, column contestant", f"{contestant!r} appears twice in match {match!r}")
            match_seats[contestant] = value
    except csv.Error as exc:
        raise fail(f"row {reader.line_num}", f"not valid CSV: {exc}") from None
    if not seats:
        raise InputFileError(f"{path}: no results after the header")
    return [
        RankedMatch((0, position, match), _ranks(by_contestant, higher_is_better=measure == "score"))
        for position, (match, by_contestant) in enumerate(seats.items())
    ]


def _rank(text: str) -> int | None:
    try:
        rank = int(text)
    except ValueError:
        return None
    return rank if rank >= 1 else None


def _score(text: str) -> float | None:
    try:
        score = float(text)
    except ValueError:
        return None
    return score if math.isfinite(score) else None


def _ranks(values: dict[str, float], higher_is_better: bool) -> list[tuple[str, int]]:
    """Ranks as given, or competition ranks ("1224") from scores."""
    if not higher_is_better:
        return [(name, int(value)) for name, value in values.items()]
    return [(name, 1 + sum(other > value for other in values.values())) for name, value in values.items()]
