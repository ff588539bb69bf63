"""Tournaments of hosted models against loopback stand-ins for today's OpenAI and Anthropic APIs
(tests/fakes), on real Ray: current models play without faults and are priced; a budget stops
a run and a resume finishes it as if it had not stopped; a model that does not exist stops
the run; a slow server never makes a merchant's turns overlap; a storm of 429s is waited out;
the endpoint limits hold across processes; two processes replaying one cache pay once."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from api_keys import ANTHROPIC_KEY, OPENAI_KEY
from click.testing import Result
from fakes.anthropic_api import FakeAnthropic
from fakes.openai_api import FakeOpenAI
from fakes.server import overlapping
from typer.testing import CliRunner

from arena.cli import app
from contestants.llm.merchant import TURN_CALLS
from results import leaderboard
from results.storage import store
from results.storage.db import engine_for
from tournaments import plan
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_local")]

ARENA = str(Path(sys.executable).parent / "arena")


@pytest.fixture
def openai_api():
    with FakeOpenAI(api_key=OPENAI_KEY) as fake:
        yield fake


@pytest.fixture
def anthropic_api():
    with FakeAnthropic(api_key=ANTHROPIC_KEY) as fake:
        yield fake


def write(folder: Path, body: str, **values: str) -> Path:
    path = folder / "t.yaml"
    text = textwrap.dedent(body).replace("@CACHE@", str(folder / "cache"))
    for name, value in {"@ISOLATE@": "", **values}.items():
        text = text.replace(name, value)
    path.write_text(text)
    return path


def no_secret_in(folder: Path, *outputs: Result) -> bool:
    texts = [o.stdout + o.stderr for o in outputs] + [
        p.read_bytes().decode(errors="replace") for p in folder.rglob("*") if p.is_file()
    ]
    return not any(key in text for key in (OPENAI_KEY, ANTHROPIC_KEY) for text in texts)


def test_a_reasoning_model_and_a_current_claude_play_with_no_fault_and_are_priced(
    tmp_path, openai_api, anthropic_api, arena_here
):
    """astra plays in an actor of its own (as a language model does by default), sonnet inside
    the match loop (isolate: false): each way its calls are made, priced and recorded. One
    match at a time: one match runner."""
    config = write(
        tmp_path,
        """
        name: current
        seed: 5
        format: free_for_all
        scenarios: [price_war]
        seeds: [1, 2]
        days: 3
        recall_every: 3
        off_path: {days: [2], price: 9.5}
        max_concurrent_matches: 1
        contestants:
          - name: astra
            kind: llm
            params: {model: openai/gpt-6-astra, base_url: "@OPENAI@", api_key_env: ARENA_OPENAI_KEY,
                     reasoning_effort: high,
                     memory: notes, cache_dir: "@CACHE@"}
          - name: sonnet
            kind: llm
            isolate: false
            params: {model: anthropic/claude-sonnet-5-5, base_url: "@ANTHROPIC@",
                     api_key_env: ARENA_ANTHROPIC_KEY, memory: window,
                     reflect: true, cache_dir: "@CACHE@"}
          - {name: fixed, kind: fixed_price}
        """,
        **{"@OPENAI@": openai_api.base_url},
        **{"@ANTHROPIC@": anthropic_api.base_url},
    )
    db = f"sqlite:///{tmp_path}/t.db"
    result = arena_here(tmp_path, "run", str(config), "--db", db)
    assert result.exit_code == 0, result.stderr
    engine = engine_for(db, create=False)
    details = [store.match_detail(engine, m.id) for m in store.list_matches(engine)]
    assert len(details) == 2 and not [f for d in details for f in d.faults]
    calls = [c for d in details for c in d.calls]
    by = Counter((c.contestant, c.purpose) for c in calls)
    assert by == {
        ("astra", "decide"): 6,
        ("astra", "recall"): 2,
        ("astra", "off_path"): 2,
        ("sonnet", "decide"): 6,
        ("sonnet", "reflect"): 4,
        ("sonnet", "recall"): 2,
        ("sonnet", "off_path"): 2,
    }
    # the hosted merchant is asked too, as the inline one is, each about its next rival in seat
    # order (seats turn by seed)
    asked = [(a.merchant, a.day, a.price) for d in details for a in d.off_path]
    assert sorted(asked) == [("astra", 2, 9.5)] * 2 + [("sonnet", 2, 9.5)] * 2
    assert all(c.cost is not None and c.cost > 0 for c in calls)
    assert all(
        c.reasoning_tokens > 0 for c in calls if c.contestant == "astra"
    )  # reported by the API, recorded
    assert {c.served_model for c in calls} == {"gpt-6-astra", "claude-sonnet-5-5"}
    assert [c for c in openai_api.calls + anthropic_api.calls if c.status != 200] == []
    rows = {row.contestant: row for row in leaderboard.leaderboard(engine)}
    assert rows["astra"].cost > 0 and rows["sonnet"].cost > 0
    assert no_secret_in(tmp_path, result)


BUDGET = """
    name: budgeted
    seed: 3
    scenarios: [price_war]
    seeds: [1, 2, 3]
    days: 3
    recall_every: 0
    max_concurrent_matches: 2
    @BUDGET@
    prices: {openai/gpt-4.1-mini: {input: 1000, output: 1000}}
    contestants:
      - name: mini
        kind: llm@ISOLATE@
        params: {model: openai/gpt-4.1-mini, base_url: "@OPENAI@", api_key_env: ARENA_OPENAI_KEY,
                 memory: stateless, cache_dir: "@CACHE@"}
      - {name: fixed, kind: fixed_price}
      - {name: undercut, kind: undercut}
    """
INLINE = "\n    isolate: false"  # mini in BUDGET inside the match loop, not in an actor of its own


def test_a_budget_stops_the_run_and_a_resume_with_more_ends_as_if_uninterrupted(
    tmp_path, openai_api, arena_here
):
    """At 1,000 USD per million tokens a call costs about a dollar: a budget of 7 USD stops the
    six matches of `mini` (18 calls, three a match) mid-run. Its first two matches, played at
    once, cost about 6 USD: the first to end is stored, the second too if it ends before the
    budget is reached (a match that ends after that is not stored, see tournaments.match);
    none is stored after the stop. The run exits 3 and says so; the recorded spend reaches
    the budget and passes it by at most the calls in flight (one per match in play); the
    resumed run, with a budget of 100, plays exactly the matches left, pays only for the
    calls not made (those of the stopped matches are replayed from the cache), and ends
    with the table and the spend of an uninterrupted run. mini plays in an actor of its own in
    the stopped and resumed runs, inside the match loop in the uninterrupted one (isolate:
    false, its matches Ray tasks, no host or match runner to start): the same table either
    way."""
    stopped_dir, whole_dir = tmp_path / "stopped", tmp_path / "whole"
    stopped_dir.mkdir(), whole_dir.mkdir()
    config = write(
        stopped_dir, BUDGET, **{"@OPENAI@": openai_api.base_url}, **{"@BUDGET@": "budget: {cost_usd: 7}"}
    )
    db = f"sqlite:///{stopped_dir}/t.db"
    first = arena_here(stopped_dir, "run", str(config), "--db", db)
    assert first.exit_code == 3, first.stderr
    assert "Stopped: cost budget reached" in first.stderr and "--resume" in first.stderr
    engine = engine_for(db, create=False)
    [tournament] = store.list_tournaments(engine)
    assert tournament.status == "stopped"
    spent = store.spent(engine, tournament.id)[1]
    costs = [c.cost for c in store_calls(engine)]
    assert 7 <= spent <= 7 + 2 * max(costs)
    played = {m.key: store.match_detail(engine, m.id) for m in store.list_matches(engine)}
    with_mini = [key for key, detail in played.items() if "mini" in {r.contestant for r in detail.results}]
    assert 1 <= len(with_mini) <= 2 and len(played) == len(
        with_mini
    )  # stopped mid-run: the first of mini's matches stored, no more
    assert all(len(played[key].calls) == 3 for key in with_mini)  # each stored one whole: a paid call a day
    paid_before = len(openai_api.calls)

    config.write_text(config.read_text().replace("budget: {cost_usd: 7}", "budget: {cost_usd: 100}"))
    resumed = arena_here(stopped_dir, "run", str(config), "--db", db, "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert f"Resumed tournament {tournament.id}: {len(played)} matches were already done." in resumed.stdout
    assert len(openai_api.calls) == 18  # every request made once, across the two runs
    assert len(store.list_tournaments(engine)) == 1
    keys = [m.key for m in store.list_matches(engine)]
    assert len(keys) == len(set(keys)) == 9 and set(played) <= set(keys)

    whole = arena_here(
        whole_dir,
        "run",
        str(
            write(
                whole_dir,
                BUDGET,
                **{"@OPENAI@": openai_api.base_url},
                **{"@BUDGET@": "", "@ISOLATE@": INLINE},
            )
        ),
        "--db",
        f"sqlite:///{whole_dir}/t.db",
    )
    assert whole.exit_code == 0, whole.stderr
    assert len(openai_api.calls) == 18 + 18 and paid_before < 18
    tables = [
        json.loads(
            CliRunner().invoke(app, ["leaderboard", "--db", f"sqlite:///{folder}/t.db", "--json"]).stdout
        )["rows"]
        for folder in (stopped_dir, whole_dir)
    ]
    assert tables[0] and tables[0] == tables[1]
    whole_spent = store.spent(engine_for(f"sqlite:///{whole_dir}/t.db", create=False), 1)
    resumed_spent = store.spent(engine, tournament.id)
    assert resumed_spent[0] == whole_spent[0] and resumed_spent[1] == pytest.approx(
        whole_spent[1], rel=1e-12
    )  # each call paid once
    assert no_secret_in(tmp_path, first, resumed, whole)


def store_calls(engine):
    from sqlmodel import Session, select

    from results.storage.schema import ModelCallRow

    with Session(engine) as session:
        return list(session.exec(select(ModelCallRow)))


def test_a_model_that_does_not_exist_stops_the_run_at_once(tmp_path, openai_api, arena_here):
    """One-day matches, two at a time: the first two failures end their matches, which are
    held back, and the third stops the run; none of them is stored as played."""
    config = write(
        tmp_path,
        """
        name: typo
        seed: 1
        scenarios: [price_war]
        seeds: [1, 2, 3, 4, 5, 6]
        days: 1
        max_concurrent_matches: 2
        contestants:
          - name: typo
            kind: llm
            params: {model: openai/gpt-6-astar, base_url: "@OPENAI@", api_key_env: ARENA_OPENAI_KEY,
                     cache_dir: "@CACHE@"}
          - {name: fixed, kind: fixed_price}
        """,
        **{"@OPENAI@": openai_api.base_url},
    )
    result = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{tmp_path}/t.db")
    assert result.exit_code == 4
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith(
        "error: contestant typo (openai/gpt-6-astar) failed 3 calls in a row: HTTP 404: "
        "The model `gpt-6-astar` does not exist"
    )
    assert result.stdout.strip() == ""  # no table of faults
    assert 3 <= len(openai_api.calls) <= 3 + 1  # the three, and at most a call in flight in the other match
    engine = engine_for(f"sqlite:///{tmp_path}/t.db", create=False)
    assert (
        store.list_matches(engine) == [] and len(store_calls(engine)) == 0
    )  # failed calls leave no call row
    assert no_secret_in(tmp_path, result)


def test_a_slow_server_never_makes_a_merchants_turns_overlap(tmp_path):
    """Answers take 0.8 s and a turn may take 0.6 s: both days of the merchant are timeout
    faults, and yet the server never has two of its calls at once: a turn that missed its
    deadline keeps its merchant until its call ends, and the next turn waits (0.2 s, leaving
    it time to ask). One match (one match runner): the overlap looked for is within a
    merchant."""
    with FakeOpenAI(api_key=None) as fake:
        fake.delay = 0.8
        config = write(
            tmp_path,
            """
            name: slow
            seed: 2
            scenarios: [price_war]
            seeds: [1]
            days: 2
            recall_every: 0
            decision_timeout_s: 0.6
            contestants:
              - name: slowpoke
                kind: llm
                params: {model: openai/gpt-4.1-mini, base_url: "@OPENAI@", api_key_env: null,
                         no_cache: true, memory: stateless}
              - {name: fixed, kind: fixed_price}
            """,
            **{"@OPENAI@": fake.base_url},
        )
        engine = engine_for(f"sqlite:///{tmp_path}/t.db")
        run_tournament(load_tournament(config), engine)
        faults = [f for m in store.list_matches(engine) for f in store.match_detail(engine, m.id).faults]
        assert len(faults) == 2 and {f.kind for f in faults} == {"timeout"}
        assert len(fake.calls) >= 2 and overlapping(fake.calls) == []


def test_a_storm_of_429s_is_waited_out(tmp_path, monkeypatch):
    """Three 429s asking to wait 1 s each: 3 s, more than the turn a hosted contestant gets
    when neither the tournament nor its kind says (DEFAULT_DEADLINE_S, set to 2 s here so
    that the waits need not be long to pass it). With the turn's deadline derived from the
    provider's own total timeout (120 s a call, three calls a turn: a hundred times the waits,
    so that a loaded machine cannot make this a timeout), the match waits them out and plays
    with no fault."""
    monkeypatch.setattr(plan, "DEFAULT_DEADLINE_S", 2.0)
    with FakeOpenAI(api_key=None) as fake:
        fake.fail(429, times=3, retry_after=1)
        config = write(
            tmp_path,
            """
            name: storm
            seed: 2
            scenarios: [price_war]
            seeds: [1]
            days: 3
            recall_every: 0
            contestants:
              - name: patient
                kind: llm
                params: {model: openai/gpt-4.1-mini, base_url: "@OPENAI@", api_key_env: null,
                         no_cache: true, memory: stateless,
                         max_retries: 10, backoff_initial: 0.05, total_timeout: 120}
              - {name: fixed, kind: fixed_price}
            """,
            **{"@OPENAI@": fake.base_url},
        )
        tournament = load_tournament(config)
        assert plan.plan_tournament(tournament.spec)["patient"].deadline == TURN_CALLS * 120 > 3
        engine = engine_for(f"sqlite:///{tmp_path}/t.db")
        run_tournament(tournament, engine)
        [match] = store.list_matches(engine)
        assert store.match_detail(engine, match.id).faults == []
        assert Counter(call.status for call in fake.calls) == {429: 3, 200: 3}


def test_an_endpoints_concurrency_limit_holds_across_processes(tmp_path):
    """Two contestants, each in its own actor process, at one endpoint with
    max_concurrent_calls 1: the server never has two of their calls at once (each answer
    takes 0.1 s, and both ask at the start of every day). One match (one match runner): the
    calls that could overlap are the two hosts'."""
    with FakeOpenAI(api_key=None) as fake:
        fake.delay = 0.1
        entry = """
              - name: NAME
                kind: llm
                params: {model: openai/gpt-4.1-mini, base_url: "@OPENAI@", api_key_env: null,
                         no_cache: true, memory: stateless,
                         max_concurrent_calls: 1}"""
        config = write(
            tmp_path,
            """
            name: one_at_a_time
            seed: 2
            format: free_for_all
            scenarios: [price_war]
            seeds: [1]
            days: 2
            recall_every: 0
            contestants:"""
            + entry.replace("NAME", "a")
            + entry.replace("NAME", "b")
            + "\n",
            **{"@OPENAI@": fake.base_url},
        )
        engine = engine_for(f"sqlite:///{tmp_path}/t.db")
        run_tournament(load_tournament(config), engine)
        assert len(fake.calls) == 4 and overlapping(fake.calls) == []  # two merchants, two days


