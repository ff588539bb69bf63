"""`arena leaderboard` and `arena rate` through the real Typer app, on a database filled with
hand-made results (no tournament is played) and on CSV files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ranked_matches import finished
from typer.testing import CliRunner

from arena.cli import app
from results.recording import save_match
from results.storage.db import engine_for
from results.storage.store import start_tournament

runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Tournament 1: a beats b three times on `calm`, b beats a once on `storm`; tournament 2: b beats a."""
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = engine_for(url)
    first = start_tournament(
        engine, "one", "one.yaml", "name: one\n", "h1", 1, [("a", "rule", {}), ("b", "rule", {})], 4
    )
    for index in range(3):
        save_match(engine, first, finished(f"k{index}", index, "calm", {"a": 1, "b": 2}))
    save_match(engine, first, finished("k3", 3, "storm", {"a": 2, "b": 1}))
    second = start_tournament(
        engine, "two", "two.yaml", "name: two\n", "h2", 1, [("a", "rule", {}), ("b", "rule", {})], 1
    )
    save_match(engine, second, finished("k0", 0, "calm", {"a": 2, "b": 1}))
    engine.dispose()
    return url


def board(*args: str) -> dict[str, dict]:
    shown = json.loads(invoke("leaderboard", *args, "--json").stdout)
    return {row["contestant"]: row for row in shown["rows"]}


def test_leaderboard_json_has_the_rating_columns_and_the_old_contract(db):
    rows = board("--db", db, "--all")
    assert set(rows) == {"a", "b"}
    for key in (
        "contestant",
        "rating",
        "low",
        "high",
        "rank",
        "elo",
        "matches",
        "wins",
        "win_rate",
        "mean_profit",
        "validity",
        "memory_error",
        "tokens",
        "cost",
        "composite",
    ):
        assert key in rows["a"], key
    assert (rows["a"]["matches"], rows["a"]["wins"], rows["b"]["wins"]) == (5, 3, 2)
    assert rows["a"]["rating"] > rows["b"]["rating"]
    assert rows["a"]["rating"] + rows["b"]["rating"] == pytest.approx(2000.0)


def test_leaderboard_filters_by_tournament_and_scenario(db):
    assert (
        board("--db", db, "--tournament", "1")["a"]["matches"],
        board("--db", db, "--tournament", "2")["a"]["matches"],
    ) == (4, 1)
    calm = board("--db", db, "--tournament", "1", "--scenario", "calm")
    assert (calm["a"]["matches"], calm["a"]["wins"], calm["a"]["win_rate"]) == (3, 3, 1.0)
    storm = board("--db", db, "--all", "--scenario", "storm")
    assert storm["b"]["rating"] > storm["a"]["rating"]


def test_leaderboard_anchor_and_weights(db, tmp_path):
    assert board("--db", db, "--all", "--anchor", "b")["b"]["rating"] == 1000.0
    weights = tmp_path / "w.yaml"
    weights.write_text("win_rate: 1\nvalidity: 0\nmemory: 0\n")
    assert board("--db", db, "--all", "--weights", weights)["a"]["composite"] == pytest.approx(3 / 5)


@pytest.fixture
def wide(monkeypatch):
    """A terminal wide enough for every column's header in one piece."""
    from arena.cli.printing import out

    monkeypatch.setattr(out, "width", 200)


def test_leaderboard_table(db, wide):
    result = invoke("leaderboard", "--db", db, "--scenario", "calm")
    assert "scenario calm" in result.stdout
    for header in ("rank", "rating", "95% interval", "elo", "win rate", "composite"):
        assert header in result.stdout
    assert "tokens" not in result.stdout  # no model was used


def write_csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "results.csv"
    path.write_text(text)
    return path


