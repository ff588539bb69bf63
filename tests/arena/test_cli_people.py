"""A person in the record as everyone: matches where a `human` seat (its person a desk that
answers each page at once, with the seconds it says it waited) sits beside a language model
and a rule merchant are played in this process (no Ray) and stored; `arena leaderboard` (its
table and --json), `arena show`, the viewer's pages and the export mark the person's seat and
give its time per day in place of tokens and cost. A tournament without a person prints its
table as before: no new column, no new line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from typer.testing import CliRunner

from arena.cli import app, printing
from contestants.base import Desk, DeskAsk, RunOptions, Submitted
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.llm.providers import Provider, register_provider
from market.scenario import load_scenario
from results import recording
from results.presentation import views
from results.presentation.export import export
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec
from viewer import pages

PRICE_WAR = load_scenario("price_war")  # one product, widget


class Waiting(Provider):
    """A model that waits every day: 30 input and 5 output tokens a call."""

    name: ClassVar[str] = "waiting"

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        usage = TokenUsage(input_tokens=30, output_tokens=5)
        text = json.dumps({"operations": [], "note": "wait"})
        return Answer(text=text, usage=usage, temperature=request.temperature, seed=request.seed)


register_provider("waiting", f"{__name__}:Waiting")


class Clocked(Desk):
    """A person who submits each day's page at once with a price of 18 + day, the desk counting
    10 × day seconds of waiting for it (a count, no clock)."""

    def ask(self, asked: DeskAsk, within: float | None) -> Submitted | None:
        assert asked.question is None and asked.key.asked == "day"  # these matches ask no question
        return Submitted({"price.widget": f"{18 + asked.key.day}"}, 10.0 * asked.key.day)


ANN = ContestantEntry(name="ann", kind="human")
THINKER = ContestantEntry(name="thinker", kind="llm", params={"model": "waiting/x", "no_cache": True})
FIXED = ContestantEntry(name="fixed", kind="fixed_price")


def stored(tmp_path: Path, entries: list[ContestantEntry], days: tuple[int, ...]) -> tuple[str, list[int]]:
    """A tournament of `entries` stored at a new database: one match of them per length in `days`;
    its URL and the matches' ids."""
    url = f"sqlite:///{tmp_path}/t.db"
    engine = engine_for(url)
    tournament = store.start_tournament(
        engine, "t", "t.yaml", "", "h", 1, [(e.name, e.kind, e.params) for e in entries], len(days)
    )
    seats = tuple(e.name for e in entries)
    rules = MatchRules(seed=1, options=RunOptions(desk=Clocked()))
    matches = [
        Match(
            MatchSpec(f"k{i}", i, "price_war", i, length, seats), PRICE_WAR, rules, plan_contestants(entries)
        )
        for i, length in enumerate(days)
    ]
    ids = [recording.save_match(engine, tournament, play_here([m])[0]) for m in matches]  # days of its own
    engine.dispose()
    return url, ids


def arena(*args: str) -> str:
    shown = CliRunner().invoke(app, list(args))
    assert shown.exit_code == 0, shown.output
    return shown.stdout


def table_rows(shown: str, title: str) -> tuple[list[str], dict[str, list[str]]]:
    """The headers of the table titled `title` and its rows by their second cell (contestant or
    merchant)."""
    table = shown.split(title, 1)[1].split("┘", 1)[0]
    header = next(line for line in table.splitlines() if line.startswith("┃"))
    cells = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    return [cell.strip() for cell in header.split("┃")[1:-1]], {row[1]: row for row in cells}


@pytest.fixture(scope="module")
def with_a_person(tmp_path_factory) -> tuple[str, list[int]]:
    """Two matches of ann, thinker and fixed: of 3 days and of 2."""
    return stored(tmp_path_factory.mktemp("person"), [ANN, THINKER, FIXED], (3, 2))


