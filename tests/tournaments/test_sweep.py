"""Sweeps: a tournament file's `sweep:` block, its cells, and their results by cell."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from starlette.testclient import TestClient
from typer.testing import CliRunner

from arena.cli import app
from common.yaml_files import ConfigError
from results import leaderboard
from results.leaderboard import rankings
from results.presentation.export import export
from results.records import PlayedScenarios
from results.report import build_report, sweep_part
from results.storage import store
from results.storage.db import engine_for
from results.storage.store import list_matches, match_detail, sweep_cells
from results.sweep_summary import by_cell
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_tournament
from tournaments.run import run_tournament
from tournaments.schedule import schedule
from viewer.app import create_app

BASE = """
name: sweep
seed: 5
scenarios: [price_war]
repetitions: 2
days: 6
contestants:
  - {name: fixed, kind: fixed_price, params: {price: 20.0}}
  - {name: other, kind: fixed_price, params: {price: 25.0}}
  - {name: costly, kind: cost_plus}
"""


def write(folder: Path, body: str, name: str = "t.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def sweep_file(folder: Path, sweep: dict, base: str = BASE) -> Path:
    """The file with `sweep` as its block, written as YAML's flow mappings are."""
    lines = [f"  {factor}: {json.dumps(values)}" for factor, values in sweep.items()]
    return write(folder, base + "sweep:\n" + "\n".join(lines) + "\n")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prices=st.lists(st.sampled_from([12.0, 15.5, 18.0, 30.0]), min_size=1, max_size=3, unique=True),
    days=st.lists(st.integers(2, 9), min_size=1, max_size=3, unique=True),
    groups=st.lists(st.sampled_from([2, 3]), min_size=1, max_size=2, unique=True),
)
def test_a_sweeps_cells_are_exactly_the_product_of_its_factors(tmp_path, prices, days, groups):
    sweep = {"fixed_price.price": prices, "days": days, "group_size": groups}
    tournament = load_tournament(sweep_file(tmp_path, sweep))
    cells = [tuple(cell.factors.values()) for cell in tournament.each_cell()]
    assert len(cells) == len(prices) * len(days) * len(groups)
    assert len(set(cells)) == len(cells)
    assert all(p in prices and d in days and g in groups for p, d, g in cells)
    assert cells == sorted(cells, key=lambda c: (prices.index(c[0]), days.index(c[1]), groups.index(c[2])))
    matches = schedule(tournament)
    assert [m.index for m in matches] == list(range(len(matches)))
    for cell in tournament.each_cell():
        spec = cell.tournament.spec
        own = [m for m in matches if m.cell == cell.label]
        assert all(m.days == cell.factors["days"] and len(m.seats) == cell.factors["group_size"] for m in own)
        combinations = math.comb(3, spec.group_size)
        assert len(own) == combinations * 2  # the lineups of the cell's group size, over two repetitions
        assert all(
            e.params["price"] == cell.factors["fixed_price.price"]
            for e in spec.contestants
            if e.kind == "fixed_price"
        )


def test_each_kind_of_factor_lands_where_it_says(tmp_path):
    sweep = {
        "collusion.min_days": [4],
        "scenario.products.0.unit_cost": [8.0],
        "other.price": [31.0],
        "cost_plus.margin": [0.5],
    }
    (cell,) = load_tournament(sweep_file(tmp_path, sweep)).each_cell()
    spec = cell.tournament.spec
    assert spec.collusion.min_days == 4
    assert cell.tournament.scenarios["price_war"].products[0].unit_cost == 8.0
    params = {e.name: e.params for e in spec.contestants}
    assert params == {"fixed": {"price": 20.0}, "other": {"price": 31.0}, "costly": {"margin": 0.5}}
    assert (
        cell.label
        == "collusion.min_days=4,scenario.products.0.unit_cost=8.0,other.price=31.0,cost_plus.margin=0.5"
    )