def test_two_processes_replaying_one_cache_make_each_request_once(
    tmp_path, openai_api, cluster_env, arena_here
):
    """Two runs of one file at the same time, on one Ray cluster, with one response cache and
    an empty one at that: every distinct request reaches the server once, whichever run asks
    first. (With rate limits set, and the key, which reaches neither the cache nor the
    record.) One run is an `arena` process; the other runs in this process (arena_here),
    started once the first request of the `arena` process has reached the server, while
    that process still has most of its requests to make (each answer takes 0.5 s), so that
    the two ask for the same requests at once: a second `arena` process would spend its
    time importing. mini plays inside the match loop, one match at a time: each run's
    matches are Ray tasks of its own, with no contestant host or match runner to start."""
    openai_api.delay = 0.5
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    body = """
        name: shared
        seed: 8
        scenarios: [price_war]
        seeds: [1, 2]
        days: 3
        recall_every: 3
        max_concurrent_matches: 1
        contestants:
          - name: mini
            kind: llm
            isolate: false
            params: {model: openai/gpt-4.1-mini, base_url: "@OPENAI@", api_key_env: ARENA_OPENAI_KEY,
                     memory: window, cache_dir: "@SHARED@",
                     requests_per_minute: 1000, tokens_per_minute: 10000000}
          - {name: fixed, kind: fixed_price}
        """
    configs = [
        write(
            folder, body, **{"@OPENAI@": openai_api.base_url}, **{"@SHARED@": str(tmp_path / "shared-cache")}
        )
        for folder in folders
    ]
    env = {**cluster_env, "ARENA_OPENAI_KEY": OPENAI_KEY}
    process = subprocess.Popen(
        [ARENA, "run", str(configs[0]), "--db", f"sqlite:///{folders[0]}/t.db"],
        cwd=folders[0],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    patience = time.monotonic() + 600  # as long as the process is given to end
    while not openai_api.calls and process.poll() is None and time.monotonic() < patience:
        time.sleep(0.05)
    here = arena_here(folders[1], "run", str(configs[1]), "--db", f"sqlite:///{folders[1]}/t.db")
    outputs = [process.communicate(timeout=600), (here.stdout, here.stderr)]
    assert [process.returncode, here.exit_code] == [0, 0], outputs
    bodies = Counter(repr(sorted(call.body.items())) for call in openai_api.calls)
    assert len(bodies) == 2 * 3 + 2 and set(bodies.values()) == {
        1
    }  # 3 decisions and a recall question per match, each once
    cached = [
        sum(c.cached for c in store_calls(engine_for(f"sqlite:///{folder}/t.db", create=False)))
        for folder in folders
    ]
    assert sum(cached) == 8 and cached[1] > 0  # what one run paid for, the other replayed
    assert not [text for out in outputs for text in out if OPENAI_KEY in text]
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and OPENAI_KEY.encode() in p.read_bytes()]


