"""The CLI's promise for mistakes a user can fix: one line on stderr naming the file and the
field, exit status 2, no traceback, and nothing written to the database.

Everything goes through the real Typer app; no tournament is played (no Ray is started:
every case here fails before the runner is called, or never reaches it).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import os
import pkgutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from typer.core import TyperArgument, TyperGroup
from typer.testing import CliRunner

from arena.cli import app
from arena.cli.exits import user_errors
from common.errors import UserError
from results.storage.db import engine_for
from results.storage.store import start_tournament
from tests.doubles import CHAOS, LATENCY
from tests.packages import PACKAGES
from tournaments.load import load_tournament
from tournaments.schedule import schedule

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "tournaments" / "round_robin.yaml"

runner = CliRunner()

BASE = """\
name: t
scenarios: [price_war]
contestants:
  - {name: a, kind: fixed_price}
  - {name: b, kind: random}
"""

BROKEN_SCENARIO = """\
name: broken
days: 5
products:
  - id: w
    unit_cost: -1
    reference_price: 2
    base_demand: 5
"""

BLIND_SCENARIO = """\
name: blind
days: 5
products:
  - {id: w, unit_cost: 1, reference_price: 2, base_demand: 5}
choice: {price_sensitivity: 0}
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder, made the working directory (paths are reported as given)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARENA_DB", raising=False)
    return tmp_path


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def one_error_line(result) -> str:
    """Assert the user-error contract and return the one line on stderr."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.exit_code == 2, (result.exit_code, output, result.exception)
    # exit 2 came from typer.Exit, not from an exception that escaped
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert result.stdout.strip() == "", result.stdout
    return lines[0]


def db_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("x.db"))


def case(id: str, files: dict[str, str], target: str, needles: list[str], named: str | None = None):
    """`files` are written, `target` is given to the CLI, and the error line must name the
    file `named` (default: the target) and contain every needle."""
    return pytest.param(files, target, named or target, needles, id=id)


CASES = [
    case(
        "yaml-syntax",
        {"t.yaml": "name: t\ncontestants: [\n  - name: a\n"},
        "t.yaml",
        ["invalid YAML", "line 3, column 3"],
    ),
    case("top-level-list", {"t.yaml": "- name: t\n- seed: 1\n"}, "t.yaml", ["mapping"]),
    case("empty-file", {"t.yaml": ""}, "t.yaml", ["mapping"]),
    case("missing-file", {}, "missing.yaml", ["no such file"]),
    case("unknown-top-level-key", {"t.yaml": BASE + "colour: red\n"}, "t.yaml", ["colour", "unknown key"]),
    case(
        "unknown-kind",
        {"t.yaml": BASE.replace("kind: random", "kind: oracle")},
        "t.yaml",
        ["contestants[1].kind", "'oracle'", "fixed_price"],
    ),
    case(
        "kind-of-ones-own-not-importable",
        {"t.yaml": BASE.replace("kind: random", "kind: no_such_package.merchants:Steady")},
        "t.yaml",
        [
            "contestants[1].kind",
            "no_such_package.merchants:Steady",
            "cannot be imported",
            "ModuleNotFoundError",
        ],
    ),
    case(
        "kind-of-ones-own-no-such-class",
        {"t.yaml": BASE.replace("kind: random", "kind: tests.doubles:Sloth")},
        "t.yaml",
        ["contestants[1].kind", "'tests.doubles:Sloth'", "cannot be imported", "AttributeError"],
    ),
    case(
        "kind-of-ones-own-not-a-contestant",
        {"t.yaml": BASE.replace("kind: random", "kind: market.scenario:Scenario")},
        "t.yaml",
        ["contestants[1].kind", "'market.scenario:Scenario'", "not a Contestant class"],
    ),
    case(
        "unknown-param-key",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {bogus: 1}}")},
        "t.yaml",
        ["contestants[0].params.bogus"],
    ),
    case(
        # price = unit_cost * (1 + markup) must stay positive: the model wants markup > -1
        "negative-markup",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {markup: -1.5}}")},
        "t.yaml",
        ["contestants[0].params.markup", "greater than -1"],
    ),
    case(
        "params-not-a-mapping",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: 3}")},
        "t.yaml",
        ["contestants[0].params", "dictionary"],
    ),
    case(
        "params-in-conflict",
        {"t.yaml": BASE.replace("kind: fixed_price}", "kind: fixed_price, params: {markup: 0.2, price: 9}}")},
        "t.yaml",
        ["contestants[0].params: give markup or price, not both"],
    ),
    case(
        "duplicate-names",
        {"t.yaml": BASE.replace("name: b", "name: a")},
        "t.yaml",
        ["contestants", "unique", "repeated: a"],
    ),
    case(
        "group-size-too-large",
        {"t.yaml": BASE + "group_size: 3\n"},
        "t.yaml",
        ["group_size", "3", "2 contestants"],
    ),
    case(
        "group-size-outside-round-robin",
        {"t.yaml": BASE + "format: free_for_all\ngroup_size: 2\n"},
        "t.yaml",
        ["group_size", "round_robin"],
    ),
    case(
        "gauntlet-without-challenger",
        {"t.yaml": BASE + "format: gauntlet\n"},
        "t.yaml",
        ["challenger", "gauntlet"],
    ),
    case(
        "gauntlet-unknown-challenger",
        {"t.yaml": BASE + "format: gauntlet\nchallenger: zed\n"},
        "t.yaml",
        ["challenger", "'zed'", "not among the contestants"],
    ),
    case(
        "challenger-outside-gauntlet",
        {"t.yaml": BASE + "challenger: a\n"},
        "t.yaml",
        ["challenger", "gauntlet"],
    ),
    case(
        "seeds-and-repetitions",
        {"t.yaml": BASE + "seeds: [1, 2]\nrepetitions: 3\n"},
        "t.yaml",
        ["seeds", "repetitions"],
    ),
    case("empty-seeds", {"t.yaml": BASE + "seeds: []\n"}, "t.yaml", ["seeds", "at least 1"]),
    case("repeated-seed", {"t.yaml": BASE + "seeds: [4, 5, 4]\n"}, "t.yaml", ["seeds", "repeated: 4"]),
    case(
        "repeated-yaml-key", {"t.yaml": BASE + "seed: 1\nseed: 2\n"}, "t.yaml", ["line 7", "'seed'", "twice"]
    ),
    case("days-zero", {"t.yaml": BASE + "days: 0\n"}, "t.yaml", ["days", "greater than or equal to 1"]),
    case(
        "max-concurrent-zero",
        {"t.yaml": BASE + "max_concurrent_matches: 0\n"},
        "t.yaml",
        ["max_concurrent_matches", "greater than or equal to 1"],
    ),
    case(
        "unknown-scenario",
        {"t.yaml": BASE.replace("[price_war]", "[price_war, atlantis]")},
        "t.yaml",
        ["scenarios[1]", "'atlantis' not found", "looked in", os.path.join("scenarios", "atlantis.yaml")],
    ),
    case(
        "scenario-invalid-field",
        {"t.yaml": BASE.replace("[price_war]", "[broken]"), "scenarios/broken.yaml": BROKEN_SCENARIO},
        "t.yaml",
        ["products[0].unit_cost", "greater than 0"],
        "broken.yaml",
    ),
    case(
        "scenario-without-price-equilibria",
        {
            "t.yaml": BASE.replace("kind: random", "kind: grim_trigger").replace("[price_war]", "[blind]"),
            "scenarios/blind.yaml": BLIND_SCENARIO,
        },
        "t.yaml",
        ["contestants[1]", "cannot play scenario 'blind'", "grim_trigger", "price_sensitivity 0"],
    ),
    case(
        "scenario-yaml-syntax",
        {
            "t.yaml": BASE.replace("[price_war]", "[broken]"),
            "scenarios/broken.yaml": "name: broken\ndays: [1\n",
        },
        "t.yaml",
        ["invalid YAML", "line 3"],
        "broken.yaml",
    ),
    case(
        # rich markup in what the user wrote must be printed, not interpreted (nor crash)
        "markup-in-values",
        {"t.yaml": BASE.replace("kind: random", 'kind: "[/bold]"')},
        "t.yaml",
        ["contestants[1].kind", "'[/bold]'"],
    ),
    case(
        "collusion-window-zero",
        {"t.yaml": BASE + "collusion: {window: 0}\n"},
        "t.yaml",
        ["collusion.window", "greater than 0"],
    ),
    case(
        "collusion-unknown-key",
        {"t.yaml": BASE + "collusion: {min_day: 3}\n"},
        "t.yaml",
        ["collusion.min_day", "unknown key"],
    ),
    case(
        "goal-on-unknown-metric",
        {"t.yaml": BASE + "goals: [{metric: sales, at_least: 10}]\n"},
        "t.yaml",
        ["goals[0].metric", "unknown metric 'sales'", "revenue"],
    ),
    case(
        "goal-share-above-one",
        {"t.yaml": BASE + "goals: [{metric: market_share, at_least: 15}]\n"},
        "t.yaml",
        ["goals[0].at_least", "market_share is a share, so 15 cannot bound it"],
    ),
    case(
        "goal-with-two-bounds",
        {"t.yaml": BASE + "goals: [{metric: revenue, at_least: 1, at_most: 5}]\n"},
        "t.yaml",
        ["goals[0]", "exactly one of at_least and at_most"],
    ),
    case(
        "scenario-goal-on-unknown-metric",
        {
            "t.yaml": BASE.replace("[price_war]", "[goal]"),
            "scenarios/goal.yaml": BLIND_SCENARIO.replace("blind", "goal").replace(
                "choice: {price_sensitivity: 0}", "goals: [{metric: happiness, at_least: 4}]"
            ),
        },
        "t.yaml",
        ["scenarios[0]", "scenario 'goal': goal on unknown metric 'happiness'"],
    ),
    case("talk-not-a-flag", {"t.yaml": BASE + "talk: yes-please\n"}, "t.yaml", ["t.yaml: talk:", "boolean"]),
    case(
        "markup-in-file-name",
        {"t[draft].yaml": BASE + "colour: red\n"},
        "t[draft].yaml",
        ["t[draft].yaml: colour: unknown key"],
    ),
    case(  # three pairs, a match each under max_matches: one pair could play all three, seeds +0, +1, +2
        "adaptive-seeds-past-the-largest-a-database-holds",
        {"t.yaml": BASE + "  - {name: c, kind: undercut}\nformat: adaptive\nseeds: [2147483647]\n"},
        "t.yaml",
        ["t.yaml: seeds:", "up to 2147483649;", "at most 2147483647"],
    ),
]


# ---- numbers: finite, within their ranges, never true or false, on every surface ----------


def _yaml_with(data: dict, path: str, raw: str) -> str:
    """`data` as YAML with the value at `path` (dotted, list items by number; made if missing)
    written as the YAML text `raw`, as a user would type it (1e309, .nan, true)."""
    data = copy.deepcopy(data)
    *sections, last = path.split(".")
    place: Any = data
    for key in sections:
        place = place[int(key)] if isinstance(place, list) else place.setdefault(key, {})
    if isinstance(place, list):
        place[int(last)] = "@VALUE@"
    else:
        place[last] = "@VALUE@"
    return yaml.safe_dump(data, sort_keys=False).replace("'@VALUE@'", raw)


TOURNAMENT = {
    "name": "t",
    "scenarios": ["shop"],
    "contestants": [{"name": "a", "kind": "fixed_price"}, {"name": "b", "kind": "random"}],
}
# a scenario with every part of the retail world
SHOP = {
    "name": "shop",
    "days": 6,
    "products": [
        {
            "id": "w",
            "unit_cost": 9.0,
            "reference_price": 20.0,
            "base_demand": 40,
            "initial_stock": 100,
            "suppliers": [{"name": "far", "unit_cost": 7.5, "lead_time": 3, "reliability": 0.8}],
        }
    ],
    "choice": {"price_sensitivity": 4.0, "no_purchase_utility": -2.0, "promotion_response": 0.4},
    "demand": {"weekday_factors": [1, 1, 1, 1, 1.2, 1.3, 1.1]},
    "reputation": {"advertising_scale": 400},
    "finance": {"initial_cash": 4000, "credit_share": 0.1, "credit_days": 7},
    "segments": [{"name": "bargain", "share": 0.4, "return_rate": 0.1}, {"name": "regular", "share": 0.6}],
    "promotions": {"max_discount": 0.4, "max_days": 5},
    "satisfaction": {"demand_weight": 0.3},
    "competitors": [{"name": "mart", "price_ratio": 0.95, "cuts": [{"start_day": 2, "multiplier": 0.8}]}],
    "seats": [{"unit_cost": {"w": 9.0}}, {"unit_cost": {"w": 8.0}}],
    "events": [{"name": "rush", "kind": "demand", "start_day": 2, "end_day": 3, "multiplier": 1.5}],
    "interventions": [{"name": "cap", "kind": "price_cap", "start_day": 2, "end_day": 3, "price": 40}],
    "goals": [{"metric": "revenue", "at_least": 100}],
    "target_net_worth": 5000,
}
THIRTY_DIGITS = "1" + "0" * 29


def in_tournament(id: str, path: str, raw: str, needles: list[str]):
    """The tournament file with `raw` at `path`, refused with a line naming t.yaml and every needle."""
    files = {
        "t.yaml": _yaml_with(TOURNAMENT, path, raw),
        "scenarios/shop.yaml": _yaml_with(SHOP, "name", "shop"),
    }
    return case(id, files, "t.yaml", needles)


def in_scenario(id: str, path: str, raw: str, needles: list[str]):
    """The shop scenario with `raw` at `path`: the line names the scenario's file."""
    files = {
        "t.yaml": _yaml_with(TOURNAMENT, "name", "t"),
        "scenarios/shop.yaml": _yaml_with(SHOP, path, raw),
    }
    return case(id, files, "t.yaml", needles, "shop.yaml")