@pytest.mark.parametrize(
    "sweep, words",
    [
        ({"alpha": [1]}, "sweep.alpha: unknown factor"),
        ({"qlearning.alpha": [0.1]}, "no contestant is of kind 'qlearning'"),
        ({"contestants": [1]}, "sweep.contestants: contestants cannot be swept"),
        ({"fixed_price": [1]}, "sweep.fixed_price: name what of fixed_price varies"),
        ({"days": []}, "sweep.days: has no values"),
        ({"days": [3, 3]}, "sweep.days: values must be unique; repeated: 3"),
        ({"days": [3, 0]}, "sweep: cell days=0: days: Input should be greater than or equal to 1"),
        (
            {"fixed_price.price": [10.0, -1.0], "days": [3]},
            "sweep: cell fixed_price.price=-1.0,days=3: contestants[0].params.price:",
        ),
        (
            {"fixed_price.prise": [1.0]},
            "sweep: cell fixed_price.prise=1.0: contestants[0].params.prise: unknown",
        ),
        (
            {"scenario.choice.mu": [0.25]},
            "sweep: cell scenario.choice.mu=0.25: ",
        ),
        ({"group_size": [4]}, "sweep: cell group_size=4: group_size: 4 is larger than the 3 contestants"),
        ({"budget.cost_usd": [1.0]}, "sweep.budget.cost_usd: budget cannot be swept: it spans the whole run"),
        ({"seed": [1, 2]}, "sweep.seed: seed cannot be swept"),
        ({"days": [20, 20.0]}, "sweep.days: values must be unique; repeated: 20, 20.0"),
        ({"llm.preset": ["a,b"]}, "sweep.llm.preset: a value cannot hold ',' or '='"),
    ],
)
def test_a_factor_or_value_that_cannot_be_is_one_line_naming_it(tmp_path, sweep, words):
    path = sweep_file(tmp_path, sweep)
    with pytest.raises(ConfigError) as raised:
        load_tournament(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and words in message and "\n" not in message


def test_a_mistake_in_a_cell_stops_the_run_before_anything_is_written(tmp_path):
    path = sweep_file(tmp_path, {"fixed_price.price": [10.0, -1.0]})
    db = tmp_path / "arena.db"
    result = CliRunner().invoke(app, ["run", str(path), "--db", f"sqlite:///{db}"])
    assert result.exit_code == 2
    assert "cell fixed_price.price=-1.0" in result.output
    assert not db.exists()


def test_validate_counts_cells_matches_and_days(tmp_path):
    path = sweep_file(tmp_path, {"fixed_price.price": [10.0, 12.0, 14.0], "group_size": [2, 3]})
    result = CliRunner().invoke(app, ["validate", str(path), "--json"])
    summary = json.loads(result.output)
    # a cell of pairs plays 3 lineups, one of threes plays 1, each over 2 repetitions of 6 days
    assert (summary["cells"], summary["matches"], summary["market_days"]) == (6, 3 * (3 + 1) * 2, 3 * 8 * 6)


def test_the_sweep_counts_in_the_identity_of_a_tournament(tmp_path):
    one = load_tournament(sweep_file(tmp_path, {"days": [3, 4]}))
    other = load_tournament(sweep_file(tmp_path, {"days": [3, 5]}))
    plain = load_tournament(write(tmp_path, BASE))
    assert len({one.config_hash, other.config_hash, plain.config_hash}) == 3


def test_a_cell_plays_its_matches_as_the_file_with_its_values_would(tmp_path):
    """The cells of a sweep share their matches' draws (common random numbers): a cell's match
    is the match of the plain file with the cell's values written in."""
    sweep = load_tournament(
        sweep_file(tmp_path, {"costly.margin": [0.3, 0.6], "scenario.products.0.unit_cost": [9.0]})
    )
    cell = sweep.each_cell()[1]
    folder = tmp_path / "plain"
    folder.mkdir()
    scenario = Path("market/scenarios/price_war.yaml").read_text()
    write(folder, scenario.replace("unit_cost: 10.0", "unit_cost: 9.0", 1), "price_war.yaml")
    plain = load_tournament(
        write(folder, BASE.replace("kind: cost_plus}", "kind: cost_plus, params: {margin: 0.6}}"))
    )
    assert plain.scenarios["price_war"].products[0].unit_cost == 9.0

    def played(scheduled, tournament, key):
        """The match `key` of `scheduled`'s schedule played as the run plays it: by `tournament`'s rules."""
        (match,) = [m for m in schedule(scheduled) if m.key == key]
        rules = MatchRules.of(tournament.spec, scenarios=tournament.scenarios)
        plans = plan_tournament(tournament.spec)
        (result,) = play_here([Match(match, tournament.scenarios[match.scenario], rules, plans)])
        return [(r.merchant, r.day, r.prices, r.units_sold, r.cash_end) for r in result.days_played]

    key = "price_war/seed=1/costly+fixed"
    in_cell = played(sweep, cell.tournament, f"{cell.label}/{key}")
    assert in_cell == played(plain, plain, key)
    first = sweep.each_cell()[0]
    assert in_cell != played(sweep, first.tournament, f"{first.label}/{key}")  # the margin matters here


@pytest.fixture(scope="module")
def swept(ray_local, tmp_path_factory):
    """A sweep of two factors played on Ray: its engine, tournament id, and its export's
    `matches` and `results` tables."""
    folder = tmp_path_factory.mktemp("swept")
    sweep = {"other.price": [22.0, 28.0], "scenario.products.0.unit_cost": [9.0, 11.0]}
    tournament = load_tournament(sweep_file(folder, sweep))
    engine = engine_for(f"sqlite:///{folder}/arena.db")
    tournament_id = run_tournament(tournament, engine).tournament_id
    export(engine, tournament_id, folder / "out", "parquet")
    tables = {name: pd.read_parquet(folder / "out" / f"{name}.parquet") for name in ("matches", "results")}
    return tournament, engine, tournament_id, tables


def test_a_factor_reaches_every_match_of_its_cell(swept):
    tournament, engine, tournament_id, _ = swept
    cells = sweep_cells(engine, tournament_id)
    assert [c.factors for c in cells] == [c.factors for c in tournament.each_cell()]
    stored = list_matches(engine, tournament_id)
    assert len(stored) == 4 * 3 * 2
    for match in stored:
        (cell,) = [c for c in cells if c.holds(match.index)]
        assert match.key.startswith(cell.label + "/")
        for day in match_detail(engine, match.id).days.records():
            assert day.unit_cost["widget"] == cell.factors["scenario.products.0.unit_cost"]
            if day.merchant == "other":
                assert day.prices["widget"] == cell.factors["other.price"]


def test_the_export_carries_a_column_per_factor(swept):
    matches, results = swept[3]["matches"], swept[3]["results"]
    assert len(matches) == 4 * 3 * 2 and len(results) == len(matches) * 2
    assert str(matches["other.price"].dtype) == "float64"
    assert set(zip(matches["other.price"], matches["scenario.products.0.unit_cost"])) == {
        (22.0, 9.0),
        (22.0, 11.0),
        (28.0, 9.0),
        (28.0, 11.0),
    }
    for table in (matches, results):
        for key, price, cost in zip(
            table["key"], table["other.price"], table["scenario.products.0.unit_cost"]
        ):
            assert key.startswith(f"other.price={price},scenario.products.0.unit_cost={cost}/")


def test_results_by_cell_are_the_means_and_t_intervals_of_their_sessions(swept):
    """A session: a group's matches of one seed (here the three lineups of each of the two
    cells pooled), its value their mean of the merchants' mean profit; the cells share their
    seeds' draws, so a seed is one draw however many cells a group pools."""
    _, engine, tournament_id, tables = swept
    per_match = tables["results"].groupby(["match_id", "other.price", "seed"])["profit"].mean().reset_index()
    per_session = per_match.groupby(["other.price", "seed"])["profit"].mean().reset_index()
    grouped = by_cell(engine, tournament_id, ["other.price"], ["profit"])
    assert [g.factors for g in grouped] == [{"other.price": 22.0}, {"other.price": 28.0}]
    for group in grouped:
        values = per_session[per_session["other.price"] == group.factors["other.price"]]["profit"]
        summary = group.values["profit"]
        assert (group.matches, group.sessions, summary.n, len(values)) == (12, 2, 2, 2)
        assert summary.mean == pytest.approx(values.mean())
        half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values))
        assert (summary.low, summary.high) == pytest.approx((values.mean() - half, values.mean() + half))

    shown = CliRunner().invoke(
        app,
        [
            "leaderboard",
            "--db",
            str(engine.url),
            "--tournament",
            str(tournament_id),
            "--by",
            "scenario.products.0.unit_cost",
            "--metric",
            "profit",
            "--json",
        ],
    )
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)["cells"]
    assert [(row["factors"], row["matches"], row["sessions"]) for row in rows] == [
        ({"scenario.products.0.unit_cost": 9.0}, 12, 2),
        ({"scenario.products.0.unit_cost": 11.0}, 12, 2),
    ]


