"""`arena` on a real PostgreSQL server (the session's `postgres` fixture), as a team uses it:
whole tournaments played by `arena run` processes, two at once into one database, one killed
with SIGKILL and resumed, each storing what the same tournament stores in SQLite; a user who
may only read; and the password, which appears nowhere."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import psycopg
import pytest
from arena_process import BackgroundRun, kill_with_a_match_in_flight
from postgres_server import ADMIN, PASSWORD
from sqlalchemy.engine import make_url
from sqlmodel import Session, select
from test_cli_errors import one_error_line
from typer.testing import CliRunner

from arena.cli import app
from arena.cli.exits import EXIT_DATABASE
from results import leaderboard
from results.storage import store
from results.storage.db import engine_for
from results.storage.schema import ContestantRow, TournamentRow
from tournaments.load import load_tournament
from tournaments.run import run_tournament

runner = CliRunner()

RULES = """\
name: {name}
seed: {seed}
scenarios: [price_war]
seeds: [1, 2]
days: 10
format: {format}
contestants:
  - {{name: fixed, kind: fixed_price}}
  - {{name: cost_plus, kind: cost_plus}}
  - {{name: undercut, kind: undercut}}
"""

# Matches with `slow` last 0.4 s each, one at a time: long enough to be killed mid-run. It plays
# in an actor of its own, so its matches play in a match runner, whose days the progress lines
# count as they are played: a match in play shows. One match at a time keeps each run to one
# match runner (a process); what these tests check, a run stopped between matches with one in
# play, does not need two.
SLOW = """\
name: {name}
seed: 9
scenarios: [price_war]
seeds: [1, 2]
days: 4
max_concurrent_matches: 1
contestants:
  - {{name: fixed, kind: fixed_price}}
  - {{name: cost_plus, kind: cost_plus}}
  - {{name: slow, kind: tests.doubles:Latency, params: {{latency_s: 0.1}}{isolate}}}
"""

RUN_SECONDS = 300  # a run here takes 10-20 s, most of it Ray starting


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("tournaments")
    texts = {
        "pairs": RULES.format(name="pairs", seed=3, format="round_robin"),
        "market": RULES.format(name="market", seed=4, format="free_for_all"),
        "slow": SLOW.format(name="slow", isolate=""),
        # the same field with `slow` in its matches' process: each match a Ray task of the run,
        # stored as it ends, one at a time; no actor of its own for the tests of a server that
        # goes away, whose point is the run's writes, not where its matches play
        "unhosted": SLOW.format(name="unhosted", isolate=", isolate: false"),
    }
    for name, text in texts.items():
        (folder / f"{name}.yaml").write_text(text)
    return {name: folder / f"{name}.yaml" for name in texts}


@pytest.fixture(scope="module")
def on_sqlite(files, tmp_path_factory, ray_local) -> dict[str, str]:
    """The reference: each tournament played in this process into a SQLite database of its
    own (where it is tournament 1); the URLs."""
    folder = tmp_path_factory.mktemp("sqlite")
    urls = {}
    for name, path in files.items():
        urls[name] = f"sqlite:///{folder / name}.db"
        engine = engine_for(urls[name])
        try:
            run_tournament(load_tournament(path), engine)
        finally:
            engine.dispose()
    return urls


def stored(engine, name: str) -> dict:
    """Everything the database holds of the tournament `name`, without what differs between
    two runs of it: row ids, moments, seconds measured."""
    (tournament,) = [t for t in store.list_tournaments(engine) if t.name == name]
    matches = store.list_matches(engine, tournament.id)
    keys = {m.id: m.key for m in matches}
    details = {m.key: store.match_detail(engine, m.id) for m in matches}
    with Session(engine) as session:
        rows = session.exec(
            select(ContestantRow)
            .where(ContestantRow.tournament_id == tournament.id)
            .order_by(ContestantRow.name)
        )
        contestants = [(c.name, c.kind, json.loads(c.params)) for c in rows]
    return {
        "tournament": tournament.model_dump(exclude={"id", "created_at", "finished_at"}),
        "contestants": contestants,
        "matches": [
            m.model_dump(exclude={"id", "tournament_id", "finished_at", "wall_seconds"}) for m in matches
        ],
        "results": {key: d.results for key, d in details.items()},
        "days": {key: list(d.days) for key, d in details.items()},
        "faults": {key: d.faults for key, d in details.items()},
        "market": {key: d.market for key, d in details.items()},
        # by match key (match ids follow the order matches were written), in stored order within a match
        "metrics": sorted(
            (v._replace(match_id=keys[v.match_id]) for v in store.metrics(engine, tournament.id)),
            key=lambda v: v.match_id,
        ),
        "leaderboard": leaderboard.leaderboard(engine, tournament.id),
    }


def stored_at(url: str, name: str) -> dict:
    engine = engine_for(url, create=False)
    try:
        return stored(engine, name)
    finally:
        engine.dispose()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def cli_json(*args: str):
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def without_ids(matches: list[dict]) -> list[dict]:
    return [
        {k: v for k, v in m.items() if k not in ("id", "tournament_id", "finished_at", "wall_seconds")}
        for m in matches
    ]


def tournament_id(url: str, name: str) -> int:
    with psycopg.connect(plain(url)) as connection:
        return connection.execute("SELECT id FROM tournament WHERE name = %s", (name,)).fetchone()[0]


def plain(url: str) -> str:
    """The libpq form of a SQLAlchemy URL, for psycopg itself."""
    return url.replace("postgresql+psycopg://", "postgresql://")


def matches_and_days(url: str) -> tuple[int, int]:
    """The matches stored at `url`, and their market days."""
    with psycopg.connect(plain(url)) as connection:
        try:
            return connection.execute('SELECT count(*), coalesce(sum(days), 0) FROM "match"').fetchone()
        except psycopg.errors.UndefinedTable:  # the run has not created the tables yet
            return 0, 0


def count(url: str, table: str) -> int:
    with psycopg.connect(plain(url)) as connection:
        try:
            return connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        except psycopg.errors.UndefinedTable:  # the run has not created the tables yet
            return 0


# ---- whole tournaments ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_at_once(postgres, files, tmp_path_factory, request, cluster_env) -> tuple[str, dict[str, str]]:
    """Two tournaments started together by two `arena run` processes on one Ray cluster into
    one empty database, named by $ARENA_DB with the password in $PGPASSWORD (as a team is
    told to): the URL and each run's output. The SQLite references are played meanwhile."""
    url = postgres.fresh_database()
    cwd = tmp_path_factory.mktemp("two-at-once")
    team = {"ARENA_DB": url.replace(f":{PASSWORD}@", "@"), "PGPASSWORD": PASSWORD}
    with contextlib.ExitStack() as stack:
        runs = {
            name: stack.enter_context(
                BackgroundRun(
                    "run",
                    str(files[name]),
                    cwd=cwd,
                    env={**cluster_env, **team},
                    log=cwd / f"{name}.log",
                )
            )
            for name in ("pairs", "market")
        }
        request.getfixturevalue("on_sqlite")
        for run in runs.values():
            assert run.process.wait(RUN_SECONDS) == 0, run.output()[-3000:]
        return url, {name: run.output() for name, run in runs.items()}


