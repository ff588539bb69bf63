"""A sweep's results by cell (results.sweep_summary.by_cell) as records for JSON: `arena
leaderboard --by/--metric --json`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from results.scoring.sweeps import CellResult


def cell_records(cells: Sequence[CellResult]) -> list[dict[str, Any]]:
    """Each cell's factors, matches and sessions, and each metric's mean and 95% interval
    (None: no session had it)."""
    return [
        {
            "factors": cell.factors,
            "matches": cell.matches,
            "sessions": cell.sessions,
            "metrics": {
                name: None if value is None else asdict(value) for name, value in cell.values.items()
            },
        }
        for cell in cells
    ]