def test_the_report_and_the_viewer_draw_a_heat_map_of_the_chosen_metric(swept):
    _, engine, tournament_id, tables = swept
    results = tables["results"]
    per_match = results.groupby(["match_id", "other.price", "scenario.products.0.unit_cost"])["profit"].mean()
    means = per_match.groupby(level=[1, 2]).mean()
    part = sweep_part(engine, tournament_id, "profit")
    heat = part.heat_map
    assert (heat.down, heat.across, heat.columns) == (
        "other.price",
        "scenario.products.0.unit_cost",
        ["9.0", "11.0"],
    )
    assert [row for row, _ in heat.rows] == ["22.0", "28.0"]
    for row, cells in heat.rows:
        for column, cell in zip(heat.columns, cells):
            assert cell.text == f"{means[(float(row), float(column))]:,.2f}"
    red = {cell.text: int(cell.background[4:].split(",")[0]) for _, cells in heat.rows for cell in cells}
    assert min(red, key=red.__getitem__) == f"{means.max():,.2f}"  # the highest mean is the darkest
    assert max(red, key=red.__getitem__) == f"{means.min():,.2f}"

    page = build_report(engine, tournament_id, PlayedScenarios({}), [], sweep_metric="profit")
    assert page.count('over 2 sessions"') == 4 and "other.price \\ scenario.products.0.unit_cost" in page

    with TestClient(create_app(engine, None, warm=False), base_url="http://127.0.0.1") as client:
        shown = client.get(f"/tournaments/{tournament_id}?metric=profit")
        assert shown.status_code == 200 and "<option selected>profit</option>" in shown.text
        assert all(f">{cell.text}</td>" in shown.text for _, cells in heat.rows for cell in cells)
        assert client.get(f"/tournaments/{tournament_id}?metric=nonsense").status_code == 404


