"""Parametrising market tests over the shipped scenarios that have a given feature."""

from __future__ import annotations

import pytest

from market.scenario import SHIPPED_SCENARIOS, load_scenario

SCENARIO_FILES = sorted(SHIPPED_SCENARIOS.glob("*.yaml"))


def scenarios_where(predicate) -> pytest.MarkDecorator:
    """Run a test on the shipped scenarios that have what it tests (and fail if none has:
    a test that never runs proves nothing)."""
    chosen = [p for p in SCENARIO_FILES if predicate(load_scenario(p))]
    assert chosen, "no shipped scenario has what this test needs"
    return pytest.mark.parametrize("scenario", chosen, ids=[p.stem for p in chosen], indirect=True)