def in_params(kind: str, path: str, raw: str, needles: list[str], scenario: str = "price_war"):
    """The first contestant of kind `kind`, with `raw` at `path` of its params."""
    entry = {"name": "a", "kind": kind, "params": {"model": "local/smollm2"} if kind == "llm" else {}}
    tournament = {**TOURNAMENT, "scenarios": [scenario], "contestants": [entry, TOURNAMENT["contestants"][1]]}
    files = {"t.yaml": _yaml_with(tournament, f"contestants.0.params.{path}", raw)}
    return case(f"{kind}-{path}-{raw}", files, "t.yaml", [f"contestants[0].params.{path}:", *needles])


FINITE = "Input should be a finite number"
NOT_TRUE = "Input should be a number, not true"

NUMBERS = [
    # the tournament file
    in_tournament("seed-negative", "seed", "-1", ["t.yaml: seed:", "greater than or equal to 0"]),
    in_tournament(
        "seed-30-digits", "seed", THIRTY_DIGITS, ["t.yaml: seed:", "less than or equal to 2147483647"]
    ),
    in_tournament("seeds-negative", "seeds", "[-1]", ["t.yaml: seeds[0]:", "greater than or equal to 0"]),
    in_tournament("seeds-30-digits", "seeds", f"[4, {THIRTY_DIGITS}]", ["t.yaml: seeds[1]:", "2147483647"]),
    in_tournament("days-true", "days", "true", ["t.yaml: days:", NOT_TRUE]),
    in_tournament("days-nan", "days", ".nan", ["t.yaml: days:", FINITE]),
    in_tournament("group-size-true", "group_size", "true", ["t.yaml: group_size:", NOT_TRUE]),
    in_tournament("confidence-nan", "confidence", ".nan", ["t.yaml: confidence:", FINITE]),
    in_tournament("timeout-inf", "decision_timeout_s", ".inf", ["t.yaml: decision_timeout_s:", FINITE]),
    in_tournament(
        "copies-true", "contestants.0.copies", "true", ["t.yaml: contestants[0].copies:", NOT_TRUE]
    ),
    in_tournament("scoring-inf", "scoring.win_rate", ".inf", ["t.yaml: scoring.win_rate:", FINITE]),
    in_tournament("scoring-true", "scoring.memory", "true", ["t.yaml: scoring.memory:", NOT_TRUE]),
    in_tournament(
        "scoring-huge", "scoring.validity", "1.0e+200", ["scoring.validity:", "less than or equal to 1000"]
    ),
    in_tournament("collusion-nan", "collusion.window", ".nan", ["t.yaml: collusion.window:", FINITE]),
    in_tournament(
        "deviation-to-1e309", "deviation", "{day: 2, to: 1e309}", ["t.yaml: deviation.to:", "'1e309'"]
    ),
    in_tournament("deviation-seat-true", "deviation", "{day: 2, seat: true}", ["deviation.seat:", NOT_TRUE]),
    in_tournament(
        "off-path-price-inf", "off_path", "{days: [3], price: .inf}", ["off_path.price:", "price above 0"]
    ),
    in_tournament("off-path-day-true", "off_path", "{days: [true], price: 2}", ["off_path.days:", NOT_TRUE]),
    in_tournament("budget-cost-inf", "budget", "{cost_usd: .inf}", ["t.yaml: budget.cost_usd:", FINITE]),
    in_tournament("budget-tokens-true", "budget", "{tokens: true}", ["t.yaml: budget.tokens:", NOT_TRUE]),
    in_tournament(
        "price-nan", "prices", "{openai/x: {input: .nan, output: 1}}", ["prices.openai/x.input:", FINITE]
    ),
    # sweeps
    in_tournament(
        "sweep-format-adaptive",
        "sweep",
        "{format: [round_robin, adaptive]}",
        ["t.yaml: sweep.format:", "adaptive"],
    ),
    in_tournament(
        "sweep-days-true", "sweep", "{days: [5, true]}", ["t.yaml: sweep: cell days=true: days:", NOT_TRUE]
    ),
    in_tournament(
        "sweep-param-1e309",
        "sweep",
        "{fixed_price.price: [3, 1e309]}",
        ["t.yaml: sweep: cell fixed_price.price=1e309: contestants[0].params.price:", FINITE],
    ),
    in_tournament(
        "sweep-scenario-nan",
        "sweep",
        "{scenario.choice.no_purchase_utility: [-2, .nan]}",
        ["sweep.scenario.choice.no_purchase_utility[1]:", FINITE],
    ),
    # goals and interventions, in the tournament file and in a scenario
    in_tournament(
        "goal-nan", "goals", "[{metric: revenue, at_least: .nan}]", ["t.yaml: goals[0].at_least:", FINITE]
    ),
    in_tournament(
        "goal-true", "goals", "[{metric: revenue, at_most: true}]", ["t.yaml: goals[0].at_most:", NOT_TRUE]
    ),
    in_scenario(
        "scenario-goal-1e309", "goals.0.at_least", "1e309", ["shop.yaml: goals[0].at_least:", FINITE]
    ),
    in_tournament(
        "intervention-price-inf",
        "interventions",
        "[{name: c, kind: price_cap, start_day: 2, price: .inf}]",
        ["t.yaml: interventions[0].price:", FINITE],
    ),
    in_tournament(
        "intervention-day-true",
        "interventions",
        "[{name: c, kind: price_cap, start_day: true, price: 5}]",
        ["t.yaml: interventions[0].start_day:", NOT_TRUE],
    ),
    in_tournament(
        "intervention-seat-true",
        "interventions",
        "[{name: f, kind: forced_price, start_day: 2, price: 5, seats: [true]}]",
        ["t.yaml: interventions[0].seats:", NOT_TRUE],
    ),
    in_scenario(
        "scenario-intervention-1e309", "interventions.0.price", "1e309", ["interventions[0].price:", FINITE]
    ),
    # a scenario's parts, the retail world's among them
    in_scenario("quality-nan", "products.0.quality", ".nan", ["shop.yaml: products[0].quality:", FINITE]),
    in_scenario("unit-cost-1e309", "products.0.unit_cost", "1e309", ["products[0].unit_cost:", FINITE]),
    in_scenario("base-demand-1e309", "products.0.base_demand", "1e309", ["products[0].base_demand:", FINITE]),
    in_scenario(  # 1e8 customers times the busiest weekday's 1.3 and the rush's 1.5
        "base-demand-busiest-day",
        "products.0.base_demand",
        "1.0e+8",
        ["shop.yaml: products[0].base_demand:", "up to 1.95e+08 customers a day; at most 1e+08"],
    ),
    in_scenario(
        "events-together",
        "events",
        "[{name: a, kind: cost, start_day: 2, end_day: 3, multiplier: 100},"
        " {name: b, kind: cost, start_day: 3, end_day: 4, multiplier: 100}]",
        ["shop.yaml: events:", "multiply its cost by up to 10000; at most 1000"],
    ),
    in_scenario(
        "supplier-cost-1e309",
        "products.0.suppliers.0.unit_cost",
        "1e309",
        ["suppliers[0].unit_cost:", FINITE],
    ),
    in_scenario(
        "supplier-true", "products.0.suppliers.0.reliability", "true", ["suppliers[0].reliability:", NOT_TRUE]
    ),
    in_scenario(
        "price-sensitivity-1e309", "choice.price_sensitivity", "1e309", ["choice.price_sensitivity:", FINITE]
    ),
    in_scenario(
        "no-purchase-nan", "choice.no_purchase_utility", ".nan", ["choice.no_purchase_utility:", FINITE]
    ),
    in_scenario("utility-too-large", "choice.no_purchase_utility", "5000", ["no_purchase_utility:", "1000"]),
    in_scenario(
        "weekday-nan", "demand.weekday_factors", "[1, 1, 1, 1, 1, 1, .nan]", ["weekday_factors[6]:", FINITE]
    ),
    in_scenario("season-true", "demand.seasonal_period", "true", ["demand.seasonal_period:", NOT_TRUE]),
    in_scenario("cash-inf", "finance.initial_cash", ".inf", ["finance.initial_cash:", FINITE]),
    in_scenario("advertising-nan", "reputation.advertising_scale", ".nan", ["advertising_scale:", FINITE]),
    in_scenario("segment-nan", "segments.0.return_rate", ".nan", ["segments[0].return_rate:", FINITE]),
    in_scenario("segment-true", "segments.0.share", "true", ["segments[0].share:", NOT_TRUE]),
    in_scenario("promotion-inf", "promotions.max_discount", ".inf", ["promotions.max_discount:", FINITE]),
    in_scenario(
        "satisfaction-1e309", "satisfaction.demand_weight", "1e309", ["satisfaction.demand_weight:", FINITE]
    ),
    in_scenario(
        "competitor-inf", "competitors.0.price_ratio", ".inf", ["competitors[0].price_ratio:", FINITE]
    ),
    in_scenario("cut-nan", "competitors.0.cuts.0.multiplier", ".nan", ["cuts[0].multiplier:", FINITE]),
    in_scenario("seat-cost-inf", "seats.0.unit_cost.w", ".inf", ["seats[0].unit_cost.w:", FINITE]),
    in_scenario("event-true", "events.0.start_day", "true", ["events[0].start_day:", NOT_TRUE]),
    in_scenario("target-nan", "target_net_worth", ".nan", ["shop.yaml: target_net_worth:", FINITE]),
    in_scenario("scale-inf", "scale", ".inf", ["shop.yaml: scale must be a number above 0"]),
    # the parameters of every kind of contestant, and a model's provider settings
    in_params("fixed_price", "price", "1e309", [FINITE]),
    in_params("random", "max_order", "true", [NOT_TRUE]),
    in_params("reorder_point", "price_factor", ".nan", [FINITE]),
    in_params("undercut", "step", ".inf", [FINITE]),
    in_params("cost_plus", "margin", "1e309", [FINITE]),
    in_params("best_response", "grid_points", "true", [NOT_TRUE]),
    in_params("tit_for_tat", "opening_price", ".nan", [FINITE]),
    in_params("grim_trigger", "tolerance", "true", [NOT_TRUE]),
    in_params("cartel", "tolerance", ".nan", [FINITE]),
    in_params(LATENCY, "latency_s", ".inf", [FINITE]),
    in_params(CHAOS, "every", "true", [NOT_TRUE]),
    in_params("qlearning", "alpha", ".nan", [FINITE], scenario="calvano"),
    in_params("llm", "temperature", ".nan", [FINITE]),
    in_params("llm", "context_tokens", THIRTY_DIGITS, ["less than or equal to"]),
    # a model's provider settings: errors name the provider's settings
    case(
        "llm-provider-timeout-inf",
        {"t.yaml": _yaml_with(TOURNAMENT, "contestants.0", "{name: a, kind: llm, params: {timeout: .inf}}")},
        "t.yaml",
        ["contestants[0].params:", "timeout:", FINITE],
    ),
    case(
        "llm-provider-retries-true",
        {
            "t.yaml": _yaml_with(
                TOURNAMENT,
                "contestants.0",
                "{name: a, kind: llm, params: {model: openai/gpt-4o, max_retries: true}}",
            )
        },
        "t.yaml",
        ["contestants[0].params:", "max_retries:", NOT_TRUE],
    ),
]