def test_numbers_written_as_yaml_reads_them_are_numbers_and_the_factors_order_is_the_identity(tmp_path):
    path = write(tmp_path, BASE + "sweep:\n  other.price: [1e1, 2.5e1]\n  days: [3, 4]\n")
    tournament = load_tournament(path)
    assert [cell.factors["other.price"] for cell in tournament.each_cell()] == [10.0, 10.0, 25.0, 25.0]
    swapped = load_tournament(write(tmp_path, BASE + "sweep:\n  days: [3, 4]\n  other.price: [1e1, 2.5e1]\n"))
    assert swapped.config_hash != tournament.config_hash  # other cells, other keys: not one to resume


def test_a_factor_on_one_contestant_leaves_a_yaml_alias_of_its_params_alone(tmp_path):
    base = BASE.replace(
        "{name: fixed, kind: fixed_price, params: {price: 20.0}}",
        "{name: fixed, kind: fixed_price, params: &p {price: 20.0}}",
    )
    base = base.replace(
        "{name: other, kind: fixed_price, params: {price: 25.0}}",
        "{name: other, kind: fixed_price, params: *p}",
    )
    (cell,) = load_tournament(write(tmp_path, base + "sweep:\n  fixed.price: [12.0]\n")).each_cell()
    assert {e.name: e.params for e in cell.tournament.spec.contestants if e.kind == "fixed_price"} == {
        "fixed": {"price": 12.0},
        "other": {"price": 20.0},
    }


