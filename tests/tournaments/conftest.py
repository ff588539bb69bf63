"""Fixtures of the tournament tests run as processes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def slow_tournament(tmp_path: Path) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(
        textwrap.dedent(
            """
            name: slow
            seed: 9
            scenarios: [price_war]
            seeds: [1, 2]
            days: 10
            max_concurrent_matches: 2
            contestants:
              - {name: fixed, kind: fixed_price}
              - {name: cost_plus, kind: cost_plus}
              - {name: slowpoke, kind: tests.doubles:Latency, params: {latency_s: 0.1}}
            """
        )
    )
    return path