@pytest.mark.parametrize("command", ["run", "validate"])
@pytest.mark.parametrize(("files", "target", "named", "needles"), CASES + NUMBERS)
def test_config_mistakes_are_one_line_exit_2_and_write_nothing(work, command, files, target, named, needles):
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    args = [command, work / target]
    if command == "run":
        args += ["--db", f"sqlite:///{work}/x.db"]
    line = one_error_line(invoke(*args))
    assert named in line
    for needle in needles:
        assert needle in line, (needle, line)
    assert db_files(work) == []


def test_paths_are_named_as_given(work):
    """A relative path is reported as the user typed it."""
    (work / "t.yaml").write_text(BASE + "days: 0\n")
    line = one_error_line(invoke("run", "t.yaml", "--db", f"sqlite:///{work}/x.db"))
    assert line == "error: t.yaml: days: Input should be greater than or equal to 1"
    assert db_files(work) == []


def test_a_real_process_prints_one_line_and_no_traceback(work):
    """The same contract outside CliRunner: the installed entry point, real stderr."""
    (work / "t.yaml").write_text(BASE.replace("kind: random", "kind: oracle"))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from arena.cli import app; app()",
            "run",
            "t.yaml",
            "--db",
            f"sqlite:///{work}/x.db",
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        },
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "t.yaml" in lines[0] and "contestants[1].kind" in lines[0] and "oracle" in lines[0]
    assert proc.stdout == ""
    assert db_files(work) == []


