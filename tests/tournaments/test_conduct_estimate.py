"""`arena validate --estimate` with a `conduct:` section: the judges' calls foreseen apart from
the merchants', one an item of the words the rehearsed matches yield (narrowed by `read:`),
their prompts counted as each judge's provider counts them, priced at the file's prices; no
section, no judges' figures. No model is called: the judge is a hosted model whose provider
only counts, and the matches are played in this process."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from arena.cli import app
from common.conduct import PricePromise, Words
from common.yaml_files import ConfigError
from contestants.base import RunOptions
from contestants.calls.types import Completion, CompletionRequest, TokenUsage
from contestants.kinds import judge_for
from contestants.llm.params import LLMParams
from results.records import FinishedMatch
from results.scoring.conduct import products_of, words_of
from tournaments.estimate import estimate
from tournaments.load import load_tournament
from tournaments.match import Match, MatchRules, play_here
from tournaments.plan import plan_contestants
from tournaments.schedule import schedule

JUDGE = "openai/gpt-4.1-mini"
INPUT, OUTPUT = 0.4, 1.6  # the file's prices, USD per million tokens
MOST = LLMParams(model=JUDGE).max_tokens  # a judge's answer at most
RULES = ("cartel", "bluffer", "friendly")  # each says one message a day (contestants/talking.py)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")  # looked for, never used


def tournament_file(
    folder: Path, contestants: list[str], days: int, judge: str = JUDGE, conduct: str | None = ""
) -> Path:
    """A talking tournament of `contestants` (entries in flow style) over `days` days of calvano;
    `conduct`: lines of the section after its judge (None: no section)."""
    section = f"conduct:\n  judges:\n    - {{model: {judge}}}\n{conduct}" if conduct is not None else ""
    path = folder / "t.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: judged
            seed: 3
            talk: true
            days: {days}
            scenarios: [calvano]
            prices: {{{JUDGE}: {{input: {INPUT}, output: {OUTPUT}}}}}
            contestants:
            """
        )
        + "".join(f"  - {entry}\n" for entry in contestants)
        + section
    )
    return path


def talking_rules(folder: Path, **settings: Any) -> Path:
    return tournament_file(folder, [f"{{name: {r}, kind: {r}}}" for r in RULES], 3, **settings)


def test_a_judge_reads_every_message_of_the_talking_rules_as_their_played_record_yields_it(tmp_path):
    """By hand: a round robin of three rules is three matches of two seats, each seat saying one
    message a day for 3 days: 18 items, one call each. Independently, the same matches played
    (not rehearsed) yield those items (`words_of`, as the run reads its stored matches), and
    the judge's own requests for them, sent to a provider that only counts, come to the input
    tokens foreseen."""
    path = talking_rules(tmp_path)
    tournament = load_tournament(path)
    judge, total = estimate(tournament).judges
    assert (judge.contestant, judge.model) == (JUDGE, JUDGE) and total.calls == judge.calls
    assert judge.calls == (18, 18) and judge.by_purpose == {"judge": (18, 18)}

    reading = judge_for({"model": JUDGE}, RunOptions(prices=tournament.spec.prices))
    counted = []

    def count(request: CompletionRequest, deadline: float | None = None) -> Completion:
        counted.append(reading.provider.prompt_tokens(request))
        return Completion(
            text="{}", usage=TokenUsage(), provider="counting", model=JUDGE, output={}, cost=0.0,
            latency=0.0, attempts=1, request_hash="",
        )  # fmt: skip

    reading.provider.complete = count  # type: ignore[method-assign]
    rules = MatchRules.of(tournament.spec, RunOptions())
    merchants = plan_contestants(tournament.spec.contestants)
    played = play_here(
        [Match(m, tournament.scenarios[m.scenario], rules, merchants) for m in schedule(tournament)]
    )
    items = 0
    for match in played:
        assert isinstance(match, FinishedMatch)
        products = products_of(match.days_played)
        words = words_of(match.days_played, match.transcript)
        assert {w.source for w in words} == {"message"}
        for item in words:
            reading.judge(item, products)
        items += len(words)
    assert items == 18 and len(counted) == 18
    assert judge.input_tokens == (sum(counted), sum(counted))  # every call's prompt, none repaired

    low, high = judge.output_tokens
    assert low % 18 == 0 and 0 < low < high == 18 * MOST  # 18 answers of one usual size, to max_tokens
    assert judge.cost == pytest.approx(
        tuple((sum(counted) * INPUT + out * OUTPUT) / 1e6 for out in (low, high))
    )


