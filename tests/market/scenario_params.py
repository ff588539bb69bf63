"""Parametrising market tests over the shipped scenarios that have a given feature."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from market.scenario import Scenario

SCENARIO_FILES = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))


def scenarios_where(predicate) -> pytest.MarkDecorator:
    """Run a test on the shipped scenarios that have what it tests (and fail if none has:
    a test that never runs proves nothing)."""
    chosen = [p for p in SCENARIO_FILES if predicate(Scenario.model_validate(yaml.safe_load(p.read_text())))]
    assert chosen, "no shipped scenario has what this test needs"
    return pytest.mark.parametrize("scenario", chosen, ids=[p.stem for p in chosen], indirect=True)
