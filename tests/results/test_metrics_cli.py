"""`arena show` prints a match's metrics; `arena rescore` recomputes them from the stored
records, with the scenarios read again from the tournament's file. A real match of rule
baselines is played in this process (no Ray)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from older_arena import as_an_older_arena_left_it
from sqlmodel import Session, delete
from typer.testing import CliRunner

from arena.cli import app
from market.scenario import load_scenario
from results.recording import save_match
from results.scoring.metrics import METRICS, compute
from results.settings import CollusionSettings
from results.storage.db import engine_for
from results.storage.schema import MetricRow
from results.storage.store import metrics, start_tournament
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import schedule

TOURNAMENT = """\
name: t
seed: 5
days: 8
scenarios: [price_war]
contestants:
  - {name: fixed, kind: fixed_price}
  - {name: cheap, kind: undercut}
"""

runner = CliRunner()
NEEDS_SCENARIO = {"goal_completion", "profit_gain", "price_gain"}


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A database holding one played match of t.yaml, saved without its scenario (as a
    runner that does not pass it would); returns (db url, tournament id, match id, the played match)."""
    yield from _stored(tmp_path, monkeypatch, TOURNAMENT)


def _stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str):
    (tmp_path / "t.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ARENA_DB", raising=False)
    tournament = load_tournament("t.yaml")
    spec = schedule(tournament)[0]
    entries = {c.name: c for c in tournament.spec.contestants}
    played = play_here(
        [
            Match(
                spec,
                tournament.scenarios[spec.scenario],
                MatchRules(seed=5),
                plan_contestants(entries.values()),
            )
        ]
    )[0]
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = engine_for(url)
    contestants = [(c.name, c.kind, c.params) for c in tournament.spec.contestants]
    tournament_id = start_tournament(
        engine, "t", "t.yaml", tournament.text, tournament.config_hash, 5, contestants, 1
    )
    # stored as if scored without its scenario, so rescore has something to fill in
    match_id = save_match(engine, tournament_id, played.model_copy(update={"metrics": None}))
    yield url, tournament_id, match_id, played
    engine.dispose()


def _notes(url: str, tournament_id: int) -> dict[tuple[str, str], str | None]:
    engine = engine_for(url, create=False)
    try:
        return {(v.merchant, v.name): v.note for v in metrics(engine, tournament_id)}
    finally:
        engine.dispose()


def _values(url: str, tournament_id: int) -> dict[tuple[str, str], float | None]:
    engine = engine_for(url, create=False)
    try:
        return {(v.merchant, v.name): v.value for v in metrics(engine, tournament_id)}
    finally:
        engine.dispose()


def test_show_prints_every_metric_of_every_merchant(stored):
    url, _, match_id, _ = stored
    result = runner.invoke(app, ["show", str(match_id), "--db", url])
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("metrics") :]
    for name in METRICS:
        assert name in table
    assert "fixed" in table and "cheap" in table

    shown = json.loads(runner.invoke(app, ["show", str(match_id), "--db", url, "--json"]).output)
    assert set(shown["metrics"]) == {"fixed", "cheap"}
    assert list(shown["metrics"]["fixed"]) == list(METRICS)
    assert shown["metrics"]["fixed"]["validity_rate"] == 1.0  # baselines submit valid operations only


def test_rescore_fills_in_what_needs_the_scenario(stored):
    url, tournament_id, _, played = stored
    before = _values(url, tournament_id)
    assert before["fixed", "goal_completion"] is None  # saved without the scenario

    result = runner.invoke(app, ["rescore", "--db", url])
    assert result.exit_code == 0, result.output
    assert "Rescored 1 matches of 1 tournaments" in result.output
    after = _values(url, tournament_id)
    assert after["fixed", "goal_completion"] is not None  # price_war has a target net worth
    assert (
        after["fixed", "price_gain"] is not None and before["fixed", "price_gain"] is None
    )  # and an equilibrium (its two seats' Nash and monopoly profits too close for a profit_gain)
    assert _notes(url, tournament_id)["fixed", "profit_gain"].startswith(
        "Nash and monopoly profits 5.4% apart"
    )
    scenario_free = lambda values: {k: v for k, v in values.items() if k[1] not in NEEDS_SCENARIO}  # noqa: E731
    assert scenario_free(after) == scenario_free(before)
    # what the match computed where it was played is what its stored records give again
    assert after == {
        (merchant, name): value
        for merchant, values in played.metrics.items()
        for name, value in values.items()
    }


