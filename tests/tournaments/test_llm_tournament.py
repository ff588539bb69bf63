"""Tournaments of language-model merchants through `arena run`, against a loopback server
that misbehaves on purpose: passing troubles are faults, recorded and bounded; a model that
refuses every call stops the run with one line; the key never leaks; and a second run
replays from the response cache without a single request."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from api_keys import MOODY_KEY
from click.testing import Result
from typer.testing import CliRunner

from arena.cli import app
from results.storage import store
from results.storage.db import engine_for

pytestmark = pytest.mark.slow  # each test plays tournaments on Ray

DECISION = {"operations": [{"op": "set_price", "product": "widget", "price": 18.0}], "note": "steady"}


class MoodyServer:
    """An OpenAI-compatible chat endpoint on 127.0.0.1 whose behaviour is the first part of
    the path: /ok, /flaky (429 every other request), /500, /hang, /nonjson, /echo (a 401 that
    repeats the Authorization header). Counts requests per behaviour. The moods in `fixed`
    answer as /ok does (a problem fixed on the server's side)."""

    def __init__(self, completion: dict):
        self.completion = completion
        self.requests: Counter[str] = Counter()
        self.fixed: set[str] = set()
        self.address = ""

    def respond(self, path: str, headers: Any, body: bytes) -> tuple[int, Any, dict[str, str]] | None:
        mood = path.strip("/").split("/")[0]
        self.requests[mood] += 1
        if mood in self.fixed:
            return 200, self.completion, {}
        if mood == "hang":
            return None
        if mood == "ok" or (mood == "flaky" and self.requests[mood] % 2 == 0):
            return 200, self.completion, {}
        if mood == "flaky":
            return 429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}
        if mood == "nonjson":
            return 200, "<html>gateway</html>", {}
        if mood == "echo":
            return 401, {"error": {"message": f"bad key {headers.get('Authorization')}"}}, {}
        return 500, {"error": {"message": "boom"}}, {}

    def url(self, mood: str) -> str:
        return f"{self.address}/{mood}/v1"


@pytest.fixture
def server(loopback, chat_completion) -> MoodyServer:
    moody = MoodyServer(chat_completion(DECISION))
    moody.address = loopback(moody.respond)
    return moody


def tournament(
    folder: Path, server: MoodyServer, moods: list[str], cache: bool, inline: tuple[str, ...] = ()
) -> Path:
    """A tournament of one LLM merchant per mood, in its own actor, and per `inline` mood one
    more (named MOOD-inline) that runs inside the match loop. A request waits 1 s for an
    answer, a /hang one 0.25 s: it never gets one, and its every attempt would otherwise hold
    the day a second."""
    seats = [(mood, mood, "") for mood in moods] + [
        (f"{mood}-inline", mood, "\n    isolate: false") for mood in inline
    ]
    entries = "\n".join(
        f"""  - name: "{name}"
    kind: llm{isolate}
    params: {{model: openai/moody, base_url: "{server.url(mood)}", api_key_env: ARENA_MOODY_KEY,
             memory: stateless, max_retries: 2, timeout: {0.25 if mood == "hang" else 1},
             backoff_initial: 0, backoff_max: 0,
             no_cache: {str(not cache).lower()}}}"""
        for name, mood, isolate in seats
    )
    path = folder / "llm.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: moody
            seed: 3
            format: free_for_all
            scenarios: [price_war]
            days: 3
            recall_every: 0
            decision_timeout_s: 20
            contestants:
              - {name: fixed, kind: fixed_price}
            """
        )
        + entries
        + "\n"
    )
    return path


def read(*args: str) -> Result:
    """An `arena` command that only reads the database, run in this process (a process of its
    own would import arena and the rating fit again for a few lines of output)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def rows(db: Path, query: str) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(query).fetchall()


def test_passing_troubles_are_faults_not_crashes_and_the_key_never_leaks(tmp_path, server, arena_here):
    """The merchants that fail (500, hang) in actors of their own, those that get answers (ok,
    flaky) inside the match loop: hosted and inline merchants in one match."""
    config = tournament(tmp_path, server, ["500", "hang"], cache=False, inline=("ok", "flaky"))
    db = tmp_path / "t.db"
    result = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{db}")
    shown = read("show", "1", "--db", f"sqlite:///{db}")
    assert result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for output in (result, shown):
        assert MOODY_KEY not in output.stdout + output.stderr
    for file in tmp_path.glob("t.db*"):
        assert MOODY_KEY.encode() not in file.read_bytes()

    faults = Counter((merchant, kind) for merchant, kind in rows(db, "select merchant, kind from fault"))
    assert faults == {("500", "error"): 3, ("hang", "error"): 3}
    engine = engine_for(f"sqlite:///{db}", create=False)
    prices = {
        r.merchant: r.prices["widget"]
        for m in store.list_matches(engine)
        for r in store.match_detail(engine, m.id).days
        if r.day == 3
    }
    assert prices["ok-inline"] == prices["flaky-inline"] == 18.0  # their decisions were applied
    # retries: 429, 500 and timeouts up to max_retries=2 more attempts
    assert server.requests["500"] == server.requests["hang"] == 3 * 3
    assert server.requests["flaky"] == 3 * 2 and server.requests["ok"] == 3
    calls = dict(rows(db, "select merchant, sum(attempts) from model_call group by merchant"))
    assert calls == {"ok-inline": 3, "flaky-inline": 6}  # failed calls leave a fault, not a call row


