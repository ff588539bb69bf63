"""Every number a file gives has a stated range: each numeric field of every model a file is
read into (common.yaml_files.FileModel) bounds it below and above, and the base refuses NaN,
infinity and true or false in place of a number wherever a number belongs.

The refusals themselves, one line each through the CLI, are tabled in
tests/arena/test_cli_errors.py."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from pydantic import Field, ValidationError

from common.errors import first_problem
from common.yaml_files import FileModel
from tests.packages import PACKAGES

# numbers a range of their own would not mean: (model, field) -> why
UNBOUNDED = {
    ("TournamentSpec", "sweep"): "a factor's value is checked by the field of each cell it is set in",
    ("Figure", "where"): "a factor's value, as a sweep's cell names it: compared, never played",
}


def _file_models() -> list[type[FileModel]]:
    """Every FileModel of arena's packages (each module imported, so that every one is defined)."""
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            importlib.import_module(info.name)
    found, todo = set(), [FileModel]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.split(".")[0] in PACKAGES:
                found.add(sub)
            todo.append(sub)
    return sorted(found, key=lambda model: (model.__module__, model.__qualname__))


def _unbounded(schema: dict[str, Any]) -> bool:
    """Whether some number in `schema` (of one field: its items, members, values) lacks a bound."""
    if schema.get("type") in ("number", "integer"):
        low = "minimum" in schema or "exclusiveMinimum" in schema
        high = "maximum" in schema or "exclusiveMaximum" in schema
        if not (low and high):
            return True
    parts = [*schema.get("anyOf", []), *schema.get("prefixItems", [])]
    parts += [schema[key] for key in ("items", "additionalProperties") if isinstance(schema.get(key), dict)]
    return any(_unbounded(part) for part in parts)


FILE_MODELS = _file_models()


def test_the_file_models_include_every_section_of_a_tournament_and_a_scenario():
    names = {model.__name__ for model in FILE_MODELS}
    assert {
        "TournamentSpec",
        "ContestantEntry",
        "Scenario",
        "Product",
        "Supplier",
        "Segment",
        "Goal",
        "Intervention",
        "Competitor",
        "ScoringWeights",
        "CollusionSettings",
        "DeviationProbe",
        "OffPathSettings",
        "Budget",
        "Price",
        "QLearningParams",
        "FixedPriceParams",
        "LLMParams",
        "LocalSettings",
        "OpenAISettings",
        "AnthropicSettings",
    } <= names


@pytest.mark.parametrize("model", FILE_MODELS, ids=lambda model: model.__name__)
def test_every_number_of_a_file_has_a_range(model):
    unbounded = [
        name
        for name, schema in model.model_json_schema()["properties"].items()
        if _unbounded(schema) and (model.__name__, name) not in UNBOUNDED
    ]
    assert unbounded == []
    assert model.model_config.get("allow_inf_nan") is False


class _Example(FileModel):
    count: int = 0
    share: float | None = Field(None, ge=0, le=1)
    factors: tuple[float, ...] = ()
    costs: dict[str, float] = Field(default_factory=dict)
    flag: bool = False
    value: bool | int | str | None = None  # a true here is meant


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"count": True}, "count", "a number, not true"),
        ({"share": False}, "share", "a number, not false"),
        ({"factors": [1.5, True]}, "factors", "a number, not true"),
        ({"costs": {"w": True}}, "costs", "a number, not true"),
        ({"share": float("nan")}, "share", "finite number"),
        ({"factors": [float("inf")]}, "factors[0]", "finite number"),
        ({"costs": {"w": float("-inf")}}, "costs.w", "finite number"),
    ],
)
def test_nan_infinity_and_flags_are_refused_where_a_number_belongs(data, field, words):
    with pytest.raises(ValidationError) as refused:
        _Example.model_validate(data)
    problem = first_problem(refused.value)
    assert problem.field == field
    assert words in problem.explained


def test_flags_stay_flags_and_numbers_stay_numbers():
    read = _Example.model_validate({"count": 3, "share": 1, "factors": [0, 2.5], "flag": True, "value": True})
    assert (read.count, read.share, read.factors, read.flag, read.value) == (3, 1.0, (0.0, 2.5), True, True)