def test_a_budget_is_the_stopping_rule_of_an_adaptive_run(tmp_path, openai_api, arena_here):
    """The same field, adaptive, mini inside the match loop (the stopped run above has it in an
    actor of its own): its first round seats everyone (mini in two of its three matches, about
    6 USD), and a budget of 7 USD stops it in a later round. The run says so, exits 3, keeps
    the first round whole, and the leaderboard repeats why it ended."""
    config = write(
        tmp_path,
        BUDGET.replace("name: budgeted", "name: budgeted\n    format: adaptive"),
        **{"@OPENAI@": openai_api.base_url},
        **{"@BUDGET@": "budget: {cost_usd: 7}", "@ISOLATE@": INLINE},
    )
    db = f"sqlite:///{tmp_path}/t.db"
    result = arena_here(tmp_path, "run", str(config), "--db", db)
    assert result.exit_code == 3, result.stderr
    assert "Stopped: cost budget reached" in result.stderr and "Adaptive schedule ended" not in result.stdout
    engine = engine_for(db, create=False)
    [tournament] = store.list_tournaments(engine)
    keys = {m.key for m in store.list_matches(engine)}
    first_round = {
        "price_war/seed=1/fixed+mini",
        "price_war/seed=1/fixed+undercut",
        "price_war/seed=1/mini+undercut",
    }
    assert tournament.status == "stopped" and first_round <= keys
    assert (store.run_end(engine, tournament.id) or "").startswith("cost budget reached")
    shown = CliRunner().invoke(app, ["leaderboard", "--db", db, "--tournament", str(tournament.id)])
    assert "Its run ended early: cost budget reached" in shown.stdout