# ---- validate ----------------------------------------------------------------------------


def test_validate_shipped_tournament_prints_the_scheduled_match_count():
    result = invoke("validate", SHIPPED)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    planned = len(schedule(load_tournament(SHIPPED)))
    assert planned == 28 * 2 * 2  # C(8, 2) pairs x 2 scenarios x 2 seeds
    assert f"{planned} matches" in result.stdout
    assert len(result.stdout.strip().splitlines()) == 1  # long paths are not wrapped


def test_validate_never_touches_a_database(work, monkeypatch):
    monkeypatch.setenv("ARENA_DB", "notadb://x")
    (work / "t.yaml").write_text(BASE)
    result = invoke("validate", "t.yaml")
    assert result.exit_code == 0, result.stderr
    assert "t.yaml: ok" in result.stdout and "1 matches" in result.stdout
    assert not (work / "arena.db").exists()


# ---- databases ---------------------------------------------------------------------------


def test_unknown_database_scheme(work):
    line = one_error_line(invoke("leaderboard", "--db", "notadb://x"))
    assert "notadb" in line


def test_unknown_database_scheme_in_run_fails_before_anything_runs(work):
    (work / "t.yaml").write_text(BASE)
    line = one_error_line(invoke("run", "t.yaml", "--db", "notadb://x"))
    assert "notadb" in line


