"""How many examples a property test tries: the count it states, which CI can afford, times
$ARENA_EXAMPLES_FACTOR (a whole number, 1 if unset), to try more by hand, e.g.
`ARENA_EXAMPLES_FACTOR=20 pytest tests/market`. With the default "ci" Hypothesis profile the
examples are the same on every run; HYPOTHESIS_PROFILE=dev draws new ones each time."""

from __future__ import annotations

import os

FACTOR = int(os.environ.get("ARENA_EXAMPLES_FACTOR") or 1)


def examples(count: int) -> int:
    return count * FACTOR
