"""Every number of every file, refused when it is NaN or true, and named: each numeric field of
a scenario (every part of it), of a tournament file (every section), of every kind's
parameters and of every provider's settings, walked from the models themselves so that a new
field is covered as it is added. And the other side of the ranges: a market at their widest
ends plays to its last day with finite books, so that `arena validate` passing means the run
can finish.

One line and exit status 2 through the CLI, and nothing written, are tabled in
tests/arena/test_cli_errors.py; that every numeric field states a range, in
tests/market/test_file_numbers.py."""

from __future__ import annotations

import copy
import math
import types
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import pytest
import yaml
from pydantic import BaseModel

from common.yaml_files import ConfigError, FileModel, validated
from contestants.kinds import kinds
from contestants.llm.providers import provider_class, provider_names
from market.scenario import Scenario
from tournaments.config import TournamentSpec
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_tournament
from tournaments.schedule import schedule

BAD = {".nan": "Input should be a finite number", "true": "Input should be a number, not true"}
VALUES = {".nan": math.nan, "true": True}

# a scenario with every part, and a tournament file with every section
SCENARIO: dict[str, Any] = {
    "name": "every_part",
    "days": 6,
    "products": [
        {
            "id": "w",
            "unit_cost": 9.0,
            "reference_price": 20.0,
            "base_demand": 40,
            "initial_stock": 100,
            "initial_price": 21,
            "shelf_life": 9,
            "suppliers": [{"name": "far", "unit_cost": 7.5, "lead_time": 3, "reliability": 0.8}],
        }
    ],
    "choice": {},
    "demand": {},
    "reputation": {},
    "finance": {},
    "visibility": {},
    "segments": [{"name": "bargain", "share": 0.4, "return_rate": 0.1}, {"name": "regular", "share": 0.6}],
    "promotions": {"max_discount": 0.4},
    "satisfaction": {"demand_weight": 0.3},
    "competitors": [{"name": "mart", "cuts": [{"start_day": 2, "end_day": 3, "multiplier": 0.8}]}],
    "seats": [{"unit_cost": {"w": 9.0}, "quality": {"w": 0.5}}],
    "events": [{"name": "rush", "kind": "demand", "start_day": 2, "end_day": 3, "multiplier": 1.5}],
    "interventions": [{"name": "cap", "kind": "price_cap", "start_day": 2, "end_day": 3, "price": 40}],
    "goals": [{"metric": "revenue", "at_least": 100}],
}
TOURNAMENT: dict[str, Any] = {
    "name": "t",
    "scenarios": ["calvano"],
    "contestants": [{"name": "a", "kind": "fixed_price"}, {"name": "b", "kind": "random"}],
    "seeds": [1],
    "budget": {"tokens": 1000},
    "prices": {"openai/x": {"input": 1, "output": 2}},
    "scoring": {},
    "collusion": {},
    "deviation": {"day": 2},
    "goals": [{"metric": "revenue", "at_least": 1}],
    "interventions": [{"name": "cap", "kind": "price_cap", "start_day": 2, "price": 40}],
    "off_path": {"days": [3], "price": 1.5},
    "conduct": {"judges": [{"model": "local/smollm2"}], "majority": 1},
}


PLAIN = {"name": "t", "scenarios": ["calvano"]}


