"""A tournament of agents (mode: agent) at the stand-ins for the hosted APIs, on real Ray: each
merchant's steps are made in its host, every step's words are stored with the match, merchant,
day and step, `arena show MATCH --day N` prints them and `arena export` writes them, and no
key reaches any of it."""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from api_keys import ANTHROPIC_KEY, OPENAI_KEY
from arena_process import (
    BackgroundRun,
    assert_whole_and_equal,
    kill_with_a_match_in_flight,
    matches_and_days,
)
from fakes import openai_api as openai_fake
from fakes.agents import agent
from fakes.anthropic_api import FakeAnthropic
from fakes.openai_api import FakeOpenAI

from results.storage import store
from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_local")]

DAY = [
    [("read_books", {}), ("calculator", {"expression": "round(1000 / 7, 2)"})],
    [("write_note", {"key": "plan", "text": "hold 11, order 30 [red]loud[/red]"})],  # shown as text
    [("set_price", {"product": "widget", "price": 11.0}), ("order", {"product": "widget", "quantity": 30})],
    [("end_day", {})],
]


@pytest.fixture
def apis():
    with FakeOpenAI(api_key=OPENAI_KEY) as openai_api, FakeAnthropic(api_key=ANTHROPIC_KEY) as anthropic_api:
        openai_api.answer = anthropic_api.answer = agent(DAY)
        yield openai_api, anthropic_api


def test_agents_play_a_tournament_and_every_step_is_kept(tmp_path: Path, apis, arena_here):
    openai_api, anthropic_api = apis
    config = tmp_path / "t.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            name: agents
            seed: 2
            format: free_for_all
            scenarios: [price_war]
            seeds: [1, 2]
            days: 3
            recall_every: 0
            max_concurrent_matches: 1
            contestants:
              - name: mini
                kind: llm
                params: {{model: openai/gpt-4.1-mini, mode: agent, base_url: "{openai_api.base_url}",
                         api_key_env: ARENA_OPENAI_KEY, cache_dir: "{tmp_path}/cache"}}
              - name: sonnet
                kind: llm
                params: {{model: anthropic/claude-sonnet-5-5, mode: agent, max_steps: 6,
                         base_url: "{anthropic_api.base_url}", api_key_env: ARENA_ANTHROPIC_KEY,
                         cache_dir: "{tmp_path}/cache"}}
              - {{name: fixed, kind: fixed_price}}
            """
        )
    )
    db = f"sqlite:///{tmp_path}/t.db"
    ran = arena_here(tmp_path, "run", str(config), "--db", db)
    assert ran.exit_code == 0, ran.stderr
    engine = engine_for(db, create=False)
    matches = store.list_matches(engine)
    details = [store.match_detail(engine, m.id) for m in matches]
    assert len(details) == 2 and not [f for d in details for f in d.faults]
    assert Counter((c.contestant, c.purpose) for d in details for c in d.calls) == {
        ("mini", "step"): 2 * 3 * 4,
        ("sonnet", "step"): 2 * 3 * 4,
    }
    for detail in details:  # the scripted operations reached the market every day
        for record in detail.days:
            if record.merchant != "fixed":
                assert record.operations == [
                    {"op": "set_price", "product": "widget", "price": 11.0},
                    {"op": "order", "product": "widget", "quantity": 30.0},
                ]
    match_id = details[0].match_id
    reported = {(v.merchant, v.name): v.value for v in store.metrics(engine, match_id=match_id)}
    assert reported[("mini", "steps_per_day")] == reported[("sonnet", "steps_per_day")] == 4.0
    assert reported[("mini", "tool_errors_per_day")] == 0.0 and ("fixed", "steps_per_day") not in reported
    steps = store.transcript(engine, match_id)
    assert Counter((s.merchant, s.day) for s in steps) == {
        (m, d): 4 for m in ("mini", "sonnet") for d in (1, 2, 3)
    }
    day_two = store.transcript(engine, match_id, day=2)
    assert {s.day for s in day_two} == {2} and len(day_two) == 8
    calculated = [r for s in day_two for r in s.results if r.content == '{"value": 142.86}']
    assert len(calculated) == 2  # each merchant's calculator, answered

    shown = arena_here(tmp_path, "show", str(match_id), "--day", "2", "--db", db)
    assert shown.exit_code == 0, shown.stderr
    for words in (
        "mini: day 2",
        "sonnet: day 2",
        "calculator",
        '{"value": 142.86}',
        "order 30 [red]loud[/red]",
    ):
        assert words in shown.stdout, words
    as_json = json.loads(
        arena_here(tmp_path, "show", str(match_id), "--day", "2", "--json", "--db", db).stdout
    )
    assert len(as_json["transcript"]) == 8 and len(as_json["records"]) == 3
    missing = arena_here(tmp_path, "show", str(match_id), "--day", "9", "--db", db)
    assert missing.exit_code == 2 and "has no day 9" in missing.stderr

    exported = arena_here(
        tmp_path,
        "export",
        str(matches[0].tournament_id),
        "--db",
        db,
        "--format",
        "parquet",
        "--out",
        str(tmp_path / "out"),
    )
    assert exported.exit_code == 0, exported.stderr
    table = pq.read_table(tmp_path / "out" / "transcript.parquet").to_pylist()
    parts = Counter((row["contestant"], row["part"]) for row in table)
    # a match: 3 days x 4 steps, each answered; results: 2 + 1 + 2 + 1 a day; sent: the system
    # prompt and the first morning, then a morning a day
    assert parts[("mini", "answer")] == 2 * 12 and parts[("mini", "result")] == 2 * 3 * 6
    assert parts[("mini", "sent")] == 2 * (2 + 2)
    texts = [c.body for c in openai_api.calls + anthropic_api.calls]
    assert texts and all(OPENAI_KEY not in json.dumps(t) for t in texts)
    for path in [tmp_path / "t.db", *(tmp_path / "out").iterdir()]:
        data = path.read_bytes()
        assert OPENAI_KEY.encode() not in data and ANTHROPIC_KEY.encode() not in data


def agents_tournament(folder: Path, base_url: str, cache: str, hosted: bool = True) -> Path:
    """The agent against a rule merchant, two seeds of three days, one match at a time in
    one match runner: a match stored and the next under way is a moment every run passes
    through. Not `hosted`: the agent plays in its matches' process, with the same results and
    no actor of its own (for a run that only gives the record to compare with)."""
    path = folder / f"{cache}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""
            name: agents-killed
            seed: 4
            scenarios: [price_war]
            seeds: [1, 2]
            days: 3
            recall_every: 0
            max_concurrent_matches: 1
            contestants:
              - name: mini
                kind: llm
                params: {{model: openai/gpt-4.1-mini, mode: agent, base_url: "{base_url}",
                         api_key_env: ARENA_OPENAI_KEY, cache_dir: "{folder}/{cache}"}}
                isolate: {str(hosted).lower()}
              - {{name: fixed, kind: fixed_price}}
            """
        )
    )
    return path


