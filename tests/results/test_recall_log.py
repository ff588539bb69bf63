"""Recall answers as columns: a question at a time in, RecallResults out."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from property_examples import examples

from results.records import RecallLog, RecallLogBuilder, RecallResult

MERCHANTS = ("m0", "m1", "m2")
ANSWER = st.one_of(st.none(), st.floats(-1e6, 1e6))
QUESTION = st.tuples(
    st.sampled_from(["cash", "inventory", "price", "ordered"]),
    st.lists(
        st.tuples(st.floats(-1e6, 1e6), ANSWER), min_size=1, max_size=3
    ),  # (truth, answer) of m0, m1, ...
)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(QUESTION, max_size=6))
def test_a_recall_log_reads_as_the_recall_results_it_stands_for(questions):
    builder, expected = RecallLogBuilder(MERCHANTS), []
    for n, (fact, asked) in enumerate(questions):
        day, product = 3 + 2 * n, None if fact == "cash" else "tea"
        truths, answers = [t for t, _ in asked], [math.nan if a is None else a for _, a in asked]
        builder.ask((day, day - 2, fact, product), np.arange(len(asked)), np.array(truths), np.array(answers))
        expected += [
            RecallResult(
                merchant=MERCHANTS[s],
                day=day,
                asked_day=day - 2,
                fact=fact,
                product=product,
                truth=t,
                answer=a,
                relative_error=None if a is None else abs(a - t) / max(abs(t), 1.0),
            )
            for s, (t, a) in enumerate(asked)
        ]
    log = builder.build()
    assert list(log) == expected and len(log) == len(expected)
    assert log[1:] == expected[1:]
    assert RecallLog.of(expected) == expected
    assert log.rows() == [p.model_dump() for p in expected]