def test_rate_a_csv_of_ranks_and_the_same_as_scores(tmp_path, wide):
    ranks = write_csv(tmp_path, "match,contestant,rank\n1,x,1\n1,y,2\n1,z,2\n2,y,1\n2,z,2\n3,x,1\n3,z,2\n")
    rated = json.loads(invoke("rate", ranks, "--json").stdout)
    assert [row["contestant"] for row in rated] == ["x", "y", "z"]
    assert {row["contestant"]: (row["matches"], row["wins"]) for row in rated} == {
        "x": (2, 2),
        "y": (2, 1),
        "z": (3, 0),
    }
    scores = write_csv(
        tmp_path, "contestant,score,match,note\nx,9.5,1,\ny,3,1,\nz,3,1,\ny,7,2,\nz,-1,2,\nx,1e3,3,\nz,0,3,\n"
    )
    assert json.loads(invoke("rate", scores, "--json").stdout) == rated
    table = invoke("rate", scores, "--anchor", "z").stdout
    assert "95% interval" in table and "composite" not in table and "1000" in table


def _stored_file_db(tmp_path: Path, *config_texts: str) -> str:
    """A tournament stored with each of `config_texts` as its file, in each of which a beats b
    three times of four."""
    url = f"sqlite:///{tmp_path / 'scored.db'}"
    engine = engine_for(url)
    for number, config_text in enumerate(config_texts):
        tournament = start_tournament(
            engine, "one", "one.yaml", config_text, f"h{number}", 1, [("a", "rule", {}), ("b", "rule", {})], 4
        )
        for index, ranks in enumerate([{"a": 1, "b": 2}] * 3 + [{"a": 2, "b": 1}]):
            save_match(engine, tournament, finished(f"k{index}", index, "calm", ranks))
    engine.dispose()
    return url


FILE = "name: one\nscenarios: [calm]\ncontestants: [{name: a, kind: rule}, {name: b, kind: rule}]\n"


VALIDITY_ALONE = "scoring: {win_rate: 0, validity: 1, memory: 0}\n"


def test_a_tournaments_composite_uses_the_scoring_of_its_stored_file(tmp_path):
    url = _stored_file_db(tmp_path, FILE + VALIDITY_ALONE, FILE + VALIDITY_ALONE)
    # validity alone counts, and no validity is stored: no composite, for one tournament or both
    assert board("--db", url, "--tournament", "1")["a"]["composite"] is None
    assert board("--db", url, "--all")["a"]["composite"] is None


def test_tournaments_pooled_whose_files_weigh_differently_take_the_defaults_and_say_so(tmp_path):
    url = _stored_file_db(tmp_path, FILE + VALIDITY_ALONE, FILE)
    result = invoke("leaderboard", "--db", url, "--all", "--json")
    # the defaults weigh the one part there is, the win rate: 6 wins of 8
    rows = {row["contestant"]: row for row in json.loads(result.stdout)["rows"]}
    assert (rows["a"]["matches"], rows["a"]["composite"]) == (8, pytest.approx(3 / 4))
    (warning,) = result.stderr.splitlines()
    assert warning == (
        "warning: the pooled tournaments' files set their scoring differently: the defaults are used; "
        "--weights FILE sets the weights"
    )
    # a --weights file chooses the weights: nothing left to warn of
    weights = tmp_path / "w.yaml"
    weights.write_text("win_rate: 0\nvalidity: 0\nmemory: 1\n")
    chosen = invoke("leaderboard", "--db", url, "--all", "--weights", weights, "--json")
    assert chosen.stderr == "" and json.loads(chosen.stdout)["rows"][0]["composite"] is None


def test_a_stored_file_that_no_longer_validates_leaves_the_default_weights_and_a_warning(tmp_path):
    url = _stored_file_db(tmp_path, FILE + "scoring: {win_rate: 0, validity: 1, memory: 0}\nformat: swiss\n")
    result = invoke("leaderboard", "--db", url, "--tournament", "1", "--json")
    composites = {row["contestant"]: row["composite"] for row in json.loads(result.stdout)["rows"]}
    assert composites["a"] == pytest.approx(3 / 4)
    (warning,) = result.stderr.splitlines()
    assert warning.startswith("warning: tournament 1: the file stored with it no longer validates")
    assert "format" in warning
