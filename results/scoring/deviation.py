"""Deviation probes: whether high prices are held up by a threat of punishment.

High prices alone do not show collusion. The test of Calvano, Calzolari, Denicolo and
Pastorello (AER 2020, their impulse responses) forces one firm to deviate and watches its
rivals: a collusive strategy answers a cut with a cut of its own, and the deviation does not
pay. A tournament's `deviation:` section plays every match twice with the same seeds: on
path, and with one seat's prices forced for a few days (tournaments.match). Here are the
settings, and the measures that compare the two paths, one function each with its formula:
`rival_response` and `recovery_days` of every merchant, `deviation_profitable` of the one
forced, and `prefix_replayed`, which says whether a merchant's days before the deviation
were the same on both paths (they are, for deterministic merchants and for language models
answered from the response cache).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from market import accounting, elementary
from market.daylog import DayLog
from market.types import DayRecord
from results.settings import DeviationProbe

RECOVERY_TOLERANCE = 0.01  # a price within this share of its on-path price is back


def paths(probe: DeviationProbe | None) -> int:
    """How many times each match is played: twice with a probe (on path and deviated)."""
    return 1 if probe is None else 2


Measure = Callable[[DayLog, DayLog, DeviationProbe], dict[str, float | None]]
DEVIATION_METRICS: dict[str, Measure] = {}


def _deviation_metric(compute: Measure) -> Measure:
    DEVIATION_METRICS[compute.__name__] = compute
    return compute


def compute(on_path: DayLog, deviated: DayLog, probe: DeviationProbe) -> dict[str, dict[str, float | None]]:
    """Every deviation measure that applies to each merchant of the match, by merchant then name."""
    found: dict[str, dict[str, float | None]] = {merchant: {} for merchant in on_path.merchants}
    for name, metric in DEVIATION_METRICS.items():
        for merchant, value in metric(on_path, deviated, probe).items():
            found[merchant][name] = value
    return found


def with_measures(
    scores: Mapping[str, Mapping[str, float | None]],
    on_path: Iterable[DayRecord],
    deviated: Iterable[DayRecord],
    probe: DeviationProbe,
) -> dict[str, dict[str, float | None]]:
    """A match's metrics by merchant (results.scoring.metrics), each merchant's deviation
    measures after them."""
    measured = compute(DayLog.of(on_path), DayLog.of(deviated), probe)
    return {merchant: {**values, **measured.get(merchant, {})} for merchant, values in scores.items()}


@_deviation_metric
def rival_response(on_path: DayLog, deviated: DayLog, probe: DeviationProbe) -> dict[str, float | None]:
    """Of each merchant not forced: (p_dev - p_path) / p_path on the first day after the
    deviation (day D + days), its price on the deviated path against its price on path that
    day, averaged over products. Negative: it cut its price in answer; None: it was not
    playing on both paths that day."""
    day = probe.last_day + 1
    values: dict[str, float | None] = {}
    for seat, merchant in enumerate(on_path.merchants):
        if seat == probe.seat:
            continue
        path, dev = _prices_by_day(on_path, seat).get(day), _prices_by_day(deviated, seat).get(day)
        values[merchant] = None if path is None or dev is None else float(np.mean((dev - path) / path))
    return values


@_deviation_metric
def recovery_days(on_path: DayLog, deviated: DayLog, probe: DeviationProbe) -> dict[str, float | None]:
    """Of each merchant: how many days after the deviation (from day D + days on) its price
    stayed away from its on-path price, that is t* - (D + days) with t* the first day from
    which every one of its prices is within 1% of the on-path price of the same day to the
    end of the match. 0: it never moved; None: it was not back by the last day both paths
    played."""
    first = probe.last_day + 1
    values: dict[str, float | None] = {}
    for seat, merchant in enumerate(on_path.merchants):
        path, dev = _prices_by_day(on_path, seat), _prices_by_day(deviated, seat)
        days = sorted(d for d in path.keys() & dev.keys() if d >= first)
        if not days:
            values[merchant] = None
            continue
        back = [
            bool(np.all(np.abs(dev[d] - path[d]) <= RECOVERY_TOLERANCE * (1 + 1e-9) * np.abs(path[d])))
            for d in days
        ]  # 1% exactly is back
        off = [d for d, ok in zip(days, back) if not ok]
        if not off:
            values[merchant] = 0.0
        elif off[-1] == days[-1]:
            values[merchant] = None
        else:
            values[merchant] = float(off[-1] + 1 - first)
    return values


@_deviation_metric
def deviation_profitable(on_path: DayLog, deviated: DayLog, probe: DeviationProbe) -> dict[str, float | None]:
    """Of the merchant forced: 1 if its discounted profit from day D on, sum over t >= D of
    δ^(t - D) π_t with π_t its profit of day t (market.accounting.profit over that day), is
    higher on the deviated path than on path, else 0 (the sums run to the last day it played
    on each path). None: it was not playing on day D."""
    merchant = on_path.merchants[probe.seat]
    path, dev = (_discounted_profit(log, probe) for log in (on_path, deviated))
    return {merchant: None if path is None or dev is None else float(dev > path)}


@_deviation_metric
def prefix_replayed(on_path: DayLog, deviated: DayLog, probe: DeviationProbe) -> dict[str, float | None]:
    """Of each merchant: 1 if its day records before day D are the same on both paths (every
    number, operation and rejection), else 0. Deterministic merchants replay
    exactly; a language model does when its answers come from the response cache."""
    return {
        merchant: float(
            on_path.records(_rows_before(on_path, seat, probe.day))
            == deviated.records(_rows_before(deviated, seat, probe.day))
        )
        for seat, merchant in enumerate(on_path.merchants)
    }


def _rows_before(log: DayLog, seat: int, day: int) -> np.ndarray:
    return np.flatnonzero((log.seat == seat) & (log.day < day))


def _prices_by_day(log: DayLog, seat: int) -> dict[int, np.ndarray]:
    rows = np.flatnonzero(log.seat == seat)
    prices = log.product_values("prices")
    return {int(log.day[r]): prices[r] for r in rows.tolist()}


def _discounted_profit(log: DayLog, probe: DeviationProbe) -> float | None:
    rows = np.flatnonzero((log.seat == probe.seat) & (log.day >= probe.day))
    if not rows.size or int(log.day[rows[0]]) != probe.day:
        return None
    daily = accounting.profit(log, rows, rows)
    return float(np.sum(daily * elementary.power(probe.discount, log.day[rows] - probe.day)))
