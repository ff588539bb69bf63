"""`arena show` and `arena leaderboard` show the collusion measures of stored matches played in
this process (no Ray): two merchants at the calvano market's monopoly prices, two at its Nash
prices, and two in a market whose customers ignore prices, which shows none and does not break."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from arena.cli import app, printing
from market.equilibrium import equilibria
from market.scenario import load_scenario
from results import recording
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec

CALVANO = load_scenario("calvano")
DEAF = CALVANO.model_copy(
    update={"name": "deaf", "choice": CALVANO.choice.model_copy(update={"price_sensitivity": 0.0})}
)
runner = CliRunner()


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[str, int, dict[str, int]]:
    """(database URL, tournament id, match id by lineup)."""
    benchmarks = equilibria(CALVANO, 2)["good"]
    prices = {"cartel": benchmarks.monopoly.prices[0], "rival": benchmarks.nash.prices[0], "deaf": 1.5}
    lineups = {
        "cartel": (CALVANO, ["cartel1", "cartel2"]),
        "rival": (CALVANO, ["rival1", "rival2"]),
        "deaf": (DEAF, ["deaf1", "deaf2"]),
    }
    url = f"sqlite:///{tmp_path_factory.mktemp('collusion') / 'arena.db'}"
    engine = engine_for(url)
    names = [name for _, seats in lineups.values() for name in seats]
    entries = ", ".join(f"{{name: {n}, kind: fixed_price}}" for n in names)
    text = f"name: t\nscenarios: [calvano]\ncontestants: [{entries}]\n"
    tournament = store.start_tournament(
        engine, "t", "t.yaml", text, "h", 1, [(n, "fixed_price", {}) for n in names], 3
    )
    ids = {}
    for index, (lineup, (scenario, seats)) in enumerate(lineups.items()):
        entries = {
            name: ContestantEntry(name=name, kind="fixed_price", params={"price": prices[lineup]})
            for name in seats
        }
        spec = MatchSpec(key=lineup, index=index, scenario=scenario.name, seed=1, days=10, seats=tuple(seats))
        played = play_here([Match(spec, scenario, MatchRules(seed=1), plan_contestants(entries.values()))])[0]
        ids[lineup] = recording.save_match(engine, tournament, played)
    engine.dispose()
    return url, tournament, ids


def test_show_prints_the_merchants_and_the_markets_measures_and_windows(stored, monkeypatch):
    url, _, ids = stored
    monkeypatch.setattr(printing.out, "width", 200)
    shown = runner.invoke(app, ["show", str(ids["cartel"]), "--db", url])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    row = lambda name: next(line for line in lines if line.strip("│ ").startswith(name + " "))  # noqa: E731
    assert row("profit_gain").count("1.00") == 2 and row("price_gain").count("1.00") == 2
    assert "1.00" in row("market_profit_gain") and "1.00" in row("market_price_gain")
    assert "10" in row("supra_competitive_days") and "0" in row("price_war_days")
    assert "days 1–10" in row("supra-competitive windows") and "none" in row("price war windows")

    data = json.loads(runner.invoke(app, ["show", str(ids["cartel"]), "--db", url, "--json"]).stdout)
    assert list(data["market"]["metrics"]) == [
        "market_profit_gain",
        "market_price_gain",
        "supra_competitive_days",
        "price_war_days",
    ]
    assert data["market"]["metrics"]["market_profit_gain"] == pytest.approx(1.0, abs=1e-9)
    assert data["market"]["windows"] == [{"kind": "supra_competitive", "first_day": 1, "last_day": 10}]
    assert data["metrics"]["cartel1"]["profit_gain"] == pytest.approx(1.0, abs=1e-9)


def test_show_of_a_market_without_an_equilibrium_shows_no_measures(stored, monkeypatch):
    url, _, ids = stored
    monkeypatch.setattr(printing.out, "width", 200)
    shown = runner.invoke(app, ["show", str(ids["deaf"]), "--db", url])
    assert shown.exit_code == 0, shown.output
    assert "the market as a whole" not in shown.output and "windows" not in shown.output
    profit_gain = next(
        line for line in shown.output.splitlines() if line.strip("│ ").startswith("profit_gain ")
    )
    assert profit_gain.count("n/a") == 2
    assert "profit_gain n/a for deaf1, deaf2: no price benchmarks: customers ignore prices" in shown.output
    data = json.loads(runner.invoke(app, ["show", str(ids["deaf"]), "--db", url, "--json"]).stdout)
    assert data["market"] == {"metrics": {}, "windows": []}
    assert {(n["merchant"], n["name"]) for n in data["not_applicable"]} == {
        (m, name) for m in ("deaf1", "deaf2") for name in ("profit_gain", "price_gain")
    }


def test_the_leaderboard_shows_each_contestants_mean_gains(stored, monkeypatch):
    url, tournament, _ = stored
    rows = {
        row["contestant"]: row
        for row in json.loads(runner.invoke(app, ["leaderboard", "--db", url, "--json"]).stdout)["rows"]
    }
    assert rows["cartel1"]["profit_gain"] == pytest.approx(1.0, abs=1e-9) and rows["rival2"][
        "price_gain"
    ] == pytest.approx(0.0, abs=1e-9)
    assert rows["deaf1"]["profit_gain"] is None and rows["deaf1"]["price_gain"] is None
    monkeypatch.setattr(printing.out, "width", 200)
    table = runner.invoke(app, ["leaderboard", "--db", url, "--tournament", str(tournament)]).output

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip().strip("│┃").split("│" if "│" in line else "┃")]

    header = cells(next(line for line in table.splitlines() if "contestant" in line))
    cartel = dict(zip(header, cells(next(line for line in table.splitlines() if "cartel1" in line))))
    rival = dict(zip(header, cells(next(line for line in table.splitlines() if "rival1" in line))))
    assert (cartel["profit gain"], cartel["price gain"], float(rival["profit gain"])) == ("1.00", "1.00", 0.0)
