"""Metrics of one merchant in one match, computed from the match's stored records.

Every metric is one function of a `Seat` (a merchant's day records and faults, and the whole
match for comparisons), or of the whole match giving every seat's value (`over_match`: these
read the recall questions too; both in results.scoring.match_records), with its formula in its
docstring, in one module per family (coherence_metrics, operations_metrics, economics_metrics,
collusion_metrics), gathered here in `METRICS` under its function's name: that name is the one
stored in the `metric` table and shown by `arena show`. A metric that does not apply (no
recall questions asked, no price moves) is None; one that may not apply for a reason a reader
needs (a collusion measure) says why, as NotApplicable, stored beside the values
(results.records.MetricNote).

The market as a whole has metrics of its own (`MARKET_METRICS`: one value per match, stored in
the `market_metric` table), and its price windows: the collusion measures, which place a match
between its scenario's competitive and collusive benchmarks (results.scoring.collusion).

Only what the record holds goes in, so stored matches can be scored again
(`results.rescoring.rescore`). The scenario is optional: without it `goal_completion` and the
collusion measures are None (the market's are not stored), and `contradictions` knows of cost
changes only from the recorded unit costs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from market.daylog import DayLog
from market.equilibrium import SeatBenchmarks
from market.scenario import Scenario
from market.types import DayRecord
from results.records import (
    Fault,
    GoalResult,
    MarketScores,
    MerchantResult,
    MetricNote,
    RecallResult,
    TranscriptRecord,
)
from results.scoring import coherence_metrics, collusion_metrics, economics_metrics, operations_metrics
from results.scoring.collusion import NoBenchmarks
from results.scoring.match_records import (
    UNSOLVED,
    MarketMetric,
    MatchRecords,
    Metric,
    NotApplicable,
    Reading,
    Unsolved,
)
from results.settings import CollusionSettings

# the families in the order the record keeps their metrics (the `metric` table's, the tables' rows)
METRICS: dict[str, Metric] = {
    **coherence_metrics.FAMILY,
    **operations_metrics.FAMILY,
    **economics_metrics.FAMILY,
    **collusion_metrics.FAMILY,
}
MARKET_METRICS: dict[str, MarketMetric] = collusion_metrics.MARKET


class Scores(NamedTuple):
    """A match's metrics: per merchant (merchant -> metric name -> value), of its market, each
    merchant's result on each campaign goal, and why the metrics that do not apply do not."""

    merchants: dict[str, dict[str, float | None]]
    market: MarketScores
    goals: list[GoalResult]
    notes: list[MetricNote]


def compute(
    records: Iterable[DayRecord],
    recalls: Iterable[RecallResult] = (),
    faults: Iterable[Fault] = (),
    scenario: Scenario | None = None,
    collusion: CollusionSettings = CollusionSettings(),
    benchmarks: SeatBenchmarks | NoBenchmarks | Unsolved = UNSOLVED,
) -> Scores:
    """Every metric of every merchant with a day record, in the order they first appear, and
    the market's metrics and price windows where its scenario has an equilibrium (empty
    otherwise), with a note for each that does not apply (NotApplicable): its value is None.
    A value that comes out infinite or NaN is stored as None. `benchmarks`: the scenario's for
    the match's size, or why it has none (results.scoring.collusion.seat_benchmarks), if already solved."""
    match = MatchRecords(records, recalls, faults, scenario, collusion, benchmarks, metrics=METRICS)
    columns = {name: metric.readings(match) for name, metric in METRICS.items()}
    readings: dict[str | None, dict[str, Reading]] = {
        merchant: {name: values[k] for name, values in columns.items()}
        for k, merchant in enumerate(match.seats)
    }
    market = MarketScores()
    if match.benchmarks is not None:
        readings[None] = {
            name: metric.reading(match) for name, metric in MARKET_METRICS.items() if metric.applies(match)
        }
        market = MarketScores(metrics=_values(readings[None]), windows=match.price_windows)
    notes = [
        MetricNote(merchant=merchant, name=name, note=value.reason)
        for merchant, values in readings.items()
        for name, value in values.items()
        if isinstance(value, NotApplicable)
    ]
    merchants = {merchant: _values(values) for merchant, values in readings.items() if merchant is not None}
    return Scores(merchants, market, match.goal_results, notes)


def _values(readings: dict[str, Reading]) -> dict[str, float | None]:
    return {name: None if isinstance(value, NotApplicable) else value for name, value in readings.items()}


def match_results(
    seats: Sequence[str],
    log: DayLog,
    metrics: Mapping[str, Mapping[str, float | None]],
    faults: Iterable[Fault],
    transcript: Iterable[TranscriptRecord] = (),
) -> list[MerchantResult]:
    """A match's results per merchant, in seat order: what its `metrics` say of its money and
    place, so that the two tables agree, with its final cash, faults, refused operations and
    the requests of its that its model's server refused as too long (steps of its `transcript`).
    A merchant is named after the contestant in its seat."""
    faults_of = Counter(fault.merchant for fault in faults)
    refused_of = Counter(step.merchant for step in transcript if step.refused is not None)
    results = []
    for merchant in seats:
        rows, values = log.rows_of(merchant).tolist(), metrics[merchant]
        bankrupt_day = values["bankrupt_day"]
        results.append(
            MerchantResult(
                merchant=merchant,
                contestant=merchant,
                final_cash=float(log.scalar("cash_end")[rows[-1]]),
                net_worth=_of_every_seat(values["net_worth"]),
                profit=_of_every_seat(values["profit"]),
                rank=int(_of_every_seat(values["rank"])),
                market_share=_of_every_seat(values["market_share"]),
                bankrupt_day=None if bankrupt_day is None else int(bankrupt_day),
                faults=faults_of[merchant],
                rejected_operations=sum(len(log.rejections[r]) for r in rows),
                length_refusals=refused_of[merchant],
            )
        )
    return results


def _of_every_seat(value: float | None) -> float:
    """The value of a metric that every seat has (its money and place), never None."""
    assert value is not None
    return value
