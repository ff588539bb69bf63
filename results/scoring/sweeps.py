"""A sweep's results by cell: the metrics of its matches grouped by the values of chosen
factors, each the mean over the group's sessions with a 95% interval.

A match's value of a merchant's metric is the mean over its merchants (the market's side of a
pricing study, where every seat plays alike); a metric of the market (market_profit_gain,
Calvano et al.'s Δ) is the match's own. A session is the group's matches of one seed (the
lineups of a cell, and the cells pooled in the group, which all play the seed's draws), its
value their mean: the seeds, not the matches, are the independent draws the interval is over.
Matches without a value (a scenario without equilibria has no Δ) count only towards `matches`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from results.errors import NotFound
from results.records import FactorValue, SweepCell
from results.scoring.deviation import DEVIATION_METRICS
from results.scoring.metrics import MARKET_METRICS, METRICS

KEY_METRICS = ("market_profit_gain", "market_price_gain", "profit")  # what a sweep is read by, unless asked
CONFIDENCE = 0.95


class UnknownName(NotFound):
    """A factor or metric asked for that the tournament does not have."""


@dataclass(frozen=True)
class MeanInterval:
    """The mean of `n` values and the interval mean ± t · s / √n (s the sample standard
    deviation, t Student's quantile for CONFIDENCE with n - 1 degrees of freedom); with one
    value there is no interval (low and high are None)."""

    mean: float
    low: float | None
    high: float | None
    n: int


def mean_interval(values: Sequence[float]) -> MeanInterval | None:
    """See MeanInterval; None without values."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    if n == 1:
        return MeanInterval(mean, None, None, 1)
    from scipy.stats import t  # a third of a second to import: only for a sweep

    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(t.ppf((1 + CONFIDENCE) / 2, n - 1)) * spread / math.sqrt(n)
    return MeanInterval(mean, mean - half, mean + half, n)


@dataclass(frozen=True)
class CellResult:
    """The matches whose cells have `factors` (the values of the factors grouped by)."""

    factors: dict[str, FactorValue]
    matches: int
    sessions: int  # the seeds of its matches: a seed's matches are one session
    values: dict[str, MeanInterval | None]  # by metric, over sessions


ALL_METRICS = [*MARKET_METRICS, *METRICS, *DEVIATION_METRICS]  # the market's, a merchant's, a probe's


def unknown_metric(name: str, reported: Collection[str]) -> UnknownName:
    """What a metric `name` is told that arena does not compute (ALL_METRICS) and the
    tournament's merchants did not report (`reported`: a learner's `converged`, say)."""
    known = [*ALL_METRICS, *sorted(set(reported) - set(ALL_METRICS))]
    return UnknownName(f"no metric {name!r} (metrics: {', '.join(known)})")


def factors_of(cells: Sequence[SweepCell] | Sequence[CellResult]) -> list[str]:
    """The factors of a sweep's cells (or groups of them), in its order."""
    return list(cells[0].factors) if cells else []


def grouped(
    cells: Sequence[SweepCell], by: Sequence[str], metrics: Sequence[str], played: Mapping[int, Played]
) -> list[CellResult]:
    """The `played` matches (by their index in the schedule) of the `cells` grouped by the
    values of the factors `by`, in the sweep's order, with the mean and interval of each of
    `metrics` over the group's sessions (see the module)."""
    groups: dict[tuple[str, ...], tuple[dict[str, FactorValue], list[Played]]] = {}
    for cell in cells:
        chosen = {factor: cell.factors[factor] for factor in by}
        group = groups.setdefault(tuple(map(repr, chosen.values())), (chosen, []))[1]
        group += [
            played[index]
            for index in range(cell.first_index, cell.first_index + cell.matches)
            if index in played
        ]
    results = []
    for chosen, matches in groups.values():
        sessions: dict[int, list[Played]] = {}
        for match in matches:  # one seed's matches, of every cell pooled here, are one session
            sessions.setdefault(match.seed, []).append(match)
        values = {
            metric: mean_interval(
                [
                    math.fsum(had) / len(had)
                    for session in sessions.values()
                    if (had := [m.values[metric] for m in session if metric in m.values])
                ]
            )
            for metric in metrics
        }
        results.append(CellResult(chosen, len(matches), len(sessions), values))
    return results


@dataclass(frozen=True)
class Played:
    """A stored match as a sweep reads it: its seed, and its value of each metric it has."""

    seed: int
    values: dict[str, float]
