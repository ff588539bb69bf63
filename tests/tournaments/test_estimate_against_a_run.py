"""`arena validate --estimate` against a real run: a scripted agent at the OpenAI stand-in plays a
match in which a merchant that makes no operation (as the rehearsal's merchants once did) goes
bankrupt before the last day (tests/thin_price_war.py). The rehearsal plays every day, and the
run's calls, input tokens and cost each fall within the estimate's range. The agent plays in its
match's process (`isolate: false`): where it is hosted changes neither its calls nor the estimate,
and an actor of its own would cost the run a process."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from api_keys import OPENAI_KEY
from fakes.agents import agent
from fakes.openai_api import FakeOpenAI
from thin_price_war import THIN_PRICE_WAR, write_thin_price_war

from market.engine import Market
from results.storage import store
from results.storage.db import engine_for

pytestmark = pytest.mark.usefixtures("ray_local")

DAYS = 28
# four steps a day: its books and a sum, a note, a price and an order, the end of the day
DAY = [
    [("read_books", {}), ("calculator", {"expression": "round(300 / 16, 2)"})],
    [("write_note", {"key": "plan", "text": "price 16, order 15 a day"})],
    [("set_price", {"product": "widget", "price": 16.0}), ("order", {"product": "widget", "quantity": 15})],
    [("end_day", {})],
]


def test_a_scripted_agents_run_falls_within_the_estimate(tmp_path: Path, arena_here):
    scenario_path = write_thin_price_war(tmp_path)
    # the premise: a merchant that makes no operation goes bankrupt before the last day
    idle = Market(THIN_PRICE_WAR, [["idle", "rival"]], days=DAYS)
    idle.reset([1])
    while idle.playing.any():
        idle.advance(decisions={0: None, 1: None})
    idle_log = idle.logs[0].build()
    went_bankrupt = [r.day for r in idle_log.records(idle_log.rows_of("idle")) if r.bankrupt]
    assert went_bankrupt and went_bankrupt[0] < DAYS  # on day 25

    with FakeOpenAI(api_key=OPENAI_KEY) as api:
        api.answer = agent(DAY)
        config = tmp_path / "t.yaml"
        config.write_text(
            textwrap.dedent(
                f"""
                name: checked
                seed: 4
                scenarios: [{scenario_path}]
                seeds: [1]
                days: {DAYS}
                recall_every: 10
                contestants:
                  - name: scripted
                    kind: llm
                    isolate: false
                    params: {{model: openai/gpt-4.1-mini, mode: agent, max_steps: 8,
                             base_url: "{api.base_url}", api_key_env: ARENA_OPENAI_KEY, no_cache: true}}
                  - {{name: fixed, kind: fixed_price}}
                """
            )
        )
        shown = arena_here(tmp_path, "validate", str(config), "--estimate", "--json")
        assert shown.exit_code == 0, shown.stderr
        assert api.calls == []  # the estimate calls nothing
        db = f"sqlite:///{tmp_path}/t.db"
        ran = arena_here(tmp_path, "run", str(config), "--db", db)
        assert ran.exit_code == 0, ran.stderr

    foreseen = {e["contestant"]: e for e in json.loads(shown.stdout)["estimate"]}["scripted"]
    # every day rehearsed: one step a day at the low end, eight at most
    assert foreseen["by_purpose"]["step"] == [DAYS, 8 * DAYS] and foreseen["bankrupt"] == 0

    engine = engine_for(db, create=False)
    [match] = store.list_matches(engine)
    detail = store.match_detail(engine, match.id)
    assert [r.bankrupt_day for r in detail.results] == [None, None] and not detail.faults
    calls = detail.calls
    assert sum(c.purpose == "step" for c in calls) == 4 * DAYS  # the script's four steps every day
    recalls = sum(c.purpose == "recall" for c in calls)
    assert recalls > 0 and foreseen["by_purpose"]["recall"] == [recalls, recalls]
    played = {
        "calls": len(calls),
        "input_tokens": sum(c.input_tokens for c in calls),
        "cost": sum(c.cost or 0.0 for c in calls),
    }
    for figure, value in played.items():
        low, high = foreseen[figure]
        assert low <= value <= high, (figure, low, value, high)