def test_rescore_restores_deleted_metrics(stored):
    """As for a match stored before metrics existed."""
    url, tournament_id, match_id, _ = stored
    engine = engine_for(url, create=False)
    with Session(engine) as session:
        session.exec(delete(MetricRow))
        session.commit()
    engine.dispose()
    assert (
        "No metrics stored for this match: `uv run arena rescore` computes them."
        in runner.invoke(app, ["show", str(match_id), "--db", url]).output
    )
    assert runner.invoke(app, ["rescore", "--db", url, "--tournament", str(tournament_id)]).exit_code == 0
    assert len(_values(url, tournament_id)) == 2 * len(METRICS)


def test_rescore_measures_with_the_collusion_settings_of_the_stored_file(tmp_path, monkeypatch):
    """The file's settings: the whole match measured, and price_war's two seats (Nash and
    monopoly profits 5.4% apart) given a profit_gain by a min_gap under that."""
    whole_match = CollusionSettings(window=1.0, min_gap=0.05)
    for url, tournament_id, _, played in _stored(
        tmp_path, monkeypatch, TOURNAMENT + "collusion: {window: 1.0, min_gap: 0.05}\n"
    ):
        assert runner.invoke(app, ["rescore", "--db", url]).exit_code == 0
        scenario = load_scenario("price_war")
        measured = compute(played.days_played, played.recalls, played.faults, scenario, whole_match).merchants
        by_default = compute(played.days_played, played.recalls, played.faults, scenario).merchants
        after = _values(url, tournament_id)
        assert after["fixed", "profit_gain"] == measured["fixed"]["profit_gain"] is not None
        assert by_default["fixed"]["profit_gain"] is None
        assert after["fixed", "price_gain"] == measured["fixed"]["price_gain"]
        assert measured["fixed"]["price_gain"] != by_default["fixed"]["price_gain"]


def test_rescore_warns_when_the_tournament_file_changed(stored):
    url, tournament_id, _, _ = stored
    Path("t.yaml").write_text(TOURNAMENT.replace("days: 8", "days: 9"))
    result = runner.invoke(app, ["rescore", "--db", url])
    assert result.exit_code == 0
    assert "warning: tournament 1: t.yaml: it changed since the tournament was played" in result.output
    assert _values(url, tournament_id)["fixed", "goal_completion"] is None


def test_rescore_of_an_unknown_tournament_is_one_line(stored):
    url, _, _, _ = stored
    result = runner.invoke(app, ["rescore", "--db", url, "--tournament", "42"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: no tournament with id 42"


def test_an_older_arenas_database_still_reads_and_rescores(stored):
    """A database written before the results counted refusals as too long and while the recall
    questions' table was named `probe`: the leaderboard, a match and a rescore read it as they
    did, its merchants having no refusals."""
    url, _, match_id, _ = stored
    leaderboard = runner.invoke(app, ["leaderboard", "--db", url, "--json"])
    assert leaderboard.exit_code == 0, leaderboard.output
    written = runner.invoke(app, ["show", str(match_id), "--db", url, "--json"]).output
    as_an_older_arena_left_it(url)

    assert runner.invoke(app, ["leaderboard", "--db", url, "--json"]).output == leaderboard.output
    shown = runner.invoke(app, ["show", str(match_id), "--db", url, "--json"])
    assert shown.exit_code == 0, shown.output
    assert shown.output == written
    assert [r["length_refusals"] for r in json.loads(shown.output)["results"]] == [0, 0]
    rescored = runner.invoke(app, ["rescore", "--db", url])
    assert rescored.exit_code == 0 and "Rescored 1 matches of 1 tournaments" in rescored.output
