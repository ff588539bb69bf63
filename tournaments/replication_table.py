"""A replication pack's figures beside arena's values of them (tournaments.replication.compare),
as `arena replicate` prints them: a table, or JSON for scripts."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from results.presentation import views
from results.records import shown_value
from tournaments.replication import Comparison


def comparison_table(compared: list[Comparison], title: str) -> views.TableModel:
    headers = [
        views.Header("figure"),
        views.Header("cell", whole=True),
        views.Header("published", numeric=True),
        views.Header("band", numeric=True, whole=True),
        views.Header("arena [95% interval]", numeric=True, whole=True),
        views.Header("sessions", numeric=True),
        views.Header("within"),
        views.Header("published in interval"),
        views.Header("source"),
    ]
    rows = [
        [
            c.figure.name,
            ", ".join(f"{factor}={shown_value(value)}" for factor, value in c.figure.where.items()) or "all",
            f"{c.figure.published:g}",
            f"{c.figure.band[0]:g} to {c.figure.band[1]:g}",
            views.mean_and_interval(c.arena, views.metric_unit(c.figure.metric)),
            str(c.sessions if c.arena is None or c.arena.n == c.sessions else f"{c.arena.n} of {c.sessions}"),
            "yes" if c.within else "NO",
            {True: "yes", False: "no", None: "—"}[c.published_in_interval],
            c.figure.source,
        ]
        for c in compared
    ]
    return views.TableModel(title, headers, [rows])


def comparison_json(pack: str, tournament_id: int, compared: list[Comparison]) -> dict[str, Any]:
    return {
        "pack": pack,
        "tournament": tournament_id,
        "figures": [
            {
                **c.figure.model_dump(),
                "arena": None if c.arena is None else asdict(c.arena),
                "sessions": c.sessions,
                "within": c.within,
                "published_in_interval": c.published_in_interval,
            }
            for c in compared
        ],
    }
