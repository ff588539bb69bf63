"""Finding a tournament: `arena tournaments` lists the stored ones, a plain `arena leaderboard`
(and `arena matches`) reads the latest and says which, and pooling is asked for (`--all`, or
--tournament given more than once) and said in the title. On a file of rule merchants played
twice with `arena run`, as a newcomer who runs the Quickstart twice does, and on a record made
by hand for the statuses a run leaves."""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from ranked_matches import finished
from typer.testing import CliRunner

from arena.cli import app, printing
from results.leaderboard import finish_tournament
from results.recording import save_match
from results.storage.db import engine_for
from results.storage.schema import MatchRow
from results.storage.store import start_tournament
from tournaments.load import load_tournament
from tournaments.schedule import schedule

runner = CliRunner()


def invoke(*args: object):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def shown(*args: object) -> dict:
    return json.loads(invoke(*args, "--json").stdout)


@pytest.fixture(scope="module")
def twice(tmp_path_factory, ray_local) -> tuple[Path, str]:
    """A file of three rule merchants, one seed and five days (three matches), played twice
    into one database: (the file, the database's URL)."""
    folder = tmp_path_factory.mktemp("twice")
    config = folder / "tiny.yaml"
    config.write_text(
        textwrap.dedent(
            """
            name: tiny
            seed: 3
            scenarios: [price_war]
            seeds: [1]
            days: 5
            contestants:
              - {name: fixed, kind: fixed_price, params: {markup: 0.5}}
              - {name: cost_plus, kind: cost_plus}
              - {name: undercut, kind: undercut}
            """
        )
    )
    url = f"sqlite:///{folder / 'arena.db'}"
    for _ in range(2):
        invoke("run", config, "--db", url)
    return config, url


def seats_of_one_run(config: Path) -> Counter[str]:
    """How many matches each contestant plays in one run of the file: from its schedule."""
    return Counter(seat for match in schedule(load_tournament(config)) for seat in match.seats)


def test_the_list_names_both_runs_with_their_file_status_matches_and_leaderboard_command(twice):
    config, url = twice
    planned = len(schedule(load_tournament(config)))
    listed = shown("tournaments", "--db", url)
    assert [(t["id"], t["name"], t["file"], t["status"]) for t in listed] == [
        (1, "tiny", str(config), "finished"),
        (2, "tiny", str(config), "finished"),
    ]
    assert [(t["matches"], t["planned_matches"]) for t in listed] == [(planned, planned)] * 2 == [(3, 3)] * 2
    assert listed[0]["started"] <= listed[0]["ended"] <= listed[1]["started"] <= listed[1]["ended"]
    for t in listed:  # the command it gives is one to type, and reads that tournament
        command = shlex.split(t["leaderboard"])
        assert command[:3] == ["uv", "run", "arena"]
        assert shown(*command[3:])["tournaments"][0]["id"] == t["id"]
        assert command[-2:] == ["--db", url]


