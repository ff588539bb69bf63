"""The suite keeps to its budget: every test file has its time recorded, and the recorded
times, played as .ci/run plays them, end within SUITE_BUDGET_S."""

from __future__ import annotations

from suite_time import RECORDED_SECONDS, ROOT, ci_workers, predicted_seconds, recorded

# The tests' own time on .ci/run's workers, as the recorded times count it. The recorded times
# (taken at a quiet hour of the machine, 2026-12-07 19:35 UTC, where the suite took 256 s of
# pytest; files changed since scaled to that hour) predict 232 s for 2,695 tests
# (docs/benchmarks.md, "The test suite's CPU"). The budget leaves that a little room for new
# tests and the machine's drift, and keeps CI's five minutes clear of the last stop's 305 s.
SUITE_BUDGET_S = 250.0


def test_every_test_file_has_a_recorded_time():
    """A new file's time is unknown until recorded: record it (`pytest --record-durations`,
    docs/code.md "Development") so that the budget counts it."""
    files = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("test_*.py")}
    unrecorded = sorted(files - set(recorded()))
    assert unrecorded == [], f"no time in {RECORDED_SECONDS.relative_to(ROOT)} for {unrecorded}"


def test_the_recorded_suite_fits_its_budget_on_the_ci_workers():
    predicted = predicted_seconds(recorded(), ci_workers())
    assert predicted <= SUITE_BUDGET_S, (
        f"the recorded files take {predicted:.0f} s on {ci_workers()} workers, over the suite's "
        f"{SUITE_BUDGET_S:.0f} s: make the slowest files faster (`pytest --durations=30`)"
    )


def test_the_prediction_hands_the_longest_files_out_first():
    # 3 workers: 50, 40 and 30 start; 20 follows 30, 10 follows 40 (free at 40 before 50)
    assert predicted_seconds({"a": 10, "b": 50, "c": 30, "d": 40, "e": 20}, 3) == 50
    assert predicted_seconds({"a": 10, "b": 10, "c": 10}, 2) == 20