def test_database_url_from_environment(work, monkeypatch):
    monkeypatch.setenv("ARENA_DB", "notadb://x")
    line = one_error_line(invoke("matches"))
    assert "notadb" in line and "$ARENA_DB" in line


def test_unparseable_database_url(work):
    line = one_error_line(invoke("leaderboard", "--db", "::::"))
    assert "::::" in line


def test_unopenable_sqlite_file(work):
    line = one_error_line(invoke("leaderboard", "--db", f"sqlite:///{work}/no/such/folder/x.db"))
    assert "x.db" in line


def test_a_sqlite_database_opened_for_reading_refuses_a_run_in_one_line_and_still_reads(work):
    """Opened read-only through its URL: the case of a file the user may not write (the tests
    run as root, whom file permissions do not stop)."""
    engine = engine_for(f"sqlite:///{work}/x.db")
    start_tournament(engine, "one", "one.yaml", "name: one\n", "h1", 1, [("a", "rule", {})], 1)
    engine.dispose()
    url = f"sqlite:///file:{work}/x.db?mode=ro&uri=true"
    (work / "t.yaml").write_text(BASE)
    line = one_error_line(invoke("run", "t.yaml", "--db", url))
    assert (
        "cannot write to database sqlite:///file" in line
        and "/x.db?mode=ro" in line
        and "readonly database" in line
    )
    read = invoke("leaderboard", "--db", url, "--json")
    assert read.exit_code == 0, read.stderr
    assert [t["id"] for t in json.loads(read.stdout)["tournaments"]] == [1]
    with sqlite3.connect(work / "x.db") as connection:
        assert connection.execute("SELECT count(*) FROM tournament").fetchone()[0] == 1


