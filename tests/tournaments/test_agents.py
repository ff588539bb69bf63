"""A tournament of agents (mode: agent) at the stand-ins for the hosted APIs, on real Ray: each
merchant's steps are made in its host, every step's words are stored with the match, merchant,
day and step, `arena show MATCH --day N` prints them and `arena export` writes them, and no
key reaches any of it."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from api_keys import ANTHROPIC_KEY, OPENAI_KEY
from fakes.agents import agent
from fakes.anthropic_api import FakeAnthropic
from fakes.openai_api import FakeOpenAI

from results import store
from results.db import engine_for

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("ray_local")]

DAY = [
    [("read_books", {}), ("calculator", {"expression": "round(1000 / 7, 2)"})],
    [("write_note", {"key": "plan", "text": "hold 11, order 30"})],
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
    for words in ("mini: day 2", "sonnet: day 2", "calculator", '{"value": 142.86}', "hold 11, order 30"):
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