def test_reading_only_messages_counts_fewer_items(tmp_path):
    """A rehearsed language-model merchant writes, by hand, a note and a message a day (a
    typical decision where merchants talk), the cartel a message: over 4 days 12 items, 8 of
    them messages."""
    contestants = [
        "{name: talker, kind: llm, params: {model: openai/gpt-4.1-mini}}",
        "{name: cartel, kind: cartel}",
    ]
    every = estimate(load_tournament(tournament_file(tmp_path, contestants, 4)))
    messages = estimate(
        load_tournament(tournament_file(tmp_path, contestants, 4, conduct="  read: [message]\n"))
    )
    assert every.judges[0].calls == (12, 12) and messages.judges[0].calls == (8, 8)
    assert every.contestants == messages.contestants  # what the merchants call is the same
    assert 0 < messages.judges[0].input_tokens[0] < every.judges[0].input_tokens[0]


def test_a_rehearsed_merchant_writes_the_words_of_its_typical_answers(tmp_path):
    """By hand, a rehearsed decision (contestants.llm.rehearsal.typical_answer) of a merchant
    that thinks, states its plan and keeps plans and insights, where merchants talk, writes
    each day its reasoning, a note, its plans, its insights, its plan and a message (6 items),
    and reflects from day 2 (a note): over 3 days, 20 items. A rehearsed agent's day is its
    operations and end_day, and an off-path answer a number: no words."""
    thinking = "{model: openai/gpt-4.1-mini, memory: plans, think: true, reflect: true, plan: true}"
    contestants = [
        f"{{name: talker, kind: llm, params: {thinking}}}",
        "{name: agent, kind: llm, params: {model: openai/gpt-4.1-mini, mode: agent, max_steps: 2}}",
    ]
    path = tournament_file(tmp_path, contestants, 3, conduct="off_path: {days: [2], price: nash}\n")
    [judge, _] = estimate(load_tournament(path)).judges
    assert judge.calls == (20, 20)


def test_validate_shows_the_judges_apart_and_a_judge_without_a_price_as_such(tmp_path):
    """--json: the judges under `judging`, the merchants' `estimate` unchanged (these rules call
    no model: their total alone, nothing); a model without a price: "no price", null in JSON."""
    path = talking_rules(tmp_path, judge="openai/gpt-4.1-unpriced-test")
    shown = CliRunner().invoke(app, ["validate", str(path), "--estimate", "--json"])
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.stdout)
    assert [e["contestant"] for e in found["estimate"]] == ["total"] and found["estimate"][0]["calls"] == [
        0,
        0,
    ]
    judge, total = found["judging"]
    assert judge["judge"] == judge["model"] == "openai/gpt-4.1-unpriced-test" and total["judge"] == "total"
    assert judge["calls"] == [18, 18] and judge["cost"] is None and total["cost"] is None
    printed = CliRunner().invoke(app, ["validate", str(path), "--estimate"])
    assert printed.exit_code == 0, printed.output
    row = next(line for line in printed.stdout.splitlines() if "unpriced-test" in line)
    assert "18" in row and "no price" in row and "the judges' model calls" in printed.stdout
    unasked = CliRunner().invoke(app, ["validate", str(path), "--json"])
    assert unasked.exit_code == 0 and json.loads(unasked.stdout)["judging"] is None  # as `estimate`


def test_without_a_conduct_section_validate_shows_no_judges(tmp_path):
    path = talking_rules(tmp_path, conduct=None)
    shown = CliRunner().invoke(app, ["validate", str(path), "--estimate", "--json"])
    assert shown.exit_code == 0, shown.output
    assert "judging" not in json.loads(shown.stdout)
    printed = CliRunner().invoke(app, ["validate", str(path), "--estimate"])
    assert printed.exit_code == 0 and "the judges' model calls" not in printed.stdout
    assert estimate(load_tournament(path)).judges == []


def test_a_judge_whose_window_cannot_hold_its_rubric_is_refused_as_the_run_would_stop(tmp_path):
    path = talking_rules(tmp_path, judge="openai/gpt-4.1-mini, context_tokens: 1000, max_tokens: 600")
    with pytest.raises(
        ConfigError, match=r"judge's rubric and the item's heading .* \(rehearsed: judging match "
    ):
        estimate(load_tournament(path))


def test_a_rehearsed_judge_answers_a_judgement_it_can_read(tmp_path):
    """The typical judgement (contestants.llm.rehearsal) is an answer the judge reads, not an
    unscored one: one label and one promise, of a product of the market."""
    rehearsed = judge_for({"model": JUDGE}, RunOptions(rehearse="fewest"))
    words = Words(merchant="cartel", day=2, source="message", index=0, text="I will price good at 1.92.")
    judgement = rehearsed.judge(words, ["good"])
    assert judgement.unscored is None and judgement.labels == ("none",)
    assert judgement.claims == (PricePromise(product="good", price=19.99, while_rivals_at_least=None),)
    assert [c.purpose for c in rehearsed.calls] == ["judge"]