def test_two_tournaments_at_once_into_one_database_each_store_what_sqlite_stores(two_at_once, on_sqlite):
    url, outputs = two_at_once
    for name, output in outputs.items():
        reference = stored_at(on_sqlite[name], name)
        assert reference["metrics"] and all(reference["days"].values()) and reference["leaderboard"]
        assert re.search(rf"tournament \d+ \({name}, ", output)  # its table was printed
        assert stored_at(url, name) == reference, name
    assert count(url, "tournament") == 2
    assert count(url, "match") == 6 + 2


def test_the_commands_print_for_postgres_what_they_print_for_sqlite(two_at_once, on_sqlite):
    url, _ = two_at_once
    on_postgres = tournament_id(url, "pairs")
    for command in (["leaderboard", "--tournament"], ["matches", "--tournament"]):
        from_postgres = cli_json(*command, on_postgres, "--db", url)
        from_sqlite = cli_json(*command, 1, "--db", on_sqlite["pairs"])
        if command[0] == "matches":
            from_postgres, from_sqlite = without_ids(from_postgres), without_ids(from_sqlite)
        else:  # the tables, not the ids the two databases gave the tournament
            from_postgres, from_sqlite = from_postgres["rows"], from_sqlite["rows"]
        assert from_postgres == from_sqlite and from_postgres, command


def test_show_export_and_report_read_postgres_as_they_read_sqlite(two_at_once, on_sqlite, tmp_path):
    url, _ = two_at_once
    databases = {"postgres": (url, tournament_id(url, "pairs")), "sqlite": (on_sqlite["pairs"], 1)}
    shown, exported = {}, {}
    for name, (db, tournament) in databases.items():
        ids = {m["key"]: m["id"] for m in cli_json("matches", "--tournament", tournament, "--db", db)}
        shown[name] = {key: cli_json("show", match, "--db", db) for key, match in ids.items()}
        for detail in shown[name].values():
            (detail["match"],) = without_ids([detail["match"]])
        result = invoke("export", tournament, "--out", tmp_path / name, "--db", db)
        assert result.exit_code == 0, result.stderr
        exported[name] = {
            f.name: by_match_key(pd.read_csv(f), ids) for f in sorted((tmp_path / name).glob("*.csv"))
        }
    assert shown["postgres"] == shown["sqlite"] and len(shown["postgres"]) == 6
    assert exported["postgres"].keys() == exported["sqlite"].keys() and "days.csv" in exported["postgres"]
    for file, table in exported["postgres"].items():
        pd.testing.assert_frame_equal(table, exported["sqlite"][file], obj=file)
    report = invoke("report", databases["postgres"][1], "--out", tmp_path / "report.html", "--db", url)
    assert report.exit_code == 0, report.stderr
    assert "pairs" in (tmp_path / "report.html").read_text()


