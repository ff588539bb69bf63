"""A contestant kind of a few lines, checked with the conformance kit (docs/contestants.md,
"Checking a kind"): it prices every product at its unit cost times `markup`, give or take a
share `jitter` drawn from the generator its seed makes.

    uv run python docs/examples/steady_markup.py
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from contestants.base import Contestant, Params
from contestants.conformance import check_contestant
from market.scenario import Scenario
from market.types import Observation, SetPrice


class SteadyMarkupParams(Params):
    markup: float = Field(1.5, gt=1, le=10, description="the price, as a multiple of the unit cost")
    jitter: float = Field(0.05, ge=0, lt=1, description="the most the price is off that, at random")


class SteadyMarkup(Contestant):
    kind: ClassVar[str] = "steady_markup"
    params_model: ClassVar[type[Params]] = SteadyMarkupParams
    params: SteadyMarkupParams

    def reset(self, *, merchant: str, scenario: Scenario, seed: int) -> None:
        self.rng = np.random.default_rng(seed)  # its draws: the same again for the same seed

    def decide(self, observation: Observation) -> list[SetPrice]:
        markup, jitter = self.params.markup, self.params.jitter
        return [
            SetPrice(product=p.product, price=p.unit_cost * markup * (1 + jitter * self.rng.uniform(-1, 1)))
            for p in observation.products
        ]


if __name__ == "__main__":
    check_contestant(SteadyMarkup, {"markup": 1.3})
    print("steady_markup keeps the contestant protocol")
