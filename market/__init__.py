"""The simulated market: scenarios, demand and choice, the engine and its PettingZoo adapter
(`parallel_env("price_war", merchants=2)`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from market.scenario import load_scenario, shipped_scenarios

if TYPE_CHECKING:
    from market.env import MarketEnv

__all__ = ["load_scenario", "parallel_env", "shipped_scenarios"]


def parallel_env(
    scenario: str | Path, merchants: list[str] | int = 2, days: int | None = None, **options: Any
) -> MarketEnv:
    """The market as a PettingZoo ParallelEnv, made the way PettingZoo's own environments are.

    `scenario`: a shipped scenario's name (see shipped_scenarios()) or a scenario file's path
    (see load_scenario); `merchants`: how many, or their names; `days`: the match's length
    (default: the scenario's); `options`: the rest of MarketEnv's (numeric=True: observations
    as arrays)."""
    from market.env import MarketEnv  # PettingZoo and gymnasium: imported only by who asks for the env

    return MarketEnv(load_scenario(scenario), merchants, days=days, **options)
