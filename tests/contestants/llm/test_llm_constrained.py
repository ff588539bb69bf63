"""Writing under a grammar with SmolLM2: forced text costs no model step, the fast choice is the
greedy choice under the grammar, and a string never holds a raw control character."""

from __future__ import annotations

import json

import llama_cpp
import numpy as np
import pytest

from contestants.llm import ProviderError, get_provider
from contestants.llm.constrained import TOKEN_DATA, _apply, _samplers
from contestants.llm.local_provider import Engine, compact_gbnf, smollm2_path


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.shared(smollm2_path().resolve(), 4096, 1, True)


@pytest.fixture
def model_steps(engine, monkeypatch) -> list[list[int]]:
    """The tokens of each model step (llama.eval call) taken from now on."""
    steps: list[list[int]] = []
    evaluate = engine.llama.eval

    def counted(tokens):
        steps.append(list(tokens))
        return evaluate(tokens)

    monkeypatch.setattr(engine.llama, "eval", counted)
    return steps


def prompt(engine: Engine, text: str) -> list[int]:
    engine.llama.reset()
    return engine.llama.tokenize(
        f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n".encode(), add_bos=False, special=True
    )


def grammar_for(properties: dict, required: list[str]) -> str:
    return compact_gbnf(json.dumps({"type": "object", "properties": properties, "required": required}))


def test_an_answer_the_grammar_fixes_is_written_without_a_model_step(engine, model_steps):
    gbnf = grammar_for({"op": {"const": "wait"}}, ["op"])
    answer = engine.writer.write(prompt(engine, "What now?"), gbnf, 0.0, 0, 100)
    assert engine.llama.detokenize(answer) == b'{"op":"wait"}'
    assert model_steps == []


def test_forced_text_rides_along_with_the_chosen_token(engine, model_steps):
    """Keys, quotes and brackets are evaluated in the step of the token before them: a
    decision takes far fewer model steps than it has tokens."""
    gbnf = grammar_for(
        {
            "op": {"enum": ["set_price", "order"]},
            "product": {"enum": ["widget"]},
            "quantity": {"type": "integer"},
        },
        ["op", "product", "quantity"],
    )
    question = prompt(engine, "Order 12 widgets. Answer in JSON.")
    answer = engine.writer.write(question, gbnf, 0.0, 0, 100)
    text = engine.llama.detokenize(answer).decode()
    assert json.loads(text)["product"] == "widget" and text.startswith('{"op":"')
    assert model_steps[0] == question + engine.llama.tokenize(b'{"op":"', add_bos=False)
    assert len(model_steps) < len(answer) / 2
    evaluated = [token for step in model_steps for token in step]
    assert evaluated == (question + answer)[: len(evaluated)]  # each token once, in the answer's order


@pytest.mark.parametrize(
    ("question", "word", "refused"),
    [
        ("Say hello to me.", {"enum": ["cat", "dog"]}, True),
        ("Write the word banana.", {"type": "string"}, False),
    ],
)
def test_the_fast_choice_is_the_best_token_the_grammar_allows(engine, question, word, refused):
    """Checked against filtering the whole vocabulary, both where the model's favourite token
    is refused (a greeting where the grammar wants "cat" or "dog") and where it is allowed."""
    gbnf = grammar_for({"word": word}, ["word"])
    with _samplers(engine.writer.vocab, gbnf, 0.0, 0) as (grammar, chooser):
        forced, done = engine.writer._forced(grammar)
        engine.llama.eval(prompt(engine, question) + forced)
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(engine.llama._ctx.ctx, -1), shape=(engine.writer.n_vocab,)
        ).copy()
        everything = engine.writer._candidates(logits)
        _apply(grammar, everything)
        best_allowed = int(np.argmax(everything["logit"]))
        assert (int(np.argmax(logits)) != best_allowed) == refused
        assert engine.writer._choose(grammar, chooser) == best_allowed


def test_a_string_holds_no_raw_control_character(engine):
    """llama-cpp-python's JSON grammar lets a newline into a string, which no JSON parser accepts."""
    gbnf = grammar_for({"note": {"type": "string"}}, ["note"])
    tokenize = engine.llama.tokenize
    with _samplers(engine.writer.vocab, gbnf, 0.0, 0) as (grammar, _):
        for token in tokenize(b'{"note":"a', add_bos=False):
            llama_cpp.llama_sampler_accept(grammar, token)
        for text, allowed in ((b"\n", False), (b"\t", False), (b"b", True), (b"\\n", True)):
            candidate = np.array([(tokenize(text, add_bos=False)[0], 0.0, 0.0)], TOKEN_DATA)
            _apply(grammar, candidate)
            assert np.isfinite(candidate["logit"][0]) == allowed, text


def test_a_prompt_longer_than_the_context_is_a_failed_call(decision_request):
    provider = get_provider("local/smollm2", {"n_ctx": 32, "max_retries": 0, "no_cache": True})
    with pytest.raises(ProviderError, match="does not fit the model's context of 32"):
        provider.complete(decision_request)


def test_an_answer_stops_where_the_context_ends(decision_request):
    """The answer fills what is left of a small context and is cut there: forced text that
    would run past it is not evaluated."""
    small = Engine(smollm2_path(), 80, 1)
    prompt_tokens = len(small._tokens(decision_request.messages, generation_prompt=True))
    answer = small.complete(decision_request, decision_request.json_schema, 0, timeout=60.0)
    assert answer.usage.output_tokens == 80 - prompt_tokens < decision_request.max_tokens


def test_forced_text_the_tokenizer_would_change_is_written_byte_by_byte(engine, monkeypatch):
    """A SentencePiece vocabulary adds a leading space to the text it tokenizes; the grammar
    never accepted that space, so the forced text keeps its one-byte tokens instead."""
    tokenize = engine.llama.tokenize
    space = tokenize(b" ", add_bos=False)
    monkeypatch.setattr(
        engine.llama,
        "tokenize",
        lambda text, add_bos=True, special=False: space + tokenize(text, add_bos, special),
    )
    answer = engine.writer.write([], grammar_for({"op": {"const": "wait"}}, ["op"]), 0.0, 0, 100)
    assert engine.llama.detokenize(answer) == b'{"op":"wait"}' and len(answer) == len('{"op":"wait"}')
