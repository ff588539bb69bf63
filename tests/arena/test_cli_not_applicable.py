"""A gain that does not apply reads the same everywhere it is shown. A tournament mixes
price_war, whose two seats' Nash and monopoly profits are too close for a profit gain, and
calvano: `steady` plays both, `cheap` calvano alone, `pricey` price_war alone. The leaderboard
(`arena leaderboard`, --json, the report, the viewer), a match (`arena show`, --json, the
report, the viewer) and `arena export` give the same values, the same n/a and the same reason.
Matches are played in this process (no Ray)."""

from __future__ import annotations

import html
import json
import re
import urllib.request

import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.cli import app, printing
from market.scenario import load_scenario
from results import leaderboard, recording
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec
from viewer.app import InThread, open_for_reading

runner = CliRunner()
LINEUPS = {"price_war": ("steady", "pricey"), "calvano": ("steady", "cheap")}
KINDS = {
    "steady": ("fixed_price", {"markup": 0.7}),
    "pricey": ("fixed_price", {"markup": 1.0}),
    "cheap": ("undercut", {}),
}
WHY = "price_war: Nash and monopoly profits 5.4% apart, less than the 10% a gain needs (collusion: min_gap)"


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[str, int, dict[str, int]]:
    """(database URL, tournament id, match id by scenario)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('not_applicable') / 'arena.db'}"
    engine = engine_for(url)
    entries = ", ".join(f"{{name: {name}, kind: {kind}}}" for name, (kind, _) in KINDS.items())
    text = f"name: mixed\nscenarios: [price_war, calvano]\ndays: 12\ncontestants: [{entries}]\n"
    tournament = store.start_tournament(
        engine, "mixed", "mixed.yaml", text, "h", 1, [(n, k, p) for n, (k, p) in KINDS.items()], 2
    )
    ids = {}
    for index, (name, seats) in enumerate(LINEUPS.items()):
        scenario = load_scenario(name)
        contestants = [ContestantEntry(name=s, kind=KINDS[s][0], params=KINDS[s][1]) for s in seats]
        spec = MatchSpec(key=name, index=index, scenario=name, seed=1, days=12, seats=seats)
        played = play_here([Match(spec, scenario, MatchRules(seed=1), plan_contestants(contestants))])[0]
        ids[name] = recording.save_match(engine, tournament, played, scenario)
    leaderboard.finish_tournament(engine, tournament, "finished")
    engine.dispose()
    return url, tournament, ids


def _ok(args: list[str]) -> str:
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    return done.output


def _notes(page: str) -> list[str]:
    """The notes under a page's tables, as text."""
    return [html.unescape(n) for n in re.findall(r'<p class="muted table-note">(.*?)</p>', page)]


def _get(address: str) -> str:
    with urllib.request.urlopen(address, timeout=10) as answer:
        return answer.read().decode()