def test_kill_9_and_resume_replay_each_step_and_give_the_uninterrupted_table(
    tmp_path: Path, apis, monkeypatch: pytest.MonkeyPatch, cluster_env, arena_here
):
    """An agent tournament killed with a match in flight, then resumed: the match in flight is
    played again from its start, its steps so far answered from the response cache, and the
    table and every match's transcript are those of a run never killed (its agent unhosted, in
    this process). (The API's prompt cache is off: a call under way at the kill is made again,
    and the cache would serve its prompt for less the second time, as a real API's would.)"""
    monkeypatch.setattr(openai_fake, "CACHE_MINIMUM", 10**9)
    openai_api, _ = apis
    whole, killed = tmp_path / "whole.db", tmp_path / "killed.db"
    run_tournament(
        load_tournament(agents_tournament(tmp_path, openai_api.base_url, "whole-cache", hosted=False)),
        engine_for(f"sqlite:///{whole}"),
    )
    openai_api.delay = 0.05  # the killed run's agent matches last long enough to be caught in flight
    config = agents_tournament(tmp_path, openai_api.base_url, "killed-cache")
    env = {**cluster_env, "ARENA_OPENAI_KEY": OPENAI_KEY}  # the killed run: on the tests' Ray cluster
    with BackgroundRun(
        "run", str(config), "--db", f"sqlite:///{killed}", cwd=tmp_path, env=env, log=tmp_path / "k.log"
    ) as run:
        seen = kill_with_a_match_in_flight(run, lambda: matches_and_days(killed))
        assert seen.stored == 1 and seen.in_play, seen
    resumed = arena_here(tmp_path, "run", str(config), "--db", f"sqlite:///{killed}", "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert_whole_and_equal(killed, whole)
    engines = engine_for(f"sqlite:///{whole}"), engine_for(f"sqlite:///{killed}")
    said = []
    for engine in engines:
        by_key = {m.key: m.id for m in store.list_matches(engine)}
        said.append({key: store.transcript(engine, by_key[key]) for key in sorted(by_key)})
    assert [numbered(steps) for steps in said[0].values()] == [numbered(steps) for steps in said[1].values()]
    assert (
        sum(len(steps) for steps in said[0].values()) == 2 * 3 * 4
    )  # the agent's 2 matches: 3 days, 4 steps a day
    replayed = [c for m in store.list_matches(engines[1]) for c in store.match_detail(engines[1], m.id).calls]
    assert any(c.cached for c in replayed)  # the match in flight: its first steps, from the cache


def numbered(steps: list) -> str:
    """A match's transcript as JSON with the API's tool call ids, drawn at random by the API,
    numbered in the order they appear."""
    text = json.dumps([step.model_dump(mode="json") for step in steps])
    order = {found: k for k, found in enumerate(dict.fromkeys(re.findall(r"call_[0-9a-f]+", text)))}
    return re.sub(r"call_[0-9a-f]+", lambda m: f"call-{order[m.group()]}", text)
