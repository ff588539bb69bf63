"""The whole suite's time, from the time each test file took in a whole run
(tests/file_seconds.json, which `pytest --record-durations` writes): the order in which
tests/conftest.py hands the files to xdist's workers, and the time the suite is predicted to
take on .ci/run's workers, which tests/test_suite_time.py holds to its budget."""

from __future__ import annotations

import heapq
import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED_SECONDS = ROOT / "tests" / "file_seconds.json"
# A file not recorded yet counts 10 s for each of its slow tests, to place it in the order.
SLOW_TEST_GUESS = 10.0


def recorded() -> dict[str, float]:
    """Each test file's seconds in the last recorded whole run, by path from the clone's root."""
    return json.loads(RECORDED_SECONDS.read_text()) if RECORDED_SECONDS.exists() else {}


def file_seconds(slow_in_file: Counter[str]) -> Counter[str]:
    """Each file's time as last recorded, else a guess from its slow tests (0 for none)."""
    return Counter({file: SLOW_TEST_GUESS * n for file, n in slow_in_file.items()} | recorded())


def ci_workers() -> int:
    """The xdist workers .ci/run gives the suite (its `pytest -n N`)."""
    found = re.search(r"pytest -n (\d+)", (ROOT / ".ci" / "run").read_text())
    assert found, ".ci/run runs no `pytest -n N`"
    return int(found[1])


def predicted_seconds(seconds: dict[str, float], workers: int) -> float:
    """The suite's time on `workers` workers as xdist plays it under .ci/run's options: the
    files, longest first, each to the worker that is free first; the time the last one ends."""
    ends = [0.0] * workers
    for taken in sorted(seconds.values(), reverse=True):
        heapq.heapreplace(ends, ends[0] + taken)
    return max(ends)