def test_the_leaderboard_the_report_and_the_viewer_agree_on_the_gains_and_why(stored, tmp_path, monkeypatch):
    url, tournament, ids = stored
    engine = engine_for(url, create=False)
    values = {
        (v.contestant, v.match_id): v for v in store.metrics(engine, tournament) if v.name == "profit_gain"
    }
    engine.dispose()
    calvano = {name: values[name, ids["calvano"]].value for name in ("steady", "cheap")}
    assert (
        values["steady", ids["price_war"]].value is None and values["pricey", ids["price_war"]].value is None
    )

    rows = {
        row["contestant"]: row
        for row in json.loads(_ok(["leaderboard", "--db", url, "--tournament", str(tournament), "--json"]))[
            "rows"
        ]
    }
    assert (rows["steady"]["profit_gain"], rows["steady"]["profit_gain_note"]) == (
        pytest.approx(calvano["steady"]),
        WHY,
    )  # its calvano seat alone: the price_war one is left out
    assert (rows["cheap"]["profit_gain"], rows["cheap"]["profit_gain_note"]) == (
        pytest.approx(calvano["cheap"]),
        None,
    )
    assert (rows["pricey"]["profit_gain"], rows["pricey"]["profit_gain_note"]) == (None, WHY)
    assert all(row["price_gain_note"] is None for row in rows.values())  # price_war's markups are 23% apart

    monkeypatch.setattr(printing.out, "width", 250)
    table = _ok(["leaderboard", "--db", url, "--tournament", str(tournament)])
    cells = {
        name: next(line for line in table.splitlines() if f" {name} " in line).split("│") for name in rows
    }
    header = next(line for line in table.splitlines() if "profit gain" in line).split("┃")
    column = [k for k, text in enumerate(header) if text.strip() == "profit gain"][0]
    shown = {name: row[column].strip() for name, row in cells.items()}
    assert shown == {
        "steady": f"{calvano['steady']:.2f}*",
        "cheap": f"{calvano['cheap']:.2f}",
        "pricey": "n/a",
    }
    notes = [
        f"profit gain n/a for steady, pricey: {WHY}",
        "*: the mean of the seats where it applies; the others (n/a) are left out",
    ]
    assert table.splitlines()[-2:] == notes

    out = tmp_path / "report.html"
    _ok(["report", str(tournament), "--db", url, "--out", str(out)])
    report = out.read_text()
    assert _notes(report)[:2] == notes  # the leaderboard comes first
    assert _notes(report)[2:4] == [
        f"profit gain n/a for pricey, steady: {WHY}",  # the table of means: its columns' order
        notes[1],
    ]
    for name, cell in shown.items():
        assert re.search(rf"{name}</span></td>.*?<td class=\"num\">{re.escape(cell)}</td>", report, re.S)

    serving = InThread(open_for_reading(url))
    try:
        page = _get(f"{serving.address}/tournaments/{tournament}")
        match_page = _get(f"{serving.address}/matches/{ids['price_war']}")
    finally:
        serving.stop()
    assert _notes(page) == notes
    assert _notes(match_page) == _notes_of_show(url, ids["price_war"])


def _notes_of_show(url: str, match_id: int) -> list[str]:
    """The notes `arena show` prints under its tables: the lines outside a table that say n/a."""
    lines = _ok(["show", str(match_id), "--db", url]).splitlines()
    return [line for line in lines if " n/a" in line and not line.startswith("│")]


def test_a_match_shows_exports_and_dumps_the_same_reason(stored, tmp_path, monkeypatch):
    url, tournament, ids = stored
    monkeypatch.setattr(printing.out, "width", 250)
    reason = WHY.removeprefix("price_war: ")
    market = reason.replace("profits", "profits of the seats together")
    assert _notes_of_show(url, ids["price_war"]) == [
        f"profit_gain n/a for steady, pricey: {reason}",
        f"market_profit_gain n/a: {market}",
    ]
    shown = _ok(["show", str(ids["price_war"]), "--db", url])
    row = next(line for line in shown.splitlines() if line.strip("│ ").startswith("profit_gain "))
    assert row.count("n/a") == 2
    dumped = json.loads(_ok(["show", str(ids["price_war"]), "--db", url, "--json"]))
    assert dumped["metrics"]["steady"]["profit_gain"] is None
    assert dumped["market"]["metrics"]["market_profit_gain"] is None
    assert dumped["not_applicable"] == [
        {"merchant": "steady", "name": "profit_gain", "note": reason},
        {"merchant": "pricey", "name": "profit_gain", "note": reason},
        {"merchant": None, "name": "market_profit_gain", "note": market},
    ]
    assert json.loads(_ok(["show", str(ids["calvano"]), "--db", url, "--json"]))["not_applicable"] == []

    _ok(["export", str(tournament), "--db", url, "--out", str(tmp_path)])
    metrics = pd.read_csv(tmp_path / "metrics.csv")
    gains = metrics[metrics.name == "profit_gain"].set_index(["match_id", "merchant"])
    assert gains.note.to_dict() == {
        (ids["price_war"], "steady"): reason,
        (ids["price_war"], "pricey"): reason,
        (ids["calvano"], "steady"): pytest.approx(float("nan"), nan_ok=True),
        (ids["calvano"], "cheap"): pytest.approx(float("nan"), nan_ok=True),
    }
    assert gains.value.isna().to_dict() == {
        (ids["price_war"], "steady"): True,
        (ids["price_war"], "pricey"): True,
        (ids["calvano"], "steady"): False,
        (ids["calvano"], "cheap"): False,
    }
    of_market = pd.read_csv(tmp_path / "market_metrics.csv").set_index(["match_id", "name"])
    assert of_market.note[ids["price_war"], "market_profit_gain"] == market
    assert pd.isna(of_market.value[ids["price_war"], "market_profit_gain"])
    assert pd.isna(of_market.note[ids["calvano"], "market_profit_gain"])