def by_match_key(table: pd.DataFrame, ids: dict[str, int]) -> pd.DataFrame:
    """An exported table with its matches named by key rather than id, in key order (rows
    of a match as exported), without the seconds measured."""
    if "match_id" in table:
        keys = {match: key for key, match in ids.items()}
        table = (
            table.assign(match_id=table["match_id"].map(keys))
            .sort_values("match_id", kind="stable")
            .reset_index(drop=True)
        )
    return table.drop(columns=["wall_seconds"], errors="ignore")


def test_kill_9_then_resume_on_postgres_gives_the_uninterrupted_record(
    postgres, files, on_sqlite, tmp_path, ray_local, cluster_env
):
    """Killed on a cluster, the run leaves its Ray processes to the cluster (which ends them
    with their job): test_crashes kills runs of a local Ray, whose processes must all end."""
    url, path = postgres.fresh_database(), files["slow"]
    reference = stored_at(on_sqlite["slow"], "slow")
    planned = len(reference["matches"])
    assert planned == 6
    with BackgroundRun(
        "run", str(path), "--db", url, cwd=tmp_path, env=cluster_env, log=tmp_path / "slow.log"
    ) as run:
        seen = kill_with_a_match_in_flight(run, lambda: matches_and_days(url))
        assert 1 <= seen.stored < planned and seen.in_play, (
            seen
        )  # a match stored, one in play, as seen just before the kill
    done_before = count(url, "match")
    assert done_before == seen.stored and count(url, "tournament") == 1

    # what `arena run FILE --resume` calls, here in this process: an `arena` process costs
    # seconds of Ray starting, and the crash tests run the command itself
    engine = engine_for(url)
    try:
        summary = run_tournament(load_tournament(path), engine, resume=True)
    finally:
        engine.dispose()
    assert summary.resumed and summary.skipped == done_before and summary.played == planned - done_before
    with psycopg.connect(plain(url)) as connection:
        keys = [key for (key,) in connection.execute('SELECT key FROM "match"')]
    assert len(keys) == len(set(keys)) == planned
    assert count(url, "tournament") == 1
    assert stored_at(url, "slow") == reference


# ---- a server that goes away ------------------------------------------------------------


def drop_the_runs_connections(postgres, url: str, allow_more: bool) -> Callable[[], tuple[int, int]]:
    """Start a thread that waits for the run at `url` to store a match, then closes its
    connections from the server's side (as a restart does), refusing new ones unless
    `allow_more`; returns a function that waits for the thread and gives how many connections
    it closed and how many matches were stored just before."""
    database = make_url(url).database
    closed: list[tuple[int, int]] = []

    def drop() -> None:
        deadline = time.monotonic() + RUN_SECONDS
        while count(url, "match") < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        stored = count(url, "match")
        with postgres.admin() as connection:
            if not allow_more:
                connection.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
            terminated = (
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s) AS t"
            )
            closed.append((connection.execute(terminated, [database]).fetchone()[0], stored))

    thread = threading.Thread(target=drop)
    thread.start()

    def done() -> tuple[int, int]:
        thread.join()
        return closed[0]

    return done


def test_a_run_whose_connections_the_server_closes_goes_on(postgres, files, on_sqlite, ray_local):
    url = postgres.fresh_database()
    closed = drop_the_runs_connections(postgres, url, allow_more=True)
    result = invoke("run", files["unhosted"], "--db", url)
    connections, stored = closed()
    assert connections >= 1 and stored < 6  # closed while the run still had matches to write
    assert result.exit_code == 0, result.stderr
    assert stored_at(url, "unhosted") == stored_at(on_sqlite["unhosted"], "unhosted")