def test_the_list_as_a_table(twice, monkeypatch):
    config, url = twice
    monkeypatch.setattr(printing.out, "width", 500)  # a line a row: two long temporary paths
    lines = invoke("tournaments", "--db", url).stdout.splitlines()
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if line.startswith("│")]
    assert [row[:5] for row in rows] == [
        ["1", "tiny", str(config), "finished", "3 of 3"],
        ["2", "tiny", str(config), "finished", "3 of 3"],
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", cell) for row in rows for cell in row[5:7])
    assert [row[7] for row in rows] == [
        f"uv run arena leaderboard --tournament {n} --db {url}" for n in (1, 2)
    ]


def test_a_plain_leaderboard_reads_the_latest_tournament_and_says_which(twice, monkeypatch):
    config, url = twice
    plain = shown("leaderboard", "--db", url)
    assert plain["selection"] == "latest"
    assert plain["tournaments"] == [{"id": 2, "name": "tiny", "file": str(config)}]
    assert {row["contestant"]: row["matches"] for row in plain["rows"]} == seats_of_one_run(config)
    assert plain == shown("leaderboard", "--db", url, "--tournament", 2) | {"selection": "latest"}
    monkeypatch.setattr(printing.out, "width", 500)  # a line a row: two long temporary paths
    printed = invoke("leaderboard", "--db", url).stdout.splitlines()
    assert printed[0].strip() == f"tournament 2 (tiny, {config})"
    assert printed[-1] == (
        f"The latest of 2 tournaments: `uv run arena tournaments --db {url}` lists them, "
        "--tournament ID chooses one, --all pools them."
    )


def test_all_pools_every_tournament_and_says_how_many(twice, monkeypatch):
    config, url = twice
    pooled = shown("leaderboard", "--db", url, "--all")
    assert pooled["selection"] == "all" and [t["id"] for t in pooled["tournaments"]] == [1, 2]
    twice_as_many = {name: 2 * n for name, n in seats_of_one_run(config).items()}
    assert {row["contestant"]: row["matches"] for row in pooled["rows"]} == twice_as_many
    monkeypatch.setattr(printing.out, "width", 500)  # a line a row: two long temporary paths
    printed = invoke("leaderboard", "--db", url, "--all").stdout.splitlines()
    assert printed[0].strip() == "pooled over all 2 tournaments"
    assert "The latest" not in printed[-1]


def test_naming_two_tournaments_pools_them(twice, monkeypatch):
    _, url = twice
    named = shown("leaderboard", "--db", url, "--tournament", 2, "--tournament", 1)
    assert named["selection"] == "named" and [t["id"] for t in named["tournaments"]] == [2, 1]
    assert named["rows"] == shown("leaderboard", "--db", url, "--all")["rows"]
    monkeypatch.setattr(printing.out, "width", 500)  # a line a row: two long temporary paths
    printed = invoke(
        "leaderboard", "--db", url, "--tournament", 1, "--tournament", 2, "--scenario", "price_war"
    )
    assert printed.stdout.splitlines()[0].strip() == "pooled over 2 tournaments (1, 2), scenario price_war"


def test_a_sweeps_table_reads_one_tournament(twice):
    _, url = twice
    by_cell = shown("leaderboard", "--db", url, "--metric", "profit")
    assert by_cell["tournaments"][0]["id"] == 2 and by_cell["cells"][0]["matches"] == 3
    refused = runner.invoke(app, ["leaderboard", "--db", url, "--all", "--metric", "profit"])
    assert refused.exit_code == 2
    assert refused.stderr.strip() == (
        "error: --by and --metric read one tournament's matches: give one --tournament ID"
    )


def test_matches_lists_the_latest_tournaments_unless_asked_for_more(twice):
    _, url = twice
    tournaments = [
        [m["tournament_id"] for m in json.loads(invoke("matches", "--db", url, *more, "--json").stdout)]
        for more in ([], ["--tournament", "1"], ["--all"])
    ]
    assert tournaments == [[2, 2, 2], [1, 1, 1], [1, 1, 1, 2, 2, 2]]


def test_a_stored_match_s_fields_come_in_the_order_its_row_declares(twice):
    """What SQLAlchemy loads comes in no fixed order; the JSON of a stored match does."""
    _, url = twice
    listed = json.loads(invoke("matches", "--db", url, "--json").stdout)
    shown = json.loads(invoke("show", str(listed[0]["id"]), "--db", url, "--json").stdout)["match"]
    assert [list(match) for match in listed] == [list(MatchRow.model_fields)] * len(listed)
    assert list(shown) == list(MatchRow.model_fields)


@pytest.fixture
def statuses(tmp_path) -> str:
    """Tournament 1 finished with its 2 matches, 2 stopped after 1 of 3, 3 running with none
    of its 4 stored yet."""
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine = engine_for(url)
    text = "name: {}\nscenarios: [calm]\ncontestants: [{{name: a, kind: rule}}, {{name: b, kind: rule}}]\n"
    for number, (name, planned, played, status) in enumerate(
        [("done", 2, 2, "finished"), ("halted", 3, 1, "stopped"), ("going", 4, 0, None)], start=1
    ):
        tournament = start_tournament(
            engine,
            name,
            f"{name}.yaml",
            text.format(name),
            f"h{number}",
            1,
            [("a", "rule", {}), ("b", "rule", {})],
            planned,
        )
        for index in range(played):
            save_match(engine, tournament, finished(f"k{index}", index, "calm", {"a": 1, "b": 2}))
        if status is not None:
            finish_tournament(engine, tournament, status)
    engine.dispose()
    return url


def test_the_list_tells_a_finished_a_stopped_and_a_running_tournament_apart(statuses):
    listed = shown("tournaments", "--db", statuses)
    assert [(t["name"], t["status"], t["matches"], t["planned_matches"]) for t in listed] == [
        ("done", "finished", 2, 2),
        ("halted", "stopped", 1, 3),
        ("going", "running", 0, 4),
    ]
    assert [t["ended"] is None for t in listed] == [False, False, True]
    assert [t["leaderboard"] for t in listed] == [
        f"uv run arena leaderboard --tournament {n} --db {statuses}" for n in (1, 2, 3)
    ]
    # the latest is the one started last, running or not: its contestants, not yet rated
    latest = shown("leaderboard", "--db", statuses)
    assert latest["tournaments"][0]["name"] == "going"
    assert [(row["contestant"], row["matches"], row["rating"]) for row in latest["rows"]] == [
        ("a", 0, None),
        ("b", 0, None),
    ]


@pytest.mark.parametrize("command", [["tournaments"], ["leaderboard"], ["leaderboard", "--all"], ["matches"]])
def test_an_empty_database_is_one_line_and_exit_status_2(tmp_path, command):
    url = f"sqlite:///{tmp_path / 'arena.db'}"
    engine_for(url).dispose()
    result = runner.invoke(app, [*command, "--db", url])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        f"error: no tournament is stored in {url}: `uv run arena run tournaments/round_robin.yaml` plays one"
    ]