def _bare(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> list[Any]:
    """The types `annotation` may hold: its own, a union's members, a list's or a mapping's items."""
    annotation = _bare(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _members(arg)]
    if get_origin(annotation) in (list, tuple, dict):
        items = [arg for arg in get_args(annotation) if arg is not Ellipsis]
        return [member for arg in items[-1:] for member in _members(arg)]
    return [annotation]


def _container(annotation: Any) -> Any:
    """list, tuple or dict if `annotation` (optional or not) is one of them, else None."""
    annotation = _bare(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        held = [_container(arg) for arg in get_args(annotation) if arg is not type(None)]
        return next((kind for kind in held if kind is not None), None)
    return get_origin(annotation) if get_origin(annotation) in (list, tuple, dict) else None


def _numbers(
    model: type[BaseModel], data: dict[str, Any], where: str, seen: set[type]
) -> list[tuple[str, Any]]:
    """(field path, how to set a value there) for every numeric field of `model`, and of the
    models it holds that `data` (a valid document of it) has; `seen` gathers the models walked."""
    seen.add(model)
    found: list[tuple[str, Any]] = []
    for name, field in model.model_fields.items():
        members, container, path = _members(field.annotation), _container(field.annotation), f"{where}{name}"
        if (int in members or float in members) and (model, name) != (TournamentSpec, "sweep"):
            # (a sweep's factor value is checked by the field of each cell it is set in)
            key = next(iter(data.get(name) or {"w": 0})) if container is dict else None
            shape = {dict: lambda v, k=key: {k: v}, tuple: lambda v: [v] * 7, list: lambda v: [v]}
            found.append((path, (name, shape.get(container, lambda v: v))))
        held = data.get(name)
        if isinstance(held, dict) and container is dict:
            key, item, index = next(iter(held)), next(iter(held.values())), next(iter(held))
            path = f"{path}.{key}"
        elif isinstance(held, list) and held:
            item, index, path = held[0], 0, f"{path}[0]"
        else:
            item, index = held, None
        for sub in (m for m in members if isinstance(m, type) and issubclass(m, FileModel)):
            if isinstance(item, dict):
                for inner, setter in _numbers(sub, item, f"{path}.", seen):
                    found.append((inner, (name, index, setter)))
    return found


def _set(data: dict[str, Any], setter: Any, value: Any) -> dict[str, Any]:
    """A copy of `data` with `value` put where `setter` (from _numbers) says."""
    data = copy.deepcopy(data)
    if len(setter) == 2:
        name, shape = setter
        data[name] = shape(value)
    else:
        name, index, inner = setter
        if index is None:
            data[name] = _set(data[name], inner, value)
        else:
            data[name][index] = _set(data[name][index], inner, value)
    return data


def _reachable(model: type[BaseModel]) -> set[type]:
    """`model` and every file model its fields hold, however deep."""
    found, todo = set(), [model]
    while todo:
        current = todo.pop()
        found.add(current)
        for field in current.model_fields.values():
            for member in _members(field.annotation):
                if isinstance(member, type) and issubclass(member, FileModel) and member not in found:
                    todo.append(member)
    return found


SCENARIO_MODELS: set[type] = set()
SCENARIO_NUMBERS = _numbers(Scenario, SCENARIO, "", SCENARIO_MODELS)
TOURNAMENT_MODELS: set[type] = set()
TOURNAMENT_NUMBERS = [
    (path, setter)
    for path, setter in _numbers(TournamentSpec, TOURNAMENT, "", TOURNAMENT_MODELS)
    if not path.startswith("contestants[0].")  # an entry's own: copies (params: below)
]


def test_the_documents_walked_hold_every_part_of_a_scenario_and_every_section_of_a_tournament():
    assert _reachable(Scenario) == SCENARIO_MODELS
    assert _reachable(TournamentSpec) == TOURNAMENT_MODELS
    assert len(SCENARIO_NUMBERS) >= 60 and len(TOURNAMENT_NUMBERS) >= 30


@pytest.mark.parametrize("raw", BAD)
@pytest.mark.parametrize(("path", "setter"), SCENARIO_NUMBERS, ids=[path for path, _ in SCENARIO_NUMBERS])
def test_every_number_of_a_scenario_refuses_nan_and_true_and_names_its_field(path, setter, raw):
    with pytest.raises(ConfigError) as refused:
        validated(Path("s.yaml"), Scenario, _set(SCENARIO, setter, VALUES[raw]))
    assert refused.value.field is not None and refused.value.field.startswith(path)
    assert _says(refused.value.message, raw)


@pytest.mark.parametrize("raw", BAD)
@pytest.mark.parametrize(("path", "setter"), TOURNAMENT_NUMBERS, ids=[path for path, _ in TOURNAMENT_NUMBERS])
def test_every_number_of_a_tournament_file_refuses_nan_and_true_and_names_its_field(path, setter, raw):
    with pytest.raises(ConfigError) as refused:
        validated(Path("t.yaml"), TournamentSpec, _set(TOURNAMENT, setter, VALUES[raw]))
    assert refused.value.field is not None and refused.value.field.startswith(path)
    assert _says(refused.value.message, raw)


def _says(message: str, raw: str) -> bool:
    """Whether `message` says what is wrong with the value `raw`: in pydantic's words, or in a
    field's own that names the value (a price or a name: `not nan`)."""
    return message == BAD[raw] or message.endswith(f", not {VALUES[raw]!r}")


def _params_cases() -> list[Any]:
    """(kind, base params, field) for every numeric parameter of every kind, and (with the
    kind llm) every numeric setting of every provider's settings."""
    cases = []
    for kind, cls in kinds().items():
        base = {"model": "local/smollm2"} if kind == "llm" else {}
        for name, field in cls.params_model.model_fields.items():
            if {int, float} & set(_members(field.annotation)):
                cases.append(
                    pytest.param(kind, base, name, f"contestants[0].params.{name}", id=f"{kind}.{name}")
                )
    settings_models = {provider_class(name).settings_model: name for name in provider_names()}
    for model, provider in settings_models.items():
        for name, field in model.model_fields.items():
            if {int, float} & set(_members(field.annotation)):
                base = {"model": f"{provider}/m"}
                cases.append(
                    pytest.param("llm", base, name, "contestants[0].params", id=f"{provider}.{name}")
                )
    return cases


@pytest.mark.parametrize("raw", BAD)
@pytest.mark.parametrize(("kind", "base", "name", "field"), _params_cases())
def test_every_number_of_every_kinds_params_refuses_nan_and_true_and_names_it(
    tmp_path, kind, base, name, field, raw
):
    entry = {"name": "a", "kind": kind, "params": {**base, name: VALUES[raw]}}
    others = [{"name": "b", "kind": "random"}]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({**PLAIN, "contestants": [entry, *others]}))
    with pytest.raises(ConfigError) as refused:
        load_tournament(tmp_path / "t.yaml")
    assert refused.value.field == field
    said = f"{name}: {BAD[raw]}" if field == "contestants[0].params" else BAD[raw]
    assert refused.value.message.endswith(said)


# ---- the widest ends play ----------------------------------------------------------------

WIDEST = """\
name: widest
days: 6
products:
  - {id: dear, unit_cost: 1.0e+12, reference_price: 1.0e+12, quality: 1000, base_demand: 4900,
     holding_cost: 0, initial_stock: 0, initial_price: 1.0e+12, shelf_life: 2,
     returns_resellable: 0.5,
     suppliers: [{name: s, unit_cost: 1.0e+12, lead_time: 60, reliability: 0, late_days: 60}]}
  - {id: cheap, unit_cost: 1.0e-9, reference_price: 1.0e-9, quality: -1000, base_demand: 4900,
     holding_cost: 0, initial_stock: 1.0e+9}
choice: {price_sensitivity: 1000, reputation_weight: 1000, quality_weight: 1000, no_purchase_utility: -1000,
         promotion_response: 1000}
demand: {weekday_factors: [10, 0, 10, 10, 10, 10, 10], seasonal_amplitude: 0.99, seasonal_period: 3650}
reputation: {advertising_gain: 1, advertising_scale: 1.0e+12}
finance: {initial_cash: 1.0e+12, fixed_daily_cost: 0, credit_share: 1, credit_days: 60, bad_debt_share: 1}
events:
  - {name: boom, kind: demand, start_day: 1, end_day: 6, multiplier: 1000, announce_days_ahead: 3650}
  - {name: inflation, kind: cost, start_day: 1, end_day: 6, multiplier: 1000, shape: trend}
SEGMENTS
promotions: {max_discount: 0.99, max_days: 365}
satisfaction: {initial: 5, memory: 0, stockout_weight: 1000, return_weight: 1000, late_weight: 1000,
               demand_weight: 1000}
competitors:
  - {name: m, rule: undercut, price_ratio: 1000, undercut: 0.99, floor_ratio: 1000, reputation: 1,
     quality: 1000, cuts: [{start_day: 1, multiplier: 1000}]}
interventions:
  - {name: cap, kind: price_cap, start_day: 2, end_day: 3, price: 1.0e+12, announce_days_ahead: 3650}
goals: [{metric: revenue, at_least: 1.0e+15}]
target_net_worth: -1.0e+15
"""
SEGMENTS = """\
segments:
  - {name: x, share: 0.5, price_sensitivity: 1000, promotion_response: 1000, return_rate: 1}
  - {name: y, share: 0.5, price_sensitivity: 0, promotion_response: 0, return_rate: 0}"""
WIDEST_TOURNAMENT = """\
name: widest
scenarios: [widest]
seeds: [2147483647]
format: free_for_all
contestants:
  - {name: a, kind: random, params: {min_markup: -0.999, max_markup: 1000, max_order: 1000000000}}
  - {name: b, kind: fixed_price, params: {markup: 1000, target_stock: 1.0e+9, reorder_level: 0}}
  - {name: c, kind: cost_plus, params: {margin: 1000, target_stock: 1.0e+9}}
  - {name: d, kind: undercut, params: {min_markup: 1000, step: 0.999, target_stock: 1.0e+9}}
  - {name: e, kind: tit_for_tat, params: {opening_price: 1.0e+12, target_days: 3650, reorder_days: 0}}
  - {name: f, kind: reorder_point, params: {price_factor: 1000, target_stock: 1.0e+9}}
scoring: {win_rate: 1000, validity: 0, memory: 1000}
collusion: {window: 1, margin: 1, min_days: 3650}
"""


@pytest.mark.parametrize(
    "change",
    [
        "",  # customers in segments, stock counted in units
        "no segments, a seat each",
        "expected demand, no stock limit",
    ],
)
def test_a_market_at_the_widest_ends_of_its_ranges_plays_to_its_last_day(tmp_path, change):
    scenario = WIDEST.replace("SEGMENTS", SEGMENTS if change == "" else "")
    if change == "no segments, a seat each":
        scenario += (
            "seats:\n" + "  - {unit_cost: {dear: 1.0e+12, cheap: 1.0e-9}, quality: {dear: -1000}}\n" * 6
        )
    if change == "expected demand, no stock limit":
        scenario = scenario.replace("shelf_life: 2,", "").replace(
            "demand: {", "demand: {mode: expected, stock_limited: false, "
        )
    (tmp_path / "widest.yaml").write_text(scenario)
    (tmp_path / "t.yaml").write_text(WIDEST_TOURNAMENT)
    tournament = load_tournament(tmp_path / "t.yaml")
    (spec,) = schedule(tournament)
    played = play_here(
        [
            Match(
                spec,
                tournament.scenarios["widest"],
                MatchRules.of(tournament.spec, scenarios=tournament.scenarios),
                plan_tournament(tournament.spec),
            )
        ]
    )[0]
    assert len(played.merchants) == 6
    assert all(math.isfinite(m.net_worth) and math.isfinite(m.profit) for m in played.merchants)
    assert all(math.isfinite(day.cash_end) and math.isfinite(day.net_worth) for day in played.days_played)
    last = max(day.day for day in played.days_played)
    assert last == 6 or all(m.bankrupt_day == last for m in played.merchants)  # to its end, or all broke
    assert last == 6 or change == "expected demand, no stock limit"  # (there every sale loses money)
