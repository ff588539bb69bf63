"""What a match comes to after its last day: its result scored from its days and what it
recorded (results.scoring.metrics), and, for a probed match, its path compared with its
deviated path (results.scoring.deviation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from market.daylog import DayLog
from market.scenario import Scenario
from results.records import (
    DeviationPath,
    Fault,
    FinishedMatch,
    ModelCallRecord,
    OffPathAnswer,
    RecallLog,
    StoppedMatch,
    TranscriptRecord,
)
from results.scoring import deviation
from results.scoring.collusion import NoBenchmarks
from results.scoring.match_records import Unsolved
from results.scoring.metrics import compute as compute_metrics
from results.scoring.metrics import match_results
from results.settings import CollusionSettings
from tournaments.schedule import MatchSpec

if TYPE_CHECKING:  # the processes that play matches need no SciPy
    from market.equilibrium import SeatBenchmarks

Played = FinishedMatch | StoppedMatch | DeviationPath


@dataclass
class Recorded:
    """What one path of a match records besides its days: its merchants' faults, their model
    calls and transcript (handed over after the last day), and what each merchant reports of
    itself (by merchant)."""

    faults: list[Fault] = field(default_factory=list)
    calls: list[ModelCallRecord] = field(default_factory=list)
    transcript: list[TranscriptRecord] = field(default_factory=list)
    reported: dict[str, dict[str, float]] = field(default_factory=dict)


def finished_match(
    spec: MatchSpec,
    scenario: Scenario,
    log: DayLog,
    recalls: RecallLog,
    off_path: list[OffPathAnswer],
    recorded: Recorded,
    collusion: CollusionSettings,
    benchmarks: SeatBenchmarks | NoBenchmarks | Unsolved,
    wall_seconds: float,
) -> FinishedMatch:
    """The match of `spec` played in `scenario`, scored from its days (`log`), its merchants'
    answers and what it recorded, its collusion measured as `collusion` says against
    `benchmarks` (its scenario's price equilibria for its size, or why it has none; unsolved:
    the metrics solve them)."""
    scores = compute_metrics(log, recalls, recorded.faults, scenario, collusion, benchmarks)
    for name, reported in recorded.reported.items():
        scores.merchants[name].update(reported)
    return FinishedMatch(
        key=spec.key,
        index=spec.index,
        scenario=scenario.name,
        seed=spec.seed,
        days=spec.days,
        wall_seconds=wall_seconds,
        merchants=match_results(spec.seats, log, scores.merchants, recorded.faults, recorded.transcript),
        days_played=log,
        faults=recorded.faults,
        recalls=recalls,
        metrics=scores.merchants,
        market=scores.market,
        goals=scores.goals,
        notes=scores.notes,
        calls=recorded.calls,
        transcript=recorded.transcript,
        off_path=off_path,
    )


def with_deviation(played: Played, path: Played) -> FinishedMatch | StoppedMatch:
    """The match with its deviated path and their measures; stopped if either path was."""
    if isinstance(played, StoppedMatch) or isinstance(path, StoppedMatch):
        stopped = played if isinstance(played, StoppedMatch) else path
        assert isinstance(stopped, StoppedMatch)
        return stopped.model_copy(update={"calls": [*played.calls, *path.calls]})
    assert isinstance(played, FinishedMatch) and isinstance(path, DeviationPath)
    metrics = deviation.with_measures(played.metrics or {}, played.days_played, path.days_played, path.probe)
    return played.model_copy(update={"deviation": path, "metrics": metrics})
