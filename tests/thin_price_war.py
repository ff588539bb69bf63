"""price_war with little cash and stock to start from, for the tests of the estimate's rehearsal:
its fixed cost of 20 a day bankrupts a merchant that makes no operation on day 25, so a match of
40 days shows what a year of price_war shows (where such a merchant lasts about 140 days)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from market.scenario import Scenario, shipped_scenario


def thin_price_war() -> dict[str, Any]:
    """The scenario as its file holds it."""
    scenario = yaml.safe_load(shipped_scenario("price_war").read_text(encoding="utf-8"))
    scenario["name"] = "thin_price_war"
    scenario["finance"]["initial_cash"] = 300
    scenario["products"][0]["initial_stock"] = 10
    return scenario


def write_thin_price_war(folder: Path) -> Path:
    path = folder / "thin_price_war.yaml"
    path.write_text(yaml.safe_dump(thin_price_war()), encoding="utf-8")
    return path


THIN_PRICE_WAR = Scenario.model_validate(thin_price_war())