def test_show_unknown_match(work):
    engine_for(f"sqlite:///{work}/x.db").dispose()  # an empty database
    line = one_error_line(invoke("show", "999", "--db", f"sqlite:///{work}/x.db"))
    assert "no match with id 999" in line


@pytest.mark.parametrize("command", [["leaderboard"], ["matches"], ["tournaments"], ["show", "1"]])
def test_reading_commands_do_not_create_a_database(work, command):
    line = one_error_line(invoke(*command, "--db", f"sqlite:///{work}/missing.db"))
    assert "no database at" in line and "missing.db" in line
    assert not (work / "missing.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["leaderboard"],
        ["matches", "--json"],
        ["show", "1"],
        ["run", "t.yaml"],
    ],
    ids=["leaderboard", "matches", "show", "run"],
)
@pytest.mark.parametrize(
    "url",
    [
        "postgresql://arena:hunter2secret@127.0.0.1:1/arena",
        "postgresql+psycopg2://arena:hunter2secret@127.0.0.1:1/arena?connect_timeout=2",
        "postgresql+psycopg://arena:hunter2secret@127.0.0.1:1/arena?connect_timeout=2",
        "postgresql://arena:hunter2secret@127.0.0.1:notaport/arena",
    ],
    ids=["default-driver", "psycopg2", "psycopg", "unparseable"],
)
def test_database_password_never_printed(work, args, url):
    (work / "t.yaml").write_text(BASE)
    result = invoke(*args, "--db", url)
    line = one_error_line(result)
    assert "hunter2secret" not in result.stdout + result.stderr
    assert "arena" in line and "***" in line


# ---- arena rate and leaderboard options --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("", ["empty file", "match, contestant and rank or score"]),
        ("match,rank\n1,1\n", ["row 1", "no 'contestant' column"]),
        ("match,contestant\n1,a\n", ["row 1", "needs a 'rank' or a 'score' column"]),
        ("match,contestant,rank,score\n1,a,1,2\n", ["row 1", "not both"]),
        ("match,contestant,rank,rank\n1,a,1,1\n", ["row 1", "'rank' appears twice"]),
        ("match,contestant,rank\n", ["no results after the header"]),
        (
            "match,contestant,rank\n1,a,1\n1,b,first\n",
            ["row 3, column rank", "'first' is not a whole number"],
        ),
        ("match,contestant,rank\n1,a,0\n", ["row 2, column rank", "'0'"]),
        ("match,contestant,score\n1,a,nan\n", ["row 2, column score", "'nan' is not a finite number"]),
        ("match,contestant,rank\n1,,1\n", ["row 2, column contestant", "empty"]),
        (
            "match,contestant,rank\n1,a,1\n\n1,a,2\n",
            ["row 4, column contestant", "'a' appears twice in match '1'"],
        ),
        ("match,contestant,rank\n1,a\n", ["row 2", "2 fields where the header has 3"]),
        ('match,contestant,rank\n1,"a\n', ["row 2", "not valid CSV"]),
    ],
    ids=[
        "empty",
        "no-contestant",
        "no-measure",
        "both",
        "repeated-column",
        "no-rows",
        "word-rank",
        "zero-rank",
        "nan-score",
        "empty-cell",
        "twice",
        "short-row",
        "unclosed-quote",
    ],
)
def test_rate_bad_csv_is_one_line_naming_file_row_and_column(work, text, needles):
    (work / "r.csv").write_text(text)
    line = one_error_line(invoke("rate", "r.csv"))
    assert "r.csv: " in line
    for needle in needles:
        assert needle in line, line


