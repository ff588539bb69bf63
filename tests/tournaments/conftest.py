"""Fixtures of the tournament tests run as processes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def slow_tournament(tmp_path: Path) -> Path:
    """Three merchants in pairs, two seeds of five days: the rule merchants' two matches play
    as a Ray task each, the latency merchant's four one at a time in one match runner (a runner is a
    process of its own; a match stored and the next under way is a moment every run passes
    through)."""
    path = tmp_path / "slow.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: slow
            seed: 9
            scenarios: [price_war]
            seeds: [1, 2]
            days: 5
            max_concurrent_matches: 1
            contestants:
              - {name: fixed, kind: fixed_price}
              - {name: cost_plus, kind: cost_plus}
              - {name: slowpoke, kind: tests.doubles:Latency, params: {latency_s: 0.1}}
            """
        )
    )
    return path