@pytest.mark.usefixtures("ray_local")
def test_solo_matches_are_ranked_against_those_of_their_own_cell(tmp_path):
    base = BASE.replace("repetitions: 2", "repetitions: 1\nformat: solo")
    tournament = load_tournament(write(tmp_path, base + "sweep:\n  fixed_price.price: [15.0, 30.0]\n"))
    engine = engine_for(f"sqlite:///{tmp_path}/arena.db")
    tournament_id = run_tournament(tournament, engine).tournament_id
    ranked = rankings(engine, tournament_id)
    assert len(ranked) == 2  # a ranking per cell, of its three solo matches
    assert all(sorted(name for name, _ in match.ranks) == ["costly", "fixed", "other"] for match in ranked)


def test_rescore_measures_each_cell_with_its_own_scenario(swept, tmp_path):
    _, engine, tournament_id, _ = swept

    def measured():
        found = store.market_metric_values(engine, tournament_id, ["market_profit_gain", "market_price_gain"])
        return {(match_id, name): value for match_id, name, value in found}

    before = measured()
    assert len(set(before.values())) > 2  # the cells' unit costs give other benchmarks
    result = CliRunner().invoke(app, ["rescore", "--db", str(engine.url), "--tournament", str(tournament_id)])
    assert result.exit_code == 0, result.output
    assert measured() == pytest.approx(before)


def test_copies_of_a_contestant_play_as_that_many_and_a_sweep_varies_how_many(tmp_path):
    base = """
    name: copies
    scenarios: [calvano]
    days: 3
    format: free_for_all
    contestants:
      - {name: firm, kind: fixed_price, copies: 2, params: {price: 1.8}}
      - {name: rule, kind: cost_plus}
    sweep:
      firm.copies: [2, 4]
      fixed_price.price: [1.6]
    """
    tournament = load_tournament(write(tmp_path, base))
    assert [m.seats for m in schedule(tournament)] == [
        ("firm1", "firm2", "rule"),
        ("firm1", "firm2", "firm3", "firm4", "rule"),
    ]
    last = tournament.each_cell()[1].tournament.spec.contestants
    assert [(e.name, e.params, e.copies) for e in last[:4]] == [
        (f"firm{k}", {"price": 1.6}, 1) for k in (1, 2, 3, 4)
    ]
    plain = load_tournament(write(tmp_path, base.split("    sweep:")[0]))
    assert [e.name for e in plain.spec.contestants] == ["firm1", "firm2", "rule"]


@pytest.mark.usefixtures("ray_local")
def test_every_copy_a_sweep_plays_is_a_contestant_of_the_record_under_one_name(tmp_path):
    base = """
    name: copies
    scenarios: [calvano]
    days: 2
    format: free_for_all
    contestants:
      - {name: firm, kind: fixed_price, copies: 1, params: {price: 1.8}}
      - {name: rule, kind: cost_plus}
    sweep:
      firm.copies: [1, 3]
    """
    tournament = load_tournament(write(tmp_path, base))
    engine = engine_for(f"sqlite:///{tmp_path}/arena.db")
    tournament_id = run_tournament(tournament, engine).tournament_id
    assert list(store.contestant_kinds(engine, tournament_id)) == ["firm1", "rule", "firm2", "firm3"]
    board = {row.contestant: row.matches for row in leaderboard.leaderboard(engine, tournament_id)}
    assert board == {"firm1": 2, "rule": 2, "firm2": 1, "firm3": 1}