def test_rate_missing_file(work):
    assert "nope.csv: no such file" in one_error_line(invoke("rate", "nope.csv", "--json"))


def test_rate_unknown_anchor(work):
    (work / "r.csv").write_text("match,contestant,rank\n1,a,1\n1,b,2\n")
    assert "reference contestant 'c'" in one_error_line(invoke("rate", "r.csv", "--anchor", "c"))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scenario", "fog"], "no stored match of scenario 'fog'"),
        (["--contestant", "zz"], "no contestant named 'zz'"),
        (["--tournament", "3"], "no tournament with id 3"),
        (["--tournament", "1", "--tournament", "3"], "no tournament with id 3"),
        (["--tournament", "1", "--all"], "--all pools every tournament, --tournament names"),
        (["--weights", "w.yaml"], "w.yaml: memory: Input should be greater than or equal to 0"),
        (["--weights", "none.yaml"], "none.yaml: no such file"),
    ],
    ids=["scenario", "contestant", "tournament", "one-of-two", "all-and-named", "weights", "no-weights-file"],
)
def test_leaderboard_selection_mistakes(work, args, needle):
    engine = engine_for(f"sqlite:///{work}/x.db")  # a tournament with no match
    stored = "name: one\nscenarios: [price_war]\ncontestants: [{name: a, kind: rule}, {name: b, kind: rule}]"
    start_tournament(engine, "one", "one.yaml", stored, "h1", 1, [("a", "rule", {}), ("b", "rule", {})], 1)
    engine.dispose()
    (work / "w.yaml").write_text("memory: -1\n")
    assert needle in one_error_line(invoke("leaderboard", "--db", f"sqlite:///{work}/x.db", *args))


# ---- options and arguments: Typer's own refusals are one line too --------------------------

BEYOND_64_BITS = "1" + "0" * 25
LARGEST_ID = "9223372036854775807"


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["show", "0"], ["error: MATCH_ID:", "greater than or equal to 1"]),
        (["show", BEYOND_64_BITS], ["error: MATCH_ID:", f"less than or equal to {LARGEST_ID}"]),
        (["show", "abc"], ["error: MATCH_ID:", "valid integer"]),
        (["show", "1", "--day", "0"], ["error: --day:", "greater than or equal to 1"]),
        (["show", "1", "--day", "4000"], ["error: --day:", "less than or equal to 3650"]),
        (["export", BEYOND_64_BITS, "--out", "o"], ["error: TOURNAMENT_ID:", LARGEST_ID]),
        (["export", "1", "--out", "o", "--format", "xml"], ["error: --format:", "'xml' is not one of"]),
        (["export", "1"], ["error: Missing option '--out'"]),
        (["report", BEYOND_64_BITS], ["error: TOURNAMENT_ID:", LARGEST_ID]),
        (["leaderboard", "--tournament", BEYOND_64_BITS], ["error: --tournament:", LARGEST_ID]),
        (["leaderboard", "--tournament", "1", "--by", "x", "--tournament", "0"], ["error: --tournament:"]),
        (["matches", "--tournament", "0"], ["error: --tournament:", "greater than or equal to 1"]),
        (["rescore", "--tournament", BEYOND_64_BITS], ["error: --tournament:", LARGEST_ID]),
        (["replicate", "calvano-baseline", "--tournament", BEYOND_64_BITS], ["error: --tournament:"]),
        (["replicate", "calvano-baseline", "--days", "0"], ["error: --days:", "greater than or equal to 1"]),
        (
            ["replicate", "calvano-baseline", "--days", "4000"],
            ["error: --days:", "less than or equal to 3650"],
        ),
        (["replicate", "calvano-baseline", "--repetitions", "0"], ["error: --repetitions:"]),
        (["replicate", "calvano-baseline", "--repetitions", "10001"], ["error: --repetitions:", "10000"]),
        (
            ["equilibrium", "calvano", "--merchants", "0"],
            ["error: --merchants:", "greater than or equal to 1"],
        ),
        (
            ["equilibrium", "calvano", "--merchants", "17"],
            ["error: --merchants:", "less than or equal to 16"],
        ),
        (["serve", "--port", "70000"], ["error: --port:", "less than or equal to 65535"]),
        (["serve", "--port", "-1"], ["error: --port:", "greater than or equal to 0"]),
        (["matches", "--bogus"], ["error: No such option: --bogus"]),
        (["bogus"], ["error: No such command 'bogus'"]),
        (["run"], ["error: Missing argument 'CONFIG'"]),
        (["validate", "t.yaml", "--ping", "--bogus"], ["error: No such option: --bogus"]),
        (["rate", "r.csv", "--anchor"], ["error: Option '--anchor' requires an argument"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) and value[0] != "error" else None,
)
def test_option_and_argument_mistakes_are_one_line_exit_2_and_write_nothing(work, args, needles):
    line = one_error_line(invoke(*args, *(["--db", f"sqlite:///{work}/x.db"] if _takes_db(args[0]) else [])))
    for needle in needles:
        assert needle in line, (needle, line)
    assert list(work.iterdir()) == []  # no database, no report, no export folder