def test_the_leaderboard_marks_the_person_and_gives_her_time_per_day_in_place_of_tokens_and_cost(
    with_a_person, monkeypatch
):
    url, _ = with_a_person
    monkeypatch.setattr(printing.out, "width", 250)  # one line per row
    shown = arena("leaderboard", "--db", url)
    headers, rows = table_rows(shown, "tournament")
    assert headers[:3] == ["rank", "contestant", "person"]
    assert headers[-6:] == ["s per day", "tokens", "cost $", "$ per match", "rating per $", "composite"]
    column = {header: k for k, header in enumerate(headers)}
    ann, thinker, fixed = rows["ann"], rows["thinker"], rows["fixed"]
    # her pages waited 10, 20, 30 s in the 3-day match (mean 20) and 10, 20 in the 2-day (15):
    # the mean over her seats, as the table's other means, 17.5
    assert ann[column["person"]] == "yes" and ann[column["s per day"]] == "17.5"
    assert [ann[column[h]] for h in ("tokens", "cost $", "$ per match", "rating per $")] == ["", "", "", ""]
    # the model's 5 calls (a day each) of 35 tokens; its model has no price
    assert [thinker[column[h]] for h in ("person", "s per day", "tokens", "cost $")] == [
        "",
        "",
        "175",
        "unknown",
    ]
    assert [fixed[column[h]] for h in ("person", "s per day", "tokens", "cost $")] == ["", "", "0", "0.0000"]
    assert " ".join(views.PEOPLE_LEGEND.split()) in " ".join(shown.split())  # the legend under the table

    records = {r["contestant"]: r for r in json.loads(arena("leaderboard", "--db", url, "--json"))["rows"]}
    assert {name: (r["person"], r["seconds_per_day"]) for name, r in records.items()} == {
        "ann": (True, 17.5),
        "thinker": (False, None),
        "fixed": (False, None),
    }
    spent = {name: (r["tokens"], r["cost"], r["cost_per_match"]) for name, r in records.items()}
    assert spent == {"ann": (None, None, None), "thinker": (175, None, None), "fixed": (0, 0.0, 0.0)}
    assert all(r["matches"] == 2 for r in records.values())  # rated in the same pool


def test_show_marks_the_persons_seat_with_its_seconds_per_day(with_a_person, monkeypatch):
    url, (three_days, _) = with_a_person
    monkeypatch.setattr(printing.out, "width", 250)
    shown = arena("show", str(three_days), "--db", url)
    headers, rows = table_rows(shown, f"match {three_days}: k0")
    column = {header: k for k, header in enumerate(headers)}
    assert headers[:3] == ["rank", "merchant", "person"] and headers[-1] == "s per day"
    assert (rows["ann"][column["person"]], rows["ann"][column["s per day"]]) == (
        "yes",
        "20.0",
    )  # (10+20+30)/3
    assert all(rows[m][column["person"]] == rows[m][column["s per day"]] == "" for m in ("thinker", "fixed"))
    whole = json.loads(arena("show", str(three_days), "--db", url, "--json"))
    assert {r["merchant"]: r["person"] for r in whole["results"]} == {
        "ann": True,
        "thinker": False,
        "fixed": False,
    }
    assert whole["metrics"]["ann"]["seconds_per_day"] == 20.0


def test_the_viewer_and_the_export_mark_the_person(with_a_person, tmp_path):
    url, (three_days, _) = with_a_person
    engine = engine_for(url, create=False)
    try:
        page = pages.tournament(engine, pages.Leaderboards(engine), 1, 1)
        board = page["leaderboard"]
        at = [h.text for h in board.headers].index("person")
        assert {row[1]: row[at] for row in board.sections[0]} == {"ann": "yes", "thinker": "", "fixed": ""}
        assert views.PEOPLE_LEGEND in board.notes
        results = pages.match(engine, three_days, 1)["part"].results
        assert "person" in [h.text for h in results.headers] and views.PEOPLE_LEGEND in results.notes
        export(engine, 1, tmp_path / "out", "csv")
    finally:
        engine.dispose()
    exported = pd.read_csv(tmp_path / "out" / "results.csv")
    assert sorted(exported.loc[exported["person"], "merchant"]) == ["ann", "ann"]  # her seat in both matches
    metrics = pd.read_csv(tmp_path / "out" / "metrics.csv")
    times = metrics.loc[metrics["name"] == "seconds_per_day"]
    assert sorted(times["value"]) == [15.0, 20.0] and set(times["merchant"]) == {"ann"}


def test_a_tournament_without_a_person_prints_its_table_as_before(tmp_path, monkeypatch):
    url, (match_id,) = stored(tmp_path, [THINKER, FIXED], (2,))
    monkeypatch.setattr(printing.out, "width", 250)
    shown = arena("leaderboard", "--db", url)
    headers, _ = table_rows(shown, "tournament")
    assert headers == [
        "rank",
        "contestant",
        "rating",
        "95% interval",
        "vs next",
        "elo",
        "matches",
        "win rate",
        "mean profit",
        "worst–best profit",
        "faults",
        "validity",
        "profit gain",
        "price gain",
        "tokens",
        "cost $",
        "$ per match",
        "rating per $",
        "composite",
    ]  # as the table was before people sat (the same file's table printed by the code before them)
    assert "person" not in shown and "s per day" not in shown
    match_headers, _ = table_rows(arena("show", str(match_id), "--db", url), f"match {match_id}: k0")
    assert match_headers == [
        "rank",
        "merchant",
        "net worth",
        "profit",
        "cash",
        "share",
        "bankrupt",
        "faults",
        "rejected",
    ]
