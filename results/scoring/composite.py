"""The composite score: one number in [0, 1] mixing how a contestant did with how coherently it
played, shown in its own column and never mixed into the rating.

    composite = sum(weight_c * part_c) / sum(weight_c)   over the parts c that have a value

with the parts
    win_rate  matches won (first place, alone or shared) / matches played
    validity  mean action validity rate (results.scoring.metrics `validity_rate`), in [0, 1]
    memory    1 - min(mean relative recall error (`memory_error`), 1)

A part without a value (no match played, no metric stored, no recall question asked) is left out
and the weights of the others are scaled up; with no part at all the composite is None.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from common.yaml_files import FileModel

MAX_WEIGHT = 1000.0  # weights count relative to one another: a wider range adds nothing


class ScoringWeights(FileModel):
    """The `scoring:` section of a tournament file, or a `--weights` file. Unknown keys are errors."""

    objective: Literal["net_worth", "goals"] = Field(
        "net_worth",
        description="what the rating ranks a match's merchants by: their place (net worth), or the "
        "share of the campaign goals they met, then their place",
    )
    win_rate: float = Field(0.5, ge=0, le=MAX_WEIGHT, description="weight of the win rate")
    validity: float = Field(0.25, ge=0, le=MAX_WEIGHT, description="weight of the action validity rate")
    memory: float = Field(0.25, ge=0, le=MAX_WEIGHT, description="weight of 1 - memory error")

    @model_validator(mode="after")
    def _some_weight(self) -> ScoringWeights:
        if self.win_rate + self.validity + self.memory <= 0:
            raise ValueError("at least one weight must be above 0")
        return self


def composite(
    weights: ScoringWeights, win_rate: float | None, validity: float | None, memory_error: float | None
) -> float | None:
    memory = None if memory_error is None else 1.0 - min(memory_error, 1.0)
    parts = [(weights.win_rate, win_rate), (weights.validity, validity), (weights.memory, memory)]
    weighed = [(weight, value) for weight, value in parts if value is not None and weight > 0]
    if not weighed:
        return None
    return sum(weight * value for weight, value in weighed) / sum(weight for weight, _ in weighed)