def test_a_server_that_stays_away_ends_the_run_in_one_line_and_a_resume_finishes_it(
    postgres, files, on_sqlite, ray_local, monkeypatch
):
    """Once the server has refused the write for RECONNECT_WAITS_S (here shortened), the run
    ends with one line (the password masked) and exit status 5, with nothing half-written;
    with the server back, --resume plays the rest."""
    monkeypatch.setattr("results.storage.db.RECONNECT_WAITS_S", (0.05, 0.05))
    url = postgres.fresh_database()
    database = make_url(url).database
    closed = drop_the_runs_connections(postgres, url, allow_more=False)
    result = invoke("run", files["unhosted"], "--db", url)
    assert closed()[0] >= 1
    output = result.stdout + result.stderr
    assert result.exit_code == EXIT_DATABASE and "Traceback" not in output and PASSWORD not in output, output
    masked = f"postgresql+psycopg://{ADMIN}:***@127.0.0.1:{postgres.port}/{database}"
    line = result.stderr.strip().splitlines()[-1]
    assert (
        line.startswith(f"error: database {masked} failed: ")
        and f'database "{database}" is not currently accepting connections' in line
    )
    assert line.endswith(
        f"once it is back, `uv run arena run {files['unhosted']} --resume --db {masked}` plays the rest"
    )
    with postgres.admin() as connection:
        connection.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    stored = count(url, "match")
    assert (
        1 <= stored < 6 and count(url, "match_result") == 2 * stored
    )  # whole matches only: two merchants each
    resumed = invoke("run", files["unhosted"], "--db", url, "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert stored_at(url, "unhosted") == stored_at(on_sqlite["unhosted"], "unhosted")


# ---- who may write ----------------------------------------------------------------------


READER, READER_PASSWORD = "reader", "reader-Secret-4410"


@pytest.fixture(scope="module")
def reader(postgres) -> None:
    """A role that may log in and read, and nothing more."""
    with postgres.admin() as connection:
        connection.execute(f"CREATE ROLE {READER} LOGIN PASSWORD '{READER_PASSWORD}'")


def as_reader(postgres, url: str) -> str:
    """The URL of the same database for the reader, which may CONNECT there and SELECT from
    every table the superuser creates (docs/clusters.md's recipe: granted before the tables
    exist)."""
    database = make_url(url).database
    with postgres.admin(database) as connection:
        connection.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {READER}')
        connection.execute(
            f"ALTER DEFAULT PRIVILEGES FOR ROLE {ADMIN} IN SCHEMA public GRANT SELECT ON TABLES TO {READER}"
        )
    return postgres.url(database, READER, READER_PASSWORD)


def test_a_user_who_may_only_read_cannot_run_but_can_read(postgres, reader, files, ray_local, tmp_path):
    url = postgres.fresh_database()
    readers_url = as_reader(postgres, url)
    engine = engine_for(url)
    run_tournament(load_tournament(files["pairs"]), engine)
    engine.dispose()
    before = {table: count(url, table) for table in ("tournament", "contestant", "match")}

    result = invoke("run", files["pairs"], "--db", readers_url)
    line = one_error_line(result)
    assert f"cannot write to database postgresql+psycopg://{READER}:***@127.0.0.1:{postgres.port}/" in line
    assert "permission denied for table" in line
    assert READER_PASSWORD not in result.stdout + result.stderr
    assert {table: count(url, table) for table in before} == before  # nothing half-written
    line = one_error_line(invoke("rescore", "--db", readers_url))
    assert "cannot write to database" in line and "permission denied for table" in line

    assert cli_json("leaderboard", "--db", readers_url) == cli_json("leaderboard", "--db", url)
    matches = cli_json("matches", "--db", readers_url)
    assert matches == cli_json("matches", "--db", url) and len(matches) == 6
    assert cli_json("show", matches[0]["id"], "--db", readers_url) == cli_json(
        "show", matches[0]["id"], "--db", url
    )
    for command in (
        ["export", "1", "--out", tmp_path / "export"],
        ["report", "1", "--out", tmp_path / "report.html"],
    ):
        result = invoke(*command, "--db", readers_url)
        assert result.exit_code == 0, (command, result.stderr)


def test_a_user_who_may_not_create_tables_is_told_so(postgres, reader, files):
    readers_url = as_reader(postgres, postgres.fresh_database())
    line = one_error_line(invoke("run", files["pairs"], "--db", readers_url))
    assert (
        f"cannot write to database postgresql+psycopg://{READER}:***@" in line
        and "permission denied for schema public" in line
    )


# ---- the password -----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["leaderboard"], ["matches", "--json"], ["run", "pairs"]])
def test_a_wrong_password_is_one_line_that_does_not_print_it(postgres, files, command):
    wrong = "not-the-Password-5521"
    url = postgres.url("postgres", password=wrong)
    args = [files["pairs"] if part == "pairs" else part for part in command]
    result = invoke(*args, "--db", url)
    line = one_error_line(result)
    assert "password authentication failed" in line and ":***@127.0.0.1" in line
    assert wrong not in result.stdout + result.stderr


def test_the_password_is_in_no_output_and_no_stored_row(two_at_once):
    url, outputs = two_at_once
    assert all(PASSWORD not in output for output in outputs.values())
    with psycopg.connect(plain(url)) as connection:
        tables = [
            name
            for (name,) in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        assert TournamentRow.__tablename__ in tables
        for table in tables:
            rows = connection.execute(f'SELECT t::text FROM "{table}" AS t').fetchall()
            assert not any(PASSWORD in text for (text,) in rows), table
