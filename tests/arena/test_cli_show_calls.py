"""`arena show` lists a match's model calls per merchant and purpose with what makes them
reproducible (model, temperature, seed, prompt version), as stored. The match is played
in this process (no Ray) by a language-model merchant whose provider answers from a script."""

from __future__ import annotations

import json
from typing import ClassVar

from typer.testing import CliRunner

from arena.cli import app, printing
from contestants.calls.types import Answer, CompletionRequest, TokenUsage
from contestants.llm.providers import Provider, register_provider
from market.scenario import load_scenario
from results import recording
from results.storage import store
from results.storage.db import engine_for
from tournaments.config import ContestantEntry
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import MatchSpec


class Canned(Provider):
    """A decision for every decision request, a reflection for every reflection request."""

    name: ClassVar[str] = "canned"

    def _attempt(self, request: CompletionRequest, timeout: float) -> Answer:
        answer = (
            {"reflection": "fine"}
            if request.schema_name == "reflection"
            else {"operations": [], "note": "wait"}
        )
        usage = TokenUsage(input_tokens=30, output_tokens=5)
        return Answer(
            text=json.dumps(answer), usage=usage, temperature=request.temperature, seed=request.seed
        )  # as sent


register_provider("canned", f"{__name__}:Canned")


def test_show_lists_calls_by_purpose_with_model_temperature_seed_and_prompt_version(tmp_path, monkeypatch):
    entries = {
        "thinker": ContestantEntry(
            name="thinker",
            kind="llm",
            params={"model": "canned/x", "no_cache": True, "reflect": True, "temperature": 0.4},
        ),
        "fixed": ContestantEntry(name="fixed", kind="fixed_price"),
    }
    spec = MatchSpec(key="k", index=0, scenario="price_war", seed=0, days=3, seats=("thinker", "fixed"))
    scenario = load_scenario("price_war")
    finished = play_here([Match(spec, scenario, MatchRules(seed=1), plan_contestants(entries.values()))])[0]
    engine = engine_for(f"sqlite:///{tmp_path}/t.db")
    tournament = store.start_tournament(
        engine, "t", "t.yaml", "", "h", 1, [(e.name, e.kind, e.params) for e in entries.values()], 1
    )
    match_id = recording.save_match(engine, tournament, finished)

    shown = CliRunner().invoke(app, ["show", str(match_id), "--db", f"sqlite:///{tmp_path}/t.db", "--json"])
    calls = json.loads(shown.stdout)["calls"]
    assert [(c["purpose"], c["day"], c["prompt_version"]) for c in calls] == [
        ("decide", 1, "merchant-v2"),
        ("reflect", 2, "merchant-v2+reflect-v1"),
        ("decide", 2, "merchant-v2+reflection-v1"),
        ("reflect", 3, "merchant-v2+reflect-v1"),
        ("decide", 3, "merchant-v2+reflection-v1"),
    ]
    assert {(c["temperature"], c["seed"]) for c in calls} == {(0.4, calls[0]["seed"])} and calls[0][
        "seed"
    ] is not None

    monkeypatch.setattr(printing.out, "width", 200)  # one line per row
    table = CliRunner().invoke(app, ["show", str(match_id), "--db", f"sqlite:///{tmp_path}/t.db"]).stdout
    usage, made = rows(table, "model calls"), rows(table, "how the calls were made")
    assert usage["decide"][:2] == ["3", "90"] and usage["reflect"][:2] == ["2", "60"]  # calls, input tokens
    # model, answered by (the canned provider reports none), temperature, top_p (not sent), seed, templates
    assert made["decide"] == [
        "canned/x",
        "—",
        "0.4",
        "—",
        str(calls[0]["seed"]),
        "merchant-v2, merchant-v2+reflection-v1",
    ]
    assert made["reflect"] == ["canned/x", "—", "0.4", "—", str(calls[0]["seed"]), "merchant-v2+reflect-v1"]


def rows(shown: str, title: str) -> dict[str, list[str]]:
    """The rows of the table titled `title` by purpose: the cells after merchant and purpose."""
    table = shown.split(title, 1)[1].split("┘", 1)[0]
    cells = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    return {row[1]: row[2:] for row in cells if row[1]}
