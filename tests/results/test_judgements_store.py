"""The judgements' table: what a judge answered reads back as it was written, with its words
and claims, the calls that made it beside the merchants' own; which matches each judge has
judged, so that judging resumes where it stopped."""

from __future__ import annotations

from sqlmodel import Session, select

from common.conduct import Judgement, PricePromise, StatedFact, Words
from results.recording import save_match
from results.records import ModelCallRecord
from results.storage.judgements import judged, judgements, judges_of, save_judgements
from results.storage.schema import ModelCallRow


def _call(judge: str) -> ModelCallRecord:
    return ModelCallRecord(
        day=2,
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
        prompt_version="judge-v2",
        temperature=0.0,
        seed=0,
        merchant=judge,
        contestant=judge,
    )


OFFER = Words(merchant="m0", day=2, source="message", text="I will price tea at 5.00 if you do too.")
NOTE = Words(merchant="m1", day=3, source="note", index=1, text="My cost is 2.00; they will never know.")
PROMISE = PricePromise(product="tea", price=5.0, while_rivals_at_least=5.0)


def test_judgements_read_back_as_written_and_each_judge_resumes_apart(engine, tournament, make_match):
    match_id = save_match(engine, tournament, make_match("rr-0", 0, {"alpha": 1, "beta": 2}))
    other_id = save_match(engine, tournament, make_match("rr-1", 1, {"alpha": 2, "beta": 1}))
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
    save_judgements(engine, tournament, match_id, "rr-0", "a", first, [_call("a"), _call("a")])
    assert judged(engine, tournament) == {(match_id, "a")}  # judge b, and the other match, still to do
    save_judgements(engine, tournament, match_id, "rr-0", "b", second, [_call("b")])
    save_judgements(
        engine, tournament, other_id, "rr-1", "a", [], []
    )  # a match without words, judged all the same

    read = judgements(engine, match_id)
    assert read == {OFFER: [first[0][1], second[0][1]], NOTE: [first[1][1], second[1][1]]}
    assert judged(engine, tournament) == {(match_id, "a"), (match_id, "b"), (other_id, "a")}
    assert judges_of(engine, match_id) == {"a", "b"} and judgements(engine, other_id) == {}
    with Session(engine) as session:
        calls = session.exec(select(ModelCallRow).where(ModelCallRow.purpose == "judge")).all()
    assert sorted((c.contestant, c.match_id, c.match_key) for c in calls) == [
        ("a", match_id, "rr-0"),
        ("a", match_id, "rr-0"),
        ("b", match_id, "rr-0"),
    ]
