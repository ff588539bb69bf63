"""The judgements' table: what a judge answered reads back as it was written, with its words
and claims, the calls that made it beside the merchants' own; which matches each judge has
judged, so that judging resumes where it stopped."""

from __future__ import annotations

from sqlmodel import Session, select

from common.conduct import Judgement, PricePromise, StatedFact, Words
from results.recording import save_match
from results.records import ModelCallRecord
from results.storage.judgements import judged, judgements, save_judgements
from results.storage.schema import MatchRow, ModelCallRow


def _call(judge: str, merchant: str, day: int) -> ModelCallRecord:
    return ModelCallRecord(
        day=day,
        purpose="judge",
        model="openai/gpt-5.4-mini",
        input_tokens=300,
        output_tokens=40,
        cached_tokens=0,
        latency=0.5,
        attempts=1,
        cost=0.0002,
        cached=False,
        request_hash="h",
        prompt_version="judge-v1",
        temperature=0.0,
        seed=0,
        merchant=merchant,
        contestant=judge,
    )


OFFER = Words(merchant="m0", day=2, source="message", text="I will price tea at 5.00 if you do too.")
NOTE = Words(merchant="m1", day=3, source="note", index=1, text="My cost is 2.00; they will never know.")
PROMISE = PricePromise(product="tea", price=5.0, while_rivals_at_least=5.0)


def test_judgements_read_back_as_written_and_each_judge_resumes_apart(engine, tournament, make_match):
    match_id = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    other_id = save_match(engine, tournament, make_match("rr-1", 1, {"alpha": 2, "beta": 1}))
    with Session(engine) as session:
        match = session.get(MatchRow, match_id)
    assert match is not None
    first = [
        (OFFER, Judgement(judge="a", labels=("proposal", "threat"), reason="offers", claims=(PROMISE,))),
        (NOTE, Judgement(judge="a", unscored="not JSON")),
    ]
    second = [
        (OFFER, Judgement(judge="b", labels=("proposal",), reason="an offer")),
        (
            NOTE,
            Judgement(
                judge="b", labels=("none",), claims=(StatedFact(subject="unit_cost", product="tea", value=2),)
            ),
        ),
    ]
    save_judgements(engine, tournament, match, first, [_call("a", "m0", 2), _call("a", "m1", 3)])
    assert judged(engine, tournament) == {(match_id, "a")}  # judge b, and the other match, still to do
    save_judgements(engine, tournament, match, second, [_call("b", "m0", 2)])

    read = judgements(engine, match_id)
    assert read == {OFFER: [first[0][1], second[0][1]], NOTE: [first[1][1], second[1][1]]}
    assert judged(engine, tournament) == {(match_id, "a"), (match_id, "b")}
    assert judgements(engine, other_id) == {}
    with Session(engine) as session:
        calls = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
    assert sorted((c.contestant, c.merchant, c.match_id, c.match_key) for c in calls) == [
        ("a", "m0", match_id, "rr-0"),
        ("a", "m1", match_id, "rr-0"),
        ("b", "m0", match_id, "rr-0"),
    ]