def _arguments() -> list[tuple[str, str, bool]]:
    """Each command's arguments: (command, the name its usage line shows, whether required)."""
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return [
        (name, param.display_name_raw, param.required)
        for name, command in group.commands.items()
        for param in command.params
        if isinstance(param, TyperArgument)
    ]


@pytest.mark.parametrize(("command", "shown", "required"), _arguments(), ids=lambda value: str(value))
def test_a_mistaken_argument_is_named_as_the_usage_line_shows_it(work, command, shown, required):
    """In capitals, as docs/tour.md writes it, in the usage line and in the error alike."""
    usage = next(line for line in invoke(command, "--help").stdout.splitlines() if "Usage:" in line)
    assert shown.isupper() and shown in usage, usage
    if required:
        assert one_error_line(invoke(command)) == f"error: Missing argument '{shown}'."


def _takes_db(command: str) -> bool:
    return command in (
        "show",
        "export",
        "report",
        "leaderboard",
        "matches",
        "tournaments",
        "rescore",
        "replicate",
        "serve",
    )


def test_a_weights_file_with_an_infinite_weight_is_one_line(work):
    engine_for(f"sqlite:///{work}/x.db").dispose()  # an empty database
    (work / "w.yaml").write_text("win_rate: .inf\n")
    line = one_error_line(invoke("leaderboard", "--db", f"sqlite:///{work}/x.db", "--weights", "w.yaml"))
    assert line == "error: w.yaml: win_rate: Input should be a finite number"


def test_arena_alone_still_shows_the_help():
    result = invoke()
    assert result.exit_code == 2
    shown = result.stdout + result.stderr
    assert "Usage: " in shown and "Tournaments of merchant agents" in shown and "error:" not in shown


# ---- help --------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"]], ids=["arena", "run"])
def test_help_mentions_resume_and_address(args):
    result = invoke(*args)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "--resume" in result.stdout
    assert "--address" in result.stdout


# Exceptions of arena's own that a user cannot fix by changing a file or an option, and why.
NOT_THE_USERS = {
    "FieldError": "raised inside a pydantic check, which turns it into the ConfigError of its field",
    "EquilibriumError": "the solver failed; `arena equilibrium` words it as the scenario's InputFileError",
    "ProviderError": "a model call failed for good: a fault of the merchant, or a stopped run (exit 4)",
    "CallsStopped": "the run's calls stopped (budget, broken model): exits 3 or 4 with its own line",
    "DeskFailed": "the run's desk failed (gone, silent, its database refusing a page): the run stops, exit 3",
    "JudgeFailed": "a judge's call failed for good: the run or the audit stops with its own line (exit 4)",
    "JudgingCutShort": "a judging stopped between items by another's failure or the run's end: kept inside",
    "DeadlinePassed": "a turn's time ran out before its model call could start: the turn is late",
    "BadResponse": "an answer a provider could not read: retried, then a ProviderError",
    "PromptTooLong": "the embedded model's refusal for length: its merchant asks again, shorter",
    "_AttemptFailed": "one attempt of a call, inside the retry loop",
    "_Late": "an admission whose patience ran out, inside the call coordinator: the turn is late",
    "Busy": "the embedded model served other calls for an attempt's timeout: the attempt is retried",
    "TurnStuck": "a merchant's turn outlasted every bound: the run stops with its own line (exit 3)",
    "MatchLost": "a node or a runner died: the match is played again",
    "SeatLost": "a merchant's host died with its node: its match is lost and played again",
    "Forgotten": "a host restarted: the merchant starts afresh",
    "HostGone": "a host's connection closed: the merchant's turn failed",
    "ChromiumMissing": "tests and scripts only: the report itself needs no browser",
    "ToolError": "an agent's tool call it cannot carry out: its result tells the model why",
    "NonConformance": "the conformance kit's failed assertion, in a kind author's test: no command raises it",
}


def _arena_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in arena's packages, by name."""
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            module = importlib.import_module(name)
            for value in vars(module).values():
                is_exception = inspect.isclass(value) and issubclass(value, BaseException)
                if is_exception and value.__module__ == name:
                    found[value.__name__] = value
    return found


def test_every_exception_of_ours_is_a_user_error_or_says_why_not():
    """A new exception must take a side: derive from UserError (one line, exit 2) or be
    listed here with the reason a user cannot fix it."""
    exceptions = _arena_exceptions()
    undecided = sorted(
        n for n, c in exceptions.items() if not issubclass(c, UserError) and n not in NOT_THE_USERS
    )
    assert undecided == []
    assert set(NOT_THE_USERS) <= set(exceptions), "an exception listed here no longer exists"
    assert sum(issubclass(c, UserError) for c in exceptions.values()) >= 10


@pytest.mark.parametrize(
    "name", sorted(n for n, c in _arena_exceptions().items() if issubclass(c, UserError))
)
def test_every_user_error_ends_the_command_with_status_2(name, capsys):
    error = _arena_exceptions()[name]
    instance = error.__new__(error)
    Exception.__init__(instance, f"{name}: what is wrong")
    with pytest.raises(typer.Exit) as ended, user_errors():
        raise instance
    assert ended.value.exit_code == 2
    assert capsys.readouterr().err.strip().endswith(f"{name}: what is wrong")