REFUSALS = {"echo": "HTTP 401: bad key Bearer ***", "nonjson": "malformed response"}


def test_a_model_that_refuses_every_call_stops_the_run_with_one_line(tmp_path, server, arena_here):
    """A 401 (echoing the key, as a careless server might) or a body that is no completion,
    three times in a row: the run stops at once with one line naming the contestant, the
    model and the server's message, masked; nothing of the failing match is stored as played,
    and once the server is fixed --resume plays on. Both refuse from the first day: the run
    stops on the one that fails a third time first, its resume on the other, and the resume
    after that plays the match to the end (beside a fixed price: no healthy model). Both play
    inside the match loop, their match a Ray task: no contestant host or match runner to
    start in each of the three runs (a hosted model that refuses every call stops its run in
    tests/tournaments/test_hosted_models.py)."""
    config = tournament(tmp_path, server, [], cache=False, inline=tuple(REFUSALS))
    db = tmp_path / "t.db"
    stopped_by = []
    for _ in REFUSALS:
        asked = server.requests.copy()
        result = arena_here(
            tmp_path, "run", str(config), "--db", f"sqlite:///{db}", *(["--resume"] if stopped_by else [])
        )
        assert result.exit_code == 4, result.stderr
        [line] = result.stderr.strip().splitlines()[-1:]
        mood = next(m for m in REFUSALS if line.startswith(f"error: contestant {m}-inline (openai/moody) "))
        assert line.startswith(f"error: contestant {mood}-inline (openai/moody) failed 3 calls in a row: ")
        assert REFUSALS[mood] in line and "--resume" in line
        assert "Traceback" not in result.stderr and result.stdout.strip() == ""  # no table
        assert server.requests[mood] - asked[mood] == 3  # none of them retried
        assert MOODY_KEY not in result.stdout + result.stderr
        for file in tmp_path.glob("t.db*"):
            assert MOODY_KEY.encode() not in file.read_bytes()
        assert rows(db, "select count(*) from match") == [(0,)]
        assert rows(db, "select status from tournament") == [("stopped",)]
        server.fixed.add(mood)
        stopped_by.append(mood)
    assert sorted(stopped_by) == sorted(REFUSALS)

    resumed = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{db}", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert rows(db, "select count(*), sum(kind = 'error') from fault") == [(0, None)]
    assert rows(db, "select count(*) from match") == [(1,)]


def test_a_second_run_replays_from_the_cache_and_no_cache_asks_again_leaving_the_cache_as_it_was(
    tmp_path, server, arena_here
):
    """Three runs of one tournament, its merchants hosted (ok) and inline (ok and flaky): the
    first asks the model and fills the response cache; the second asks nothing and ends with
    the same table; the third, with --no-cache, asks every request again and writes nothing
    to the cache."""
    config = tournament(tmp_path, server, ["ok"], cache=True, inline=("ok", "flaky"))
    first = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{tmp_path}/a.db")
    assert first.exit_code == 0, first.stderr
    # three merchants, three days; flaky's every other request is a 429, retried
    assert server.requests == {"ok": 6, "flaky": 6}
    cache = {path: path.stat().st_mtime_ns for path in (tmp_path / ".arena-cache").rglob("*.json")}
    assert len(cache) == 9

    second = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{tmp_path}/b.db")
    assert second.exit_code == 0, second.stderr
    assert server.requests == {"ok": 6, "flaky": 6}  # not one request more
    assert rows(tmp_path / "b.db", "select count(*), sum(cached), sum(attempts) from model_call") == [
        (9, 9, 0)
    ]
    tables = [
        json.loads(read("leaderboard", "--db", f"sqlite:///{tmp_path}/{name}.db", "--json").stdout)
        for name in "ab"
    ]
    assert tables[0] == tables[1]

    third = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{tmp_path}/c.db", "--no-cache")
    assert third.exit_code == 0, third.stderr
    assert server.requests == {"ok": 12, "flaky": 12}  # hosted and inline merchants all asked again
    assert rows(tmp_path / "c.db", "select count(*), sum(cached), sum(attempts) from model_call") == [
        (9, 0, 3 + 3 + 3 * 2)
    ]
    assert {
        path: path.stat().st_mtime_ns for path in (tmp_path / ".arena-cache").rglob("*.json")
    } == cache  # not written

    shown = read("show", "1", "--db", f"sqlite:///{tmp_path}/c.db", "--json")
    calls = json.loads(shown.stdout)["calls"]
    assert {(c["prompt_version"], c["temperature"]) for c in calls} == {
        ("merchant-v2", None)
    }  # none set: none sent
    assert len({(c["merchant"], c["seed"]) for c in calls}) == 3  # one seed per merchant, recorded
    table = read("show", "1", "--db", f"sqlite:///{tmp_path}/c.db").stdout
    assert "prompt" in table and "merchant-v2" in table and "openai/moody" in table
